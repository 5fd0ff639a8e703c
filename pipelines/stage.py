"""The stage contract: one :class:`Stage` per stage module, found through the stage table.

Each stage module (listed in :mod:`vismem.pipelines.stage_order`) defines ``STAGE = Stage(...)``:
its name, the config section it reads, its ``vismem run`` flags, a ``check`` that validates the
config's components before any work starts, and ``run(ctx) -> summary``. Modules load on use so
the CLI starts fast. Stages never import one another: what two stages share lives in their
wing's protocol or cache modules.
"""

from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal, TypedDict

from vismem.core.errors import ConfigError, did_you_mean
from vismem.pipelines.stage_order import STAGE_MODULES, STAGE_ORDER

if TYPE_CHECKING:
    from vismem.pipelines.config import RunConfig
    from vismem.pipelines.context import RunContext


def _no_flags(parser: argparse.ArgumentParser) -> None:
    return None


def _no_overrides(args: argparse.Namespace) -> dict[str, Any]:
    return {}


def _no_check(config: "RunConfig") -> None:
    return None


def _no_inputs(config: "RunConfig", data_dir: Path) -> dict[str, Path]:
    return {}


def _no_description(summary: "StageSummary") -> str:
    return ""


def count(v: Any) -> str:
    """A count as the summary lines print it (``12,345``; anything else as it is)."""
    return f"{v:,}" if isinstance(v, int) else str(v)


class StageSummary(TypedDict, total=False):
    """What every stage's ``run`` returns (JSON-able; stages add their own keys beside these).

    ``status``: ``done``, ``partial`` (failed shards, retried by a re-run) or
    ``disabled``; ``failure``: one line naming what failed (partial stages); ``failed``: the
    failed units, each a small record naming it and its error.
    """

    status: Literal["done", "partial", "disabled", "no-retrieval"]
    failure: str
    failed: list[dict[str, Any]]


@dataclass(frozen=True)
class Stage:
    """One stage of a run.

    Attributes:
        name: the stage's name in ``stages:`` and on the command line.
        section: the ``RunConfig`` field holding its settings (None: none of its own).
        run: ``run(ctx) -> summary`` (JSON-able; ``status: partial`` marks failed shards).
        add_cli_args: adds the stage's ``vismem run`` flags to a parser.
        cli_overrides: turns those flags into nested config overrides.
        check: validates the config's components (specs resolve, paths exist) before any work;
            raises :class:`vismem.core.errors.ConfigError` naming the field.
        inputs: ``inputs(config, data_dir) -> {role: path}``, the data files the stage reads;
            their content digests enter the run id (``RunConfig.input_files``).
        describe: ``describe(summary) -> str``, one line of what ran and what was reused (the
            end-of-run summary table).
        needs_ray: whether the stage runs Ray jobs; a run of stages that need none (``vismem run
            report``) neither starts nor attaches to a Ray.
    """

    name: str
    section: str | None
    run: Callable[["RunContext"], StageSummary]
    add_cli_args: Callable[[argparse.ArgumentParser], None] = _no_flags
    cli_overrides: Callable[[argparse.Namespace], dict[str, Any]] = _no_overrides
    check: Callable[[Any], None] = _no_check
    inputs: Callable[[Any, Path], dict[str, Path]] = _no_inputs
    describe: Callable[[StageSummary], str] = _no_description
    needs_ray: bool = True

    def enabled(self, config: "RunConfig") -> bool:
        """Whether the config's section switches the stage on (``<section>.enabled``)."""
        section = getattr(config, self.section, None) if self.section else None
        return bool(getattr(section, "enabled", True))


def get_stage(name: str) -> Stage:
    """The stage called ``name`` (ConfigError naming the allowed stages otherwise)."""
    if name not in STAGE_ORDER:
        raise ConfigError(f"unknown stage {name!r}{did_you_mean(name, STAGE_ORDER)}; allowed: {', '.join(STAGE_ORDER)}")
    stage = importlib.import_module(STAGE_MODULES[name]).STAGE
    if stage.name != name:
        raise RuntimeError(f"{STAGE_MODULES[name]} defines stage {stage.name!r}")
    return stage


def all_stages() -> list[Stage]:
    """Every stage, in run order."""
    return [get_stage(n) for n in STAGE_ORDER]
