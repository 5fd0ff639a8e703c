"""The recall probe episode: official step message and image order, the success rule, and the
scripted recall stand-in (fake env and memory behind the real protocols)."""

from __future__ import annotations

from dataclasses import dataclass

from vismem.agents.memory import MemoryContext
from vismem.agents.probes import Probe
from vismem.agents.recall import run_probe
from vismem.agents.scripted_recall import ScriptedRecall, recall_decision
from vismem.env.actions import Action
from vismem.serve.vlm import ChatResult

TARGET = "a7c1e9b2"
PROBE = Probe("s1_r1_p00", 1, 0, 1, TARGET, "red", "baseball cap")

#: §3.4/§3.5: the official ImageTextInject block of two invented entries.
BLOCK = ('2 item(s) recalled from earlier sessions, most relevant first. Any attached memory images appear AFTER '
         'the current-page image, in the order referenced below.\n'
         '  (1) Memory (dual-channel, image + caption) — product page /product/a7c1e9b2:\n'
         '      Caption: "A vintage-style wooden chair.\n      A red baseball cap rests on the seat." [memory image 1]\n'
         '  (2) Memory (dual-channel, image + caption) — product page /product/3f88c401:\n'
         '      Caption: "a chair" [memory image 2]')
#: §3.5: the official `_build_prompt` output for step 2, verbatim (Python repr in the spec).
OFFICIAL_STEP2 = (
    'Step 2/8.\n\n[Subtask]\n  Recall: go to the product with the red baseball cap.\n\n[Conversation so far]\n'
    '  User: Earlier you saw a product that had a red baseball cap on it. Take me back to that exact product.\n'
    '  Agent: Thought: check memory.\nAction: navigate("/")\n\n[Memory context retrieved this step]\n  '
    + BLOCK + '\n\n[Current page]\n  URL: /\n  Title: /\n  Description: /\n\nReply with one Thought + one Action.')


@dataclass(frozen=True)
class Obs:
    url: str
    image: bytes | None


@dataclass(frozen=True)
class Res:
    observation: Obs
    ok: bool = True
    error: str | None = None


class FakeEnv:
    """Product pages carry an image named after their hash."""

    def __init__(self):
        self.url = "/"
        self.resets = 0

    def _obs(self):
        return Obs(self.url, f"img:{self.url}".encode() if self.url.startswith("/product/") else None)

    def reset(self, start_url="/"):
        self.resets += 1
        self.url = start_url
        return self._obs()

    def observe(self):
        return self._obs()

    def step(self, action: Action):
        if action.type == "navigate":
            self.url = action.url
        return Res(self._obs())


class FakeHook:
    def __init__(self, text=BLOCK, images=(b"mem1", b"mem2"), slugs=(TARGET, "3f88c401")):
        self.text, self.images, self.calls = text, images, []
        self.last_items = [type("I", (), {"slug": s})() for s in slugs]

    def context(self, *, spec, step, url, subtask):
        self.calls.append((step, url, subtask))
        return MemoryContext(self.text, self.images)


class Scripted:
    """Replies from a list; records every request."""

    def __init__(self, replies):
        self.replies, self.seen = list(replies), []

    def chat(self, messages, *, max_tokens=512, temperature=0.0):
        self.seen.append(messages)
        return ChatResult(self.replies.pop(0), 0.0)


def test_step_message_and_image_order_are_the_official_ones():
    vlm = Scripted(['Thought: check memory.\nAction: navigate("/")', f'Thought: there.\nAction: navigate("/product/{TARGET}")',
                    "Thought: found.\nAction: add_to_wishlist"])
    env, hook = FakeEnv(), FakeHook()
    res = run_probe(PROBE, vlm=vlm, env=env, memory=hook)
    system, user = vlm.seen[1]
    assert system.role == "system" and "shopping-assistant agent" in system.text
    assert user.text == OFFICIAL_STEP2
    assert user.images == (b"mem1", b"mem2")                     # on "/": no page image, memory after
    assert vlm.seen[2][1].images == (f"img:/product/{TARGET}".encode(), b"mem1", b"mem2")  # page image first
    assert hook.calls[0] == (1, "/", "Recall: go to the product with the red baseball cap.")
    assert res.correct and res.final_url == f"/product/{TARGET}" and res.steps == 3 and res.vlm_calls == 3
    assert res.terminated_by == "add_to_wishlist" and res.failure is None and env.resets == 1
    assert res.log[0].recalled == [TARGET, "3f88c401"]


