"""One typed model for long-term dialogue benchmarks (LoCoMo, LongMemEval).

Frozen dataclasses rather than pydantic: the renderer touches every turn of every session in a
hot loop and the objects are shipped to Ray workers, so cheap construction and attribute access
matter more than validation (the loaders validate the raw JSON themselves and raise
``DataError`` naming file, record and field).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

#: A dataset name (``vismem.memory.dialogue.datasets`` registers the benchmarks).
Dataset = str

#: LoCoMo's numeric QA categories. The mapping is the one the MemShot tables imply: Table 1's
#: Open-Domain accuracies are multiples of 1/96 (category 3 has 96 questions), Multi-Hop of
#: 1/282 (category 1), Temporal of 1/321 (category 2), Single-Hop of 1/841 (category 4).
LOCOMO_CATEGORIES: dict[int, str] = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
#: Column order of the paper's LoCoMo tables (adversarial questions are not in them).
LOCOMO_COLUMNS: tuple[str, ...] = ("multi-hop", "temporal", "open-domain", "single-hop")
#: LongMemEval question types in the column order of the paper's Tables 2 and 4.
LONGMEMEVAL_COLUMNS: tuple[str, ...] = (
    "single-session-user", "single-session-assistant", "single-session-preference",
    "multi-session", "knowledge-update", "temporal-reasoning",
)
#: Column headers exactly as the paper prints them.
CATEGORY_LABELS: dict[str, str] = {
    "multi-hop": "Multi-Hop", "temporal": "Temporal", "open-domain": "Open-Domain",
    "single-hop": "Single-Hop", "adversarial": "Adversarial",
    "single-session-user": "SS-User", "single-session-assistant": "SS-Asst",
    "single-session-preference": "SS-pref", "multi-session": "Multi-S",
    "knowledge-update": "Know. Upd", "temporal-reasoning": "Temp. Reas",
}


@dataclass(frozen=True, slots=True)
class Turn:
    """One utterance. ``dia_id`` is unique within its conversation."""

    dia_id: str
    speaker: str
    text: str
    image_caption: str | None = None  # LoCoMo ``blip_caption`` of a shared photo
    role: str | None = None  # LongMemEval ``user``/``assistant``; None for LoCoMo
    has_answer: bool = False  # LongMemEval marks evidence turns; LoCoMo uses question evidence


@dataclass(frozen=True, slots=True)
class Session:
    """A dated session of consecutive turns."""

    session_id: str  # LoCoMo ``session_3``; LongMemEval haystack session id
    index: int  # 1-based position within the conversation
    date_text: str  # the timestamp exactly as the dataset writes it
    date: datetime | None
    turns: tuple[Turn, ...]

    @property
    def label(self) -> str:
        """Header label, e.g. ``Session 03`` (the paper's example header)."""
        return f"Session {self.index:02d}"


@dataclass(frozen=True, slots=True)
class Question:
    """A QA item with its gold answer and evidence."""

    question_id: str
    question: str
    answer: str | None  # None only for LoCoMo adversarial items without one
    category: str  # canonical name: a key of CATEGORY_LABELS
    category_code: str  # raw dataset code ("1".."5" or the LongMemEval question_type)
    evidence: tuple[str, ...]  # dia_ids (parsed, normalised, existing in the conversation)
    evidence_sessions: tuple[str, ...]  # session_ids holding the evidence
    evidence_unparsed: tuple[str, ...] = ()  # raw evidence strings that could not be resolved
    adversarial_answer: str | None = None
    abstention: bool = False  # LongMemEval ``_abs`` questions
    question_date: datetime | None = None
    question_date_text: str | None = None  # the question date exactly as the dataset writes it (LongMemEval)
    scored: bool = True  # counted in the paper's tables (False for LoCoMo adversarial)

    @property
    def category_label(self) -> str:
        return CATEGORY_LABELS.get(self.category, self.category)


@dataclass(frozen=True, slots=True)
class Conversation:
    """A multi-session dialogue and the questions asked about it.

    ``speakers`` is ``(left, right)``: the renderer puts the first speaker's bubbles on the left
    and the second's on the right in every shot of the conversation.
    """

    dataset: Dataset
    conversation_id: str
    speakers: tuple[str, str]
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...] = ()
    source: str = field(default="", compare=False)  # file it was read from

    @property
    def n_turns(self) -> int:
        return sum(len(s.turns) for s in self.sessions)

    def session(self, session_id: str) -> Session:
        for s in self.sessions:
            if s.session_id == session_id:
                return s
        raise KeyError(session_id)

    def dia_index(self) -> dict[str, str]:
        """dia_id → session_id."""
        return {t.dia_id: s.session_id for s in self.sessions for t in s.turns}


# -- (de)serialisation for Ray rows and caches ---------------------------------------------------

def session_to_dict(s: Session) -> dict[str, Any]:
    d = asdict(s)
    d["date"] = s.date.isoformat() if s.date else None
    return d


def session_from_dict(d: dict[str, Any]) -> Session:
    return Session(
        session_id=d["session_id"], index=int(d["index"]), date_text=d["date_text"],
        date=datetime.fromisoformat(d["date"]) if d.get("date") else None,
        turns=tuple(Turn(**t) for t in d["turns"]),
    )
