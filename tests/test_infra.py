"""infra/: the GPU image installs what the project needs with the vLLM Ray pins, and the KubeRay
manifests hold together (secrets, volumes, GPUs, service names, a RayJob entrypoint that loads a
config with every input it needs, a RayService config equal to the generated one)."""

from __future__ import annotations

import functools
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


def _dockerfile(name: str) -> str:
    return (INFRA / name).read_text()


@pytest.mark.parametrize("name", ["Dockerfile", "Dockerfile.cpu"])
def test_images_install_the_project_as_a_package_with_its_git_revision(name):
    text = _dockerfile(name)
    copied = set(re.findall(r"^COPY --chown=\S+ (\w+) \./\1$", text, flags=re.M))
    folders = set(PYPROJECT["tool"]["setuptools"]["package-dir"].values())  # vismem/ and every mapped folder
    assert folders <= copied, folders - copied
    installs = re.findall(r"pip install ([^\n\\&]+)", text)
    (install,) = [i for i in installs if "--no-cache-dir" in i]
    # not editable, under the base image's stack as constraints
    assert " -e " not in f" {install} " and re.search(r"-c /tmp/\S+\.txt", install), install
    assert "--no-deps" not in text and "vllm==" not in text  # versions live in pyproject.toml only
    assert "'site-packages' in vismem.pipelines.cli.__file__" in text  # the build checks it is installed
    # the revision every run in the image records (pipelines.manifest reads this variable)
    from vismem.pipelines.manifest import GIT_REVISION_VAR

    assert re.search(rf"^ARG {GIT_REVISION_VAR}=", text, re.M)
    assert re.search(rf"{GIT_REVISION_VAR}=\$\{{{GIT_REVISION_VAR}\}}", text)
    assert f"--build-arg {GIT_REVISION_VAR}=$(git rev-parse HEAD)" in text
    deps = PYPROJECT["project"]["dependencies"]
    pillow = next(d for d in deps if d.lower().startswith("pillow"))
    major = re.search(r">=(\d+),<(\d+)", pillow)
    assert major and f"== '{major.group(1)}'" in text  # the image build checks the Pillow major it got
    # Chromium the way Ubuntu supports in a container (its apt `chromium` is a snap shim), where
    # env.browser looks for it.
    from vismem.env.browser import CHROMIUM_PATH

    assert "playwright install --with-deps chromium" in text and CHROMIUM_PATH in text
    apt = " ".join(re.findall(r"apt-get install[^\n]*\n([^\n]*)", text))
    assert "chromium" not in apt.split() and {"fonts-dejavu-core", "fonts-symbola", "libgl1"} <= set(apt.split())


def test_gpu_image_is_rays_llm_image_and_keeps_its_vllm_stack():
    import ray

    text = _dockerfile("Dockerfile")
    assert re.search(rf"^FROM rayproject/ray-llm:{re.escape(ray.__version__)}-py311-cu\d+$", text, re.M)
    freeze = re.search(r"pip freeze \| grep -iE '([^']+)'", text).group(1)
    for pkg in ("ray==", "vllm==", "torch==", "nvidia-cublas-cu12==", "flashinfer-python=="):
        assert re.match(freeze, pkg, re.I), pkg  # frozen: installing the project cannot move them
    assert 'install --no-cache-dir -c /tmp/llm-stack.txt ".[gpu]"' in text


def test_cpu_image_has_no_gpu_stack():
    import ray

    text = _dockerfile("Dockerfile.cpu")
    assert re.search(rf"^FROM rayproject/ray:{re.escape(ray.__version__)}-py311-cpu$", text, re.M)
    assert "[gpu]" not in text and "download.pytorch.org/whl/cpu" in text


def test_manifests_use_one_ray_version_and_in_tree_autoscaling():
    import ray

    for name in CLUSTERS:
        spec = _cluster_spec(name)
        assert spec["rayVersion"] == ray.__version__ and spec["enableInTreeAutoscaling"] is True, name


