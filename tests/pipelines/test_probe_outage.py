"""A recall call that fails inside an otherwise healthy unit is an outage, never a memory failure:
the probe is run again on its own until it has model answers (``probes.probe_retries``)."""

from __future__ import annotations

import json

import polars as pl
from fastapi import Request  # module level: FastAPI resolves the handler's string annotation here

from vismem.core.store import Store
from vismem.pipelines.config import load_config
from vismem.pipelines.runner import run


class Intermittent:
    """A recall VLM behind an OpenAI-compatible endpoint that answers 500 to the calls numbered ``fail_at``."""

    def __init__(self, vlm, fail_at: set[int]):
        from fastapi import FastAPI
        from fastapi.responses import JSONResponse

        from vismem.serve.openai_server import LocalOpenAIServer, chat_completions

        self.calls, self.failed = 0, 0
        app = FastAPI()

        @app.post("/v1/chat/completions")
        async def chat(request: Request):
            self.calls += 1
            if self.calls in fail_at:
                self.failed += 1
                return JSONResponse(status_code=500, content={"error": {"message": "outage", "type": "server_error"}})
            import asyncio

            status, content = await asyncio.to_thread(chat_completions, vlm, await request.json(), "m")
            return JSONResponse(status_code=status, content=content)

        self.server = LocalOpenAIServer(app=app)

    def spec(self) -> dict:
        return {"name": "openai", "args": {"model": "recall", "base_url": self.server.base_url, "api_key_env": None,
                                           "max_retries": 0, "timeout_s": 20}}


def _probes(tmp_path, fail_at: set[int], seed):
    from vismem.agents.scripted_recall import ScriptedRecall

    srv = Intermittent(ScriptedRecall(), fail_at)
    srv.server.start()
    try:
        over = {"runs_dir": str(tmp_path / "runs"), "store": {"uri": f"file://{tmp_path}/store"},
                "name": "probe-blips", "stages": ["encode", "replay", "probes"],
                "encode": {"chains": 1, "J": 3, "env": "http"},
                "memory": {"architectures": ["textonly"], "components": {}},
                "probes": {"backends": [srv.spec()], "on_ray": False}}
        cfg = load_config(overrides=over)
        seed(cfg)
        out = run(cfg, progress=False)
    finally:
        srv.server.stop()
    store = Store.open(f"file://{tmp_path}/store")
    df = store.read_table(f"runs/{cfg.run_id}/results/probes.parquet")
    marks = [json.loads(p.read_text()) for p in (tmp_path / "store" / "probes").rglob("*.done.json")]
    return out, df, srv, marks


def test_failed_recall_calls_are_retried_not_scored(tmp_path, ray_local, dmv_seed):
    # Both runs read the session's browsed chain and features (tests/pipelines/conftest.py).
    clean_out, clean, _, _ = _probes(tmp_path / "clean", set(), dmv_seed)
    out, df, srv, marks = _probes(tmp_path / "blips", {2, 5, 11}, dmv_seed)
    assert srv.failed == 3 and out["probes"]["status"] == "done" and "_partial" not in out
    assert df.filter(pl.col("failure") == "model_error").height == 0  # no outage scored as a wrong probe
    key = ["probe_id", "recall_session"]
    assert df.sort(key).select(*key, "correct", "final_url").equals(
        clean.sort(key).select(*key, "correct", "final_url"))
    assert sum(m.get("retried_probes", 0) for m in marks) > 0


def test_a_probe_without_a_model_answer_after_its_retries_fails_the_unit():
    from vismem.core.failures import UnitFailed
    from vismem.pipelines.dmv.probes_job import ProbeWorker

    class Res:
        def __init__(self, ok):
            self.ok = ok

        def row(self):
            return {"log": [{"status": "ok" if self.ok else "failed", "error": "http_500: outage"}], "correct": False}

    w = ProbeWorker.__new__(ProbeWorker)
    w.options = {"probe_retries": 2}
    attempts = []
    w._probe = lambda a, p, v: attempts.append(p) or Res(p == "healed" and len(attempts) > 1)
    rows = [Res(True).row(), Res(False).row()]
    assert w._retry_outages(None, ["fine", "healed"], rows, None) == 1 and rows[1]["log"][0]["status"] == "ok"
    import pytest

    with pytest.raises(UnitFailed, match="1 probes had no model answer after 2 retries"):
        w._retry_outages(None, ["fine", "down"], [Res(True).row(), Res(False).row()], None)


def test_units_committed_before_the_bank_size_fix_are_probed_again(file_store, monkeypatch):
    """v2 units may hold NoMemory rows with bank_size 0 and outages scored wrong: their key is not read back."""
    from vismem.pipelines.dmv import probecache
    from vismem.pipelines.dmv.probecache import ProbeCache, arch_key

    spec, rec, proto = {"name": "nomemory", "spec": {"name": "nomemory"}}, {"name": "scripted-recall"}, {"mc": 0}
    monkeypatch.setattr(probecache, "PROTOCOL_VERSION", "dmv-f2-recall.v2")
    old = arch_key(spec, rec, proto)
    ProbeCache(file_store, "slug", 0, old).write("ex", 1, [{"probe_id": "p", "bank_size": 0}], meta={})
    monkeypatch.undo()
    new = arch_key(spec, rec, proto)
    assert new != old and not ProbeCache(file_store, "slug", 0, new).is_done("ex", 1)
