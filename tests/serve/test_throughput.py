"""The token cost model `vismem plan` sizes GPUs with: device facts, model facts, prefill/vision/decode
seconds recomputed by hand, calibrations (read, applied, cut to the device's peaks), and the physics
bound: no plan of any preset, model and device implies more FLOP/s or bytes/s per GPU than the peak."""

from __future__ import annotations

import json

import pytest

from vismem.core.errors import ConfigError
from vismem.serve.models import list_models, load_model_spec
from vismem.serve.throughput import (Calibration, Call, device_named, devices, engine_for, load_calibration,
                                     model_facts, utilisation)

GPU_MODELS = [m for m in list_models("vlm") if (load_model_spec(m).deploy or {}).get("engine") == "vllm"
              and (load_model_spec(m).deploy or {}).get("device") != "cpu"]


def test_device_data_covers_the_common_gpus_and_a_cpu():
    d = devices()
    assert {"H100", "H200", "A100", "L40S", "cpu"} <= set(d)
    for dev in d.values():
        assert dev.peak("bf16") > 0 and dev.peak("fp32") > 0 and dev.bandwidth > 0 and dev.memory_gb > 0
        assert dev.peak("fp32") <= dev.peak("bf16")  # no device computes fp32 faster than bf16
    # dense, not the datasheets' 2:4-sparse figures: an H100's BF16 is under 1 PFLOP/s
    assert 9e14 < d["H100"].peak("bf16") < 1e15 and d["H200"].bandwidth > d["H100"].bandwidth
    assert all(0 < u < 1 for u in utilisation().values())
    with pytest.raises(ConfigError, match="no fp8 peak"):
        d["A100"].peak("fp8")
    with pytest.raises(ConfigError, match="unknown device 'B300'"):
        device_named("B300")


def test_every_gpu_served_vlm_states_its_model_facts():
    assert GPU_MODELS  # the paper's Qwen-VL models
    for m in GPU_MODELS:
        f = model_facts(load_model_spec(m))
        assert f is not None, m
        # the weights hold every parameter at 2 bytes (bf16): more than the active LLM's and the ViT's
        assert f.weights_bytes >= 2 * (f.active_params + f.vision_params) * 0.95, m
        assert f.layers > 0 and f.hidden_size > 0 and f.kv_bytes_per_token > 0


def _qwen7(device="H100", cal=None):
    return engine_for(load_model_spec("qwen2.5-vl-7b"), device_named(device), cal)


def test_prefill_vision_and_decode_seconds_by_hand():
    eng, u = _qwen7(), utilisation()
    f, peak, bw = eng.facts, 989.5e12, 3.35e12
    call = Call(prompt=1000, uncached=600, images=1, patches_per_image=1296, completion=100)
    c = eng.cost(call, batch=32)
    # 600 new tokens attend to the 400 cached and half of each other: context 700
    assert c["prefill_s"] == pytest.approx(600 * (2 * 7.07e9 + 4 * 28 * 3584 * 700) / (peak * u["prefill_mfu"]))
    assert c["vision_s"] == pytest.approx(1296 * 2 * 0.67e9 / (peak * u["vision_mfu"]))
    # decode: a step streams the weights and 32 sequences' KV at context 1050, bandwidth bound
    step = (f.weights_bytes + 32 * 1050 * 57344) / (bw * u["decode_mbu"])
    assert c["decode_s"] == pytest.approx(100 * step / 32) and c["latency_s"] == pytest.approx(
        c["prefill_s"] + c["vision_s"] + 100 * step)
    # a bigger batch shares the weights' bytes: less GPU time a call, a longer wait
    c256 = eng.cost(call, batch=256)
    assert c256["decode_s"] < c["decode_s"] and c256["latency_s"] > c["latency_s"]
    # H200: same FLOP/s, more bandwidth -- prefill the same, decode faster
    c200 = _qwen7("H200").cost(call, batch=32)
    assert c200["prefill_s"] == pytest.approx(c["prefill_s"]) and c200["decode_s"] < c["decode_s"]


