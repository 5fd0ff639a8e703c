"""Long-term dialogue benchmarks (LoCoMo, LongMemEval) as one typed ``Conversation`` model.

The loaders live here (the data is part of the world agents meet); everything else a pipeline
needs to know about a benchmark (prompts, judge, F1, defaults) is its entry in
``vismem.memory.dialogue.datasets``, which calls these loaders.
"""

from __future__ import annotations

from vismem.env.dialogue.locomo import load_locomo, parse_evidence
from vismem.env.dialogue.longmemeval import DuplicateSessionError, LongMemEvalReader, load_longmemeval
from vismem.env.dialogue.model import (
    CATEGORY_LABELS,
    LOCOMO_CATEGORIES,
    LOCOMO_COLUMNS,
    LONGMEMEVAL_COLUMNS,
    Conversation,
    Dataset,
    Question,
    Session,
    Turn,
    session_from_dict,
    session_to_dict,
)

LOCOMO_RELPATH = "locomo/locomo10.json"  # relative to the run's data_dir

__all__ = [
    "CATEGORY_LABELS", "LOCOMO_CATEGORIES", "LOCOMO_COLUMNS", "LONGMEMEVAL_COLUMNS", "LOCOMO_RELPATH",
    "Conversation", "Dataset", "DuplicateSessionError", "LongMemEvalReader", "Question", "Session", "Turn", "load_locomo",
    "load_longmemeval", "parse_evidence", "session_from_dict", "session_to_dict",
]
