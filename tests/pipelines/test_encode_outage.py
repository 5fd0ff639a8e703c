"""A failed browsing call is an outage, not a forced navigation: the session is browsed again on its own."""

from __future__ import annotations

from vismem.core.store import Store


def _http_env(shop_url, **kw):
    from vismem.env.envs import make_env

    return make_env("http", shop_url, **kw)


def test_a_session_with_failed_calls_is_browsed_again_until_every_call_is_answered(tmp_path, shared_dir):
    from vismem.pipelines.dmv.encode_job import EncodeWorker

    store = Store.open(f"file://{tmp_path}/store")
    reply = 'Thought: look\nAction: navigate("/collection/chair-modern")'
    spec = {"name": "scripted", "args": {"replies": [reply], "fail_first": 2}}
    for retries, ok in ((3, True), (0, False)):
        w = EncodeWorker(store, [spec], [f"t-{retries}"], data_dir=str(shared_dir / "data"), max_failed_calls=0.5,
                         session_retries=retries, env_factory=_http_env)
        try:
            out = w({"backend": [0], "seed": [0], "j": [0]})
        finally:
            w.close()
        assert out["ok"] == [ok], out["error"]
        assert w.caches[0].is_done(0, 0) is ok
        if ok:
            summary = w.caches[0].read_summary(0, 0)
            assert summary["failed_calls"] == 0, summary  # the re-run, not the session the outage cut
        else:
            assert "2 model calls still failed after 0 re-runs of the session (encode.session_retries)" in out["error"][0]
