"""Qwen-VL model inputs without ``AutoProcessor`` (whose video processor needs torchvision).

:class:`QwenVLInputs` pairs the checkpoint's tokenizer and chat template with
``Qwen2VLImageProcessorPil``: it renders chat-format conversations, expands every
``<|image_pad|>`` into ``grid_t·grid_h·grid_w / merge²`` tokens for its image, and returns the
batch tensors the Qwen2.5-VL / Qwen3-VL models expect (``input_ids``, ``attention_mask``,
``mm_token_type_ids``, ``pixel_values``, ``image_grid_thw``). Shared by the transformers VLM
backend and the Qwen3-VL-Embedding embedder.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

IMAGE_PAD = "<|image_pad|>"
_PLACEHOLDER = "\x00IMG\x00"


def to_pil(image: Any):
    """Encoded bytes or a PIL image → an RGB PIL image."""
    from PIL import Image

    if isinstance(image, (bytes, bytearray, memoryview)):
        img = Image.open(io.BytesIO(bytes(image)))
        img.load()
    elif isinstance(image, Image.Image):
        img = image
    else:
        raise TypeError(f"image must be bytes or PIL.Image, got {type(image).__name__}")
    return img.convert("RGB")


def _load_chat_template(path: Path) -> str | None:
    """The processor-level chat template some checkpoints keep outside the tokenizer."""
    if (path / "chat_template.jinja").is_file():
        return (path / "chat_template.jinja").read_text()
    if (path / "chat_template.json").is_file():
        return json.loads((path / "chat_template.json").read_text()).get("chat_template")
    return None


class QwenVLInputs:
    """Tokenizer + chat template + PIL image processor of one local Qwen-VL checkpoint.

    ``min_pixels`` / ``max_pixels`` override the checkpoint's resize bounds (the image-token
    budget per image).
    """

    def __init__(self, path: str | Path, *, min_pixels: int | None = None,
                 max_pixels: int | None = None) -> None:
        from transformers import AutoTokenizer, Qwen2VLImageProcessorPil

        path = Path(path)
        self.tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        if not getattr(self.tokenizer, "chat_template", None):
            template = _load_chat_template(path)
            if template is None:
                raise ValueError(f"{path}: no chat template (tokenizer_config, chat_template.jinja/json)")
            self.tokenizer.chat_template = template
        # min/max_pixels as kwargs (not ``size``): Qwen2.5-VL configs store them as top-level keys,
        # which the processor applies after ``size`` and which would silently win over it.
        kwargs: dict[str, Any] = {}
        if min_pixels is not None:
            kwargs["min_pixels"] = int(min_pixels)
        if max_pixels is not None:
            kwargs["max_pixels"] = int(max_pixels)
        self.image_processor = Qwen2VLImageProcessorPil.from_pretrained(str(path), local_files_only=True, **kwargs)
        self.merge_size = int(self.image_processor.merge_size)
        self.image_token_id = self.tokenizer.convert_tokens_to_ids(IMAGE_PAD)
        if self.image_token_id is None or self.image_token_id == self.tokenizer.unk_token_id:
            raise ValueError(f"{path}: tokenizer has no {IMAGE_PAD} token")

    def render(self, conversation: list[dict[str, Any]], *, add_generation_prompt: bool = True) -> str:
        return self.tokenizer.apply_chat_template(conversation, tokenize=False,
                                                  add_generation_prompt=add_generation_prompt)

    def batch(self, conversations: list[list[dict[str, Any]]], images: list[list[Any]], *,
              add_generation_prompt: bool = True, padding_side: str = "left") -> dict[str, Any]:
        """Tensors for a batch. ``images[i]`` are the images of conversation ``i``, in the order
        their ``{"type": "image"}`` parts appear."""
        import torch

        if len(conversations) != len(images):
            raise ValueError("one image list per conversation is required")
        texts: list[str] = []
        flat = [to_pil(img) for imgs in images for img in imgs]
        vision: dict[str, Any] = {}
        if flat:
            vision = dict(self.image_processor(images=flat, return_tensors="pt"))
            counts = (vision["image_grid_thw"].prod(-1) // (self.merge_size ** 2)).tolist()
        k = 0
        for conv, imgs in zip(conversations, images):
            text = self.render(conv, add_generation_prompt=add_generation_prompt)
            if text.count(IMAGE_PAD) != len(imgs):
                raise ValueError(f"conversation has {text.count(IMAGE_PAD)} image slots but {len(imgs)} images")
            for _ in imgs:
                text = text.replace(IMAGE_PAD, _PLACEHOLDER * int(counts[k]), 1)
                k += 1
            texts.append(text.replace(_PLACEHOLDER, IMAGE_PAD))
        old_side = self.tokenizer.padding_side
        self.tokenizer.padding_side = padding_side
        try:
            enc = self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        finally:
            self.tokenizer.padding_side = old_side
        out: dict[str, Any] = {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"],
                               "mm_token_type_ids": (enc["input_ids"] == self.image_token_id).to(torch.int32)}
        out.update(vision)
        return out


def chat_parts(text: str, n_images: int) -> list[dict[str, Any]]:
    """Content parts for one turn: its images first, then its text (the Message convention)."""
    parts: list[dict[str, Any]] = [{"type": "image"} for _ in range(n_images)]
    if text:
        parts.append({"type": "text", "text": text})
    return parts


def model_class_for(path: str | Path, *, embedding: bool = False):
    """The transformers class for a local checkpoint's ``model_type``."""
    import transformers

    model_type = json.loads((Path(path) / "config.json").read_text()).get("model_type")
    gen = {"qwen2_5_vl": "Qwen2_5_VLForConditionalGeneration", "qwen2_vl": "Qwen2VLForConditionalGeneration",
           "qwen3_vl": "Qwen3VLForConditionalGeneration", "qwen3_vl_moe": "Qwen3VLMoeForConditionalGeneration"}
    base = {"qwen2_5_vl": "Qwen2_5_VLModel", "qwen2_vl": "Qwen2VLModel", "qwen3_vl": "Qwen3VLModel",
            "qwen3_vl_moe": "Qwen3VLMoeModel"}
    table = base if embedding else gen
    if model_type not in table:
        raise ValueError(f"{path}: unsupported model_type {model_type!r} (expected one of {sorted(table)})")
    return getattr(transformers, table[model_type])


def torch_dtype(name: str):
    import torch

    if name == "auto":
        return torch.bfloat16 if torch.cuda.is_available() else torch.float32
    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[name]


def torch_device(name: str) -> str:
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return name
