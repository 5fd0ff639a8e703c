"""Fixtures shared by the pipeline tests."""

from __future__ import annotations

from dataclasses import replace

import pytest


@pytest.fixture(scope="module")
def small(data_dir):
    """Two LoCoMo conversations cut to their first three sessions (12 to 20 shots)."""
    from vismem.env.dialogue import load_locomo

    convs = load_locomo(data_dir / "locomo/locomo10.json")[:2]
    return [replace(c, sessions=c.sessions[:3]) for c in convs]
