"""Store key parts from free-form ids (conversation and session ids of a dataset).

An id made only of ``A-Z a-z 0-9 . _ -`` is its own key part, so the keys of today's datasets (and
every cache built on them) stay what they were. Any other character is written ``~<hex>~`` (its
code point): ``"conv 26"`` is ``conv~20~26`` while ``"conv_26"`` stays ``conv_26``. A safe id never
holds ``~``, and an escaped character is the only way a ``~`` enters a key part, so the map is
injective: two different ids never share a key, and the id can be read back (:func:`id_from_key`).
"""

from __future__ import annotations

import re

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_ESCAPED = re.compile(r"~([0-9a-f]+)~")


def key_part(text: str) -> str:
    """``text`` as one ``/``-free store key component, injectively (see the module docstring).

    ``""``, ``"."`` and ``".."`` (not valid as key components) are escaped whole."""
    if text in ("", ".", ".."):
        return "~~" + "".join(f"~{ord(c):x}~" for c in text)
    return _UNSAFE.sub(lambda m: f"~{ord(m.group()):x}~", text)


def id_from_key(part: str) -> str:
    """The id :func:`key_part` made ``part`` from."""
    if part.startswith("~~"):
        part = part[2:]
    return _ESCAPED.sub(lambda m: chr(int(m.group(1), 16)), part)
