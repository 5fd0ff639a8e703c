"""The MemShot judge is asked with thinking off where the model has a switch (Qwen3's
chat_template_kwargs, checked on the wire through the local OpenAI-compatible server) and with
room for a verdict where it cannot stop thinking."""

from __future__ import annotations

import json

from vismem.pipelines.memshot.judge import THINKING_MAX_TOKENS, always_thinks, has_thinking_switch, judge_request


def _spec(model, **args):
    return {"name": "openai", "args": {"model": model, "base_url": "http://127.0.0.1:1/v1", **args}}


def test_which_models_switch_and_which_always_think():
    for m in ("Qwen/Qwen3-8B", "Qwen/Qwen3-32B", "qwen3-30b-a3b", "Qwen/Qwen3-32B-FP8", "Qwen3-0.6B"):
        assert has_thinking_switch(m), m
    for m in ("Qwen/Qwen3-VL-8B-Instruct", "Qwen/Qwen3-30B-A3B-Instruct-2507", "gpt-4o", "glm-5",
              "Qwen/Qwen2.5-7B-Instruct"):
        assert not has_thinking_switch(m), m
    assert always_thinks("Qwen/Qwen3-VL-8B-Thinking") and always_thinks("o3-mini") and always_thinks("gpt-5")
    assert not always_thinks("gpt-4o") and not always_thinks("Qwen/Qwen3-32B")


def test_judge_request_turns_thinking_off_and_keeps_an_explicit_choice():
    spec = _spec("Qwen/Qwen3-32B")
    out, mt = judge_request(spec, 10)
    assert out["args"]["extra_body"] == {"chat_template_kwargs": {"enable_thinking": False}} and mt == 10
    assert "extra_body" not in spec["args"]  # the caller's spec is not changed
    mine = _spec("Qwen/Qwen3-32B", extra_body={"chat_template_kwargs": {"enable_thinking": True}, "top_k": 1})
    assert judge_request(mine, 10)[0]["args"]["extra_body"]["chat_template_kwargs"] == {"enable_thinking": True}
    assert judge_request(_spec("Qwen/Qwen3-VL-8B-Thinking"), 10)[1] == THINKING_MAX_TOKENS
    assert judge_request(_spec("gpt-4o"), 10) == (_spec("gpt-4o"), 10)
    assert judge_request({"name": "scripted", "args": {}}, 10) == ({"name": "scripted", "args": {}}, 10)


def test_glm5_spec_turns_thinking_off():
    from vismem.serve.models import load_model_spec

    assert load_model_spec("glm-5").args["extra_body"] == {"thinking": {"type": "disabled"}}


def test_stage_judge_request_carries_enable_thinking_false(file_store, ray_local, tmp_path, locomo_cut):
    """The judge's requests, as the server received them, carry the switch and the dataset's max_tokens."""
    from tests.pipelines.test_memshot_stage import _ctx
    from vismem.pipelines.memshot import stage as memshot
    from vismem.serve.backends.scripted import ScriptedVLM
    from vismem.serve.openai_server import LocalOpenAIServer, create_app

    seen = []
    app = create_app(ScriptedVLM(['{"label": "CORRECT"}']), model_id="Qwen/Qwen3-32B")

    @app.middleware("http")
    async def record(request, call_next):  # the request bodies as the server received them
        if request.url.path.endswith("/chat/completions"):
            seen.append(json.loads(await request.body()))
        return await call_next(request)

    with LocalOpenAIServer(ScriptedVLM(["7 May 2023"]), model_id="a") as a, \
            LocalOpenAIServer(app=app, model_id="Qwen/Qwen3-32B") as j:
        spec = lambda srv: {"name": "openai", "args": {"model": srv.model_id, "base_url": srv.base_url,  # noqa: E731
                                                       "api_key_env": None, "max_retries": 0, "timeout_s": 10}}
        ctx = _ctx(file_store, tmp_path, {"dataset": "locomo", "dataset_path": str(locomo_cut), "conversations": 1,
                                          "variants": ["text-rag"], "k": [5], "embed_on_ray": False, "max_questions": 2, "image_embedder": None,
                                          "vlm": spec(a), "judge": spec(j)})
        memshot.run(ctx)
    assert len(seen) == 2
    assert all(b["chat_template_kwargs"] == {"enable_thinking": False} and b["max_tokens"] == 256 for b in seen)
    ans = file_store.read_table(f"{ctx.run_prefix}/results/memshot_answers.parquet")
    assert ans["judge_label"].to_list() == [True, True]
    # Who answered and who judged, in every row (real endpoints: no stand-in mark).
    assert ans["model"].unique().to_list() == ["openai:a"] and ans["judge"].unique().to_list() == ["openai:Qwen/Qwen3-32B"]
    judge = ctx.manifest.data["components"]["memshot.judge"]
    assert judge["args"]["extra_body"] == {"chat_template_kwargs": {"enable_thinking": False}}
