"""LongMemEval (xiaowu0162/LongMemEval): one question per long haystack of chat sessions.

Not shipped (model hub only): give its path (``memshot.dataset_path``). Prompts follow the
official ``evaluate_qa.py``: one yes/no judge template per question type, and the abstention one
for ids ending in ``_abs``; the reply is read as the official script reads it (``'yes' in
reply.lower()``, ``max_tokens=10``), the stricter yes/no parse being an option. Shots of an oversized turn-pair grow (MemShot paper A.3), to at most 4 x max_height; a taller pair is split over several shots (``memory/dialogue/pack.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from vismem.memory.dialogue.datasets import DATASETS

#: LongMemEval question types → the official judge template (``evaluate_qa.py``).
JUDGE_PROMPTS = {
    "single-session-user": "judge_longmemeval_default",
    "single-session-assistant": "judge_longmemeval_default",
    "multi-session": "judge_longmemeval_default",
    "temporal-reasoning": "judge_longmemeval_temporal",
    "knowledge-update": "judge_longmemeval_knowledge_update",
    "single-session-preference": "judge_longmemeval_preference",
}


@DATASETS.register("longmemeval")
class LongMemEval:
    """The LongMemEval benchmark (``longmemeval_s`` / ``_m`` / ``_oracle`` files)."""

    name = "longmemeval"
    default_path = None
    oversize = "grow"
    judge_max_tokens = 10  # the official evaluate_qa.py: max_tokens=10, a yes/no verdict

    @property
    def columns(self) -> tuple[str, ...]:
        from vismem.env.dialogue.model import LONGMEMEVAL_COLUMNS

        return LONGMEMEVAL_COLUMNS

    def load(self, path: str | Path, *, limit: int | None = None) -> list[Any]:
        """All conversations (a list with ``duplicate_sessions``: identical repeated sessions kept once)."""
        from vismem.env.dialogue.longmemeval import load_longmemeval

        return load_longmemeval(path, limit=limit)

    def stream(self, path: str | Path, *, limit: int | None = None) -> Any:
        """The conversations of ``path`` one at a time (a ``LongMemEvalReader``: iterate it, then
        read its ``duplicates``); for LongMemEval_M (~2.7 GB), whose records never all fit in memory."""
        from vismem.env.dialogue.longmemeval import LongMemEvalReader

        return LongMemEvalReader(path, limit=limit)

    def answer_prompt(self, question: dict[str, Any], context: Sequence[str], *, mode: str) -> str:
        from vismem.memory.dialogue.scoring import fill, load_prompt

        return fill(load_prompt(f"answer_longmemeval_{mode}"), context="\n\n".join(context),
                    question_date=question.get("question_date") or "", question=str(question["question"]))

    def judge_prompt(self, question: dict[str, Any], prediction: str) -> str:
        from vismem.memory.dialogue.scoring import fill, load_prompt

        qid = str(question.get("question_id") or "")
        if "_abs" in qid:
            name = "judge_longmemeval_abstention"
        else:
            qtype = str(question.get("category_code") or question.get("category"))
            if qtype not in JUDGE_PROMPTS:
                raise ValueError(f"LongMemEval question type {qtype!r} has no judge prompt; "
                                 f"known: {', '.join(JUDGE_PROMPTS)}")
            name = JUDGE_PROMPTS[qtype]
        return fill(load_prompt(name), question=question["question"], answer=question.get("answer") or "",
                    response=prediction)

    def parse_judge(self, reply: str | None) -> tuple[bool | None, str, str]:
        """The official rule, ``'yes' in reply.lower()`` (an empty reply is a judge failure)."""
        from vismem.memory.dialogue.scoring import parse_yes_official

        return parse_yes_official(reply)

    def parse_judge_strict(self, reply: str | None) -> tuple[bool | None, str, str]:
        """The word yes or no, both or neither a judge failure (``memshot.judge_parse: strict``)."""
        from vismem.memory.dialogue.scoring import parse_yes_no_judge

        return parse_yes_no_judge(reply)

    def f1(self, prediction: Any, gold: Any, category: Any) -> float:
        # No per-category rule: plain token F1 over question types.
        from vismem.memory.dialogue.scoring import token_f1

        return token_f1(prediction or "", gold)
