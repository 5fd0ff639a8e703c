"""``vismem shots``: render one conversation's MemShot units and show them as a page.

Wraps the renderer of ``vismem.memory.dialogue`` (as ``python -m vismem.memory.dialogue`` does): no run, no
store, no Ray. Writes each unit's image (or text), ``units.jsonl`` and ``index.html`` -- the
shots in order with their dia_ids -- to ``--out`` (default ``<runs_dir>/shots/<conversation>-<variant>``),
prints the page's path and, with ``--open``, opens it in a browser.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("shots", help="render one conversation's MemShot shots and show them",
                       description="Render the units (shots) of one dialogue conversation with a MemShot variant "
                                   "and write them with an index.html gallery; no run or store needed.")
    p.add_argument("--dataset", default="locomo", help="dialogue benchmark (locomo, longmemeval); default locomo")
    p.add_argument("--path", type=Path, help="dataset file (default: the dataset's file under the run config's data_dir)")
    p.add_argument("--variant", default="memshot", help="unit variant (memory/dialogue/variants/); default memshot")
    p.add_argument("--conversation", help="conversation id (default: the first)")
    p.add_argument("--session", type=int, help="session index, 1-based (default: every session)")
    p.add_argument("--format", choices=("png", "webp"), default="png", help="image format (default png)")
    p.add_argument("--out", type=Path, help="output folder (default <runs_dir>/shots/<conversation>-<variant>)")
    p.add_argument("--open", action="store_true", help="open the gallery in a web browser")
    p.set_defaults(func=_shots)


def _conversation(args: argparse.Namespace):
    from vismem.core.errors import VismemError
    from vismem.memory.dialogue.datasets import get_dataset
    from vismem.pipelines.config import load_config
    from vismem.pipelines.context import resolve_data_dir
    from vismem.pipelines.memshot.render import dataset_path

    cfg = load_config(None, overrides={"memshot": {"dataset": args.dataset}})
    path = args.path or dataset_path(cfg.memshot, resolve_data_dir(cfg))
    if not Path(path).exists():
        raise VismemError(f"dataset file {path} not found (give --path)")
    convs = get_dataset(args.dataset).load(path)
    if not convs:
        raise VismemError(f"no conversations in {path}")
    conv = next((c for c in convs if c.conversation_id == args.conversation), None) if args.conversation else convs[0]
    if conv is None:
        raise VismemError(f"no conversation {args.conversation!r} in {path}; first ones: "
                          + ", ".join(c.conversation_id for c in convs[:5]))
    return cfg, conv


def _shots(args: argparse.Namespace) -> int:
    from vismem.analysis.samples import shots_gallery
    from vismem.core.errors import VismemError
    from vismem.memory.dialogue.render import shot_units
    from vismem.memory.dialogue.variants import list_variants, load_variant

    if args.variant not in list_variants():
        raise VismemError(f"unknown variant {args.variant!r}; one of {', '.join(list_variants())}")
    cfg, conv = _conversation(args)
    variant = load_variant(args.variant)
    units = shot_units(conv, variant, args.session, image_format=args.format)
    out = args.out or Path(cfg.runs_dir).resolve() / "shots" / f"{conv.conversation_id}-{variant.name}"
    out.mkdir(parents=True, exist_ok=True)
    records = []
    with open(out / "units.jsonl", "w", encoding="utf-8") as index:
        for u in units:
            name = f"{u.conversation_id}_{u.session_id}_u{u.unit:03d}".replace("/", "_")
            rec = {"unit_id": u.unit_id, "dia_ids": list(u.dia_ids), "height": u.height, "overflow": u.overflow,
                   "file": None, "text": u.text, "image": u.image}
            if u.image is not None:
                (out / f"{name}.{args.format}").write_bytes(u.image)
                rec["file"] = f"{name}.{args.format}"
            (out / f"{name}.txt").write_text(u.text, encoding="utf-8")
            index.write(json.dumps({k: v for k, v in rec.items() if k not in ("text", "image")}) + "\n")
            records.append(rec)
    page = out / "index.html"
    n_img = sum(1 for r in records if r["file"])
    page.write_text(shots_gallery(records, title=f"{conv.conversation_id}: {variant.name} units",
                                  note=f"{len(records)} units ({n_img} shots) of {conv.conversation_id}, variant "
                                       f"{variant.name}: {variant.description or ''}"), encoding="utf-8")
    print(f"{len(records)} units ({n_img} shots) of {conv.conversation_id} ({variant.name}) -> {out}")
    print(f"  gallery  {page.resolve().as_uri()}")
    if args.open:
        import webbrowser

        webbrowser.open(page.resolve().as_uri())
    return 0
