"""Variants as data (every YAML builds in a fresh interpreter), naming of stand-ins, captioners."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from agentmem_fakes import LOCAL

from vismem.core.errors import ConfigError
from vismem.memory.agent import ARCHITECTURES, build_architecture, list_variants, load_variant, with_components
from vismem.memory.agent.captioner import CAPTION_PROMPT, TASKS, VLMCaptioner, build_captioner

REPO = Path(__file__).resolve().parents[3]
EXPECTED = {  # variant -> official registry name
    "nomemory": "NoMemory", "textonly": "TextOnly", "caption": "Caption", "dualmem": "DualMem-a75",
    "dualmem-a0.5": "DualMem", "dualmem-a0.25": "DualMem-a25", "dualmem-vis": "DualMem-vis",
    "dualmem-verb": "DualMem-verb", "dualmem-img": "DualMem-img", "dualmem-cap": "DualMem-cap",
    "dualmem-vis-img": "DualMem-vis-img", "dualmem-vis-cap": "DualMem-vis-cap",
    "dualmem-clip": "DualChannel-norm (--visual-encoder clip)", "worldmm-lite": "WorldMM-lite",
    "mma-lite": "MMA-lite", "mma-lite-official": "MMA-lite", "m2a-lite": "M2A-lite",
}

_CHILD = """
import json, sys
from vismem.memory.agent.base import ARCHITECTURES, build_architecture
from vismem.memory.agent.variants import list_variants, load_variant
out = {}
for v in list_variants():
    spec = load_variant(v).spec
    a = build_architecture({"model": v})
    again = build_architecture(a.spec)            # the manifest's resolved {name, args} rebuilds it
    out[v] = {"name": a.name, "family": a.family, "spec": a.spec, "label": a.label, "again": again.label,
              "same": again.spec == spec, "features": sorted(f.key for f in a.required_features())}
json.dump(out, sys.stdout)
"""


def test_every_variant_builds_from_its_yaml_in_a_fresh_interpreter():
    res = subprocess.run([sys.executable, "-c", _CHILD], cwd=REPO, capture_output=True, text=True, timeout=300,
                         env={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, res.stderr[-2000:]
    got = json.loads(res.stdout)
    assert set(got) == set(EXPECTED)
    for v, info in got.items():
        assert info["name"] == v and info["same"], v
        assert info["label"].split(" [")[0] == v
        assert info["again"].split(" [")[0] == info["family"]   # a bare {name, args} is named by its family
    assert got["dualmem"]["features"] == got["dualmem-a0.5"]["features"]       # same features, other alpha
    assert got["dualmem-clip"]["features"] != got["dualmem-a0.5"]["features"]


def test_yaml_metadata():
    for v, official in EXPECTED.items():
        meta = load_variant(v)
        assert meta.official == official
        assert meta.paper and len(meta.description) > 80
    assert load_variant("dualmem").labels["alpha"] == 0.75 and load_variant("dualmem").study == "main"
    assert {v for v in EXPECTED if load_variant(v).study == "main"} == {
        "nomemory", "textonly", "caption", "dualmem", "worldmm-lite", "mma-lite", "m2a-lite"}
    assert not set(list_variants()) & set(ARCHITECTURES.names())    # a variant never shadows a family


def test_stand_ins_are_named():
    arch = build_architecture(with_components("dualmem", LOCAL))
    assert arch.label == ("dualmem [visual=tiny-siglip2 (stand-in), text=minilm, "
                          "captioner=catalogue/caption (stand-in)]")
    d = arch.describe()
    assert d["stand_in"] and d["components"]["visual"]["stand_in"] and not d["components"]["text"]["stand_in"]
    paper = build_architecture("dualmem")
    assert not paper.stand_in and "gemini-2.5-flash" in paper.label
    scripted = build_architecture(with_components("caption", {"captioner": {
        "name": "vlm", "args": {"vlm": {"model": "scripted-echo"}}}}))
    assert scripted.stand_in and "(stand-in)" in scripted.label


def test_with_components_only_touches_known_args():
    spec = with_components({"model": "textonly"}, LOCAL)
    assert spec == {"model": "textonly", "args": {"text_encoder": "minilm"}}
    assert with_components("nomemory", LOCAL)["args"] == {}


def test_bad_args_are_config_errors_naming_the_field():
    with pytest.raises(ConfigError, match="alpha"):
        build_architecture({"model": "dualmem", "args": {"alpha": 2}})
    with pytest.raises(ConfigError, match="colour"):
        build_architecture({"name": "dual", "args": {"colour": 1}})
    with pytest.raises(ConfigError, match="unknown memory"):
        build_architecture("dualmem-a0.9")
    with pytest.raises(ConfigError, match="router"):
        build_architecture({"model": "worldmm-lite", "args": {"routing": "fixed"}})


def test_catalogue_captioner_never_mentions_a_cue(data_dir):
    from vismem.env.storefront.catalog import load_catalog
    from vismem.env.storefront.leakage import Vocabulary

    cat = load_catalog(data_dir, seed=0)
    vocab = Vocabulary.from_catalog(cat)
    caps = {t: build_captioner({"name": "catalogue", "args": {"task": t, "data_dir": str(data_dir)}})
            for t in TASKS}
    for v in cat.variants:
        for task, c in caps.items():
            text = c.caption(None, url_hash=v.url_hash)
            assert text and not vocab.scan(text, classes=("colour", "phrase", "head")), (task, text)
        assert caps["caption"].caption(b"", url_hash=v.url_hash).count(". ") + 1 in (2, 3)
    assert caps["caption"].caption(None, url_hash="deadbeef") == ""
    assert build_captioner({"name": "catalogue"}).stand_in


class _RecordingVLM:
    name = "rec"

    def __init__(self, reply="  A grey chair.  "):
        self.calls, self.reply = [], reply

    def chat(self, messages, *, max_tokens, temperature):
        from vismem.serve.vlm import ChatResult

        self.calls.append((messages, max_tokens, temperature))
        if self.reply is None:
            raise TimeoutError("slow")
        return ChatResult(text=self.reply, latency_s=0.0)


def test_vlm_captioner_sends_the_official_prompts():
    cap = VLMCaptioner(vlm="scripted-echo", task="caption")
    cap.vlm = rec = _RecordingVLM()
    assert cap.caption(b"PNG", url_hash="x") == "A grey chair."
    (msgs, max_tokens, temperature), = rec.calls
    assert [(m.role, m.text, m.images) for m in msgs] == [("user", CAPTION_PROMPT, (b"PNG",))]
    assert (max_tokens, temperature) == (200, 0.0)
    assert CAPTION_PROMPT == ("Describe this product photograph in 2 to 3 sentences. Focus on attributes that would "
                              "help someone identify this exact product later (color, shape, material, distinctive "
                              "features). Do not invent attributes not visible in the image. Do not number, do not "
                              "include preamble.")
    mma = VLMCaptioner(vlm="scripted-echo", task="mma", on_error="record")
    mma.vlm = rec = _RecordingVLM(reply=None)
    assert mma.caption(None) == "<caption error: TimeoutError>"
    (msgs, max_tokens, _), = rec.calls
    assert [(m.role, m.text, m.images) for m in msgs] == [
        ("system", "You write product captions.", ()),
        ("user", "Describe this product in one sentence focusing on attributes a memory system could later "
                 "retrieve by.", ())]
    assert max_tokens == 80 and TASKS["worldmm-visual"].max_tokens == 120
