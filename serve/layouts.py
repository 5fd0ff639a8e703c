"""Message layouts: how a back-end lays a conversation out for its model (pure functions).

The agent always speaks in :class:`vismem.serve.vlm.Message` turns (a system prompt, then a user turn
with its images). Back-ends differ in how the official DMV-Bench code put that in front of the
model (``/work/notes/dmv-official.md`` §4), and the layout changes what the model reads, so it is
a model argument of every VLM back-end (``layout: ...`` in its spec) and enters the trajectory
cache key. Three layouts:

``chat`` (default)
    one turn per message, roles kept; a turn's images first, then its text: the layout vismem
    has always sent (requests of existing stand-ins stay byte-identical).
``merged-user`` (official vLLM path, Qwen2.5-VL-7B)
    no system role: the system text is merged into the next user turn as
    ``system + "\\n\\n" + user``; that turn's content is the text first, then its images.
``parts`` (official Gemini path)
    no system role: one user turn whose parts are ``[text(system), text(user), images...]``.

:func:`apply_layout` gives :class:`Turn` objects (role + ordered parts) that the wire format
(:mod:`vismem.serve.openai_format`) and the local transformers backend serialise. :func:`model_view`
gives the same conversation back as Messages, with the text parts of a turn joined by
``"\\n\\n"``: what a model behind the layout reads, and exactly what the local OpenAI-compatible
server parses from such a request, so a scripted stand-in answers the same in process and
behind HTTP.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Union

from vismem.serve.vlm import Message, Role

Layout = Literal["chat", "merged-user", "parts"]
LAYOUTS: tuple[str, ...] = ("chat", "merged-user", "parts")
#: The separator the official clients put between system prompt and user text (and ours between
#: the text parts of one turn when a model-side view needs a single string).
TEXT_JOIN = "\n\n"

Part = Union[tuple[Literal["text"], str], tuple[Literal["image"], bytes]]


@dataclass(frozen=True)
class Turn:
    """One turn as a back-end sends it: ``parts`` in order, each ``("text", str)`` or
    ``("image", bytes)``. ``collapse``: a text-only turn may travel as a plain string (the
    ``chat`` layout's historical wire form; the official clients always send part lists)."""

    role: Role
    parts: tuple[Part, ...]
    collapse: bool = False

    @property
    def texts(self) -> list[str]:
        return [p[1] for p in self.parts if p[0] == "text"]  # type: ignore[misc]

    @property
    def images(self) -> tuple[bytes, ...]:
        return tuple(p[1] for p in self.parts if p[0] == "image")  # type: ignore[misc]


def check_layout(layout: str) -> str:
    """``layout`` if known, else ``ValueError`` naming the choices (spec args fail early)."""
    if layout not in LAYOUTS:
        raise ValueError(f"unknown message layout {layout!r}; choose one of {', '.join(LAYOUTS)}")
    return layout


def _images(m: Message) -> tuple[Part, ...]:
    return tuple(("image", img) for img in m.images)


def _chat(messages: list[Message]) -> list[Turn]:
    return [Turn(m.role, _images(m) + (("text", m.text),), collapse=True) for m in messages]


def _merged(messages: list[Message], *, separate: bool) -> list[Turn]:
    """System texts are held and put in front of the next user turn: as one merged text
    (``merged-user``) or as separate leading text parts (``parts``). A system message that no
    user turn follows becomes a user turn of its own (the official clients never send one)."""
    out: list[Turn] = []
    pending: list[str] = []

    def user_turn(texts: list[str], images: tuple[Part, ...]) -> Turn:
        text_parts = tuple(("text", t) for t in texts) if separate else (("text", TEXT_JOIN.join(texts)),)
        return Turn("user", text_parts + images)

    for m in messages:
        if m.role == "system":
            pending.append(m.text)
            continue
        if m.role == "user":
            out.append(user_turn([*pending, m.text], _images(m)))
            pending = []
            continue
        if pending:
            out.append(user_turn(pending, ()))
            pending = []
        out.append(Turn(m.role, (("text", m.text),) + _images(m)))
    if pending:
        out.append(user_turn(pending, ()))
    return out


def apply_layout(messages: list[Message], layout: str = "chat") -> list[Turn]:
    """The turns a back-end with ``layout`` sends for ``messages``."""
    check_layout(layout)
    if layout == "chat":
        return _chat(messages)
    return _merged(messages, separate=layout == "parts")


def turns_to_messages(turns: list[Turn]) -> list[Message]:
    """Turns back to Messages: text parts joined by ``"\\n\\n"``, images in order."""
    return [Message(t.role, TEXT_JOIN.join(t.texts), t.images) for t in turns]


def model_view(messages: list[Message], layout: str = "chat") -> list[Message]:
    """What a model behind ``layout`` reads, as Messages (identity for ``chat``). Scripted
    back-ends answer from this view, so their replies depend on the layout as a model's would."""
    if check_layout(layout) == "chat":
        return list(messages)
    return turns_to_messages(apply_layout(messages, layout))
