"""A failed unit of work is never cached as finished: endpoint outages through the real local
OpenAI-compatible server (HTTP 500 on every call), then the same server healed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import replace

import polars as pl
import yaml
from fastapi import Request  # module level: FastAPI resolves the handler's string annotation here

from vismem.core.store import Store
from vismem.pipelines.config import load_config
from vismem.pipelines.runner import run


class Flaky:
    """A VLM behind an OpenAI-compatible endpoint that answers 500 to everything while ``down``."""

    def __init__(self, vlm):
        from fastapi import FastAPI
        from fastapi.responses import JSONResponse

        from vismem.serve.openai_server import LocalOpenAIServer, chat_completions

        self.down, self.calls = True, 0
        app = FastAPI()

        @app.post("/v1/chat/completions")
        async def chat(request: Request):
            self.calls += 1
            if self.down:
                return JSONResponse(status_code=500, content={"error": {"message": "outage", "type": "server_error"}})
            import asyncio

            status, content = await asyncio.to_thread(chat_completions, vlm, await request.json(), "m")
            return JSONResponse(status_code=status, content=content)

        self.server = LocalOpenAIServer(app=app)

    def __enter__(self):
        self.server.start()
        return self

    def __exit__(self, *exc):
        self.server.stop()

    def spec(self, model: str = "m") -> dict:
        # base_url and retries are transport: the healed server at another moment is the same model
        return {"name": "openai", "args": {"model": model, "base_url": self.server.base_url, "api_key_env": None,
                                           "max_retries": 0, "timeout_s": 20}}


def _base(tmp_path, **over):
    cfg = {"runs_dir": str(tmp_path / "runs"), "store": {"uri": f"file://{tmp_path}/store"}}
    for k, v in over.items():
        cfg[k] = {**cfg[k], **v} if isinstance(v, dict) and isinstance(cfg.get(k), dict) else v
    return cfg


def test_encode_outage_exits_nonzero_caches_nothing_and_a_healed_rerun_completes(tmp_path, ray_local):
    from vismem.agents.scripted import ScriptedShopper
    from vismem.pipelines.dmv.trajectories import TrajectoryCache

    with Flaky(ScriptedShopper(seed=0)) as srv:
        data = _base(tmp_path, stages=["encode"], encode={"chains": 1, "J": 2, "env": "http", "backends": [srv.spec()]})
        (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(data))
        r = subprocess.run([sys.executable, "-m", "vismem", "run", "--config", str(tmp_path / "cfg.yaml"),
                            "--no-progress", "--json"], capture_output=True, text=True, timeout=600)
        assert r.returncode == 1, r.stderr[-2000:]
        assert "Traceback" not in r.stderr
        last = r.stderr.strip().splitlines()[-1]
        assert last.startswith("vismem: error: stage(s) encode finished partially (encode: 2 of 2 sessions run "
                               "failed, e.g. "), last
        assert "http_500" in last and "re-run to retry them" in last
        out = json.loads(r.stdout[r.stdout.index("{"):])
        enc = out["encode"]
        assert enc["status"] == "partial" and enc["failed_sessions"] == 2 and (enc["ran"], enc["cached"]) == (0, 0)
        assert "model calls failed (more than 50% allowed by encode.max_failed_calls): http_500" in enc["failed"][0]["error"]
        assert out["_failures"]["encode"].startswith("2 of 2 sessions run failed")
        store = Store.open(f"file://{tmp_path}/store")
        (slug,) = enc["backends"]
        assert TrajectoryCache(store, slug).done_keys() == set()  # nothing committed
        assert store.read_table(enc["results"]).height == 0
        man = store.get_json(f"runs/{out['_run_id']}/manifest.json")
        assert man["stages"]["encode"]["status"] == "partial"

        srv.down = False  # the endpoint comes back: the same config completes, nothing is stale
        cfg = load_config(tmp_path / "cfg.yaml")
        healed = run(cfg, progress=False)
        assert "_partial" not in healed
        assert (healed["encode"]["ran"], healed["encode"]["cached"], healed["encode"]["failed"]) == (2, 0, [])
        assert TrajectoryCache(store, slug).done_keys() == {(0, 0), (0, 1)}
        again = run(cfg, progress=False)["encode"]
        assert (again["ran"], again["cached"]) == (0, 2)
    df = store.read_table(healed["encode"]["results"])
    assert df.height == 2 and (df["failed_calls"] == 0).all() and (df["distinct_products"] >= 8).all()


def test_threshold_is_a_share_of_the_session_calls(tmp_path, ray_local, data_dir):
    """A few failed calls (under the threshold) keep the session; max_failed_calls=0 fails it."""
    import re

    from vismem.pipelines.dmv.encode_job import EncodeWorker

    store = Store.open(f"file://{tmp_path}/store")
    reply = 'Thought: look\nAction: navigate("/collection/chair-modern")'
    spec = {"name": "scripted", "args": {"replies": [reply], "fail_first": 3}}
    for limit, ok in ((0.5, True), (0.0, False)):
        w = EncodeWorker(store, [spec], [f"t-{ok}"], data_dir=str(data_dir),
                         max_failed_calls=limit, env_factory=_http_env)
        try:
            out = w({"backend": [0], "seed": [0], "j": [0]})
        finally:
            w.close()
        assert out["ok"] == [ok], out["error"]
        if not ok:
            assert re.search(r"^3 of \d+ model calls failed \(more than 0% allowed by encode.max_failed_calls\): "
                             r"ScriptedFault x3", out["error"][0]), out["error"][0]
        assert w.caches[0].is_done(0, 0) is ok


def _http_env(shop_url, **kw):
    from vismem.env.envs import make_env

    return make_env("http", shop_url, **kw)


def test_memshot_answer_outage_is_partial_and_retried(tmp_path, ray_local, locomo_cut):
    from vismem.serve.backends.scripted import ScriptedVLM

    with Flaky(ScriptedVLM(["an answer"], label="a")) as srv:
        over = _base(tmp_path, stages=["memshot"], memshot={
            "conversations": 1, "dataset_path": str(locomo_cut), "variants": ["text-rag"], "memories": [], "k": [5],
            "embed_on_ray": False, "max_questions": 3, "request_concurrency": 1, "vlm": srv.spec()})
        cfg = load_config(overrides=over)
        first = run(cfg, progress=False)
        assert first["_partial"] == ["memshot"] and first["memshot"]["status"] == "partial"
        assert first["memshot"]["answers"]["answer_errors"] == 3
        assert first["_failures"]["memshot"].startswith("3 of 3 answers failed")
        srv.down = False
        calls = srv.calls
        second = run(cfg, progress=False)
    assert "_partial" not in second and second["memshot"]["status"] == "done"
    assert second["memshot"]["answers"]["answer_errors"] == 0 and srv.calls == calls + 3  # only the failed ones
    store = Store.open(f"file://{tmp_path}/store")
    ans = store.read_table(f"runs/{cfg.run_id}/results/memshot_answers.parquet")
    assert ans["answer_status"].to_list() == ["ok"] * 3 and not ans["answer_truncated"].any()


def test_probe_units_whose_recall_calls_failed_are_not_cached(tmp_path, ray_local, dmv_seed):
    from vismem.agents.scripted_recall import ScriptedRecall
    from vismem.pipelines.dmv.probecache import PROBE_ROOT

    with Flaky(ScriptedRecall()) as srv:
        over = _base(tmp_path, name="probe-outage", stages=["encode", "replay", "probes"],
                     encode={"chains": 1, "J": 3, "env": "http"},
                     memory={"architectures": ["textonly"], "components": {}},
                     probes={"backends": [srv.spec("recall")], "on_ray": False})
        cfg = load_config(overrides=over)
        dmv_seed(cfg)  # the session's browsed chain and features (tests/pipelines/conftest.py)
        first = run(cfg, progress=False)
        assert first["_partial"] == ["probes"] and first["probes"]["ran"] == 0
        assert "recall-VLM calls failed (more than 50% allowed by probes.max_failed_calls): http_500" in \
            first["probes"]["failed"][0]["error"]
        store_dir = tmp_path / "store" / PROBE_ROOT
        assert not list(store_dir.rglob("*.done.json")) if store_dir.exists() else True
        srv.down = False
        second = run(cfg, progress=False)
    assert "_partial" not in second and second["probes"]["status"] == "done"
    assert second["probes"]["ran"] == second["probes"]["units"] == 2
    assert len(list(store_dir.rglob("*.done.json"))) == 2


def test_replies_of_any_size_are_stored_capped(data_dir, tmp_path):
    from vismem.agents.chains import session_spec
    from vismem.core.failures import REPLY_CAP
    from vismem.agents.session import run_session
    from vismem.env.http_env import HttpEnv
    from vismem.env.storefront.server import ShopServer
    from vismem.serve.backends.scripted import ScriptedVLM

    huge = 'Thought: many words\nAction: navigate("/collection/chair-modern")\n' + "blah " * 700_000  # 3.5 MB
    with ShopServer.from_data(data_dir, seed=0) as shop, HttpEnv(shop.url) as env:
        res = run_session(replace(session_spec(0, 0), n_steps=2), vlm=ScriptedVLM([huge]), env=env, backend="t")
    for s in res.steps:
        assert s.status == "ok" and s.action_type == "navigate"  # parsed from the whole reply
        assert len(s.reply) == REPLY_CAP and s.reply == huge[:REPLY_CAP]
        assert s.error == f"reply cut to {REPLY_CAP} of {len(huge)} characters where stored"
    from vismem.pipelines.memshot.answercache import capped

    df = capped(pl.DataFrame({"prediction": ["short", huge, None]}))
    assert df["answer_truncated"].to_list() == [False, True, False]
    assert df["prediction"].str.len_chars().to_list() == [5, REPLY_CAP, None]


def test_probe_step_logs_are_capped():
    from vismem.core.failures import REPLY_CAP
    from vismem.pipelines.dmv.probes_job import _capped_step

    step = {"status": "ok", "reply": "x" * (REPLY_CAP + 10)}
    out = _capped_step(step)
    assert len(out["reply"]) == REPLY_CAP and out["reply_truncated"] is True
    assert _capped_step({"status": "ok", "reply": "short"}) == {"status": "ok", "reply": "short"}


# A disk that fills during encode, in every process of the run (the driver and Ray's workers, which
# inherit PYTHONPATH): os.write -- the call that writes a local store's objects -- fails with ENOSPC
# for files under the store once the first trajectory object is being written, the way a real
# full disk fails that call. Nothing outside the store (the run's local folder) is affected.
_FULL_DISK = '''
import errno, os
_root, _full = os.environ["VISMEM_FAKE_FULL_ROOT"], os.environ["VISMEM_FAKE_FULL_MARK"]
_write = os.write

def _fake_write(fd, data):
    try:
        path = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        path = ""
    if path.startswith(_root + "/"):
        if path.startswith(_root + "/trajectories/") and not os.path.exists(_full):
            open(_full, "w").close()
        if os.path.exists(_full):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    return _write(fd, data)

os.write = _fake_write
'''


def test_a_disk_filling_during_encode_is_one_line_and_the_manifest_ends_failed(tmp_path):
    """Not 'run the encode stage first' (exit 2) from the next stage, nor a traceback: one line
    naming the object that could not be written, exit 3, and the failure recorded in the
    manifest once the disk has room again (it is kept locally meanwhile)."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(_FULL_DISK)
    store_dir, mark = tmp_path / "store", tmp_path / "disk-full"
    data = _base(tmp_path, name="fulldisk", stages=["encode", "replay"],
                 encode={"chains": 1, "J": 1, "env": "http", "workers": 1},  # the first write fills it
                 memory={"architectures": ["textonly"], "components": {}})
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(data))
    cfg = load_config(tmp_path / "cfg.yaml")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hook), os.environ.get("PYTHONPATH", "")]),
           "VISMEM_FAKE_FULL_ROOT": str(store_dir), "VISMEM_FAKE_FULL_MARK": str(mark), "RAY_AUTH_MODE": "disabled"}
    r = subprocess.run([sys.executable, "-m", "vismem", "run", "--config", str(tmp_path / "cfg.yaml"), "--no-progress"],
                       capture_output=True, text=True, timeout=600, env=env)
    assert mark.exists(), "the disk never filled: the fake was not in force"
    assert r.returncode == 3, (r.returncode, r.stderr[-3000:])
    assert "Traceback" not in r.stderr and "encode stage first" not in r.stderr, r.stderr[-3000:]
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("vismem:")]
    assert len(lines) == 1 and lines[0] == r.stderr.strip().splitlines()[-1], r.stderr[-3000:]
    assert re.fullmatch(rf"vismem: error: no space left on device writing file://{store_dir}/\S+ "
                        r"during stage encode", lines[0]), lines[0]
    pending = tmp_path / "runs" / cfg.run_id / "pending-state.json"
    store = Store.open(f"file://{store_dir}")
    assert pending.exists()  # the store could not take the final state: kept beside the run's log
    assert store.get_json(f"runs/{cfg.run_id}/manifest.json")["stages"]["encode"]["status"] == "running"

    mark.unlink()  # room again, and no fake: the next command against the store writes it
    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}
    listed = subprocess.run([sys.executable, "-m", "vismem", "runs", "--config", str(tmp_path / "cfg.yaml"), "--json",
                             "--no-headline"], capture_output=True, text=True, timeout=300, env=env)
    assert listed.returncode == 0 and listed.stderr == "", listed.stderr[-2000:]
    (row,) = json.loads(listed.stdout)
    assert (row["run_id"], row["status"], row["stages"]) == (cfg.run_id, "failed", {"encode": "failed"})
    entry = store.get_json(f"runs/{cfg.run_id}/manifest.json")["stages"]["encode"]
    assert entry["status"] == "failed" and entry["error"] == lines[0][len("vismem: error: "):]
    assert not pending.exists()
