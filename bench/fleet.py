"""Benchmark ``fleet``: do encode, probes and MemShot answers keep a (simulated) GPU fleet busy, and
does ``vismem plan`` predict how long they take?

The fleet is the local OpenAI-compatible server with a capacity model
(:mod:`vismem.serve.capacity`): ``slots`` concurrent requests, ``base_s + per_image_s x images +
per_token_s x completion tokens`` seconds each (seeded jitter), queueing beyond. It serves the
scripted shopper (encode), the scripted recall policy (probes) and a scripted answerer (MemShot
answers), each behind the project's ``openai`` client, so every stage runs as a run would: the
encode and probes stages on local Ray with the HTTP page env, answers through
:func:`vismem.memory.dialogue.answering.generate_answers` (the thread path) over synthetic memory
shots. Set-up (the shorter chains' replay for the probes) is outside the measurement.

For each part: the fleet's utilisation (busy slot-seconds / (slots x wall)), calls/s, mean
requests in flight, and the plan's wall beside the measured one. The measured wall is the
fleet's (first request to last reply); the plan is :func:`vismem.pipelines.plan.estimate` on the
same config, given what it cannot know beforehand from the run itself: the mean service time
(``latency_s``), steps per session / recall steps per probe / products per session (so the plan's
call count is the run's), the endpoint's slots, and the CPU seconds a call cost on this machine
(every process of the bench -- driver, simulator, local Ray and its actors -- over the calls:
the client's CPU and the simulator's share the same cores; the plan takes them at
``ray.num_cpus``). It therefore checks the plan's concurrency and CPU model -- in-flight limits,
independent sessions, probe groups, critical paths, the client-CPU bound -- not its guesses
of per-call figures. ``cores_to_fill`` is the CPU the slots would need at that service time
(slots / service time x CPU a call): above the cores there are, no client fills the fleet. Targets (issue 25): utilisation >= 0.85 for encode and probes once enough
episodes are queued, >= 0.9 for answers; plan wall within +-20 % of the measured.
"""

from __future__ import annotations

import io
import os
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterator

from vismem.bench.harness import benchmark, record
from vismem.serve.capacity import CapacityModel

UTIL_TARGETS = {"encode": 0.85, "probes": 0.85, "answers": 0.9}
PLAN_TOLERANCE = 0.2


@dataclass(frozen=True)
class FleetScale:
    """One size of the benchmark: the simulated fleet and each part's workload."""

    fleet: CapacityModel = field(default_factory=lambda: CapacityModel(slots=64, base_s=0.5, per_image_s=0.1,
                                                                      per_token_s=0.002, jitter=0.25))
    # Enough sessions queued (256, four times the slots) that the last ones' drain is a small
    # part of the wall: "once enough episodes are queued" (issue 25).
    encode: dict[str, int] | None = field(default_factory=lambda: {"chains": 32, "J": 8, "workers": 2})
    # J = 2: every probe unit is one session's probes, 17 architectures a chain's group; 16
    # chains (four per actor), 4 actors x 17 episodes in flight (>= slots: the fleet saturated).
    probes: dict[str, int] | None = field(default_factory=lambda: {"chains": 16, "J": 2, "workers": 4,
                                                                   "in_flight": 68})
    answers: dict[str, int] | None = field(default_factory=lambda: {"questions": 1024, "k": 3})


BENCH = FleetScale()


@contextmanager
def _fleet(vlm: Any, scale: FleetScale, seed: int) -> Iterator[Any]:
    from vismem.serve.openai_server import LocalOpenAIServer

    with LocalOpenAIServer(vlm=vlm, capacity=replace(scale.fleet, seed=seed)) as srv:
        yield srv


def _client(srv: Any, max_concurrency: int) -> dict[str, Any]:
    return {"name": "openai", "args": {"model": srv.model_id, "base_url": srv.base_url, "api_key_env": None,
                                       "max_concurrency": int(max_concurrency), "timeout_s": 300}}


