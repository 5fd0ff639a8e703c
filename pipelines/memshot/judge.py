"""How the MemShot judge is asked: thinking off where the model has a switch, and enough
``max_tokens`` for the reply format.

A judge that thinks before its verdict spends the reply budget on reasoning: LongMemEval's
official ``max_tokens=10`` then ends before "yes" or "no" (an empty verdict, a judge failure).

* **Qwen3 hybrid-thinking models** (``Qwen3-8B``, ``Qwen3-32B``, ``Qwen3-30B-A3B``, ...; not the
  ``-Instruct-2507`` / ``-Thinking-2507`` or ``-VL-`` releases, which have no switch) served by
  vLLM or SGLang: ``chat_template_kwargs: {enable_thinking: false}`` in the request body (the
  spec's ``extra_body``), Qwen3's documented hard switch.
* A spec that already says something about thinking in ``extra_body`` is left as it is (named
  model specs set their own: ``serve/models/glm-5.yaml``, ``gemini-2.5-flash.yaml``).
* Models that always think (``…-Thinking…``, ``QwQ``, ``o1``/``o3``/``o4``, ``gpt-5``,
  ``deepseek-r1``): thinking cannot be turned off, so ``max_tokens`` is raised to
  :data:`THINKING_MAX_TOKENS` (the reply format alone would be cut off).
"""

from __future__ import annotations

import copy
import re
from typing import Any

#: max_tokens of a judge that cannot stop thinking: room for its reasoning and the verdict.
THINKING_MAX_TOKENS = 4096
#: extra_body keys by which a spec already chooses thinking on or off.
_THINKING_KEYS = ("chat_template_kwargs", "thinking", "reasoning_effort", "reasoning", "enable_thinking")
_QWEN3_HYBRID = re.compile(r"(^|/)qwen3-\d+(\.\d+)?b(-a\d+(\.\d+)?b)?(-(fp8|awq|gptq[-\w]*|int\d))?$", re.I)
_ALWAYS_THINKS = re.compile(r"thinking|(^|/)qwq|(^|/)o[134](-|$)|(^|/)gpt-5|deepseek-r1|-r1(-|$)", re.I)


def _model(spec: dict[str, Any]) -> str:
    return str((spec.get("args") or {}).get("model") or "")


def has_thinking_switch(model: str) -> bool:
    """Whether ``model`` is a Qwen3 hybrid-thinking checkpoint (``enable_thinking`` in its chat template)."""
    return bool(_QWEN3_HYBRID.search(model.strip()))


def always_thinks(model: str) -> bool:
    """Whether ``model`` reasons before every reply with no way to turn it off."""
    return bool(_ALWAYS_THINKS.search(model.strip()))


def judge_request(spec: dict[str, Any], max_tokens: int) -> tuple[dict[str, Any], int]:
    """The judge's resolved spec with thinking turned off where the model has a switch, and the
    ``max_tokens`` its replies get (raised for a model that always thinks). ``spec`` is not changed."""
    out = copy.deepcopy(spec)
    if out.get("name") != "openai":  # in-process back-ends (scripted, transformers) take no request body
        return out, max_tokens
    args = out.setdefault("args", {})
    extra = dict(args.get("extra_body") or {})
    model = _model(out)
    if has_thinking_switch(model) and not any(k in extra for k in _THINKING_KEYS):
        extra["chat_template_kwargs"] = {"enable_thinking": False}
        args["extra_body"] = extra
    if always_thinks(model):
        max_tokens = max(max_tokens, THINKING_MAX_TOKENS)
    return out, max_tokens
