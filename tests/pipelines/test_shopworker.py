"""The shop actors' base: episode threads each get a page env, and HTTP envs share one page cache."""

from __future__ import annotations

from vismem.core.store import Store


def _http_env(shop_url, **kw):
    from vismem.env.envs import make_env

    return make_env("http", shop_url, **kw)


def test_episode_threads_have_their_own_envs_sharing_one_page_cache(tmp_path, data_dir):
    from vismem.pipelines.dmv.encode_job import EncodeWorker

    store = Store.open(f"file://{tmp_path}/store")
    w = EncodeWorker(store, [{"name": "scripted-shopper", "args": {"seed": 0}}], ["t"], data_dir=str(data_dir),
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


def test_a_units_episodes_run_at_once_on_the_inner_pool_and_every_pool_thread_closes_its_env():
    """Units on the episode pool each wait for their own episodes (a probe unit's probes) on the
    inner pool: all of them in flight at once, no unit holding a thread its episodes need."""
    import threading

    from vismem.pipelines.dmv.shopworker import ShopWorker

    closed = []

    class _Env:
        def close(self):
            closed.append(threading.get_ident())

    w = ShopWorker()
    w._start(shop_url="http://127.0.0.1:9", shop={}, env_factory=lambda url, **kw: _Env(), env_kwargs={}, episodes=3)
    # 3 units x 3 episodes: the inner pool holds 3 at once; a barrier of 3 passes only if the
    # episodes of a unit (or of several) really overlap
    barrier = threading.Barrier(3, timeout=10)

    def episode(x):
        w.env  # an env per inner-pool thread
        barrier.wait()
        return x * 10

    def unit(u):
        return w._map(episode, [u, u + 1, u + 2], inner=True)

    assert w._map(unit, [0, 3, 6]) == [[0, 10, 20], [30, 40, 50], [60, 70, 80]]
    assert set(w._pools) == {"episode", "inner"}
    w.close()
    assert len(closed) == 3 and w._pools == {}  # the inner pool's three threads closed their envs
