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

The REST API has no compare-and-set, so :func:`write_shared` narrows the race instead: it reads
twice (merging again when the foreign apps changed in between), writes, reads back and checks that
every app it wrote runs with the config it wrote and that vismem's are exactly the intended ones; a
concurrent writer's change is merged in and written again (a few tries, jittered back-off), then
it is one error naming the apps. What remains: a write that lands between the last read and the
PUT (one round trip) is undone without a trace, except a new app Ray still shows ``DELETING`` right
after (reported by name: its config is gone); a shutdown (``DELETE``) has the same window.
"""

from __future__ import annotations

import copy
import random
import time
from typing import Any, Callable, NamedTuple

from vismem.core.errors import ConfigError, VismemError

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
        if is_ours(cfg) or app.get("status") == "DELETING":  # Ray frees a deleting app's name and route
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


#: Read-merge-write rounds before a writer that keeps racing is an error; the first back-off (s).
TRIES = 5
BACKOFF_S = 0.25


class Written(NamedTuple):
    """What :func:`write_shared` left: the instance as read back after its accepted write, how many
    PUTs it made, and the apps a concurrent writer deployed that its write removed (config gone)."""

    details: dict[str, Any]
    writes: int
    dropped: list[str]


def _canon(cfg: dict[str, Any] | None) -> Any:
    """An application config as Ray stores it (its schema, unset fields left out), for comparing."""
    from ray.serve.schema import ServeApplicationSchema

    if cfg is None:
        return None
    try:
        return ServeApplicationSchema.model_validate(cfg).model_dump(mode="json", exclude_unset=True)
    except Exception:  # noqa: BLE001 - not a valid schema: compared as it is
        return cfg


def _app_diff(a: dict[str, Any], b: dict[str, Any]) -> set[str]:
    """Names of the applications two merged configs disagree on (or the instance options)."""
    left = {x["name"]: x for x in a["applications"]}
    right = {x["name"]: x for x in b["applications"]}
    names = {n for n in left.keys() | right.keys() if left.get(n) != right.get(n)}
    rest = ({k: v for k, v in a.items() if k != "applications"}, {k: v for k, v in b.items() if k != "applications"})
    return names | ({"(instance options)"} if rest[0] != rest[1] else set())


def _check_written(sent: dict[str, Any], before: dict[str, Any], after: dict[str, Any]) -> tuple[set[str], list[str]]:
    """``(apps not as written, apps the write dropped)``: every app written must run with the config
    written and vismem's must be exactly those; an app Ray deletes that the read before the write did
    not show was deployed concurrently and removed by it."""
    now = after.get("applications") or {}
    sent_apps = {a["name"]: a for a in sent["applications"]}
    off = {n for n, a in sent_apps.items() if _canon((now.get(n) or {}).get("deployed_app_config")) != _canon(a)}
    off |= {n for n, a in now.items() if is_ours(a.get("deployed_app_config")) and n not in sent_apps}
    seen = before.get("applications") or {}
    dropped = sorted(n for n, a in now.items() if a.get("status") == "DELETING" and n not in sent_apps and n not in seen)
    return off, dropped


def write_shared(client: Any, ours: dict[str, Any], *, tries: int | None = None, backoff_s: float | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> Written:
    """Write ``ours`` (vismem's apps only) into a shared Serve instance through ``client`` (Ray's
    ``ServeSubmissionClient``): merge over a fresh read, read again right before the PUT (merge
    again if the foreign apps changed), PUT, read back and check (:func:`_check_written`). A
    concurrent writer's change is merged in from the fresh read and written again, up to ``tries``
    rounds with a jittered back-off; then one :class:`VismemError` names the apps that kept changing.
    """
    from vismem.serve.deploy import validate_serve_config

    tries = TRIES if tries is None else tries
    backoff_s = BACKOFF_S if backoff_s is None else backoff_s
    conflicts: set[str] = set()
    dropped: list[str] = []
    writes = 0
    prev = client.get_serve_details()
    for attempt in range(tries):
        want = merged_config(prev, ours)
        cur = client.get_serve_details()
        changed = _app_diff(want, merged_config(cur, ours))
        if not changed:
            sent = validate_serve_config(want)
            client.deploy_applications(sent)
            writes += 1
            after = client.get_serve_details()
            changed, lost = _check_written(sent, cur, after)
            dropped += [n for n in lost if n not in dropped]
            if not changed:
                return Written(after, writes, dropped)
            cur = after
        conflicts |= changed
        prev = cur
        if attempt + 1 < tries:
            # Jitter spreads racing writers apart in time; it decides nothing that is recorded.
            sleep(min(2.0, backoff_s * 2**attempt) * random.uniform(0.5, 1.5))
    raise VismemError(f"Serve apps kept changing while vismem wrote its config ({tries} tries): "
                      f"{', '.join(sorted(conflicts))}; another writer (serve deploy, a RayService, another "
                      "`vismem serve up|down`) is writing at the same time and the Serve REST API has no "
                      "compare-and-set: retry once it is done")
