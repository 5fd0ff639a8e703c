"""Where runs find deployed models: the state ``vismem serve up`` records, and ``deployed:NAME``.

Runs name a deployed model as ``deployed:<name>`` wherever a VLM or embedder spec goes
(``--backend deployed:scripted-shopper``, ``probes.backends: [deployed:scripted-recall]``,
``memory.components: {text_encoder: deployed:minilm}``). :func:`deployed_spec` resolves that —
when the config is checked, through the registries' aliases (:mod:`vismem.serve.registry`) — to
an ``openai`` / ``openai-embed`` client spec for the running app, or raises :class:`ConfigError`
when it is not up. The Serve HTTP address comes from ``$VISMEM_SERVE_URL`` (clusters: the
RayService's ``<name>-serve-svc``) or the state file that ``vismem serve up`` writes
(:func:`state_path`).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from vismem.core.errors import ConfigError
from vismem.serve.hosting import DEPLOYED_PREFIX, Registered, deployable


def state_path() -> Path:
    """Where ``vismem serve up`` records what it deployed: ``$VISMEM_SERVE_STATE`` or
    ``runs/.serve/state.json`` in the checkout."""
    from vismem.core.paths import repo_root

    env = os.environ.get("VISMEM_SERVE_STATE")
    return Path(env) if env else repo_root() / "runs" / ".serve" / "state.json"


def read_state() -> dict[str, Any] | None:
    """The recorded deployment (``serve_url``, ``dashboard``, ``models``, ...) or None."""
    p = state_path()
    try:
        return json.loads(p.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise ConfigError(f"unreadable deployment state {p}: {err} (remove it, or `vismem serve down`)") from None


def write_state(state: dict[str, Any]) -> Path:
    """Write the state file atomically; returns its path."""
    p = state_path()
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=2, sort_keys=True))
    tmp.replace(p)
    return p


def clear_state() -> None:
    state_path().unlink(missing_ok=True)


def serve_url() -> str | None:
    """The Serve HTTP proxy runs reach: ``$VISMEM_SERVE_URL``, else the state file's."""
    return _serve_target()[0]


def _serve_target() -> tuple[str | None, dict[str, Any] | None]:
    """``(serve URL, state file)``: the state is None when ``$VISMEM_SERVE_URL`` names the proxy
    (then no state file is read) or when there is none."""
    env = os.environ.get("VISMEM_SERVE_URL")
    if env:
        return env.rstrip("/"), None
    state = read_state()
    return (state.get("serve_url") if state else None), state


_PROBED: dict[str, tuple[float, dict[str, Any]]] = {}
_PROBE_TTL_S = 20.0


def _probe(base: str) -> dict[str, Any]:
    """``GET {base}/models`` (cached briefly: a config is resolved several times per run)."""
    import httpx

    hit = _PROBED.get(base)
    if hit and time.monotonic() - hit[0] < _PROBE_TTL_S:
        return hit[1]
    r = httpx.get(f"{base}/models", timeout=httpx.Timeout(10.0, connect=3.0))
    r.raise_for_status()
    body = r.json()
    _PROBED[base] = (time.monotonic(), body)
    return body


def deployed_spec(name: str, kind: str, registered: Registered) -> dict[str, Any]:
    """The client ``{name, args}`` for ``deployed:<name>`` as a ``kind`` (vlm | embedder);
    ``registered``: the registered names per kind (:func:`vismem.serve.hosting.deployable`).

    Raises :class:`ConfigError` when no deployment is known, the model is not deployed, is of
    the other kind, or does not answer ``/v1/models``.
    """
    ref = f"{DEPLOYED_PREFIX}{name}"
    try:
        d = deployable(name, registered)
    except ConfigError as err:
        raise ConfigError(f"{ref}: {err}") from None
    if d.kind != kind:
        article = {"vlm": "a VLM", "embedder": "an embedder"}
        raise ConfigError(f"{ref}: {name!r} is {article[d.kind]}, not {article.get(kind, kind)}")
    url, state = _serve_target()  # the state file is read once
    hint = f"start it with `vismem serve up {name}`"
    if url is None:
        raise ConfigError(f"{ref}: no model deployment is up (no {state_path()}, VISMEM_SERVE_URL unset); {hint}")
    if state is not None and name not in state.get("models", []):
        raise ConfigError(f"{ref}: not deployed (deployed: {', '.join(state.get('models', [])) or 'none'}); {hint}")
    base = d.base_url(url)
    try:
        listed = _probe(base).get("data") or []
    except Exception as err:  # noqa: BLE001 - refused, timeout, 404, not JSON: all mean "not up"
        raise ConfigError(f"{ref}: not up at {base} ({type(err).__name__}: {err}); {hint}") from None
    entry = next((m for m in listed if m.get("id") == d.model_id), None)
    if entry is None:
        raise ConfigError(f"{ref}: {base} does not serve model {d.model_id!r} (it lists "
                          f"{[m.get('id') for m in listed]}); {hint}")
    meta = entry.get("vismem") or {}
    stand_in = bool(meta.get("stand_in"))
    if kind == "vlm":
        if d.settings.engine == "vllm":  # the YAML's client settings (layout, timeouts), this endpoint
            return {"name": "openai", "args": {**d.client_args, "base_url": base}}
        return {"name": "openai", "args": {"model": d.model_id, "base_url": base, "label": name,
                                           "api_key_env": None, "stand_in": stand_in}}
    args: dict[str, Any] = {"model": d.model_id, "base_url": base, "api_key_env": None,
                            "label": f"{name} (stand-in)" if stand_in else name}
    if meta.get("dim"):
        args["dim"] = int(meta["dim"])
    return {"name": "openai-embed", "args": args}
