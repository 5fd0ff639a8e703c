"""Where ``vismem plan``'s per-call text figures for DMV-Bench agent steps come from: the prompts
the project really sends, rebuilt with its own builders (:mod:`vismem.agents.prompts`,
:mod:`vismem.memory.agent.inject`) at a typical point of a session.

* **shared prefix**: the system prompt (the paper preset's ``official`` protocol) in Qwen's chat
  template, up to the user turn's start: the part of every encode and recall call that vLLM's
  prefix cache can hold (the user turn opens with the step's images, then ``Step k/N``);
* **encode step**: the shared prefix, the step message at step 13 of 25 (the history: the session
  task and 12 compact action lines, alternating a collection and a product card as an agent
  opening several products does; the page a product page, title and description its URL as the
  official observation) and the turn's closing template tokens;
* **recall step**: the same at step 4 of 8 (``probes.max_steps``): the recall task and three full
  replies in the history (recall keeps the whole reply), and a memory block of 5 recalled items
  in the ``image_text`` injector's form (DualMem's, and most of the paper's architectures'), each
  with a 2-3 sentence caption as the captioner is asked for.

**Layout** (:func:`step_layout`): the step message (``agents/prompts/step.txt``) opens with text
that changes every step (``Step k/N``, the subtask's progress) before the history, so no step
repeats a prefix of the step before beyond the shared prefix; measured on vLLM (six consecutive
encode step prompts, 2026-12-08): every step after the first had the system prompt's whole
blocks cached and none of its history.

**Tokens** (:func:`count_tokens`): no Qwen tokenizer is available offline here (the tiny test
models' tokenizer, ``serve/testing.py``, is a 400-token BPE trained on six sentences: about 1.2
characters a token, a third of a real vocabulary's), so a text counts as the larger of

* ``characters / 4``: the usual rate of a ~150k-token byte-level BPE (Qwen2's is 151,643 tokens)
  on English text, and
* its Qwen2 pre-tokenizer pieces (Qwen2's split pattern, digits one by one): byte-level BPE never
  merges across pieces, so a text has at least that many tokens (URLs and hashes, short pieces,
  fall below ``characters / 4`` otherwise).

An estimate, not a measurement: how far it is from Qwen's own tokenizer was not measured here.
``tests/pipelines/test_planprompts.py`` holds the plan's defaults within 10 % of these figures,
so a prompt change that moves them fails there.
"""

from __future__ import annotations

import math
import re
from typing import Any

#: Qwen2's pre-tokenizer split pattern with Python's ``re`` classes (``[^\W\d_]``: a letter, ``\d``: a digit).
_PIECES = re.compile(r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|(?:[^\w\r\n]|_)?[^\W\d_]+|\d| ?(?:[^\s\w]|_)+[\r\n]*"
                     r"|\s*[\r\n]+|\s+(?!\S)|\s+")
#: Chat-template tokens around the system turn and the user turn's start
#: (``<|im_start|>system\n ... <|im_end|>\n<|im_start|>user\n``), and the user turn's close with the
#: assistant's start (``<|im_end|>\n<|im_start|>assistant\n``).
TEMPLATE_PREFIX, TEMPLATE_SUFFIX = 8, 5
#: The typical points: encode step 13 of a 25-step session, recall step 4 of 8.
ENCODE_STEP, ENCODE_STEPS, RECALL_STEP, RECALL_STEPS = 13, 25, 4, 8
#: A recall reply as the system prompt asks for it (one Thought line, one Action line).
REPLY = ('Thought: The memory lists a product whose image shows the {cue}, so I will open its page directly.\n'
         'Action: navigate("/product/{h}")')
#: A 2-3 sentence product caption, as the captioner prompt asks (color, shape, material, features).
CAPTION = ("A mid-century lounge chair with a walnut frame, tapered legs and a mustard-yellow upholstered seat. "
           "A small {cue} sits on the left armrest. The backrest is slightly reclined with visible button tufting.")
CUE = "red baseball cap"
_HASHES = ("a7c1e9b2", "3f88c401", "9b0d27e5", "c4e61a3f", "5d2f8b90", "e81c3d47")


def count_tokens(text: str) -> int:
    """Estimated Qwen2 tokens of ``text``: the larger of ``characters / 4`` and its pre-tokenizer pieces."""
    return max(math.ceil(len(text) / 4), len(_PIECES.findall(text)))


def step_layout() -> str:
    """``varying-first`` when the step message puts step-varying text (``{step}``, ``{subtask}``)
    before ``{history}``, else ``history-first`` (a step then repeats the step before as a prefix)."""
    from vismem.agents import prompts

    tpl = prompts.load("step")
    # a field the template lacks (find: -1) varies nothing
    first_varying = min((i for i in map(tpl.find, ("{step}", "{subtask}", "{memory}", "{url}")) if i >= 0),
                        default=len(tpl))
    return "history-first" if 0 <= tpl.find("{history}") < first_varying else "varying-first"


