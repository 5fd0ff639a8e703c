"""The ``vismem`` command line."""

from __future__ import annotations

import argparse
import importlib
import sys

from vismem.pipelines.commands import COMMAND_MODULES
from vismem.core.errors import VismemError
from vismem.core.secrets import strip_userinfo


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vismem",
        description="Ray-distributed batch evaluation of multimodal agents' visual memory (MemShot, DMV-Bench).",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for mod in list(COMMAND_MODULES) + _plugin_commands():
        importlib.import_module(mod).add_parser(sub)
    return parser


def _plugin_commands() -> list[str]:
    """Command modules of higher floors, declared as ``vismem.commands`` entry points."""
    from importlib.metadata import entry_points

    return [ep.value for ep in sorted(entry_points(group="vismem.commands"), key=lambda e: e.name)]


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except VismemError as err:
        # The last guard for URLs' user-info (a store endpoint's password) in any message.
        print(f"vismem: error: {strip_userinfo(str(err))}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("vismem: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
