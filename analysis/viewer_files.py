"""Viewer images as files beside the page, referenced by relative URL (not inlined).

A page that inlines every image grows with the run (a paper-sized run's observation images alone
are tens of MB of base64) and the browser decodes all of it before the page is usable. Written as
files in a folder next to the page (``img/<digest>.jpg``), the page holds only short relative
URLs, the browser loads an image when its ``<img loading="lazy">`` comes into view, and the report
folder still opens from ``file://`` (``<img src>`` of a relative file is allowed there). Names
are digests of the written bytes: the same image is one file however many steps show it, and
two viewers sharing the folder never overwrite each other's images with different bytes.
"""

from __future__ import annotations

import hashlib
import io
from typing import Iterable, Mapping

#: The folder, relative to the report, that viewer images are written to.
IMAGE_DIR = "img"


def image_ext(data: bytes) -> str:
    """The file extension an image's bytes say (``png``, ``jpg``, ``webp``; ``bin`` otherwise)."""
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return "png"
    if data[:3] == b"\xff\xd8\xff":
        return "jpg"
    return "webp" if data[:4] == b"RIFF" and data[8:12] == b"WEBP" else "bin"


def shrink(data: bytes, max_px: int | None, *, quality: int = 85) -> tuple[bytes, str]:
    """``(bytes, extension)``: images larger than ``max_px`` on their longest side become a JPEG
    of that size; anything else (small, or not decodable) is kept as it is."""
    ext = image_ext(data)
    if max_px is None:
        return data, ext
    try:
        from PIL import Image

        with Image.open(io.BytesIO(data)) as im:
            if max(im.size) <= max_px:
                return data, ext
            im = im.convert("RGB")
            im.thumbnail((max_px, max_px))
            buf = io.BytesIO()
            im.save(buf, format="JPEG", quality=quality)
            return buf.getvalue(), "jpg"
    except Exception:  # noqa: BLE001 - an undecodable image is written as it is
        return data, ext


def image_files(images: Mapping[str, bytes], keys: Iterable[str], *, max_px: int | None,
                folder: str = IMAGE_DIR) -> tuple[dict[str, str], dict[str, bytes]]:
    """``({key: relative URL}, {relative path: bytes})`` for the distinct ``keys`` found in
    ``images`` (missing keys are skipped)."""
    refs: dict[str, str] = {}
    files: dict[str, bytes] = {}
    for k in keys:
        if not k or k in refs or k not in images:
            continue
        data, ext = shrink(images[k], max_px)
        path = f"{folder}/{hashlib.sha256(data).hexdigest()[:24]}.{ext}"
        files[path] = data
        refs[k] = path
    return refs, files


__all__ = ["IMAGE_DIR", "image_ext", "image_files", "shrink"]
