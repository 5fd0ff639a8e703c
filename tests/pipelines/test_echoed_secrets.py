"""A key that the endpoint repeats never reaches the stored answers or judge verdicts.

Some proxies answer a bad key with ``Invalid API key provided: Bearer <key>``; the MemShot stage
stores error texts (``raw_answer``, ``judge_reason``) and replies (``prediction``) in its tables,
on the driver's threads and through Ray Data's HTTP processor alike. A secret the manifest
redacts (a secret-named field of the request body) is echoed too.
"""

from __future__ import annotations

import pytest
import polars as pl
from fastapi import Request  # module level: FastAPI resolves the handler's string annotation here

from vismem.core.store import Store
from vismem.pipelines.config import load_config
from vismem.pipelines.runner import run

KEY = "sk-canary-echo-5f1e2d3c"
BODY_SECRET = "tok-canary-body-81a7c4"  # sent as extra_body.auth_token: a name the manifest redacts


class Echoing:
    """An OpenAI-compatible endpoint repeating the request's Authorization header: the answering
    model fails every other call with it and otherwise answers with it; the judge always fails."""

    def __init__(self, pad: int):
        from fastapi import FastAPI
        from fastapi.responses import JSONResponse

        from vismem.serve.openai_server import LocalOpenAIServer

        self.calls = 0
        app = FastAPI()

        @app.post("/v1/chat/completions")
        async def chat(request: Request):
            body = await request.json()
            # The key where a stored error text is cut (300 characters): a copy cut short before
            # it is scrubbed keeps the key's first characters.
            auth = f"{request.headers.get('authorization', '')} token={body.get('auth_token')}"
            self.calls += 1
            if body["model"] == "judge" or self.calls % 2:
                return JSONResponse(status_code=401, content={"error": "x" * pad + f" Invalid API key provided: {auth}"})
            return JSONResponse({"choices": [{"message": {"content": f"I was called with {auth}"}}]})

        self.server = LocalOpenAIServer(app=app)

    def spec(self, model: str) -> dict:
        return {"name": "openai", "args": {"model": model, "base_url": self.server.base_url,
                                           "api_key_env": "VISMEM_TEST_ECHO_KEY", "max_retries": 0,
                                           "extra_body": {"auth_token": BODY_SECRET}}}


@pytest.mark.parametrize("mode", ["threads", "ray-data"])
def test_echoed_key_is_scrubbed_from_answers_and_verdicts(mode, tmp_path, ray_local, monkeypatch, locomo_cut):
    monkeypatch.setenv("VISMEM_TEST_ECHO_KEY", KEY)
    # the thread path stores "openai:answerer: HTTP 401: <reply>", the HTTP processor the reply
    echo = Echoing(pad=246 - (len("openai:answerer: HTTP 401: ") if mode == "threads" else 0))
    echo.server.start()
    try:
        cfg = load_config(overrides={
            "runs_dir": str(tmp_path / "runs"), "store": {"uri": f"file://{tmp_path}/store"}, "stages": ["memshot"],
            "memshot": {"conversations": 1, "dataset_path": str(locomo_cut), "variants": ["text-rag"], "memories": [], "k": [5],
                        "embed_on_ray": False, "max_questions": 4, "request_concurrency": 1,
                        "batch_inference": mode,
                        "vlm": echo.spec("answerer"), "judge": echo.spec("judge")}})
        run(cfg, progress=False)
    finally:
        echo.server.stop()
    store = Store.open(f"file://{tmp_path}/store")
    tables = {key: store.read_table(f"runs/{cfg.run_id}/{key}")
              for key in ("results/memshot_answers.parquet", "memshot/answers_raw.parquet", "memshot/judged_raw.parquet")}
    ans = tables["results/memshot_answers.parquet"]
    # The endpoint did repeat the key, in errors and in replies, and both were stored.
    assert ans["answer_status"].str.starts_with("error").sum() == 2 and (ans["answer_status"] == "ok").sum() == 2
    errors = ans.filter(pl.col("answer_status") != "ok")
    assert errors["raw_answer"].str.contains("Invalid API key provided: Bearer ***", literal=True).all()
    assert ans.filter(pl.col("answer_status") == "ok")["prediction"].str.contains("Bearer *** token=***",
                                                                                  literal=True).all()
    assert ans["judge_reason"].drop_nulls().str.contains("provided: Bearer ***", literal=True).sum() == 2
    for name, df in tables.items():
        for col in (c for c, t in df.schema.items() if t == pl.Utf8):
            for canary in (KEY, BODY_SECRET):
                leaked = df.filter(pl.col(col).str.contains(canary[:8], literal=True))
                assert leaked.height == 0, f"{name}:{col} stores a secret: {leaked[col].to_list()}"
    run_dir = tmp_path / "runs" / cfg.run_id
    logs = [p for p in run_dir.rglob("*") if p.is_file()] + [tmp_path / "store" / "runs" / cfg.run_id / "run.log"]
    assert (tmp_path / "store" / "runs" / cfg.run_id / "run.log").exists()
    for path in logs:
        text = path.read_bytes()
        assert KEY[:8].encode() not in text and BODY_SECRET[:8].encode() not in text, path


def test_every_processor_s_rows_are_read_without_the_client_s_credentials(monkeypatch):
    # The engine and Serve processors' rows and the HTTP stage's: an echoed key is cut from the
    # text and the error detail alike.
    from vismem.pipelines.memshot.batch_llm import _scrubber, read_output

    monkeypatch.setenv("VISMEM_TEST_ECHO_KEY", KEY)
    spec = {"name": "openai", "args": {"model": "m", "base_url": "http://u:pw-canary-77@127.0.0.1:9/v1",
                                       "api_key_env": "VISMEM_TEST_ECHO_KEY", "extra_body": {"auth_token": BODY_SECRET}}}
    sc = _scrubber(spec)
    said = f"key {KEY} token {BODY_SECRET} pw pw-canary-77"
    rows = {
        "http": {"http_response": {"choices": [{"message": {"content": said}}]}},
        "engine": {"vismem_input_error": "", "__inference_error__": "", "generated_text": said},
        "serve": {"vismem_input_error": "", "__inference_error__": "",
                  "choices": [{"message": {"content": said}}]},
    }
    for kind, row in rows.items():
        assert read_output(kind, row, sc)["text"] == "key *** token *** pw ***", kind
    failed = read_output("serve", {"vismem_input_error": "", "__inference_error__": f"{said} at http://a:b-secret@h"}, sc)
    assert failed["detail"] == "key *** token *** pw *** at http://***@h"
