"""Read rate: how much of what a shot shows an OCR reading of it recovers.

Definition (per shot): the **source words** are the words drawn in the shot — the header's
session label and timestamp, each message's speaker name, its wrapped body text and its
``and shared ...`` caption (:func:`drawn_text`; not the ``said,`` / ``DATE:`` scaffolding of the
LoCoMo-format unit text, which the shot never shows). Both texts are tokenised by
:func:`words`: whitespace-split, Unicode-folded to ASCII, lowercased, every character that is
not a letter or digit removed (``"What's"`` → ``whats``, ``1:56`` → ``156``), empty tokens
dropped. Letters and digits of non-Latin scripts are kept (Korean and Cyrillic words stay
words); Chinese characters and Japanese kana, written without spaces, are one token each, so
a Chinese or Japanese shot is read character by character. Latin text tokenises exactly as the
ASCII fold alone would (a Latin letter without an ASCII base, like ``ß``, is still dropped). The read rate is the share of source-word *occurrences* found in the OCR token
multiset, each OCR token matching at most one source occurrence::

    read_rate = sum_w min(src[w], ocr[w]) / sum_w src[w]

so a word shown five times counts five times and is only fully read if the OCR text holds it
five times. Words the OCR ran together (``andsharedaphoto``) or split (``sup port``) do not
match: the measure tests word boundaries as well as letters, since both matter to a text
embedder downstream. A shot with no source words reads 1.0 (nothing was missed).

Aggregates (:func:`summarise`) report the word-weighted rate (all matched / all source words,
the headline number), the unweighted mean and the minimum over shots, and the share of shots
at or above a goal.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

from vismem.env.dialogue.model import Conversation, Session
from vismem.memory.dialogue.layout import SessionLayout
from vismem.memory.dialogue.render import plan_session
from vismem.memory.dialogue.variants import Variant

if TYPE_CHECKING:
    import polars as pl

_NON_ALNUM = re.compile(r"[\x00-\x2f\x3a-\x60\x7b-\x7f]+")  # ASCII other than [a-z0-9]; kept script letters stay
GOAL = 0.95  # the target share of words read (analysis.memshot_sections.GOAL, the same)


_SPACELESS = ("CJK UNIFIED IDEOGRAPH", "CJK COMPATIBILITY IDEOGRAPH", "HIRAGANA", "KATAKANA")


def _fold(ch: str) -> str:
    """One character as the tokeniser sees it: its ASCII fold, or itself when it is a letter or
    digit of a non-Latin script (padded with spaces when the script writes no spaces)."""
    # NFKD splits accented letters into base + combining mark; dropping non-ASCII then keeps
    # the base letter, so "café" and an OCR's "cafe" meet.
    ascii_ = unicodedata.normalize("NFKD", ch).encode("ascii", "ignore").decode()
    if ascii_ or unicodedata.category(ch)[0] not in "LN":
        return ascii_
    name = unicodedata.name(ch, "")
    if not name or name.startswith("LATIN"):
        return ""
    return f" {ch} " if name.startswith(_SPACELESS) else ch


def words(text: str) -> list[str]:
    """Normalised tokens of ``text`` (see the module docstring), in order."""
    folded = text if text.isascii() else "".join(c if c.isascii() else _fold(c) for c in text)
    out = []
    for tok in folded.lower().split():
        tok = _NON_ALNUM.sub("", tok)
        if tok:
            out.append(tok)
    return out


@dataclass(frozen=True, slots=True)
class Reading:
    """One shot's tally: ``n_read`` of its ``n_words`` source-word occurrences were found."""

    n_words: int
    n_read: int
    missed: tuple[str, ...]  # source occurrences not found, for inspection (multiset order)

    @property
    def rate(self) -> float:
        return self.n_read / self.n_words if self.n_words else 1.0


def reading(source_text: str, ocr_text: str) -> Reading:
    """Tally the source words of ``source_text`` found in ``ocr_text`` (multiset match)."""
    src, ocr = Counter(words(source_text)), Counter(words(ocr_text))
    n_words = sum(src.values())
    n_read = sum(min(c, ocr[w]) for w, c in src.items())
    missed = tuple(w for w, c in (src - ocr).items() for _ in range(c))
    return Reading(n_words, n_read, missed)


