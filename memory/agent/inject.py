"""Injection: how a recalled item reads in the agent's prompt, and the memory block around it.

The four injectors and the block format are the official strings, byte for byte
(``dualmem/injection/*.py`` and ``dmvbench_live_runner._format_memory_payload``; spec §1.7 and
§3.4), including "summarised" with an *s* and the U+2014 dashes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

from vismem.agents.prompts import NO_MEMORY_TEXT
from vismem.core.registry import Registry
from vismem.memory.agent.types import MemoryItem, entry_url


#: The block's first line when something was recalled.
BLOCK_HEADER = ("{n} item(s) recalled from earlier sessions, most relevant first. Any attached memory "
                "images appear AFTER the current-page image, in the order referenced below.")


@dataclass(frozen=True)
class Rendered:
    """One item as an injector renders it: its text and the image keys it attaches (in order)."""

    text: str
    image_keys: tuple[str, ...] = ()


class Injector(Protocol):
    """Renders one recalled item for the prompt."""

    def __call__(self, item: MemoryItem) -> Rendered: ...


#: Injectors by name (the ``inject`` argument of every architecture; ``vismem list injectors``).
INJECTORS: Registry[Injector] = Registry("injector")


def _images(item: MemoryItem) -> tuple[str, ...]:
    # The official injectors attach ``entry.image_path`` and the block skips an empty one.
    return (item.image_key,) if item.image_key else ()


@INJECTORS.register("text")
class TextOnly:
    """``TextOnlyInject``: the encode text first (``a chair``), no image."""

    def __call__(self, item: MemoryItem) -> Rendered:
        text = item.encode_text or item.caption or ""
        url = entry_url(item.slug)
        loc = f" (product page {url})" if url else ""
        return Rendered(f'Memory (verbal channel only){loc}: "{text}"')


@INJECTORS.register("caption")
class CaptionOnly:
    """``CaptionOnlyInject``: the caption first, then the encode text, no image."""

    def __call__(self, item: MemoryItem) -> Rendered:
        text = item.caption or item.encode_text or "<no caption>"
        url = entry_url(item.slug)
        loc = f" (product page {url})" if url else ""
        return Rendered(f'Memory caption (visual channel summarised as text){loc}:\n"{text}"')


@INJECTORS.register("image")
class ImageOnly:
    """``ImageOnlyInject``: the raw image and the product URL."""

    def __call__(self, item: MemoryItem) -> Rendered:
        url = entry_url(item.slug)
        loc = f" — this memory is the product at {url}" if url else ""
        return Rendered(f"Memory image (visual channel, raw){loc}:", _images(item))


@INJECTORS.register("image_text")
class ImageText:
    """``ImageTextInject``: the image plus ``Caption: "..."`` (caption, else the encode text)."""

    def __call__(self, item: MemoryItem) -> Rendered:
        cap = item.caption or item.encode_text or ""
        url = entry_url(item.slug)
        loc = f" — product page {url}" if url else ""
        return Rendered(f'Memory (dual-channel, image + caption){loc}:\nCaption: "{cap}"', _images(item))


def format_block(rendered: Sequence[Rendered]) -> tuple[str, list[str]]:
    """The memory block and the image keys in attachment order (``_format_memory_payload``).

    Nothing recalled reads ``(no memory retrieved this step)``. Otherwise a header line, then one
    ``  (i) text`` line per item with every newline indented by six spaces, and
    `` [memory image N]`` after it for each image it attaches (N counts across the block).
    """
    if not rendered:
        return NO_MEMORY_TEXT, []
    lines = [BLOCK_HEADER.format(n=len(rendered))]
    images: list[str] = []
    for i, r in enumerate(rendered, 1):
        note = ""
        for key in r.image_keys:
            if key:
                images.append(key)
                note += f" [memory image {len(images)}]"
        body = (r.text or "(no text)").replace("\n", "\n      ")
        lines.append(f"  ({i}) {body}{note}")
    return "\n".join(lines), images
