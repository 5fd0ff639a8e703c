"""End to end on real parts: scripted sessions through the shop (HTTP env, procedural images) →
step rows → replay into the local DualMem / M2A-lite / TextOnly → a probe step's memory block."""

from __future__ import annotations

import hashlib

import pytest
from agentmem_fakes import LOCAL

from vismem.memory.agent import (ArchitectureHook, InProcessFeatures, TableFeatures, build_architecture,
                          observations_from_steps, replay_chain, with_components)


@pytest.fixture(scope="module")
def trajectory(data_dir):
    from vismem.agents.chains import session_spec
    from vismem.agents.session import run_session
    from vismem.env.envs import make_env
    from vismem.env.storefront.server import ShopServer
    from vismem.serve.build import build_vlm

    blobs: dict[str, bytes] = {}

    def sink(data: bytes) -> str:
        key = f"blobs/sha256/{hashlib.sha256(data).hexdigest()}.png"
        blobs[key] = data
        return key

    images = {"name": "procedural", "args": {"size": 128}}
    with ShopServer.from_data(str(data_dir), seed=0, images=images) as shop:
        env = make_env("http", shop.url)
        vlm = build_vlm({"name": "scripted-shopper", "args": {"seed": 0}})
        steps = [s for j in range(2) for s in run_session(session_spec(0, j), vlm=vlm, env=env, backend="t",
                                                           blob_sink=sink).steps]
    return steps, blobs


def test_replay_real_trajectories_and_inject(trajectory):
    steps, blobs = trajectory
    obs = observations_from_steps(steps)
    distinct = list(dict.fromkeys(o.url_hash for o in obs))
    assert obs and all(o.image_key in blobs for o in obs)
    feats = InProcessFeatures(blobs.__getitem__)
    archs = {v: build_architecture(with_components(v, LOCAL), features=feats)
             for v in ("dualmem", "m2a-lite", "textonly", "nomemory")}
    feats.precompute(obs, archs.values())
    table = TableFeatures(feats.tables, read_blob=blobs.__getitem__, fallback=feats)
    for v, arch in archs.items():
        arch.bind(table)
        assert [j for j in replay_chain(arch, obs)] == [0, 1]
        assert len(arch) == (0 if v == "nomemory" else len(distinct))
        assert [i.slug for i in arch.entries()] == ([] if v == "nomemory" else distinct)

    dual = archs["dualmem"]
    cue = "red wool scarf"
    hook = ArchitectureHook(dual, cue)
    ctx = hook.context(spec=None, step=1, url="/", subtask="")
    assert ctx.text.startswith("5 item(s) recalled from earlier sessions, most relevant first.")
    assert len(ctx.images) == 5 and all(img.startswith(b"\x89PNG") for img in ctx.images)
    assert "Caption: \"A " in ctx.text                      # the catalogue stand-in's caption
    assert archs["m2a-lite"].inject(archs["m2a-lite"].retrieve(hook.last_query, 3)).images == ()
    assert archs["nomemory"].inject([]).text == "(no memory retrieved this step)"
    assert dual.label.startswith("dualmem [visual=tiny-siglip2 (stand-in)")
