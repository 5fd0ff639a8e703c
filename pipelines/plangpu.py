"""The GPU side of ``vismem plan``: a GPU-served endpoint's latency from its tokens and the load.

For each GPU endpoint (:mod:`vismem.pipelines.planfleet`) the call's tokens go through the
replica's token cost model (:class:`vismem.serve.throughput.Engine`: prefill FLOP, vision FLOP,
decode steps bounded by memory bandwidth, at the device's peaks x utilisation, or a measured
calibration). With ``N`` calls in flight on ``R`` replicas held (Serve holds
``ceil(N / target_ongoing_requests)``), each replica decodes a batch of ``N / R`` (at most what its
KV cache holds), and Little's law gives the latency a call sees::

    latency = max(unloaded latency, N x replica-seconds per call / R)

the first when the in-flight limit (offered, client, KV) binds, the second -- bound ``compute`` or
``bandwidth`` -- when the replicas are saturated. The stage's wall is then ``calls x latency / N``
as for any endpoint, so the plan cannot imply more FLOP/s or bytes/s per GPU than the device's peak.

**Prefix cache.** What vLLM's prefix cache holds of a call is stated per kind of work (``cache``):

* ``shared`` -- only the prefix every call of the kind shares, cached after the first call. For
  a MemShot answer that is ``answer_prefix_tokens`` (0: one user turn, no system prompt, its k
  shots first, and they differ from question to question). For an agent step (encode's
  sessions, a probe's recall steps) it is ``shared_prefix_tokens``, the system prompt in the chat
  template (820: its tokens counted by :mod:`vismem.pipelines.planprompts`), because the step
  message opens with ``Step k/N`` and the subtask before the history
  (:func:`vismem.pipelines.planprompts.step_layout`) and its images come before its text: a
  step's prompt departs from the step before's right after the system turn. Measured on vLLM
  (six consecutive encode step prompts, 2026-12-08): every step after the first had the system
  prompt's whole blocks cached and none of its history. A call pays ``prompt - shared``
  uncached; the share cached is ``shared / prompt``;
* ``step`` -- an agent step that repeats the step before but for ``step_new_tokens`` of text and
  its images (a layout that puts the history first; only when ``--rate step_new_tokens`` is
  given): over a unit of ``n`` calls in sequence ``(prompt - shared + (n - 1) x new) / n`` a call.
  The cache is assumed to keep a session's prefix until its next step (vLLM evicts least
  recently used blocks first).

A recall step's memory images follow its page image in the user turn, so they are not a cached
prefix either; their vision encoder is counted every step (vLLM may serve an image repeated from
one step to the next from its multimodal caches: not counted, which errs long).

vLLM caches whole blocks (16 tokens on a GPU by default, 128 on the CPU build), so up to a
block of the shared prefix is recomputed each call: not counted (under 2 % of the prefix here).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from vismem.pipelines.planfleet import Endpoint
from vismem.serve.throughput import Calibration, Call, Engine, device_named, engine_for, patches_per_image


@dataclass
class Sizing:
    """What GPU endpoints are sized with: a device for all (None: each deployment's own) and calibrations by model."""

    device: str | None = None
    calibrations: dict[str, Calibration] = field(default_factory=dict)
    _engines: dict[str, Engine | None] = field(default_factory=dict)

    def engine(self, ep: Endpoint) -> Engine | None:
        """The endpoint's replica model (cached; None: the YAML has no model facts, ``latency_s`` is used)."""
        if ep.name not in self._engines:
            device = device_named(self.device) if self.device else None
            self._engines[ep.name] = engine_for(ep.spec, device, self.calibrations.get(ep.name))
        return self._engines[ep.name]

    def sized(self, ep: Endpoint) -> Endpoint:
        """``ep`` on the chosen device: its KV cache sized from that device's memory (``--device``)."""
        if not self.device or ep.kind != "gpu" or not ep.spec.serving:
            return ep
        serving = {**ep.spec.serving, "gpu_memory_gb": device_named(self.device).memory_gb}
        return replace(ep, spec=ep.spec.model_copy(update={"serving": serving}))

    def warnings(self) -> list[str]:
        """The engines' calibration warnings (a figure above the device's peak, cut to it)."""
        return [w for e in self._engines.values() if e is not None for w in e.warnings]


def uncached_tokens(prompt: float, unit_calls: float, new_per_step: float, shared: float,
                    cache: str = "step") -> float:
    """Mean prompt tokens a call prefills (see the module doc's prefix cache): ``cache`` ``shared``
    (only the shared prefix is cached) or ``step`` (a step repeats the one before but ``new_per_step``)."""
    shared = min(prompt, shared)
    if unit_calls <= 1 or cache == "shared":
        return prompt - shared
    new = min(prompt - shared, new_per_step)
    return ((prompt - shared) + (unit_calls - 1) * new) / unit_calls


def gpu_latency(eng: Engine, *, prompt: float, per_image: float, images: float, completion: float,
                unit_calls: float, in_flight: float, fleet: dict[str, Any], rates: Any,
                cache: str = "shared", shared: float | None = None) -> dict[str, Any]:
    """A GPU endpoint's call at ``in_flight`` calls: latency (Little's law), replicas held, the
    replica-seconds of a call by phase, its bound (None: the in-flight limit, not the GPUs) and
    the FLOP and bytes it costs; ``cache``: what the prefix cache holds (the module doc), ``shared``
    the shared prefix's tokens (None: ``rates.shared_prefix_tokens``)."""
    new = (rates.step_new_tokens or 0.0) + images * per_image
    shared = rates.shared_prefix_tokens if shared is None else shared
    uncached = uncached_tokens(prompt, unit_calls, new, shared, cache)
    call = Call(prompt, uncached, images, patches_per_image(per_image), completion)
    held = max(1, min(fleet["replicas"], math.ceil(in_flight / fleet["target"])))
    batch = max(1.0, min(fleet["streams_per_replica"], in_flight / held))
    c = eng.cost(call, batch)
    loaded = in_flight * c["gpu_s"] / held
    return {"latency_s": max(c["latency_s"], loaded), "unloaded_latency_s": c["latency_s"], "held": held,
            "bound": c["bound"] if loaded > c["latency_s"] else None, "decode_batch": batch,
            "cached_share": 1 - uncached / prompt if prompt else 0.0, "uncached_tokens": uncached, "cache": cache,
            "gpu_s_per_call": c["gpu_s"] * eng.facts.tp, "request_s": c["request_s"], "prefill_s": c["prefill_s"],
            "vision_s": c["vision_s"], "decode_s": c["decode_s"], "flops_per_call": c["flops"],
            "bytes_per_call": c["bytes"],
            "device": eng.device.name, "peak_flops": eng.device.peak(eng.facts.dtype),
            "peak_bandwidth": eng.device.bandwidth, "dtype": eng.facts.dtype,
            "calibrated": eng.calibration.source or "yes" if eng.calibration else None}


#: What the printed plan says the prefix cache holds, by ``cache``.
CACHED = {"shared": "the shared prefix", "step": "the shared prefix and the step before"}


def describe(e: dict[str, Any], util: dict[str, float]) -> str:
    """One line on a GPU endpoint's throughput model for the printed plan."""
    if "gpu_s_per_call" not in e:
        return f"{e['endpoint']}: no model facts (serving: active_params_b ...): latency_s as given"
    basis = (f"calibrated ({e['calibrated']})" if e.get("calibrated") else
             f"assumed {util['prefill_mfu']:.0%} MFU prefill, {util['vision_mfu']:.0%} vision, "
             f"{util['decode_mbu']:.0%} of bandwidth decoding")
    request = f"request {e['request_s'] * 1000:,.1f}, " if e.get("request_s") else ""
    cached = (f"{e['cached_share']:.0%} prefix-cached: {CACHED[e.get('cache', 'shared')]}" if e["cached_share"] > 0
              else "no shared prefix cached")
    return (f"{e['endpoint']} on {e['device']} ({e['peak_flops'] / 1e12:,.0f} {e['dtype']} TFLOP/s, "
            f"{e['peak_bandwidth'] / 1e12:.2f} TB/s): a call {e['prompt_tokens'] / max(1, e['calls']):,.0f} prompt "
            f"tokens ({cached}), {e['gpu_s_per_call'] * 1000:,.1f} GPU-ms "
            f"({request}prefill {e['prefill_s'] * 1000:,.1f}, vision {e['vision_s'] * 1000:,.1f}, "
            f"decode {e['decode_s'] * 1000:,.1f} at "
            f"batch {e['decode_batch']:,.0f}), latency {e['latency_s']:,.1f} s; uses {e['flops_util']:.0%} of peak "
            f"FLOP/s, {e['bytes_util']:.0%} of bandwidth; {basis}")
