"""A scripted comparison-shopper: a deterministic stand-in for the encoding VLM.

It is registered in :data:`vismem.serve.registry.VLMS` as ``scripted-shopper`` and named
``scripted-shopper (stand-in)`` in every result, so nothing it produces can pass for a model's.

The policy reads only what a real VLM reads: the last user message (the step message with
``Step k/cap``, the ``[Subtask]`` progress line, the ``[Conversation so far]`` block and the
``[Current page]`` URL). It keeps no state between calls, so it can be hosted behind the
OpenAI-compatible HTTP server, shared by threads, and replayed in any order. Its plan for a
session is a pure function of ``(seed, category, step cap)``, so two sessions that show the
agent the same category and cap browse identically, as a temperature-0 model would.

Plan: ``P = (cap - 1) // 2`` products (each costs two steps: ``click_index`` from the collection
page, then leaving the product page), split over 3 styles (4 when ``P >= 12``) drawn from the
ten styles; inside a collection it opens distinct cards in a seeded order and returns to the
collection page between products. It never emits ``add_to_wishlist`` or ``done``.
"""

from __future__ import annotations

import random
import re
import time
from dataclasses import dataclass

from vismem.agents.prompts import category_noun
from vismem.env.storefront.catalog import CATEGORIES, STYLES
from vismem.serve.layouts import check_layout, model_view
from vismem.serve.registry import VLMS
from vismem.serve.vlm import ChatResult, Message

STAND_IN_NAME = "scripted-shopper (stand-in)"

_STEP_RE = re.compile(r"^Step (\d+)/(\d+)\.", re.M)
_URL_RE = re.compile(r"^\s*URL:\s*(\S+)\s*$", re.M)
_TASK_RE = re.compile(r"comparison-shopping for an? (.+?) on a furniture store", re.I)
_NOUN_TO_CAT = {category_noun(c): c for c in CATEGORIES}


@dataclass(frozen=True)
class ShopperPlan:
    """A session plan: style order (all ten), product quota per planned style, card orders."""

    styles: tuple[str, ...]
    quotas: dict[str, int]
    cards: dict[str, tuple[int, ...]]

    def quota(self, style: str) -> int:
        # Styles beyond the plan (reached when steps remain) get a few products each.
        return self.quotas.get(style, 3)