def _config(tmp: Path, stages: list[str], encode: dict[str, Any], probes: dict[str, Any] | None = None,
            memshot: dict[str, Any] | None = None) -> Any:
    from vismem.pipelines.config import load_config

    over: dict[str, Any] = {
        "name": "bench-fleet", "stages": stages, "runs_dir": str(tmp / "runs"), "store": {"uri": f"file://{tmp}/store"},
        "ray": {"num_cpus": 2, "object_store_mb": 400, "actor_cpus": 0.5, "concurrency": 2},
        "encode": {"env": "http", **encode}}
    if probes is not None:
        over["probes"] = {"env": "http", **probes}
    if memshot is not None:
        over["memshot"] = memshot
    return load_config(overrides=over)


def _proc_cpu(pid: int) -> float | None:
    """CPU seconds of a process and of its children it has waited for (``/proc``), or None."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            f = fh.read().rpartition(")")[2].split()
    except OSError:
        return None
    return sum(int(x) for x in f[11:15]) / os.sysconf("SC_CLK_TCK")


class CpuWatch:
    """CPU seconds this process and every process it started (a local Ray: raylet, actors) spent,
    sampled every ``interval_s`` into a cumulative series, so that :meth:`between` gives the CPU
    of a time window (a process that ends between samples loses at most that much; one reaped by
    a watched parent is counted in the parent's; one born while watched counts from its start)."""

    def __init__(self, interval_s: float = 0.25) -> None:
        self.interval_s = interval_s
        self._first: dict[int, float] = {}
        self._last: dict[int, float] = {}
        self.series: list[tuple[float, float]] = []  # (monotonic time, CPU seconds so far)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="cpu-watch", daemon=True)

    def _sample(self) -> None:
        from vismem.core.peakmem import tree_pids

        born = bool(self.series)
        for pid in {os.getpid(), *tree_pids()}:
            cpu = _proc_cpu(pid)
            if cpu is not None:
                self._first.setdefault(pid, 0.0 if born else cpu)
                self._last[pid] = cpu
        self.series.append((time.monotonic(), sum(self._last[p] - self._first[p] for p in self._last)))

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample()

    def __enter__(self) -> "CpuWatch":
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    def at(self, t: float) -> float:
        """CPU seconds spent up to time ``t`` (linear between samples)."""
        pts = self.series
        if t <= pts[0][0]:
            return pts[0][1]
        for (t0, c0), (t1, c1) in zip(pts, pts[1:]):
            if t <= t1:
                return c0 + (c1 - c0) * (t - t0) / (t1 - t0) if t1 > t0 else c1
        return pts[-1][1]

    def between(self, a: float, b: float) -> float:
        """CPU seconds spent from ``a`` to ``b``."""
        return self.at(b) - self.at(a)


def _measure(srv: Any, fn: Any) -> tuple[dict[str, Any], float, Any]:
    """Run ``fn()`` against ``srv``'s fleet from fresh stats: (fleet stats with the CPU seconds
    every process of the bench spent while the fleet had work, driver seconds, result)."""
    srv.fleet.stats.reset()
    t0 = time.perf_counter()
    with CpuWatch() as cpu:
        out = fn()
    stats = srv.fleet.stats.snapshot()
    fs = srv.fleet.stats
    # The fleet's window (first request to last reply): actors starting up before it are not calls' CPU.
    stats["cpu_s"] = cpu.between(fs.first, fs.last) if fs.first is not None else 0.0
    stats["cpu_per_call_s"] = stats["cpu_s"] / stats["calls"] if stats["calls"] else 0.0
    return stats, time.perf_counter() - t0, out


def _planned(cfg: Any, stage: str, **rates: float) -> float:
    from vismem.pipelines.plan import Rates, estimate

    plan = estimate(cfg, Rates(**rates))
    return next(s["wall_s"] for s in plan["stages"] if s["stage"] == stage)


def run_encode(tmp: Path, scale: FleetScale) -> dict[str, Any]:
    """The encode stage's sessions against the fleet, and the plan of the same config."""
    from vismem.agents.scripted import ScriptedShopper
    from vismem.pipelines.runner import run

    enc = dict(scale.encode or {})
    with _fleet(ScriptedShopper(seed=0), scale, seed=1) as srv:
        slots = scale.fleet.slots
        cfg = _config(tmp, ["encode"], {**enc, "backends": [_client(srv, slots)], "in_flight": slots})
        stats, driver_s, _ = _measure(srv, lambda: run(cfg, progress=False))
    sessions = enc["chains"] * enc["J"]
    plan = _planned(cfg, "encode", steps_per_session=stats["calls"] / sessions, latency_s=stats["mean_service_s"],
                    endpoint_slots=scale.fleet.slots, encode_cpu_s=stats["cpu_per_call_s"])
    return {"stats": stats, "driver_s": driver_s, "plan_s": plan, "units": sessions}


def run_probes(tmp: Path, scale: FleetScale) -> dict[str, Any]:
    """The probes stage against the fleet (chains encoded and replayed first, unmeasured)."""
    from vismem.agents.scripted import ScriptedShopper
    from vismem.agents.scripted_recall import ScriptedRecall
    from vismem.pipelines.plan import exhaustive_per_chain
    from vismem.pipelines.runner import run

    pr = dict(scale.probes or {})
    enc = {"chains": pr.pop("chains"), "J": pr.pop("J"), "workers": 2, "backends": ["scripted-shopper"]}
    with _fleet(ScriptedShopper(seed=0), scale, seed=2) as _shop, _fleet(ScriptedRecall(), scale, seed=3) as srv:
        recall = {**pr, "backends": [_client(srv, scale.fleet.slots)]}
        run(_config(tmp, ["encode", "replay"], enc, recall), progress=False)
        cfg = _config(tmp, ["probes"], enc, recall)
        stats, driver_s, out = _measure(srv, lambda: run(cfg, progress=False))
    probes = int(out["probes"]["probes"])
    A = len(cfg.memory.architectures)
    products = probes / (enc["chains"] * A * exhaustive_per_chain(enc["J"], 1))
    plan = _planned(cfg, "probes", products_per_session=products, recall_steps=stats["calls"] / max(1, probes),
                    latency_s=stats["mean_service_s"], endpoint_slots=scale.fleet.slots,
                    probe_cpu_s=stats["cpu_per_call_s"])
    return {"stats": stats, "driver_s": driver_s, "plan_s": plan, "units": probes}


def _png(i: int) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (32, 48), (i % 256, 40, 90)).save(buf, format="PNG")
    return buf.getvalue()


