"""The dialogue-dataset registry: both benchmarks behind one protocol, and a third dataset
added in one place flows through prompts, judging and F1 without touching the pipeline."""

from __future__ import annotations

import polars as pl
import pytest

from vismem.core.errors import ConfigError
from vismem.memory.dialogue import answering, scoring
from vismem.memory.dialogue.datasets import DATASETS, DialogueDataset, dataset_names, get_dataset


def test_registry_holds_both_benchmarks_behind_the_protocol():
    assert {"locomo", "longmemeval"} <= set(dataset_names())
    for name in ("locomo", "longmemeval"):
        ds = get_dataset(name)
        assert isinstance(ds, DialogueDataset) and ds.name == name
    assert get_dataset("locomo").default_path == "locomo/locomo10.json"
    assert get_dataset("longmemeval").default_path is None  # not shipped: the user gives a path
    assert (get_dataset("locomo").oversize, get_dataset("longmemeval").oversize) == ("error", "grow")
    with pytest.raises(ConfigError, match="unknown dataset 'nope'.*locomo"):
        get_dataset("nope")


def test_locomo_temporal_questions_get_the_official_suffix():
    q = {"question": "When did she move?", "category": "temporal", "speaker_a": "A", "speaker_b": "B"}
    text = get_dataset("locomo").answer_prompt(q, ["ctx"], mode="text")
    assert "When did she move? Use DATE of CONVERSATION to answer with an approximate date." in text
    plain = get_dataset("locomo").answer_prompt({**q, "category": "single-hop"}, ["ctx"], mode="text")
    assert "Use DATE of CONVERSATION" not in plain


class _Toy:
    """A third benchmark, as a user would add it: one class, one registration."""

    name = "toy"
    default_path = "toy/toy.json"
    oversize = "grow"
    columns = ("only",)

    def load(self, path, *, limit=None):
        return []

    def answer_prompt(self, question, context, *, mode):
        return f"[{mode}] {question['question']} | " + " / ".join(context)

    def judge_prompt(self, question, prediction):
        return f"gold={question.get('answer')} pred={prediction}"

    def parse_judge(self, reply):
        return (reply == "right"), "ok", ""

    def f1(self, prediction, gold, category):
        return 1.0 if (prediction or "").strip() == gold else 0.0


def test_a_third_dataset_needs_only_its_own_registration(monkeypatch):
    monkeypatch.setitem(DATASETS._factories, "toy", _Toy)  # what @DATASETS.register("toy") does
    assert "toy" in dataset_names()
    msg = answering.build_answer_message("toy", {"question": "Q?"}, [{"modality": "text", "text": "u1"}])
    assert msg.text == "[text] Q? | u1"
    assert scoring.judge_prompt("toy", question="Q?", gold="A", prediction="B") == "gold=A pred=B"
    assert scoring.parse_judge("toy", "right")[0] is True
    scored = scoring.score_answers(pl.DataFrame({"prediction": ["A", "B"], "answer": ["A", "A"],
                                                 "category": ["only", "only"]}), "toy")
    assert scored["f1"].to_list() == [1.0, 0.0]
    from vismem.memory.dialogue.variants import load_variant

    assert load_variant("memshot").oversize_for("toy") == "grow"


def test_longmemeval_current_date_is_the_raw_string(tmp_path):
    """The reader prompt's Current Date is the dataset's own string, not a reformatted datetime."""
    import json

    from vismem.memory.dialogue.answering import build_answer_message
    from vismem.memory.dialogue.retrieval import questions_frame

    rec = {"question_id": "q1", "question_type": "temporal-reasoning", "question": "When?", "answer": "May",
           "question_date": "2023/05/30 (Tue) 23:40", "haystack_session_ids": ["s1"],
           "haystack_dates": ["2023/05/20 (Sat) 02:21"], "answer_session_ids": ["s1"],
           "haystack_sessions": [[{"role": "user", "content": "hi", "has_answer": True},
                                  {"role": "assistant", "content": "hello"}]]}
    path = tmp_path / "lme.json"
    path.write_text(json.dumps([rec]))
    convs = get_dataset("longmemeval").load(path)
    q = questions_frame(convs).row(0, named=True)
    assert q["question_date"] == "2023/05/30 (Tue) 23:40"
    msg = build_answer_message("longmemeval", q, [{"modality": "text", "text": "ctx"}])
    assert "Current Date: 2023/05/30 (Tue) 23:40\nQuestion: When?" in msg.text


def test_locomo_category5_official_multiple_choice():
    from vismem.memory.dialogue.datasets.locomo import NOT_MENTIONED, cat5_answer, cat5_options

    ds = get_dataset("locomo")
    opts = cat5_options("conv-26:q150", "a red scarf")
    assert sorted(opts.values()) == sorted([NOT_MENTIONED, "a red scarf"])
    assert cat5_options("conv-26:q150", "a red scarf") == opts  # repeatable
    flips = [cat5_options(f"q{i}", "x")["a"] == NOT_MENTIONED for i in range(200)]
    assert 70 < sum(flips) < 130  # about half the questions put "Not mentioned" first, as random() < 0.5
    q = {"question": "What did Caroline knit?", "category": "adversarial", "category_code": "5",
         "speaker_a": "Caroline", "speaker_b": "Melanie", "mc_a": opts["a"], "mc_b": opts["b"]}
    text = ds.answer_prompt(q, ["ctx"], mode="text")
    assert (f"Question: What did Caroline knit? Select the correct answer: (a) {opts['a']} (b) {opts['b']}. "
            " Short answer:") in text
    assert "Based on the above context, answer the following question." in text  # QA_PROMPT_CAT_5
    assert "write an answer in the form of a short phrase" not in text
    # the official get_cat_5_answer: letters map to options, anything else is kept
    assert cat5_answer("a", opts) == opts["a"] and cat5_answer(" (B) ", opts) == opts["b"]
    assert cat5_answer("xyz", opts) == opts["b"] and cat5_answer("It was a scarf", opts) == "It was a scarf"
    assert ds.postprocess_answer(q, "(a)") == opts["a"] and ds.postprocess_answer({"question": "x"}, "a") == "a"
    from vismem.memory.dialogue.scoring import locomo_f1

    assert locomo_f1(cat5_answer("a", {"a": NOT_MENTIONED, "b": "x"}), None, 5) == 1.0
