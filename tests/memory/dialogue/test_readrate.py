"""Read rate: tokenisation, the multiset match, aggregates, and the words a shot draws."""

from __future__ import annotations

import math
from datetime import datetime

import pytest

from vismem.env.dialogue import Conversation, Session, Turn
from vismem.memory.dialogue import load_variant, session_units
from vismem.memory.dialogue.readrate import drawn_text, read_rate, reading, session_drawn_texts, summarise, words
from vismem.memory.dialogue.render import plan_session


def tiny() -> Conversation:
    turns = (
        Turn("D1:1", "Ana", "Hi Ben! I finally adopted a cat last Sunday."),
        Turn("D1:2", "Ben", "That's great news! What's her name?"),
        Turn("D1:3", "Ana", "Her name is Miso. Here she is.", image_caption="a photo of a grey cat on a sofa"),
    )
    s = Session("session_1", 1, "4:04 pm on 20 January, 2023", datetime(2023, 1, 20, 16, 4), turns)
    return Conversation("locomo", "tiny", ("Ana", "Ben"), (s,))


def test_words_fold_case_punctuation_and_accents():
    assert words("What's up, Caroline?!") == ["whats", "up", "caroline"]
    assert words("1:56 pm on 8 May, 2023") == ["156", "pm", "on", "8", "may", "2023"]
    assert words("Café — self-care…") == ["cafe", "selfcare"]  # a bare dash is no word
    assert words("  \n ") == []


def test_read_rate_is_a_multiset_share_of_source_words():
    assert read_rate("Hey Mel! Good to see you!", "hey mel good to see you") == 1.0
    assert read_rate("a b", "a b c d e") == 1.0  # extra OCR words cost nothing
    assert read_rate("you you you me", "you me") == 0.5  # each OCR token matches once
    assert read_rate("you me", "you you you me") == 1.0
    assert read_rate("and shared a photo", "andsharedaphoto") == 0.0  # run-together words miss
    assert read_rate("support group", "sup port group") == 0.5
    assert read_rate("", "anything") == 1.0  # nothing shown, nothing missed
    r = reading("the cat and the dog", "the dog")
    assert (r.n_words, r.n_read) == (5, 2) and sorted(r.missed) == ["and", "cat", "the"]
    assert r.rate == pytest.approx(0.4)


def test_summarise_weights_by_words():
    rs = [reading("a b c d", "a b c d"), reading("x y", "")]  # 4/4 and 0/2
    s = summarise(rs, goal=0.95)
    assert s["shots"] == 2 and s["words"] == 6
    assert s["read_rate"] == pytest.approx(4 / 6)  # word-weighted
    assert s["mean_shot"] == pytest.approx(0.5) and s["min_shot"] == 0.0
    assert s["share_at_goal"] == 0.5
    assert math.isnan(summarise([])["read_rate"])


def test_drawn_text_is_what_the_shot_shows():
    conv = tiny()
    sess = conv.sessions[0]
    v = load_variant("memshot")
    lay, spans = plan_session(conv, sess, v)
    text = drawn_text(lay, spans[0].start, spans[0].end)
    toks = words(text)
    assert toks[:2] == ["session", "01"] and "january" in toks  # header: label, then timestamp
    assert toks.count("ana") == 2 and toks.count("ben") == 2  # one name per message (+ "Hi Ben")
    assert "shared" in toks and "sofa" in toks  # the caption line
    assert "said" not in toks and "conversation" not in toks  # no LoCoMo-format scaffolding
    # Every drawn word is in the unit's LoCoMo-format text (which only adds scaffolding).
    units = session_units(conv, sess, v)
    assert session_drawn_texts(conv, sess, v) == [text]
    assert read_rate(text, units[0].text) == 1.0
    no_header = load_variant("no-header")
    lay2, spans2 = plan_session(conv, sess, no_header)
    assert "january" not in words(drawn_text(lay2, spans2[0].start, spans2[0].end))
    assert session_drawn_texts(conv, sess, load_variant("text-rag")) == []


def test_drawn_texts_match_units_on_locomo(data_dir):
    from vismem.env.dialogue import load_locomo

    conv = load_locomo(data_dir / "locomo/locomo10.json")[0]
    v = load_variant("memshot")
    for sess in conv.sessions[:3]:
        units = session_units(conv, sess, v)
        texts = session_drawn_texts(conv, sess, v)
        assert len(texts) == len(units)
        assert all(read_rate(t, u.text) == 1.0 for t, u in zip(texts, units))


def test_report_table_equals_summarise_per_variant_zero_word_shots_included():
    """The report's read-rate table (analysis, a floor below) agrees with this module's summary."""
    import random

    import polars as pl

    from vismem.analysis.memshot_sections import GOAL as REPORT_GOAL, readrate_table
    from vismem.memory.dialogue.readrate import GOAL, Reading

    assert REPORT_GOAL == GOAL

    rng = random.Random(7)
    rows = []
    for v in ("a", "b", "empty"):
        for _ in range(9):
            n = 0 if v == "empty" else rng.choice([0, 3, 10, 40])
            rows.append({"variant": v, "n_words": n, "n_read": rng.randint(0, n)})
    table = readrate_table(pl.DataFrame(rows))
    assert table["variant"].to_list() == ["a", "b", "empty"]
    for r in table.iter_rows(named=True):
        want = summarise([Reading(x["n_words"], x["n_read"], ()) for x in rows if x["variant"] == r["variant"]])
        assert r == pytest.approx({"variant": r["variant"], **want})
    assert table.filter(pl.col("variant") == "empty")["read_rate"][0] == 1.0  # nothing drawn, nothing lost
