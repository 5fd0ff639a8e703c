"""`vismem bench serve-throughput`: the calibration measured over the OpenAI API against the loopback
capacity-modelled endpoint (whose decode rate is known), written as records that `vismem plan
--calibration` reads."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from vismem.core.errors import ConfigError
from vismem.bench.calibrate import _Tokens, calibration_records, measure
from vismem.serve.capacity import CapacityModel
from vismem.serve.http_client import RetryingJSONClient
from vismem.serve.openai_server import LocalOpenAIServer
from vismem.serve.throughput import load_calibration


def test_calibration_measured_over_the_openai_api_and_read_by_plan(tmp_path):
    """The loopback endpoint holds each of 4 slots 0.1 s + 10 ms a requested token, whatever the
    prompt or images: a batch of 4 takes 0.1 + 0.01 x D s, which the engine's terms read as 4
    requests of 25 ms and D decode steps of 10 ms serving all 4 (400 tokens/s), images free."""
    import hashlib

    from vismem.bench.calibrate import MULTI

    seen: list[str] = []

    class Seen(_Tokens):
        def chat(self, messages, **kw):
            seen.extend(hashlib.sha256(im).hexdigest() for m in messages for im in m.images)
            return super().chat(messages, **kw)

    cap = CapacityModel(slots=4, base_s=0.1, per_token_s=0.01, tokens="max_tokens")
    with LocalOpenAIServer(vlm=Seen(), capacity=cap) as srv:
        client = RetryingJSONClient(srv.base_url, api_key_env=None, timeout_s=120, max_concurrency=4)
        cal = measure(client, srv.model_id, batch=4, rounds=3, prefill_words=300, decode_tokens=32, image_px=32)
        with pytest.raises(ConfigError, match="max_concurrency"):  # a batch the client would queue itself
            measure(client, srv.model_id, batch=8)
    # the steps apart from the requests' fixed cost (the old figure, 4 x 32 / 0.42 = 305, was both)
    assert 0.75 * 400 < cal["decode_tokens_per_s"] < 1.25 * 400
    assert 0.09 < 4 * cal["seconds_per_request"] < 0.2  # 0.1 s + a token + the HTTP round trips
    assert cal["seconds_per_image"] < 0.01 and cal["seconds_per_image_request"] < 0.01
    assert cal["decode_batch"] == 4 and cal["decode_context"] > 16 and cal["prefill_tokens_per_s"] > 0
    # no image repeats (a repeated one hits vLLM's multimodal caches): the untimed and 3 timed
    # rounds, 4 one-image and 4 MULTI-image requests each
    assert len(seen) == 4 * 4 * (1 + MULTI) == len(set(seen))
    out = tmp_path / "cal.json"
    out.write_text(json.dumps(calibration_records(cal, "qwen2.5-vl-7b", "test", expected={"decode_tokens_per_s": 400})))
    loaded = load_calibration(out)["qwen2.5-vl-7b"]
    assert loaded.decode_tokens_per_s == pytest.approx(cal["decode_tokens_per_s"]) and loaded.decode_batch == 4
    assert loaded.seconds_per_request == pytest.approx(cal["seconds_per_request"]) and loaded.seconds_per_request > 0


def test_plan_with_a_calibration_uses_it_and_names_it(tmp_path):
    from vismem.pipelines.cli import main

    cal = tmp_path / "cal.yaml"
    slow = "{model: qwen2.5-vl-7b, prefill_tokens_per_s: %d, decode_tokens_per_s: 2000, decode_batch: 64, source: t%d}"
    outs = []
    for rate in (5_000, 20_000):
        cal.write_text(f"calibrations:\n  - {slow % (rate, rate)}\n")
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            assert main(["plan", "--preset", "paper", "probes", "--gpus", "8", "--calibration", str(cal), "--json"]) == 0
        outs.append(json.loads(buf.getvalue()))
    q = [next(e for s in p["stages"] for e in s["endpoints"] if e["endpoint"] == "qwen2.5-vl-7b") for p in outs]
    assert q[0]["calibrated"] == "t5000" and q[1]["calibrated"] == "t20000"
    # prefill bound: 4 x the prefill rate, about 4 x less prefill time a call
    assert q[0]["prefill_s"] == pytest.approx(4 * q[1]["prefill_s"]) and q[0]["gpu_hours"] > 2 * q[1]["gpu_hours"]


def test_plan_bad_device_or_calibration_is_one_line(tmp_path, capsys):
    from vismem.pipelines.cli import main

    assert main(["plan", "--device", "B300"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown device 'B300'" in err[0]
    bad = tmp_path / "x.json"
    bad.write_text("[]")
    assert main(["plan", "--calibration", str(bad)]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no calibrations" in err[0]


def test_plan_check_counts_the_tiny_checkpoints_facts_and_predicts_from_a_calibration(tmp_path):
    """The engine check's offline half: model facts counted from a checkpoint's tensors, and the
    plan's wall of a batch all in flight on one calibrated replica (its latency: Little's law)."""
    import numpy as np
    from safetensors.numpy import save_file

    from vismem.bench.plancheck import BATCH, K, REPLY, predict, tiny_facts
    from vismem.serve.throughput import Calibration

    cfg = {"text_config": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                           "num_key_value_heads": 2}}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    save_file({"model.visual.w": np.zeros((10, 10), "float32"), "model.language_model.embed_tokens.weight":
               np.zeros((400, 64), "float32"), "model.language_model.layers.0.w": np.zeros((64, 30), "float32"),
               "lm_head.weight": np.zeros((400, 64), "float32")}, str(tmp_path / "model.safetensors"))
    f = tiny_facts(tmp_path)
    assert (f.vision_params, f.active_params) == (100, 64 * 30 + 400 * 64)  # the input embedding is a lookup
    assert f.kv_bytes_per_token == 2 * 2 * 16 * 2 * 4 and f.weights_bytes == (100 + 400 * 64 * 2 + 64 * 30) * 4
    # calibrated decode of BATCH sequences at the workload's context, no prefill cost to speak of:
    # the batch's wall is REPLY steps of BATCH / decode tokens/s each
    cal = Calibration(model="t", prefill_tokens_per_s=1e9, decode_tokens_per_s=100.0, decode_batch=BATCH,
                      decode_context=200 + REPLY / 2, seconds_per_image=0.0)
    assert predict(f, cal, 200.0) == pytest.approx(REPLY * BATCH / 100.0, rel=0.01)
    # the engine's per-request cost and each answer's K images, paid in series before the decode steps
    cal = cal.model_copy(update={"seconds_per_request": 0.01, "seconds_per_image_request": 0.004,
                                 "seconds_per_image": 0.002})
    assert predict(f, cal, 200.0) == pytest.approx(REPLY * BATCH / 100.0 + BATCH * (0.014 + K * 0.002), rel=0.01)


def test_plan_check_calibration_solves_the_engines_costs_from_its_runs():
    """Runs made by a known engine -- r s a request, m s more a request with images, v s an image,
    R prompt tokens/s, s s a decode step of BATCH -- give back r, m, v, R and BATCH / s: the
    per-request costs are not counted in the prefill rate, an image or a step (they once were, and
    the plan erred long by the images a request had)."""
    from vismem.bench.plancheck import BATCH, MULTI, calibration_from

    r, m, v, rate, step = 0.002, 0.003, 0.001, 50_000.0, 0.004

    def wall(prompt: int, images: int = 0, steps: int = 0) -> float:
        return BATCH * (r + (m if images else 0.0)) + prompt / rate + images * v + steps * step

    short = [(wall(600), 600, BATCH)] * 3
    prefill = [(wall(4800) * 1.3, 4800, BATCH), (wall(4800), 4800, BATCH), (wall(4800), 4800, BATCH)]  # one slow
    decode = [(wall(4000, steps=32), 4000, BATCH * 32)] * 3
    images = [(wall(800, images=BATCH), 800, BATCH)] * 3
    multi = [(wall(1400, images=MULTI * BATCH), 1400, BATCH)] * 3
    cal = calibration_from({"short": short, "prefill": prefill, "decode": decode, "image": images, "multi": multi},
                           source="t")
    assert cal.prefill_tokens_per_s == pytest.approx(rate) and cal.seconds_per_request == pytest.approx(r)
    assert cal.seconds_per_image == pytest.approx(v) and cal.seconds_per_image_request == pytest.approx(m)
    assert cal.decode_tokens_per_s == pytest.approx(BATCH / step)
    # long runs no slower than short ones (a busy spell in the short ones): the rate is the long run's own
    slow_short = [(wall(4800) * 2, 600, BATCH)] * 3
    cal = calibration_from({"short": slow_short, "prefill": prefill, "decode": decode, "image": images,
                            "multi": multi}, source="t")
    assert cal.prefill_tokens_per_s == pytest.approx(4800 / wall(4800)) and cal.seconds_per_request > 0
