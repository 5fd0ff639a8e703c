"""`vismem plan`'s per-call text defaults for DMV-Bench agent steps follow the prompts the project
really sends: rebuilt with its own builders (pipelines/planprompts.py), a prompt change that moves
them by more than TOLERANCE fails here instead of silently making the plan wrong."""

from __future__ import annotations

import pytest

from vismem.pipelines import planprompts
from vismem.pipelines.plan import Rates, estimate
from vismem.pipelines.planprompts import step_cache

#: How far a default may drift from the figure rebuilt from the prompts: the defaults are round
#: figures, and a prompt edit of a sentence or two moves a step by a few percent, not more.
TOLERANCE = 0.10


@pytest.mark.parametrize("name", ["shared_prefix_tokens", "text_tokens", "recall_text_tokens"])
def test_the_plans_defaults_are_the_prompts_token_counts(name):
    figure = planprompts.figures("official")[name]  # the paper preset's protocol
    default = getattr(Rates(), name)
    assert abs(default - figure) <= TOLERANCE * figure, (
        f"Rates.{name} = {default:g}, but the prompts count {figure:g} tokens (pipelines/planprompts.py): "
        f"update the default and its comment in pipelines/plan.py")
    # the other protocol's texts (the corrected system prompt) are within the tolerance too
    assert abs(default - planprompts.figures("fixed")[name]) <= TOLERANCE * figure


def test_the_token_count_is_at_least_the_pre_tokenizer_pieces_and_a_quarter_of_the_characters():
    text = 'navigate("/product/a7c1e9b2") -- an 8-hex id, one token a digit'
    n = planprompts.count_tokens(text)
    assert n >= len(text) / 4
    # Qwen2 splits digits one by one: the hash alone is 8 pieces, the text more than chars / 4
    assert planprompts.count_tokens("a7c1e9b2") == 8
    assert planprompts.count_tokens("the quick brown fox jumps over the lazy dog") == 11  # 43 characters / 4


def test_the_step_message_puts_its_varying_text_before_the_history_so_only_the_system_prompt_is_cached():
    from vismem.agents import prompts

    assert planprompts.step_layout() == "varying-first"
    msg = planprompts.encode_step_message()
    assert msg.startswith(f"Step {planprompts.ENCODE_STEP}/") and msg.index("Step ") < msg.index("[Conversation so far]")
    # two consecutive steps of one session share only their first few characters (`Step 1`)
    nxt = prompts.step_message(step=planprompts.ENCODE_STEP + 1, cap=planprompts.ENCODE_STEPS, subtask_text="x",
                               history=[], memory_text="", url="/", title="/", description="/")
    common = next(i for i, (a, b) in enumerate(zip(msg, nxt)) if a != b)
    assert common < 10
    assert step_cache(Rates()) == "shared" and step_cache(Rates(step_new_tokens=400)) == "step"


def test_the_recall_step_carries_full_replies_and_a_five_item_memory_block():
    msg = planprompts.recall_step_message()
    assert msg.count("Agent: Thought:") == planprompts.RECALL_STEP - 1
    assert msg.count("[memory image") == 5 and "Caption:" in msg
    f = planprompts.figures()
    assert f["recall_text_tokens"] > f["text_tokens"] > f["shared_prefix_tokens"]


def test_the_paper_plan_counts_only_the_system_prompt_cached_for_agent_steps():
    from vismem.pipelines.config import load_config

    cfg = load_config(preset="paper", overrides={"stages": ["encode", "probes", "memshot"]})
    plan = estimate(cfg, gpus=8)
    rates = Rates()
    for stage in plan["stages"]:
        for e in stage["endpoints"]:
            if e["kind"] != "gpu":
                continue
            prompt = e["prompt_tokens"] / e["calls"]
            shared = rates.answer_prefix_tokens if stage["stage"].startswith("memshot") else rates.shared_prefix_tokens
            assert e["cache"] == "shared"
            assert e["uncached_tokens"] == pytest.approx(prompt - shared)
            assert e["cached_share"] == pytest.approx(shared / prompt)
    # a figure for step_new_tokens restores the "repeats the step before" model: less is prefilled
    step = estimate(cfg, Rates(step_new_tokens=400), gpus=8)
    enc = [next(e for e in s["endpoints"] if e["kind"] == "gpu") for s in (plan["stages"][0], step["stages"][0])]
    assert enc[1]["cache"] == "step" and enc[1]["uncached_tokens"] < enc[0]["uncached_tokens"]


def test_recall_steps_carry_the_memory_blocks_images_of_the_probed_architectures():
    """A recall step attaches its 5 recalled items' images for an image-injecting architecture
    (memory/agent/inject.py), none for caption/text ones: averaged over the probed pairs."""
    from vismem.pipelines.config import load_config

    def cfg(archs, **probes):
        return load_config(preset="local", overrides={"memory": {"architectures": archs}, "probes": probes})

    assert planprompts.memory_images(cfg(["dualmem"])) == 5
    assert planprompts.memory_images(cfg(["caption", "textonly", "nomemory"])) == 0
    assert planprompts.memory_images(cfg(["dualmem", "nomemory"])) == 2.5
    # the paper's 17 (11 image-injecting; the ablation rows on 7 of 20 chains): about 3.1
    paper = load_config(preset="paper")
    assert 3.0 < planprompts.memory_images(paper) < 3.2
    plan = estimate(load_config(preset="paper", overrides={"stages": ["probes"]}), gpus=8)
    q = next(e for e in plan["stages"][0]["endpoints"] if e["kind"] == "gpu")
    rates = Rates()
    per_image = 326  # Qwen2.5-VL at 512 px
    want = rates.recall_text_tokens + (rates.images_per_call + planprompts.memory_images(paper)) * per_image
    assert q["prompt_tokens"] / q["calls"] == pytest.approx(want, rel=0.01)
    # a figure given replaces the rule
    fixed = estimate(load_config(preset="paper", overrides={"stages": ["probes"]}), Rates(recall_images_per_call=1), gpus=8)
    f = next(e for e in fixed["stages"][0]["endpoints"] if e["kind"] == "gpu")
    assert f["prompt_tokens"] / f["calls"] == pytest.approx(rates.recall_text_tokens + per_image, rel=0.01)
