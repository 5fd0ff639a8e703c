"""The HTTP path end to end: the local OpenAI-compatible server hosting the scripted backend,
the ``openai`` client against it (good, malformed, slow, HTTP-500 and unreachable servers)."""

from __future__ import annotations

import io
import pickle
import threading
import time

import httpx
import pytest
from fastapi import Request  # module level: FastAPI resolves the handlers' string annotations here
from PIL import Image

from vismem.serve.backends.scripted import MALFORMED_TEXT
from vismem.serve.build import build_vlm
from vismem.serve.openai_server import LocalOpenAIServer
from vismem.serve.vlm import VLM, Message, VLMError


def _png(color: tuple[int, int, int], size: int = 8) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (size, size), color).save(buf, format="PNG")
    return buf.getvalue()


def _client(srv: LocalOpenAIServer, **kw) -> VLM:
    args = {"model": srv.model_id, "base_url": srv.base_url, "api_key_env": None,
            "backoff_s": 0.01, "backoff_max_s": 0.05, **kw}
    return build_vlm({"name": "openai", "args": args})


def test_scripted_replies_roundtrip_with_images():
    backend = build_vlm({"name": "scripted", "args": {"fn": "describe"}})
    img1, img2 = _png((255, 0, 0)), _png((0, 0, 255), 16)
    with LocalOpenAIServer(vlm=backend) as srv:
        client = _client(srv)
        assert client.name == "openai:scripted:default"
        res = client.chat([Message("system", "be brief"),
                           Message("user", "what is shown?", images=(img1, img2))], max_tokens=7)
        # The server decoded both data URLs back into the exact bytes, in order.
        assert res.text == f"images=2 bytes=[{len(img1)},{len(img2)}] last_user='what is shown?'"
        assert res.prompt_tokens == 5 and res.completion_tokens == len(res.text.split())
        assert res.latency_s > 0
        models = httpx.get(srv.base_url + "/models").json()
        assert models["data"][0]["id"] == "scripted:default"
        assert httpx.get(f"http://127.0.0.1:{srv.port}/health").json()["status"] == "ok"


def test_cycled_replies_and_concurrency_limit():
    backend = build_vlm({"name": "scripted", "args": {"replies": ["a", "b", "c"], "sleep_s": 0.05}})
    in_flight, peak, lock = [0], [0], threading.Lock()
    orig = backend.chat

    def counting_chat(*a, **k):
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
        try:
            return orig(*a, **k)
        finally:
            with lock:
                in_flight[0] -= 1

    backend.chat = counting_chat
    with LocalOpenAIServer(vlm=backend) as srv:
        client = _client(srv, max_concurrency=2)
        out: list[str] = []
        threads = [threading.Thread(target=lambda: out.append(client.chat([Message("user", "x")]).text))
                   for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert sorted(out) == ["a", "a", "b", "b", "c", "c"]
    assert peak[0] == 2  # the client's semaphore capped in-flight requests across threads


def test_malformed_reply_text_is_returned_not_raised():
    backend = build_vlm({"name": "scripted", "args": {"replies": ["fine"], "malformed": 1}})
    with LocalOpenAIServer(vlm=backend) as srv:
        client = _client(srv)
        assert client.chat([Message("user", "x")]).text == MALFORMED_TEXT
        assert client.chat([Message("user", "x")]).text == "fine"


def test_timeout_then_retry_succeeds():
    backend = build_vlm({"name": "scripted", "args": {"replies": ["late"], "sleep_s": 1.0, "sleep_first": 1}})
    with LocalOpenAIServer(vlm=backend) as srv:
        client = _client(srv, timeout_s=0.3, max_retries=2)
        res = client.chat([Message("user", "x")])
        assert res.text == "late"
        assert backend.calls == 2


def test_http_500_retried_then_succeeds_or_fails_with_reason():
    backend = build_vlm({"name": "scripted", "args": {"replies": ["ok"], "fail_first": 2}})
    with LocalOpenAIServer(vlm=backend) as srv:
        assert _client(srv, max_retries=2).chat([Message("user", "x")]).text == "ok"
        assert backend.calls == 3
    backend = build_vlm({"name": "scripted", "args": {"fail_first": 10}})
    with LocalOpenAIServer(vlm=backend) as srv:
        with pytest.raises(VLMError) as ei:
            _client(srv, max_retries=2).chat([Message("user", "x")])
        assert ei.value.reason == "http_500" and ei.value.attempts == 3
        assert "scripted failure" in str(ei.value)


def test_client_errors_are_not_retried():
    backend = build_vlm({"name": "scripted", "args": {"fail_first": 5, "fail_status": 400}})
    with LocalOpenAIServer(vlm=backend) as srv:
        with pytest.raises(VLMError) as ei:
            _client(srv, max_retries=3).chat([Message("user", "x")])
    assert ei.value.reason == "http_400" and ei.value.attempts == 1 and backend.calls == 1


def test_bad_image_url_is_a_400():
    backend = build_vlm("scripted")
    with LocalOpenAIServer(vlm=backend) as srv:
        r = httpx.post(srv.base_url + "/chat/completions", json={"model": "m", "messages": [
            {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "http://x/y.png"}}]}]})
    assert r.status_code == 400 and "data: URLs" in r.json()["error"]["message"]