def _secrets() -> dict[str, dict]:
    return {d["metadata"]["name"]: d for d in _docs("secret.example.yaml") if d["kind"] == "Secret"}


def test_every_pod_reads_the_secret_and_gpu_pods_get_gpus_tolerations_shm_and_models():
    secret = _secrets()["vismem-secrets"]
    accounts = {d["metadata"]["name"] for d in _docs("secret.example.yaml") if d["kind"] == "ServiceAccount"}
    claims = {d["metadata"]["name"] for d in _docs("secret.example.yaml") if d["kind"] == "PersistentVolumeClaim"}
    # Static S3 keys are not required: the default boto3 chain (IRSA) is the documented path.
    assert "AWS_ACCESS_KEY_ID" not in secret["stringData"]
    for name in CLUSTERS:
        for group, pod in _pods(name):
            where = f"{name}:{group}"
            (c,) = pod["containers"]
            assert c["image"] == ("vismem:cpu" if group == "cpu" else "vismem:gpu"), where
            assert pod["serviceAccountName"] in accounts, where
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

    secret = _secrets()["vismem-secrets"]
    cfg = load_config(preset="paper")
    used = [s.key for s in cfg.encode.backends] + [cfg.memshot.vlm.key, cfg.memshot.judge.key]
    keys = {load_model_spec(m).args.get("api_key_env") for m in used} - {None, "VISMEM_VLM_API_KEY"}
    assert keys and keys <= set(secret["stringData"]), keys  # VISMEM_VLM_API_KEY: Serve needs none


def _job_config():
    from vismem.pipelines.cli import build_parser
    from vismem.pipelines.commands.run import config_from_args

    argv = _one("rayjob.yaml")["spec"]["entrypoint"].split()
    assert argv[:3] == ["python", "-m", "vismem"]
    return config_from_args(build_parser().parse_args(argv[3:]))


def _init(pod: dict, name: str) -> dict:
    (c,) = [c for c in pod.get("initContainers", []) if c["name"] == name]
    return c


def test_rayjob_entrypoint_loads_a_config_with_its_inputs_from_s3_and_the_volumes():
    cfg = _job_config()
    assert cfg.ray.address == "auto" and cfg.store.uri.startswith("s3://")
    # the catalog stage of the paper preset stops without the official image root
    assert cfg.catalog.image_source.key == "official" and cfg.catalog.image_source.args["root"].startswith("s3://")
    for group, pod in _pods("rayjob.yaml"):
        (c,) = pod["containers"]
        mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
        assert cfg.data_dir in mounts, group  # data_dir is where the data volume is mounted
        fetch = _init(pod, "fetch-data")
        assert {"name": mounts[cfg.data_dir], "mountPath": cfg.data_dir} in fetch["volumeMounts"]
        assert fetch["args"][:2] == ["s3", "sync"] and fetch["args"][2].startswith("s3://"), group


@pytest.mark.parametrize("name", CLUSTERS)
def test_gpu_pods_sync_the_weights_prefix_into_the_model_volume(name):
    for group, pod in _pods(name):
        mounts = {m["mountPath"]: m["name"] for m in pod["containers"][0].get("volumeMounts", [])}
        if "/models" not in mounts:
            continue
        sync = _init(pod, "fetch-models")  # what `vismem weights sync --to s3://vismem/models` fills
        assert sync["args"][:4] == ["s3", "sync", "s3://vismem/models/", "/models/"], group
        assert {"name": mounts["/models"], "mountPath": "/models"} in sync["volumeMounts"], group


@pytest.mark.parametrize("name", CLUSTERS)
def test_sync_init_containers_get_aws_credentials_only(name):
    secret = _secrets()["vismem-secrets"]
    for group, pod in _pods(name):
        for init in pod.get("initContainers", []):
            where = f"{name}:{group}:{init['name']}"
            assert "envFrom" not in init, where  # the whole secret holds the model API keys too
            refs = [e["valueFrom"]["secretKeyRef"] for e in init["env"]]
            assert {e["name"] for e in init["env"]} == {r["key"] for r in refs}, where
            assert all(r["key"].startswith("AWS_") and r["name"] == secret["metadata"]["name"]
                       and r["optional"] is True for r in refs), where  # IRSA: no key at all
            assert "AWS_SESSION_TOKEN" in {r["key"] for r in refs}, where


