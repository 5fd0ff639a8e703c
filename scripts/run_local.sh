#!/usr/bin/env bash
# Quickstart 1: run the main job locally on embedded defaults (the `local` preset): a private
# S3 server and a local Ray are started and stopped by vismem itself. Extra args go to `vismem run`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 RAY_AUTH_MODE=disabled
exec .venv/bin/vismem run "$@"
