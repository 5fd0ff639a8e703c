"""Encoding chains with the official DMV-Bench seeding.

A chain is a sequence of sessions; session ``j`` of chain ``seed`` is a pure function of
``(seed, j)``, never of the chain length J (official ``tasks/generators/f2_online_ic.py``):

- ``cat_order = Random(f"f2.seed.{seed}").sample(CATEGORIES, 10)``; session ``j`` browses
  ``cat_order[j % 10]`` starting at ``/category/<cat>``;
- ``n_steps = Random(f"f2.session.{seed}.{j}").randint(22, 28)``.

``random.Random`` seeded with a str hashes it with SHA-512 (version 2 seeding), so these values
are the same on every platform and Python version that the official code ran on.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from vismem.env.storefront.catalog import CATEGORIES

#: Steps per session are drawn uniformly from this inclusive range.
STEP_RANGE: tuple[int, int] = (22, 28)


@dataclass(frozen=True)
class SessionSpec:
    """One encoding session: chain ``seed``, index ``j``, its category and step cap."""

    seed: int
    j: int
    category: str
    n_steps: int

    @property
    def start_url(self) -> str:
        """Where the session starts: the category listing."""
        return f"/category/{self.category}"


def category_order(seed: int) -> list[str]:
    """The chain's category rotation (depends only on ``seed``)."""
    return random.Random(f"f2.seed.{seed}").sample(list(CATEGORIES), len(CATEGORIES))


def session_spec(seed: int, j: int) -> SessionSpec:
    """Session ``j`` of chain ``seed``."""
    if j < 0:
        raise ValueError(f"session index must be >= 0, got {j}")
    n_steps = random.Random(f"f2.session.{seed}.{j}").randint(*STEP_RANGE)
    cats = category_order(seed)
    return SessionSpec(seed=seed, j=j, category=cats[j % len(cats)], n_steps=n_steps)


def chain_specs(seed: int, n_sessions: int) -> list[SessionSpec]:
    """The first ``n_sessions`` sessions of chain ``seed`` (a prefix of every longer chain)."""
    return [session_spec(seed, j) for j in range(n_sessions)]