@pytest.mark.parametrize("name", ["rayjob.yaml", "raycluster.yaml"])
def test_runs_reach_the_rayservice_by_its_real_service_name(name):
    svc = f"{_one('rayservice.yaml')['metadata']['name']}-serve-svc"  # what KubeRay creates
    for group, pod in _pods(name):
        env = {e["name"]: e["value"] for e in pod["containers"][0]["env"]}
        assert env["VISMEM_VLM_BASE_URL"] == f"http://{svc}:8000/v1", group
        assert env["VISMEM_SERVE_URL"] == f"http://{svc}:8000", group


def _serve_config() -> dict:
    return yaml.safe_load(_one("rayservice.yaml")["spec"]["serveConfigV2"])


def test_rayservice_config_is_the_generated_one_and_valid():
    from vismem.pipelines.kuberay import rayservice_config
    from vismem.serve.deploy import PRESETS, validate_serve_config

    cfg = _serve_config()
    assert validate_serve_config(cfg) == cfg
    assert cfg == rayservice_config(_job_config())  # regenerate: vismem infra manifests --local-images -o infra
    port = cfg["http_options"]["port"]
    for group, pod in _pods("rayservice.yaml"):
        assert {"containerPort": port, "name": "serve"} in pod["containers"][0]["ports"], group
    from ray.llm._internal.serve.core.configs.llm_config import LLMConfig

    from vismem.serve.deploy import LLM_BUILDER

    (llm,) = [a for a in cfg["applications"] if a["import_path"] == LLM_BUILDER]
    for conf in llm["args"]["llm_configs"]:
        assert LLMConfig(**conf).accelerator_type  # Ray's own LLM config accepts it
    assert set(PRESETS["paper"]) >= {"qwen2.5-vl-7b", "qwen3-vl-8b", "qwen3-vl-embedding-8b"}


def _min_replicas(cfg: dict) -> dict[str, int]:
    """Served model -> its autoscaling floor, from a Serve config."""
    from vismem.pipelines.kuberay import demands

    return {d.model: d.min_replicas for d in demands(cfg)}


def _groups() -> dict[str, dict]:
    return {g["groupName"]: g for g in _cluster_spec("rayservice.yaml")["workerGroupSpecs"]}


def test_served_models_the_run_does_not_call_scale_to_zero():
    from vismem.pipelines.kuberay import gpu_groups, reached_models

    job = _job_config()
    cfg = _serve_config()
    floors = _min_replicas(cfg)
    # every vLLM variant is served (the MemShot backbones a run may switch to), and the paper models
    assert {"qwen2.5-vl-7b", "qwen3-vl-2b", "qwen3-vl-8b", "qwen3-vl-32b", "qwen3-vl-embedding-8b"} <= set(floors)
    reached = reached_models(job, list(floors))
    # the run calls the two vLLM back-ends through the gateway; it embeds on its own GPU workers
    assert reached == {"qwen2.5-vl-7b", "qwen3-vl-8b"}
    assert {m: f > 0 for m, f in floors.items()} == {m: m in reached for m in floors}
    # each GPU group's floor is what its models' floors hold (one 1-GPU pod a replica), no more;
    # the tensor-parallel group, whose model the run does not call, starts at zero pods
    groups = _groups()
    for group, models in gpu_groups(cfg):
        assert groups[group["groupName"]]["minReplicas"] == sum(floors[m] for m in models), group["groupName"]
    (tp,) = [g for g in groups.values() if _gpus(g["template"]["spec"]) > 1]
    assert tp["minReplicas"] == tp["replicas"] == 0 and tp["maxReplicas"] >= 1
    # a model named only as deployed:NAME is reached too
    embedder = job.memshot.text_embedder.model_copy(update={"model": "deployed:qwen3-vl-embedding-8b"})
    other = job.model_copy(update={"memshot": job.memshot.model_copy(update={"text_embedder": embedder})})
    assert "qwen3-vl-embedding-8b" in reached_models(other, list(floors))


