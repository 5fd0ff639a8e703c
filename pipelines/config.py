"""The typed run config: one frozen pydantic model, loaded from YAML, with named presets.

A run is fully described by its config. The run id is derived from the config's content, so
the same config always names the same run (and resumes it), and any change names a new one.
"""

from __future__ import annotations

import hashlib
import json
import os
import weakref
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import Field, ValidationError, field_validator, model_validator

from vismem.core.config import Frozen
from vismem.pipelines.dmv.config import CatalogConfig, EncodeConfig, MemoryConfig, ProbesConfig
from vismem.pipelines.memshot.config import MemShotConfig
from vismem.pipelines.report.config import ReportConfig
from vismem.pipelines.settings import RayConfig, StoreConfig
from vismem.core.errors import ConfigError, did_you_mean
from vismem.core.yamlsafe import MAX_YAML_BYTES, load_yaml

from vismem.pipelines.stage_order import STAGE_ORDER

#: id(config) -> (weak reference, its input digests): see RunConfig.input_digests.
_PINNED: dict[int, tuple[weakref.ref, dict[str, str]]] = {}

#: Presets shipped with the package, by name (``pipelines/presets/NAME.yaml``).
PRESETS: tuple[str, ...] = ("local", "paper")


class RunConfig(Frozen):
    """Everything a run needs. Loaded from YAML; unknown fields are errors."""

    name: str = Field(
        "local",
        min_length=1,
        max_length=64,
        pattern=r"^[a-z0-9][a-z0-9_.-]*$",
        description="Human-readable run name; prefix of the run id (lowercase, digits, `._-`).",
    )
    seed: int = Field(0, ge=0, description="Root seed: every random choice of the run flows from it.")
    stages: tuple[str, ...] = Field(
        STAGE_ORDER, json_schema_extra={"repeats": "merged"},
        description=f"Stages to run, in any order (executed in canonical order). Allowed: {', '.join(STAGE_ORDER)}.",
    )
    data_dir: str = Field(
        "../shared/data",
        description="Directory holding `locomo/`, `dmv-bench/` (and optionally `longmemeval/`); relative to the repo "
                    "root. The default means $VISMEM_DATA_DIR, else ../shared/data when it exists, else "
                    "$XDG_DATA_HOME/vismem/data (`vismem data` says which); `vismem run` fetches missing LoCoMo / "
                    "DMV-Bench files into it.",
    )
    runs_dir: str = Field(
        "runs",
        description="Local directory for run logs and the local S3 server's data; relative to the current directory.",
    )
    store: StoreConfig = Field(default_factory=StoreConfig, description="Object store all outputs go to.")
    ray: RayConfig = Field(default_factory=RayConfig, description="How Ray is started or attached to.")
    memshot: MemShotConfig = Field(default_factory=MemShotConfig, description="MemShot stage settings.")
    catalog: CatalogConfig = Field(default_factory=CatalogConfig, description="DMV-Bench catalogue stage settings.")
    encode: EncodeConfig = Field(default_factory=EncodeConfig, description="DMV-Bench encoding-chain settings.")
    memory: MemoryConfig = Field(default_factory=MemoryConfig,
                                 description="DMV-Bench memory architectures replayed from the trajectories.")
    probes: ProbesConfig = Field(default_factory=ProbesConfig, description="DMV-Bench recall probes.")
    report: ReportConfig = Field(default_factory=ReportConfig, description="Report stage settings.")

    @field_validator("stages")
    @classmethod
    def _known_stages(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [s for s in v if s not in STAGE_ORDER]
        if unknown:
            raise ValueError(f"unknown stage(s) {unknown}{did_you_mean(unknown[0], STAGE_ORDER)}; "
                             f"allowed: {', '.join(STAGE_ORDER)}")
        # Canonical order and no duplicates, so equal intents give equal run ids.
        return tuple(s for s in STAGE_ORDER if s in v)

    @model_validator(mode="after")
    def _probes_fit_the_chains(self) -> "RunConfig":
        too_long = [j for j in (self.probes.J or ()) if j > self.encode.J]
        if too_long:
            raise ValueError(f"probes.J {too_long} exceed encode.J = {self.encode.J} (a chain is scored only "
                             "up to the sessions it has)")
        if self.probes.backends is not None and len(self.probes.backends) not in (1, len(self.encode.backends)):
            raise ValueError(f"probes.backends has {len(self.probes.backends)} entries for "
                             f"{len(self.encode.backends)} encode.backends (give one recalling VLM for all, "
                             "or one per browsing back-end)")
        if self.probes.keep_k > self.probes.fetch_k:
            raise ValueError("probes.keep_k must be <= probes.fetch_k")
        return self

    # -- identity -----------------------------------------------------------------------------
    def input_files(self) -> dict[str, Path]:
        """The data files the enabled stages read, by role (``memshot.dataset``, ``dmv-bench/...``),
        as each stage declares them (``Stage.inputs``)."""
        from vismem.core.paths import resolve_data_dir
        from vismem.pipelines.stage import all_stages

        data_dir = resolve_data_dir(self.data_dir)
        out: dict[str, Path] = {}
        # Every stage whose section is on, not only those in `stages`: the stage list is no part of
        # the run id (a later `vismem run report` adds to the same run).
        for stage in all_stages():
            if stage.enabled(self):
                out.update(stage.inputs(self, data_dir))
        return out

    def input_digests(self) -> dict[str, str]:
        """``role -> sha256:<hex>`` of every :meth:`input_files` entry (``missing`` when absent).

        Computed once per config object: a run keeps its id (and output prefix) while it runs,
        even if a file is edited under it; a config loaded afterwards sees the new content.
        """
        from vismem.core.digest import file_digest

        hit = _PINNED.get(id(self))
        if hit is not None and hit[0]() is self:
            return dict(hit[1])
        digests = {role: file_digest(p) for role, p in self.input_files().items()}
        key = id(self)
        _PINNED[key] = (weakref.ref(self, lambda _r, key=key: _PINNED.pop(key, None)), digests)
        return dict(digests)

    def content_hash(self) -> str:
        """sha256 of the config's canonical JSON, minus where-it-runs fields, plus the content of
        the data it reads.

        Store location, Ray placement and local paths do not change results, so they do not
        change the run id: the same run can move from a laptop to a cluster and keep its id.
        Nor does the stage list: ``vismem run report`` after ``vismem run encode`` adds to the
        same run (each stage's results depend on its own settings, not on which stages ran).
        The data files enter by content (:meth:`input_digests`), never by path: a modified
        dataset names a new run (with fresh caches under its prefix), the same bytes elsewhere
        the same run. Secrets (:mod:`vismem.core.secrets`) never enter it.
        """
        from vismem.core.secrets import drop_secrets

        data = _without_content_fields(self, self.model_dump(mode="json", exclude={"store", "ray", "runs_dir",
                                                                                   "data_dir", "stages"}))
        data["inputs"] = self.input_digests()
        if self.probes.mode == "exhaustive":  # the default: an exhaustive run keeps the id it had before the mode
            for key in ("mode", "adaptive"):
                data.get("probes", {}).pop(key, None)
        blob = json.dumps(drop_secrets(data), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()

    @property
    def run_id(self) -> str:
        """``{name}-{first 10 hex of content_hash}``."""
        return f"{self.name}-{self.content_hash()[:10]}"

    def to_yaml(self) -> str:
        """The config as YAML that ``load_config`` reads back to an equal config."""
        return yaml.safe_dump(self.model_dump(mode="json"), sort_keys=False)


def _without_content_fields(model: Frozen, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (the model's JSON dump) without the fields whose ``identity`` marker keeps them out
    of the run id: ``content`` (a path to a data file: the file's digest enters instead) and
    ``execution`` (how much runs at once: never what a run computes)."""
    out = dict(data)
    for name, info in type(model).model_fields.items():
        if name not in out:
            continue
        if (info.json_schema_extra or {}).get("identity") in ("content", "execution"):
            del out[name]
        elif isinstance(getattr(model, name), Frozen) and isinstance(out[name], dict):
            out[name] = _without_content_fields(getattr(model, name), out[name])
    return out


def _format_validation_error(err: ValidationError, source: str) -> str:
    """One readable line per problem: the dotted field path, what is wrong, what is allowed."""
    lines = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"]) or "<root>"
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            parent = _model_at(RunConfig, e["loc"][:-1])
            allowed = ", ".join(parent.model_fields) if parent else "?"
            hint = did_you_mean(e["loc"][-1], list(parent.model_fields)) if parent else ""
            msg = f"unknown field{hint}; allowed fields here: {allowed}"
        elif e["type"] in ("literal_error", "enum"):
            expected = (e.get("ctx") or {}).get("expected")
            msg = f"{msg} (got {e.get('input')!r})" if expected is None else f"must be one of {expected}, got {e.get('input')!r}"
        lines.append(f"{loc}: {msg}")
    return f"invalid run config ({source}): " + "; ".join(lines)


def _model_at(model: type[Frozen], loc: tuple[Any, ...]) -> type[Frozen] | None:
    for part in loc:
        field = model.model_fields.get(str(part))
        if field is None:
            return None
        ann = field.annotation
        if not (isinstance(ann, type) and issubclass(ann, Frozen)):
            return None
        model = ann
    return model


def parse_config(data: dict[str, Any] | None, *, source: str = "<dict>") -> RunConfig:
    """Validate a mapping into a RunConfig, raising ConfigError (exit 2) with a readable message."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"invalid run config ({source}): top level must be a mapping, got {type(data).__name__}")
    try:
        return RunConfig.model_validate(data)
    except ValidationError as err:
        raise ConfigError(_format_validation_error(err, source)) from None


def load_preset(name: str) -> dict[str, Any]:
    """The raw mapping of a named preset."""
    if name not in PRESETS:
        raise ConfigError(f"unknown preset {name!r}; allowed: {', '.join(PRESETS)}")
    text = resources.files("vismem.pipelines.presets").joinpath(f"{name}.yaml").read_bytes()
    return load_yaml(text, f"preset {name}") or {}


_SPEC_KEYS = frozenset({"name", "args", "model"})


def _names_component(d: dict[str, Any]) -> bool:
    """Whether a mapping is a component spec that says which component (``name`` or ``model``)."""
    return bool(d) and d.keys() <= _SPEC_KEYS and ("name" in d or "model" in d)


def _replaces(below: dict[str, Any], over: dict[str, Any]) -> bool:
    """Whether ``over`` names another component than the spec ``below`` (then it replaces it)."""
    return (_names_component(over) and _names_component(below)
            and (over.get("name"), over.get("model")) != (below.get("name"), below.get("model")))


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``over`` laid over ``base``, mapping by mapping. A component spec naming another component
    than the one below it replaces it whole: the old component's args are not the new one's."""
    out = dict(base)
    for k, v in over.items():
        below = out.get(k)
        merge = isinstance(v, dict) and isinstance(below, dict) and not _replaces(below, v)
        out[k] = deep_merge(below, v) if merge else v
    return out


def _read_bounded(path: Path) -> bytes:
    """The bytes of a config file, refusing one past the YAML bound before reading it whole."""
    size = path.stat().st_size
    if size > MAX_YAML_BYTES:
        raise ConfigError(f"{path}: {size:,} bytes of YAML, more than the {MAX_YAML_BYTES:,} allowed")
    return path.read_bytes()


def load_config(
    path: str | Path | None = None,
    *,
    preset: str | None = None,
    overrides: dict[str, Any] | None = None,
) -> RunConfig:
    """Load a run config: a preset (default ``local``), then a YAML file, then overrides.

    A YAML file may name its own base with a top-level ``preset:`` key.
    """
    data: dict[str, Any] = {}
    source = f"preset {preset or 'local'}"
    file_data: dict[str, Any] = {}
    if path is not None:
        p = Path(path)
        if str(path).startswith("env:"):
            # A submitted job receives its config in an environment variable (see `vismem submit`).
            var = str(path)[4:]
            if var not in os.environ:
                raise ConfigError(f"config variable ${var} is not set")
            text, p = os.environ[var], Path(f"${var}")
        elif not p.is_file():
            raise ConfigError(f"config file not found: {p}")
        else:
            text = _read_bounded(p)
        loaded = load_yaml(text, str(p))
        if loaded is not None and not isinstance(loaded, dict):
            raise ConfigError(f"invalid run config ({p}): top level must be a mapping")
        file_data = dict(loaded or {})
        if "preset" in file_data:
            preset = preset or str(file_data.pop("preset"))
        source = str(p)
    data = load_preset(preset or "local")
    data = deep_merge(data, file_data)
    if overrides:
        data = deep_merge(data, overrides)
    return parse_config(data, source=source)


def dotted_overrides(pairs: list[str]) -> dict[str, Any]:
    """Turn ``["memshot.k=[5,10]", "seed=3"]`` into a nested mapping (values parsed as YAML)."""
    out: dict[str, Any] = {}
    for pair in pairs:
        if "=" not in pair:
            raise ConfigError(f"override {pair!r} must look like field.sub=value")
        key, raw = pair.split("=", 1)
        node = out
        parts = key.strip().split(".")
        if not all(parts):
            raise ConfigError(f"override {pair!r}: empty field name in {key!r}")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(f"override {pair!r}: {part!r} was already given a value, not fields")
        try:
            node[parts[-1]] = load_yaml(raw, f"--set {key}")
        except ConfigError as err:
            raise ConfigError(str(err).replace(" line 1, column", ", column")) from None
    return out
