"""Make PyPI's torchvision importable beside the CPU torch in the engine venv.

PyPI's torchvision wheels for torch 2.13 are CUDA builds: their C ops do not load beside
``torch==2.13.0+cpu``, and ``torchvision/_meta_registrations.py`` then fails at import on its two
unconditional ``register_fake("torchvision::nms"|"qnms")`` lines ("operator torchvision::nms does
not exist"). Its other registrations are already guarded by ``extension._has_ops()``; this gives
those two the same guard. vLLM's Qwen-VL processors use only torchvision's pure-Python transforms.
Idempotent; run by ``scripts/engine/setup.sh``. Exits non-zero if the file is not the expected one.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

GUARD = "torchvision.extension._has_ops()"
TARGETS = ('@torch.library.register_fake("torchvision::nms")',
           '@torch.library.register_fake("torchvision::qnms")')


def patched(text: str) -> str:
    """``text`` with each unconditional fake registration made conditional on the C ops."""
    for line in TARGETS:
        op = line.split('"')[1]
        guarded = f"@(torch.library.register_fake(\"{op}\") if {GUARD} else (lambda f: f))"
        if guarded in text:
            continue
        if line not in text:
            raise SystemExit(f"patch_torchvision: {line!r} not found; torchvision changed, re-check")
        text = text.replace(line, guarded)
    return text


def main() -> int:
    spec = importlib.util.find_spec("torchvision")
    if spec is None or not spec.submodule_search_locations:
        print("patch_torchvision: torchvision not installed, nothing to do")
        return 0
    path = Path(list(spec.submodule_search_locations)[0]) / "_meta_registrations.py"
    text = path.read_text()
    new = patched(text)
    if new != text:
        path.write_text(new)
        print(f"patch_torchvision: guarded the nms/qnms fake registrations in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
