#!/usr/bin/env bash
# Idempotent set-up for a fresh clone: system packages (Chromium, fonts), the venv at .venv/,
# and the project installed into it. Quick (a few checks) when everything is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
# `--engine`: also the engine tier's venv, .venv-engine/ (vLLM's CPU build; scripts/engine/setup.sh).
engine=0
for a in "$@"; do
  case "$a" in
    --engine) engine=1 ;;
    *) echo "setup.sh: unknown option $a (known: --engine)" >&2; exit 2 ;;
  esac
done

need_apt=()
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
[ -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || need_apt+=(fonts-dejavu-core)
[ -n "$(find /usr/share/fonts -iname 'symbola*' 2>/dev/null | head -1)" ] || need_apt+=(fonts-symbola)
[ -e /usr/share/fonts/truetype/noto/NotoColorEmoji.ttf ] || need_apt+=(fonts-noto-color-emoji)
# CJK fallback of the shot renderer (memory/dialogue/style.py font_cjk): 1.6 MB, vs 56 MB for fonts-noto-cjk
[ -e /usr/share/fonts/truetype/wqy/wqy-microhei.ttc ] || need_apt+=(fonts-wqy-microhei)
# OpenCV (pulled by rapidocr-onnxruntime, the OCR stand-in) links libGL and GLib.
compgen -G '/usr/lib/*-linux-gnu/libGL.so.1' >/dev/null || need_apt+=(libgl1)
compgen -G '/usr/lib/*-linux-gnu/libglib-2.0.so.0' >/dev/null || need_apt+=(libglib2.0-0)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "[setup] apt-get install ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
stamp=".venv/.vismem-setup"
want="$(sha256sum pyproject.toml | cut -c1-16)"
if [ ! -x .venv/bin/python ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "[setup] creating/updating .venv"
  [ -x .venv/bin/python ] || "$PY" -m venv .venv
  .venv/bin/pip install -q --upgrade pip
  # The CPU wheel first: a looser torch requirement would pull a multi-GB CUDA build.
  .venv/bin/pip install -q torch==2.13.0
  .venv/bin/pip install -q -e .
  echo "$want" > "$stamp"
fi
if [ "$engine" = 1 ]; then
  bash scripts/engine/setup.sh
fi
