"""``vismem plan``: what a run costs before it runs -- VLM calls, tokens, GPU-hours, wall time.

Pure arithmetic over a run config and a few per-call figures (:class:`Rates`), each either
given or measured (mean model seconds per call from a finished run's encoding table). Counts,
for each DMV-Bench chain of ``J`` sessions browsed by one back-end with ``P`` distinct cue'd
products seen per session and ``A`` memory architectures:

* encoding: ``J * steps`` agent calls (one per step);
* exhaustive probes: one per (session ``j``, reach ``r <= j``, product of session ``j - r``), so
  ``P * J * (J - 1) / 2`` per chain and architecture -- O(J^2) -- each up to ``max_steps`` recall
  calls. Shorter ``probes.J`` of the same run are prefixes of the longest, run once;
* Monte Carlo probes (``probes.mc = M``): at most ``M`` per reach ``r = 1..J-1``, i.e.
  ``sum_r min(M, P * (J - r))`` -- O(J * M);
* MemShot: one answer and one judge call per question, variant and ``k``.

GPU-seconds are calls times seconds per call over the concurrent streams one GPU serves; wall
time on ``N`` GPUs is the larger of GPU-seconds / ``N`` and the longest sequential path (a chain's
sessions run one after another: ``J * steps`` calls).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Rates:
    """Per-call figures the counts are multiplied by (defaults: the paper's protocol, stated)."""

    steps_per_session: float = 25.0      # DMV-Bench sessions run 22-28 agent steps
    products_per_session: float = 5.0    # distinct cue'd products an agent opens per session
    recall_steps: float | None = None    # mean recall steps per probe; None: probes.max_steps (upper bound)
    prompt_tokens: float = 2500.0        # one product image (~1,300 tokens at 512 px) + the page text and history
    completion_tokens: float = 120.0     # a ReAct thought + action (max_tokens is the cap, rarely reached)
    questions_per_conversation: float = 150.0  # scored LoCoMo questions per conversation
    answer_prompt_tokens: float = 6000.0  # k memory shots (images) + the question
    latency_s: float = 2.0               # seconds per VLM call (measured: mean model seconds of a run)
    streams_per_gpu: float = 8.0         # concurrent requests one GPU replica serves at that latency

    def as_dict(self) -> dict[str, float | None]:
        return asdict(self)


def exhaustive_per_chain(J: int, P: float) -> float:
    """Exhaustive probes of one chain (one architecture): ``P * J * (J - 1) / 2``."""
    return P * J * (J - 1) / 2


def mc_per_chain(J: int, P: float, M: int) -> float:
    """Monte Carlo probes of one chain: ``sum_{r=1}^{J-1} min(M, P * (J - r))``."""
    return sum(min(M, P * (J - r)) for r in range(1, J))


def estimate(cfg: Any, rates: Rates = Rates(), *, gpus: int = 1) -> dict[str, Any]:
    """Calls, tokens, GPU-hours and wall hours of ``cfg``'s enabled stages on ``gpus`` GPUs."""
    stages = set(cfg.stages)
    rows: list[dict[str, Any]] = []
    B, C, J = len(cfg.encode.backends), cfg.encode.chains, cfg.encode.J
    steps = rates.steps_per_session
    critical = 0.0
    if "encode" in stages and cfg.encode.enabled:
        calls = B * C * J * steps
        rows.append(_row("encode", calls, rates.prompt_tokens, rates.completion_tokens))
        critical = max(critical, J * steps)
    if "probes" in stages and cfg.probes.enabled:
        A = len(cfg.memory.architectures)
        Jp = max(cfg.probes.J or (J,))
        per_chain = (mc_per_chain(Jp, rates.products_per_session, cfg.probes.mc) if cfg.probes.mc
                     else exhaustive_per_chain(Jp, rates.products_per_session))
        probes = B * C * A * per_chain
        recall = rates.recall_steps if rates.recall_steps is not None else cfg.probes.max_steps
        rows.append(_row("probes", probes * recall, rates.prompt_tokens, rates.completion_tokens, probes=probes))
        critical = max(critical, recall)
    if "memshot" in stages and cfg.memshot.enabled:
        conv = cfg.memshot.conversations or 10  # LoCoMo has 10 conversations
        answers = conv * rates.questions_per_conversation * len(cfg.memshot.variants) * len(cfg.memshot.k)
        rows.append(_row("memshot answers", answers, rates.answer_prompt_tokens, rates.completion_tokens))
        rows.append(_row("memshot judge", answers, 400.0, 10.0))
    total_calls = sum(r["calls"] for r in rows)
    gpu_s = total_calls * rates.latency_s / rates.streams_per_gpu
    for r in rows:
        r["gpu_hours"] = r["calls"] * rates.latency_s / rates.streams_per_gpu / 3600
    wall_s = max(gpu_s / max(gpus, 1), critical * rates.latency_s)
    return {"config": cfg.name, "run_id": cfg.run_id, "gpus": gpus, "rates": rates.as_dict(), "stages": rows,
            "calls": total_calls, "tokens": sum(r["tokens"] for r in rows), "gpu_hours": gpu_s / 3600,
            "wall_hours": wall_s / 3600, "growth": growth(cfg, rates)}


def _row(stage: str, calls: float, prompt: float, completion: float, **extra: float) -> dict[str, Any]:
    return {"stage": stage, "calls": calls, "tokens": calls * (prompt + completion), **extra}


def growth(cfg: Any, rates: Rates, Js: tuple[int, ...] = (5, 10, 15, 50)) -> list[dict[str, float]]:
    """Probes per chain and architecture against J: exhaustive O(J^2), Monte Carlo O(J*M)."""
    M = cfg.probes.mc or 10  # the pilot's M when the config has none
    P = rates.products_per_session
    return [{"J": j, "encode_calls": j * rates.steps_per_session, "exhaustive": exhaustive_per_chain(j, P),
             "mc": mc_per_chain(j, P, M), "M": M} for j in Js]


def render(plan: dict[str, Any]) -> str:
    """The plan as plain text (one table per part, assumptions last)."""
    out = [f"plan for {plan['config']} ({plan['run_id']}) on {plan['gpus']} GPU(s)", "",
           f"{'stage':<18}{'VLM calls':>14}{'tokens':>16}{'GPU-hours':>12}"]
    for r in plan["stages"]:
        out.append(f"{r['stage']:<18}{r['calls']:>14,.0f}{r['tokens']:>16,.0f}{r['gpu_hours']:>12,.2f}")
    out += [f"{'total':<18}{plan['calls']:>14,.0f}{plan['tokens']:>16,.0f}{plan['gpu_hours']:>12,.2f}",
            f"wall time on {plan['gpus']} GPU(s): {plan['wall_hours']:,.2f} h", "",
            "probes per chain and architecture against J (exhaustive O(J^2), Monte Carlo O(J*M)):",
            f"{'J':>4}{'encode calls':>14}{'exhaustive':>12}{'MC (M=' + str(plan['growth'][0]['M']) + ')':>12}"]
    for g in plan["growth"]:
        out.append(f"{g['J']:>4}{g['encode_calls']:>14,.0f}{g['exhaustive']:>12,.0f}{g['mc']:>12,.0f}")
    out += ["", "assumptions (override with --rate NAME=VALUE): "
            + ", ".join(f"{k}={v}" for k, v in plan["rates"].items())]
    return "\n".join(out)
