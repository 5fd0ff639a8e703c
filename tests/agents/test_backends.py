"""Encoding sessions through the serve backends: the OpenAI HTTP client against the local
OpenAI-compatible server (scripted, malformed, slow and HTTP-500 replies), and a tiny local
transformers Qwen2.5-VL built from a config."""

from __future__ import annotations

import time
from dataclasses import replace

from vismem.agents.chains import session_spec
from vismem.agents.scripted import ScriptedShopper
from vismem.agents.session import SessionOptions, run_session
from vismem.env.http_env import HttpEnv
from vismem.serve.backends.scripted import MALFORMED_TEXT, ScriptedFault, ScriptedVLM
from vismem.serve.build import build_vlm
from vismem.serve.openai_server import LocalOpenAIServer
from vismem.serve.vlm import Message

_SHOPPER = ScriptedShopper(seed=0)


def _reply(messages: list[Message]) -> str:
    text = messages[-1].text
    if text.startswith("Step 2/"):
        raise ScriptedFault("injected", http_status=500)
    if text.startswith("Step 3/"):
        return MALFORMED_TEXT
    if text.startswith("Step 4/"):
        time.sleep(1.5)  # longer than the client's read timeout
    return _SHOPPER.chat(messages).text


def test_openai_client_through_local_server(shop) -> None:
    server_vlm = ScriptedVLM(fn=_reply, label="shopper-faults")
    with LocalOpenAIServer(vlm=server_vlm) as srv, HttpEnv(shop.url) as env:
        client = build_vlm({"name": "openai", "args": {
            "model": srv.model_id, "base_url": srv.base_url, "api_key_env": None, "timeout_s": 0.5,
            "max_retries": 0}})
        spec = replace(session_spec(1, 0), n_steps=7)
        res = run_session(spec, vlm=client, env=env, backend="openai-test")
    st = {s.step: s for s in res.steps}
    assert st[1].status == "ok" and st[1].prompt_tokens and st[1].reply.startswith("Thought: ")
    assert st[2].status == "failed" and st[2].error.startswith("http_500") and st[2].reply is None
    assert st[2].forced_nav and st[3].url == spec.start_url
    assert st[3].status == "invalid" and st[3].reply == MALFORMED_TEXT
    assert st[4].status == "failed" and st[4].error.startswith("timeout")
    assert [st[k].status for k in (5, 6, 7)] == ["ok"] * 3
    assert any(s.url_hash for s in res.steps)  # it browsed into products over HTTP
    summary = res.summary()
    assert summary["failed_calls"] == 2 and summary["invalid_actions"] == 1
    assert server_vlm.calls == 7  # every step reached the server exactly once


def test_tiny_transformers_backend(shop, tmp_path) -> None:
    from vismem.serve.testing import build_tiny_qwen25vl

    path = build_tiny_qwen25vl(tmp_path / "tiny")
    vlm = build_vlm({"name": "transformers", "args": {"path": str(path)}})
    spec = replace(session_spec(0, 0), n_steps=2)
    with HttpEnv(shop.url) as env:
        res = run_session(spec, vlm=vlm, env=env, backend="tiny", options=SessionOptions(max_tokens=12))
    assert len(res.steps) == 2
    for s in res.steps:
        # Random weights: replies are gibberish, recorded as invalid (or as parsed if by chance), never a crash.
        assert s.status in ("ok", "invalid") and s.reply is not None and s.completion_tokens is not None
