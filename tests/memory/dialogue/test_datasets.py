"""The dialogue-dataset registry: both benchmarks behind one protocol, and a third dataset
added in one place flows through prompts, judging and F1 without touching the pipeline."""

from __future__ import annotations

import polars as pl
import pytest

from core.errors import ConfigError
from memory.dialogue import answering, scoring
from memory.dialogue.datasets import DATASETS, DialogueDataset, dataset_names, get_dataset


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
    from memory.dialogue.variants import load_variant

    assert load_variant("memshot").oversize_for("toy") == "grow"
