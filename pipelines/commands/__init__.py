"""CLI subcommands: one module each, exposing ``add_parser(subparsers)``.

Commands of higher floors (``vismem bench`` lives in ``bench/``) are plugins: entry points of
the group ``vismem.commands`` in ``pyproject.toml``, each a module with ``add_parser``.

Each parser sets ``func(args) -> int``. Modules import heavy libraries inside ``func`` so that
``vismem --help`` stays fast.
"""

COMMAND_MODULES = (
    "vismem.pipelines.commands.run",
    "vismem.pipelines.commands.jobs",
    "vismem.pipelines.commands.report",
    "vismem.pipelines.commands.store",
    "vismem.pipelines.commands.audit",
    "vismem.pipelines.commands.runs",
    "vismem.pipelines.commands.shots",
    "vismem.pipelines.commands.serve",
    "vismem.pipelines.commands.listing",
    "vismem.pipelines.commands.plan",
    "vismem.pipelines.commands.compare",
    "vismem.pipelines.commands.export",
    "vismem.pipelines.commands.data",
    "vismem.pipelines.commands.weights",
    "vismem.pipelines.commands.infra",
    "vismem.pipelines.commands.docs",
)