def make_plan(seed: int, cat: str, cap: int) -> ShopperPlan:
    """The deterministic plan for a session of ``cap`` steps over category ``cat``."""
    rng = random.Random(f"scripted-shopper.{seed}.{cat}.{cap}")
    styles = tuple(rng.sample(STYLES, len(STYLES)))
    n_products = max(3, (cap - 1) // 2)
    n_planned = 4 if n_products >= 12 else 3
    base, extra = divmod(n_products, n_planned)
    bonus = set(rng.sample(range(n_planned), extra))
    quotas = {s: min(10, base + (i in bonus)) for i, s in enumerate(styles[:n_planned])}
    cards = {s: tuple(rng.sample(range(10), 10)) for s in styles}
    return ShopperPlan(styles=styles, quotas=quotas, cards=cards)


@dataclass(frozen=True)
class PageState:
    """What the policy extracts from the step message."""

    cat: str
    step: int
    cap: int
    url: str
    entered: tuple[str, ...]   # styles whose collection the agent navigated to, in order
    clicks: dict[str, int]     # click_index actions issued while in each style's collection
    current: str | None        # style of the latest collection navigation


def _section(text: str, name: str) -> str:
    m = re.search(rf"\[{re.escape(name)}\]\n(.*?)(?:\n\n\[|\n\nReply with|\Z)", text, re.S)
    return m.group(1) if m else ""


def read_state(text: str) -> PageState | None:
    """Parse a step message; None when it is not one (the policy then asks for the category)."""
    step_m, url_m = _STEP_RE.search(text), _URL_RE.search(_section(text, "Current page") or text)
    task_m = _TASK_RE.search(text)
    if not (step_m and url_m and task_m):
        return None
    cat = _NOUN_TO_CAT.get(task_m.group(1).strip().lower())
    if cat is None:
        return None
    entered: list[str] = []
    clicks: dict[str, int] = {}
    current: str | None = None
    prefix = f"navigate /collection/{cat}-"
    for line in _section(text, "Conversation so far").splitlines():
        line = line.strip()
        if not line.startswith("Agent: "):
            continue
        act = line[len("Agent: "):]
        if act.startswith(prefix):
            current = act[len(prefix):]
            if current not in entered:
                entered.append(current)
        elif act.startswith("click_index") and current is not None:
            clicks[current] = clicks.get(current, 0) + 1
    return PageState(cat=cat, step=int(step_m.group(1)), cap=int(step_m.group(2)), url=url_m.group(1),
                     entered=tuple(entered), clicks=clicks, current=current)


def decide(seed: int, st: PageState) -> tuple[str, str]:
    """``(thought, action)`` for one step."""
    plan = make_plan(seed, st.cat, st.cap)
    noun = category_noun(st.cat)

    def next_style() -> tuple[str, str]:
        fresh = [s for s in plan.styles if s not in st.entered]
        style = fresh[0] if fresh else plan.styles[st.step % len(plan.styles)]
        return (f"I have not opened the {style.replace('_', ' ')} {noun} collection yet; widen coverage there.",
                f'navigate("/collection/{st.cat}-{style}")')

    def has_room(style: str | None) -> bool:
        return style is not None and st.clicks.get(style, 0) < min(plan.quota(style), 10)

    path = st.url.split("?", 1)[0]
    if path.startswith(f"/collection/{st.cat}-"):
        style = path[len(f"/collection/{st.cat}-"):]
        if style == st.current and has_room(style):
            n = st.clicks.get(style, 0)
            card = plan.cards.get(style, tuple(range(10)))[n]
            return (f"Open another {style.replace('_', ' ')} {noun} I have not seen yet (card {card}).",
                    f"click_index({card})")
        if style != st.current:
            # Landed here without navigating (e.g. a grid link): browse it as the current style.
            return (f"Browse this {style.replace('_', ' ')} collection properly.",
                    f'navigate("/collection/{st.cat}-{style}")')
        return next_style()
    if path.startswith("/product/"):
        if has_room(st.current):
            style = st.current
            return (f"Back to the {style.replace('_', ' ')} collection for the next product.",
                    f'navigate("/collection/{st.cat}-{style}")')
        return next_style()
    if path.startswith(f"/category/{st.cat}"):
        if has_room(st.current):
            return (f"Resume the {st.current.replace('_', ' ')} collection.",
                    f'navigate("/collection/{st.cat}-{st.current}")')
        return next_style()
    return (f"Return to the {noun} listing.", f'navigate("/category/{st.cat}")')


@VLMS.register("scripted-shopper", stand_in=True)
class ScriptedShopper:
    """Stand-in encoding agent (see module docstring). ``seed`` varies its plans; ``layout``
    (:mod:`vismem.serve.layouts`) is the message layout whose model view it reads: with
    ``merged-user``/``parts`` the system prompt sits in front of the step message, which the
    step parser tolerates (the prompt has no ``Step k/N.`` line and no ``[...]`` sections)."""

    def __init__(self, seed: int = 0, *, sleep_s: float = 0.0, layout: str = "chat") -> None:
        self.seed = int(seed)
        self.layout = check_layout(layout)
        self.sleep_s = float(sleep_s)
        self.name = f"scripted-shopper:s{self.seed}"
        self.display_name = STAND_IN_NAME
        self.stand_in = True

    def chat(self, messages: list[Message], *, max_tokens: int = 512, temperature: float = 0.0) -> ChatResult:
        t0 = time.perf_counter()
        if self.sleep_s:
            time.sleep(self.sleep_s)
        messages = model_view(messages, self.layout)
        users = [m for m in messages if m.role == "user"]
        st = read_state(users[-1].text) if users else None
        if st is None:
            thought, action = "I cannot tell where I am; start from the home page.", 'navigate("/")'
        else:
            thought, action = decide(self.seed, st)
        text = f"Thought: {thought}\nAction: {action}"
        prompt_tokens = sum(len(m.text.split()) for m in messages)
        return ChatResult(text=text, latency_s=time.perf_counter() - t0,
                          prompt_tokens=prompt_tokens, completion_tokens=len(text.split()))


def shopper_reply(messages: list[Message]) -> str:
    """The seed-0 policy as a plain function, so any host can serve it, e.g.
    ``python -m vismem.serve.openai_server --backend scripted --args '{"fn": "vismem.agents.scripted:shopper_reply"}'``.
    """
    return ScriptedShopper(seed=0).chat(messages).text