def run_answers(tmp: Path, scale: FleetScale) -> dict[str, Any]:
    """MemShot answers (the thread path, ``request_concurrency`` = slots) over synthetic shots."""
    import polars as pl

    from vismem.memory.dialogue.answering import generate_answers
    from vismem.serve.build import build_vlm

    n, k = int(scale.answers["questions"]), int(scale.answers["k"])
    shots = {f"shot/{i}.png": _png(i) for i in range(8)}
    units = pl.DataFrame([{"variant": "memshot", "unit_id": str(i), "modality": "image", "text": None,
                           "image_key": f"shot/{i}.png"} for i in range(8)])
    questions = pl.DataFrame([{"conversation_id": "c0", "question_id": f"q{q}", "question": f"what happened at {q}?",
                               "category": "single-hop"} for q in range(n)])
    tasks = pl.DataFrame([{"variant": "memshot", "k": k, "conversation_id": "c0", "question_id": f"q{q}",
                           "unit_ids": [str((q + i) % 8) for i in range(k)]} for q in range(n)])
    answerer = build_vlm({"name": "scripted", "args": {"replies": ["They went hiking."]}})
    with _fleet(answerer, scale, seed=4) as srv:
        client = build_vlm(_client(srv, scale.fleet.slots))
        stats, driver_s, out = _measure(srv, lambda: generate_answers(
            tasks, units, questions, client, dataset="locomo", read_image=shots.__getitem__, max_tokens=32,
            concurrency=scale.fleet.slots))
        cfg = _config(tmp, ["memshot"], {"chains": 1, "J": 1}, memshot={
            "vlm": _client(srv, scale.fleet.slots), "conversations": 1, "variants": ["memshot"], "k": [k],
            "request_concurrency": scale.fleet.slots})
    if (out["answer_status"] != "ok").any():
        raise RuntimeError(f"answers failed: {out['answer_status'].value_counts().to_dicts()}")
    plan = _planned(cfg, "memshot answers", questions_per_conversation=n, latency_s=stats["mean_service_s"],
                    endpoint_slots=scale.fleet.slots, answer_cpu_s=stats["cpu_per_call_s"])
    return {"stats": stats, "driver_s": driver_s, "plan_s": plan, "units": n}


