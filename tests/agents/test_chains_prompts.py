"""Official seeding of encoding chains, and the prompts kept verbatim as data."""

from __future__ import annotations

import random

import pytest

from vismem.agents import prompts
from vismem.agents.chains import category_order, chain_specs, session_spec
from vismem.env.storefront.catalog import CATEGORIES, STYLES

# The official generator's list, typed out here independently of the module under test.
OFFICIAL_CATEGORIES = ["chair", "sofa", "lamp", "cushion", "vase",
                       "rug", "table", "bookshelf", "plant_pot", "wall_art"]


@pytest.mark.parametrize("seed,j", [(0, 0), (0, 4), (1, 3), (7, 12), (42, 9), (123, 49)])
def test_session_spec_matches_official_formula(seed: int, j: int) -> None:
    expected_steps = random.Random(f"f2.session.{seed}.{j}").randint(22, 28)
    expected_order = random.Random(f"f2.seed.{seed}").sample(OFFICIAL_CATEGORIES, 10)
    spec = session_spec(seed, j)
    assert spec.n_steps == expected_steps
    assert spec.category == expected_order[j % 10]
    assert spec.start_url == f"/category/{expected_order[j % 10]}"


def test_pinned_values_and_j_independence() -> None:
    # Pinned once from the formula, so a silent change of seeding strings is caught too.
    assert category_order(0) == ["rug", "bookshelf", "wall_art", "sofa", "vase",
                                 "lamp", "chair", "cushion", "table", "plant_pot"]
    assert [s.n_steps for s in chain_specs(0, 6)] == [26, 22, 27, 23, 26, 25]
    assert tuple(CATEGORIES) == tuple(OFFICIAL_CATEGORIES)
    assert chain_specs(3, 5) == chain_specs(3, 15)[:5]
    assert all(22 <= s.n_steps <= 28 for s in chain_specs(5, 50))
    with pytest.raises(ValueError):
        session_spec(0, -1)


def test_system_prompt_corrections() -> None:
    text = prompts.system_prompt()
    assert "N=0..9" in text and "N=0..3" not in text
    action_line = next(line for line in text.splitlines() if "style ∈" in line)
    for style in STYLES:
        assert style in action_line
    for cat in CATEGORIES:
        assert cat in text
    assert text.rstrip().endswith("Action: <action>")


def test_session_task_and_step_message() -> None:
    task = prompts.session_task("wall_art")
    assert task.startswith("You are comparison-shopping for a wall-art piece on a furniture store website.")
    assert "AT LEAST 3 different wall-art piece collections" in task
    assert "DO NOT emit add_to_wishlist or done" in task
    assert 'navigate("/collection/wall_art-<style>")' in task  # the URL hint uses the slug, not the noun
    sub = prompts.subtask("chair", 7, 25, 5, 3)
    assert sub == ("Comparison-shop for a chair — open a wide range (step 7/25). So far: 5 distinct products "
                   "viewed across 3 styles. Aim for >=3 styles and ~12 products; open NEW products you have "
                   "not seen yet.")
    hist = [prompts.Turn("user", task), prompts.Turn("agent", prompts.compact_action("navigate", "/collection/chair-modern")),
            prompts.Turn("agent", prompts.compact_action("click_index", None))]
    msg = prompts.step_message(step=7, cap=25, subtask_text=sub, history=hist, memory_text="",
                               url="/collection/chair-vintage", title="/collection/chair-vintage",
                               description="/collection/chair-vintage")
    assert msg.startswith("Step 7/25.\n\n[Subtask]\n  Comparison-shop for a chair")
    assert "  Agent: navigate /collection/chair-modern\n  Agent: click_index\n" in msg
    assert "[Memory context retrieved this step]" in msg
    assert "[Current page]\n  URL: /collection/chair-vintage\n  Title: /collection/chair-vintage" in msg
    assert msg.endswith("Reply with one Thought + one Action.")
    assert prompts.nudge("plant_pot") == "Don't terminate — keep browsing other plant pot products and styles."


def test_history_elision_keeps_first_turn() -> None:
    turns = [prompts.Turn("user", "task")] + [prompts.Turn("agent", f"a{i}") for i in range(130)]
    out = prompts.format_history(turns, max_turns=120)
    lines = out.splitlines()
    assert lines[0] == "  User: task" and "(10 earlier turns elided)" in lines[1]
    assert lines[-1] == "  Agent: a129" and len(lines) == 122


def test_prompt_fingerprint_is_part_of_the_cache_key(monkeypatch) -> None:
    import vismem.pipelines.dmv.protocol as worker
    from vismem.agents.session import SessionOptions

    def slug():
        proto = worker.protocol_settings(SessionOptions(), observation="product_image", images="placeholder",
                                         colour_order="seeded", catalog_seed=0)
        return worker.cache_slug({"name": "scripted-shopper", "args": {}}, proto)

    before = slug()
    assert len(prompts.fingerprint()) == 16 and slug() == before
    monkeypatch.setattr(prompts, "fingerprint", lambda *a, **k: "0" * 16)
    assert slug() != before
