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
