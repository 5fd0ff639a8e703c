"""Tiny, randomly initialised Qwen-VL models built locally from a config (no downloads, ever).

They exercise the exact loading, chat-template, image-processing, generation and pooling code
that the real checkpoints use, in about a second on a CPU. Importable by any test::

    from vismem.serve.testing import build_tiny_qwen25vl, build_tiny_qwen3vl, build_tiny_siglip2
    path = build_tiny_qwen25vl(tmp_path / "tiny")           # writes config, weights, tokenizer
    vlm = build_vlm({"name": "transformers", "args": {"path": str(path)}})

The tokenizer is a byte-level BPE trained on a few sentences, with the Qwen special tokens and a
Qwen-VL chat template. Weights are seeded, so the same call writes the same model.
"""

from __future__ import annotations

import json
from pathlib import Path

QWEN_SPECIAL_TOKENS = [
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
    "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>",
]

#: The Qwen-VL chat template (image parts become ``<|vision_start|><|image_pad|><|vision_end|>``).
#: ``default_system`` mirrors Qwen2.5-VL, which adds a system turn when none is given.
_TEMPLATE = (
    "{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' and DEFAULT_SYSTEM %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "{% endif %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' or 'image' in part or 'image_url' in part %}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

_CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "What is shown in the image? A red chair next to a blue lamp.",
    "Answer the question based on the memory shots. Caroline went to the LGBTQ support group.",
    "Represent the user's input. Retrieve images or text relevant to the user's query.",
    "click type scroll go back stop product category collection wishlist cart",
    "0123456789 ,.;:!?'\"()[]{}<>/\\-_+=*&^%$#@~` yes no maybe",
]


def chat_template(default_system: bool) -> str:
    return _TEMPLATE.replace("DEFAULT_SYSTEM", "true" if default_system else "false")


def build_tiny_tokenizer(path: str | Path, *, vocab_size: int = 400, default_system: bool = True,
                         unk_token: str | None = None):
    """Train a tiny byte-level BPE with the Qwen special tokens and save it as a HF tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = QWEN_SPECIAL_TOKENS + ([unk_token] if unk_token else [])
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(_CORPUS, trainer=trainer)
    hf = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                 additional_special_tokens=QWEN_SPECIAL_TOKENS[1:], unk_token=unk_token)
    hf.chat_template = chat_template(default_system)
    hf.padding_side = "left"
    hf.save_pretrained(str(path))
    return hf


def _ids(tok) -> dict[str, int]:
    get = tok.convert_tokens_to_ids
    return {"image_token_id": get("<|image_pad|>"), "video_token_id": get("<|video_pad|>"),
            "vision_start_token_id": get("<|vision_start|>"), "vision_end_token_id": get("<|vision_end|>")}


def _save_image_processor(path: Path, *, patch_size: int, max_pixels: int, min_pixels: int) -> None:
    from transformers import Qwen2VLImageProcessorPil

    proc = Qwen2VLImageProcessorPil(patch_size=patch_size, temporal_patch_size=2, merge_size=2,
                                    min_pixels=min_pixels, max_pixels=max_pixels)
    proc.save_pretrained(str(path))


def build_tiny_qwen25vl(path: str | Path, *, seed: int = 0, hidden: int = 64, layers: int = 2) -> Path:
    """A tiny random ``Qwen2_5_VLForConditionalGeneration`` + tokenizer + image processor at ``path``."""
    import torch
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    tok = build_tiny_tokenizer(path, default_system=True)
    heads = 2  # head_dim = hidden / heads = 32: the smallest vLLM's CPU attention supports
    cfg = Qwen2_5_VLConfig(
        text_config=dict(vocab_size=len(tok), hidden_size=hidden, intermediate_size=2 * hidden,
                         num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=1,
                         max_position_embeddings=32768, bos_token_id=tok.pad_token_id,
                         eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
                         # mrope sections (t, h, w) sum to head_dim / 2
                         rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                          "mrope_section": [4, 6, 6]}),
        vision_config=dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2,
                           out_hidden_size=hidden, patch_size=14, spatial_merge_size=2,
                           temporal_patch_size=2, window_size=56, fullatt_block_indexes=[0]),
        **_ids(tok))
    torch.manual_seed(seed)
    model = Qwen2_5_VLForConditionalGeneration(cfg).eval()
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    model.save_pretrained(str(path))
    _save_image_processor(path, patch_size=14, min_pixels=28 * 28, max_pixels=28 * 28 * 16)
    return path


def build_tiny_qwen3vl(path: str | Path, *, seed: int = 0, hidden: int = 64, layers: int = 2,
                       embedding: bool = False) -> Path:
    """A tiny random Qwen3-VL + tokenizer + image processor at ``path``.

    Both save ``Qwen3VLForConditionalGeneration`` (the key layout Qwen3-VL checkpoints hold, which
    vLLM's pooling runner loads: a bare ``Qwen3VLModel`` fails there with "no module or parameter
    named 'embed_tokens'"); ``embedding=True`` is the Qwen3-VL-Embedding stand-in, which the
    transformers runner loads as ``Qwen3VLModel`` (the LM head is dropped) and vLLM as a pooling
    model; ``embedding=False`` a Qwen3-VL-Instruct stand-in (at one seed, the two hold the same weights).
    """
    import torch
    from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    tok = build_tiny_tokenizer(path, default_system=False)
    heads, head_dim = 4, 32  # vLLM's CPU attention supports head_dim 32 and up, not 16
    cfg = Qwen3VLConfig(
        text_config=dict(vocab_size=len(tok), hidden_size=hidden, intermediate_size=2 * hidden,
                         num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=2,
                         head_dim=head_dim, max_position_embeddings=32768,
                         pad_token_id=tok.pad_token_id,
                         rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                          "mrope_section": [4, 6, 6], "mrope_interleaved": True}),
        vision_config=dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=2,
                           out_hidden_size=hidden, patch_size=16, spatial_merge_size=2,
                           temporal_patch_size=2, num_position_embeddings=64,
                           deepstack_visual_indexes=[0]),
        **_ids(tok))
    torch.manual_seed(seed)
    model = Qwen3VLForConditionalGeneration(cfg).eval()
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    model.save_pretrained(str(path))
    _save_image_processor(path, patch_size=16, min_pixels=32 * 32, max_pixels=32 * 32 * 16)
    return path


def build_tiny_siglip2(path: str | Path, *, seed: int = 0) -> Path:
    """A tiny random ``Siglip2Model`` + processor config at ``path`` (text tower uses the tiny BPE)."""
    import torch
    from transformers import Siglip2Config, Siglip2Model

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    # transformers maps siglip2 checkpoints to its Gemma-style tokenizer class, which needs <unk>.
    tok = build_tiny_tokenizer(path, default_system=False, unk_token="<unk>")
    cfg = Siglip2Config(
        text_config=dict(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=2, max_position_embeddings=16, projection_size=32,
                         pad_token_id=tok.pad_token_id, bos_token_id=tok.pad_token_id,
                         eos_token_id=tok.eos_token_id),
        vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                           patch_size=16, num_patches=16, num_channels=3))
    torch.manual_seed(seed)
    Siglip2Model(cfg).eval().save_pretrained(str(path))
    (path / "preprocessor_config.json").write_text(json.dumps({
        "image_processor_type": "Siglip2ImageProcessor", "patch_size": 16, "max_num_patches": 16,
        "do_resize": True, "do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": True,
        "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]}))
    return path


TINY_BUILDERS = {
    "qwen2.5-vl": lambda p, seed: build_tiny_qwen25vl(p, seed=seed),
    "qwen3-vl": lambda p, seed: build_tiny_qwen3vl(p, seed=seed),
    "qwen3-vl-embedding": lambda p, seed: build_tiny_qwen3vl(p, seed=seed, embedding=True),
    "siglip2": lambda p, seed: build_tiny_siglip2(p, seed=seed),
}


#: Bumped whenever a builder's output changes, so a cached tiny model of an older shape is never
#: reused (the cache key is what the builders make, not where they write it).
TINY_VERSION = 2


def tiny_model_path(arch: str, *, seed: int = 0, cache_dir: str | Path | None = None) -> Path:
    """Build (once, atomically) and return a cached tiny model: ``$VISMEM_TINY_DIR`` or
    ``~/.cache/vismem/tiny``/``<arch>-seed<seed>-v<TINY_VERSION>``. Safe when several workers race."""
    import os
    import shutil
    import tempfile

    if arch not in TINY_BUILDERS:
        raise ValueError(f"unknown tiny model {arch!r}; known: {', '.join(sorted(TINY_BUILDERS))}")
    root = Path(cache_dir or os.environ.get("VISMEM_TINY_DIR") or Path.home() / ".cache" / "vismem" / "tiny")
    final = root / f"{arch}-seed{seed}-v{TINY_VERSION}"
    if (final / "config.json").is_file():
        return final
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{arch}-", dir=root))
    try:
        TINY_BUILDERS[arch](tmp, seed)
        try:
            tmp.rename(final)
        except OSError:  # another worker finished first
            pass
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return final


def resolve_model_path(path: str) -> str:
    """``tiny:<arch>[@seed]`` → a cached tiny checkpoint; anything else is returned unchanged."""
    if not path.startswith("tiny:"):
        return path
    arch, _, seed = path[len("tiny:"):].partition("@")
    return str(tiny_model_path(arch, seed=int(seed or 0)))


def default_label(path: str) -> str:
    """Short model label for names: ``tiny:qwen2.5-vl`` → ``tiny-qwen2.5-vl``; else the dir name."""
    if path.startswith("tiny:"):
        return "tiny-" + path[len("tiny:"):].replace("@", "-seed")
    return Path(path).name