def test_unreachable_server_raises_connect_error_after_retries():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))  # held but never listening: refused, and no one else can take it
        port = s.getsockname()[1]
        client = build_vlm({"name": "openai", "args": {"model": "m", "base_url": f"http://127.0.0.1:{port}/v1",
                                                       "max_retries": 2, "backoff_s": 0.01}})
        t0 = time.perf_counter()
        with pytest.raises(VLMError) as ei:
            client.chat([Message("user", "x")])
    assert ei.value.reason == "connect" and ei.value.attempts == 3
    assert time.perf_counter() - t0 < 5


def test_client_pickles_and_sends_auth_and_extra_body(monkeypatch):
    seen: dict = {}
    monkeypatch.setenv("VISMEM_TEST_KEY", "sk-test")
    backend2 = build_vlm({"name": "scripted", "args": {"replies": ["ok"]}})
    srv = LocalOpenAIServer(vlm=backend2)

    @srv.app.middleware("http")
    async def capture(request, call_next):
        seen["auth"] = request.headers.get("authorization")
        seen["body"] = await request.json()
        return await call_next(request)

    with srv:
        client = _client(srv, api_key_env="VISMEM_TEST_KEY", extra_body={"top_k": 1}, seed=7)
        clone = pickle.loads(pickle.dumps(client))
        assert clone.chat([Message("user", "x")], max_tokens=5).text == "ok"
    assert seen["auth"] == "Bearer sk-test"
    assert seen["body"]["top_k"] == 1 and seen["body"]["seed"] == 7 and seen["body"]["max_tokens"] == 5
    assert seen["body"]["temperature"] == 0.0


@pytest.mark.parametrize("payload,status", [({"choices": []}, 200), ({"unexpected": True}, 200),
                                            ("not json at all", 200)])
def test_malformed_response_bodies_raise_malformed_response(payload, status):
    from fastapi import FastAPI
    from fastapi.responses import JSONResponse, PlainTextResponse

    app = FastAPI()

    @app.post("/v1/chat/completions")
    def broken():
        if isinstance(payload, str):
            return PlainTextResponse(payload, status_code=status)
        return JSONResponse(payload, status_code=status)

    with LocalOpenAIServer(app=app) as srv:
        with pytest.raises(VLMError) as ei:
            _client(srv, max_retries=2).chat([Message("user", "x")])
    assert ei.value.reason == "malformed_response"


def test_credentials_echoed_by_the_endpoint_never_leave_the_client(monkeypatch):
    """A proxy that repeats the request's key (in an error, in a reply, past the 500-character
    cut of an error body) and the URL's user-info: neither reaches an error message or a reply."""
    from fastapi import FastAPI
    from fastapi.responses import JSONResponse

    key = "sk-canary-0123456789"
    monkeypatch.setenv("VISMEM_TEST_ECHO_KEY", key)
    app, mode = FastAPI(), {"reply": "error"}

    @app.post("/v1/chat/completions")
    async def echo(request: Request):
        auth = request.headers.get("authorization", "")
        if mode["reply"] == "error":
            return JSONResponse(status_code=401, content={"error": f"Invalid API key provided: {auth}"})
        if mode["reply"] == "edge":  # the key straddles the stored excerpt's end
            return JSONResponse(status_code=401, content={"error": "x" * 470 + auth})
        return JSONResponse({"choices": [{"message": {"content": f"you sent {auth} via "
                                                                   "https://user:pw-canary-42@example.org"}}]})

    with LocalOpenAIServer(app=app) as srv:
        client = _client(srv, api_key_env="VISMEM_TEST_ECHO_KEY", max_retries=0,
                         extra_body={"session_token": "body-canary-99"})
        with pytest.raises(VLMError) as ei:
            client.chat([Message("user", "x")])
        assert "Invalid API key provided: Bearer ***" in str(ei.value)
        mode["reply"] = "edge"
        with pytest.raises(VLMError) as edge:
            client.chat([Message("user", "x")])
        mode["reply"] = "ok"
        reply = client.chat([Message("user", "x")]).text
        # User-info in the URL goes out as Basic auth (base64 of user:password), echoed the same way.
        basic = _client(srv, api_key_env=None, max_retries=0,
                        base_url=srv.base_url.replace("http://", "http://proxyuser:url-canary-77@"))
        mode["reply"] = "error"
        with pytest.raises(VLMError) as by_url:
            basic.chat([Message("user", "x")])
    assert "Invalid API key provided: Basic ***" in str(by_url.value)
    for text in (str(ei.value), str(edge.value), reply, str(by_url.value)):
        assert key not in text and key[:10] not in text and "url-canary-77" not in text, text
    assert reply == "you sent Bearer *** via https://user:pw-canary-42@example.org"  # a reply keeps its URLs


