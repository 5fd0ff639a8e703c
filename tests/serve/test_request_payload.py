"""A request's payload is ``json.dumps`` of its body byte for byte, built without re-scanning the
images' data URLs, and an image's data URL is encoded once per process."""

from __future__ import annotations

import base64
import io
import json
import random

from PIL import Image

from vismem.serve import http_client
from vismem.serve.http_client import SPLICE_MIN, dumps_body
from vismem.serve.openai_format import messages_to_openai, to_data_url
from vismem.serve.vlm import Message


def _png(seed: int, size: int = 96) -> bytes:
    rng = random.Random(seed)
    img = Image.frombytes("RGB", (size, size), bytes(rng.randrange(256) for _ in range(size * size * 3)))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def test_payload_equals_json_dumps_for_every_kind_of_string():
    imgs = tuple(_png(i) for i in range(3))
    long_text = "x" * SPLICE_MIN
    body = {"model": "m", "max_tokens": 7, "temperature": 0.0, "seed": None, "flag": True,
            "messages": messages_to_openai([Message("system", "be brief"), Message("user", "look", images=imgs)]),
            "extra": {"tuple": (1, 2.5, "a"), "quote": 'say "hi" ' * 200, "backslash": "a\\b" * 600,
                      "unicode": "café ☕ " * 300, "control": "tab\there\n" * 200, "del": "\x7f" * 2000,
                      "plain": long_text, "short": "ok", "empty": ""}}
    assert dumps_body(body) == json.dumps(body)
    assert dumps_body({"a": [1, "b"]}) == json.dumps({"a": [1, "b"]})


def test_long_verbatim_strings_never_reach_json_dumps(monkeypatch):
    imgs = tuple(_png(10 + i) for i in range(2))
    urls = [to_data_url(b) for b in imgs]
    body = {"messages": messages_to_openai([Message("user", "q", images=imgs)])}
    dumped: list[str] = []
    real = json.dumps
    monkeypatch.setattr(http_client.json, "dumps", lambda o, **kw: dumped.append(real(o, **kw)) or dumped[-1])
    out = dumps_body(body)
    assert out == real(body) and len(dumped) == 1
    assert all(u not in dumped[0] for u in urls)  # swapped for short tokens before the dump


def test_a_data_url_is_encoded_once_per_image():
    data = _png(99)
    url = to_data_url(data)
    assert url == "data:image/png;base64," + base64.b64encode(data).decode("ascii")
    assert to_data_url(data) is url  # memoised: the second call encodes nothing
    assert to_data_url(bytearray(data)) == url  # other byte types give the same URL
