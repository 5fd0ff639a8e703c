"""Long-term dialogue benchmarks (LoCoMo, LongMemEval) as one typed ``Conversation`` model."""

from __future__ import annotations

from pathlib import Path

from env.dialogue.locomo import load_locomo, parse_evidence
from env.dialogue.longmemeval import load_longmemeval
from env.dialogue.model import (
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
    table_columns,
)

LOCOMO_RELPATH = "locomo/locomo10.json"  # relative to the run's data_dir


def load_dataset(dataset: Dataset, path: str | Path, *, limit: int | None = None) -> list[Conversation]:
    """Load ``dataset`` from ``path``; ``limit`` keeps the first N conversations / records."""
    if dataset == "locomo":
        convs = load_locomo(path)
        return convs if limit is None else convs[:limit]
    if dataset == "longmemeval":
        return load_longmemeval(path, limit=limit)
    raise ValueError(f"unknown dataset {dataset!r}")


__all__ = [
    "CATEGORY_LABELS", "LOCOMO_CATEGORIES", "LOCOMO_COLUMNS", "LONGMEMEVAL_COLUMNS", "LOCOMO_RELPATH",
    "Conversation", "Dataset", "Question", "Session", "Turn", "load_dataset", "load_locomo",
    "load_longmemeval", "parse_evidence", "session_from_dict", "session_to_dict", "table_columns",
]
