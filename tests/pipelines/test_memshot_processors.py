"""Which ``ray.data.llm`` processor asks MemShot's answers and verdicts (``memshot.processor``),
and the rows and replies of the in-job vLLM engine and of a deployed Serve model: the same
prompts as the HTTP path, read back into the same answer records (CPU only: vLLM is not
installed here, so Ray's own stages and models are run or built where they need no GPU)."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest

from vismem.core.errors import ConfigError
from vismem.pipelines.config import load_config
from vismem.pipelines.memshot.batch_llm import (answer_record, answer_reply_fn, answer_request_fn, answer_row,
                                                judge_reply_fn, judge_request_fn, read_output, reply_record)
from vismem.pipelines.memshot.processors import (SAMPLING_KEYS, check_processors, choose_processor, engine_row,
                                                 parts_content,
                                                 serve_processor_config, serve_row, vllm_variant)

#: vLLM 0.29.0's SamplingParams arguments (the committed extract of the pinned wheel).
SAMPLING_PARAMS = set(json.loads((Path(__file__).parents[1] / "serve" / "vllm_api.json").read_text())
                      ["callables"]["vllm.SamplingParams"]["params"])
QWEN3 = "LLMServer:Qwen--Qwen3-VL-8B-Instruct"


def _choose(key, forced="auto", *, here=(), up=False, asked=None):
    from vismem.serve.hosting import deployable
    from vismem.serve.registry import registered

    model = vllm_variant(key)
    model_id = deployable(model, registered()).model_id if model else None

    def endpoint_up():
        if asked is not None:
            asked.append(key)
        return up

    return choose_processor("memshot.processor", forced, key, model, model_id, batch_inference="ray-data",
                            on_cluster=lambda app, dep: (app, dep) in here, endpoint_up=endpoint_up)


@pytest.mark.parametrize("key, here, up, kind", [
    ("glm-5", (), False, "http"),  # a hosted API
    ("openai", (), False, "http"),  # a bare endpoint spec
    ("scripted-echo", (), False, "http"),  # not a vLLM variant
    ("qwen3-vl-8b", (("vllm", QWEN3),), True, "serve"),  # deployed on this cluster: its handle
    ("qwen3-vl-8b", (("other", QWEN3),), True, "http"),  # another app's deployment is not it
    ("qwen3-vl-8b", (), True, "http"),  # its endpoint answers
    ("qwen3-vl-8b", (), False, "engine"),  # nothing serves it
    ("deployed:qwen3-vl-8b", (("vllm", QWEN3),), False, "serve"),
    ("deployed:qwen3-vl-8b", (), False, "http"),  # deployed elsewhere: its Serve proxy
])
def test_auto_follows_where_the_model_is(key, here, up, kind):
    choice = _choose(key, here=here, up=up)
    assert choice.kind == kind and choice.reason
    rec = choice.record()
    assert rec["kind"] == kind and "reason" in rec
    if kind == "serve":
        assert (choice.app, choice.deployment, choice.model) == ("vllm", QWEN3, "qwen3-vl-8b")
    if kind == "engine":
        assert choice.model == "qwen3-vl-8b" and "nothing serves it" in choice.reason


def test_the_endpoint_is_asked_only_when_the_rule_needs_it():
    asked: list[str] = []
    assert _choose("qwen3-vl-8b", here=(("vllm", QWEN3),), asked=asked).kind == "serve"
    assert _choose("glm-5", asked=asked).kind == "http"
    assert _choose("deployed:qwen3-vl-8b", asked=asked).kind == "http"
    assert asked == []
    assert _choose("qwen3-vl-8b", asked=asked).kind == "engine" and asked == ["qwen3-vl-8b"]


def test_a_forced_processor_wins_where_the_model_can_take_it():
    deployed = (("vllm", QWEN3),)
    assert _choose("qwen3-vl-8b", "http", here=deployed).kind == "http"
    assert _choose("qwen3-vl-8b", "engine", here=deployed, up=True).kind == "engine"
    assert _choose("deployed:qwen3-vl-8b", "engine").model == "qwen3-vl-8b"
    assert _choose("qwen3-vl-8b", "serve", here=deployed).deployment == QWEN3
    with pytest.raises(ConfigError, match=r"memshot\.processor: serve \(forced\), but this Ray cluster's Serve runs "
                                          r"no LLMServer:Qwen--Qwen3-VL-8B-Instruct"):
        _choose("qwen3-vl-8b", "serve", up=True)
    for key in ("glm-5", "openai", "scripted-echo"):
        for forced in ("engine", "serve"):
            with pytest.raises(ConfigError, match=rf"memshot\.processor: {forced} .*needs a model variant with "
                                                  rf"deploy\.engine: vllm.*'{key}' is not one"):
                _choose(key, forced)
    with pytest.raises(ConfigError, match="'gpu' is not one of auto, http, serve, engine"):
        _choose("qwen3-vl-8b", "gpu")


def test_bad_processor_settings_are_refused_by_the_stage_check_before_any_work():
    from vismem.pipelines.memshot.stage import check

    def cfg(**memshot):
        return load_config(preset="paper", overrides={"memshot": memshot}).model_copy(update={"stages": ["memshot"]})

    base = load_config(preset="paper")
    assert base.memshot.processor == base.memshot.judge_processor == "auto"
    engine = cfg(batch_inference="ray-data", processor="engine")
    assert engine.run_id == base.run_id  # execution only: the same answers
    check(engine)  # qwen3-vl-8b is a vLLM variant
    with pytest.raises(ConfigError, match=r"memshot\.judge_processor: engine .*'glm-5' is not one"):
        check(cfg(batch_inference="ray-data", judge_processor="engine"))  # the paper's judge is a hosted API
    with pytest.raises(ConfigError, match=r"memshot\.processor: engine is a ray\.data\.llm processor; it needs "
                                          r"memshot\.batch_inference: ray-data \(is threads\)"):
        check(cfg(processor="engine"))
    with pytest.raises(ConfigError, match=r"memshot\.processor"):
        load_config(preset="paper", overrides={"memshot": {"processor": "gpu"}})


def test_a_forced_engine_refuses_a_request_field_vllm_cannot_take():
    paper = load_config(preset="paper", overrides={"memshot": {
        "batch_inference": "ray-data", "processor": "engine",
        "vlm": {"name": "qwen3-vl-8b", "args": {"extra_body": {"response_format": {"type": "json_object"}}}}}})
    with pytest.raises(ConfigError, match=r"memshot\.processor: request field 'response_format' has no vLLM engine"):
        check_processors(paper.memshot)


def _png() -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 10, 10)).save(buf, format="PNG")
    return buf.getvalue()


class _Store:
    def __init__(self) -> None:
        self.png = _png()

    def get_bytes(self, key: str) -> bytes:
        if key == "missing":
            raise FileNotFoundError(key)
        return self.png


def _row(*keys: str) -> dict:
    return {"i": 3, "header": True, "question": json.dumps({"question": "Where did Caroline go?"}),
            "units": json.dumps([{"modality": "image", "image_key": k, "text": None} for k in keys])}


def _spec() -> dict:
    from vismem.serve.models import variant_spec

    return variant_spec("qwen2.5-vl-7b", "vlm")


def test_engine_and_serve_rows_carry_the_http_requests_messages_unchanged():
    spec = _spec()
    http = answer_request_fn(spec, "locomo", _Store(), 64, 0.0, "http")(_row("a", "b"))
    eng = answer_request_fn(spec, "locomo", _Store(), 64, 0.0, "engine")(_row("a", "b"))
    srv = answer_request_fn(spec, "locomo", _Store(), 64, 0.0, "serve")(_row("a", "b"))
    body = http["payload"]
    assert eng["messages"] == parts_content(body["messages"]) and eng["n_images"] == http["n_images"] == 2
    # the same turns, every content a list of parts (Arrow cannot unify strings with part lists)
    assert all(isinstance(m["content"], list) for m in eng["messages"] + srv["request_kwargs"]["messages"])
    assert [m["role"] for m in eng["messages"]] == [m["role"] for m in body["messages"]]
    assert eng["sampling_params"] == {"max_tokens": 64, "temperature": 0.0}
    assert set(eng["sampling_params"]) <= SAMPLING_PARAMS and SAMPLING_KEYS <= SAMPLING_PARAMS
    assert srv["request_kwargs"] == {**body, "messages": eng["messages"], "stream": False} and srv["method"] == "chat"
    assert eng["vismem_input_error"] == srv["vismem_input_error"] == ""
    # seed and sampling extras of the spec reach the engine's SamplingParams; chat-template ones do not
    row = engine_row({**body, "seed": 7, "top_p": 0.5, "chat_template_kwargs": {"enable_thinking": False}})
    assert row["sampling_params"] == {"max_tokens": 64, "temperature": 0.0, "seed": 7, "top_p": 0.5}
    # an unreadable shot: a valid one-token request, the row recorded as its input error
    bad = answer_request_fn(spec, "locomo", _Store(), 64, 0.0, "engine")(_row("a", "missing"))
    assert bad["n_images"] == 0 and bad["sampling_params"]["max_tokens"] == 1
    rec = answer_reply_fn("engine")({**bad, "generated_text": "x", "__inference_error__": ""})
    assert rec["answer_status"] == "error:input:FileNotFoundError" and rec["prediction"] is None


def test_engine_rows_pass_rays_own_stages_of_the_built_engine_processor(ray_local, tmp_path):
    """The engine processor as Ray builds it (no GPU, no vLLM needed to build): our row holds every
    key its stages require, and Ray's chat-template stage renders it with the model's template
    (the tiny Qwen2.5-VL's; its tokenizer, as AutoProcessor needs torchvision here): the question
    and one image placeholder per shot."""
    from ray.data.llm import build_processor
    from ray.llm._internal.batch.stages.base import StatefulStageUDF
    from ray.llm._internal.batch.stages.chat_template_stage import ChatTemplateUDF
    from transformers import AutoTokenizer

    from vismem.pipelines.memshot.processors import engine_processor_config
    from vismem.serve.testing import tiny_model_path

    from vismem.pipelines.memshot.batch_llm import processor_for
    from vismem.pipelines.memshot.processors import Choice

    tiny = tiny_model_path("qwen2.5-vl")
    (tmp_path / "Qwen2.5-VL-7B-Instruct").symlink_to(tiny)
    spec = _spec()
    pre = answer_request_fn(spec, "locomo", _Store(), 64, 0.0, "engine")
    proc = build_processor(engine_processor_config("qwen2.5-vl-7b", weights=str(tmp_path)), preprocess=pre,
                           postprocess=answer_reply_fn("engine"))
    # as the answer step builds it: a spec's chat-template switch (a Qwen3 judge's) reaches the stage
    thinking = {**spec, "args": {**spec["args"], "extra_body": {"chat_template_kwargs": {"enable_thinking": False}}}}
    built = processor_for(Choice("engine", "test", "qwen2.5-vl-7b"), thinking, concurrency=1, batch_size=4,
                          weights=str(tmp_path), preprocess=pre, postprocess=answer_reply_fn("engine"))
    assert built.get_stage_by_name("ChatTemplateStage").fn_constructor_kwargs["chat_template_kwargs"] == \
        {"enable_thinking": False}
    assert built.get_stage_by_name("vLLMEngineStage").fn_constructor_kwargs["model"] == \
        str(tmp_path / "Qwen2.5-VL-7B-Instruct")  # the weights root's copy of the variant
    names = proc.list_stage_names()
    assert names[0] == "PrepareMultimodalStage" and "vLLMEngineStage" in names
    row = pre(_row("a", "b"))
    for name in ("PrepareMultimodalStage", "ChatTemplateStage", "vLLMEngineStage"):
        assert set(proc.get_stage_by_name(name).get_required_input_keys()) <= set(row), name

    udf = ChatTemplateUDF.__new__(ChatTemplateUDF)
    StatefulStageUDF.__init__(udf, "__data", ["messages"])
    udf.processor, udf.chat_template, udf.chat_template_kwargs = AutoTokenizer.from_pretrained(str(tiny)), None, None

    async def render():
        return [out async for out in udf({"__data": [dict(row)]})]

    (out,) = asyncio.run(render())
    prompt = out["__data"][0]["prompt"]
    assert "Question: Where did Caroline go?" in prompt and prompt.endswith("<|im_start|>assistant\n")
    assert prompt.count("<|vision_start|><|image_pad|><|vision_end|>") == 2


def test_engine_and_serve_replies_make_the_same_answer_records_as_http():
    completion = {"choices": [{"message": {"role": "assistant", "content": "  Paris "}}],
                  "usage": {"prompt_tokens": 12, "completion_tokens": 2}}
    http = reply_record({**completion, "vismem_latency_s": 0.5})
    engine_out = {"i": 1, "n_images": 2, "vismem_input_error": "", "__inference_error__": "", "prompt": "p",
                  "generated_text": "  Paris ", "num_input_tokens": 12, "num_generated_tokens": 2,
                  "time_taken_llm": 0.5}
    serve_out = {"i": 1, "n_images": 2, "vismem_input_error": "", "__inference_error__": "", "id": "c",
                 "model": "m", **completion, "time_taken": 0.5}
    assert http["answer_status"] == "ok" and http["prediction"] == "Paris"
    for kind, out in (("engine", engine_out), ("serve", serve_out)):
        assert answer_record(read_output(kind, out)) == http
        assert answer_reply_fn(kind)(out) == {"i": 1, "n_images": 2, **http}
    # an empty reply is a malformed answer, as on the HTTP path
    empty = {**completion, "choices": [{"message": {"content": ""}}]}
    assert answer_record(read_output("engine", {**engine_out, "generated_text": ""}))["answer_status"] == \
        reply_record(empty)["answer_status"] == "malformed"


def test_a_row_the_engine_or_deployment_failed_is_a_failed_answer_never_cached_as_done():
    # With should_continue_on_error, Ray hands back a failed row without running the postprocess.
    failed = {"i": 4, "n_images": 2, "vismem_input_error": "", "prompt": "p", "generated_text": "",
              "num_input_tokens": 0, "__inference_error__": "ValueError: prompt too long"}
    rec = answer_row("engine", failed)
    assert rec["i"] == 4 and rec["answer_status"] == "error:engine" and rec["prediction"] is None
    assert "prompt too long" in rec["raw_answer"]
    assert rec["answer_status"] not in ("ok", "malformed")  # the answer cache keeps only those
    srv = answer_row("serve", {"i": 5, "n_images": 1, "__inference_error__": "TimeoutError: 300 s",
                               "request_kwargs": "{...}"})
    assert srv["answer_status"] == "error:serve" and srv["n_images"] == 1
    err = read_output("serve", {"i": 6, "vismem_input_error": "", "__inference_error__": "",
                                "error": {"message": "bad image", "code": 400}})
    assert err["error"] == "error:serve_400" and err["text"] is None
    ok = {"i": 7, "answer_status": "ok", "prediction": "x", "__inference_error__": ""}
    assert answer_row("engine", ok) is ok
    # the judge's replies go through the same reader
    assert judge_reply_fn("engine")({"i": 2, "vismem_input_error": "", "generated_text": "yes",
                                     "num_input_tokens": 3, "num_generated_tokens": 1, "time_taken_llm": 0.1}) == \
        {"i": 2, "error": None, "detail": None, "text": "yes", "latency_s": 0.1}
    assert read_output("engine", failed)["error"] == "error:engine"


def test_judge_rows_are_the_http_judge_requests():
    from vismem.serve.models import variant_spec

    spec = variant_spec("qwen3-vl-8b", "vlm")
    http = judge_request_fn(spec, 10, "http")({"i": 0, "prompt": "Is it right?"})
    eng = judge_request_fn(spec, 10, "engine")({"i": 0, "prompt": "Is it right?"})
    assert eng["messages"] == parts_content(http["payload"]["messages"]) and eng["sampling_params"]["max_tokens"] == 10
    assert eng["messages"][0]["content"] == [{"type": "text", "text": "Is it right?"}]


def test_serve_rows_are_the_requests_rays_serve_stage_builds():
    """Ray's own ServeDeployment stage code turns our row into the request it sends to
    ``LLMServer.chat`` (Ray Serve LLM's ChatCompletionRequest needs vLLM, not installed here: a
    stand-in request class of the same required fields takes its place)."""
    from types import SimpleNamespace

    from pydantic import BaseModel, ConfigDict
    from ray.data.llm import ServeDeploymentProcessorConfig
    from ray.llm._internal.batch.stages.serve_deployment_stage import ServeDeploymentStage, ServeDeploymentStageUDF

    class ChatRequest(BaseModel):
        model_config = ConfigDict(extra="allow")
        model: str
        messages: list
        max_tokens: int
        temperature: float
        stream: bool

    row = answer_request_fn(_spec(), "locomo", _Store(), 64, 0.0, "serve")(_row("a"))
    assert set(ServeDeploymentStage(fn_constructor_kwargs={}, map_batches_kwargs={}).get_required_input_keys()) \
        <= set(row)
    me = SimpleNamespace(_dtype_mapping={"ChatCompletionRequest": ChatRequest}, request_id=0,
                         IDX_IN_BATCH_COLUMN=ServeDeploymentStageUDF.IDX_IN_BATCH_COLUMN)
    request, dtype, method = ServeDeploymentStageUDF._prepare_request(me, {**row, "__idx_in_batch": 0})
    sent = dtype(**request)
    assert method == "chat" and dtype is ChatRequest and sent.stream is False
    assert sent.messages == serve_row(answer_request_fn(_spec(), "locomo", _Store(), 64, 0.0, "http")(_row("a"))
                                      ["payload"])["request_kwargs"]["messages"]
    cfg = serve_processor_config(QWEN3, app="vllm", concurrency=2, batch_size=8, dtype=ChatRequest, timeout_s=300)
    assert isinstance(cfg, ServeDeploymentProcessorConfig) and cfg.should_continue_on_error
    sent_as = cfg.dtype_mapping["ChatCompletionRequest"]
    assert issubclass(sent_as, ChatRequest) and cfg.request_timeout_s == 300
    # Ray Data hands nested lists back as numpy arrays: the request class takes them as lists
    import numpy as np

    arrays = {**request, "messages": np.array([{"role": "user", "content": np.array([{"type": "text", "text": "q"}])}])}
    assert sent_as(**arrays).messages == [{"role": "user", "content": [{"type": "text", "text": "q"}]}]
    try:
        import vllm  # noqa: F401
    except ImportError:  # the default request class is Ray Serve LLM's, which needs vLLM
        with pytest.raises(ConfigError, match="needs vLLM where the job runs"):
            serve_processor_config(QWEN3, app="vllm")


def test_answers_through_a_deployed_model_on_this_cluster_equal_the_http_path(file_store, ray_local, tmp_path,
                                                                               monkeypatch, locomo_cut):
    """``auto`` finds the model's deployment on the run's own Ray Serve and asks it through Ray's
    ServeDeployment processor (our rows, its handle, our reader): the same answers as the HTTP
    processor asking the same scripted model over the local server. The deployment stands in for
    ``ray.serve.llm``'s LLMServer (same app, name and ``chat`` generator; vLLM is not installed)."""
    from functools import partial

    from pydantic import BaseModel, ConfigDict
    from ray import serve

    import vismem.pipelines.memshot.batch_llm as B
    from vismem.pipelines.manifest import Manifest
    from vismem.pipelines.context import RunContext
    from vismem.pipelines.memshot import stage as memshot
    from vismem.serve.backends.scripted import ScriptedVLM
    from vismem.serve.openai_server import LocalOpenAIServer

    class ChatRequest(BaseModel):  # the fields LLMServer.chat reads here
        model_config = ConfigDict(extra="allow")
        model: str
        messages: list
        max_tokens: int
        stream: bool

    @serve.deployment(name=QWEN3, ray_actor_options={"num_cpus": 0})
    class LLMServer:
        def __init__(self) -> None:
            self.vlm = ScriptedVLM(fn="describe", label="describe")

        async def chat(self, request):
            from vismem.serve.openai_format import completion_response, messages_from_openai

            yield completion_response(self.vlm.chat(messages_from_openai(request.messages),
                                                    max_tokens=request.max_tokens), request.model)

    monkeypatch.setattr(B, "serve_processor_config", partial(B.serve_processor_config, dtype=ChatRequest))
    got, kinds = {}, {}
    serve.start(proxy_location="Disabled")
    try:
        serve.run(LLMServer.bind(), name="vllm", route_prefix=None)
        with LocalOpenAIServer(ScriptedVLM(fn="describe", label="describe"), model_id="scripted-describe") as srv:
            vlm = {"name": "qwen3-vl-8b", "args": {"model": srv.model_id, "base_url": srv.base_url,
                                                   "api_key_env": None, "max_retries": 0, "timeout_s": 30,
                                                   "max_concurrency": 3}}
            # The reference asks over HTTP from the driver's threads (one Ray Data execution fewer:
            # test_memshot_stage shows the ray.data.llm HTTP processor gives the threads' answers).
            for processor in ("threads", "auto"):
                mode = {"batch_inference": "threads"} if processor == "threads" else {
                    "batch_inference": "ray-data", "processor": processor}
                cfg = load_config(overrides={"name": "memshot-test", "stages": ["memshot"], "memshot": {
                    "memories": [], "dataset": "locomo", "dataset_path": str(locomo_cut), "conversations": 1,
                    "variants": ["memshot", "text-rag"],
                    "k": [5], "embed_on_ray": False, "max_questions": 3, "vlm": vlm, "judge": None, **mode}})
                manifest = Manifest(file_store, cfg.run_id)
                manifest.begin(cfg, seeds={"root": cfg.seed})
                ctx = RunContext(config=cfg, store=file_store, run_dir=tmp_path / processor, manifest=manifest,
                                 logger=__import__("logging").getLogger("vismem.test"))
                summary = memshot.run(ctx)
                kinds[processor] = (summary["answers"].get("processors") or {}).get("memshot.vlm")
                got[processor] = file_store.read_table(f"{ctx.run_prefix}/memshot/answers_raw.parquet").sort(
                    ["variant", "k", "conversation_id", "question_id"])
                file_store.delete(f"{ctx.run_prefix}/memshot/answers_raw.parquet")  # the next one asks again
    finally:
        serve.shutdown()
    assert kinds["threads"] is None  # no ray.data.llm processor on the threads path
    assert kinds["auto"] == {"kind": "serve", "model": "qwen3-vl-8b", "app": "vllm", "deployment": QWEN3,
                             "reason": f"qwen3-vl-8b is deployed on this Ray cluster (vllm/{QWEN3})"}
    a, b = got["threads"], got["auto"]
    assert a.height == b.height == 6 and set(b["answer_status"]) == {"ok"}, b["raw_answer"].to_list()
    assert a["prediction"].to_list() == b["prediction"].to_list() and max(b["n_images"]) > 0
    assert a["n_images"].to_list() == b["n_images"].to_list() and b["answer_latency_s"].null_count() == 0
