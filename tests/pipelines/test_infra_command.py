"""`vismem infra manifests`: the cluster manifests with every vismem image a fully qualified
reference in one registry, tagged with the git revision; a bare local tag is refused in one line."""

from __future__ import annotations

import yaml
import pytest

from vismem.pipelines.cli import main
from vismem.pipelines.commands.infra import MANIFESTS, images

REV = "0123456789abcdef0123456789abcdef01234567"


def test_manifests_name_pullable_images_tagged_with_the_revision(tmp_path, monkeypatch, capsys):
    from tests.test_infra import _crd_validators

    monkeypatch.setenv("VISMEM_IMAGE_REGISTRY", "123456789012.dkr.ecr.us-east-1.amazonaws.com/vismem")
    assert main(["infra", "manifests", "--revision", REV, "-o", str(tmp_path)]) == 0
    reg = "123456789012.dkr.ecr.us-east-1.amazonaws.com/vismem"
    seen = set()
    for rel in MANIFESTS:
        text = (tmp_path / rel).read_text()
        for image in images(text):
            assert "/" in image and not image.startswith("vismem:"), (rel, image)
            seen.add(image)
    assert {f"{reg}/vismem-gpu:{REV}", f"{reg}/vismem-cpu:{REV}"} <= seen
    cluster = yaml.safe_load((tmp_path / "cluster.yaml").read_text())
    assert cluster["docker"]["image"] == f"{reg}/vismem-gpu:{REV}"
    assert cluster["available_node_types"]["cpu_worker"]["docker"]["worker_image"] == f"{reg}/vismem-cpu:{REV}"
    validators = _crd_validators()  # still valid KubeRay objects
    for rel in MANIFESTS[1:]:
        (doc,) = [d for d in yaml.safe_load_all((tmp_path / rel).read_text()) if d]
        assert validators[doc["kind"]].is_valid(doc), rel
    assert len(capsys.readouterr().out.splitlines()) == len(MANIFESTS)