PARTS = {"encode": run_encode, "probes": run_probes, "answers": run_answers}


def run_fleet(scale: FleetScale = BENCH, parts: tuple[str, ...] = ("encode", "probes", "answers")) -> dict[str, Any]:
    """Each part's fleet stats, driver seconds and planned wall (see the module doc)."""
    out = {}
    with tempfile.TemporaryDirectory(prefix="vismem-bench-fleet-") as tmp:
        for part in parts:
            out[part] = PARTS[part](Path(tmp), scale)
    return out


def fleet_records(results: dict[str, Any], name: str = "fleet") -> list[dict[str, Any]]:
    """Benchmark records of :func:`run_fleet`'s results, targets from issue 25."""
    recs = []
    for part, r in results.items():
        st = r["stats"]
        err = abs(r["plan_s"] / st["wall_s"] - 1) if st["wall_s"] else float("nan")
        recs += [record(name, f"{part}.utilisation", st["utilisation"], "fraction", target=UTIL_TARGETS[part],
                        better="higher"),
                 record(name, f"{part}.calls_per_s", st["calls_per_s"], "calls/s", better="higher"),
                 record(name, f"{part}.calls", st["calls"], "calls", better="higher"),
                 record(name, f"{part}.mean_in_flight", st["mean_in_flight"], "requests", better="higher"),
                 record(name, f"{part}.mean_queue_wait_s", st["mean_queue_wait_s"], "s"),
                 record(name, f"{part}.mean_service_s", st["mean_service_s"], "s"),
                 record(name, f"{part}.cpu_per_call_s", st["cpu_per_call_s"], "s"),
                 # calls/s the slots take at this service time x CPU a call: cores the bench needs
                 record(name, f"{part}.cores_to_fill", st["slots"] / st["mean_service_s"] * st["cpu_per_call_s"]
                        if st["mean_service_s"] else float("nan"), "cores"),
                 # the cores the bench's processes got while the fleet had work (a shared machine gives less)
                 record(name, f"{part}.cores_obtained", st["cpu_s"] / st["wall_s"] if st["wall_s"] else float("nan"),
                        "cores"),
                 record(name, f"{part}.measured_wall_s", st["wall_s"], "s"),
                 record(name, f"{part}.plan_wall_s", r["plan_s"], "s"),
                 record(name, f"{part}.plan_error", err, "fraction", target=PLAN_TOLERANCE),
                 record(name, f"{part}.stage_wall_s", r["driver_s"], "s")]
    return recs


@benchmark("fleet", "encode, probes and MemShot answers against a simulated 64-slot endpoint (0.4-1 s a call): "
           "utilisation, calls/s, and vismem plan's wall beside the measured one")
def fleet() -> list[dict[str, Any]]:
    return fleet_records(run_fleet(BENCH))
