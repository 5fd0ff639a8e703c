"""The shop actors' base: episode threads each get a page env, and HTTP envs share one page cache."""

from __future__ import annotations

from vismem.core.store import Store


def _http_env(shop_url, **kw):
    from vismem.env.envs import make_env

    return make_env("http", shop_url, **kw)


def test_episode_threads_have_their_own_envs_sharing_one_page_cache(tmp_path, shared_dir):
    from vismem.pipelines.dmv.encode_job import EncodeWorker

    store = Store.open(f"file://{tmp_path}/store")
    w = EncodeWorker(store, [{"name": "scripted-shopper", "args": {"seed": 0}}], ["t"], data_dir=str(shared_dir / "data"),
                     env_factory=_http_env, episodes=3)
    try:
        out = w({"backend": [0, 0, 0], "seed": [0, 1, 2], "j": [0, 0, 0]})
        assert out["ok"] == [True, True, True], out["error"]
        envs = [e for _, e in w._envs]
        assert len(envs) == 3 and len({id(e) for e in envs}) == 3  # one env per episode thread
        assert all(e.cache is w._env_cache for e in envs) and w._env_cache is not None
        # every page a session read was fetched by one of the envs and is in the one cache
        assert 0 < len(w._env_cache.pages) <= sum(e.fetches for e in envs)
    finally:
        w.close()