def shared_prefix_tokens(protocol: str = "official") -> int:
    """The system prompt's tokens in the chat template, up to the user turn's start."""
    from vismem.agents import prompts

    return count_tokens(prompts.system_prompt(protocol)) + TEMPLATE_PREFIX


def encode_step_message(protocol: str = "official", category: str = "chair") -> str:
    """An encode step message at :data:`ENCODE_STEP` of :data:`ENCODE_STEPS` (see the module doc)."""
    from vismem.agents import prompts

    history = [prompts.Turn("user", prompts.session_task(category, protocol))]
    for i in range(ENCODE_STEP - 1):
        action = ("navigate", f"/collection/{category}-modern") if i % 2 == 0 else ("click_index", None)
        history.append(prompts.Turn("agent", prompts.compact_action(*action)))
    url = f"/product/{_HASHES[0]}"
    products = (ENCODE_STEP - 1) // 2
    return prompts.step_message(step=ENCODE_STEP, cap=ENCODE_STEPS,
                                subtask_text=prompts.subtask(category, ENCODE_STEP, ENCODE_STEPS, products, 2),
                                history=history, memory_text="", url=url, title=url, description=url)


def recall_step_message() -> str:
    """A recall step message at :data:`RECALL_STEP` of :data:`RECALL_STEPS` (see the module doc)."""
    from vismem.agents import prompts
    from vismem.memory.agent.inject import INJECTORS, format_block
    from vismem.memory.agent.types import MemoryItem

    history = [prompts.Turn("user", prompts.recall_task(CUE))]
    history += [prompts.Turn("agent", REPLY.format(cue=CUE, h=h)) for h in _HASHES[:RECALL_STEP - 1]]
    inject = INJECTORS.build({"name": "image_text"})
    items = [MemoryItem(slug=h, image_key=f"img/{h}", encode_text="a chair", caption=CAPTION.format(cue=CUE),
                        session=0, position=i) for i, h in enumerate(_HASHES[:5])]
    memory, _ = format_block([inject(it) for it in items])
    url = f"/product/{_HASHES[RECALL_STEP - 2]}"
    return prompts.step_message(step=RECALL_STEP, cap=RECALL_STEPS, subtask_text=prompts.recall_subtask(CUE),
                                history=history, memory_text=memory, url=url, title=url, description=url)


def figures(protocol: str = "official") -> dict[str, float]:
    """The text tokens of a call (the shared prefix included, images not): ``shared_prefix_tokens``,
    ``text_tokens`` (an encode step), ``recall_text_tokens`` (a recall step)."""
    shared = shared_prefix_tokens(protocol)
    return {"shared_prefix_tokens": shared,
            "text_tokens": shared + count_tokens(encode_step_message(protocol)) + TEMPLATE_SUFFIX,
            "recall_text_tokens": shared + count_tokens(recall_step_message()) + TEMPLATE_SUFFIX}


def step_cache(rates: Any) -> str:
    """What the prefix cache holds of an agent step (encode, recall): ``step`` (the step before but
    ``step_new_tokens``) when that figure is given, else ``shared`` (the shared prefix only: the
    project's step message opens with its varying text, :func:`step_layout`)."""
    return "shared" if rates.step_new_tokens is None else "step"


def layout_warnings(rates: Any, rows: list[dict[str, Any]]) -> list[str]:
    """A warning when the step message puts the history first but the plan counts only the shared prefix cached."""
    agent = any(r["stage"] in ("encode", "probes") for r in rows)
    if not agent or rates.step_new_tokens is not None or step_layout() != "history-first":
        return []
    return ["agent steps: the step message (agents/prompts/step.txt) puts the history first, so a step repeats "
            "the step before; the plan counts only shared_prefix_tokens cached: give --rate step_new_tokens=N"]


def memory_images(cfg: Any) -> float:
    """Memory images a recall step attaches, averaged over the (chain, architecture) pairs ``cfg``
    probes: the memory block's ``KEEP_K`` (5) recalled items, each with its image for an
    architecture whose injector attaches one (``image``, ``image_text``: DualMem's, MMA's,
    WorldMM's), none for the caption and text injectors or NoMemory. A bank holds more than 5
    products from its first session on (an agent opens more than 5 a session)."""
    from vismem.memory.agent.base import build_architecture
    from vismem.memory.agent.hook import KEEP_K
    from vismem.memory.agent.types import MemoryItem
    from vismem.pipelines.dmv.protocol import ablation_seeds

    archs, chains = cfg.memory.architectures, cfg.encode.chains
    if not archs or not chains:
        return 0.0
    sub = ablation_seeds(cfg)
    item = MemoryItem(slug=_HASHES[0], image_key=f"img/{_HASHES[0]}", encode_text="a chair", caption="c",
                      session=0, position=0)
    pairs = images = 0.0
    for spec in archs:
        arch = build_architecture(spec)  # no features bound: only its injector is asked
        n = len(sub) if sub is not None and spec.name in cfg.probes.ablation_architectures else chains
        pairs += n
        images += n * KEEP_K * len(arch.render(item).image_keys)  # NoMemory renders with the text injector: none
    return images / pairs
