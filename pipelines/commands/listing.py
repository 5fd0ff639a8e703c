"""``vismem list [KIND]``: what can be named in a config, by name, with what each one is.

Every extension point is a registry plus named variants (YAML). A user writing a config needs
the names (``memory.architectures: [dualmem, ...]``, ``probes.backends``, ``memshot.variants``)
without reading the source tree; this prints them, one line per name (``--long``: one table per
kind with the full descriptions).
"""

from __future__ import annotations

import argparse
from typing import Any, Callable

#: kind -> (title, rows()) where rows are (name, detail, description).
Rows = list[tuple[str, str, str]]


def _architectures() -> Rows:
    from vismem.memory.agent.variants import list_variants, load_variant

    out = []
    for name in list_variants():
        v = load_variant(name)
        tables = ", ".join((v.study, *v.also))
        out.append((name, f"{v.name} · {tables}" + (f" · {v.paper}" if v.paper else ""), v.description))
    return out


def _models() -> Rows:
    from vismem.serve.models import list_models, load_model_spec

    out = []
    for name in list_models():
        m = load_model_spec(name)
        out.append((name, f"{m.kind} · {m.source or '-'}", m.description))
    return out


def _memshot_variants() -> Rows:
    from vismem.memory.dialogue.variants import list_variants, load_variant

    return [(n, load_variant(n).kind, load_variant(n).description) for n in list_variants()]


def _registry(kind: str) -> Callable[[], Rows]:
    """The rows of registry ``kind`` of :data:`vismem.pipelines.registries.REGISTRIES`."""
    def rows() -> Rows:
        from vismem.pipelines.registries import registries

        reg = registries()[kind]
        names = reg.names()
        return [(n, "registered", _doc(reg, n)) for n in names] + \
               [(n, "variant", "") for n in reg.variants() if n not in names]
    return rows


def _doc(reg: Any, name: str) -> str:
    """First line of the factory's docstring (what the registered thing is)."""
    return _para(reg.factory(name).__doc__)


def _para(doc: str | None) -> str:
    """A docstring's first paragraph on one line."""
    return " ".join((doc or "").strip().split("\n\n")[0].split())


def _stages() -> Rows:
    from vismem.pipelines.stage import STAGE_ORDER, get_stage

    return [(n, f"config section: {get_stage(n).section or '-'}", _para(get_stage(n).run.__doc__)) for n in STAGE_ORDER]


KINDS: dict[str, tuple[str, Callable[[], Rows]]] = {
    "architectures": ("DMV-Bench memory architecture variants (memory.architectures)", _architectures),
    "architecture-families": ("DMV-Bench memory architecture families ({name, args} specs)",
                              _registry("architecture")),
    "models": ("model variants: VLMs, judges, embedders (serve/models/*.yaml)", _models),
    "memshot-variants": ("MemShot unit variants (memshot.variants)", _memshot_variants),
    "memories": ("dialogue memories beside the variants (memshot.memories)",
                 _registry("dialogue-memory")),
    "datasets": ("dialogue datasets (memshot.dataset)", _registry("dataset")),
    "image-sources": ("catalogue image sources (catalog.image_source)",
                      _registry("image_source")),
    "captioners": ("captioners (memory.components.captioner)", _registry("captioner")),
    "vlms": ("VLM back-end families ({name, args} specs)", _registry("vlm")),
    "embedders": ("embedder families ({name, args} specs)", _registry("embedder")),
    "ocr-engines": ("OCR engines of the ocr-minilm pixel reader (its `ocr` argument)",
                    _registry("ocr_engine")),
    "envs": ("page environments of the encode stage (encode.env)", _registry("env")),
    "injectors": ("how recalled items read in the prompt (a memory architecture's `inject` argument)",
                  _registry("injector")),
    "stages": ("stages of a run, in order", _stages),
}


def _kind(value: str) -> str:
    """A known KIND, else a usage error naming the closest one (argparse alone lists them all)."""
    from vismem.core.errors import did_you_mean

    if value not in KINDS:
        raise argparse.ArgumentTypeError(f"unknown kind {value!r}{did_you_mean(value, sorted(KINDS))}; "
                                         f"choose from {', '.join(sorted(KINDS))}")
    return value


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("list", help="list what a config can name (architectures, models, variants, ...)",
                       description="List the names a config can use, one table per kind. With no KIND, every kind.")
    p.add_argument("kind", nargs="?", type=_kind, metavar="KIND", help=f"one of: {', '.join(KINDS)}")
    p.add_argument("--json", action="store_true", help="print {kind: [{name, detail, description}]} as JSON")
    p.add_argument("-l", "--long", "-v", action="store_true", dest="long",
                   help="full descriptions in tables (default: one line per name)")
    p.set_defaults(func=_list)


def _list(args: argparse.Namespace) -> int:
    kinds = [args.kind] if args.kind else list(KINDS)
    data = {k: KINDS[k][1]() for k in kinds}
    if args.json:
        import json

        print(json.dumps({k: [dict(zip(("name", "detail", "description"), r)) for r in rows]
                          for k, rows in data.items()}, indent=2))
        return 0
    if not args.long:
        _print_short(data)
        return 0
    from rich.console import Console
    from rich.table import Table

    console = Console()
    for k, rows in data.items():
        table = Table(title=f"{k}: {KINDS[k][0]}", title_justify="left", show_lines=False)
        for col in ("name", "detail", "description"):
            table.add_column(col, overflow="fold")
        for r in rows:
            table.add_row(*r)
        console.print(table)
    return 0


def _print_short(data: dict[str, Rows]) -> None:
    """One line per name: name, detail and the description's first sentence, cut to the width
    of the terminal (120 columns off a terminal)."""
    import shutil
    import sys

    width = shutil.get_terminal_size((120, 24)).columns if sys.stdout.isatty() else 120
    for k, rows in data.items():
        print(f"{k}: {KINDS[k][0]}")
        name_w = max((len(r[0]) for r in rows), default=0)
        for name, detail, description in rows:
            line = f"  {name:<{name_w}}  {detail}"
            first = description.split(". ", 1)[0].rstrip(".")
            if first:
                line += f" -- {first}"
            print(line if len(line) <= width else line[:width - 1] + "…")
        print()
