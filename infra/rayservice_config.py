"""Print the RayService's ``serveConfigV2`` (infra/kuberay/rayservice.yaml): the paper preset's
served models, those the RayJob's run does not reach through Serve scaled to zero.

A run reaches a served model when its config names the variant as an endpoint client (a spec
with ``base_url``: the vLLM gateway) or as ``deployed:NAME``; an embedder it runs in-process on
its own GPU workers (Qwen3-VL-Embedding-8B) holds no GPU on the service until someone calls it.

    python infra/rayservice_config.py     # paste under serveConfigV2: | (tests/test_infra.py compares)
"""

from __future__ import annotations

import json
from typing import Any


def reached_models(cfg: Any, served: list[str]) -> set[str]:
    """The variants of ``served`` that run config ``cfg`` calls through Ray Serve."""
    from vismem.pipelines.commands.weights import named_variants
    from vismem.serve.models import load_model_spec

    dump = json.dumps(cfg.model_dump(mode="json"))
    named = set(named_variants(cfg))
    return {m for m in served if f'"deployed:{m}"' in dump
            or (m in named and "base_url" in load_model_spec(m).args)}


def rayservice_config(cfg: Any) -> dict[str, Any]:
    """The Serve config of the paper models, min_replicas 0 for those ``cfg`` does not reach."""
    from vismem.serve.deploy import PRESETS, serve_config

    served = list(PRESETS["paper"])
    idle = sorted(set(served) - reached_models(cfg, served))
    return serve_config(served, env={}, overrides={m: {"min_replicas": 0} for m in idle})


def main() -> None:
    import yaml

    from vismem.pipelines.config import load_config

    cfg = load_config(preset="paper")
    print(yaml.safe_dump(rayservice_config(cfg), sort_keys=False), end="")


if __name__ == "__main__":
    main()