def _gpus(pod: dict) -> int:
    return int(pod["containers"][0]["resources"]["limits"].get("nvidia.com/gpu", 0))


@pytest.mark.parametrize("name", CLUSTERS)
def test_ray_is_told_every_gpu_of_a_pod(name):
    for g in _cluster_spec(name)["workerGroupSpecs"]:
        pod = g["template"]["spec"]
        if _gpus(pod):
            assert int(g["rayStartParams"].get("num-gpus", _gpus(pod))) == _gpus(pod), f"{name}:{g['groupName']}"


def _autoscaler_node_types() -> dict[str, dict]:
    """The RayService's node types as Ray's KubeRay autoscaler reads them from the manifest."""
    from ray.autoscaler._private.kuberay.autoscaling_config import _derive_autoscaling_config_from_ray_cr

    svc = _one("rayservice.yaml")
    cr = {"metadata": {"name": svc["metadata"]["name"], "namespace": "default"},
          "spec": svc["spec"]["rayClusterConfig"]}
    return _derive_autoscaling_config_from_ray_cr(cr)["available_node_types"]


def _group_the_autoscaler_starts(demand) -> tuple[dict[str, int], list]:
    """What Ray's resource-demand scheduler launches, from no worker at all, for one replica."""
    from ray.autoscaler._private.node_provider_availability_tracker import NodeAvailabilitySummary
    from ray.autoscaler._private.resource_demand_scheduler import (
        _resource_based_utilization_scorer,
        get_nodes_for,
    )

    def score(resources, wanted, node_type):
        return _resource_based_utilization_scorer(
            resources, wanted, node_availability_summary=NodeAvailabilitySummary(node_availabilities={}))

    if demand.strategy == "STRICT_PACK":  # what the autoscaler makes of a STRICT_PACK group
        vector = [{k: sum(b.get(k, 0.0) for b in demand.bundles) for b in demand.bundles for k in b}]
    else:
        vector = [dict(b) for b in demand.bundles]
    return get_nodes_for(_autoscaler_node_types(), {}, "headgroup", 1, vector, score)


def _preset_models() -> list[str]:
    """Every model a preset names that Serve can host: the serve presets, the RayService's,
    and the variants with a deploy: block that the paper run config names."""
    from vismem.pipelines.commands.weights import named_variants
    from vismem.pipelines.kuberay import served_models
    from vismem.serve.deploy import PRESETS
    from vismem.serve.models import load_model_spec

    named = [m for m in named_variants(_job_config()) if load_model_spec(m).deploy]
    return sorted({*(m for names in PRESETS.values() for m in names), *served_models(), *named})


def test_every_model_a_preset_names_fits_a_rayservice_group_the_autoscaler_starts_from_zero():
    """One replica of each model, placed the way Ray Serve LLM places it (a tensor-parallel
    engine's GPUs STRICT_PACKed on one node, the accelerator type as a resource), is feasible on
    a pod Ray's KubeRay autoscaler can start with no worker running; for a served model, that pod
    is of the group generated for it: the TP=2 engine on a 2-GPU pod, a 1-GPU engine never there."""
    from vismem.pipelines.kuberay import demands, gpu_groups
    from vismem.serve.deploy import serve_config

    group_of = {m: g["groupName"] for g, models in gpu_groups(_serve_config()) for m in models}
    models = _preset_models()
    assert {"qwen3-vl-32b", "qwen3-vl-embedding-8b", "clip-vit-b32"} <= set(models)
    widest = 0
    for model in models:
        (demand,) = demands(serve_config([model], env={}))
        launched, residual = _group_the_autoscaler_starts(demand)
        assert not residual and sum(launched.values()) == 1, (model, demand, launched)
        (group,) = launched
        pod_gpus = _autoscaler_node_types()[group]["resources"].get("GPU", 0)
        assert pod_gpus >= demand.gpus, (model, group)
        if model in group_of:
            assert group == group_of[model], (model, group)
        widest = max(widest, demand.gpus)
    assert widest == 2  # Qwen3-VL-32B: tensor_parallel_size 2


