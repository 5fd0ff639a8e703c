"""LoCoMo (snap-research/locomo, CC BY-NC 4.0): ten long conversations, QA with evidence turns.

Prompts and F1 follow the official ``task_eval`` scripts (see ``memory/dialogue/prompts/``);
the judge is the mem0-style CORRECT/WRONG prompt the MemShot paper uses.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from vismem.memory.dialogue.datasets import DATASETS

#: Official LoCoMo suffix for temporal (category 2) questions (``evaluate_gpts.py``).
TEMPORAL_SUFFIX = " Use DATE of CONVERSATION to answer with an approximate date."
#: Official multiple-choice suffix and "unanswerable" option of category 5 (adversarial).
CAT5_SUFFIX = " Select the correct answer: (a) {} (b) {}. "
NOT_MENTIONED = "Not mentioned in the conversation"


def cat5_options(question_id: str, adversarial_answer: str) -> dict[str, str]:
    """The two options of a category-5 question, ``{"a": ..., "b": ...}``.

    The official script flips ``random.random() < 0.5`` per question; a coin from the question
    id's hash keeps the same 50/50 split and makes a run repeatable.
    """
    import hashlib

    heads = hashlib.sha256(question_id.encode()).digest()[0] < 128
    return ({"a": NOT_MENTIONED, "b": adversarial_answer} if heads else
            {"a": adversarial_answer, "b": NOT_MENTIONED})


def cat5_answer(prediction: str, options: dict[str, str]) -> str:
    """The official ``get_cat_5_answer``: a one-letter or ``(x)`` reply becomes its option's text
    (any other 1- or 3-character reply is read as ``b``, as there), anything else is kept."""
    p = prediction.strip().lower()
    if len(p) == 1:
        return options["a"] if "a" in p else options["b"]
    if len(p) == 3:
        return options["a"] if "(a)" in p else options["b"]
    return prediction


def adversarial_choices(qs: Any) -> Any:
    """LoCoMo category 5 as the official multiple choice: options ``mc_a``/``mc_b`` per question
    (null for other categories) and the correct one, "Not mentioned in the conversation", as
    the gold answer the judge compares with."""
    import polars as pl

    adv = (pl.col("category_code") == "5") & pl.col("adversarial_answer").is_not_null()
    opts = [cat5_options(q, a) if c == "5" and a is not None else {"a": None, "b": None}
            for q, a, c in zip(qs["question_id"].to_list(), qs["adversarial_answer"].to_list(),
                               qs["category_code"].to_list())]
    return qs.with_columns(pl.Series("mc_a", [o["a"] for o in opts], dtype=pl.Utf8),
                           pl.Series("mc_b", [o["b"] for o in opts], dtype=pl.Utf8),
                           pl.when(adv).then(pl.lit(NOT_MENTIONED)).otherwise(pl.col("answer")).alias("answer"))


@DATASETS.register("locomo")
class LoCoMo:
    """The LoCoMo benchmark (shipped in ``data_dir/locomo/``)."""

    name = "locomo"
    default_path = "locomo/locomo10.json"
    oversize = "error"  # no LoCoMo turn-pair exceeds a 768 px shot; one that did is a renderer bug
    judge_max_tokens = 256  # the mem0-style judge writes a reason before its JSON label

    @property
    def columns(self) -> tuple[str, ...]:
        from vismem.env.dialogue.model import LOCOMO_COLUMNS

        return LOCOMO_COLUMNS

    def load(self, path: str | Path, *, limit: int | None = None) -> list[Any]:
        from vismem.env.dialogue.locomo import load_locomo

        convs = load_locomo(path)
        return convs if limit is None else convs[:limit]

    def answer_prompt(self, question: dict[str, Any], context: Sequence[str], *, mode: str) -> str:
        from vismem.memory.dialogue.scoring import fill, load_prompt

        q_text = str(question["question"])
        template = f"answer_locomo_{mode}"
        if str(question.get("category")) == "temporal" or str(question.get("category_code")) == "2":
            q_text += TEMPORAL_SUFFIX
        elif question.get("mc_a"):  # category 5 as the official multiple choice
            q_text += CAT5_SUFFIX.format(question["mc_a"], question["mc_b"])
            template += "_cat5"
        return fill(load_prompt(template), speaker_a=question.get("speaker_a") or "Speaker A",
                    speaker_b=question.get("speaker_b") or "Speaker B", context="\n\n".join(context),
                    question=q_text)

    def prepare_questions(self, questions: Any, options: Any) -> tuple[Any, tuple[str, ...]]:
        """The questions frame as this run asks it, and the categories it excludes.

        ``options`` is the MemShot config: with ``locomo_adversarial: multiple-choice`` category 5
        is asked as the official multiple choice (and no longer excluded).
        """
        excluded = tuple(options.exclude_categories)
        if options.locomo_adversarial == "multiple-choice":
            return adversarial_choices(questions), tuple(c for c in excluded if c != "adversarial")
        return questions, excluded

    def postprocess_answer(self, question: dict[str, Any], prediction: str) -> str:
        """A multiple-choice (category 5) reply mapped to its option's text; others unchanged."""
        if question.get("mc_a"):
            return cat5_answer(prediction, {"a": question["mc_a"], "b": question["mc_b"]})
        return prediction

    def judge_prompt(self, question: dict[str, Any], prediction: str) -> str:
        from vismem.memory.dialogue.scoring import fill, load_prompt

        return fill(load_prompt("judge_locomo"), question=question["question"],
                    gold_answer=question.get("answer") or "", generated_answer=prediction)

    def parse_judge(self, reply: str | None) -> tuple[bool | None, str, str]:
        from vismem.memory.dialogue.scoring import parse_locomo_judge

        return parse_locomo_judge(reply)

    def f1(self, prediction: Any, gold: Any, category: Any) -> float:
        from vismem.memory.dialogue.scoring import locomo_f1

        return locomo_f1(prediction, gold, category)
