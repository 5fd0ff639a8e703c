"""``ray.serve.llm`` on the real CPU engine, deployed the way a user deploys: ``vismem serve up``
puts the tiny Qwen2.5-VL variant behind Ray's OpenAI gateway on 127.0.0.1 (the project's
``serve_config`` / ``llm_app`` builder, a local Ray); the project's ``openai`` client chats with an
image through ``deployed:NAME``; the DMV-Bench encode stage browses one short chain against it
through the project's HTTP env; ``vismem serve down`` leaves nothing listening."""

from __future__ import annotations

import json

import pytest

from vismem.serve.vlm import Message
from tests.engine.conftest import png
from tests.pipelines.test_serve_command import state  # noqa: F401 - the private serve state fixture

MODEL = "tiny-qwen2.5-vl-vllm"


@pytest.mark.timeout(1800)
def test_served_tiny_vlm_answers_the_client_and_encode_browses_a_chain(state, tmp_path, tiny_dir, capsys):
    from vismem.core.store import Store
    from vismem.pipelines.cli import main
    from vismem.pipelines.localcluster import port_holders
    from vismem.serve.build import build_vlm

    try:
        assert main(["serve", "up", MODEL, "--ray-cpus", "3", "--timeout", "900"]) == 0
        st = json.loads(state.read_text())
        up = capsys.readouterr().out
        assert "RUNNING" in up and st["serve_url"].startswith("http://127.0.0.1:")
        # The gateway app is Ray's build_openai_app with the CPU profile the YAML asks for.
        [llm] = [a for a in st["config"]["applications"] if a["name"] == "vllm"]
        [conf] = llm["args"]["llm_configs"]
        assert conf["accelerator_config"] == {"kind": "cpu"} and "accelerator_type" not in conf
        assert conf["runtime_env"]["env_vars"]["VLLM_MLA_DISABLE"] == "1"

        vlm = build_vlm(f"deployed:{MODEL}")
        got = vlm.chat([Message("user", "What is on the table?", images=(png("red"),))], max_tokens=8)
        assert isinstance(got.text, str) and 1 <= got.completion_tokens <= 8 and got.prompt_tokens > 10

        store = tmp_path / "store"
        argv = ["run", "encode", "--store", f"file://{store}", "--no-progress", "--backend", f"deployed:{MODEL}",
                "--chains", "1", "--J", "1", "--set", "encode.env=http", "--set", "encode.max_tokens=32",
                "--set", f"runs_dir={tmp_path / 'runs'}", "--set", "ray.actor_cpus=0.25", "--set", "ray.num_cpus=2",
                "--set", "ray.object_store_mb=300", "--json"]
        assert main(argv) == 0
        enc = json.loads(capsys.readouterr().out)["encode"]
        assert enc["status"] == "done" and enc["ran"] == 1 and enc["failed"] == []
        [row] = enc["table3"]
        assert MODEL in row["backend_name"] and row["failed_calls"] == 0 and row["mean_steps"] >= 1
        traj = [k for k in Store.open(f"file://{store}").list("") if "trajector" in k]
        assert traj, "no trajectory was cached"
    finally:
        rc = main(["serve", "down"])
    assert rc == 0 and not state.exists()
    assert port_holders([st["http"]["port"]]) == []
