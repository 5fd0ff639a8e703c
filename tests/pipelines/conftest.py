"""Fixtures shared by the pipeline tests.

Many DMV-Bench tests need browsed chains (and the replay's memory features) only as inputs. The
scripted stand-in shopper is deterministic and both caches are keyed by content (the back-end's
cache slug, ``(seed, j)``; a feature by its model spec and the image or text it reads), so the
session browses the chains once (:func:`dmv_encoded`), computes their features once
(:func:`dmv_replayed`), and a test copies what its config reads into its own store
(:func:`dmv_seed`), where its run finds it cached. Tests about encode's or replay's own work
(what a fresh run runs, extending J, in-flight sessions) still browse on their own store.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

#: The session's encode run: the sequential side of ``test_sessions_in_flight_give_the_sequential_
#: trajectories`` (two chains, J = 3, the HTTP shop, one actor), a superset of every seeded test's chains.
ENCODED = {"chains": 2, "J": 3, "env": "http", "workers": 1}
#: The architectures and components the session's replay computes features for (those of
#: ``test_memory_stages``; the other seeded tests use a subset of them).
REPLAYED = {"architectures": ["nomemory", "textonly", "dualmem", "dualmem-vis"],
            "components": {"captioner": "catalogue", "visual_encoder": "pocket-clip"}}


@pytest.fixture(scope="module")
def small(data_dir):
    """Two LoCoMo conversations cut to their first three sessions (12 to 20 shots)."""
    from vismem.env.dialogue import load_locomo

    convs = load_locomo(data_dir / "locomo/locomo10.json")[:2]
    return [replace(c, sessions=c.sessions[:3]) for c in convs]


def _encoded_config(root: Path, stages: list[str]):
    from vismem.pipelines.config import load_config

    return load_config(overrides={"stages": stages, "runs_dir": str(root / "runs"),
                                  "store": {"uri": f"file://{root}/store"}, "encode": ENCODED, "memory": REPLAYED})


@pytest.fixture(scope="session")
def dmv_encoded(tmp_path_factory, ray_local) -> SimpleNamespace:
    """The session's encode run on a fresh store: ``root`` (its store is ``root/store``), ``cfg``, ``out``
    (the stage's result). Read-only: a test that needs the sessions copies them (:func:`dmv_seed`)."""
    from vismem.pipelines.runner import run

    root = tmp_path_factory.mktemp("dmv-encoded")
    cfg = _encoded_config(root, ["encode"])
    out = run(cfg, progress=False)["encode"]
    assert out["status"] == "done", out  # a partial template would fail every seeded test obscurely
    return SimpleNamespace(root=root, cfg=cfg, out=out)


@pytest.fixture(scope="session")
def dmv_replayed(tmp_path_factory, dmv_encoded) -> SimpleNamespace:
    """A copy of :func:`dmv_encoded`'s store with the replay stage run over it (the features of
    :data:`REPLAYED`): ``root``, ``cfg``, ``out`` (the replay stage's result). Read-only."""
    from vismem.pipelines.runner import run

    root = tmp_path_factory.mktemp("dmv-replayed")
    shutil.copytree(dmv_encoded.root / "store", root / "store", ignore=shutil.ignore_patterns("runs"))
    cfg = _encoded_config(root, ["replay"])
    out = run(cfg, progress=False)["replay"]
    assert out["status"] == "done", out
    return SimpleNamespace(root=root, cfg=cfg, out=out)


@pytest.fixture(scope="session")
def dmv_seed(request, dmv_encoded):
    """``dmv_seed(cfg)``: put the session's browsed sessions that ``cfg`` reads (its chains, j < its J
    up to the session's 3), their images and the session's memory features into ``cfg``'s file
    store, so that its encode (and replay) find them cached. Only those sessions: a test that
    counts a store's sessions sees its own. A config whose sessions are not the session's (another
    back-end, seed or protocol: another cache slug) is an error, not a silent re-browse."""
    from vismem.pipelines.dmv.protocol import chain_seeds, plan

    def seed(cfg, features: bool = True) -> None:
        # the features only when asked: a test that runs no replay need not wait for the session's
        src = (request.getfixturevalue("dmv_replayed") if features else dmv_encoded).root / "store"
        dst = Path(cfg.store.uri.removeprefix("file://"))
        (slug,) = plan(cfg)[1]
        assert [slug] == dmv_encoded.out["backends"], "this config's sessions are not the session's"
        seeds, J = chain_seeds(cfg), min(cfg.encode.J, ENCODED["J"])
        assert set(seeds) <= set(chain_seeds(dmv_encoded.cfg)), seeds
        for part in ("blobs", "features") if features else ("blobs",):
            shutil.copytree(src / part, dst / part, dirs_exist_ok=True)
        for s in seeds:
            here, there = src / "trajectories" / slug / str(s), dst / "trajectories" / slug / str(s)
            there.mkdir(parents=True, exist_ok=True)
            for f in here.iterdir():
                if int(f.name.split(".", 1)[0]) < J:
                    shutil.copy2(f, there / f.name)

    return seed
