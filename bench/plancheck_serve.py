"""``plan-check-serve-llm``: ``vismem plan``'s encode rows against DMV-Bench encode sessions browsing
the real vLLM CPU engine (the engine tier) through ``ray.serve.llm``, deployed as a user deploys it.

1. **deploy** the tiny Qwen2.5-VL (``tiny-qwen2.5-vl-vllm``) with ``vismem serve up`` on a local Ray
   (127.0.0.1, a private state file), as ``tests/engine/test_serve_engine.py`` does;
2. **calibrate** it over HTTP with ``serve-throughput``'s own runs (:func:`vismem.bench.calibrate.kinds`,
   :func:`~vismem.bench.calibrate.solve`) at a batch of ``J`` -- the sessions in flight -- with
   prompts as long as the sessions' (the decode runs then step at the sessions' context:
   the plan scales a step to another context by the model's shape, which on a tiny model on a CPU,
   where a step is mostly the engine's own overhead, is not what the engine does) and
   ``MAX_TOKENS``-token replies;
3. **measure** encode sessions: ``vismem run encode --backend deployed:tiny-qwen2.5-vl-vllm
   --chains 1 --J J`` (HTTP env), a fresh store and chain seed each round, so no session, prompt
   or image comes from a cache of an earlier round;
4. **plan** the same config with ``vismem plan encode ... --calibration FILE --json`` (the plan's
   own code path) and read the encode stage's GPU endpoint row. The workload's shape is given to
   the plan as ``--rate`` figures measured from the sessions (steps a session, prompt and reply
   tokens a call, images a call) and the system prompt's tokens in this model's tokenizer
   (``shared_prefix_tokens``, asked of the endpoint): the plan caches only that prefix of an
   encode step, because the step message opens with ``Step k/N`` and the subtask before the
   history (on the engine every step after a session's first had the system prompt's whole
   128-token blocks cached and none of its history, 2026-12-08). No timing enters the plan but
   the calibration. The plan with its default ``shared_prefix_tokens`` (the system prompt counted
   for Qwen2's tokenizer, :mod:`vismem.pipelines.planprompts`: a third of the tiny tokenizer's
   count) is recorded beside (no target).

**What is compared**: a session's **model-call seconds** -- the sum of its steps' call latency
(``latency_s`` of the trajectory's timing table: the client's request to reply through Serve's
proxy, router and engine) -- against the plan's call latency (Little's law over the ``J`` calls
in flight on the calibrated replica) x the steps of a session: the model's part of the encode
stage's critical path. The session's wall also holds the client's own work each step (the HTTP
env's pages, the shop's images, the trajectory's blobs), which the plan does not take from the
engine but from ``encode_cpu_s`` (4 ms a step, measured on the fleet simulator); it is recorded
beside, measured and planned, with no target.

One untimed encode round and one untimed calibration round go first, then ``ROUNDS`` rounds of
one calibration round and one encode round; each figure is the median of its rounds.
Runs only where vLLM imports (``.venv-engine/bin/vismem bench plan-check-serve-llm``).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import tempfile
from pathlib import Path
from statistics import median
from typing import Any

from vismem.bench.harness import benchmark, record
from vismem.bench.plancheck import MODEL

NAME = "plan-check-serve-llm"
#: Sessions of the one chain (browsed at once), reply tokens a step, timed rounds, the warm-up
#: round's chain seed (round ``r`` browses chain ``SEED + 1 + r``), the catalogue's image side.
J, MAX_TOKENS, ROUNDS, SEED, IMAGE_PX = 3, 32, 3, 500, 512
#: Words of the untimed calibration round's long prompts (tokens a word come from it).
WARM_WORDS = 300


def config_args(seed: int) -> list[str]:
    """The encode config of a round, as `vismem run` and `vismem plan` both take it."""
    return ["--backend", f"deployed:{MODEL}", "--chains", "1", "--J", str(J), "--set", "encode.env=http",
            "--set", f"encode.max_tokens={MAX_TOKENS}", "--set", f"encode.first_seed={seed}",
            "--set", "ray.actor_cpus=0.25", "--set", "ray.num_cpus=2", "--set", "ray.object_store_mb=300"]


def cli(argv: list[str]) -> str:
    """``vismem ARGV``'s stdout; a failure raises."""
    from vismem.pipelines.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(argv)
    if rc != 0:
        raise RuntimeError(f"{NAME}: vismem {' '.join(argv[:2])} exited {rc}: {out.getvalue()[-500:]}")
    return out.getvalue()


def encode_round(tmp: Path, seed: int) -> list[dict[str, Any]]:
    """One encode run of chain ``seed`` into a fresh store: each session's steps (``latency_s``,
    tokens, images) and wall (:func:`sessions`)."""
    from vismem.core.store import Store

    where = tmp / f"round-{seed}"
    res = json.loads(cli(["run", "encode", "--store", f"file://{where / 'store'}", "--no-progress",
                          *config_args(seed), "--set", f"runs_dir={where / 'runs'}", "--json"]))
    enc = res["encode"]
    if enc.get("status") != "done" or enc.get("failed"):
        raise RuntimeError(f"{NAME}: encode round {seed} ended {enc.get('status')} (failed {enc.get('failed')})")
    return sessions(Store.open(res["_store"]), res["_run_id"])


