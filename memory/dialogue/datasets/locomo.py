"""LoCoMo (snap-research/locomo, CC BY-NC 4.0): ten long conversations, QA with evidence turns.

Prompts and F1 follow the official ``task_eval`` scripts (see ``memory/dialogue/prompts/``);
the judge is the mem0-style CORRECT/WRONG prompt the MemShot paper uses.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from memory.dialogue.datasets import DATASETS

#: Official LoCoMo suffix for temporal (category 2) questions (``evaluate_gpts.py``).
TEMPORAL_SUFFIX = " Use DATE of CONVERSATION to answer with an approximate date."


@DATASETS.register("locomo")
class LoCoMo:
    """The LoCoMo benchmark (shipped in ``data_dir/locomo/``)."""

    name = "locomo"
    default_path = "locomo/locomo10.json"
    oversize = "error"  # no LoCoMo turn-pair exceeds a 768 px shot; one that did is a renderer bug

    @property
    def columns(self) -> tuple[str, ...]:
        from env.dialogue.model import LOCOMO_COLUMNS

        return LOCOMO_COLUMNS

    def load(self, path: str | Path, *, limit: int | None = None) -> list[Any]:
        from env.dialogue.locomo import load_locomo

        convs = load_locomo(path)
        return convs if limit is None else convs[:limit]

    def answer_prompt(self, question: dict[str, Any], context: Sequence[str], *, mode: str) -> str:
        from memory.dialogue.scoring import fill, load_prompt

        q_text = str(question["question"])
        if str(question.get("category")) == "temporal" or str(question.get("category_code")) == "2":
            q_text += TEMPORAL_SUFFIX
        return fill(load_prompt(f"answer_locomo_{mode}"), speaker_a=question.get("speaker_a") or "Speaker A",
                    speaker_b=question.get("speaker_b") or "Speaker B", context="\n\n".join(context),
                    question=q_text)

    def judge_prompt(self, question: dict[str, Any], prediction: str) -> str:
        from memory.dialogue.scoring import fill, load_prompt

        return fill(load_prompt("judge_locomo"), question=question["question"],
                    gold_answer=question.get("answer") or "", generated_answer=prediction)

    def parse_judge(self, reply: str | None) -> tuple[bool | None, str, str]:
        from memory.dialogue.scoring import parse_locomo_judge

        return parse_locomo_judge(reply)

    def f1(self, prediction: Any, gold: Any, category: Any) -> float:
        from memory.dialogue.scoring import locomo_f1

        return locomo_f1(prediction, gold, category)
