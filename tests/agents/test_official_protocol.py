"""The ``official`` dialogue protocol (issue 27): a session sends the official runner's prompts byte
for byte, an unparseable reply enters the history only as ``noop``, and the choice keys the caches
(``fixed`` keys unchanged)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from vismem.agents import prompts
from vismem.agents.chains import session_spec
from vismem.agents.session import SessionOptions, run_session
from vismem.core.errors import ConfigError
from vismem.env.http_env import HttpEnv
from vismem.serve.backends.scripted import ScriptedVLM

# The official ``SYSTEM_PROMPT_TEMPLATE`` (dualmem/agent/dmvbench_live_runner.py), typed out here.
OFFICIAL_SYSTEM = """You are a shopping-assistant agent in an e-commerce
website. You receive (i) the customer's instruction, (ii) the conversation so
far, (iii) memory context from prior sessions (may be empty), and (iv) the
current page. Decide ONE action.

URL patterns that exist on the site (other patterns return 404):
  /                                  — home
  /category/<slug>                   — category listing, e.g. /category/vase
  /collection/<slug>-<style>         — styled collection, where <style> is
                                        EXACTLY ONE OF: modern, minimalist,
                                        vintage, industrial, scandinavian,
                                        bohemian, mid_century, rustic, japandi,
                                        art_deco
                                        (e.g. /collection/vase-modern,
                                         /collection/chair-rustic)
  /product/<hash>                    — product detail; <hash> is an 8-hex id
  /wishlist /cart                    — shopping pages

Valid category slugs (use EXACTLY these — all singular, no trailing 's'):
  chair, sofa, lamp, cushion, vase, rug, table, bookshelf, plant_pot, wall_art