def sessions(store: Any, run_id: str) -> list[dict[str, Any]]:
    """Every encoded session of ``run_id``: ``steps`` (latency_s, prompt and reply tokens, images
    of each step) and ``wall_s`` (the session's own wall, from its summary)."""
    from vismem.pipelines.dmv.trajectories import TrajectoryCache

    enc = store.read_table(f"runs/{run_id}/results/encoding.parquet")
    out = []
    for slug, seed, j in sorted(enc.select("backend", "seed", "j").unique().iter_rows()):
        cache = TrajectoryCache(store, slug)  # the results count j from 1, the cache from 0
        df = cache.read_steps(seed, j - 1)
        cols = ("latency_s", "prompt_tokens", "completion_tokens", "n_images", "status")
        out.append({"steps": [dict(zip(cols, r)) for r in zip(*(df[c].to_list() for c in cols))],
                    "wall_s": float(cache.read_summary(seed, j - 1)["wall_s"])})
    if len(out) != J or any(s["status"] == "failed" for x in out for s in x["steps"]):
        raise RuntimeError(f"{NAME}: {len(out)} of {J} sessions, or a failed model call, in run {run_id}")
    return out


def shape(rounds: list[list[dict[str, Any]]]) -> dict[str, float]:
    """The sessions' workload (no timing): steps a session, prompt and reply tokens and images a call."""
    steps = [s for r in rounds for x in r for s in x["steps"]]
    n = len(steps)
    return {"steps_per_session": n / sum(len(r) for r in rounds),
            "prompt_tokens": sum(s["prompt_tokens"] for s in steps) / n,
            "completion_tokens": sum(s["completion_tokens"] for s in steps) / n,
            "images_per_call": sum(s["n_images"] for s in steps) / n}


def timing(rnd: list[dict[str, Any]]) -> dict[str, float]:
    """A round's figures: a session's model-call seconds and wall (means over its sessions), the
    client's own seconds a step, and the calls in flight (all model seconds / the longest session)."""
    model = [sum(s["latency_s"] for s in x["steps"]) for x in rnd]
    walls = [x["wall_s"] for x in rnd]
    steps = sum(len(x["steps"]) for x in rnd)
    return {"model_s": sum(model) / len(rnd), "wall_s": sum(walls) / len(rnd),
            "client_s": (sum(walls) - sum(model)) / steps, "in_flight": sum(model) / max(walls)}


def words_for(tokens: float, warm: dict[str, Any]) -> int:
    """Words of :func:`vismem.bench.calibrate.words` making a prompt of about ``tokens`` tokens, by
    the warm-up round's prefill run (``WARM_WORDS`` words) against its short run."""
    (_, ps, _), (_, pp, _) = warm["short"], warm["prefill"]
    per_word = (pp - ps) / (J * WARM_WORDS)
    return max(30, round((tokens - ps / J) / per_word))


def system_tokens(vlm: Any) -> int:
    """Prompt tokens of a request holding only the encode system prompt (chat template included):
    the prefix every encode call shares."""
    from vismem.agents import prompts
    from vismem.serve.vlm import Message

    return int(vlm.chat([Message("user", prompts.system_prompt("fixed"))], max_tokens=1).prompt_tokens)


def planned(cal_path: Path, work: dict[str, float], shared: float | None) -> dict[str, Any]:
    """The encode stage's endpoint row of `vismem plan` on the rounds' config and the calibration;
    ``shared`` None: the plan's default ``shared_prefix_tokens`` instead of the system prompt's
    tokens in this model's tokenizer."""
    from vismem.serve.budget import tokens_per_image
    from vismem.serve.models import load_model_spec

    per_image = tokens_per_image(load_model_spec(MODEL), (IMAGE_PX, IMAGE_PX))
    text = work["prompt_tokens"] - work["images_per_call"] * per_image
    rates = {"steps_per_session": work["steps_per_session"], "text_tokens": text,
             "images_per_call": work["images_per_call"], "image_px": IMAGE_PX,
             "completion_tokens": work["completion_tokens"]}
    if shared is not None:
        rates.update(shared_prefix_tokens=shared)
    argv = ["plan", "encode", *config_args(SEED), "--calibration", str(cal_path), "--json"]
    for k, v in rates.items():
        argv += ["--rate", f"{k}={v}"]
    plan = json.loads(cli(argv))
    [stage] = [s for s in plan["stages"] if s["stage"] == "encode"]
    [row] = [e for e in stage["endpoints"] if e["endpoint"] == MODEL]
    if row["kind"] != "gpu" or not row.get("calibrated"):
        raise RuntimeError(f"{NAME}: the plan's {MODEL} row is {row['kind']}, calibrated {row.get('calibrated')}")
    return {**row, "steps_per_session": work["steps_per_session"], "cpu_s": plan["rates"]["encode_cpu_s"]}


