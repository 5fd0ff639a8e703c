"""`vismem bench plan-check-serve-llm`'s offline half (the engine run is the engine tier's): the
encode sessions' figures, the plan's encode row on the tiny vLLM variant from a calibration, and
what is compared."""

from __future__ import annotations

import json

import pytest


def _session(latency: float, steps: int, wall: float, prompt: int = 900, images: int = 1) -> dict:
    return {"steps": [{"latency_s": latency, "prompt_tokens": prompt, "completion_tokens": 32, "n_images": images,
                       "status": "ok"} for _ in range(steps)], "wall_s": wall}


def test_sessions_model_seconds_client_share_and_calls_in_flight():
    from vismem.bench.plancheck_serve import shape, timing

    rnd = [_session(0.2, 10, 2.5), _session(0.2, 10, 2.4), _session(0.1, 20, 2.5, images=0)]
    t = timing(rnd)
    # a session's model calls: 2 s each; the walls less them over the 40 steps: (7.4 - 6) / 40
    assert t["model_s"] == pytest.approx(2.0) and t["client_s"] == pytest.approx(1.4 / 40)
    assert t["wall_s"] == pytest.approx(7.4 / 3) and t["in_flight"] == pytest.approx(6.0 / 2.5)
    w = shape([rnd, rnd])
    assert w["steps_per_session"] == pytest.approx(40 / 3) and w["images_per_call"] == pytest.approx(0.5)
    assert w["prompt_tokens"] == 900 and w["completion_tokens"] == 32


def test_calibration_prompt_words_match_the_sessions_prompts():
    from vismem.bench.plancheck_serve import J, WARM_WORDS, words_for

    # the warm-up's long prompts: 2 tokens a word beyond the short prompts' 20 tokens each
    warm = {"short": (0.1, 20 * J, J), "prefill": (0.2, 20 * J + 2 * WARM_WORDS * J, J)}
    assert words_for(1020, warm) == 500 and words_for(10, warm) == 30


def test_the_plans_encode_row_on_the_tiny_vllm_variant_is_little_law_on_the_calibration(tmp_path):
    """The plan's own code path, offline: the tiny variant's encode row is a calibrated GPU row
    (its YAML's model facts), and its call latency is the calibration's: J calls in flight on one
    replica each pay J x (request + prefill + images) and decode steps at a batch of J."""
    from vismem.bench.calibrate import calibration_records
    from vismem.bench.plancheck_serve import J, MODEL, compare, planned
    from vismem.pipelines.plan import Rates
    from vismem.serve.throughput import Calibration

    cal = Calibration(model=MODEL, prefill_tokens_per_s=5e6, decode_tokens_per_s=J / 0.005, decode_batch=J,
                      decode_context=918 + 16, seconds_per_image=0.002, seconds_per_request=0.01,
                      seconds_per_image_request=0.004)
    path = tmp_path / "cal.json"
    entry = cal.model_dump(exclude={"model", "device", "source", "gpus"})
    path.write_text(json.dumps(calibration_records(entry, MODEL, "test")))
    work = {"steps_per_session": 20.0, "prompt_tokens": 918.0, "completion_tokens": 32.0, "images_per_call": 1.0}
    row = planned(path, work, shared=300.0)
    assert row["kind"] == "gpu" and row["in_flight"] == J and row["decode_batch"] == J
    # prefill next to free at 5e6 tokens/s; 32 steps of 5 ms at batch J and the calibration's context
    want = J * (0.01 + 0.004 + 0.002) + 32 * 0.005
    assert row["latency_s"] == pytest.approx(want, rel=0.02)
    # an encode step caches the shared prefix only (the step message opens with Step k/N): the
    # system prompt's tokens given, else the plan's default
    slow = work | {"prompt_tokens": 5000.0}
    assert planned(path, slow, shared=300.0)["uncached_tokens"] == pytest.approx(4700)
    assert planned(path, slow, shared=None)["uncached_tokens"] == pytest.approx(5000 - Rates().shared_prefix_tokens)
    # measured: each session's 20 calls at 0.2 s -> 4 s of model calls; planned 20 x latency
    rnd = [_session(0.2, 20, 4.5, prompt=918) for _ in range(J)]
    recs = {r["metric"]: r for r in compare(cal, [rnd, rnd, rnd], work, row, 300.0)}
    ratio = recs["encode session: plan / measured"]["value"]
    assert ratio == pytest.approx(20 * row["latency_s"] / 4.0)
    err = recs["encode session: plan error"]
    assert err["value"] == pytest.approx(abs(ratio - 1)) and err["target"] == 0.25
    assert recs["encode session: measured model-call seconds"]["value"] == pytest.approx(4.0)