def test_done_on_the_target_counts_wishlist_elsewhere_fails():
    ok = run_probe(PROBE, vlm=Scripted([f'navigate("/product/{TARGET}")', 'navigate("/category/chair")', "done"]),
                   env=FakeEnv(), memory=FakeHook())
    assert ok.correct and ok.final_url == f"/product/{TARGET}"    # the last product URL reached, not the last page
    wrong = run_probe(PROBE, vlm=Scripted(['navigate("/product/3f88c401")', "add_to_wishlist"]),
                      env=FakeEnv(), memory=FakeHook())
    assert not wrong.correct and wrong.failure == "wishlist_wrong" and wrong.final_url == "/product/3f88c401"
    sibling = run_probe(PROBE, vlm=Scripted([f'navigate("/product/{TARGET}")', 'navigate("/product/3f88c401")',
                                             "done"]), env=FakeEnv(), memory=FakeHook())
    assert not sibling.correct and sibling.failure == "done"


def test_no_product_url_and_step_cap_and_model_errors_are_recorded():
    nowhere = run_probe(PROBE, vlm=Scripted(['navigate("/category/chair")'] * 8), env=FakeEnv(), memory=FakeHook())
    assert nowhere.final_url is None and not nowhere.correct and nowhere.failure == "no_product" and nowhere.steps == 8
    capped = run_probe(PROBE, vlm=Scripted(['navigate("/product/3f88c401")'] * 8), env=FakeEnv(), memory=FakeHook())
    assert capped.failure == "step_cap" and capped.steps == 8
    garbage = run_probe(PROBE, vlm=Scripted(["I think so"] * 8), env=FakeEnv(), memory=FakeHook())
    assert [s.status for s in garbage.log] == ["invalid"] * 8 and garbage.failure == "no_product"

    class Broken:
        def chat(self, *a, **k):
            raise TimeoutError("endpoint down")

    err = run_probe(PROBE, vlm=Broken(), env=FakeEnv(), memory=FakeHook())
    assert err.failure == "model_error" and err.steps == 1 and err.log[0].status == "failed"


def test_scripted_recall_opens_the_first_recalled_product_then_wishlists():
    res = run_probe(PROBE, vlm=ScriptedRecall(), env=FakeEnv(), memory=FakeHook())
    assert res.correct and res.steps == 2 and res.terminated_by == "add_to_wishlist"
    second = run_probe(PROBE, vlm=ScriptedRecall(), env=FakeEnv(),
                       memory=FakeHook(text=BLOCK.replace(TARGET, "ffffffff")))
    assert not second.correct and second.failure == "wishlist_wrong"


def test_no_memory_means_the_scripted_policy_gives_up():
    res = run_probe(PROBE, vlm=ScriptedRecall(), env=FakeEnv(),
                    memory=FakeHook(text="(no memory retrieved this step)", images=(), slugs=()))
    assert not res.correct and res.failure == "done" and res.steps == 1
    assert recall_decision("no block at all") == ("Memory recalled nothing I can use, so I cannot find it.", "done")


def test_channel_scores_are_recorded_per_step_beside_the_log():
    """A hook's per-item scores land in the result's ``scores`` (one list per step), never in the
    step log, whose entries keep the fields they always had (the probe cache's log is unchanged)."""
    hook = FakeHook()
    hook.last_scores = [{"visual": 0.9, "verbal": None, "fused": 0.8}, {"visual": 0.1, "verbal": 0.2, "fused": 0.15}]
    res = run_probe(PROBE, vlm=Scripted([f'navigate("/product/{TARGET}")', "done"]), env=FakeEnv(), memory=hook)
    row = res.row()
    assert row["scores"] == [hook.last_scores, hook.last_scores] and len(row["log"]) == 2
    assert all("scores" not in st for st in row["log"])
    assert run_probe(PROBE, vlm=Scripted(["done"]), env=FakeEnv(), memory=FakeHook()).row()["scores"] == [[]]
