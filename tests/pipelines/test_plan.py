"""`vismem plan`: its numbers recomputed by hand for small configs -- calls, tokens, in-flight
limits (stage, client, fleet), GPU-served against hosted endpoints, image tokens per model family,
independent sessions, streams per GPU from KV capacity -- its growth with J, and bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from vismem.pipelines.config import load_config
from vismem.pipelines.plan import Rates, estimate, exhaustive_per_chain, mc_per_chain

REPO = Path(__file__).resolve().parents[2]
# The endpoint model by hand: the client's own CPU per call is 0 here (tested apart below).
NOCPU = {"encode_cpu_s": 0.0, "probe_cpu_s": 0.0, "answer_cpu_s": 0.0}
RATES = ["steps_per_session=10", "products_per_session=2", "questions_per_conversation=4", "latency_s=1",
         "text_tokens=100", "recall_text_tokens=200", "image_tokens=50", "completion_tokens=10"] + [
             f"{k}=0" for k in NOCPU]
SMALL = Rates(steps_per_session=10, products_per_session=2, latency_s=1, text_tokens=100, completion_tokens=10, **NOCPU)
HOSTED = {"name": "openai", "args": {"model": "m", "base_url": "http://127.0.0.1:9/v1", "max_concurrency": 4}}


def _plan(*args):
    return subprocess.run([sys.executable, "-m", "vismem", "plan", *args], capture_output=True, text=True,
                          cwd=REPO, timeout=120)


def _cfg(**over):
    over.setdefault("stages", ["encode"])
    return load_config(preset="local", overrides=over)


def _ep(plan, stage, i=0):
    return next(s for s in plan["stages"] if s["stage"] == stage)["endpoints"][i]


def test_plan_of_a_small_config_by_hand():
    args = ["--set", "memory.architectures=[nomemory,dualmem]", "--set", "memshot.vlm=scripted", "--gpus", "2",
            "--json"]
    for r in RATES:
        args += ["--rate", r]
    r = _plan(*args)
    assert r.returncode == 0, r.stderr
    plan = json.loads(r.stdout)
    st = {s["stage"]: s for s in plan["stages"]}
    # local preset: 1 back-end x 3 chains x J=5 sessions x 10 steps, 1 product image (a stand-in:
    # image_tokens) + 100 text tokens + 10 completion tokens a call
    assert st["encode"]["calls"] == 1 * 3 * 5 * 10 and st["encode"]["tokens"] == 150 * (100 + 50 + 10)
    # exhaustive probes per chain: 2 products x 5 x 4 / 2 = 20; x 3 chains x 2 architectures = 120
    # probes, each up to probes.max_steps = 8 recall calls
    assert st["probes"]["probes"] == 120 and st["probes"]["calls"] == 960
    # a recall call: recall_text_tokens (the memory block, full replies), the page's image and the
    # memory block's (dualmem attaches its 5 recalled items' images, nomemory none: 2.5 a call)
    # at image_tokens each, and the reply
    assert st["probes"]["tokens"] == 960 * (200 + (1 + 5 / 2) * 50 + 10)
    # MemShot: 1 conversation x 4 questions x 3 variants x 2 k, answers only (no judge configured)
    assert st["memshot answers"]["calls"] == 24 and "memshot judge" not in st
    assert plan["calls"] == 150 + 960 + 24
    # in flight: 2 actors, one episode each (stand-ins have no client limit); answers: 8 threads
    assert st["encode"]["in_flight"] == 2 and st["memshot answers"]["in_flight"] == 8
    # walls: 150 calls / 2 = 75 s, 960 / 2 = 480 s, 24 / 8 = 3 s, one after another
    assert [st[s]["wall_s"] for s in ("encode", "probes", "memshot answers")] == [75, 480, 3]
    assert plan["wall_hours"] == pytest.approx(558 / 3600)
    assert plan["gpu_hours"] == 0 and {e["kind"] for s in plan["stages"] for e in s["endpoints"]} == {"local"}


def test_client_in_flight_limit_bounds_the_stage():
    # in_flight unset: the client's max_concurrency (4) is what the stage keeps in flight
    plan = estimate(_cfg(encode={"chains": 4, "J": 5, "backends": [HOSTED]}), SMALL)
    e = _ep(plan, "encode")
    assert e["in_flight"] == 4 and e["wall_s"] == pytest.approx(200 * 1 / 4)
    # in_flight 64 on 2 actors, each actor's client capped at 4: 8 calls in flight
    plan = estimate(_cfg(encode={"chains": 4, "J": 5, "backends": [HOSTED], "in_flight": 64}), SMALL)
    e = _ep(plan, "encode")
    assert e["bound_by"] == "client" and e["in_flight"] == 8 and e["wall_s"] == pytest.approx(200 / 8)


def test_sessions_are_independent_the_critical_path_is_one_session():
    # 2 chains x J=5 = 10 sessions, 64 in flight: all at once, the wall is one session (10 steps),
    # not J x steps = 50 calls in sequence
    plan = estimate(_cfg(encode={"chains": 2, "J": 5, "in_flight": 64}), SMALL)
    e = _ep(plan, "encode")
    assert e["in_flight"] == 10 and e["bound_by"] == "units" and e["wall_s"] == pytest.approx(10 * 1)


def test_a_units_probes_run_at_once_and_an_actor_runs_two_chains():
    # J=3, P=2: a chain's architecture has 2 x 3 = 6 probes; 6 chains x 2 architectures = 72 probes,
    # 144 calls. A chain's units go to one of the 2 actors, which runs two chains at once: at most
    # 2 actors x 2 chains x 12 probes = 48 in flight, though 64 are offered
    rates = Rates(products_per_session=2, recall_steps=2, latency_s=1, **NOCPU)
    cfg = _cfg(stages=["probes"], memory={"architectures": ["nomemory", "dualmem"]},
               probes={"backends": [{**HOSTED, "args": {**HOSTED["args"], "max_concurrency": 64}}], "in_flight": 64},
               encode={"chains": 6, "J": 3})
    e = _ep(estimate(cfg, rates), "probes")
    assert e["bound_by"] == "groups" and e["in_flight"] == 48
    assert e["calls"] == 144 and e["wall_s"] == pytest.approx(144 / 48)
    # one chain: its 12 probes all at once, the wall is one probe (2 calls), not the longest
    # unit's probes one after another (session 2: 2 reaches x 2 products x 2 calls = 8 s)
    cfg1 = cfg.model_copy(update={"encode": cfg.encode.model_copy(update={"chains": 1})})
    e1 = _ep(estimate(cfg1, rates), "probes")
    assert e1["bound_by"] == "units" and e1["in_flight"] == 12 and e1["wall_s"] == pytest.approx(2)


def test_gpu_and_hosted_endpoints_apart_with_image_tokens_per_family_and_cost():
    from vismem.serve.models import load_model_spec

    cfg = _cfg(encode={"chains": 2, "J": 5, "backends": ["qwen2.5-vl-7b", "gemini-2.5-flash"], "in_flight": 64})
    plan = estimate(cfg, SMALL, gpus=8)
    q, g = _ep(plan, "encode", 0), _ep(plan, "encode", 1)
    assert (q["kind"], g["kind"]) == ("gpu", "hosted")
    # one 512 px image: Qwen2.5-VL 18 x 18 units of 28 px + 2 delimiters = 326; Gemini 258
    assert q["prompt_tokens"] == 100 * (100 + 326) and g["prompt_tokens"] == 100 * (100 + 258)
    assert plan["gpu_calls"] == 100 and plan["hosted_calls"] == 100 and plan["hosted_tokens"] == g["tokens"]
    assert g["gpu_hours"] == 0 and q["gpu_hours"] > 0
    # 10 sessions each, all in flight: the hosted API must take 10 calls at a time at 1 s a call
    assert g["in_flight"] == 10 and g["requests_per_min"] == pytest.approx(600)
    price = load_model_spec("gemini-2.5-flash").price
    assert g["cost_usd"] == pytest.approx((g["prompt_tokens"] * price["input"] + g["completion_tokens"] * price["output"]) / 1e6)
    assert plan["hosted_cost_usd"] == pytest.approx(g["cost_usd"]) and "cost_usd" not in q
    # GPU-hours: Serve holds ceil(10 / target_ongoing_requests 32) = 1 replica for the 10 s wall
    assert q["replicas_held"] == 1 and q["gpu_hours"] == pytest.approx(1 * q["wall_s"] / 3600)


def test_streams_per_gpu_from_kv_capacity():
    from vismem.pipelines.planfleet import endpoint_of
    from vismem.serve.budget import kv_streams
    from vismem.serve.models import load_model_spec

    ms = load_model_spec("qwen2.5-vl-7b")
    sv = ms.serving
    kv_tokens = (float(sv["gpu_memory_gb"]) * 0.9 - sv["weights_gb"] - sv["overhead_gb"]) * 1e9 / sv["kv_bytes_per_token"]
    assert kv_streams(ms, 20_000) == {"tp": 1, "kv_tokens": pytest.approx(kv_tokens),
                                      "per_replica": kv_tokens // 20_000, "per_gpu": kv_tokens // 20_000}
    assert kv_streams(ms, 100)["per_replica"] == 256  # vLLM's max_num_seqs caps short requests
    fleet = endpoint_of("qwen2.5-vl-7b").fleet(20_000, gpus=8)
    assert fleet["replicas"] == 4 and fleet["capacity"] == 4 * (kv_tokens // 20_000)  # max_replicas 4 of 8 GPUs
    # tensor parallel 2: one replica on 2 GPUs, streams per GPU half the replica's
    big = endpoint_of("qwen3-vl-32b").fleet(2_000, gpus=3)
    assert big["tp"] == 2 and big["replicas"] == 1 and big["streams_per_gpu"] == big["streams_per_replica"] / 2
    # --rate streams_per_gpu overrides the KV figure
    assert endpoint_of("qwen2.5-vl-7b").fleet(2_000, gpus=2, streams_override=8)["capacity"] == 16


def test_a_fleet_the_client_cannot_fill_is_one_warning_line():
    # 64 sessions, 16 in flight (the stage's in_flight): Serve scales to ceil(16 / 256) = 1 of 4 replicas
    cfg = _cfg(encode={"chains": 8, "J": 8, "backends": ["qwen2.5-vl-7b"], "in_flight": 16})
    plan = estimate(cfg, SMALL, gpus=4)
    e = _ep(plan, "encode")
    # a GPU call's latency is the token model's (Little's law on the one replica held): 16 calls of
    # 426 prompt tokens saturate it (compute), so each waits 16 x its GPU-seconds
    assert e["bound_by"] == "compute" and e["latency_s"] == pytest.approx(16 * e["gpu_s_per_call"])
    assert e["wall_s"] == pytest.approx(640 * e["latency_s"] / 16)
    assert len(plan["warnings"]) == 1 and plan["warnings"][0].startswith("encode: qwen2.5-vl-7b: 16 calls in flight")
    assert "keep 1 of its 4 replicas busy" in plan["warnings"][0] and "= 1024)" in plan["warnings"][0]
    # a target above what the KV cache holds at the request size says so
    huge = estimate(cfg, Rates(steps_per_session=10, text_tokens=200_000, **NOCPU), gpus=4)
    assert any("target_ongoing_requests 256 exceeds the 4 requests a replica serves at once (KV cache at 200,446"
               in w for w in huge["warnings"])
    full = estimate(_cfg(encode={"chains": 32, "J": 32, "backends": ["qwen2.5-vl-7b"], "in_flight": 1024, "workers": 16}),
                    Rates(steps_per_session=10, streams_per_gpu=256, **NOCPU), gpus=4)
    assert full["warnings"] == [] and _ep(full, "encode")["bound_by"] in ("offered", "kv", "units", "compute")


def test_cli_prints_endpoints_and_kv_streams():
    r = _plan("--preset", "paper", "--gpus", "8")
    assert r.returncode == 0, r.stderr
    assert "qwen2.5-vl-7b" in r.stdout and "hosted" in r.stdout and "streams per GPU (KV cache" in r.stdout
    # each GPU row's token model and bound, and the utilisation it assumes
    probes = next(ln for ln in r.stdout.splitlines() if ln.startswith("probes") and "qwen2.5-vl-7b" in ln)
    assert " compute " in probes
    assert "qwen2.5-vl-7b on H100 (990 bf16 TFLOP/s, 3.35 TB/s)" in r.stdout and "prefix-cached" in r.stdout
    assert "GPU utilisation without --calibration (serve/devices.yaml): prefill_mfu=0.45" in r.stdout


def test_probe_growth_with_J():
    assert [exhaustive_per_chain(j, 1) for j in (2, 3, 50)] == [1, 3, 1225]  # J(J-1)/2
    # M caps every reach but the last few: J=50, 5 products, M=10 -> 48 reaches of 10 and one of 5
    assert mc_per_chain(50, 5, 10) == 48 * 10 + 5
    assert mc_per_chain(100, 5, 10) / mc_per_chain(50, 5, 10) == pytest.approx(2, rel=0.03)  # O(J*M)
    assert exhaustive_per_chain(100, 5) / exhaustive_per_chain(50, 5) == pytest.approx(4, rel=0.03)  # O(J^2)


@pytest.mark.parametrize("args, msg", [(["--rate", "nope=1"], "bad --rate 'nope=1'"),
                                       (["--rate", "latency_s=fast"], "is not a number"),
                                       (["--rate", "latency_s=0"], "must be positive"),
                                       (["--rate", "streams_per_gpu=0"], "must be positive"),
                                       (["--gpus", "0"], "--gpus must be >= 1")])
def test_plan_bad_input_is_one_line(args, msg):
    r = _plan(*args)
    assert r.returncode != 0 and msg in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_ablation_architectures_on_a_chain_subset_count_only_their_chains():
    # 4 chains x 3 architectures, dualmem-vis on the first 1 chain only: (2 x 4 + 1 x 1) x 20 probes
    over = dict(stages=["probes"], memory={"architectures": ["nomemory", "dualmem", "dualmem-vis"]},
                encode={"chains": 4, "J": 5})
    rates = Rates(products_per_session=2, recall_steps=1, latency_s=1)
    full = estimate(_cfg(**over), rates)
    sub = estimate(_cfg(**over, probes={"ablation_chains": 1, "ablation_architectures": ["dualmem-vis"]}), rates)
    assert next(s for s in full["stages"] if s["stage"] == "probes")["probes"] == 3 * 4 * 20
    assert next(s for s in sub["stages"] if s["stage"] == "probes")["probes"] == (2 * 4 + 1) * 20


def test_plan_measured_on_a_stand_in_run_warns_in_one_line(tmp_path, capsys, monkeypatch):
    from vismem.core.store import Store
    from vismem.pipelines.cli import main
    from vismem.pipelines.commands import plan as plan_cmd

    uri = f"file://{tmp_path}/store"
    store = Store.open(uri)
    real = {"encode.backend": {"name": "openai", "args": {"model": "qwen"}, "cache_slug": "qwen-s0--1234"},
            "memory.textonly": {"components": {"text": {"label": "minilm", "stand_in": False}}, "stand_in": False}}
    fake = {**real, "probes.recaller[0]": {"name": "scripted-recall", "args": {}},
            "encode.backend": {"name": "scripted-shopper", "cache_slug": "scripted-shopper-stand-in-s0--9c94d7b2"},
            "memory.caption": {"components": {"captioner": {"label": "catalogue/caption", "stand_in": True}}}}
    store.put_json("runs/real-1/manifest.json", {"run_id": "real-1", "components": real})
    store.put_json("runs/fake-1/manifest.json", {"run_id": "fake-1", "components": fake})
    # scripted-recall's record carries no mark: its registry declares it a stand-in.
    assert plan_cmd.stand_ins(fake) == ["encode.backend", "probes.recaller[0]", "memory.caption"]
    assert plan_cmd.stand_in_warning(store, "real-1") is None
    # A tiny random model recorded as its bare spec is one too; a served model and MiniLM are not.
    tiny = {"encode.backend": {"name": "transformers", "args": {"path": "tiny:qwen2.5-vl"},
                               "cache_slug": "transformers-tiny-qwen2.5-vl-s0--77"},
            "memshot.vlm": {"name": "transformers", "args": {"path": "tiny:qwen3-vl"}},
            "memshot.judge": {"name": "openai", "args": {"model": "qwen"}},
            "memshot.text_embedder": {"name": "minilm", "args": {}},
            "memshot.image_embedder": {"name": "pocket-clip", "args": {}}}
    assert plan_cmd.stand_ins(tiny) == ["encode.backend", "memshot.vlm", "memshot.image_embedder"]
    monkeypatch.setattr(plan_cmd, "measure", lambda store, run_id: {"latency_s": 0.01, "steps_per_session": 9.0})
    assert main(["plan", "--store", uri, "--measured", "fake-1", "--json"]) == 0
    captured = capsys.readouterr()
    warnings = [ln for ln in captured.err.splitlines() if "warning" in ln]
    assert len(warnings) == 1 and "run fake-1 used stand-ins (" in warnings[0]
    named = warnings[0].split("stand-ins (", 1)[1].split(")", 1)[0]
    assert sorted(named.split(", ")) == ["encode.backend", "memory.caption", "probes.recaller[0]"]
    json.loads(captured.out)  # stdout stays the plan
    assert main(["plan", "--store", uri, "--measured", "real-1", "--json"]) == 0
    assert "stand-in" not in capsys.readouterr().err


def test_the_clients_own_cpu_per_call_bounds_a_stage_and_says_so():
    # 4 chains x J=5 x 10 steps = 200 calls, 64 in flight on a 64-slot endpoint at 1 s a call:
    # 20 sessions at once, the wall is one session (10 x (1 s + 5 ms))
    cfg = _cfg(encode={"chains": 4, "J": 5, "backends": [{**HOSTED, "args": {**HOSTED["args"], "max_concurrency": 64}}],
                       "in_flight": 64, "workers": 2})
    fast = estimate(cfg, Rates(**{**SMALL.as_dict(), "encode_cpu_s": 0.005, "endpoint_slots": 64}))
    e = _ep(fast, "encode")
    assert e["bound_by"] == "units" and e["wall_s"] == pytest.approx(10 * 1.005)
    st = next(s for s in fast["stages"] if s["stage"] == "encode")
    assert st["client_cpu_s"] == pytest.approx(200 * 0.005) and st["client_cores"] == 2
    # 0.2 s of client CPU a call on 2 actors: 200 x 0.2 / 2 = 20 s > the endpoint's 12 s
    slow = estimate(cfg, Rates(**{**SMALL.as_dict(), "encode_cpu_s": 0.2, "endpoint_slots": 64}))
    e = _ep(slow, "encode")
    assert e["bound_by"] == "client-cpu" and e["wall_s"] == pytest.approx(200 * 0.2 / 2)
    assert e["requests_per_min"] == pytest.approx(200 / 20 * 60)
    assert any(w.startswith("encode: the client's CPU bounds it: 200 calls x 200.0 ms / 2 cores = 20 s")
               for w in slow["warnings"])
    # an actor is one Python process: 4 cores do not help 2 actors; 1 core halves them
    assert _ep(estimate(cfg, Rates(**{**SMALL.as_dict(), "encode_cpu_s": 0.2, "client_cores": 4})), "encode")["wall_s"] \
        == pytest.approx(20)
    assert _ep(estimate(cfg, Rates(**{**SMALL.as_dict(), "encode_cpu_s": 0.2, "client_cores": 1})), "encode")["wall_s"] \
        == pytest.approx(40)
    # without an endpoint bound, each episode's step is the call and the client's work on it
    cfg8 = _cfg(encode={"chains": 8, "J": 8, "backends": [HOSTED], "workers": 2})  # 4 in flight (client cap)
    e = _ep(estimate(cfg8, Rates(**{**SMALL.as_dict(), "encode_cpu_s": 0.01})), "encode")
    assert e["bound_by"] in ("offered", "client") and e["wall_s"] == pytest.approx(640 * 1.01 / 4)


def test_ray_data_answers_and_verdicts_keep_the_processors_batches_in_flight():
    from vismem.pipelines.plan import ray_data_flight
    from vismem.pipelines.planfleet import endpoint_of

    judge = {"name": "openai", "args": {"model": "j", "base_url": "http://127.0.0.1:9/v1", "max_concurrency": 16}}
    over = {"stages": ["memshot"], "memshot": {"vlm": {**HOSTED, "args": {**HOSTED["args"], "max_concurrency": 32}},
                                               "judge": judge, "request_concurrency": 32, "conversations": 1}}
    threads = estimate(_cfg(**over), SMALL)
    assert [s["in_flight"] for s in threads["stages"]] == [32, 32]
    # ray-data: 6 processor actors on 8 cores (ray.concurrency 6), each one batch of its
    # client's max_concurrency at a time -- not the driver's request_concurrency
    cluster = {**over, "ray": {"concurrency": 6, "num_cpus": 8}}
    rd = estimate(_cfg(**{**cluster, "memshot": {**over["memshot"], "batch_inference": "ray-data"}}), SMALL)
    ans, jud = rd["stages"]
    assert (ans["in_flight"], jud["in_flight"]) == (6 * 32, 6 * 16)
    assert _ep(rd, "memshot answers")["wall_s"] == pytest.approx(max(ans["calls"] / (6 * 32), 1))
    # on 2 cores, one actor (the other core builds the requests): one batch in flight
    small = _cfg(**{**over, "ray": {"concurrency": 2, "num_cpus": 2}})
    assert ray_data_flight(small, endpoint_of(over["memshot"]["vlm"]), SMALL) == (1, 32.0)
    assert ray_data_flight(small, endpoint_of("scripted"), SMALL) == (1, 8.0)  # no client limit: Ray's 8
