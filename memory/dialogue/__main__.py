"""Preview shots on disk: ``python -m vismem.memory.dialogue --conversation conv-26 --session 1 --out shots/``.

Writes each unit's image (or text) and a ``units.jsonl`` index; for looking at what a variant
renders without a run, a store or Ray.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from vismem.memory.dialogue.datasets import dataset_names, get_dataset
from vismem.memory.dialogue.render import shot_units
from vismem.memory.dialogue.variants import list_variants, load_variant
from vismem.core.errors import VismemError

def _default_path() -> Path:
    from vismem.core.paths import resolve_data_dir

    return resolve_data_dir() / "locomo/locomo10.json"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m vismem.memory.dialogue", description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", choices=dataset_names(), default="locomo")
    ap.add_argument("--path", type=Path, default=None, help="dataset file (default: LoCoMo in ../shared/data)")
    ap.add_argument("--variant", default="memshot", help=f"one of {', '.join(list_variants())}")
    ap.add_argument("--conversation", help="conversation id (default: the first)")
    ap.add_argument("--session", type=int, help="session index (1-based; default: all sessions)")
    ap.add_argument("--format", choices=("png", "webp"), default="png")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    try:
        convs = get_dataset(a.dataset).load(a.path or _default_path())
        conv = next((c for c in convs if c.conversation_id == a.conversation), None) if a.conversation else convs[0]
        if conv is None:
            raise VismemError(f"no conversation {a.conversation!r} in {a.path}")
        v = load_variant(a.variant)
        units = shot_units(conv, v, a.session, image_format=a.format)
    except VismemError as err:
        print(f"error: {err}", file=sys.stderr)
        return err.exit_code
    a.out.mkdir(parents=True, exist_ok=True)
    with open(a.out / "units.jsonl", "w") as index:
        for u in units:
            name = f"{u.conversation_id}_{u.session_id}_u{u.unit:03d}".replace("/", "_")
            if u.image is not None:
                (a.out / f"{name}.{a.format}").write_bytes(u.image)
            (a.out / f"{name}.txt").write_text(u.text)
            index.write(json.dumps({"unit_id": u.unit_id, "file": name, "dia_ids": list(u.dia_ids),
                                    "height": u.height, "overflow": u.overflow}) + "\n")
    print(f"{len(units)} units of {conv.conversation_id} ({v.name}) -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
