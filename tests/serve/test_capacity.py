"""The local server's capacity model: N slots, a service time from the request, queueing beyond N,
and ``GET /v1/stats`` computed right (utilisation, wall, in flight, queue wait)."""

from __future__ import annotations

import io
import threading

import httpx
import pytest
from PIL import Image

from vismem.core.errors import ConfigError
from vismem.serve.build import build_vlm
from vismem.serve.capacity import CapacityModel, count_images, requested_tokens
from vismem.serve.openai_server import LocalOpenAIServer
from vismem.serve.openai_format import to_data_url


def _png() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (8, 8), (9, 9, 9)).save(buf, format="PNG")
    return buf.getvalue()


def _body(images: int = 0, max_tokens: int = 16) -> dict:
    parts = [{"type": "text", "text": "hi"}] + [{"type": "image_url", "image_url": {"url": to_data_url(_png())}}
                                                for _ in range(images)]
    return {"model": "m", "messages": [{"role": "user", "content": parts}], "max_tokens": max_tokens}


def _fire(url: str, bodies: list[dict]) -> list[int]:
    codes: list[int] = [0] * len(bodies)

    def one(i: int) -> None:
        codes[i] = httpx.post(f"{url}/chat/completions", json=bodies[i], timeout=30).status_code

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(bodies))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return codes


def test_service_time_from_the_request():
    m = CapacityModel(slots=2, base_s=0.1, per_image_s=0.05, per_token_s=0.001, jitter=0.2)
    assert m.service_s(0, 0) == pytest.approx(0.1)
    assert m.service_s(3, 100) == pytest.approx(0.1 + 0.15 + 0.1)
    assert m.service_s(0, 0, u=0.0) == pytest.approx(0.08) and m.service_s(0, 0, u=0.999999) == pytest.approx(0.12)
    body = _body(images=2, max_tokens=7)
    assert count_images(body) == 2 and requested_tokens(body) == 7 and requested_tokens({}) == 512


@pytest.mark.parametrize("kw, msg", [({"slots": 0}, "slots must be >= 1"), ({"base_s": -1}, "base_s must be >= 0"),
                                     ({"jitter": 1.0}, "jitter must be in"), ({"tokens": "x"}, "tokens must be")])
def test_bad_capacity_model_is_one_clear_error(kw, msg):
    with pytest.raises(ConfigError, match=msg):
        CapacityModel(**kw)


def test_four_slots_eight_calls_queue_and_utilisation():
    """N=4 slots, 0.5 s a call, M=8 calls at once: two waves, wall ~1 s, every slot busy for all
    of it (utilisation ~1), 8 in flight at the peak but never more than 4 in service, and the
    second wave waited ~0.5 s for a slot."""
    vlm = build_vlm({"name": "scripted", "args": {"replies": ["ok"]}})
    with LocalOpenAIServer(vlm=vlm, capacity=CapacityModel(slots=4, base_s=0.5)) as srv:
        assert _fire(srv.base_url, [_body() for _ in range(8)]) == [200] * 8
        st = httpx.get(f"{srv.base_url}/stats").json()
    assert st["slots"] == 4 and st["calls"] == 8 and st["errors"] == 0 and st["in_flight"] == 0
    assert st["wall_s"] == pytest.approx(1.0, abs=0.2)
    assert st["busy_slot_s"] == pytest.approx(8 * 0.5, rel=0.1)
    assert st["utilisation"] == pytest.approx(st["busy_slot_s"] / (4 * st["wall_s"]))
    assert st["utilisation"] > 0.8
    assert st["max_busy"] == 4 and st["max_in_flight"] > 4  # queueing beyond N
    assert st["mean_service_s"] == pytest.approx(0.5, abs=0.05)
    assert st["max_queue_wait_s"] == pytest.approx(0.5, abs=0.15)
    assert st["mean_queue_wait_s"] == pytest.approx(0.25, abs=0.1)  # half waited ~0.5 s, half none
    assert st["calls_per_s"] == pytest.approx(8 / st["wall_s"])


def test_half_used_fleet_and_images_lengthen_service():
    """Two calls with 2 images each (0.2 + 2 x 0.2 s) on 4 slots: utilisation ~0.5, no queue; a
    reset starts a new measurement. (Times long enough that thread start-up on a loaded machine
    stays small beside them.)"""
    vlm = build_vlm({"name": "scripted", "args": {"replies": ["ok"]}})
    cap = CapacityModel(slots=4, base_s=0.2, per_image_s=0.2, tokens="max_tokens")
    with LocalOpenAIServer(vlm=vlm, capacity=cap) as srv:
        _fire(srv.base_url, [_body()])
        assert httpx.post(f"{srv.base_url}/stats/reset").status_code == 200
        assert httpx.get(f"{srv.base_url}/stats").json()["calls"] == 0
        _fire(srv.base_url, [_body(images=2), _body(images=2)])
        st = srv.fleet.stats.snapshot()
    assert st["calls"] == 2 and st["max_in_flight"] == 2 and st["max_queue_wait_s"] < 0.05
    assert st["mean_service_s"] == pytest.approx(0.6, abs=0.05)
    assert st["utilisation"] == pytest.approx(2 * 0.6 / (4 * st["wall_s"]), rel=0.1)
    assert st["utilisation"] == pytest.approx(0.5, abs=0.12)


def test_no_capacity_model_keeps_the_plain_server():
    vlm = build_vlm({"name": "scripted", "args": {"replies": ["ok"]}})
    with LocalOpenAIServer(vlm=vlm) as srv:
        assert srv.fleet is None
        assert httpx.get(f"{srv.base_url}/stats").status_code == 404
        assert _fire(srv.base_url, [_body()]) == [200]


def test_cli_rejects_a_bad_capacity_model_in_one_line(capsys):
    from vismem.serve.openai_server import main

    assert main(["--backend", "scripted", "--capacity", '{"slots": 0}']) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: capacity model: slots must be >= 1, got 0"]
