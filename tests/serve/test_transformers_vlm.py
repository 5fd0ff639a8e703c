"""The local transformers VLM on tiny random Qwen2.5-VL / Qwen3-VL checkpoints built offline."""

from __future__ import annotations

import json

import pytest
import torch

from vismem.serve.build import build_vlm
from vismem.serve.vlm import VLM, Message
from tests.serve.conftest import png


@pytest.fixture(scope="module", params=["tiny_qwen25vl", "tiny_qwen3vl"])
def tiny_vlm(request):
    path = request.getfixturevalue(request.param)
    return build_vlm({"name": "transformers", "args": {"path": str(path), "label": request.param}})


def test_loads_offline_and_chat_template_has_image_slots(tiny_vlm, tiny_qwen25vl):
    assert isinstance(tiny_vlm, VLM) and tiny_vlm.name.startswith("transformers:tiny_qwen")
    conv = tiny_vlm.conversation([Message("user", "What is shown?", (png("red"),))])
    text = tiny_vlm.inputs.render(conv)
    assert "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>What is shown?<|im_end|>" in text
    assert text.endswith("<|im_start|>assistant\n")
    # Qwen2.5-VL's template adds the default system turn; Qwen3-VL's does not.
    has_default_system = "You are a helpful assistant." in text
    assert has_default_system == ("25" in tiny_vlm.name)
    cfg = json.loads((tiny_qwen25vl / "config.json").read_text())
    assert cfg["model_type"] == "qwen2_5_vl"


def test_image_pad_expanded_to_grid_tokens(tiny_vlm):
    inputs = tiny_vlm.inputs
    imgs = [png("red", (40, 30)), png("blue", (64, 64))]
    conv = tiny_vlm.conversation([Message("user", "two images", tuple(imgs))])
    batch = inputs.batch([conv], [imgs])
    grid = batch["image_grid_thw"]
    assert grid.shape == (2, 3)
    expected = int((grid.prod(-1) // inputs.merge_size ** 2).sum())
    assert int((batch["input_ids"] == inputs.image_token_id).sum()) == expected
    assert int(batch["mm_token_type_ids"].sum()) == expected
    assert batch["pixel_values"].shape[0] == int(grid.prod(-1).sum())


def test_greedy_chat_is_deterministic_and_images_matter(tiny_vlm):
    msgs = [Message("system", "be brief"), Message("user", "What is shown?", (png("red"), png("blue", (64, 64))))]
    a = tiny_vlm.chat(msgs, max_tokens=6)
    b = tiny_vlm.chat(msgs, max_tokens=6)
    assert a.text == b.text and a.completion_tokens == b.completion_tokens <= 6
    assert a.prompt_tokens > 20 and a.latency_s > 0
    # The image reaches the language model: different pixels → different next-token logits.
    logits = []
    for color in ("red", "green"):
        conv = tiny_vlm.conversation([Message("user", "What?", (png(color),))])
        batch = tiny_vlm.inputs.batch([conv], [[png(color)]])
        with torch.inference_mode():
            logits.append(tiny_vlm.model(**batch).logits[0, -1])
    assert not torch.allclose(logits[0], logits[1])


def test_text_only_and_image_count_mismatch(tiny_vlm):
    assert isinstance(tiny_vlm.chat([Message("user", "hello")], max_tokens=3).text, str)
    conv = tiny_vlm.conversation([Message("user", "x", (png("red"),))])
    with pytest.raises(ValueError, match="image slots"):
        tiny_vlm.inputs.batch([conv], [[]])