@pytest.mark.parametrize("argv, message", [
    ([], "no image registry: a remote cluster cannot pull the local tags"),
    (["--registry", "ghcr.io/org", "--revision", f"{REV}+dirty"], "commit first"),
    (["--registry", "myrepo", "--revision", REV], "give a registry host and path"),
])
def test_no_manifest_with_a_tag_a_remote_cluster_cannot_pull(argv, message, tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("VISMEM_IMAGE_REGISTRY", raising=False)
    assert main(["infra", "manifests", *argv, "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and not (tmp_path / "out").exists()


def test_local_images_keep_the_local_tags_and_a_foreign_bare_tag_is_refused(tmp_path):
    from vismem.core.errors import ConfigError
    from vismem.pipelines.commands.infra import image_refs, rewrite

    assert main(["infra", "manifests", "--local-images", "-o", str(tmp_path)]) == 0
    assert "vismem:gpu" in images((tmp_path / "cluster.yaml").read_text())
    with pytest.raises(ConfigError, match="'busybox' is a bare local tag"):
        rewrite("spec:\n  image: vismem:gpu\n  other:\n    image: busybox\n", image_refs("ghcr.io/o", REV), "x.yaml")


# -- the generated regions of the RayService (serveConfigV2, GPU worker groups) ----------------

def _infra():
    from vismem.core.paths import repo_root

    return repo_root() / "infra"


def test_checked_in_manifests_are_what_the_command_generates(tmp_path, capsys):
    infra = _infra()
    text = (infra / "kuberay/rayservice.yaml").read_text()
    for region in ("serveConfigV2", "gpu-groups"):  # generated, not hand-kept
        assert f"# >>> generated: {region}" in text and f"# <<< generated: {region}" in text, region
    assert main(["infra", "manifests", "--local-images", "--check", "-o", str(infra)]) == 0
    assert capsys.readouterr().err == ""
    assert main(["infra", "manifests", "--local-images", "-o", str(tmp_path)]) == 0
    for rel in MANIFESTS:
        assert (tmp_path / rel).read_bytes() == (infra / rel).read_bytes(), rel


def test_check_names_a_stale_manifest_and_the_command_regenerates_it(tmp_path, capsys):
    infra = _infra()
    rel = "kuberay/rayservice.yaml"
    assert main(["infra", "manifests", "--local-images", "-o", str(tmp_path)]) == 0
    text = (tmp_path / rel).read_text()
    cut = text.index("      # 2 GPU a pod:")  # a hand edit drops the tensor-parallel group
    (tmp_path / rel).write_text(text[:cut] + "      # <<< generated: gpu-groups\n")
    capsys.readouterr()
    assert main(["infra", "manifests", "--local-images", "--check", "-o", str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and rel in err[0] and "differs from the generated manifest" in err[0]
    assert main(["infra", "manifests", "--local-images", "-o", str(tmp_path)]) == 0
    assert (tmp_path / rel).read_text() == (infra / rel).read_text()


def test_generated_groups_hold_the_widest_engine_on_one_pod_and_stay_valid_kuberay():
    """Engines of TP 2 and 4 share one group whose pods hold 4 GPUs (two TP-2 replicas a pod),
    sized by the per-GPU rules; the manifest still validates against the KubeRay CRD."""
    from tests.test_infra import _bytes, _crd_validators
    from vismem.pipelines.kuberay import generate, regions
    from vismem.serve.deploy import serve_config
    from vismem.serve.models import load_model_spec

    def tp(model, n):
        return {"engine_kwargs": {**load_model_spec(model).deploy["engine_kwargs"], "tensor_parallel_size": n}}

    cfg = serve_config(["qwen3-vl-8b", "qwen3-vl-2b", "qwen3-vl-32b"], env={},
                       overrides={"qwen3-vl-2b": tp("qwen3-vl-2b", 2), "qwen3-vl-32b": tp("qwen3-vl-32b", 4)})
    text = (_infra() / "kuberay/rayservice.yaml").read_text()
    (doc,) = [d for d in yaml.safe_load_all(generate(text, regions(cfg), "rayservice.yaml")) if d]
    assert _crd_validators()["RayService"].is_valid(doc)
    assert yaml.safe_load(doc["spec"]["serveConfigV2"]) == cfg
    groups = {g["groupName"]: g for g in doc["spec"]["rayClusterConfig"]["workerGroupSpecs"]}
    assert set(groups) == {"gpu1-h100", "gpu4-h100"}
    wide = groups["gpu4-h100"]
    (c,) = wide["template"]["spec"]["containers"]
    assert c["resources"]["limits"]["nvidia.com/gpu"] == "4" == wide["rayStartParams"]["num-gpus"]
    # floors 1 + 1 replicas -> 2 pods (a 4-GPU pod holds two TP-2 replicas: 1 pod, and one TP-4: 1);
    # ceilings 4 TP-2 replicas -> 2 pods, 2 TP-4 replicas -> 2 pods
    assert (wide["minReplicas"], wide["maxReplicas"]) == (2, 4)
    shm = next(v for v in wide["template"]["spec"]["volumes"] if v["name"] == "dshm")["emptyDir"]["sizeLimit"]
    store = _bytes(wide["rayStartParams"]["object-store-memory"])
    assert store == 4 * 24 * 2**30 <= _bytes(shm) < _bytes(c["resources"]["limits"]["memory"])
    assert wide["template"]["spec"]["tolerations"] == groups["gpu1-h100"]["template"]["spec"]["tolerations"]


def test_a_broken_generated_region_is_one_clear_error(tmp_path):
    from vismem.core.errors import ConfigError
    from vismem.pipelines.kuberay import generate

    fill = {"gpu-groups": lambda pad: [f"{pad}- x"]}
    assert generate("a:\n  # >>> generated: gpu-groups\n  - old\n  # <<< generated: gpu-groups\n", fill, "f.yaml") == (
        "a:\n  # >>> generated: gpu-groups\n  - x\n  # <<< generated: gpu-groups\n")
    with pytest.raises(ConfigError, match="f.yaml: generated region 'gpu-groups' has no closing line"):
        generate("a:\n  # >>> generated: gpu-groups\n  - old\n", fill, "f.yaml")
    with pytest.raises(ConfigError, match="unknown generated region 'groups'"):
        generate("  # >>> generated: groups\n  # <<< generated: groups\n", fill, "f.yaml")
