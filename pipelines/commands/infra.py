"""``vismem infra manifests``: the cluster manifests with images a cluster can pull.

The checked-in ``infra/cluster.yaml`` and ``infra/kuberay/*.yaml`` name the images by their local
build tags (``vismem:gpu``, ``vismem:cpu``: what ``docker build -t`` in ``infra/Dockerfile*`` makes).
A remote cluster cannot pull those, so this command writes copies whose every image is a fully
qualified reference in one registry -- ``<registry>/vismem-gpu:<git revision>`` -- the setting
being ``--registry`` or ``$VISMEM_IMAGE_REGISTRY`` (e.g. ``ghcr.io/org`` or an ECR registry). The
tag is the revision the images were built at (``VISMEM_GIT_REVISION`` inside them), so what runs
is what was built. Without a registry it refuses (a bare local tag only suits a cluster that
shares this machine's images: ``--local-images``), as it does for a work tree with uncommitted
changes (no image can carry that revision).

The RayService's Serve config and GPU worker groups are generated from ``serve/models/*.yaml``
(:mod:`vismem.pipelines.kuberay`) each time: ``--local-images -o infra`` rewrites the checked-in
files in place, ``--check`` only compares (exit 1 naming each file that differs).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from vismem.core.errors import ConfigError

#: The one setting naming where the images are pushed.
REGISTRY_VAR = "VISMEM_IMAGE_REGISTRY"
#: Local build tag -> repository name under the registry.
LOCAL_IMAGES = {"vismem:gpu": "vismem-gpu", "vismem:cpu": "vismem-cpu"}
#: The manifests that name images, relative to ``infra/``.
MANIFESTS = ("cluster.yaml", "kuberay/raycluster.yaml", "kuberay/rayjob.yaml", "kuberay/rayservice.yaml")
_REGISTRY = re.compile(r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:\d+)?(/[a-z0-9]+([._-][a-z0-9]+)*)*$")
_TAG = re.compile(r"^[\w][\w.-]{0,127}$")
#: An image line: ``image: X``, ``worker_image: X``, or cluster.yaml's ``docker: {worker_image: X}``.
_IMAGE_KEYS = re.compile(r"^([^#]*?\b(?:image|worker_image|head_image):\s*)([^\s,}]+)(.*)$")


def image_refs(registry: str, revision: str) -> dict[str, str]:
    """Local tag -> pullable reference; a :class:`ConfigError` for a bad registry or revision."""
    registry = registry.strip().rstrip("/")
    host = registry.split("/")[0]
    if not _REGISTRY.match(registry) or not ("." in host or ":" in host or host == "localhost"):
        raise ConfigError(f"image registry {registry!r}: give a registry host and path, e.g. ghcr.io/ORG or "
                          "ACCOUNT.dkr.ecr.REGION.amazonaws.com/vismem")
    if revision.endswith("+dirty") or revision == "unknown" or not _TAG.match(revision):
        raise ConfigError(f"git revision {revision!r} cannot tag an image: commit first, then build, push and "
                          "generate the manifests at that revision")
    return {local: f"{registry}/{repo}:{revision}" for local, repo in LOCAL_IMAGES.items()}


def images(text: str) -> list[str]:
    """Every container image a manifest names (``image:`` / ``worker_image:`` values)."""
    return [m.group(2) for line in text.splitlines() if (m := _IMAGE_KEYS.match(line)) and not m.group(2).isdigit()]


def rewrite(text: str, refs: dict[str, str] | None, where: str) -> str:
    """``text`` with every image's local tag replaced by its reference (kept with ``None``); a
    :class:`ConfigError` for an image that is neither vismem's local tag nor a registry path."""
    out = []
    for line in text.splitlines(keepends=True):
        m = _IMAGE_KEYS.match(line.rstrip("\n"))
        if m and m.group(2) in LOCAL_IMAGES and refs is not None:
            line = f"{m.group(1)}{refs[m.group(2)]}{m.group(3)}\n"
        out.append(line)
    text = "".join(out)
    for image in images(text):
        if image in LOCAL_IMAGES and refs is None:
            continue
        if "/" not in image:
            raise ConfigError(f"{where}: image {image!r} is a bare local tag no remote cluster can pull")
    return text


def manifest_texts(infra: Path, refs: dict[str, str] | None) -> dict[str, str]:
    """Every manifest of ``infra`` (relative path -> text) with its generated regions rewritten
    (:mod:`vismem.pipelines.kuberay`) and ``refs`` applied."""
    from vismem.pipelines.kuberay import generate, paper_regions

    fill = None
    out = {}
    for rel in MANIFESTS:
        text = (infra / rel).read_text()
        if "# >>> generated: " in text:
            fill = fill or paper_regions()
            text = generate(text, fill, rel)
        out[rel] = rewrite(text, refs, rel)
    return out


def render(infra: Path, out: Path, refs: dict[str, str] | None) -> list[Path]:
    """Write every manifest of ``infra`` under ``out`` (:func:`manifest_texts`); returns the files."""
    written = []
    for rel, text in manifest_texts(infra, refs).items():
        dest = out / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text)
        written.append(dest)
    return written


def stale(infra: Path, out: Path, refs: dict[str, str] | None) -> list[str]:
    """The manifests under ``out`` that differ from (or are missing against) what ``infra`` generates."""
    return [rel for rel, text in manifest_texts(infra, refs).items()
            if not (out / rel).is_file() or (out / rel).read_text() != text]


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("infra", help="cluster manifests with pullable images (vismem infra manifests)",
                       description="Cluster manifests (infra/cluster.yaml, infra/kuberay/*.yaml) whose images "
                       "a remote cluster can pull.")
    isub = p.add_subparsers(dest="infra_command", required=True)
    m = isub.add_parser("manifests", help="write the manifests with <registry>/vismem-{gpu,cpu}:<revision>",
                        description=__doc__.strip().split("\n\n")[1])
    m.add_argument("--registry", help=f"where the images are pushed (default ${REGISTRY_VAR})")
    m.add_argument("--revision", help="the images' tag (default: this checkout's git revision)")
    m.add_argument("--local-images", action="store_true",
                   help="keep the local tags (a cluster on this machine's images: kind, minikube)")
    m.add_argument("--output", "-o", required=True, metavar="DIR",
                   help="folder to write the manifests into (infra with --local-images: regenerate the checked-in files)")
    m.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 naming each manifest under --output that differs from the generated one")
    m.set_defaults(func=_manifests)


def _manifests(args: argparse.Namespace) -> int:
    from vismem.core.paths import repo_root
    from vismem.pipelines.manifest import git_revision

    registry = args.registry or os.environ.get(REGISTRY_VAR, "")
    if args.local_images:
        refs = None
    elif not registry:
        raise ConfigError(f"no image registry: a remote cluster cannot pull the local tags vismem:gpu / vismem:cpu; "
                          f"pass --registry or set {REGISTRY_VAR} (or --local-images for a cluster on this machine)")
    else:
        refs = image_refs(registry, args.revision or git_revision(repo_root()))
    if args.check:
        for rel in (bad := stale(repo_root() / "infra", Path(args.output), refs)):
            print(f"{Path(args.output) / rel}: differs from the generated manifest "
                  f"(regenerate: vismem infra manifests ... -o {args.output})", file=sys.stderr)
        return 1 if bad else 0
    for path in render(repo_root() / "infra", Path(args.output), refs):
        print(path)
    return 0
