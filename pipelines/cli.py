"""The ``vismem`` command line."""

from __future__ import annotations

import argparse
import importlib
import os
import signal
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


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread: unwinds (stages, Ray, the store's server) like Ctrl-C."""


def _on_sigterm(signum: int, frame: object) -> None:
    # Once: a second SIGTERM must not cut the cleanup the first one started.
    signal.signal(signal.SIGTERM, lambda *_: None)
    raise Terminated()


#: vLLM logs to stdout by default; the CLI's stdout is its results (`--json`, tables), so an in-process
#: engine (a pooling embedder, the `vllm` back-end) logs to stderr (read when vLLM is first imported).
CLI_ENV = {"VLLM_LOGGING_STREAM": "ext://sys.stderr"}


def main(argv: list[str] | None = None) -> int:
    for k, v in CLI_ENV.items():
        os.environ.setdefault(k, v)
    parser = build_parser()
    args = parser.parse_args(argv)
    # Ray's own SIGTERM handlers exit 15 without unwinding (its C++ one prints a stack dump first);
    # init_ray keeps this one in force when it starts Ray.
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        return int(args.func(args) or 0)
    except VismemError as err:
        # The last guard for URLs' user-info (a store endpoint's password) in any message.
        print(f"vismem: error: {strip_userinfo(str(err))}", file=sys.stderr)
        return err.exit_code
    except Terminated:
        print("vismem: terminated", file=sys.stderr)
        return 128 + signal.SIGTERM
    except KeyboardInterrupt:
        print("vismem: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `vismem list | head`: the reader left; no traceback, and none at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    finally:
        signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
