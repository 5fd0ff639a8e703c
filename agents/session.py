"""The encoding session: a memoryless ReAct agent browsing one category for ``n_steps`` steps.

This follows the official ``run_encode_session`` (``dualmem/agent/f2_encode_agent.py``):

1. a fresh browser context opens ``/category/<cat>`` (the context wipe between sessions);
2. the conversation starts with the session task; at every step the page observed at the start
   of the step is recorded (a *visit* when it is a product page), the subtask line reports the
   progress so far, and the agent gets ``[system, user(step message, images)]``: the
   observation's image first, then memory images in reference order;
3. the reply is parsed by the shop's parser (``vismem.env.actions``); the history keeps the compact
   ``{action} {url}`` line of every step;
4. a terminal action (``done``/``add_to_wishlist``) is not executed: the agent is told
   "Don't terminate — keep browsing ..." and the page goes back to the category listing;
5. everything else is executed in the browser; execution errors are recorded, never fatal.

Where the ``fixed`` protocol (the default) differs from the official loop, and why (the
``official`` protocol, ``SessionOptions.protocol``, sends the official texts and drops the notice):

- the system prompt lists all ten styles and ``N=0..9`` and the task's URL hint uses the slug
  (``vismem.agents.prompts``);
- a reply without a valid action is recorded as ``invalid`` with its raw text, and the next step
  tells the agent so (the official runner only logs ``noop``; both protocols record ``invalid``);
- a failed model call (``VLMError`` after retries, or any backend exception) is recorded as
  ``failed``; as in the official loop (which substitutes ``Action: done``) it is then handled as a
  terminal action: nudge and back to the category;
- the page text the agent sees is the URL for title and description, as in the official f2
  observation (``_f2_obs``), unless ``page_text="page"`` asks for the storefront's own title and
  description; the step record keeps the real page title either way.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Literal

from vismem.agents import prompts
from vismem.agents.chains import SessionSpec
from vismem.agents.memory import MemoryHook
from vismem.agents.records import SessionResult, StepRecord, product_hash, style_of_hash
from vismem.core.failures import REPLY_CAP, cap_text
from vismem.env.actions import Action, navigate, parse_action
from vismem.serve.vlm import Message

if TYPE_CHECKING:
    from vismem.env.pageenv import PageEnv

_THOUGHT_RE = re.compile(r"thought\s*:\s*(.+)", re.I)


@dataclass(frozen=True)
class SessionOptions:
    """Protocol knobs of one session (all part of the trajectory cache key)."""

    page_text: Literal["url", "page"] = "url"
    max_tokens: int = 512
    temperature: float = 0.0
    protocol: Literal["official", "fixed"] = "fixed"   # prompt texts and the invalid-reply rule


BlobSink = Callable[[bytes], str]


def extract_thought(reply: str) -> str | None:
    """The last ``Thought:`` line of a reply (first line of it), if any."""
    found = _THOUGHT_RE.findall(reply or "")
    return found[-1].strip() if found else None


def _obs_fields(obs: Any) -> tuple[str, str, str, bytes | None]:
    return (str(getattr(obs, "url", "") or ""), str(getattr(obs, "title", "") or ""),
            str(getattr(obs, "description", "") or ""), getattr(obs, "image", None) or None)


def _action_arg(action: Action) -> str | None:
    if action.type == "click_index":
        return None if action.index is None else str(action.index)
    if action.type in ("navigate", "click_product"):
        return action.url
    return action.url_hash


class _Page:
    """The page as the last env call left it (``current`` None: ask the env); a failed env call
    becomes an error message for the step record, never an exception."""

    def __init__(self, env: PageEnv, start_url: str) -> None:
        self.env, self.current = env, None
        self.pending: str | None = None  # an error the next step records
        try:
            self.current = env.reset(start_url)
        except Exception as e:  # noqa: BLE001 - the first step records it and the loop goes on
            self.pending = f"reset failed: {type(e).__name__}: {e}"[:2000]

    def observe(self) -> tuple[tuple[str, str, str, bytes | None], str | None]:
        """``(url, title, description, image)`` of the page, and the error this step records."""
        error, self.pending = self.pending, None
        if self.current is None:
            try:
                self.current = self.env.observe()
            except Exception as e:  # noqa: BLE001
                error = error or f"observe failed: {type(e).__name__}: {e}"[:2000]
        return (_obs_fields(self.current) if self.current is not None else ("", "", "", None)), error

    def execute(self, action: Action) -> str | None:
        """Run ``action``; the error message when it failed or was refused."""
        try:
            res = self.env.step(action)
        except Exception as e:  # noqa: BLE001 - a dead page is recorded, the session goes on
            self.current = None
            return f"{type(e).__name__}: {e}"[:2000]
        self.current = getattr(res, "observation", None)
        return None if getattr(res, "ok", True) else (getattr(res, "error", None) or "action failed")


def _read_reply(rec: StepRecord, res: Any) -> Action:
    """Fill ``rec`` from a model reply (latency, tokens, reply, thought, action) and return the action."""
    rec.latency_s = res.latency_s
    rec.prompt_tokens, rec.completion_tokens = res.prompt_tokens, res.completion_tokens
    # The action is parsed from the whole reply; what is stored is cut (a runaway reply of
    # megabytes would otherwise be kept in full in every trajectory), and the row says so.
    rec.reply, cut = cap_text(res.text)
    rec.thought = cap_text(extract_thought(res.text), 2000)[0]
    action = parse_action(res.text)
    rec.action_type, rec.action_arg, rec.action_text = action.type, _action_arg(action), action.raw[:2000]
    if cut:
        rec.error = f"reply cut to {REPLY_CAP} of {len(res.text)} characters where stored"
    return action


def run_session(spec: SessionSpec, *, vlm: Any, env: PageEnv, backend: str,
                options: SessionOptions = SessionOptions(), memory: MemoryHook | None = None,
                blob_sink: BlobSink | None = None) -> SessionResult:
    """Run one encoding session and return its records.

    ``env`` is an :class:`vismem.env.browser.BrowserEnv` (or anything with its ``reset``/``observe``/
    ``step`` contract: ``step`` returns a result with ``observation``, ``ok`` and ``error``).
    ``backend`` is the cache slug written into every row; ``blob_sink(image_bytes) -> key``
    stores an observation image and returns its store key (None: images are not stored).
    Replies are parsed by the shop's parser, :func:`vismem.env.actions.parse_action`.
    """
    styles = style_of_hash()
    cat = spec.category
    display = getattr(vlm, "display_name", None) or getattr(vlm, "name", backend)
    result = SessionResult(backend=backend, backend_name=display, stand_in=bool(getattr(vlm, "stand_in", False)),
                           seed=spec.seed, j=spec.j, category=cat, n_steps=spec.n_steps)
    proto = prompts.protocol(options.protocol)
    history: list[prompts.Turn] = [prompts.Turn("user", prompts.session_task(cat, proto.name))]
    system = prompts.system_prompt(proto.name)
    seen: dict[str, None] = {}
    seen_styles: dict[str, None] = {}
    t_start = time.perf_counter()
    page = _Page(env, spec.start_url)

    def back_to_category(rec: StepRecord, agent_line: str) -> None:
        # A terminal action or a failed call: not executed; nudge, and back to the listing.
        rec.forced_nav = True
        history.append(prompts.Turn("agent", agent_line))
        history.append(prompts.Turn("user", prompts.nudge(cat)))
        rec.exec_error = rec.exec_error or page.execute(navigate(spec.start_url))

    for step in range(1, spec.n_steps + 1):
        (url, title, description, image), obs_error = page.observe()
        h = product_hash(url)
        if h:
            seen.setdefault(h, None)
            if styles.get(h):
                seen_styles.setdefault(styles[h], None)
        subtask = prompts.subtask(cat, step, spec.n_steps, len(seen), len(seen_styles))
        mem = memory.context(spec=spec, step=step, url=url, subtask=subtask) if memory else None
        shown_title, shown_desc = (title, description) if options.page_text == "page" else (url, url)
        text = prompts.step_message(step=step, cap=spec.n_steps, subtask_text=subtask, history=history,
                                    memory_text=mem.text if mem else "", url=url, title=shown_title,
                                    description=shown_desc)
        images = ((image,) if image else ()) + (mem.images if mem else ())
        rec = StepRecord(
            backend=backend, seed=spec.seed, j=spec.j, category=cat, n_steps=spec.n_steps, step=step,
            url=url, title=title, description=description, url_hash=h, style=styles.get(h) if h else None,
            image_key=blob_sink(image) if (image and blob_sink) else None, n_images=len(images),
            status="ok", action_type=None, action_arg=None, action_text=None, thought=None, reply=None,
            error=None, exec_error=obs_error, forced_nav=False, latency_s=0.0, prompt_tokens=None,
            completion_tokens=None)
        messages = [Message("system", system), Message("user", text, images=images)]
        t0 = time.perf_counter()
        try:
            res = vlm.chat(messages, max_tokens=options.max_tokens, temperature=options.temperature)
        except Exception as e:  # noqa: BLE001 - VLMError after retries, or a backend bug
            rec.status, rec.latency_s = "failed", time.perf_counter() - t0
            rec.error = f"{getattr(e, 'reason', type(e).__name__)}: {e}"[:2000]
            back_to_category(rec, "done")
            result.steps.append(rec)
            continue
        action = _read_reply(rec, res)
        if action.type == "invalid":
            rec.status = "invalid"
            rec.error = "; ".join(e for e in (f"no valid action in the reply (parsed from {action.raw[:80]!r})",
                                              rec.error) if e)
            # The official history line of an unparseable reply is "noop"; `fixed` also tells the agent.
            history.append(prompts.Turn("agent", "noop"))
            if proto.invalid_notice:
                history.append(prompts.Turn("user", prompts.invalid_notice("wrong format = no-op")))
        elif action.terminal:
            back_to_category(rec, prompts.compact_action(action.type, action.url))
        else:
            history.append(prompts.Turn("agent", prompts.compact_action(action.type, action.url)))
            err = page.execute(action)
            rec.exec_error = rec.exec_error or err
        result.steps.append(rec)
    result.wall_s = time.perf_counter() - t_start
    return result
