"""`vismem weights`: the weights a run config needs are derived from its component specs and the
model YAMLs (not a list), and copied from a local folder to an s3:// prefix (the local S3 server)
or a models dir -- nothing is downloaded here."""

from __future__ import annotations

import json
import os

import pytest

from vismem.core.errors import ConfigError
from vismem.pipelines.commands import weights as W
from vismem.pipelines.config import load_config
from vismem.serve.models import load_model_spec

PAPER = {"qwen2.5-vl-7b": "Qwen/Qwen2.5-VL-7B-Instruct", "qwen3-vl-8b": "Qwen/Qwen3-VL-8B-Instruct",
         "qwen3-vl-embedding-8b": "Qwen/Qwen3-VL-Embedding-8B", "clip-vit-b32": "openai/clip-vit-base-patch32",
         "jina-embeddings-v4": "jinaai/jina-embeddings-v4-vllm-retrieval",
         "siglip2-base": "google/siglip2-base-patch16-384"}


@pytest.fixture(autouse=True)
def no_downloads(monkeypatch):
    monkeypatch.setattr(W, "_download", lambda *a: pytest.fail("a test tried to download weights"))


def test_paper_needs_every_served_model_and_nothing_hosted():
    cfg = load_config(preset="paper")
    assert {"gemini-2.5-flash", "glm-5", "minilm"} <= set(W.named_variants(cfg))  # named, but no weights
    got = W.needed_weights(cfg)
    assert {w.variant: w.source for w in got} == PAPER
    for w in got:
        path = load_model_spec(w.variant).args.get("path")
        if path:  # a vismem replica reads its weights from the models dir, under this folder
            assert path == f"{os.environ.get('VISMEM_MODELS_DIR', '/models')}/{w.folder}"
        else:  # vLLM: the hub id's last part
            assert w.folder == w.source.split("/")[-1]


def test_the_list_follows_the_config():
    paper = {w.variant for w in W.needed_weights(load_config(preset="paper"))}
    fewer = load_config(preset="paper", overrides={"memory": {"architectures": ["dualmem-clip"]},
                                                   "memshot": {"extra_retrievers": []}})
    assert {w.variant for w in W.needed_weights(fewer)} == paper - {"siglip2-base", "jina-embeddings-v4"}
    # the local preset's stand-ins (pocket-clip, catalogue captions) replace every served model
    assert W.needed_weights(load_config(preset="local")) == []


def _source(tmp_path, weights):
    """A local weights folder: the first model in the hub layout (org/name), the rest by folder."""
    src = tmp_path / "src"
    files = {}
    for i, w in enumerate(weights):
        d = src / (w.source if i == 0 else w.folder)
        (d / "sub").mkdir(parents=True)
        (d / ".cache").mkdir()
        (d / ".cache" / "lock").write_text("hub bookkeeping")
        files[w.folder] = {"config.json": json.dumps({"m": w.variant}).encode(),
                           "sub/model.safetensors": os.urandom(3000 + i)}
        for rel, data in files[w.folder].items():
            (d / rel).write_bytes(data)
    return src, files


def test_sync_to_s3_copies_each_model_once(s3_server, tmp_path, monkeypatch):
    for k, v in s3_server.env().items():
        monkeypatch.setenv(k, v)
    weights = [w for w in W.needed_weights(load_config(preset="paper")) if w.variant in ("clip-vit-b32", "qwen3-vl-8b")]
    src, files = _source(tmp_path, weights)
    to = f"s3://vismem-test/models-{os.getpid()}"
    rows = W.sync(weights, to, source=src, log=lambda _l: None)
    assert [(r["uri"], r["copied"], r["skipped"]) for r in rows] == [(f"{to}/{w.folder}", 2, 0) for w in weights]
    store = W.open_target(to)
    assert sorted(store.list()) == sorted(f"{f}/{rel}" for f, fs in files.items() for rel in fs)
    for folder, fs in files.items():
        for rel, data in fs.items():
            assert store.get_bytes(f"{folder}/{rel}") == data
    again = W.sync(weights, to, source=src, log=lambda _l: None)
    assert [(r["copied"], r["skipped"]) for r in again] == [(0, 2), (0, 2)]


def test_sync_to_a_models_dir_and_missing_weights_stop_before_copying(tmp_path):
    weights = W.needed_weights(load_config(preset="paper"))
    src, files = _source(tmp_path, weights[:2])
    with pytest.raises(ConfigError, match="weights not found") as err:
        W.sync(weights, str(tmp_path / "models"), source=src)
    assert all(w.variant in str(err.value) for w in weights[2:]) and not (tmp_path / "models").exists()
    W.sync(weights[:2], str(tmp_path / "models"), source=src, log=lambda _l: None)
    for folder, fs in files.items():
        for rel, data in fs.items():
            assert (tmp_path / "models" / folder / rel).read_bytes() == data
    assert not list((tmp_path / "models").rglob(".cache"))


def test_cli_lists_and_refuses_a_download_offline(capsys, monkeypatch, tmp_path):
    from vismem.pipelines.cli import build_parser

    args = build_parser().parse_args(["weights", "list", "--preset", "paper", "--json"])
    assert args.func(args) == 0
    assert {r["variant"]: r["source"] for r in json.loads(capsys.readouterr().out)} == PAPER
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    args = build_parser().parse_args(["weights", "sync", "--preset", "paper", "--to", str(tmp_path / "m")])
    with pytest.raises(ConfigError, match="HF_HUB_OFFLINE"):
        args.func(args)