def test_replica_bundles_are_ray_llms_and_a_tp_engine_is_strictly_packed():
    from ray.llm._internal.serve.core.configs.accelerators import GPUAccelerator

    from vismem.pipelines.kuberay import LLM_REPLICA_CPUS, demands

    by_model = {d.model: d for d in demands(_serve_config())}
    tp, one = by_model["qwen3-vl-32b"], by_model["qwen3-vl-8b"]
    for d, n in ((tp, 2), (one, 1)):
        ray_bundles = GPUAccelerator().default_bundles(num_devices=n, accelerator_type_str="H100")
        ray_bundles[0]["CPU"] = LLM_REPLICA_CPUS  # Ray Serve LLM adds the replica actor to bundle 0
        assert list(d.bundles) == ray_bundles, d
    assert (tp.strategy, tp.gpus, one.gpus) == ("STRICT_PACK", 2, 1)
    types = _autoscaler_node_types()
    assert {t["resources"].get("GPU") for name, t in types.items() if name != "headgroup"} == {1, 2}
    assert all(t["resources"].get("accelerator_type:H100") == 1 for name, t in types.items() if name != "headgroup")


# -- the manifests against the pinned KubeRay CRDs' OpenAPI schemas ----------------------------

CRDS = KUBE / "crds"


def _strict(schema):
    """The schema with unknown fields refused wherever Kubernetes prunes them (what strict field
    validation, `kubectl apply`'s default, reports as errors)."""
    if isinstance(schema, dict):
        out = {k: _strict(v) for k, v in schema.items()}
        if ("properties" in out and "additionalProperties" not in out
                and not out.get("x-kubernetes-preserve-unknown-fields")):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


@functools.lru_cache(maxsize=None)
def _crd_schemas() -> dict[str, dict]:
    out = {}
    for path in sorted(CRDS.glob("ray.io_*.yaml")):
        crd = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        (v1,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
        out[crd["spec"]["names"]["kind"]] = _strict(v1["schema"]["openAPIV3Schema"])
    return out


def _crd_validators():
    jsonschema = pytest.importorskip("jsonschema")
    return {kind: jsonschema.Draft7Validator(schema) for kind, schema in _crd_schemas().items()}


def test_crds_are_vendored_at_a_pinned_tag_with_their_licence():
    readme = (CRDS / "README.md").read_text()
    assert re.search(r"tag \*\*v\d+\.\d+\.\d+\*\*", readme) and "Apache License, Version 2.0" in readme
    assert set(_crd_validators()) == {"RayCluster", "RayJob", "RayService"}


@pytest.mark.parametrize("name", CLUSTERS)
def test_manifests_validate_against_the_kuberay_crds(name):
    validators = _crd_validators()
    doc = _one(name)
    assert doc["apiVersion"] == "ray.io/v1"
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validators[doc["kind"]].iter_errors(doc)]
    assert not errors, errors


def test_the_crd_check_refuses_unknown_fields_and_wrong_types():
    validators = _crd_validators()
    doc = _one("raycluster.yaml")
    typo = yaml.safe_load(yaml.safe_dump(doc))
    typo["spec"]["workerGroupSpecs"][0]["minReplica"] = 0
    assert not validators["RayCluster"].is_valid(typo)
    wrong = yaml.safe_load(yaml.safe_dump(doc))
    wrong["spec"]["authOptions"]["mode"] = "password"
    assert not validators["RayCluster"].is_valid(wrong)


_UNITS = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 10**3, "M": 10**6, "G": 10**9}


def _bytes(q: str | int) -> int:
    m = re.fullmatch(r"(\d+)([A-Za-z]*)", str(q))
    assert m, q
    return int(m.group(1)) * (_UNITS[m.group(2)] if m.group(2) else 1)


