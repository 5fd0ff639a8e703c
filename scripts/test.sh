#!/usr/bin/env bash
# Quickstart 2: the test suite (fast default set; `scripts/test.sh -m slow` adds the slow
# end-to-end tests). Does its own set-up. pytest's "no tests collected" (exit 5) is a failure.
# Two pytest-xdist workers; tests/conftest.py keeps each module on one worker and the modules on the
# session's local Ray together (`-n 0` after the command runs everything in one process).
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit 1
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 RAY_AUTH_MODE=disabled VISMEM_PROGRESS=0
.venv/bin/python -m pytest -q -p no:cacheprovider -n 2 --dist loadgroup "$@"
rc=$?
[ $rc -eq 5 ] && echo "no tests were collected" >&2
exit $rc
