"""CLI subcommands: one module each, exposing ``add_parser(subparsers)``.

Commands of higher floors (``vismem bench`` lives in ``bench/``) are plugins: entry points of
the group ``vismem.commands`` in ``pyproject.toml``, each a module with ``add_parser``.

Each parser sets ``func(args) -> int``. Modules import heavy libraries inside ``func`` so that
``vismem --help`` stays fast.
"""

COMMAND_MODULES = (
    "pipelines.commands.run",
    "pipelines.commands.jobs",
    "pipelines.commands.report",
    "pipelines.commands.store",
    "pipelines.commands.audit",
    "pipelines.commands.runs",
    "pipelines.commands.shots",
    "pipelines.commands.serve",
    "pipelines.commands.listing",
    "pipelines.commands.plan",
)
