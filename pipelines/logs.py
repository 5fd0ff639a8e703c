"""Keeping libraries' chatter out of the terminal: Ray Data and transformers log into the run log.

By default a run's terminal shows only progress bars and vismem's own summary. Ray Data's INFO
lines (dataset starts, "execution finished", and the logging-style progress it falls back to
when stdout is not a terminal) and transformers' warnings and weight-loading bars go to the
run's log file (``<runs_dir>/<run_id>/run.log``, the file the runner's ``vismem`` logger also
writes). ``vismem run -v`` leaves every library as it is.

:func:`quiet` returns a :class:`Quiet` whose :meth:`Quiet.restore` puts every logger back, so a
caller's logging (tests, notebooks) is unchanged after a run.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from vismem.core.paths import local_dir

if TYPE_CHECKING:
    from vismem.pipelines.config import RunConfig

#: Loggers routed to the run log (each keeps its own level; their console handlers are removed).
ROUTED = ("ray.data", "ray", "transformers", "huggingface_hub", "sentence_transformers", "urllib3", "filelock")

#: Set for this process and inherited by the local Ray's workers (they start from our environment):
#: no weight-loading bars, no advisory warnings from transformers / huggingface_hub.
QUIET_ENV = {"HF_HUB_DISABLE_PROGRESS_BARS": "1", "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
             "TOKENIZERS_PARALLELISM": "false"}

_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


@dataclass
class Quiet:
    """What :func:`quiet` changed, to undo it."""

    log_path: Path | None
    handler: logging.Handler | None = None
    saved: dict[str, tuple[list[logging.Handler], bool]] = field(default_factory=dict)
    env: dict[str, str | None] = field(default_factory=dict)
    transformers_bars: bool | None = None

    def restore(self) -> None:
        """Put every routed logger, the environment and transformers' bars back."""
        for name, (handlers, propagate) in self.saved.items():
            lg = logging.getLogger(name)
            for h in list(lg.handlers):
                lg.removeHandler(h)
            for h in handlers:
                lg.addHandler(h)
            lg.propagate = propagate
        for k, v in self.env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        if self.transformers_bars:
            try:
                from transformers.utils import logging as tlog

                tlog.enable_progress_bar()
            except ImportError:  # pragma: no cover - transformers is a dependency
                pass
        if self.handler is not None:
            self.handler.close()


def run_log_path(config: "RunConfig") -> Path:
    """``<runs_dir>/<run_id>/run.log``: the runner's log file for ``config``."""
    return local_dir(config.runs_dir) / config.run_id / "run.log"


class _LazyFileHandler(logging.FileHandler):
    """A file handler that creates its file (and folder) on the first record: a run refused
    before it starts (a bad store, a bad config) leaves no run folder behind."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, delay=True)

    def _open(self):  # type: ignore[override]
        Path(self.baseFilename).parent.mkdir(parents=True, exist_ok=True)
        return super()._open()


def quiet(log_path: Path | None, *, verbose: bool = False) -> Quiet:
    """Route Ray Data's and transformers' logging to ``log_path`` (None: drop it) unless ``verbose``.

    Call before the run starts Ray: the environment it sets is inherited by the local Ray's
    workers. Importing ``ray.data`` here is deliberate: it installs its console handler on
    import, which must exist before it can be taken off.
    """
    q = Quiet(log_path)
    if verbose:
        return q
    for k, v in QUIET_ENV.items():
        q.env[k] = os.environ.get(k)
        os.environ[k] = v
    if log_path is not None:
        q.handler = _LazyFileHandler(log_path)
        q.handler.setFormatter(logging.Formatter(_FORMAT))
        # Ray Data logs DEBUG to its logger (for its own session file); the run log keeps INFO up.
        q.handler.setLevel(logging.INFO)
    else:
        q.handler = logging.NullHandler()
    try:
        import ray.data  # noqa: F401 - installs Ray Data's logging config (console + session file)
    except ImportError:  # pragma: no cover - ray is a dependency
        pass
    q.transformers_bars = _quiet_transformers()
    for name in ROUTED:
        lg = logging.getLogger(name)
        q.saved[name] = (list(lg.handlers), lg.propagate)
        # Ray Data's own session-file handler stays (ray-data.log in the Ray session dir); only
        # handlers that write to a terminal are replaced by the run log.
        for h in list(lg.handlers):
            if _is_console(h):
                lg.removeHandler(h)
        lg.addHandler(q.handler)
        lg.propagate = False
    return q


def _is_console(h: logging.Handler) -> bool:
    """A handler that writes to stdout/stderr (Ray's PlainRayHandler, transformers' StreamHandler)."""
    if isinstance(h, logging.FileHandler):
        return False
    if type(h).__name__ in ("PlainRayHandler",):
        return True
    return isinstance(h, logging.StreamHandler)


def _quiet_transformers() -> bool | None:
    """Turn off transformers' tqdm bars in this process; returns whether they were on (None: absent)."""
    try:
        from transformers.utils import logging as tlog
    except ImportError:  # pragma: no cover - transformers is a dependency
        return None
    was_on = tlog.is_progress_bar_enabled()
    tlog.disable_progress_bar()
    # transformers adds its stderr handler on first use: do it now so it can be removed above.
    tlog.get_logger("transformers")
    tlog.set_verbosity_warning()
    return was_on