@contextlib.contextmanager
def deployed(tmp: Path) -> Any:
    """``vismem serve up MODEL`` on a private state file (a user's own deployment untouched),
    ``serve down`` after."""
    saved = {k: os.environ.get(k) for k in ("VISMEM_SERVE_STATE", "VISMEM_SERVE_URL")}
    os.environ["VISMEM_SERVE_STATE"] = str(tmp / "serve" / "state.json")
    os.environ.pop("VISMEM_SERVE_URL", None)
    try:
        cli(["serve", "up", MODEL, "--ray-cpus", "3", "--timeout", "900"])
        try:
            yield
        finally:
            cli(["serve", "down"])
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def measure_all(tmp: Path) -> tuple[Any, list[list[dict[str, Any]]], float]:
    """Steps 2-3 of the module doc against the deployment: the calibration, the timed encode rounds
    and the shared prefix."""
    from vismem.bench.calibrate import MULTI, kinds, run_round, solve
    from vismem.serve.build import build_vlm

    vlm = build_vlm(f"deployed:{MODEL}")
    work = shape([encode_round(tmp, SEED)])  # untimed: the engine's first sessions
    warm = run_round(vlm, kinds(vlm.model, batch=J, prefill_words=WARM_WORDS, decode_tokens=MAX_TOKENS,
                                image_px=IMAGE_PX))
    n = words_for(work["prompt_tokens"], warm)
    makers = kinds(vlm.model, batch=J, prefill_words=n, decode_words=n, decode_tokens=MAX_TOKENS, image_px=IMAGE_PX)
    runs: dict[str, list[Any]] = {k: [] for k in makers}
    rounds = []
    for r in range(ROUNDS):  # interleaved: a busy spell falls on both
        for kind, run in run_round(vlm, makers).items():
            runs[kind].append(run)
        rounds.append(encode_round(tmp, SEED + 1 + r))
    cal = solve(runs, batch=J, multi=MULTI, model=MODEL, device="cpu (this machine)",
                source=f"{NAME} over HTTP through ray.serve.llm")
    return cal, rounds, float(system_tokens(vlm))


def check() -> list[dict[str, Any]]:
    """The module doc's steps, as records."""
    with tempfile.TemporaryDirectory(prefix="vismem-plancheck-serve-") as d:
        tmp = Path(d)
        with deployed(tmp):  # the plan too: it resolves deployed:NAME as a run does
            cal, rounds, shared = measure_all(tmp)
            cal_path = tmp / "calibration.json"
            cal_path.write_text(json.dumps({"calibrations": [cal.model_dump()]}))
            work = shape(rounds)
            row = planned(cal_path, work, shared)
            default = planned(cal_path, work, None)
    return compare(cal, rounds, work, row, shared) + [
        record(NAME, "encode session: planned model-call seconds with the plan's default shared_prefix_tokens",
               default["steps_per_session"] * default["latency_s"], "s")]


def compare(cal: Any, rounds: list[list[dict[str, Any]]], work: dict[str, float], row: dict[str, Any],
            shared: float) -> list[dict[str, Any]]:
    """Measured (medians over the rounds) against planned, as records (see the module doc)."""
    from vismem.bench.plancheck import records

    t = [timing(r) for r in rounds]
    med = {k: float(median(x[k] for x in t)) for k in t[0]}
    steps = row["steps_per_session"]
    model_planned = steps * row["latency_s"]
    wall_planned = steps * (row["latency_s"] + row["cpu_s"])
    what = "encode session: "
    spread = [x["model_s"] for x in t]
    return [*records(NAME, cal, med["model_s"], model_planned, what, "model-call seconds"),
            record(NAME, f"{what}measured model-call seconds, fastest round", min(spread), "s"),
            record(NAME, f"{what}measured model-call seconds, slowest round", max(spread), "s"),
            record(NAME, f"{what}measured wall", med["wall_s"], "s"),
            record(NAME, f"{what}planned wall (model calls + encode_cpu_s a step)", wall_planned, "s"),
            record(NAME, "client seconds a step, measured (session wall less its model calls)", med["client_s"], "s"),
            record(NAME, "client seconds a step, planned (encode_cpu_s)", row["cpu_s"], "s"),
            record(NAME, "calls in flight, measured", med["in_flight"], "calls"),
            record(NAME, f"calls in flight, planned (bound {row['bound_by']})", row["in_flight"], "calls"),
            record(NAME, "steps a session", steps, "steps"),
            record(NAME, "prompt tokens a call", work["prompt_tokens"], "tokens"),
            record(NAME, "shared prefix tokens (the system prompt)", shared, "tokens"),
            record(NAME, "images a call", work["images_per_call"], "images"),
            record(NAME, "reply tokens a call", work["completion_tokens"], "tokens"),
            record(NAME, "encode rounds", len(rounds), "rounds")]


if importlib.util.find_spec("vllm") is not None:
    @benchmark(NAME, "vismem plan's encode rows, calibrated over HTTP on the real vLLM CPU engine served by "
               "ray.serve.llm (vismem serve up, tiny Qwen2.5-VL), against the model-call seconds of encode "
               "sessions browsing it (needs .venv-engine)")
    def run() -> list[dict[str, Any]]:
        return check()
