"""OpenAI chat-completions wire format ↔ :class:`vismem.serve.vlm.Message` (pure functions).

Shared by the HTTP client (:mod:`vismem.serve.backends.openai`) and the local server
(:mod:`vismem.serve.openai_server`) so both ends agree byte for byte: images travel as base64 data
URLs in ``image_url`` content parts, in the order the back-end's message layout
(:mod:`vismem.serve.layouts`) gives: ``chat`` puts a turn's image parts first, then one text part
(plain-string content when there are no images); ``merged-user`` and ``parts`` send text parts
first, then the images, always as a part list (as the official clients do). The server parses
every layout back: the text parts of one message are joined by ``"\n\n"``, so a
``merged-user`` request parses to exactly the merged text, and a ``parts`` request to the same.
"""

from __future__ import annotations

import base64
import binascii
import threading
import time
import uuid
from collections import OrderedDict
from typing import Any

from vismem.serve.layouts import TEXT_JOIN, Turn, apply_layout
from vismem.serve.vlm import ChatResult, Message


def image_kind(data: bytes) -> str | None:
    """Sniff encoded image bytes: ``png``, ``jpeg``, ``webp``, ``gif`` or None when unknown."""
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return "png"
    if data[:3] == b"\xff\xd8\xff":
        return "jpeg"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "gif"
    return None


def image_mime(data: bytes) -> str:
    """The MIME type of encoded image bytes; PNG if unknown."""
    return f"image/{image_kind(data) or 'png'}"


class _DataURLs:
    """Data URLs of recently sent images (LRU, bounded in characters; thread-safe).

    A probe step sends the same few memory images as every other step of its chain: encoding
    them once per process instead of once per call saves ~0.07 ms of client CPU per 100 KB
    image. Keyed by the bytes themselves: their hash is computed once per bytes object (and the
    page env and blob caches hand out the same objects), so a hit costs a dict lookup.
    """

    def __init__(self, max_chars: int = 64 << 20) -> None:
        self.max_chars = max_chars
        self._urls: OrderedDict[bytes, str] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def __call__(self, data: bytes) -> str:
        with self._lock:
            url = self._urls.get(data)
            if url is not None:
                self._urls.move_to_end(data)
                return url
        url = f"data:{image_mime(data)};base64,{base64.b64encode(data).decode('ascii')}"
        with self._lock:
            if data not in self._urls:
                self._urls[data] = url
                self._chars += len(url)
                while self._chars > self.max_chars and len(self._urls) > 1:
                    _, old = self._urls.popitem(last=False)
                    self._chars -= len(old)
        return url


_DATA_URLS = _DataURLs()


def to_data_url(data: bytes) -> str:
    """``data:image/<kind>;base64,...`` of encoded image bytes (memoised per process)."""
    return _DATA_URLS(bytes(data))


def from_data_url(url: str) -> bytes:
    """Decode a ``data:image/...;base64,`` URL. Raises ``ValueError`` for anything else."""
    if not url.startswith("data:"):
        raise ValueError("only data: URLs are accepted for images (no remote fetches)")
    head, sep, payload = url.partition(",")
    if not sep or not head.endswith(";base64"):
        raise ValueError("image data URL must be base64-encoded")
    try:
        return base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError) as e:
        raise ValueError(f"invalid base64 in image data URL: {e}") from e


def turn_to_openai(turn: Turn, *, image_detail: str | None = None) -> dict[str, Any]:
    """One laid-out turn in the wire format, its parts in order."""
    if turn.collapse and not turn.images:
        return {"role": turn.role, "content": TEXT_JOIN.join(turn.texts)}
    parts: list[dict[str, Any]] = []
    for kind, value in turn.parts:
        if kind == "text":
            parts.append({"type": "text", "text": value})
            continue
        image_url: dict[str, Any] = {"url": to_data_url(value)}  # type: ignore[arg-type]
        if image_detail:
            image_url["detail"] = image_detail
        parts.append({"type": "image_url", "image_url": image_url})
    return {"role": turn.role, "content": parts}


def messages_to_openai(messages: list[Message], *, layout: str = "chat",
                       image_detail: str | None = None) -> list[dict[str, Any]]:
    """A conversation in the wire format under a message layout (see :mod:`vismem.serve.layouts`)."""
    return [turn_to_openai(t, image_detail=image_detail) for t in apply_layout(messages, layout)]


def message_to_openai(msg: Message, *, image_detail: str | None = None) -> dict[str, Any]:
    """One message in the ``chat`` layout: image parts, then the text; a plain string without images."""
    return messages_to_openai([msg], image_detail=image_detail)[0]


def messages_from_openai(raw: list[dict[str, Any]]) -> list[Message]:
    """Parse wire-format messages. Raises ``ValueError`` naming the offending message/part."""
    out: list[Message] = []
    for i, m in enumerate(raw):
        role = m.get("role")
        if role not in ("system", "user", "assistant"):
            raise ValueError(f"messages[{i}].role {role!r} is not system/user/assistant")
        content = m.get("content")
        if content is None or isinstance(content, str):
            out.append(Message(role, content or ""))
            continue
        if not isinstance(content, list):
            raise ValueError(f"messages[{i}].content must be a string or a list of parts")
        texts: list[str] = []
        images: list[bytes] = []
        for j, part in enumerate(content):
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "text":
                texts.append(str(part.get("text", "")))
            elif kind == "image_url":
                iu = part.get("image_url")
                url = iu.get("url") if isinstance(iu, dict) else iu
                try:
                    images.append(from_data_url(str(url)))
                except ValueError as e:
                    raise ValueError(f"messages[{i}].content[{j}]: {e}") from e
            else:
                raise ValueError(f"messages[{i}].content[{j}].type {kind!r} is not text/image_url")
        # Several text parts (the ``parts`` layout) read as one text, joined as ``merged-user``
        # joins system and user: both layouts then reach a backend as the same Message.
        out.append(Message(role, TEXT_JOIN.join(texts), tuple(images)))
    return out


def completion_response(result: ChatResult, model: str) -> dict[str, Any]:
    """A ``chat.completion`` object for one reply."""
    usage = None
    if result.prompt_tokens is not None or result.completion_tokens is not None:
        p, c = result.prompt_tokens or 0, result.completion_tokens or 0
        usage = {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": result.text}}],
        "usage": usage,
    }


def parse_completion(body: Any) -> tuple[str, int | None, int | None]:
    """``(text, prompt_tokens, completion_tokens)`` from a response body; ``ValueError`` if malformed."""
    if not isinstance(body, dict):
        raise ValueError("response body is not a JSON object")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ValueError("response has no choices")
    msg = choices[0].get("message")
    if not isinstance(msg, dict):
        raise ValueError("choices[0] has no message")
    content = msg.get("content")
    if isinstance(content, list):  # some servers return content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    if content is not None and not isinstance(content, str):
        raise ValueError("choices[0].message.content is not a string")
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    pt, ct = usage.get("prompt_tokens"), usage.get("completion_tokens")
    return (content or "", pt if isinstance(pt, int) else None, ct if isinstance(ct, int) else None)
