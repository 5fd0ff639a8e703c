"""A local ``transformers`` VLM (Qwen2.5-VL / Qwen3-VL) loaded from a checkpoint directory.

For single-GPU debugging and CPU tests with tiny models; production throughput comes from vLLM
behind the ``openai`` backend. Decoding is greedy at temperature 0; sampling is seeded.
``generate`` is serialised by a lock: the Qwen-VL models keep per-call rope state on the module.
"""

from __future__ import annotations

import threading
import time
from vismem.serve.layouts import Turn, apply_layout, check_layout
from vismem.serve.qwen_inputs import QwenVLInputs, model_class_for, torch_device, torch_dtype
from vismem.serve.registry import VLMS
from vismem.serve.vlm import ChatResult, Message


def template_content(turn: Turn) -> list[dict]:
    """A laid-out turn as chat-template content parts, in order. Empty text parts are dropped,
    as ``vismem.serve.qwen_inputs.chat_parts`` always did, so ``chat`` conversations render exactly as
    before (images, then the text if any)."""
    return [{"type": "image"} if kind == "image" else {"type": "text", "text": value}
            for kind, value in turn.parts if kind == "image" or value]


@VLMS.register("transformers", accelerator=True,
               stand_in=lambda args: str(args.get("path", "")).startswith("tiny:"))
class TransformersVLM:
    """Args:
        path: local checkpoint directory (config, weights, tokenizer, preprocessor config), or
            ``tiny:qwen2.5-vl`` / ``tiny:qwen3-vl`` for a cached tiny random stand-in.
        label: the short name in ``transformers:<label>`` (defaults to the directory name).
        device / dtype: ``auto`` → CUDA + bfloat16 when available, else CPU + float32.
        min_pixels / max_pixels: override the image resize bounds.
        seed: seeds sampling when ``temperature > 0``.
        layout: the message layout (:mod:`vismem.serve.layouts`) of the chat-template conversation;
            ``merged-user`` gives the official vLLM prompt (no system turn, so Qwen2.5-VL's
            template adds its default one).
    """

    def __init__(self, path: str, *, label: str | None = None, device: str = "auto", dtype: str = "auto",
                 min_pixels: int | None = None, max_pixels: int | None = None, seed: int = 0,
                 layout: str = "chat") -> None:
        from vismem.serve.testing import default_label, resolve_model_path

        self.name = f"transformers:{label or default_label(str(path))}"
        self.path = path = resolve_model_path(str(path))
        self.seed = int(seed)
        self.layout = check_layout(layout)
        self.device = torch_device(device)
        self.inputs = QwenVLInputs(path, min_pixels=min_pixels, max_pixels=max_pixels)
        cls = model_class_for(path)
        self.model = cls.from_pretrained(self.path, dtype=torch_dtype(dtype), local_files_only=True)
        self.model.to(self.device).eval()
        self._lock = threading.Lock()

    def conversation(self, messages: list[Message]) -> list[dict]:
        """The chat-template conversation of ``messages`` under this backend's layout."""
        return [{"role": t.role, "content": template_content(t)} for t in apply_layout(messages, self.layout)]

    def chat(self, messages: list[Message], *, max_tokens: int = 512, temperature: float = 0.0) -> ChatResult:
        import torch

        t0 = time.perf_counter()
        # images in the order their slots appear in the laid-out conversation
        images = [img for t in apply_layout(messages, self.layout) for img in t.images]
        batch = self.inputs.batch([self.conversation(messages)], [images])
        batch = {k: v.to(self.device) for k, v in batch.items()}
        n_prompt = int(batch["input_ids"].shape[1])
        gen_kwargs = {"max_new_tokens": int(max_tokens), "do_sample": temperature > 0}
        if temperature > 0:
            gen_kwargs["temperature"] = float(temperature)
        tok = self.inputs.tokenizer
        with self._lock, torch.inference_mode():
            if temperature > 0:
                torch.manual_seed(self.seed)
            out = self.model.generate(**batch, **gen_kwargs, pad_token_id=tok.pad_token_id)
        new = out[0, n_prompt:].tolist()
        eos = tok.eos_token_id
        if eos in new:
            new = new[: new.index(eos) + 1]
        text = tok.decode(new, skip_special_tokens=True)
        return ChatResult(text=text, latency_s=time.perf_counter() - t0,
                          prompt_tokens=n_prompt, completion_tokens=len(new))
