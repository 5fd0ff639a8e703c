"""infra/: the cluster files parse, point at code that exists, and ship every package."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
INFRA = REPO / "infra"


def test_yaml_files_parse_and_use_one_ray_version():
    docs = {p.name: yaml.safe_load(p.read_text()) for p in INFRA.rglob("*.yaml")}
    assert {"cluster.yaml", "raycluster.yaml", "rayjob.yaml", "rayservice.yaml"} <= set(docs)
    import ray

    for name in ("raycluster.yaml",):
        assert docs[name]["spec"]["rayVersion"] == ray.__version__
    for name in ("rayjob.yaml", "rayservice.yaml"):
        key = "rayClusterSpec" if name == "rayjob.yaml" else "rayClusterConfig"
        assert docs[name]["spec"][key]["rayVersion"] == ray.__version__


def test_rayservice_entry_point_and_models_resolve():
    from serve.apps import llm_config_dict

    svc = yaml.safe_load((INFRA / "kuberay" / "rayservice.yaml").read_text())
    cfg = yaml.safe_load(svc["spec"]["serveConfigV2"])
    for app in cfg["applications"]:
        mod, fn = app["import_path"].split(":")
        assert callable(getattr(importlib.import_module(mod), fn))
        for model in app["args"]["models"]:
            conf = llm_config_dict(model)
            assert conf["model_loading_config"]["model_id"]


def test_rayjob_entrypoint_is_a_valid_vismem_command():
    from pipelines.cli import build_parser

    job = yaml.safe_load((INFRA / "kuberay" / "rayjob.yaml").read_text())
    argv = job["spec"]["entrypoint"].split()
    assert argv[:3] == ["python", "-m", "pipelines"]
    args = build_parser().parse_args(argv[3:])
    assert args.preset == "paper" and args.address == "auto"


def test_dockerfile_copies_every_package_and_installs_gpu_stack():
    text = (INFRA / "Dockerfile").read_text()
    copied = set(re.findall(r"^COPY --chown=\S+ (\w+) \./\1$", text, flags=re.M))
    import tomllib

    include = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    assert {p.rstrip("*") for p in include} <= copied
    assert "vllm==0.33" in text and "open_clip_torch" in text
