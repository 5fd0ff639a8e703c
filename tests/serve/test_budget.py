"""Image-token budgets: the Qwen resize rule agrees with the real image processor, the catalogue's
vLLM models are bounded, and a budget that does not fit is one ConfigError naming variant and k."""

from __future__ import annotations

import pytest
from PIL import Image

from vismem.core.errors import ConfigError
from vismem.serve.budget import (check_image_budget, image_budget, image_family, max_model_len, pixel_bounds,
                                 smart_resize, tokens_per_image)
from vismem.serve.models import ModelSpec, list_models, load_model_spec

SIZES = [(40, 30), (1280, 4000), (500, 200), (3000, 90), (28, 28), (1920, 1080)]


@pytest.mark.parametrize("patch", [14, 16])
@pytest.mark.parametrize("size", SIZES)
def test_smart_resize_matches_the_qwen_image_processor(patch, size):
    from transformers import Qwen2VLImageProcessorPil

    unit, lo, hi = 2 * patch, 4 * patch * patch * 4, 1280 * (2 * patch) ** 2
    proc = Qwen2VLImageProcessorPil(patch_size=patch, merge_size=2, min_pixels=lo, max_pixels=hi)
    (_, gh, gw), = proc(images=[Image.new("RGB", size)], return_tensors="np")["image_grid_thw"].tolist()
    w, h = smart_resize(*size, unit, lo, hi)
    assert (w // patch, h // patch) == (gw, gh)


def _spec(**kw) -> ModelSpec:
    base = {"variant": "v", "kind": "vlm", "name": "openai", "args": {"model": "Qwen/Qwen3-VL-8B-Instruct"}}
    return ModelSpec(**{**base, **kw})


def test_tokens_per_family():
    qwen3 = _spec(deploy={"engine": "vllm", "engine_kwargs": {
        "max_model_len": 32768, "mm_processor_kwargs": {"min_pixels": 65536, "max_pixels": 1310720}}})
    # 1280x4000 shrinks to 20x63 units of 32 px under 1280 units, plus the two delimiters
    assert tokens_per_image(qwen3, (1280, 4000)) == 20 * 63 + 2
    qwen25 = _spec(args={"model": "Qwen/Qwen2.5-VL-7B-Instruct"}, deploy={"engine": "vllm", "engine_kwargs": {
        "mm_processor_kwargs": {"max_pixels": 1003520}}})
    assert tokens_per_image(qwen25, (1280, 4000)) == 20 * 63 + 2  # 28 px units
    assert tokens_per_image(_spec(args={"model": "gemini-2.5-flash"}), (4000, 4000)) == 258
    with pytest.raises(ConfigError, match="'v': no image-token rule"):
        tokens_per_image(_spec(args={"model": "gpt-4o"}), (10, 10))


def test_budget_fits_or_names_variant_and_k():
    ms = load_model_spec("qwen3-vl-8b", env={})
    ok = check_image_budget(ms, (1280, 4000), 10, reserve=2048)
    assert ok.fits and ok.image_tokens == 10 * ok.per_image and ok.max_model_len == 32768
    tight = _spec(variant="qwen3-vl-8b", deploy={"engine": "vllm", "engine_kwargs": {"max_model_len": 8192}})
    b = image_budget(tight, (1280, 4000), 10)  # unbounded: the processor's 16M px, 5000 units an image
    assert not b.fits and b.per_image == 5000 + 2
    with pytest.raises(ConfigError) as err:
        check_image_budget(tight, (1280, 4000), 10)
    msg = str(err.value)
    assert "\n" not in msg and "'qwen3-vl-8b'" in msg and "k=10" in msg and "max_model_len 8192" in msg
    assert check_image_budget(tight, (1280, 4000), 0).image_tokens == 0


def test_every_vllm_model_and_embedder_is_bounded_within_its_context():
    """One source of truth per YAML: a vLLM VLM's mm_processor_kwargs, a vLLM-capable embedder's
    args (both runners read them); the allowed images per prompt, at their largest, fit."""
    checked = []
    for name in list_models():
        ms = load_model_spec(name, env={})
        vllm_vlm = (ms.deploy or {}).get("engine") == "vllm"
        vllm_embedder = ms.kind == "embedder" and "vllm_kwargs" in ms.args
        if not (vllm_vlm or vllm_embedder):
            continue
        bounds = pixel_bounds(ms)
        assert set(bounds) == {"min_pixels", "max_pixels"}, name
        assert image_family(ms) in ("qwen2.5-vl", "qwen3-vl"), name
        k = ((ms.deploy or {}).get("engine_kwargs") or {}).get("limit_mm_per_prompt", {}).get("image", 1)
        side = int(bounds["max_pixels"] ** 0.5) * 2  # any image this large is shrunk to max_pixels
        assert check_image_budget(ms, (side, side), k).fits and max_model_len(ms), name
        checked.append(name)
    assert {"qwen2.5-vl-7b", "qwen3-vl-8b", "qwen3-vl-embedding-8b", "jina-embeddings-v4"} <= set(checked)


def test_every_deployed_models_autoscaling_target_is_its_kv_capacity():
    """target_ongoing_requests (and max_ongoing_requests) in each model YAML with a serving: block
    is what the KV rule gives at the model's typical request: the streams one replica holds."""
    from vismem.serve.budget import kv_streams, kv_target
    from vismem.serve.models import list_models, load_model_spec

    checked = []
    for name in list_models():
        ms = load_model_spec(name)
        if not ms.serving or not ms.deploy:
            continue
        rule = kv_target(ms)
        assert rule == int(kv_streams(ms, float(ms.serving["request_tokens"]))["per_replica"]) >= 1
        assert ms.deploy["target_ongoing_requests"] == rule, name
        assert ms.deploy["max_ongoing_requests"] == rule, name
        checked.append((name, rule))
    # Qwen2.5-VL at a recall step (3,276 tokens) fills vLLM's 256 sequences; Qwen3-VL-8B at a
    # MemShot answer (2,455) holds 139
    assert ("qwen2.5-vl-7b", 256) in checked and ("qwen3-vl-8b", 139) in checked and len(checked) >= 4