Action vocabulary (use EXACT syntax — wrong format = no-op):
  navigate("/category/<slug>")           — go to a category listing
  navigate("/collection/<slug>-<style>") — style ∈ {modern, minimalist, vintage, industrial}
  navigate("/product/<hash>")            — go to a product detail page directly
  click_index(N)                         — on a category or collection page,
                                            click the N-th visible product card
                                            (N=0..3, top-left → bottom-right).
                                            PREFERRED over guessing /product/<hash>.
  add_to_wishlist                        — on a product detail page, add it (TERMINAL action,
                                            use it when you've found the right product)
  done                                   — finish if you are stuck (counts as failure)

Some user requests may ask you to navigate to a product the customer has
previously visited. You cannot see earlier sessions in the conversation — only
the [Memory context] block bridges them.

Strategy hints:
  - The [Memory context] block lists products recalled from prior sessions, each
    with its /product/<hash> URL and image. If a remembered product matches what
    the customer is asking for, navigate("/product/<hash>") DIRECTLY — this is
    the fastest and intended path. You DO know the exact hash in that case.
  - Inspect the memory image(s): pick the product whose image matches what the
    customer is describing, then navigate to that product's hash.
  - Only if memory gives you nothing usable: from a category page use
    navigate("/collection/<slug>-<style>") then click_index(N) on the N-th
    product card. You can NOT guess /product/<hash> URLs you have never seen.
  - Once on the /product/<hash> page the customer asked for, emit add_to_wishlist
    — that ends the session successfully.

Reply in ReAct format, ONE Thought line + ONE Action line:
  Thought: <one sentence reasoning>
  Action: <action>
"""

# The official ``SESSION_TASK.format(cat=_noun(cat))`` (dualmem/agent/f2_encode_agent.py) for plant_pot:
# the URL hint carries the noun, as published.
OFFICIAL_TASK_PLANT_POT = (
    "You are comparison-shopping for a plant pot on a furniture store website. Your goal is BREADTH OF "
    "EXPLORATION, not picking a winner: visit AT LEAST 3 different plant pot collections (styles), and within "
    "each open SEVERAL individual products (a product page has a 'More from this collection' grid you can use to "
    "move to the next product). \n\nIMPORTANT BROWSING RULES:\n"
    "  - Keep navigating to NEW products until you reach the step cap. Repeating the same product is a wasted "
    "step.\n"
    "  - DO NOT emit add_to_wishlist or done — those terminate the browse early and the step is wasted. Even if a "
    "product looks great, KEEP BROWSING other products and styles.\n"
    "  - From a product page, use navigate(\"/collection/plant pot-<style>\") to jump to a different style, or "
    "click_index(N) on the in-page grid to move to the next product card.")


def _official_step(step: int, cap: int, history: str, url: str, n_products: int = 0, n_styles: int = 0) -> str:
    """The official ``_build_prompt`` output of an encoding step (no memory, page text = URL)."""
    subtask = (f"Comparison-shop for a plant pot — open a wide range (step {step}/{cap}). So far: {n_products} "
               f"distinct products viewed across {n_styles} styles. Aim for >=3 styles and ~12 products; open NEW "
               f"products you have not seen yet.")
    return (f"Step {step}/{cap}.\n\n[Subtask]\n  {subtask}\n\n[Conversation so far]\n{history}\n\n"
            f"[Memory context retrieved this step]\n  \n\n[Current page]\n  URL: {url}\n  Title: {url}\n"
            f"  Description: {url}\n\nReply with one Thought + one Action.")


class Recorder:
    def __init__(self, vlm):
        self.vlm, self.name, self.sent, self.stand_in = vlm, "rec", [], False

    def chat(self, messages, **kw):
        self.sent.append(messages)
        return self.vlm.chat(messages, **kw)


REPLIES = ["I would rather look around first.", 'Thought: styles\nAction: navigate("/collection/plant_pot-modern")',
           "Thought: ok\nAction: click_index(0)"]


def _session(shop, protocol: str):
    spec = replace(session_spec(0, 9), n_steps=3)
    assert spec.category == "plant_pot"
    rec = Recorder(ScriptedVLM(REPLIES, cycle=False, label="t"))
    with HttpEnv(shop.url) as env:
        res = run_session(spec, vlm=rec, env=env, backend="t", options=SessionOptions(protocol=protocol))
    return res, rec.sent


def test_official_session_prompts_are_byte_equal_to_the_official_runner(shop) -> None:
    res, sent = _session(shop, "official")
    assert [m.text for m in sent[0]] == [OFFICIAL_SYSTEM, _official_step(1, 3, "  User: " + OFFICIAL_TASK_PLANT_POT,
                                                                       "/category/plant_pot")]
    # The unparseable first reply is only "noop" in the history (no extra user turn), as officially.
    hist2 = "  User: " + OFFICIAL_TASK_PLANT_POT + "\n  Agent: noop"
    assert sent[1][1].text == _official_step(2, 3, hist2, "/category/plant_pot")
    hist3 = hist2 + "\n  Agent: navigate /collection/plant_pot-modern"
    assert sent[2][1].text == _official_step(3, 3, hist3, "/collection/plant_pot-modern")
    assert all(m[0].text == OFFICIAL_SYSTEM for m in sent)
    assert res.steps[0].status == "invalid"  # recorded as invalid under both protocols


def test_fixed_session_keeps_the_corrections(shop) -> None:
    res, sent = _session(shop, "fixed")
    assert sent[0][0].text == prompts.system_prompt() != OFFICIAL_SYSTEM
    assert "N=0..9" in sent[0][0].text and 'navigate("/collection/plant_pot-<style>")' in sent[0][1].text
    assert "had no valid Action" in sent[1][1].text and res.steps[0].status == "invalid"


def test_protocol_texts_and_unknown_name() -> None:
    assert prompts.system_prompt("official") == OFFICIAL_SYSTEM
    assert prompts.session_task("plant_pot", "official") == OFFICIAL_TASK_PLANT_POT
    assert prompts.session_task("chair", "official") == prompts.session_task("chair")  # noun == slug there
    assert not prompts.protocol("official").invalid_notice and prompts.protocol("fixed").invalid_notice
    with pytest.raises(ConfigError, match="unknown dialogue protocol 'paper'"):
        prompts.system_prompt("paper")


def test_protocol_keys_the_caches_and_fixed_keys_are_unchanged() -> None:
    from vismem.pipelines.dmv.protocol import cache_slug, protocol_settings
    from vismem.pipelines.config import load_config
    from vismem.pipelines.dmv.probes import _protocol

    def settings(protocol):
        return protocol_settings(SessionOptions(protocol=protocol), observation="product_image",
                                 images="placeholder", colour_order="official", catalog_seed=0)

    fixed, official = settings("fixed"), settings("official")
    # `fixed` is what every key was before the choice existed: same prompt files, no new field.
    assert "protocol" not in fixed and fixed["prompts"] == prompts.fingerprint() == prompts.fingerprint("encode")
    assert official["protocol"] == "official" and official["prompts"] != fixed["prompts"]
    spec = {"name": "scripted-shopper", "args": {}}
    assert cache_slug(spec, fixed) != cache_slug(spec, official)
    assert prompts.fingerprint("recall", "official") != prompts.fingerprint("recall")
    paper, local = load_config(preset="paper"), load_config(preset="local")
    assert paper.encode.protocol == "official" and local.encode.protocol == "fixed"
    assert _protocol(paper)["protocol"] == "official" and "protocol" not in _protocol(local)
    assert _protocol(local)["prompts"] == prompts.fingerprint("recall")


def test_official_recall_probe_sends_the_official_system_prompt_and_step_message() -> None:
    """A probe under ``official`` sends the official system prompt with the official recall step
    (``f2_session_runner._run_recall_probe``); ``fixed`` only swaps the system prompt."""
    from tests.agents.test_recall import OFFICIAL_STEP2, PROBE, TARGET, FakeEnv, FakeHook, Scripted
    from vismem.agents.recall import run_probe

    replies = ['Thought: check memory.\nAction: navigate("/")', f'Thought: there.\nAction: navigate("/product/{TARGET}")',
               "Thought: found.\nAction: add_to_wishlist"]
    sent = {}
    for proto in ("official", "fixed"):
        vlm = Scripted(list(replies))
        assert run_probe(PROBE, vlm=vlm, env=FakeEnv(), memory=FakeHook(), protocol=proto).correct
        sent[proto] = vlm.seen
    assert all(m[0].text == OFFICIAL_SYSTEM for m in sent["official"])
    assert sent["official"][1][1].text == OFFICIAL_STEP2 == sent["fixed"][1][1].text
    assert all(m[0].text == prompts.system_prompt("fixed") != OFFICIAL_SYSTEM for m in sent["fixed"])


def test_official_session_terminal_actions_and_product_pages_as_the_official_runner(shop) -> None:
    """Past the first three steps: ``click_index`` enters the history bare, a terminal action is
    ``done``/``add_to_wishlist`` plus the official nudge with the page back on the category, a
    product page shows its URL as title and description and sends its image (the official
    ``_f2_obs``), a listing page sends none, and the progress line counts products and styles."""
    replies = ['Thought: a\nAction: navigate("/collection/plant_pot-modern")', "Thought: b\nAction: click_index(0)",
               "Thought: c\nAction: done", 'Thought: d\nAction: navigate("/collection/plant_pot-vintage")',
               "Thought: e\nAction: click_index(1)", "Thought: f\nAction: add_to_wishlist"]
    spec = replace(session_spec(0, 9), n_steps=6)
    rec = Recorder(ScriptedVLM(replies, cycle=False, label="t"))
    with HttpEnv(shop.url) as env:
        res = run_session(spec, vlm=rec, env=env, backend="t", options=SessionOptions(protocol="official"))
    urls = [s.url for s in res.steps]
    assert urls[:2] + urls[3:5] == ["/category/plant_pot", "/collection/plant_pot-modern", "/category/plant_pot",
                                    "/collection/plant_pot-vintage"]
    assert urls[2].startswith("/product/") and urls[5].startswith("/product/") and urls[2] != urls[5]
    nudge = "  User: Don't terminate — keep browsing other plant pot products and styles."
    lines = ["  User: " + OFFICIAL_TASK_PLANT_POT, "  Agent: navigate /collection/plant_pot-modern",
             "  Agent: click_index", "  Agent: done", nudge, "  Agent: navigate /collection/plant_pot-vintage",
             "  Agent: click_index"]
    shown = {1: 1, 2: 2, 3: 3, 4: 5, 5: 6, 6: 7}  # history lines each step sees
    for step, msgs in enumerate(rec.sent, 1):
        seen = [s for s in res.steps[:step] if s.url_hash]
        n_products, n_styles = len({s.url_hash for s in seen}), len({s.style for s in seen if s.style})
        url = urls[step - 1]
        assert msgs[1].text == _official_step(step, 6, "\n".join(lines[:shown[step]]), url, n_products, n_styles)
        assert len(msgs[1].images) == (1 if url.startswith("/product/") else 0)
    assert (n_products, n_styles) == (2, 2) and res.steps[2].forced_nav and res.steps[5].forced_nav


def test_fixed_protocol_keys_are_those_from_before_the_choice(data_dir) -> None:
    """The local preset's trajectory slug and recall-prompt key, as computed by the code just before
    ``encode.protocol`` existed (8a4c2be^, run on the same data): caches of ``fixed`` runs stay valid.
    A deliberate key change updates these literals."""
    from vismem.pipelines.config import load_config
    from vismem.pipelines.dmv.encode import plan
    from vismem.pipelines.dmv.probes import _protocol

    cfg = load_config(preset="local", overrides={"data_dir": str(data_dir)})
    assert cfg.encode.protocol == "fixed"
    assert plan(cfg)[1] == ["scripted-shopper-stand-in-s0--9c94d7b2"]
    assert _protocol(cfg)["prompts"] == "42ba2e7387119fe0" and "protocol" not in _protocol(cfg)
