"""Tiny models built once per test session (seconds, no downloads)."""

from __future__ import annotations

import io

import pytest
from PIL import Image


@pytest.fixture(scope="session")
def tiny_qwen25vl(tmp_path_factory):
    from vismem.serve.testing import build_tiny_qwen25vl

    return build_tiny_qwen25vl(tmp_path_factory.mktemp("tiny-qwen25vl"))


@pytest.fixture(scope="session")
def tiny_qwen3vl(tmp_path_factory):
    from vismem.serve.testing import build_tiny_qwen3vl

    return build_tiny_qwen3vl(tmp_path_factory.mktemp("tiny-qwen3vl"))


def png(color, size=(40, 30)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, format="PNG")
    return buf.getvalue()
