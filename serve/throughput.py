"""What one replica of a served VLM can compute: the token cost model ``vismem plan`` sizes GPUs with.

A call of ``prompt`` tokens (text and image tokens), of which ``uncached`` are not in vLLM's prefix
cache, with ``images`` images and ``completion`` reply tokens costs a replica

* **prefill**: ``uncached x (2 N + 4 L d c)`` FLOP (``N`` active parameters, ``L`` layers, ``d``
  hidden size, ``c`` the context a new token attends to: the cached prefix and half the new
  tokens), compute bound: at ``prefill_mfu`` of the device's peak dense FLOP/s for the dtype;
* **vision**: ``2 N_v`` FLOP per patch (a Qwen-VL image token merges 2 x 2 patches) at ``vision_mfu``;
* **decode**: one step serves the ``B`` sequences of the batch, streaming the weights once and each
  sequence's KV cache (``kv_bytes_per_token x`` its context): ``max(bytes / (bandwidth x
  decode_mbu), B (2 N + 4 L d c) / (peak x decode_mfu))`` seconds, so a call's share of the replica
  is ``completion x step / B`` and its own wait ``completion x step``.

Prefill and decode seconds add up (vLLM interleaves them on one GPU; no overlap is assumed, which
errs long). Device facts are data (``serve/devices.yaml``, datasheet sources in comments,
with the utilisation defaults); model facts are the model YAML's ``serving:`` block
(``active_params_b``, ``layers``, ``hidden_size``, ``vision_params_b``, ``kv_bytes_per_token``,
``weights_gb``, ``dtype``). A :class:`Calibration` (``vismem plan --calibration``) replaces the
utilisation defaults with an engine's measured prefill tokens/s and decode tokens/s at a batch,
seconds per image, and adds its seconds per request (an engine's fixed cost of a request, whatever
its tokens: on a small model it outweighs the tokens); a figure above the device's peak is cut to
it (one warning), so no plan computes faster than physics (extra seconds only lower FLOP/s).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from vismem.core.errors import ConfigError
from vismem.serve.models import ModelSpec, expand_env

DEVICES_FILE = Path(__file__).parent / "devices.yaml"
_DTYPES = {"bfloat16": "bf16", "bf16": "bf16", "float16": "fp16", "half": "fp16", "fp16": "fp16",
           "float32": "fp32", "float": "fp32", "fp32": "fp32", "fp8": "fp8", "auto": "bf16"}


@dataclass(frozen=True)
class Device:
    """One accelerator's peaks: dense FLOP/s by dtype, memory bandwidth (bytes/s), memory (GB)."""

    name: str
    flops: dict[str, float]
    bandwidth: float
    memory_gb: float

    def peak(self, dtype: str) -> float:
        """Peak dense FLOP/s at ``dtype`` (a dtype the device lacks, e.g. fp8 on an A100: ConfigError)."""
        if dtype not in self.flops:
            raise ConfigError(f"device {self.name}: no {dtype} peak (known: {', '.join(self.flops)})")
        return float(self.flops[dtype])


@lru_cache(maxsize=1)
def _device_data() -> dict[str, Any]:
    return yaml.safe_load(DEVICES_FILE.read_text())


def devices() -> dict[str, Device]:
    """Every device of ``devices.yaml`` by name."""
    return {n: Device(n, {k: float(v) for k, v in d["flops"].items()}, float(d["bandwidth"]), float(d["memory_gb"]))
            for n, d in _device_data()["devices"].items()}


def utilisation() -> dict[str, float]:
    """The default fractions of peak an engine sustains (``prefill_mfu``, ``vision_mfu``, ``decode_mbu``, ``decode_mfu``)."""
    return {k: float(v) for k, v in _device_data()["utilisation"].items()}


def device_named(name: str) -> Device:
    """The device called ``name`` (case-insensitive); a one-line ConfigError naming the known ones."""
    known = devices()
    for n, d in known.items():
        if n.lower() == str(name).lower():
            return d
    raise ConfigError(f"unknown device {name!r}; known: {', '.join(known)} (serve/devices.yaml)")


def device_of(ms: ModelSpec) -> Device:
    """The device a model's deployment runs on: ``cpu`` for ``deploy.device: cpu``, else its ``accelerator_type``."""
    deploy = ms.deploy or {}
    if deploy.get("device") == "cpu":
        return device_named("cpu")
    return device_named(str(expand_env(deploy.get("accelerator_type") or "H100")))


@dataclass(frozen=True)
class ModelFacts:
    """A served model's size (see the module doc); ``tp`` GPUs hold one replica."""

    variant: str
    active_params: float
    layers: int
    hidden_size: int
    vision_params: float
    kv_bytes_per_token: float
    weights_bytes: float
    dtype: str
    tp: int = 1


