"""Sharing a Ray Serve instance: vismem writes only its own applications.

A cluster's Serve instance takes one declarative config (``PUT /api/serve/applications/``), and
every declaratively deployed application left out of it is deleted. A RayService's apps or a
colleague's live there too, so ``vismem serve up|down`` never sends its own config alone: it
reads what runs (``GET /api/serve/applications/``), keeps every application that is not vismem's
exactly as deployed (its ``deployed_app_config``), lays vismem's applications over them and
writes the merged config back (:func:`merged_config`).

vismem's applications are the ones carrying :data:`OWNER_VAR` in their ``runtime_env``'s
``env_vars`` (:func:`mark_ours`), so ownership is read from the cluster itself, not from a local
state file that another machine may lack. Applications deployed imperatively (``serve.run``) are
untouched by a declarative write and are only checked for name and route clashes.
"""

from __future__ import annotations

import copy
from typing import Any

from vismem.core.errors import ConfigError

#: Set in the ``runtime_env.env_vars`` of every application vismem deploys.
OWNER_VAR = "VISMEM_SERVE_OWNER"
OWNER = "vismem"
#: What the dashboard shows instead of a ``runtime_env`` value it redacts (browser requests).
_REDACTED = "<redacted>"


def mark_ours(app: dict[str, Any]) -> dict[str, Any]:
    """``app`` (a Serve application config) with :data:`OWNER_VAR` in its runtime_env's env vars."""
    out = copy.deepcopy(app)
    env = out.setdefault("runtime_env", {}).setdefault("env_vars", {})
    env[OWNER_VAR] = OWNER
    return out


def is_ours(app: dict[str, Any] | None) -> bool:
    """Whether an application config was deployed by vismem."""
    env = ((app or {}).get("runtime_env") or {}).get("env_vars") or {}
    return env.get(OWNER_VAR) == OWNER


def running(details: dict[str, Any]) -> bool:
    """Whether the instance details (``GET /api/serve/applications/``) show Serve running."""
    return bool((details.get("controller_info") or {}).get("node_id")) or bool(details.get("applications"))


def foreign_apps(details: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(declarative configs to keep, imperative apps)`` of every application not vismem's."""
    keep, imperative = [], []
    for name, app in sorted((details.get("applications") or {}).items()):
        cfg = app.get("deployed_app_config")
        if is_ours(cfg):
            continue
        if str(app.get("source", "")).lower() == "imperative" or cfg is None:
            imperative.append({"name": name, "route_prefix": app.get("route_prefix")})
            continue
        if _REDACTED in repr((cfg.get("runtime_env") or {})) or _REDACTED in repr(cfg.get("deployments")):
            raise ConfigError(f"Serve app {name!r}: the dashboard redacted its runtime_env, so it cannot be "
                              "written back unchanged (set RAY_DASHBOARD_REDACT_RUNTIME_ENV=0 or use a non-browser client)")
        keep.append(copy.deepcopy(cfg))
    return keep, imperative


def _check_clashes(ours: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> None:
    for app in ours:
        for other in theirs:
            if other["name"] == app["name"]:
                raise ConfigError(f"Serve app {app['name']!r} on the cluster is not vismem's; "
                                  "vismem will not replace it (remove it, or deploy elsewhere)")
            if other.get("route_prefix") and other["route_prefix"] == app.get("route_prefix"):
                raise ConfigError(f"route {app['route_prefix']!r} is taken by Serve app {other['name']!r}, "
                                  f"which is not vismem's; {app['name']!r} cannot be deployed there")


def merged_config(details: dict[str, Any], ours: dict[str, Any]) -> dict[str, Any]:
    """The config to ``PUT``: every foreign declarative application as deployed, plus ``ours``
    (a ServeDeploySchema dict holding only vismem's applications; none when taking them down).

    On a running instance its proxy location, HTTP options and target capacity are kept (Serve
    cannot change the HTTP options without a restart; a colleague's capacity is theirs).
    """
    keep, imperative = foreign_apps(details)
    apps = [mark_ours(a) for a in ours.get("applications") or []]
    _check_clashes(apps, keep + imperative)
    out = {k: v for k, v in ours.items() if k != "applications"}
    if running(details):
        for key in ("proxy_location", "http_options", "target_capacity"):
            if details.get(key) is not None:
                out[key] = details[key]
    out["applications"] = keep + apps
    return out


def serve_port(details: dict[str, Any], default: int) -> int:
    """The HTTP port the running instance's proxies listen on (``default`` when not running)."""
    if running(details) and (details.get("http_options") or {}).get("port"):
        return int(details["http_options"]["port"])
    return default


def nothing_else(details: dict[str, Any]) -> bool:
    """Whether every application on the instance is vismem's (shutting Serve down loses nothing)."""
    keep, imperative = foreign_apps(details)
    return not keep and not imperative
