"""Message layouts per back-end (dmv-official.md §4): byte-exact against the official request
shapes, in the OpenAI client's request body, through the local server, and in the transformers
chat template."""

from __future__ import annotations

import base64
import json

import pytest

from vismem.serve.build import build_vlm
from vismem.serve.layouts import LAYOUTS, apply_layout, check_layout, model_view
from vismem.serve.openai_format import message_to_openai, messages_from_openai, messages_to_openai
from vismem.serve.openai_server import LocalOpenAIServer
from vismem.serve.vlm import Message
from tests.serve.conftest import png

SYS, USER = "You are a shopping-assistant agent.\nDecide ONE action.", "Step 3/25.\n[Current page]\n  URL: /"
IMG1, IMG2 = png("red"), png("blue", (16, 16))
CONV = [Message("system", SYS), Message("user", USER, (IMG1, IMG2))]


def _url(img: bytes) -> dict:
    # The official clients always label the data URL image/png; these are PNGs, so ours agrees.
    return {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(img).decode()}}


# The official request messages for (system, user text, [img1, img2]), written out by hand.
OFFICIAL = {
    # OpenAIClient.generate_freeform (vLLM): one user message, text first, then the images
    "merged-user": [{"role": "user", "content": [{"type": "text", "text": SYS + "\n\n" + USER},
                                                 _url(IMG1), _url(IMG2)]}],
    # GeminiClient.generate_freeform: contents = [system, user, Part(img1), Part(img2)]
    "parts": [{"role": "user", "content": [{"type": "text", "text": SYS}, {"type": "text", "text": USER},
                                           _url(IMG1), _url(IMG2)]}],
    # vismem's own layout (unchanged): system turn, then image parts before the one text part
    "chat": [{"role": "system", "content": SYS},
             {"role": "user", "content": [_url(IMG1), _url(IMG2), {"type": "text", "text": USER}]}],
}


def _dump(x) -> str:
    return json.dumps(x, separators=(",", ":"))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_wire_messages_are_byte_exact_official_shapes(layout):
    assert _dump(messages_to_openai(CONV, layout=layout)) == _dump(OFFICIAL[layout])


def test_chat_layout_is_the_historical_wire_form():
    # text-only turns stay plain strings; message_to_openai is the chat layout of one message
    assert message_to_openai(Message("user", "hi")) == {"role": "user", "content": "hi"}
    assert messages_to_openai(CONV) == [message_to_openai(m) for m in CONV]
    # the official layouts send part lists even without images (non-product pages)
    assert messages_to_openai([Message("system", "S"), Message("user", "U")], layout="merged-user") == \
        [{"role": "user", "content": [{"type": "text", "text": "S\n\nU"}]}]


def test_layout_edge_cases_and_unknown_names():
    # no system prompt: the user turn is text first, then images
    assert [t.parts for t in apply_layout([Message("user", "U", (IMG1,))], "merged-user")] == \
        [(("text", "U"), ("image", IMG1))]
    # a system message with no user turn after it becomes a user turn of its own
    turns = apply_layout([Message("system", "S"), Message("assistant", "A")], "parts")
    assert [(t.role, t.texts) for t in turns] == [("user", ["S"]), ("assistant", ["A"])]
    assert model_view(CONV, "chat") == CONV
    assert model_view(CONV, "parts") == model_view(CONV, "merged-user") == \
        [Message("user", SYS + "\n\n" + USER, (IMG1, IMG2))]
    with pytest.raises(ValueError, match="merged-user"):
        check_layout("system-last")
    with pytest.raises(ValueError, match="unknown message layout"):
        build_vlm({"name": "openai", "args": {"model": "m", "layout": "nope"}})


@pytest.mark.parametrize("layout", LAYOUTS)
def test_openai_client_request_body_per_layout(layout):
    client = build_vlm({"name": "openai", "args": {"model": "Qwen/Qwen2.5-VL-7B-Instruct", "layout": layout,
                                                   "api_key_env": None}})
    body = client.request_body(CONV, max_tokens=512, temperature=0.0)
    assert _dump(body) == _dump({"model": "Qwen/Qwen2.5-VL-7B-Instruct", "messages": OFFICIAL[layout],
                                 "max_tokens": 512, "temperature": 0.0})


def test_gemini_variant_body_has_parts_and_thinking_off():
    from vismem.serve.models import load_model_spec

    spec = load_model_spec("gemini-2.5-flash", env={"GEMINI_API_KEY": "x"}).spec
    client = build_vlm(spec)
    body = client.request_body(CONV, max_tokens=512, temperature=0.0)
    assert body["messages"] == OFFICIAL["parts"] and body["reasoning_effort"] == "none"
    qwen = build_vlm(load_model_spec("qwen2.5-vl-7b", env={}).spec)
    assert qwen.request_body(CONV, max_tokens=512, temperature=0.0)["messages"] == OFFICIAL["merged-user"]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_round_trip_through_the_local_server(layout):
    """The server parses each layout back into the Messages the model view promises: exactly
    the original turns for ``chat``, the merged user text for ``merged-user`` and ``parts``."""
    seen: list[list[Message]] = []

    def capture(messages):
        seen.append(messages)
        return "ok"

    backend = build_vlm({"name": "scripted", "args": {"fn": capture}})
    with LocalOpenAIServer(vlm=backend) as srv:
        client = build_vlm({"name": "openai", "args": {"model": srv.model_id, "base_url": srv.base_url,
                                                       "api_key_env": None, "layout": layout}})
        assert client.chat(CONV).text == "ok"
    assert seen == [model_view(CONV, layout)]
    # the same parse without HTTP, from the official shapes themselves
    assert messages_from_openai(OFFICIAL[layout]) == model_view(CONV, layout)
    # and an in-process stand-in with the layout sees what the server-side one saw
    local: list[list[Message]] = []
    build_vlm({"name": "scripted", "args": {"fn": lambda m: local.append(m) or "ok", "layout": layout}}).chat(CONV)
    assert local == seen


@pytest.mark.parametrize("layout", LAYOUTS)
def test_transformers_conversation_per_layout(tiny_qwen25vl, layout):
    vlm = build_vlm({"name": "transformers", "args": {"path": str(tiny_qwen25vl), "layout": layout}})
    text = vlm.inputs.render(vlm.conversation(CONV))
    img = "<|vision_start|><|image_pad|><|vision_end|>"
    if layout == "chat":
        assert f"<|im_start|>system\n{SYS}<|im_end|>" in text
        assert f"<|im_start|>user\n{img}{img}{USER}<|im_end|>" in text
    else:
        # no system turn of ours: the template adds its default one, as on the official vLLM path
        assert "<|im_start|>system\nYou are a helpful assistant.<|im_end|>" in text and SYS + "<|im_end|>" not in text
        joined = SYS + "\n\n" + USER if layout == "merged-user" else SYS + USER  # template concatenates parts
        assert f"<|im_start|>user\n{joined}{img}{img}<|im_end|>" in text
    # every image slot is filled, in order, and the model runs on it
    assert isinstance(vlm.chat(CONV, max_tokens=2).text, str)