def test_a_calibration_reproduces_its_own_measurements():
    cal = Calibration(model="qwen2.5-vl-7b", prefill_tokens_per_s=12_000, decode_tokens_per_s=3_000,
                      decode_batch=64, decode_context=200)
    eng = _qwen7(cal=cal)
    assert eng.warnings == []
    # 64 sequences at context 200 decoding: 3,000 tokens/s, so a token's share is 1/3000 s
    c = eng.cost(Call(prompt=150, uncached=0, images=0, patches_per_image=0, completion=100), batch=64)
    assert c["decode_s"] / 100 == pytest.approx(1 / 3000)
    # prefill of short prompts at the measured rate (attention adds under 1 % at 100 tokens)
    p = eng.cost(Call(prompt=100, uncached=100, images=0, patches_per_image=0, completion=0), batch=1)
    assert p["prefill_s"] == pytest.approx(100 / 12_000, rel=0.01)


def test_a_calibrated_prefill_rate_is_read_at_its_own_attention_context():
    """Tokens/s measured on prompts of context c reproduce themselves at c, and a call at another
    context pays its attention FLOP relative to that (a rate read as weights' FLOP alone planned a
    tiny model's 544-token prompts 70 % long)."""
    from vismem.serve.throughput import Engine, ModelFacts

    tiny = ModelFacts("tiny", 1e5, 2, 64, 7e4, 512.0, 8e5, "fp32")
    cal = Calibration(model="tiny", prefill_tokens_per_s=1e5, prefill_context=272, decode_tokens_per_s=3e3,
                      decode_batch=8)
    eng = Engine(tiny, device_named("cpu"), cal)
    at = eng.cost(Call(prompt=544, uncached=544, images=0, patches_per_image=0, completion=0), batch=1)
    assert at["prefill_s"] == pytest.approx(544 / 1e5)
    longer = eng.cost(Call(prompt=2000, uncached=2000, images=0, patches_per_image=0, completion=0), batch=1)
    assert longer["prefill_s"] > 2000 / 1e5 * 1.5  # attention at 1,000 tokens outweighs the 2e5 FLOP of weights


def test_a_calibrated_per_request_cost_is_paid_once_a_call_whatever_its_tokens():
    """An engine's fixed cost of a request (template, tokenising, scheduling, detokenising) adds to a
    call's replica-seconds and latency once, at any prompt and image count; none at the defaults."""
    base = dict(model="qwen2.5-vl-7b", prefill_tokens_per_s=12_000, decode_tokens_per_s=3_000, decode_batch=64,
                seconds_per_image=0.01)
    call = Call(prompt=2000, uncached=2000, images=3, patches_per_image=1024, completion=50)
    without = _qwen7(cal=Calibration(**base)).cost(call, batch=8)
    with_ = _qwen7(cal=Calibration(**base, seconds_per_request=0.02)).cost(call, batch=8)
    assert without["request_s"] == 0 and with_["request_s"] == 0.02
    assert with_["gpu_s"] == pytest.approx(without["gpu_s"] + 0.02)
    assert with_["latency_s"] == pytest.approx(without["latency_s"] + 0.02)
    assert with_["vision_s"] == pytest.approx(3 * 0.01) and with_["flops"] == without["flops"]
    assert _qwen7().cost(call, batch=8)["request_s"] == 0.0
    # a request with images pays the multimodal request's cost once, not once an image; none without
    mm = _qwen7(cal=Calibration(**base, seconds_per_request=0.02, seconds_per_image_request=0.005))
    assert mm.cost(call, batch=8)["request_s"] == pytest.approx(0.025)
    text = Call(prompt=2000, uncached=2000, images=0, patches_per_image=0, completion=50)
    assert mm.cost(text, batch=8)["request_s"] == pytest.approx(0.02)


def test_a_calibration_above_the_devices_peak_is_cut_to_it():
    # 1e6 prefill tokens/s of a 7 B model is 14 PFLOP/s; 1e6 decode tokens/s at batch 8 streams the
    # 16.6 GB of weights 125,000 times a second
    cal = Calibration(model="qwen2.5-vl-7b", prefill_tokens_per_s=1e6, decode_tokens_per_s=1e6, decode_batch=8)
    eng = _qwen7(cal=cal)
    assert len(eng.warnings) == 2 and "cut to the peak" in eng.warnings[0]
    call = Call(prompt=2000, uncached=2000, images=0, patches_per_image=0, completion=200)
    c = eng.cost(call, batch=8)
    assert c["flops"] / c["gpu_s"] <= 989.5e12 * 1.000001 and c["bytes"] / c["decode_s"] <= 3.35e12 * 1.000001