@pytest.mark.parametrize("status", [429, 503])
def test_an_endpoint_refusing_calls_in_flight_is_backed_off_and_no_call_is_lost(status):
    # 8 threads at once through one client; the endpoint refuses the first 6 requests it sees
    # (rate limit / overload): each refused call waits and is sent again, every call gets its
    # answer, and the refusals are what the endpoint counted beyond the 8 answers
    backend = build_vlm({"name": "scripted", "args": {"replies": ["ok"], "fail_first": 6, "fail_status": status}})
    with LocalOpenAIServer(vlm=backend) as srv:
        client = _client(srv, max_retries=6, max_concurrency=8)
        out: list[str] = []
        threads = [threading.Thread(target=lambda: out.append(client.chat([Message("user", "x")]).text))
                   for _ in range(8)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert out == ["ok"] * 8 and backend.calls == 8 + 6
    assert time.perf_counter() - t0 >= 0.01  # the refused calls waited (backoff_s) before their retry


@pytest.mark.parametrize("header", ["-5", "nan", "inf", "-inf", "1e400", "soon", "Wed, 21 Oct 2015 07:28:00 GMT",
                                    "99999999999"])
def test_any_retry_after_header_is_a_bounded_wait_never_a_crash(header):
    """Issue 38 item 2: ``Retry-After: -5`` / ``nan`` ended the run in a ValueError from time.sleep."""
    from fastapi import FastAPI
    from fastapi.responses import JSONResponse

    app, calls = FastAPI(), []

    @app.post("/v1/chat/completions")
    def limited():
        calls.append(1)
        if len(calls) == 1:
            return JSONResponse({"error": "slow down"}, status_code=429, headers={"Retry-After": header})
        return JSONResponse({"choices": [{"message": {"content": "ok"}}]})

    with LocalOpenAIServer(app=app) as srv:
        t0 = time.perf_counter()
        assert _client(srv, max_retries=2).chat([Message("user", "x")]).text == "ok"
    assert len(calls) == 2 and time.perf_counter() - t0 < 5  # waited at most backoff_max_s (0.05 s)


def test_retry_after_values_are_clamped():
    from vismem.serve.http_client import RETRY_AFTER_MAX_S, retry_after_seconds

    assert retry_after_seconds("2.5") == 2.5 and retry_after_seconds("0") == 0.0
    assert retry_after_seconds("99999999999") == RETRY_AFTER_MAX_S
    for bad in ("-5", "nan", "inf", "", None, "soon", "1e400"):
        assert retry_after_seconds(bad) is None
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date in the past: no wait


def test_an_endless_reply_stops_at_the_bound(monkeypatch):
    from fastapi import FastAPI
    from fastapi.responses import StreamingResponse

    from vismem.serve import http_client

    monkeypatch.setattr(http_client, "MAX_REPLY_BYTES", 1 << 20)
    app, sent = FastAPI(), []

    @app.post("/v1/chat/completions")
    def endless():
        def body():
            block = b"[" * 65536
            for _ in range(10_000):  # 640 MB unless the client stops reading
                sent.append(len(block))
                yield block
        return StreamingResponse(body(), media_type="application/json")

    with LocalOpenAIServer(app=app) as srv:
        with pytest.raises(VLMError, match=r"more than 1,048,576 bytes") as ei:
            _client(srv, max_retries=0).chat([Message("user", "x")])
    assert ei.value.reason == "malformed_response" and sum(sent) < 64 << 20
