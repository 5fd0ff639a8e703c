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


# -- the real files' quirks (synthetic files in the upstream schema) ---------------------------------

def test_identical_repeated_session_is_kept_once(tmp_path):
    from vismem.env.dialogue.longmemeval import LongMemEvalConversations

    recs = lme_records()
    r = recs[0]  # upstream #54: the same session again under a later date
    r["haystack_session_ids"].append("answer_280352e9")
    r["haystack_dates"].append("2023/05/28 (Sun) 11:00")
    r["haystack_sessions"].append(json.loads(json.dumps(r["haystack_sessions"][1])))
    p = tmp_path / "longmemeval_s_cleaned.json"
    p.write_text(json.dumps(recs))
    convs = load_longmemeval(p)
    assert isinstance(convs, LongMemEvalConversations)
    assert convs.duplicate_sessions == 1 and convs.duplicates == (("e47becba", "answer_280352e9"),)
    c = convs[0]
    assert [s.session_id for s in c.sessions] == ["sharegpt_yywfAQ8_0", "answer_280352e9"]
    assert [s.index for s in c.sessions] == [1, 2] and c.sessions[1].date.day == 25  # the first one kept
    assert c.questions[0].evidence == ("answer_280352e9:1",)  # not counted twice


def test_conflicting_repeated_session_is_a_named_error(tmp_path):
    from vismem.env.dialogue.longmemeval import DuplicateSessionError

    recs = lme_records()
    r = recs[0]
    r["haystack_session_ids"].append("sharegpt_yywfAQ8_0")
    r["haystack_dates"].append("2023/05/28 (Sun) 11:00")
    r["haystack_sessions"].append([{"role": "user", "content": "Something else entirely."}])
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(recs))
    with pytest.raises(DuplicateSessionError, match=r"record #0 \(e47becba\).*'sharegpt_yywfAQ8_0' \(positions 0 and 2\) "
                       "with different turns") as err:
        load_longmemeval(p)
    assert isinstance(err.value, DataError)


@pytest.mark.parametrize("name, per_question", [
    ("longmemeval_s_cleaned.json", 8), ("longmemeval_m_cleaned.json", 14), ("longmemeval_oracle.json", 0)])
def test_the_three_upstream_files_load(tmp_path, name, per_question):
    from vismem.env.dialogue.lme_synth import CODE, NON_LATIN, write_synthetic_longmemeval
    from vismem.memory.dialogue.datasets import get_dataset

    stats = write_synthetic_longmemeval(tmp_path / name, seed=3, n_questions=12,
                                        sessions_per_question=per_question, pool_size=30)
    convs = get_dataset("longmemeval").load(tmp_path / name)
    assert len(convs) == stats.records == 12
    assert convs.duplicate_sessions == stats.duplicate_sessions == (3 if per_question else 0)
    assert sum(c.questions[0].abstention for c in convs) == stats.abstention == 2
    assert {c.questions[0].category for c in convs} == set(LONGMEMEVAL_COLUMNS)
    for c in convs:
        q = c.questions[0]
        assert len({s.session_id for s in c.sessions}) == len(c.sessions)
        assert q.evidence and q.evidence_sessions and not q.evidence_unparsed
        assert {d.rsplit(":", 1)[0] for d in q.evidence} == set(q.evidence_sessions)
        if q.category in ("multi-session", "knowledge-update", "temporal-reasoning"):
            assert len(q.evidence_sessions) >= 2
        roles = {c.dia_index()[d]: t.role for s in c.sessions for t in s.turns for d in [t.dia_id] if t.has_answer}
        assert set(roles.values()) == ({"assistant"} if q.category == "single-session-assistant" else {"user"})
    texts = [t.text for c in convs for s in c.sessions for t in s.turns]
    if per_question:
        assert set(NON_LATIN) <= set(texts) and CODE in texts  # escapes decoded, indentation intact


def test_stream_one_record_at_a_time(tmp_path):
    from vismem.env.dialogue.longmemeval import LongMemEvalReader

    p = tmp_path / "lme.json"
    p.write_text(json.dumps(lme_records())[:-1] + ", {broken")  # malformed after record 2
    reader = LongMemEvalReader(p, limit=2)
    assert [c.conversation_id for c in reader] == ["e47becba", "gpt4_93159ced_abs"]  # never reads on
    with pytest.raises(DataError, match="not valid JSON in array element #2"):
        list(LongMemEvalReader(p))


def test_a_pool_session_is_shared_across_loaded_records(tmp_path):
    from vismem.env.dialogue.lme_synth import write_synthetic_longmemeval

    write_synthetic_longmemeval(tmp_path / "m.json", seed=1, n_questions=6, sessions_per_question=10, pool_size=10)
    convs = load_longmemeval(tmp_path / "m.json")
    by_id: dict[str, list] = {}
    for c in convs:
        for s in c.sessions:
            by_id.setdefault(s.session_id, []).append(s.turns)
    reused = [ts for ts in by_id.values() if len(ts) > 1]
    assert reused and all(t is ts[0] for ts in reused for t in ts)  # one copy of the turns in memory


def test_empty_file_is_refused(tmp_path):
    p = tmp_path / "empty.json"
    p.write_text("[]")
    with pytest.raises(DataError, match="holds no question records"):
        load_longmemeval(p)


def test_dataset_streams(tmp_path):
    from vismem.env.dialogue.lme_synth import write_synthetic_longmemeval
    from vismem.memory.dialogue.datasets import get_dataset

    stats = write_synthetic_longmemeval(tmp_path / "m.json", seed=2, n_questions=5)
    reader = get_dataset("longmemeval").stream(tmp_path / "m.json")
    assert sum(1 for _ in reader) == 5 and len(reader.duplicates) == stats.duplicate_sessions == 2
