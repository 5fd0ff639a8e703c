"""LoCoMo loader: counts and every pitfall of the official file."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from vismem.env.dialogue import LOCOMO_COLUMNS, load_locomo, parse_evidence
from vismem.core.errors import DataError


@pytest.fixture(scope="module")
def convs(data_dir):
    return load_locomo(data_dir / "locomo/locomo10.json")


def test_counts(convs):
    assert len(convs) == 10
    assert sum(len(c.sessions) for c in convs) == 272
    assert sum(c.n_turns for c in convs) == 5882
    qs = [q for c in convs for q in c.questions]
    assert len(qs) == 1986
    assert Counter(q.category_code for q in qs) == {"1": 282, "2": 321, "3": 96, "4": 841, "5": 446}


def test_category_mapping_matches_paper_columns(convs):
    qs = [q for c in convs for q in c.questions]
    by = Counter(q.category for q in qs)
    # Table 1's Open-Domain accuracies are multiples of 1/96, Multi-Hop of 1/282, etc.
    assert by == {"multi-hop": 282, "temporal": 321, "open-domain": 96, "single-hop": 841, "adversarial": 446}
    assert LOCOMO_COLUMNS == ("multi-hop", "temporal", "open-domain", "single-hop")
    assert [q.category_label for q in qs if q.category_code == "3"][0] == "Open-Domain"


def test_sessions_only_where_lists_exist(convs):
    c26 = next(c for c in convs if c.conversation_id == "conv-26")
    assert len(c26.sessions) == 19  # 35 date keys, 19 session lists
    assert [s.index for s in c26.sessions] == list(range(1, 20))
    s1 = c26.sessions[0]
    assert s1.date_text == "1:56 pm on 8 May, 2023" and s1.date.year == 2023 and s1.date.hour == 13
    assert s1.label == "Session 01" and c26.speakers == ("Caroline", "Melanie")
    assert all(s.date is not None for c in convs for s in c.sessions)


def test_answers_and_adversarial(convs):
    qs = [q for c in convs for q in c.questions]
    adv = [q for q in qs if q.category == "adversarial"]
    assert len(adv) == 446 and not any(q.scored for q in adv)
    assert all(q.adversarial_answer for q in adv)
    assert sum(q.answer is None for q in adv) == 444  # two adversarial items also carry an answer
    assert all(q.scored and isinstance(q.answer, str) for q in qs if q.category != "adversarial")
    assert any(q.answer == "2022" for q in qs)  # an int answer in the file, text here
    assert len({q.question_id for q in qs}) == len(qs)


def test_evidence_pitfalls(convs):
    qs = {q.question_id: q for c in convs for q in c.questions}
    assert sum(1 for q in qs.values() if not q.evidence and not q.evidence_unparsed) == 4
    unparsed = sorted(u for q in qs.values() for u in q.evidence_unparsed)
    assert unparsed == ["D", "D10:19", "D4:36"]  # 'D' and two ids naming turns that do not exist
    ev = [q.evidence for q in qs.values()]
    assert ("D8:6", "D9:17") in ev  # 'D8:6; D9:17'
    assert any("D30:5" in e for e in ev)  # 'D30:05'
    assert any("D11:26" in e for e in ev)  # 'D:11:26'
    assert ("D9:1", "D4:4", "D4:6") in ev  # space-joined ids
    for c in convs:
        known = c.dia_index()
        for q in c.questions:
            assert all(d in known for d in q.evidence)
            assert set(q.evidence_sessions) == {known[d] for d in q.evidence}


def test_parse_evidence_unit():
    known = {"D1:2": "session_1", "D3:4": "session_3"}
    assert parse_evidence(["D1:2", "D3:04", "D3:4"], known) == (("D1:2", "D3:4"), ())
    assert parse_evidence(["D1:2, D9:9", "X"], known) == (("D1:2",), ("D1:2, D9:9", "X"))


def test_image_captions(convs):
    turns = [t for c in convs for s in c.sessions for t in s.turns]
    assert sum(t.image_caption is not None for t in turns) == 1226
    assert turns[4].image_caption.startswith("a photo of")


@pytest.mark.parametrize("mutate, field", [
    (lambda d: d[0].pop("sample_id"), "sample_id"),
    (lambda d: d[0]["conversation"]["session_1"][2].pop("text"), "conversation.session_1[2].text"),
    (lambda d: d[0]["qa"][0].update(category=7), "qa[0].category"),
    (lambda d: d[0]["qa"][0].pop("answer"), "qa[0].answer"),
    (lambda d: d[0]["conversation"].pop("session_1_date_time"), "conversation.session_1_date_time"),
])
def test_malformed_raises_data_error(data_dir, tmp_path, mutate, field):
    data = json.loads((data_dir / "locomo/locomo10.json").read_text())[:1]
    mutate(data)
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(data))
    with pytest.raises(DataError) as err:
        load_locomo(p)
    msg = str(err.value)
    assert str(p) in msg and f"'{field}'" in msg and "record #0" in msg
    assert err.value.exit_code == 4


def test_not_json_and_missing(tmp_path):
    p = tmp_path / "x.json"
    p.write_text("{nope")
    with pytest.raises(DataError, match="not valid JSON"):
        load_locomo(p)
    with pytest.raises(DataError, match="not found"):
        load_locomo(tmp_path / "missing.json")
