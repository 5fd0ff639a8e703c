"""``vismem plan``: what a run costs before it runs -- calls, tokens, GPU-hours, API cost, wall time.

Pure arithmetic over a run config, its model YAMLs and a few per-call figures (:class:`Rates`),
each either given or measured (mean model seconds per call from a finished run's encoding).

**Counts**, for each DMV-Bench chain of ``J`` sessions browsed by one back-end with ``P`` distinct
cue'd products seen per session and ``A`` memory architectures:

* encoding: ``J * steps`` agent calls per chain (one per step);
* exhaustive probes: one per (session ``j``, reach ``r <= j``, product of session ``j - r``), so
  ``P * J * (J - 1) / 2`` per chain and architecture -- O(J^2) -- each up to ``max_steps`` recall
  calls. Shorter ``probes.J`` of the same run are prefixes of the longest, run once;
* Monte Carlo probes (``probes.mc = M``): ``sum_r min(M, P * (J - r))`` -- O(J * M);
* MemShot: one answer and one judge call per question, variant and ``k``.

**Tokens** per call: ``text_tokens`` (an encode step; ``recall_text_tokens`` a recall step, the
defaults counted from the project's own prompts by :mod:`vismem.pipelines.planprompts`) plus the
call's images -- the page's (``images_per_call``) and, on a recall step, the memory block's (5 for
an architecture whose injector attaches images, averaged over the probed pairs:
:func:`vismem.pipelines.planprompts.memory_images`) -- at the model family's rate
(:func:`vismem.serve.budget.tokens_per_image` on ``image_px``-square images: Qwen2.5-VL ~326 at
512 px, Qwen3-VL and Gemini 258; ``image_tokens`` for back-ends with no family, e.g. stand-ins).

**Endpoints.** Each back-end is one of: *gpu* (a model YAML with a ``deploy:`` block: vLLM
replicas on the cluster's GPUs), *hosted* (an ``openai`` spec without one: a paid API, or any
OpenAI-compatible endpoint; calls, tokens, requests per minute needed and, with a YAML
``price:``, cost) or *local* (an in-process stand-in: no GPU, no cost).

**Wall time.** Stages run one after another; within a stage, an endpoint's calls proceed
``in_flight`` at a time, where ``in_flight`` is the smallest of

* what the stage offers it: ``encode.in_flight`` / ``probes.in_flight`` (default: the clients'
  ``max_concurrency`` summed, or one per actor for stand-ins), shared between back-ends in
  proportion to their calls, and never more than their independent sessions / probe units;
  MemShot's ``request_concurrency`` (threads) or, for ``ray-data``, the processor's actors x its
  batch (:func:`ray_data_flight`: ``min(ray.concurrency, cores - 1) x max_concurrency``);
* for probes, the actors' groups: a chain's units go to one actor, which runs two chains at
  once, so ``actors x 2 x`` a chain's probes;
* a hosted endpoint's own limit when one is given (``--rate endpoint_slots``: a rate limit, or
  the simulated fleet of ``vismem bench fleet``);
* the client's own cap (``max_concurrency``, per actor);
* a GPU endpoint's fleet (bound ``kv``): ``replicas x streams per replica``, replicas ``min(max_replicas,
  GPUs / tensor_parallel_size)``, streams from KV capacity (:func:`vismem.serve.budget.kv_streams`,
  or ``--rate streams_per_gpu``; its ``target_ongoing_requests`` when the YAML has no ``serving:``);
* a hosted endpoint's ``--rate endpoint_slots`` (bound ``rate-limit``).

**Latency.** A hosted or local endpoint's call takes ``latency_s``. A GPU endpoint's follows from
its tokens and the load (:mod:`vismem.pipelines.plangpu`: prefill, vision and decode on the
device's peaks x utilisation or a ``--calibration``, Little's law over the replicas held), and a
row whose replicas are saturated is bound ``compute`` or ``bandwidth``.

An endpoint's wall is ``max(calls * (latency_s + cpu) / in_flight, critical path, client CPU)``:
each call also costs the client ``cpu`` seconds of its own work (``encode_cpu_s``,
``probe_cpu_s``, ``answer_cpu_s``: page env, retrieval, request building; measured by ``vismem
bench fleet``), which no endpoint takes off it, so a stage cannot finish before ``calls x cpu /
cores``, ``cores`` = ``min(actors, client_cores or ray.num_cpus)`` (an actor is one Python
process: one core at most), and a stage it bounds says so (``bound: client-cpu`` and a warning).
Calls bound by the endpoint's own slots cost it the latency each. Sessions are
independent, so encoding's critical path is one session (``steps`` calls); a probe unit's probes
run at once, so the probes' is one probe (``recall`` calls); an answer's one call. GPU-hours count the GPUs Serve holds: ``ceil(in_flight /
target_ongoing_requests)`` replicas (at most the fleet) for the endpoint's wall.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from vismem.pipelines.plangpu import Sizing, gpu_latency
from vismem.pipelines.planprompts import layout_warnings, memory_images, step_cache
from vismem.pipelines.planfleet import Endpoint, endpoint_of, image_tokens


@dataclass(frozen=True)
class Rates:
    """Per-call figures the counts are multiplied by (defaults: the paper's protocol, stated)."""

    steps_per_session: float = 25.0      # DMV-Bench sessions run 22-28 agent steps
    products_per_session: float = 5.0    # distinct cue'd products an agent opens per session
    recall_steps: float | None = None    # mean recall steps per probe; None: probes.max_steps (upper bound)
    # Text tokens of a call, the shared prefix included (images apart): pipelines/planprompts.py
    # rebuilds the paper's (official) prompts with the project's builders and counts them (no
    # Qwen tokenizer offline: max(characters / 4, Qwen2 pre-tokenizer pieces));
    # tests/pipelines/test_planprompts.py fails when these drift from it by more than 10 %.
    text_tokens: float = 1230.0          # an encode step: system prompt 816, step 13/25's message (history, page) ~410
    recall_text_tokens: float = 1480.0   # a recall step: system prompt 816, step 4/8's message (3 replies, 5 captioned memories) ~660
    # The page's product image an agent / recall call carries: product pages only (listings have
    # none), so 1 is an upper bound -- an agent opening products from a collection grid is on one
    # about every other step, one moving product to product nearly every step (not measured).
    images_per_call: float = 1.0
    # None: the page's image (images_per_call) and the memory block's images, by the config's
    # architectures (planprompts.memory_images: 5 for an image-injecting one, 3.1 on the paper's 17).
    recall_images_per_call: float | None = None
    image_px: float = 512.0              # side of those (square) images
    image_tokens: float = 326.0          # tokens per image for a back-end with no family rule (stand-ins)
    completion_tokens: float = 120.0     # a ReAct thought + action (max_tokens is the cap, rarely reached)
    questions_per_conversation: float = 150.0  # scored LoCoMo questions per conversation
    answer_text_tokens: float = 400.0    # the question and instructions beside the k memory shots
    # A MemShot answer shares no prefix with the one before: one user turn, no system prompt, its k
    # shots first (memory/dialogue/answering.py), and they differ from question to question.
    answer_prefix_tokens: float = 0.0
    latency_s: float = 2.0               # seconds per call of a hosted / local endpoint, or of a GPU model without model facts
    shared_prefix_tokens: float = 820.0  # the system prompt in the chat template (816, planprompts): every agent step's cached prefix
    # None: the step message's own layout (planprompts.step_layout: `Step k/N` and the subtask open
    # it, before the history), so a step repeats nothing of the step before but the shared prefix.
    # A figure: a layout that puts the history first, where a step repeats the one before but for this.
    step_new_tokens: float | None = None
    streams_per_gpu: float | None = None  # None: from KV capacity (model YAML serving:), else this
    endpoint_slots: float | None = None  # requests a hosted endpoint serves at once (rate limit, simulator); None: no limit
    # Client CPU seconds per call (page env, memory retrieval, prompt and request building, reply
    # parsing; the shop actor's own storefront included): the client's side of each call, which
    # no endpoint can take off it. Measured on 2 cores (2026-12-02) in the actor process against
    # the simulator in another: encode 3.7 ms at 32 sessions at once, probes at most 7.4 ms at 17
    # units (start-up included), answers at most 3.3 ms (the bench, simulator included); `vismem
    # bench fleet` measures every process of
    # the bench (the simulator's own CPU too) and gives the plan that instead.
    encode_cpu_s: float = 0.004          # an encode step (HTTP env)
    probe_cpu_s: float = 0.008           # a recall step (HTTP env, 17 architectures' retrieval)
    answer_cpu_s: float = 0.002          # a MemShot answer request (k shots)
    client_cores: float | None = None    # cores the stage's actors share; None: ray.num_cpus, else one per actor

    def cpu_s(self, stage: str) -> float:
        """Client CPU seconds per call of ``stage`` (0 for a stage without a measured figure)."""
        return {"encode": self.encode_cpu_s, "probes": self.probe_cpu_s,
                "memshot answers": self.answer_cpu_s}.get(stage, 0.0)

    def as_dict(self) -> dict[str, float | None]:
        return asdict(self)


def exhaustive_per_chain(J: int, P: float) -> float:
    """Exhaustive probes of one chain (one architecture): ``P * J * (J - 1) / 2``."""
    return P * J * (J - 1) / 2


def mc_per_chain(J: int, P: float, M: int) -> float:
    """Monte Carlo probes of one chain: ``sum_{r=1}^{J-1} min(M, P * (J - r))``."""
    return sum(min(M, P * (J - r)) for r in range(1, J))


@dataclass
class _Work:
    """One stage's calls on one endpoint."""

    endpoint: Endpoint
    calls: float
    units: float           # independent sessions / probes / questions
    unit_calls: float      # calls of one unit, in sequence (its critical path)
    images: float          # images per call
    text: float            # text tokens per call
    completion: float
    copies: int = 1        # clients making the calls (one per actor), each capped at max_concurrency
    per_actor: float | None = None  # units one actor can have at once (probes: two chains' probes)
    cache: str = "shared"  # what the prefix cache holds of a call (plangpu's module doc): shared | step
    shared: float | None = None  # the shared prefix's tokens (None: rates.shared_prefix_tokens, the system prompt)


def estimate(cfg: Any, rates: Rates = Rates(), *, gpus: int = 1, sizing: Sizing | None = None) -> dict[str, Any]:
    """Calls, tokens, GPU-hours, hosted cost and wall hours of ``cfg``'s enabled stages on ``gpus``
    GPUs; ``sizing``: the device and calibrations of GPU endpoints (default: each deployment's own device)."""
    sizing = sizing or Sizing()
    stages = set(cfg.stages)
    B, C, J = len(cfg.encode.backends), cfg.encode.chains, cfg.encode.J
    steps, img = rates.steps_per_session, rates.images_per_call
    plan_stages: list[tuple[str, list[_Work], float, dict[str, float]]] = []
    if "encode" in stages and cfg.encode.enabled:
        actors = cfg.encode.workers or cfg.ray.concurrency
        works = [_Work(endpoint_of(raw), C * J * steps, C * J, steps, img, rates.text_tokens, rates.completion_tokens,
                       actors, cache=step_cache(rates)) for raw in cfg.encode.backends]
        plan_stages.append(("encode", works, _offered(cfg.encode.in_flight, works, actors), {}))
    if "probes" in stages and cfg.probes.enabled:
        from vismem.pipelines.dmv.protocol import GROUPS_AT_ONCE, probed_pairs

        A = len(cfg.memory.architectures)
        CA = probed_pairs(cfg)  # C x A, less the ablation architectures' chains outside probes.ablation_chains
        Jp = max(cfg.probes.J or (J,))
        per_chain = (mc_per_chain(Jp, rates.products_per_session, cfg.probes.mc) if cfg.probes.mc
                     else exhaustive_per_chain(Jp, rates.products_per_session))
        probes = B * CA * per_chain
        recall = rates.recall_steps if rates.recall_steps is not None else cfg.probes.max_steps
        actors = cfg.probes.workers or cfg.ray.concurrency
        # One recalling VLM per browsing back-end (probes.backends, one for all, or the back-ends).
        rb = list(cfg.probes.backends if cfg.probes.backends is not None else cfg.encode.backends)
        rb = rb * B if len(rb) == 1 else rb
        by_ep: dict[str, list[Any]] = {}
        for raw in rb:
            ep = endpoint_of(raw)
            by_ep.setdefault(ep.name, [ep, 0])[1] += 1
        # A unit's probes run at once (they read one replayed bank), so every probe is independent
        # and one probe (``recall`` calls) is the critical path. A chain's units go to one actor
        # (pipelines.dmv.probes_job.unit_groups), which runs two chains at once (the next starts
        # while the last probes of the current finish): at most two chains' probes in flight.
        rimg = rates.recall_images_per_call
        rimg = img + memory_images(cfg) if rimg is None else rimg
        works = [_Work(ep, n * probes / B * recall, n * probes / B, recall, rimg, rates.recall_text_tokens,
                       rates.completion_tokens, actors, GROUPS_AT_ONCE * probes / CA * A, step_cache(rates))
                 for ep, n in by_ep.values()]
        plan_stages.append(("probes", works, _offered(cfg.probes.in_flight, works, actors), {"probes": probes}))
    if "memshot" in stages and cfg.memshot.enabled and cfg.memshot.vlm is not None:
        ms = cfg.memshot
        conv = ms.conversations or 10  # LoCoMo has 10 conversations
        per_k = conv * rates.questions_per_conversation * len(ms.variants)
        answers = per_k * len(ms.k)
        mean_k = sum(ms.k) / len(ms.k) if ms.k else 0.0
        ep = endpoint_of(ms.vlm)
        # threads: request_concurrency calls through one client; ray-data: the processor's actors
        # (see ray_data_flight), each one batch of its client's max_concurrency requests at a time.
        ray_data = ms.batch_inference == "ray-data"
        copies, offered = ray_data_flight(cfg, ep, rates) if ray_data else (1, ms.request_concurrency)
        plan_stages.append(("memshot answers", [_Work(ep, answers, answers, 1, mean_k, rates.answer_text_tokens,
                                                      rates.completion_tokens, copies,
                                                      shared=rates.answer_prefix_tokens)], offered, {}))
        if ms.judge is not None:
            jep = endpoint_of(ms.judge)
            jcopies, joffered = ray_data_flight(cfg, jep, rates) if ray_data else (1, ms.request_concurrency)
            judge = _Work(jep, answers, answers, 1, 0, 400.0, 10.0, jcopies, shared=rates.answer_prefix_tokens)
            plan_stages.append(("memshot judge", [judge], joffered, {}))
    cores = rates.client_cores or cfg.ray.num_cpus
    rows = [_stage_row(name, works, offered, rates, gpus, extra, cores, sizing)
            for name, works, offered, extra in plan_stages]
    wall_s = sum(r["wall_s"] for r in rows)
    eps = [e for r in rows for e in r["endpoints"]]
    hosted = [e for e in eps if e["kind"] == "hosted"]
    costs = [e["cost_usd"] for e in hosted if e.get("cost_usd") is not None]
    return {"config": cfg.name, "run_id": cfg.run_id, "gpus": gpus, "rates": rates.as_dict(), "stages": rows,
            "calls": sum(r["calls"] for r in rows), "tokens": sum(r["tokens"] for r in rows),
            "gpu_hours": sum(e["gpu_hours"] for e in eps), "gpu_calls": sum(e["calls"] for e in eps if e["kind"] == "gpu"),
            "hosted_calls": sum(e["calls"] for e in hosted), "hosted_tokens": sum(e["tokens"] for e in hosted),
            "hosted_cost_usd": sum(costs) if costs else None,
            "wall_s": wall_s, "wall_hours": wall_s / 3600,
            "warnings": [w for r in rows for w in r["warnings"]] + sizing.warnings() + layout_warnings(rates, rows),
            "utilisation": _util(),
            "growth": growth(cfg, rates), **adaptive_saving(cfg, rates, rows)}


def adaptive_saving(cfg: Any, rates: Rates, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """``{"adaptive": ...}`` for a ``probes.mode: adaptive`` config: the expected share of the
    exhaustive probe units it scores (simulated, :func:`vismem.analysis.adaptive_sim.expected_fraction`:
    one architecture at TSR 0.5, the widest interval, on the longest J) times the probes stage's
    own calls and GPU-hours -- whatever per-call cost model produced them."""
    probes = next((r for r in rows if r["stage"] == "probes"), None)
    if probes is None or cfg.probes.mode != "adaptive":
        return {}
    from vismem.analysis.adaptive import Rule
    from vismem.analysis.adaptive_sim import expected_fraction

    a = cfg.probes.adaptive
    J = max(cfg.probes.J or (cfg.encode.J,))
    frac = expected_fraction(chains=cfg.encode.chains, J=J, products=rates.products_per_session,
                             rule=Rule(width=a.width, alpha=a.alpha, batch=a.batch, min_units=a.min_units), seed=cfg.seed)
    return {"adaptive": {"fraction": frac, "J": J, "width": a.width, "exhaustive_calls": probes["calls"],
                         "calls": frac * probes["calls"], "exhaustive_gpu_hours": probes["gpu_hours"],
                         "gpu_hours": frac * probes["gpu_hours"], "saving": 1 / frac if frac else None}}


def ray_data_flight(cfg: Any, ep: Endpoint, rates: Rates) -> tuple[int, float]:
    """``(actors, requests in flight)`` of a ``ray.data.llm`` HTTP processor
    (``memshot.batch_inference: ray-data``, :mod:`vismem.pipelines.memshot.batch_llm`).

    Its config: ``concurrency = ray.concurrency`` actors (an autoscaling pool from one), batches
    of the client's ``max_concurrency`` rows (8 without one), every request of a batch started
    together. Measured against the fleet simulator, an actor keeps one batch in flight at a time
    (Ray 2.60), and each actor holds a CPU (the stage's default), one of which the request-
    building tasks before it need: on ``C`` client cores at most ``C - 1`` actors."""
    actors = max(1, int(cfg.ray.concurrency))
    cores = rates.client_cores or cfg.ray.num_cpus
    if cores:
        actors = max(1, min(actors, int(cores) - 1))
    return actors, float(actors * (ep.client_cap or 8))


def _offered(in_flight: int | None, works: list[_Work], actors: int) -> float:
    """Units the stage keeps in flight: its ``in_flight``, else the clients' caps summed (a
    stand-in without one counts one per actor), as :func:`vismem.pipelines.dmv.protocol.episodes_per_actor`."""
    actors = max(1, int(actors))
    if in_flight is None:
        caps = [w.endpoint.client_cap or 0 for w in works]
        in_flight = sum(c or actors for c in caps) if any(caps) else actors
    return float(-(-int(in_flight) // actors) * actors)


def _util() -> dict[str, float]:
    from vismem.serve.throughput import utilisation

    return utilisation()


def _stage_row(stage: str, works: list[_Work], offered: float, rates: Rates, gpus: int,
               extra: dict[str, float], cores: float | None = None, sizing: Sizing | None = None) -> dict[str, Any]:
    total = sum(w.calls for w in works) or 1.0
    n_gpu_eps = max(1, len({w.endpoint.name for w in works if w.endpoint.kind == "gpu"}))
    # The stage's client CPU: every call of every back-end on the same actors, each a Python
    # process (one core at most: its threads share one interpreter lock).
    cpu = rates.cpu_s(stage)
    actors = float(max(1, max((w.copies for w in works), default=1)))
    usable = min(actors, float(cores)) if cores else actors
    cpu_wall = sum(w.calls for w in works) * cpu / usable
    eps = [_endpoint_row(w, offered * w.calls / total, rates, max(1, gpus // n_gpu_eps), cpu, cpu_wall, sizing)
           for w in works]
    warnings = [f"{stage}: {w}" for e in eps for w in e.pop("warnings")]
    if eps and all(e["bound_by"] == "client-cpu" for e in eps):
        warnings.append(f"{stage}: the client's CPU bounds it: {sum(w.calls for w in works):,.0f} calls x "
                        f"{cpu * 1000:.1f} ms / {usable:g} cores = {cpu_wall:,.0f} s; give it more actors or cores")
    return {"stage": stage, "calls": sum(e["calls"] for e in eps), "tokens": sum(e["tokens"] for e in eps),
            "gpu_hours": sum(e["gpu_hours"] for e in eps), "wall_s": max((e["wall_s"] for e in eps), default=0.0),
            "in_flight": offered, "endpoints": eps, "client_cpu_s": sum(w.calls for w in works) * cpu,
            "client_cores": usable, "cpu_wall_s": cpu_wall, "warnings": warnings, **extra}


def _endpoint_row(w: _Work, offered: float, rates: Rates, gpus: int, cpu: float = 0.0,
                  cpu_wall: float = 0.0, sizing: Sizing | None = None) -> dict[str, Any]:
    sizing = sizing or Sizing()
    ep = sizing.sized(w.endpoint)
    per_image = image_tokens(ep, rates.image_px, rates.image_tokens)
    prompt = w.text + w.images * per_image
    tokens_per_call = prompt + w.completion
    warnings: list[str] = []
    limits = {"offered": offered, "units": w.units}
    if w.per_actor is not None:
        limits["groups"] = max(1, w.copies) * min(offered / max(1, w.copies), w.per_actor)
    if ep.client_cap:
        limits["client"] = float(ep.client_cap) * max(1, w.copies)
    fleet: dict[str, Any] = {}
    if ep.kind == "gpu":
        fleet = ep.fleet(tokens_per_call, gpus, rates.streams_per_gpu)
        limits["kv"] = fleet["capacity"]
    if ep.kind != "gpu" and rates.endpoint_slots is not None:
        limits["rate-limit"] = float(rates.endpoint_slots)
    in_flight = max(1.0, min(limits.values()))
    bound = min(limits, key=lambda k: limits[k])
    latency = rates.latency_s
    eng = sizing.engine(ep) if ep.kind == "gpu" else None
    gpu: dict[str, Any] = {}
    if eng is not None:
        gpu = gpu_latency(eng, prompt=prompt, per_image=per_image, images=w.images, completion=w.completion,
                          unit_calls=w.unit_calls, in_flight=in_flight, fleet=fleet, rates=rates, cache=w.cache,
                          shared=w.shared)
        latency, bound = gpu["latency_s"], gpu["bound"] or bound
    # An episode's step is the call and the client's own work on it; calls waiting for an
    # endpoint's slot (the endpoint or fleet bound) cost the endpoint only its service time.
    cycle = latency + cpu
    per_call = latency if bound in ("rate-limit", "kv", "compute", "bandwidth") else cycle
    wall = max(w.calls * per_call / in_flight, w.unit_calls * cycle) if w.calls else 0.0
    if w.calls and cpu_wall > wall:  # the client cannot issue the calls faster than its CPU allows
        wall, bound = cpu_wall, "client-cpu"
    row: dict[str, Any] = {"endpoint": ep.name, "kind": ep.kind, "calls": w.calls,
                           "prompt_tokens": w.calls * prompt, "completion_tokens": w.calls * w.completion,
                           "tokens": w.calls * tokens_per_call, "in_flight": in_flight, "bound_by": bound,
                           "wall_s": wall, "gpu_hours": 0.0, "calls_per_s": w.calls / wall if wall else 0.0}
    if ep.kind == "gpu":
        held = min(fleet["replicas"], math.ceil(in_flight / fleet["target"]))
        row.update(gpu_hours=held * fleet["tp"] * wall / 3600, replicas_held=held, latency_s=latency,
                   **{k: v for k, v in gpu.items() if k not in ("bound", "held", "latency_s")})
        if gpu and wall:  # what the plan makes each GPU held do, against the device's peaks
            gpu_s = held * fleet["tp"] * wall
            row.update(flops_util=w.calls * gpu["flops_per_call"] / gpu_s / gpu["peak_flops"],
                       bytes_util=w.calls * gpu["bytes_per_call"] / gpu_s / gpu["peak_bandwidth"])
        row.update(**{
            k: fleet[k] for k in ("replicas", "streams_per_replica", "streams_per_gpu", "target", "streams_from")})
        if fleet["fill"] > in_flight and w.units > in_flight:
            warnings.append(f"{ep.name}: {in_flight:.0f} calls in flight (bound by {bound}) keep {held} of its "
                            f"{fleet['replicas']} replicas busy (replicas x target_ongoing_requests {fleet['target']:g} "
                            f"= {fleet['fill']:.0f}); raise the stage's in_flight / the client's max_concurrency")
        if fleet["target"] > fleet["streams_per_replica"]:
            warnings.append(f"{ep.name}: target_ongoing_requests {fleet['target']:g} exceeds the "
                            f"{fleet['streams_per_replica']:.0f} requests a replica serves at once "
                            f"({fleet['streams_from']})")
    elif ep.kind == "hosted":
        row["requests_per_min"] = (w.calls / wall if bound == "client-cpu" else in_flight / latency) * 60
        if ep.price:
            row["cost_usd"] = (row["prompt_tokens"] * float(ep.price.get("input", 0))
                               + row["completion_tokens"] * float(ep.price.get("output", 0))) / 1e6
    row["warnings"] = warnings
    return row


def growth(cfg: Any, rates: Rates, Js: tuple[int, ...] = (5, 10, 15, 50)) -> list[dict[str, float]]:
    """Probes per chain and architecture against J: exhaustive O(J^2), Monte Carlo O(J*M)."""
    M = cfg.probes.mc or 10  # the pilot's M when the config has none
    P = rates.products_per_session
    return [{"J": j, "encode_calls": j * rates.steps_per_session, "exhaustive": exhaustive_per_chain(j, P),
             "mc": mc_per_chain(j, P, M), "M": M} for j in Js]