def test_load_calibration_from_yaml_bench_records_and_bad_files(tmp_path):
    y = tmp_path / "cal.yaml"
    y.write_text("calibrations:\n  - {model: m1, prefill_tokens_per_s: 100, decode_tokens_per_s: 10, decode_batch: 4}\n")
    assert load_calibration(y)["m1"].decode_batch == 4
    records = [{"name": "serve-throughput", "metric": "prefill tokens/s", "value": 5.0},
               {"name": "serve-throughput", "metric": "calibration", "value": 0.0,
                "calibration": {"model": "m2", "prefill_tokens_per_s": 5.0, "decode_tokens_per_s": 2.0,
                                "decode_batch": 8, "source": "bench"}}]
    j = tmp_path / "latest.json"
    j.write_text(json.dumps(records))
    assert load_calibration(j)["m2"].source == "bench"
    j.write_text(json.dumps([{"name": "x", "metric": "y", "value": 1}]))
    with pytest.raises(ConfigError, match="no calibrations"):
        load_calibration(j)
    y.write_text("calibrations:\n  - {model: m1, prefill_tokens_per_s: 100, decode_tokens_per_s: 10, decode_batch: 4,"
                 " seconds_per_request: 0.003}\n")
    assert load_calibration(y)["m1"].seconds_per_request == 0.003  # the per-request cost reaches --calibration
    y.write_text("calibrations:\n  - {model: m1, prefill_tokens_per_s: -1, decode_tokens_per_s: 10, decode_batch: 4}\n")
    with pytest.raises(ConfigError, match="cal.yaml"):
        load_calibration(y)
    y.write_text("calibrations:\n  - {model: m1, prefill_tokens_per_s: 1, decode_tokens_per_s: 1, decode_batch: 1, x: 2}\n")
    with pytest.raises(ConfigError):  # extra fields are errors
        load_calibration(y)


def _gpu_rows(plan):
    return [e for s in plan["stages"] for e in s["endpoints"] if e["kind"] == "gpu" and "flops_per_call" in e]


@pytest.mark.parametrize("preset", ["local", "paper"])
def test_no_plan_implies_more_than_the_devices_peak(preset):
    """Every preset, with every GPU-served model as every stage's VLM, on every device and GPU
    count, at the utilisation defaults and at a calibration claiming 100 x the peak."""
    from vismem.pipelines.config import load_config
    from vismem.pipelines.plan import Rates, estimate
    from vismem.pipelines.plangpu import Sizing

    absurd = {m: Calibration(model=m, prefill_tokens_per_s=1e8, decode_tokens_per_s=1e8, decode_batch=8,
                             seconds_per_request=1e-9) for m in GPU_MODELS}
    checked = 0
    for model in GPU_MODELS:
        cfg = load_config(preset=preset, overrides={
            "stages": ["encode", "probes", "memshot"], "encode": {"backends": [model]},
            "probes": {"backends": [model]}, "memshot": {"vlm": {"model": model}, "judge": {"model": model}}})
        for device in devices():
            for gpus, cals in ((1, {}), (8, {}), (8, absurd)):
                plan = estimate(cfg, Rates(), gpus=gpus, sizing=Sizing(device, cals))
                for e in _gpu_rows(plan):
                    held = e["gpu_hours"] * 3600  # GPU-seconds of the replicas held
                    assert held > 0
                    flops_s = e["calls"] * e["flops_per_call"] / held
                    bytes_s = e["calls"] * e["bytes_per_call"] / held
                    dev = devices()[device]
                    assert flops_s <= dev.peak(model_facts(load_model_spec(model)).dtype) * 1.000001, (model, device, e)
                    assert bytes_s <= dev.bandwidth * 1.000001, (model, device, e)
                    checked += 1
    assert checked >= len(GPU_MODELS) * len(devices()) * 3 * 3


