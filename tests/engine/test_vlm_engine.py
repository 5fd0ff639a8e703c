"""The ``vllm`` VLM back-end (``vllm.LLM`` in process) on the real CPU engine: an image prompt
through the project's layouts, the same prompt the transformers back-end builds, and a prompt the
engine refuses as a failed call (VLMError), never a crash."""

from __future__ import annotations

import pytest

from vismem.serve.build import build_vlm
from vismem.serve.vlm import Message, VLMError
from tests.engine.conftest import png

ENGINE = {"max_model_len": 2048, "dtype": "float32", "enforce_eager": True, "limit_mm_per_prompt": {"image": 2}}


@pytest.mark.parametrize("arch, layout", [("qwen2.5-vl", "merged-user"), ("qwen3-vl", "chat")])
def test_vllm_backend_answers_an_image_prompt_as_transformers_renders_it(arch, layout, tiny_dir):
    from vismem.serve.backends.transformers_vlm import TransformersVLM
    from vismem.serve.layouts import apply_layout

    msgs = [Message("system", "You are a shopping agent."),
            Message("user", "Which chair is red?", images=(png("red"), png("blue", (200, 120))))]
    vlm = build_vlm({"name": "vllm", "args": {"path": f"tiny:{arch}", "layout": layout, "engine_kwargs": ENGINE}})
    assert vlm.name == f"vllm:tiny-{arch}" and vlm.stand_in  # a tiny model is a named stand-in
    got = vlm.chat(msgs, max_tokens=8, temperature=0.0)
    assert isinstance(got.text, str) and 1 <= got.completion_tokens <= 8 and got.latency_s > 0

    # The engine's prompt is the one the transformers back-end builds from the same turns: same
    # chat template, same layout, same image-token expansion at the same pixel bounds.
    ref = TransformersVLM(f"tiny:{arch}", layout=layout)
    images = [img for t in apply_layout(msgs, layout) for img in t.images]
    batch = ref.inputs.batch([ref.conversation(msgs)], [images])
    assert got.prompt_tokens == int(batch["input_ids"].shape[1])
    text_only = vlm.chat([Message("user", "Which chair is red?")], max_tokens=2)
    assert text_only.prompt_tokens < got.prompt_tokens  # the images' tokens reached the engine

    # Greedy decoding repeats itself: the same prompt, the same reply.
    assert vlm.chat(msgs, max_tokens=8, temperature=0.0).text == got.text

    # Over the context: the engine's refusal is a failed call the agent records, not a crash.
    with pytest.raises(VLMError) as err:
        vlm.chat([Message("user", "chair " * 5000)], max_tokens=4)
    assert err.value.reason == "bad_request" and "2048" in str(err.value)
