"""LongMemEval loader on a small file with the exact schema of longmemeval_s/_m/_oracle."""

from __future__ import annotations

import json

import pytest

from vismem.env.dialogue import LONGMEMEVAL_COLUMNS, load_longmemeval
from vismem.env.dialogue.model import CATEGORY_LABELS
from vismem.core.errors import DataError


def lme_records() -> list[dict]:
    return [
        {
            "question_id": "e47becba",
            "question_type": "single-session-user",
            "question": "What degree did I graduate with?",
            "answer": "Business Administration",
            "question_date": "2023/05/30 (Tue) 23:40",
            "haystack_session_ids": ["sharegpt_yywfAQ8_0", "answer_280352e9"],
            "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/25 (Thu) 10:02"],
            "haystack_sessions": [
                [{"role": "user", "content": "Help me plan a trip.", "has_answer": False},
                 {"role": "assistant", "content": "Sure!\n\n1. Pick dates\n2. Book"}],
                [{"role": "user", "content": "I graduated with a degree in Business Administration.",
                  "has_answer": True},
                 {"role": "assistant", "content": "Congratulations!", "has_answer": False}],
            ],
            "answer_session_ids": ["answer_280352e9"],
        },
        {
            "question_id": "gpt4_93159ced_abs",
            "question_type": "temporal-reasoning",
            "question": "How long ago did I adopt my cat?",
            "answer": 3,
            "question_date": "2023/06/01 (Thu) 09:00",
            "haystack_session_ids": ["s1"],
            "haystack_dates": ["2023/05/01 (Mon) 08:00"],
            "haystack_sessions": [[{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]],
            "answer_session_ids": [],
        },
    ]


@pytest.fixture
def lme_file(tmp_path):
    p = tmp_path / "longmemeval_s.json"
    p.write_text(json.dumps(lme_records()))
    return p


def test_load(lme_file):
    convs = load_longmemeval(lme_file)
    assert [c.conversation_id for c in convs] == ["e47becba", "gpt4_93159ced_abs"]
    c = convs[0]
    assert c.dataset == "longmemeval" and c.speakers == ("Assistant", "User")
    assert [s.session_id for s in c.sessions] == ["sharegpt_yywfAQ8_0", "answer_280352e9"]
    assert [s.index for s in c.sessions] == [1, 2]
    s2 = c.sessions[1]
    assert s2.date.day == 25 and s2.date.hour == 10 and s2.date_text == "2023/05/25 (Thu) 10:02"
    assert [t.dia_id for t in s2.turns] == ["answer_280352e9:1", "answer_280352e9:2"]
    assert [t.speaker for t in s2.turns] == ["User", "Assistant"] and s2.turns[0].role == "user"
    q = c.questions[0]
    assert q.evidence == ("answer_280352e9:1",) and q.evidence_sessions == ("answer_280352e9",)
    assert q.category == "single-session-user" and q.category_label == "SS-User" and not q.abstention
    assert q.question_date.month == 5 and q.scored
    q2 = convs[1].questions[0]
    assert q2.abstention and q2.answer == "3" and q2.category_label == "Temp. Reas" and q2.evidence == ()


def test_columns_match_paper():
    assert [CATEGORY_LABELS[c] for c in LONGMEMEVAL_COLUMNS] == [
        "SS-User", "SS-Asst", "SS-pref", "Multi-S", "Know. Upd", "Temp. Reas"]


def test_load_dataset_limit(lme_file):
    from vismem.memory.dialogue.datasets import get_dataset

    assert len(get_dataset("longmemeval").load(lme_file, limit=1)) == 1


@pytest.mark.parametrize("mutate, field", [
    (lambda r: r.pop("haystack_dates"), "haystack_dates"),
    (lambda r: r.update(question_type="multi-hop"), "question_type"),
    (lambda r: r["haystack_sessions"][1][0].update(role="bot"), "haystack_sessions[1][0].role"),
    (lambda r: r["haystack_sessions"][0][1].pop("content"), "haystack_sessions[0][1].content"),
    (lambda r: r["haystack_dates"].pop(), "haystack_sessions"),
])
def test_malformed(tmp_path, mutate, field):
    recs = lme_records()
    mutate(recs[0])
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(recs))
    with pytest.raises(DataError) as err:
        load_longmemeval(p)
    assert str(p) in str(err.value) and "record #0 (e47becba)" in str(err.value) and f"'{field}'" in str(err.value)


def test_missing_file_names_it(tmp_path):
    with pytest.raises(DataError, match="longmemeval_m.json: LongMemEval file not found"):
        load_longmemeval(tmp_path / "longmemeval_m.json")