def read_rate(source_text: str, ocr_text: str) -> float:
    """Share of ``source_text``'s word occurrences that ``ocr_text`` contains (0..1)."""
    return reading(source_text, ocr_text).rate


def summarise(readings: Iterable[Reading], goal: float = GOAL) -> dict[str, float]:
    """Aggregate shots of one variant: ``read_rate`` (word-weighted), ``mean_shot``,
    ``min_shot``, ``share_at_goal`` (shots with rate ≥ ``goal``), ``shots``, ``words``."""
    rs = list(readings)
    if not rs:
        return {"shots": 0, "words": 0, "read_rate": float("nan"), "mean_shot": float("nan"),
                "min_shot": float("nan"), "share_at_goal": float("nan")}
    n_words = sum(r.n_words for r in rs)
    return {
        "shots": len(rs),
        "words": n_words,
        "read_rate": sum(r.n_read for r in rs) / n_words if n_words else 1.0,
        "mean_shot": sum(r.rate for r in rs) / len(rs),
        "min_shot": min(r.rate for r in rs),
        "share_at_goal": sum(r.rate >= goal for r in rs) / len(rs),
    }


def drawn_text(layout: SessionLayout, start: int, end: int) -> str:
    """The words a shot of pairs ``[start, end)`` shows, one line per drawn line, in drawing
    order: header (label, timestamp) when the layout has one, then per message the speaker
    name, the wrapped body lines and the caption lines — exactly the words ``draw`` stamps."""
    out: list[str] = []
    if layout.header:
        out += [layout.session.label, layout.session.date_text]
    for p in layout.pairs[start:end]:
        for m in p.messages:
            out.append(m.name)
            out += [" ".join(ln) for ln in m.lines + m.caption_lines]
    return "\n".join(out)


def session_drawn_texts(conv: Conversation, session: Session, variant: Variant) -> list[str]:
    """:func:`drawn_text` of every unit ``session_units`` makes for this session, in order."""
    if not session.turns or variant.kind == "session-text":
        return []
    lay, spans = plan_session(conv, session, variant)
    return [drawn_text(lay, sp.start, sp.end) for sp in spans]


def unit_readings(conversations: Iterable[Conversation], units: "pl.DataFrame",
                  variants: dict[str, Variant] | None = None) -> "pl.DataFrame":
    """One row per shot of ``units`` that has an ``ocr_text``: its :class:`Reading`.

    ``units``: the stage's unit rows (``variant``, ``conversation_id``, ``session_id``,
    ``unit_index``, ``unit_id``, ``ocr_text``). The source words come from re-planning each
    session (layout only, no pixels) with the unit's variant, so they are exactly the words the
    renderer drew. Columns: variant, conversation_id, session_id, unit_id, n_words, n_read,
    read_rate, missed (up to 20 missed words, space-separated).
    """
    import polars as pl

    from vismem.memory.dialogue.variants import load_variant

    variants = dict(variants or {})
    convs = {c.conversation_id: c for c in conversations}
    rows = []
    drawn_cache: dict[tuple[str, str, str], list[str]] = {}
    for r in units.filter(pl.col("ocr_text").is_not_null()).iter_rows(named=True):
        v = variants.setdefault(r["variant"], load_variant(r["variant"]))
        key = (r["variant"], r["conversation_id"], r["session_id"])
        if key not in drawn_cache:
            conv = convs[r["conversation_id"]]
            drawn_cache[key] = session_drawn_texts(conv, conv.session(r["session_id"]), v)
        rd = reading(drawn_cache[key][int(r["unit_index"])], r["ocr_text"])
        rows.append({"variant": r["variant"], "conversation_id": r["conversation_id"],
                     "session_id": r["session_id"], "unit_id": r["unit_id"], "n_words": rd.n_words,
                     "n_read": rd.n_read, "read_rate": rd.rate, "missed": " ".join(rd.missed[:20])})
    schema = {"variant": pl.Utf8, "conversation_id": pl.Utf8, "session_id": pl.Utf8, "unit_id": pl.Utf8,
              "n_words": pl.Int64, "n_read": pl.Int64, "read_rate": pl.Float64, "missed": pl.Utf8}
    return pl.DataFrame(rows, schema=schema)


__all__ = ["GOAL", "Reading", "drawn_text", "read_rate", "reading",
           "session_drawn_texts", "summarise", "unit_readings", "words"]
