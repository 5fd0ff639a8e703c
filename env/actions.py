"""The agent's action vocabulary and the ReAct reply parser (pure functions).

Actions (DMV-Bench system prompt):

* ``navigate("/...")``   go to a site-relative URL;
* ``click_index(N)``     follow the N-th distinct ``/product/`` or ``/collection/`` link inside
  ``<main>`` (DOM order, N = 0..9);
* ``click_product(hash)`` (parsed from "click 1a2b3c4d" / "click /product/<hash>"): go to that
  product — the official parser accepts it, so we do too;
* ``add_to_wishlist``    press the wishlist button on the current product page (terminal,
  success exit; an emitted hash is kept in ``url_hash``);
* ``done``               give up (terminal, failure exit);
* ``invalid``            anything unusable; keeps the raw text, counts as a step, changes nothing.

:func:`parse_action` reproduces the official ``dualmem/agent/actions.py:parse_react_response``
exactly: take the text after the LAST ``Action:`` (to the end of that line), else the whole
reply; then try, in order, add_to_wishlist, click_index (one digit), navigate("/..."), a
product-hash click, done; otherwise the official "noop", which we name ``invalid``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

ActionType = Literal["navigate", "click_index", "click_product", "add_to_wishlist", "done", "invalid"]
TERMINAL = ("add_to_wishlist", "done")


@dataclass(frozen=True)
class Action:
    """One parsed action. ``raw`` is the text it was parsed from (kept for logs and invalids)."""

    type: ActionType
    url: str | None = None        # navigate / click_product target
    index: int | None = None      # click_index N
    url_hash: str | None = None   # click_product / add_to_wishlist hash, when given
    raw: str = ""

    @property
    def terminal(self) -> bool:
        return self.type in TERMINAL

    def __str__(self) -> str:
        if self.type == "navigate":
            return f'navigate("{self.url}")'
        if self.type == "click_index":
            return f"click_index({self.index})"
        if self.type == "click_product":
            return f'navigate("{self.url}")'
        if self.type in TERMINAL:
            return self.type
        return f"invalid({self.raw!r})"


def navigate(url: str) -> Action:
    return Action("navigate", url=url, raw=f'navigate("{url}")')


def click_index(n: int) -> Action:
    return Action("click_index", index=int(n), raw=f"click_index({int(n)})")


def add_to_wishlist() -> Action:
    return Action("add_to_wishlist", raw="add_to_wishlist")


def done() -> Action:
    return Action("done", raw="done")


def invalid(raw: str) -> Action:
    return Action("invalid", raw=raw)


# The official regexes, verbatim in behaviour (dualmem/agent/actions.py).
_ACTION_RE = re.compile(r"action\s*:\s*(.+?)$", re.I | re.M)
_NAV_RE = re.compile(r"navigate\s*\(?\s*[\"']?(/[^\s\"'\)]+)", re.I)
_CLICK_HASH_RE = re.compile(r"click(?:_product)?\s*\(?\s*[\"']?(?:/product/)?([0-9a-f]{6,16})\b", re.I)
_CLICK_INDEX_RE = re.compile(r"click_index\s*\(?\s*\[?\s*([0-9])\s*\]?\s*\)?", re.I)
_WISH_RE = re.compile(r"(add_to_wishlist|add\s+to\s+wishlist|wishlist\s*\()", re.I)
_DONE_RE = re.compile(r"\bdone\b", re.I)


def action_text(reply: str) -> str:
    """The text the action is parsed from: after the last ``Action:`` line, else the reply."""
    matches = list(_ACTION_RE.finditer(reply))
    return matches[-1].group(1).strip() if matches else reply


def parse_action(reply: str | None) -> Action:
    """Parse a model reply into an :class:`Action` (never raises)."""
    if not reply:
        return invalid("")
    text = action_text(reply)
    if _WISH_RE.search(text):
        h = _CLICK_HASH_RE.search(text)
        return Action("add_to_wishlist", url_hash=h.group(1) if h else None, raw=text)
    m = _CLICK_INDEX_RE.search(text)
    if m:
        return Action("click_index", index=int(m.group(1)), raw=text)
    m = _NAV_RE.search(text)
    if m:
        return Action("navigate", url=m.group(1), raw=text)
    m = _CLICK_HASH_RE.search(text)
    if m:
        return Action("click_product", url_hash=m.group(1), url=f"/product/{m.group(1)}", raw=text)
    if _DONE_RE.search(text):
        return Action("done", raw=text)
    return invalid(text)