def model_facts(ms: ModelSpec) -> ModelFacts | None:
    """The :class:`ModelFacts` of ``ms``'s ``serving:`` block; None where it has none or lacks ``active_params_b``."""
    sv = ms.serving or {}
    if "active_params_b" not in sv:
        return None
    ek = (ms.deploy or {}).get("engine_kwargs") or {}
    try:
        dtype = _DTYPES[str(sv.get("dtype") or ek.get("dtype") or "bf16").lower()]
        return ModelFacts(ms.variant, float(sv["active_params_b"]) * 1e9, int(sv["layers"]), int(sv["hidden_size"]),
                          float(sv.get("vision_params_b") or 0.0) * 1e9, float(sv["kv_bytes_per_token"]),
                          float(sv["weights_gb"]) * 1e9, dtype, int(ek.get("tensor_parallel_size") or 1))
    except (KeyError, TypeError, ValueError) as e:
        raise ConfigError(f"model {ms.variant!r}: serving needs numeric active_params_b, layers, hidden_size, "
                          f"kv_bytes_per_token, weights_gb and a known dtype ({e!r})") from None


class Calibration(BaseModel):
    """One model's measured engine throughput (a `vismem bench serve-throughput` run)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = Field(..., description="the model YAML variant measured (e.g. qwen2.5-vl-7b)")
    device: str = Field("", description="what it ran on (free text: the GPU, or cpu)")
    gpus: int = Field(1, ge=1, description="GPUs of the measured replica (tensor_parallel_size)")
    prefill_tokens_per_s: float = Field(..., gt=0, description="prompt tokens/s of a batch of uncached long prompts")
    decode_tokens_per_s: float = Field(..., gt=0, description="reply tokens/s of decode_batch sequences decoding at once")
    decode_batch: int = Field(..., ge=1, description="sequences in the decode measurement's batch")
    prefill_context: float = Field(0.0, ge=0, description="mean context (tokens) a prompt token attended to in the "
                                   "prefill measurement (half its prompts' length; 0: weights' FLOP only)")
    decode_context: float = Field(128.0, ge=1, description="mean context (tokens) of those sequences while decoding")
    seconds_per_image: float | None = Field(None, ge=0, description="vision encoder seconds per image beyond its "
                                            "tokens' prefill (None: from the vision FLOP at the prefill rate)")
    seconds_per_request: float = Field(0.0, ge=0, description="engine seconds per request beyond its tokens and "
                                       "images (chat template, tokenising, scheduling, detokenising)")
    seconds_per_image_request: float = Field(0.0, ge=0, description="engine seconds per request that carries "
                                             "images, beyond seconds_per_request and seconds_per_image each")
    source: str = Field("", description="where the figures come from (benchmark, date, endpoint)")


def load_calibration(path: str | Path) -> dict[str, Calibration]:
    """Calibrations by model from a YAML/JSON file: ``{calibrations: [...]}`` or a `vismem bench`
    records list (the ``serve-throughput`` records carry a ``calibration`` entry)."""
    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text()) if p.suffix in (".yaml", ".yml") else json.loads(p.read_text())
    except (OSError, ValueError, yaml.YAMLError) as e:
        raise ConfigError(f"calibration {p}: cannot be read ({e})") from None
    if isinstance(data, list):
        items = [r["calibration"] for r in data if isinstance(r, dict) and isinstance(r.get("calibration"), dict)]
    else:
        items = (data or {}).get("calibrations") if isinstance(data, dict) else None
    if not items:
        raise ConfigError(f"calibration {p}: no calibrations (a {{calibrations: [...]}} file or the records of "
                          f"`vismem bench serve-throughput`)")
    try:
        cals = [Calibration(**c) for c in items]
    except (TypeError, ValidationError) as e:
        raise ConfigError(f"calibration {p}: {str(e).splitlines()[0]} ({len(items)} entries)") from None
    return {c.model: c for c in cals}


@dataclass(frozen=True)
class Call:
    """One call's tokens: prompt (text + image tokens), the uncached part, images, patches per image, reply."""

    prompt: float
    uncached: float
    images: float
    patches_per_image: float
    completion: float


