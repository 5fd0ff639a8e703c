"""The recall probe episode: a ReAct agent with a read-only memory tries to return to a product.

Official ``f2_session_runner.py:273-383`` (spec §3.2):

1. the episode starts at ``/`` (a fresh page context here; the official runner reuses one page,
   whose ``localStorage`` the agent never sees);
2. the first user turn is ``Earlier you saw a product that had a {cue} on it. Take me back to
   that exact product.``; the subtask ``Recall: go to the product with the {cue}.``;
3. at most 8 steps; at each, the memory hook retrieves for the page the step starts on (the
   query ``product with {cue} CURRENT: {url}``; fetch 10, dedupe by product, keep 5) and writes
   the memory block; the step message is the encoding one (``step.txt``) with Title and
   Description = the URL; the images are the current page's product image, then the memory
   images in reference order;
4. the reply is parsed by the shop's parser; the history keeps the **full** reply (not the
   compact line encoding keeps);
5. ``add_to_wishlist`` and ``done`` end the episode and are not executed (officially
   ``add_to_wishlist`` is a no-op: its hash is parsed only from click texts); anything else runs;
6. **success**: the last ``/product/`` URL the page was on after an executed step equals the
   target (``add_to_wishlist`` is not required).

Where we differ, and why: a failed model call is recorded as a failed step and ends the episode
like the official substituted ``Action: done`` (the text sent to the history is the same); a
reply without a valid action is recorded ``invalid`` and the episode goes on (official: a no-op).
Every step is recorded (URL, reply, action, recalled products) for the trajectory viewer.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from vismem.agents import prompts
from vismem.agents.probes import Probe
from vismem.agents.records import product_hash
from vismem.core.failures import shorten
from vismem.serve.vlm import Message

if TYPE_CHECKING:
    from vismem.agents.memory import MemoryHook
    from vismem.env.pageenv import PageEnv

#: Recall steps per probe (official ``recall_steps=8``).
MAX_RECALL_STEPS = 8
START_URL = "/"

#: Characters of a step's memory block kept in its record (the viewer shows it; the block sent to
#: the model is never cut). Enough for the official 5 items with their captions.
MEMORY_TEXT_CAP = 4000

#: ``failure`` labels (ours; the official code records only correct / not).
FAILURES = ("done", "model_error", "step_cap", "wishlist_wrong", "wrong_product", "no_product", "env_error")


@dataclass
class RecallStep:
    """One probe step as the viewer shows it."""

    step: int
    url: str
    status: str                  # ok | invalid | failed
    action_type: str | None
    action_arg: str | None
    reply: str | None
    error: str | None
    recalled: list[str]          # product hashes in the memory block, best first
    n_images: int
    latency_s: float = 0.0
    memory_text: str | None = None  # the memory block of this step, cut at MEMORY_TEXT_CAP characters


@dataclass
class RecallResult:
    """A finished probe episode."""

    probe: Probe
    final_url: str | None
    correct: bool
    steps: int
    vlm_calls: int
    failure: str | None
    terminated_by: str | None
    log: list[RecallStep] = field(default_factory=list)
    wall_s: float = 0.0
    #: Per step, per recalled item: channel -> score (kept apart from ``log`` so the step log's
    #: bytes stay as they were; empty lists where the memory hook reports none).
    scores: list[list[dict[str, Any]]] = field(default_factory=list)

    def row(self) -> dict[str, Any]:
        """The JSON-able result (the probe's fields, the outcome, and the step log)."""
        return {**asdict(self.probe), "target_url": self.probe.target_url, "cue": self.probe.cue,
                "final_url": self.final_url, "correct": self.correct, "steps": self.steps,
                "vlm_calls": self.vlm_calls, "failure": self.failure, "terminated_by": self.terminated_by,
                "log": [asdict(s) for s in self.log], "scores": self.scores}


def _failure(final_url: str | None, target: str, terminated_by: str | None, last_status: str | None) -> str | None:
    if final_url == target:
        return None
    if last_status == "failed":
        return "model_error"
    if terminated_by == "add_to_wishlist":
        return "wishlist_wrong"
    if terminated_by == "done":
        return "done"
    if final_url is None:
        return "no_product"
    return "step_cap" if terminated_by is None else "wrong_product"


def run_probe(probe: Probe, *, vlm: Any, env: "PageEnv", memory: "MemoryHook", max_steps: int = MAX_RECALL_STEPS,
              max_tokens: int = 512, temperature: float = 0.0, protocol: str = "fixed") -> RecallResult:
    """Run one probe episode against ``env`` with ``memory`` (read-only) and return its result.

    ``protocol`` (``fixed`` or ``official``, :data:`vismem.agents.prompts.PROTOCOLS`) picks the
    system prompt; the recall dialogue is otherwise the same under both."""
    from vismem.env.actions import parse_action

    t0 = time.perf_counter()
    cue = probe.cue
    subtask = prompts.recall_subtask(cue)
    history = [prompts.Turn("user", prompts.recall_task(cue))]
    system = prompts.system_prompt(protocol)
    log: list[RecallStep] = []
    final_url: str | None = None
    terminated_by: str | None = None
    try:
        current = env.reset(START_URL)
    except Exception as e:  # noqa: BLE001 - no page, no episode: recorded, never fatal
        return RecallResult(probe, None, False, 0, 0, "env_error", None,
                            [RecallStep(0, "", "failed", None, None, None, f"reset failed: {e}"[:500], [], 0)],
                            time.perf_counter() - t0)
    calls = 0
    scores: list[list[dict[str, Any]]] = []
    for step in range(1, max_steps + 1):
        url = str(getattr(current, "url", "") or "").split("?", 1)[0]
        mem = memory.context(spec=None, step=step, url=url, subtask=subtask)
        recalled = [i.slug for i in getattr(memory, "last_items", [])]
        scores.append(list(getattr(memory, "last_scores", None) or []))
        image = getattr(current, "image", None)
        images = ((image,) if image else ()) + tuple(mem.images)
        text = prompts.step_message(step=step, cap=max_steps, subtask_text=subtask, history=history,
                                    memory_text=mem.text, url=url, title=url, description=url)
        rec = RecallStep(step, url, "ok", None, None, None, None, recalled, len(images),
                         memory_text=shorten(mem.text, MEMORY_TEXT_CAP, "...") if mem.text else None)
        messages = [Message("system", system), Message("user", text, images=images)]
        calls += 1
        t1 = time.perf_counter()
        try:
            reply = vlm.chat(messages, max_tokens=max_tokens, temperature=temperature).text
        except Exception as e:  # noqa: BLE001 - the official runner substitutes "Action: done"
            rec.status, rec.error = "failed", f"{getattr(e, 'reason', type(e).__name__)}: {e}"[:500]
            rec.latency_s = time.perf_counter() - t1
            rec.reply = f"Thought: vlm error\nAction: done   # {e}"[:500]
            log.append(rec)
            history.append(prompts.Turn("agent", rec.reply))
            terminated_by = "done"
            break
        rec.latency_s = time.perf_counter() - t1
        rec.reply = reply
        action = parse_action(reply)
        rec.action_type = action.type
        rec.action_arg = action.url or (None if action.index is None else str(action.index)) or action.url_hash
        history.append(prompts.Turn("agent", reply))
        if action.type == "invalid":
            rec.status, rec.error = "invalid", f"no valid action in the reply (parsed from {action.raw[:80]!r})"
        elif action.terminal:
            terminated_by = action.type
        else:
            try:
                res = env.step(action)
                current = res.observation
                if not res.ok:
                    rec.error = res.error
            except Exception as e:  # noqa: BLE001 - a dead page is this step's error
                rec.error = f"{type(e).__name__}: {e}"[:500]
                current = env.observe()
        after = str(getattr(current, "url", "") or "").split("?", 1)[0]
        if product_hash(after):
            final_url = after
        log.append(rec)
        if terminated_by is not None:
            break
    correct = final_url is not None and final_url == probe.target_url
    last = log[-1].status if log else None
    return RecallResult(probe, final_url, correct, len(log), calls,
                        _failure(final_url, probe.target_url, terminated_by, last), terminated_by, log,
                        time.perf_counter() - t0, scores)
