"""How often a captioner verbalises the incidental cue (DMV-Bench §5, "Injection": the paper's
captioner names both the cue's colour and its object in 16.5 % of the 1,000 with-cue captions).

The paper does not publish its matching rule; ours, case-insensitive on whole words:

* the **colour** is named when the cue colour word appears (``red`` in "a red scarf", not in
  "reddish");
* the **object** is named when its head noun appears, singular or plural: the last word of the
  object phrase with any parenthetical dropped (``wool scarf`` -> ``scarf``, ``wall calendar
  (small)`` -> ``calendar``, ``leather gloves`` -> ``glove``/``gloves``); ``object_match="phrase"``
  asks for the whole phrase instead.
"""

from __future__ import annotations

import re
from typing import Literal, Sequence

import polars as pl

from vismem.core.errors import DataError

_WORD = re.compile(r"[a-z0-9]+")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _forms(word: str) -> set[str]:
    """A noun's singular and plural spellings (enough for the cue vocabulary)."""
    if word.endswith("ves"):  # scarves -> scarf
        stem = word[:-3] + "f"
    elif word.endswith(("ses", "xes", "ches", "shes")):
        stem = word[:-2]
    else:
        stem = word[:-1] if word.endswith("s") else word
    forms = {word, stem, stem + "s", stem + "es"}
    return forms | ({stem[:-1] + "ves"} if stem.endswith("f") else set())


def names_cue(caption: str | None, colour: str, obj: str, *,
              object_match: Literal["head", "phrase"] = "head") -> tuple[bool, bool]:
    """``(names the colour, names the object)`` for one caption (a missing caption names neither)."""
    if not caption:
        return False, False
    words = _words(caption)
    has_colour = colour.lower() in words
    phrase = _words(re.sub(r"\(.*?\)", " ", obj))
    if not phrase:
        return has_colour, False
    if object_match == "phrase":
        n, last = len(phrase), _forms(phrase[-1])
        has_obj = any(words[i:i + n - 1] == phrase[:-1] and words[i + n - 1] in last
                      for i in range(len(words) - n + 1))
    else:
        has_obj = bool(_forms(phrase[-1]) & set(words))
    return has_colour, has_obj


def cue_verbalisation(captions: pl.DataFrame, by: Sequence[str] = ("captioner",), *,
                      object_match: Literal["head", "phrase"] = "head") -> pl.DataFrame:
    """The share of captions naming the cue, per ``by`` group.

    ``captions``: one row per captioned with-cue image, columns ``caption`` (null allowed),
    ``cue_color``, ``cue_object`` and the ``by`` columns. Returns ``by``, ``n``, ``colour``,
    ``object``, ``both`` (counts) and ``rate`` = both / n, the paper's statistic.
    """
    missing = [c for c in ("caption", "cue_color", "cue_object", *by) if c not in captions.columns]
    if missing:
        raise DataError(f"captions table lacks column(s) {missing}; it has {captions.columns}")
    hits = [names_cue(r["caption"], r["cue_color"], r["cue_object"], object_match=object_match)
            for r in captions.select("caption", "cue_color", "cue_object").iter_rows(named=True)]
    flagged = captions.with_columns(pl.Series("c", [h[0] for h in hits], pl.Boolean),
                                    pl.Series("o", [h[1] for h in hits], pl.Boolean))
    schema = {**{c: captions.schema[c] for c in by}, "n": pl.Int64, "colour": pl.Int64, "object": pl.Int64,
              "both": pl.Int64, "rate": pl.Float64}
    if flagged.height == 0:
        return pl.DataFrame(schema=schema)
    return (flagged.group_by(list(by))
            .agg(pl.len().alias("n"), pl.col("c").sum().alias("colour"), pl.col("o").sum().alias("object"),
                 (pl.col("c") & pl.col("o")).sum().alias("both"))
            .with_columns((pl.col("both") / pl.col("n")).alias("rate"))
            .cast(schema).sort(list(by)))
