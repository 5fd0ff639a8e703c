"""The L2-leakage vocabulary and matcher (pure functions, no I/O besides the word list).

Four term classes, all matched case-insensitively on word boundaries, with plurals:

* ``colour``  — the ten cue colours;
* ``phrase``  — every full cue object phrase ("wool scarf"; parentheticals dropped);
* ``head``    — every cue object's head noun ("baseball cap" -> "cap", "candle in holder" ->
  "candle", "lily-of-the-valley" -> "lily"), so "scarf" is caught where "wool scarf" is not;
* ``fine``    — the official 82 fine colour/material/style descriptors (``vocab/fine_descriptors.json``),
  the secondary guard of the paper's Appendix B.

Text is split into word tokens (any non-letter/digit separates, so URL slugs like
``plant_pot`` and ``mid_century`` split too) and terms are matched as token sequences, also run
together ("midcentury") as the official regex allows. The one documented exception — style slugs in
``/collection/<cat>-<style>`` URLs — is applied by the caller (:func:`strip_style_slug`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from urllib.parse import unquote

from vismem.env.storefront.catalog import COLOURS, Catalog

FINE_FILE = Path(__file__).parent / "vocab" / "fine_descriptors.json"
CLASSES = ("colour", "phrase", "head", "fine")


def load_fine_descriptors(path: Path = FINE_FILE) -> tuple[str, ...]:
    doc = json.loads(path.read_text(encoding="utf-8"))
    return tuple(w for k in ("colour", "material", "style") for w in doc[k])


def clean_object(obj: str) -> str:
    """Drop parenthetical qualifiers: "pendulum clock (small)" -> "pendulum clock"."""
    return re.sub(r"\s*\([^)]*\)", "", obj).strip()


def head_noun(obj: str) -> str:
    """The head noun of a cue object phrase (English noun phrases are head-final, except
    prepositional compounds whose head comes before the preposition)."""
    o = clean_object(obj).lower()
    o = re.split(r"(?:\s|-)(?:in|of)(?:\s|-)", o)[0]
    return re.split(r"[\s-]+", o)[-1]


_TOKEN = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens; space, hyphen, underscore, slash and punctuation all separate."""
    return _TOKEN.findall(text.lower().replace("’", "'"))


def word_forms(word: str) -> set[str]:
    """A word's singular and plural forms (and the singular of a plural head: socks -> sock)."""
    forms = {word, word + "s", word + "es"}
    if word.endswith("y") and len(word) > 2 and word[-2] not in "aeiou":
        forms.add(word[:-1] + "ies")
    if word.endswith("f"):
        forms.add(word[:-1] + "ves")
    if word.endswith("fe"):
        forms.add(word[:-2] + "ves")
    if word.endswith("s") and not word.endswith("ss"):
        forms.add(word[:-1])
    if word.endswith("es") and len(word) > 3:
        forms.add(word[:-2])
    return forms


def term_keys(term: str) -> set[tuple[str, ...]]:
    """Token sequences that count as an occurrence of ``term``: its words (any separator),
    the plural on the last word, and the words run together ("midcentury", "woolscarf")."""
    toks = tokens(term)
    keys = set()
    for form in word_forms(toks[-1]):
        keys.add(tuple(toks[:-1]) + (form,))
        if len(toks) > 1:
            keys.add(("".join(toks[:-1]) + form,))
    return keys


@dataclass(frozen=True)
class Hit:
    cls: str      # colour | phrase | head | fine
    term: str     # the vocabulary term
    match: str    # the text as found


@dataclass(frozen=True)
class Vocabulary:
    colours: tuple[str, ...]
    phrases: tuple[str, ...]
    heads: tuple[str, ...]
    fine: tuple[str, ...]

    @classmethod
    def from_catalog(cls, catalog: Catalog, fine: tuple[str, ...] | None = None) -> "Vocabulary":
        objs = sorted({v.cue_object for v in catalog.variants})
        colours = tuple(sorted({v.cue_color for v in catalog.variants} | set(COLOURS)))
        return cls(colours=colours, phrases=tuple(clean_object(o).lower() for o in objs),
                   heads=tuple(sorted({head_noun(o) for o in objs})),
                   fine=fine if fine is not None else load_fine_descriptors())

    @cached_property
    def _index(self) -> tuple[dict[tuple[str, ...], list[tuple[str, str]]], int]:
        index: dict[tuple[str, ...], list[tuple[str, str]]] = {}
        for name, terms in (("colour", self.colours), ("phrase", self.phrases),
                            ("head", self.heads), ("fine", self.fine)):
            for t in terms:
                for key in term_keys(t):
                    if (name, t) not in index.setdefault(key, []):
                        index[key].append((name, t))
        return index, max(len(k) for k in index)

    def scan(self, text: str, classes: tuple[str, ...] = CLASSES) -> list[Hit]:
        """Every vocabulary hit in ``text`` (word-boundary, case-insensitive, with plurals)."""
        index, longest = self._index
        toks = tokens(text)
        hits = []
        for i in range(len(toks)):
            for n in range(1, min(longest, len(toks) - i) + 1):
                for cls, term in index.get(tuple(toks[i:i + n]), ()):
                    if cls in classes:
                        hits.append(Hit(cls, term, " ".join(toks[i:i + n])))
        return hits


_COLLECTION_URL = re.compile(r"(/collection/[a-z_]+-)([a-z_]+)")


def strip_style_slug(url: str, styles: set[str]) -> str:
    """Remove the style slug from ``/collection/<cat>-<style>`` URLs (the documented exception:
    style is a property of ten variants, so L2 by construction)."""
    return _COLLECTION_URL.sub(lambda m: m.group(1) if m.group(2) in styles else m.group(0), unquote(url))