@dataclass
class Engine:
    """One replica of a model on ``facts.tp`` devices, at default utilisation or a calibration."""

    facts: ModelFacts
    device: Device
    calibration: Calibration | None = None
    util: dict[str, float] = field(default_factory=utilisation)
    warnings: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        f, tp = self.facts, self.facts.tp
        self.peak_flops = self.device.peak(f.dtype) * tp
        self.peak_bw = self.device.bandwidth * tp
        self.prefill_flops_s = self.peak_flops * self.util["prefill_mfu"]
        self.vision_flops_s = self.peak_flops * self.util["vision_mfu"]
        self.decode_scale = 1.0
        cal = self.calibration
        if cal is not None:
            self._calibrate(cal)

    def _calibrate(self, cal: Calibration) -> None:
        f = self.facts
        per_replica = self.facts.tp / cal.gpus  # the measured replica's figures, on this replica's GPUs
        # The measured tokens/s as FLOP/s at the measurement's own attention context: a call's prefill
        # FLOP add attention at its context, which on a tiny model (hidden 64) is as much as its
        # weights' 2 N; counted at 2 N only, a calibration planned a 544-token prompt 70 % long.
        measured = cal.prefill_tokens_per_s * per_replica * self._flops_per_token(cal.prefill_context)
        if measured > self.peak_flops:
            self.warnings.append(f"{f.variant}: calibrated prefill {cal.prefill_tokens_per_s:,.0f} tokens/s implies "
                                 f"{measured / self.peak_flops:.1f} x the {self.device.name}'s peak; cut to the peak")
        self.prefill_flops_s = min(measured, self.peak_flops)
        self.vision_flops_s = self.prefill_flops_s * self.util["vision_mfu"] / self.util["prefill_mfu"]
        step = cal.decode_batch / (cal.decode_tokens_per_s * per_replica)
        floor = self._step_physics(cal.decode_batch, cal.decode_context)
        if step < floor:
            self.warnings.append(f"{f.variant}: calibrated decode {cal.decode_tokens_per_s:,.0f} tokens/s at batch "
                                 f"{cal.decode_batch} is faster than the {self.device.name}'s peaks allow; cut to them")
        # The measured step at its batch, scaled to another batch by the model's own shape.
        self.decode_scale = max(step, floor) / self._step_model(cal.decode_batch, cal.decode_context)

    def _flops_per_token(self, context: float) -> float:
        f = self.facts
        return 2 * f.active_params + 4 * f.layers * f.hidden_size * context

    def step_bytes(self, batch: float, context: float) -> float:
        """Bytes one decode step streams: the weights once, each sequence's KV cache."""
        return self.facts.weights_bytes + batch * context * self.facts.kv_bytes_per_token

    def _step_physics(self, batch: float, context: float) -> float:
        return max(self.step_bytes(batch, context) / self.peak_bw,
                   batch * self._flops_per_token(context) / self.peak_flops)

    def _step_model(self, batch: float, context: float) -> float:
        return max(self.step_bytes(batch, context) / (self.peak_bw * self.util["decode_mbu"]),
                   batch * self._flops_per_token(context) / (self.peak_flops * self.util["decode_mfu"]))

    def step_s(self, batch: float, context: float) -> float:
        """Seconds of one decode step of ``batch`` sequences at ``context`` tokens each."""
        return self._step_model(batch, context) * self.decode_scale

    def prefill_flops(self, call: Call) -> float:
        """FLOP of the call's uncached prompt tokens (attending to the cached prefix and each other)."""
        return call.uncached * self._flops_per_token(call.prompt - call.uncached / 2)

    def vision_flops(self, call: Call) -> float:
        return call.images * call.patches_per_image * 2 * self.facts.vision_params

    def cost(self, call: Call, batch: float) -> dict[str, float]:
        """Replica-seconds of a call at a decode batch of ``batch``: ``request_s`` (the calibration's
        per-request cost), ``prefill_s``, ``vision_s``, ``decode_s`` (its share of the steps),
        ``gpu_s`` (their sum), ``latency_s`` (unloaded: its prefill, then ``completion`` steps), and
        the FLOP and bytes it makes the replica move."""
        batch = max(1.0, float(batch))
        ctx = call.prompt + call.completion / 2
        prefill = self.prefill_flops(call) / self.prefill_flops_s
        cal, per_replica = self.calibration, 1.0
        if cal is not None:
            per_replica = cal.gpus / self.facts.tp  # the measured replica's seconds, on this replica's GPUs
        if cal is not None and cal.seconds_per_image is not None:
            vision = call.images * cal.seconds_per_image * per_replica
        else:
            vision = self.vision_flops(call) / self.vision_flops_s
        # A request's own engine work (template, tokenising, scheduling, detokenising) costs the same
        # whatever its tokens; only a calibration measures it (0 at the defaults). Added in series,
        # as the engine's front end and its model steps share the replica's time in the measurement.
        # A request with images pays the multimodal processor once more (measured apart from the
        # images: a one-image request's cost per image was 3x an image's in a two-image request).
        request = 0.0
        if cal is not None:
            request = (cal.seconds_per_request + min(1.0, call.images) * cal.seconds_per_image_request) * per_replica
        step = self.step_s(batch, ctx)
        decode = call.completion * step / batch
        bytes_ = call.completion * self.step_bytes(batch, ctx) / batch
        flops = self.prefill_flops(call) + self.vision_flops(call) + call.completion * self._flops_per_token(ctx)
        bound = "compute" if prefill + vision >= decode else (
            "bandwidth" if self.step_bytes(batch, ctx) / self.peak_bw
            >= batch * self._flops_per_token(ctx) / self.peak_flops else "compute")
        return {"request_s": request, "prefill_s": prefill, "vision_s": vision, "decode_s": decode,
                "gpu_s": request + prefill + vision + decode,
                "latency_s": request + prefill + vision + call.completion * step, "flops": flops, "bytes": bytes_,
                "bound": bound}


def engine_for(ms: ModelSpec, device: Device | None = None, calibration: Calibration | None = None) -> Engine | None:
    """The :class:`Engine` of a GPU-served model (None without model facts)."""
    facts = model_facts(ms)
    if facts is None:
        return None
    return Engine(facts, device or device_of(ms), calibration)


def patches_per_image(image_tokens: float) -> float:
    """Vision-encoder patches behind ``image_tokens`` tokens of a Qwen-VL image (2 x 2 merge, 2 delimiters)."""
    return 4.0 * max(1.0, math.floor(image_tokens) - 2)
