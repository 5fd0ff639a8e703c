"""The scripted shopper stand-in: a pure function of the step message and its seed."""

from __future__ import annotations

from vismem.agents import prompts
from vismem.agents.scripted import STAND_IN_NAME, ScriptedShopper, make_plan, read_state
from vismem.serve.registry import VLMS
from vismem.serve.vlm import Message


def _msg(cat: str, step: int, cap: int, url: str, agent_lines: list[str]) -> str:
    hist = [prompts.Turn("user", prompts.session_task(cat))] + [prompts.Turn("agent", a) for a in agent_lines]
    return prompts.step_message(step=step, cap=cap, subtask_text=prompts.subtask(cat, step, cap, 0, 0),
                                history=hist, memory_text="", url=url, title=url, description=url)


def _act(vlm: ScriptedShopper, text: str) -> str:
    reply = vlm.chat([Message("system", prompts.system_prompt()), Message("user", text)]).text
    lines = reply.splitlines()
    assert lines[0].startswith("Thought: ") and lines[1].startswith("Action: ") and len(lines) == 2
    return lines[1][len("Action: "):]


def test_registered_and_named_as_stand_in() -> None:
    vlm = VLMS.build({"name": "scripted-shopper", "args": {"seed": 4}})
    assert vlm.display_name == STAND_IN_NAME == "scripted-shopper (stand-in)" and vlm.stand_in


def test_plan_covers_three_styles_and_fits_the_cap() -> None:
    for cap in range(22, 29):
        plan = make_plan(0, "plant_pot", cap)
        assert len(plan.quotas) >= 3 and sum(plan.quotas.values()) == (cap - 1) // 2
        assert 1 + 2 * sum(plan.quotas.values()) <= cap
        assert all(sorted(c) == list(range(10)) for c in plan.cards.values())
    assert make_plan(1, "sofa", 25) != make_plan(2, "sofa", 25)


def test_state_and_decisions_follow_the_page() -> None:
    vlm = ScriptedShopper(seed=0)
    plan = make_plan(0, "wall_art", 25)
    first = plan.styles[0]
    text = _msg("wall_art", 1, 25, "/category/wall_art", [])
    st = read_state(text)
    assert st and st.cat == "wall_art" and st.cap == 25 and st.entered == ()
    assert _act(vlm, text) == f'navigate("/collection/wall_art-{first}")'
    hist = [f"navigate /collection/wall_art-{first}"]
    text = _msg("wall_art", 2, 25, f"/collection/wall_art-{first}", hist)
    assert _act(vlm, text) == f"click_index({plan.cards[first][0]})"
    hist.append("click_index")
    text = _msg("wall_art", 3, 25, "/product/0123abcd", hist)
    assert _act(vlm, text) == f'navigate("/collection/wall_art-{first}")'
    hist += [f"navigate /collection/wall_art-{first}"]
    text = _msg("wall_art", 4, 25, f"/collection/wall_art-{first}", hist)
    assert _act(vlm, text) == f"click_index({plan.cards[first][1]})"
    # Quota used up: move to the next planned style from the product page.
    hist += ["click_index"] * (plan.quota(first) - 1)
    text = _msg("wall_art", 9, 25, "/product/0123abcd", hist)
    assert _act(vlm, text) == f'navigate("/collection/wall_art-{plan.styles[1]}")'
    # Anywhere unexpected (an error page after a shop restart): back to the category.
    assert _act(vlm, _msg("wall_art", 10, 25, "chrome-error://chromewebdata/", hist)) == 'navigate("/category/wall_art")'
    # Never a terminal action; a non-step message gets a harmless navigation.
    assert _act(vlm, "hello") == 'navigate("/")'


def test_same_message_same_reply() -> None:
    text = _msg("lamp", 5, 27, "/category/lamp", ["done"])
    a, b = ScriptedShopper(seed=9), ScriptedShopper(seed=9)
    assert a.chat([Message("user", text)]).text == b.chat([Message("user", text)]).text


def test_servable_as_a_scripted_fn() -> None:
    from vismem.serve.backends.scripted import ScriptedVLM

    text = _msg("rug", 1, 22, "/category/rug", [])
    hosted = ScriptedVLM(fn="vismem.agents.scripted:shopper_reply")
    assert hosted.chat([Message("user", text)]).text == ScriptedShopper(seed=0).chat([Message("user", text)]).text
