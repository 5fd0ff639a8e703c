"""Dialogue benchmarks behind one protocol and one registry: adding a dataset touches one file.

A :class:`DialogueDataset` bundles everything the MemShot pipeline needs to know about a
benchmark: where its file lives by default, how to load it (the typed ``vismem.env.dialogue`` model),
its answer prompt, its judge prompt and reply parser, its F1 rule, how a turn-pair taller than a
shot is handled, and the column order of the paper's tables. A new dataset is one module of this
package (``@DATASETS.register("name")``; the registry finds it) plus, where its file format is
new, its loader in ``vismem.env.dialogue``; a run names its file with ``memshot.dataset_path``.

Optional members, read with ``getattr`` so a dataset without them keeps working:
``judge_max_tokens`` (the judge's max_tokens by default; 256 otherwise), ``parse_judge_strict``
(the stricter reply parser behind ``memshot.judge_parse: strict``) and
``postprocess_answer(question, prediction)`` (e.g. LoCoMo's multiple-choice letters → option) and
``prepare_questions(questions, options) -> (questions, excluded categories)`` (how the run's
MemShot options ask its questions: LoCoMo's multiple-choice category 5);
``stream(path, limit=...)`` (conversations one at a time, for files too large to hold whole).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Protocol, Sequence, runtime_checkable

from vismem.core.registry import Registry

JudgeVerdict = tuple["bool | None", str, str]


@runtime_checkable
class DialogueDataset(Protocol):
    """One long-term dialogue benchmark."""

    name: str
    #: Default file relative to the run's data_dir (None: the user must give a path).
    default_path: str | None
    #: A turn-pair taller than a shot's max height: ``grow`` the shot or raise (``error``).
    oversize: Literal["grow", "error"]
    #: Scored question categories in the paper's table column order.
    columns: tuple[str, ...]

    def load(self, path: str | Path, *, limit: int | None = None) -> list[Any]:
        """The conversations (``vismem.env.dialogue.Conversation``) in ``path``; ``limit`` keeps the first N."""
        ...

    def answer_prompt(self, question: dict[str, Any], context: Sequence[str], *, mode: str) -> str:
        """The answering VLM's user text (``mode``: ``shots`` — images carry the memory — or ``text``)."""
        ...

    def judge_prompt(self, question: dict[str, Any], prediction: str) -> str:
        """The judge's user text for one answer to ``question`` (a questions-frame row)."""
        ...

    def parse_judge(self, reply: str | None) -> JudgeVerdict:
        """``(label, status, reason)`` from a judge reply; never raises."""
        ...

    def f1(self, prediction: Any, gold: Any, category: Any) -> float:
        """The benchmark's token F1 of one answer (``category``: the question's category code)."""
        ...


#: The registry of dialogue benchmarks.
DATASETS: Registry[DialogueDataset] = Registry(
    "dataset", package="vismem.memory.dialogue.datasets")


def get_dataset(name: str) -> DialogueDataset:
    """The registered dataset ``name`` (ConfigError naming the known ones otherwise)."""
    return DATASETS.build(name, field="dataset")


def dataset_names() -> list[str]:
    """Every registered dataset name."""
    return DATASETS.names()
