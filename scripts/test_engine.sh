#!/usr/bin/env bash
# The engine tier: the project's own vLLM code (served, in-job and pooling engines, the paper
# preset's shape on a loopback cluster) on the real vLLM 0.29 CPU engine with tiny models, offline.
# Does its own set-up (.venv/ and .venv-engine/: about 5 minutes the first time). Extra arguments go
# to pytest (e.g. -k serve). pytest's "no tests collected" (exit 5) is a failure.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --engine || exit 1
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 RAY_AUTH_MODE=disabled VISMEM_PROGRESS=0
.venv-engine/bin/python -m pytest -q -p no:cacheprovider -m engine tests/engine "$@"
rc=$?
[ $rc -eq 5 ] && echo "no tests were collected" >&2
exit $rc
