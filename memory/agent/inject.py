"""Injection: how a recalled item reads in the agent's prompt, and the memory block around it.

The four injectors and the block format are the official strings, byte for byte
(``dualmem/injection/*.py`` and ``dmvbench_live_runner._format_memory_payload``; spec §1.7 and
§3.4), including "summarised" with an *s* and the U+2014 dashes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Literal, Sequence

from vismem.agents.prompts import NO_MEMORY_TEXT

if TYPE_CHECKING:
    from vismem.memory.agent.base import MemoryItem

InjectorName = Literal["text", "caption", "image", "image_text"]

#: The block's first line when something was recalled.
BLOCK_HEADER = ("{n} item(s) recalled from earlier sessions, most relevant first. Any attached memory "
                "images appear AFTER the current-page image, in the order referenced below.")


@dataclass(frozen=True)
class Rendered:
    """One item as an injector renders it: its text and the image keys it attaches (in order)."""

    text: str
    image_keys: tuple[str, ...] = ()


def entry_url(slug: str) -> str:
    """``injection/base.entry_url``: the page a memory entry stands for."""
    if slug.startswith("col_"):
        return f"/collection/{slug[4:]}"
    if slug.startswith("cat_"):
        return f"/category/{slug[4:]}"
    if slug in ("", "blank") or slug.startswith("page_"):
        return ""
    return f"/product/{slug}"


def _images(item: "MemoryItem") -> tuple[str, ...]:
    # The official injectors attach ``entry.image_path`` and the block skips an empty one.
    return (item.image_key,) if item.image_key else ()


def text_only(item: "MemoryItem") -> Rendered:
    """``TextOnlyInject``: the encode text first (``a chair``), no image."""
    text = item.encode_text or item.caption or ""
    url = entry_url(item.slug)
    loc = f" (product page {url})" if url else ""
    return Rendered(f'Memory (verbal channel only){loc}: "{text}"')


def caption_only(item: "MemoryItem") -> Rendered:
    """``CaptionOnlyInject``: the caption first, then the encode text, no image."""
    text = item.caption or item.encode_text or "<no caption>"
    url = entry_url(item.slug)
    loc = f" (product page {url})" if url else ""
    return Rendered(f'Memory caption (visual channel summarised as text){loc}:\n"{text}"')


def image_only(item: "MemoryItem") -> Rendered:
    """``ImageOnlyInject``: the raw image and the product URL."""
    url = entry_url(item.slug)
    loc = f" — this memory is the product at {url}" if url else ""
    return Rendered(f"Memory image (visual channel, raw){loc}:", _images(item))


def image_text(item: "MemoryItem") -> Rendered:
    """``ImageTextInject``: the image plus ``Caption: "..."`` (caption, else the encode text)."""
    cap = item.caption or item.encode_text or ""
    url = entry_url(item.slug)
    loc = f" — product page {url}" if url else ""
    return Rendered(f'Memory (dual-channel, image + caption){loc}:\nCaption: "{cap}"', _images(item))


#: Injector name → renderer (the ``inject`` argument of every architecture).
INJECTORS: dict[str, Callable[["MemoryItem"], Rendered]] = {
    "text": text_only, "caption": caption_only, "image": image_only, "image_text": image_text,
}


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
