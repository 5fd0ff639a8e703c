"""CLI subcommands: one module each, exposing ``add_parser(subparsers)``.

Each parser sets ``func(args) -> int``. Modules import heavy libraries inside ``func`` so that
``vismem --help`` stays fast.
"""

COMMAND_MODULES = (
    "pipelines.commands.run",
    "pipelines.commands.jobs",
    "pipelines.commands.report",
    "pipelines.commands.store",
    "pipelines.commands.bench",
    "pipelines.commands.audit",
)