def test_littles_law_latency_times_throughput_is_the_calls_in_flight():
    from vismem.pipelines.config import load_config
    from vismem.pipelines.plan import estimate

    cfg = load_config(preset="paper", overrides={"stages": ["probes"]})
    e = next(x for x in _gpu_rows(estimate(cfg, gpus=8)))
    assert e["bound_by"] == "compute"
    assert (e["calls"] / e["wall_s"]) * e["latency_s"] == pytest.approx(e["in_flight"], rel=1e-6)
    # saturated: the replicas held each do a call's GPU-seconds back to back
    assert e["wall_s"] == pytest.approx(e["calls"] * e["gpu_s_per_call"] / (e["replicas_held"]), rel=1e-6)


def test_the_paper_plan_is_no_faster_than_its_tokens_at_the_peak():
    """The issue's figure: the paper's probes on Qwen2.5-VL-7B cannot prefill faster than
    2 x 7 B FLOP a token at an H100's 989.5 TFLOP/s (~70,000 uncached tokens/s a GPU)."""
    from vismem.pipelines.config import load_config
    from vismem.pipelines.plan import estimate

    cfg = load_config(preset="paper", overrides={"stages": ["probes"]})
    for gpus in (1, 8):
        e = next(x for x in _gpu_rows(estimate(cfg, gpus=gpus)))
        uncached = e["calls"] * e["uncached_tokens"]
        floor_gpu_s = uncached * 2 * 7.07e9 / 989.5e12
        assert e["gpu_hours"] * 3600 > floor_gpu_s
        # and the old constant (2 s a call, 256 streams a GPU) was below that floor
        assert e["calls"] * 2.0 / 256 < floor_gpu_s


def test_a_model_without_facts_has_no_engine_and_bad_facts_are_one_error():
    assert model_facts(load_model_spec("gemini-2.5-flash")) is None  # hosted: no serving block
    ms = load_model_spec("qwen2.5-vl-7b")
    assert model_facts(ms.model_copy(update={"serving": {k: v for k, v in ms.serving.items()
                                                         if k != "active_params_b"}})) is None
    with pytest.raises(ConfigError, match="serving needs numeric active_params_b"):
        model_facts(ms.model_copy(update={"serving": {**ms.serving, "layers": "many"}}))


def test_device_option_sizes_the_kv_cache_and_the_peaks():
    from vismem.pipelines.config import load_config
    from vismem.pipelines.plan import estimate
    from vismem.pipelines.plangpu import Sizing

    cfg = load_config(preset="paper", overrides={"stages": ["probes"]})
    rows = {d: _gpu_rows(estimate(cfg, gpus=8, sizing=Sizing(d)))[0] for d in ("H100", "L40S", "H200")}
    assert {d: r["device"] for d, r in rows.items()} == {"H100": "H100", "L40S": "L40S", "H200": "H200"}
    # 48 GB hold fewer streams than 80 GB; a fifth of the bandwidth and a third of the FLOP/s cost GPU-hours
    assert rows["L40S"]["streams_per_gpu"] < rows["H100"]["streams_per_gpu"]
    assert rows["L40S"]["gpu_hours"] > 2 * rows["H100"]["gpu_hours"] >= 2 * rows["H200"]["gpu_hours"]


def test_the_tiny_vllm_variants_facts_are_its_checkpoints():
    """`vismem plan` sizes the engine tier's deployment (bench plan-check-serve-llm) from the tiny
    vLLM YAML's serving block: the facts counted from the checkpoint serve/testing.py builds."""
    from vismem.bench.plancheck import tiny_facts
    from vismem.serve.testing import resolve_model_path

    yaml_facts = model_facts(load_model_spec("tiny-qwen2.5-vl-vllm"))
    counted = tiny_facts(resolve_model_path("tiny:qwen2.5-vl"))
    assert (yaml_facts.layers, yaml_facts.hidden_size, yaml_facts.dtype) == (counted.layers, counted.hidden_size, "fp32")
    assert yaml_facts.kv_bytes_per_token == counted.kv_bytes_per_token
    for field in ("active_params", "vision_params", "weights_bytes"):
        assert getattr(yaml_facts, field) == pytest.approx(getattr(counted, field), rel=0.01), field
