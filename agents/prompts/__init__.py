"""The DMV-Bench agent's dialogue surface, kept verbatim as data files beside this module.

Texts follow the official runner (``dualmem/agent/dmvbench_live_runner.py`` and
``f2_encode_agent.py``) and the paper's appendix:

- ``system.txt``: the system prompt, sent once per session. Two stale parts of the official text
  are corrected (and only those): the action line listed four styles and ``N=0..3``; the site has
  ten styles and ten cards per collection, so it lists all ten and says ``N=0..9``.
- ``session_task.txt``: the encoding session's task (first user turn), ``{cat}`` = category noun,
  ``{slug}`` = category slug. One more correction: the official text fills the URL hint
  ``navigate("/collection/{cat}-<style>")`` with the noun too, which sends the agent to
  ``/collection/plant pot-<style>`` (a 404) for two of the ten categories; the hint uses the slug.
- ``subtask.txt``: the per-step subtask with browsing progress.
- ``step.txt``: the per-step user message.
- ``nudge.txt``: sent after the agent terminates during encoding (official behaviour).
- ``invalid.txt``: ours, not official: tells the agent its last reply had no valid action (the
  official runner only logs ``noop`` in the history).
- ``recall_task.txt`` / ``recall_subtask.txt``: a recall probe's first user turn and subtask,
  verbatim from the official probe runner (``f2_session_runner.py:273-383``; the paper's appendix
  paraphrases the first turn differently — the code's string is what produced its numbers).
- ``system_official.txt`` / ``session_task_official.txt``: the official texts byte for byte
  (four styles and ``N=0..3``; the URL hint filled with the category noun).

Two protocols (:data:`PROTOCOLS`) pick among them: ``fixed`` (the default; the corrected texts and
the invalid-action notice) and ``official`` (the published prompts; an unparseable reply enters
the history only as ``noop``, as in the official runner). The paper preset runs ``official``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from vismem.core.errors import ConfigError

#: History longer than this is elided (the official runaway cap: first turn + last 120).
MAX_HISTORY_TURNS = 120

#: Shown in the memory block when a memory hook retrieved nothing (paper appendix).
NO_MEMORY_TEXT = "(no memory retrieved this step)"


@lru_cache(maxsize=None)
def load(name: str) -> str:
    """The raw text of prompt file ``name`` (without ``.txt``)."""
    return resources.files(__name__).joinpath(f"{name}.txt").read_text(encoding="utf-8")


@dataclass(frozen=True)
class Protocol:
    """One dialogue protocol: which system prompt and session task it sends, and whether a reply
    without a valid action gets an extra user turn saying so (``invalid_notice``)."""

    name: str
    system: str
    session_task: str
    invalid_notice: bool


#: ``fixed``: the corrected texts, and the agent is told when its reply had no valid action.
#: ``official``: the official runner's texts and rules (``dmvbench_live_runner.py``,
#: ``f2_encode_agent.py``), needed to reproduce the published numbers.
PROTOCOLS: dict[str, Protocol] = {
    "fixed": Protocol("fixed", "system", "session_task", invalid_notice=True),
    "official": Protocol("official", "system_official", "session_task_official", invalid_notice=False),
}


def protocol(name: str) -> Protocol:
    """The protocol called ``name``; a ConfigError names the known ones."""
    try:
        return PROTOCOLS[name]
    except KeyError:
        raise ConfigError(f"unknown dialogue protocol {name!r}; known: {sorted(PROTOCOLS)}") from None


def prompt_set(kind: str = "encode", protocol_name: str = "fixed") -> tuple[str, ...]:
    """The prompt files a ``kind`` (``encode`` or ``recall``) of episode reads under a protocol."""
    p = protocol(protocol_name)
    if kind == "encode":
        names = ["nudge", p.session_task, "step", "subtask", p.system] + (["invalid"] if p.invalid_notice else [])
    elif kind == "recall":
        names = ["recall_subtask", "recall_task", "step", p.system]
    else:
        raise ValueError(f"unknown prompt kind {kind!r} (encode or recall)")
    return tuple(sorted(names))


@lru_cache(maxsize=None)
def fingerprint(kind: str = "encode", protocol_name: str = "fixed") -> str:
    """sha256 (16 hex) over the prompt files one kind of episode (``encode`` or ``recall``) reads
    under a protocol: part of its cache key, so editing a prompt re-runs instead of reusing
    results produced under the old text (and editing a recall prompt never invalidates
    trajectories). File names are hashed too, so the two protocols never share a key."""
    import hashlib

    h = hashlib.sha256()
    for name in prompt_set(kind, protocol_name):
        f = resources.files(__name__).joinpath(f"{name}.txt")
        h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def system_prompt(protocol_name: str = "fixed") -> str:
    """The system prompt of a protocol (``fixed``: the corrected official text)."""
    return load(protocol(protocol_name).system)


def category_noun(cat: str) -> str:
    """The noun the official prompts use for a category slug (``plant_pot`` → ``plant pot``)."""
    return {"plant_pot": "plant pot", "wall_art": "wall-art piece"}.get(cat, cat.replace("_", " "))


def session_task(cat: str, protocol_name: str = "fixed") -> str:
    """The encoding session's task text for category slug ``cat`` (the ``official`` text fills
    its URL hint with the noun, the ``fixed`` one with the slug)."""
    return load(protocol(protocol_name).session_task).format(cat=category_noun(cat), slug=cat)


def subtask(cat: str, step: int, cap: int, n_products: int, n_styles: int) -> str:
    """The per-step encoding subtask with progress so far."""
    return load("subtask").format(cat=category_noun(cat), step=step, cap=cap,
                                  n_products=n_products, n_styles=n_styles)


def nudge(cat: str) -> str:
    """The user turn added when the agent emits a terminal action during encoding."""
    return load("nudge").format(cat=category_noun(cat))


def invalid_notice(reason: str) -> str:
    """The user turn added after a reply without a valid action."""
    return load("invalid").format(reason=reason)


@dataclass(frozen=True)
class Turn:
    """One line of the in-session conversation: ``role`` is ``user`` or ``agent``."""

    role: str
    text: str


def format_history(turns: list[Turn] | tuple[Turn, ...], max_turns: int = MAX_HISTORY_TURNS) -> str:
    """The ``[Conversation so far]`` block: every turn, or the first + last ``max_turns``."""
    if not turns:
        return "(no history yet)"
    turns = list(turns)
    elided = 0
    if len(turns) > max_turns + 1:
        shown = [turns[0]] + turns[-max_turns:]
        elided = len(turns) - len(shown)
    else:
        shown = turns
    out = []
    for i, t in enumerate(shown):
        prefix = {"user": "User", "agent": "Agent"}.get(t.role, t.role)
        out.append(f"  {prefix}: {t.text}")
        if elided and i == 0:
            out.append(f"  ... ({elided} earlier turns elided) ...")
    return "\n".join(out)


def step_message(*, step: int, cap: int, subtask_text: str, history: list[Turn] | tuple[Turn, ...],
                 memory_text: str, url: str, title: str, description: str) -> str:
    """The per-step user message (``Step k/cap. [Subtask] ... Reply with one Thought + one Action.``)."""
    return load("step").format(step=step, cap=cap, subtask=subtask_text, history=format_history(history),
                               memory=memory_text, url=url, title=title, description=description)


def recall_task(cue: str) -> str:
    """A recall probe's first user turn (official)."""
    return load("recall_task").format(cue=cue)


def recall_subtask(cue: str) -> str:
    """A recall probe's subtask line (official)."""
    return load("recall_subtask").format(cue=cue)


def compact_action(action_type: str, url: str | None) -> str:
    """The compact history line the official runner keeps per agent step: ``{type} {url}``."""
    return f"{action_type} {url or ''}".strip()