@pytest.mark.parametrize("name", CLUSTERS)
def test_shm_holds_the_object_store_and_memory_holds_both(name):
    spec = _cluster_spec(name)
    groups = [("head", spec["headGroupSpec"])] + [(g["groupName"], g) for g in spec["workerGroupSpecs"]]
    for group, g in groups:
        pod = g["template"]["spec"]
        (c,) = pod["containers"]
        store = _bytes(g["rayStartParams"]["object-store-memory"])  # set: Ray's default is 30% of memory
        vols = {v["name"]: v for v in pod["volumes"]}
        mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
        shm = _bytes(vols[mounts["/dev/shm"]]["emptyDir"]["sizeLimit"])
        assert store <= shm < _bytes(c["resources"]["limits"]["memory"]), f"{name}:{group}"


@pytest.mark.parametrize("name", CLUSTERS)
def test_every_cluster_uses_token_auth_from_a_secret(name):
    auth = _cluster_spec(name)["authOptions"]
    assert auth["mode"] == "token"
    secret = _secrets()[auth["secretName"]]
    assert "auth_token" in secret["stringData"]  # the key KubeRay reads


# -- cluster.yaml (ray up) ----------------------------------------------------------------------

def _launcher() -> dict:
    return yaml.safe_load((INFRA / "cluster.yaml").read_text())


def test_cluster_yaml_is_valid_for_rays_launcher():
    import json
    import os

    import ray

    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(Path(os.path.dirname(ray.__file__), "autoscaler", "ray-schema.json").read_text())
    jsonschema.validate(_launcher(), schema)
    cfg = _launcher()
    assert cfg["docker"]["image"] == "vismem:gpu"
    assert cfg["available_node_types"]["cpu_worker"]["docker"]["worker_image"] == "vismem:cpu"


def test_cluster_yaml_head_keeps_the_autoscalers_permissions_and_adds_s3():
    cfg = _launcher()
    nodes = cfg["available_node_types"]
    head = nodes[cfg["head_node_type"]]["node_config"]["IamInstanceProfile"]["Name"]
    workers = {n["node_config"]["IamInstanceProfile"]["Name"] for k, n in nodes.items() if k != cfg["head_node_type"]}
    assert workers == {"vismem-s3"} and head != "vismem-s3"
    import json

    head_policy = json.loads((INFRA / "iam" / f"{head}.json").read_text())
    worker_policy = json.loads((INFRA / "iam" / "vismem-s3.json").read_text())
    actions = {a for st in head_policy["Statement"]
               for a in ([st["Action"]] if isinstance(st["Action"], str) else st["Action"])}
    # what Ray's AWS autoscaler calls to launch, tag and stop workers, and hand them their profile
    assert {"ec2:RunInstances", "ec2:TerminateInstances", "ec2:DescribeInstances", "ec2:CreateTags",
            "iam:PassRole"} <= actions
    assert all(st in head_policy["Statement"] for st in worker_policy["Statement"])  # S3 added, not substituted
    assert not [a for a in actions if a in ("s3:*", "*", "ec2:*", "iam:*")]  # nothing wider than needed


def test_cluster_yaml_dashboard_stays_on_loopback_and_shm_holds_the_object_store():
    cfg = _launcher()
    for cmd in cfg["head_start_ray_commands"] + cfg["worker_start_ray_commands"]:
        assert "0.0.0.0" not in cmd, cmd
    (head,) = [c for c in cfg["head_start_ray_commands"] if c.startswith("ray start")]
    assert "--dashboard-host=127.0.0.1" in head
    shm = next(o for o in cfg["docker"]["run_options"] if o.startswith("--shm-size="))
    shm_bytes = int(shm.split("=")[1].rstrip("g")) * 2**30
    for cmd in cfg["head_start_ray_commands"] + cfg["worker_start_ray_commands"]:
        if cmd.startswith("ray start"):
            store = int(re.search(r"--object-store-memory=(\d+)", cmd).group(1))
            assert store <= shm_bytes, cmd
    # the model volume is the container user's, not root's
    assert any("chown 1000" in c and "/mnt/models" in c for c in cfg["initialization_commands"])
