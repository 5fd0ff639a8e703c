"""Recall probe sets of a chain, exactly as the official generator builds them (pure).

Official ``tasks/generators/f2_online_ic.py:78-166`` (spec §3.1):

* the products each session visited, deduplicated per session in first-seen order, skipping
  hashes that are not in the cue registry (a 404 at a product-shaped URL is never a target);
* **exhaustive**: for every recall session ``j = 1..J-1`` and reach ``r = 1..j``, every distinct
  product of session ``j - r`` is probed at the end of session ``j`` (after session ``j`` was
  replayed: its products are distractors), id ``s{j}_r{r}_p{i:02d}``. A chain has
  ``sum_t |V_t| * (J-1-t)`` probes; the last session is never a target, session 0 has none;
* **Monte Carlo** (the J = 50 pilot): for each reach ``r`` the candidates ``(j, j-r, product)``
  with ``j`` ascending and products in first-seen order; ``min(M, n)`` are drawn with
  ``random.Random(f"{mc_seed}.{task_id}.reach{r}").sample`` (sample order kept), id
  ``s{j}_r{r}_p{i:03d}_mc``, ``task_id = f"f2_chain_d{J}_s{seed:04d}"``.

Sessions are 0-based here, as in the official code and the trajectory cache; result tables
report them 1-based. Within a recall session, probes run sorted by reach (stable), as official.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

#: The official Monte Carlo seed string (``run_dmvbench_f2.py --mc-seed``).
MC_SEED = "f2.mc.v6"


@dataclass(frozen=True)
class Probe:
    """One recall probe: at the end of session ``at_session``, find the product of ``target_session``."""

    probe_id: str
    at_session: int
    target_session: int
    reach: int
    target_hash: str
    cue_color: str
    cue_object: str

    @property
    def cue(self) -> str:
        """The cue phrase the probe states, e.g. ``red baseball cap``."""
        return f"{self.cue_color} {self.cue_object}"

    @property
    def target_url(self) -> str:
        return f"/product/{self.target_hash}"


#: ``url_hash -> (cue colour, cue object as drawn)`` or None for an unregistered hash.
CueLookup = Callable[[str], "tuple[str, str] | None"]


def task_id(seed: int, J: int) -> str:
    """The official task id of a chain (it includes J, so MC draws differ between J values)."""
    return f"f2_chain_d{J}_s{seed:04d}"


def visited_per_session(visits: Mapping[int, Sequence[str]], cue_of: CueLookup) -> dict[int, list[str]]:
    """Session → its distinct registered products in first-seen order (``visits``: the
    session's product hashes in step order, repeats included)."""
    return {j: [h for h in dict.fromkeys(hs) if cue_of(h) is not None] for j, hs in sorted(visits.items())}


def _probe(pid: str, j: int, tgt: int, r: int, h: str, cue_of: CueLookup) -> Probe:
    colour, obj = cue_of(h)  # type: ignore[misc]  (only registered hashes reach here)
    return Probe(probe_id=pid, at_session=j, target_session=tgt, reach=r, target_hash=h,
                 cue_color=colour, cue_object=obj)


def exhaustive_probes(visited: Mapping[int, Sequence[str]], J: int, cue_of: CueLookup) -> list[Probe]:
    """Every official exhaustive probe of a chain of ``J`` sessions (``visited``: per-session
    distinct registered products, see :func:`visited_per_session`)."""
    out = []
    for j in range(1, J):
        for r in range(1, j + 1):
            tgt = j - r
            for i, h in enumerate(visited.get(tgt, ())):
                out.append(_probe(f"s{j}_r{r}_p{i:02d}", j, tgt, r, h, cue_of))
    return out


def mc_probes(visited: Mapping[int, Sequence[str]], J: int, M: int, seed: int, cue_of: CueLookup, *,
              mc_seed: str = MC_SEED) -> list[Probe]:
    """The official Monte Carlo probes: at most ``M`` per reach, drawn from the chain's seed."""
    if M <= 0:
        raise ValueError(f"M must be positive for Monte Carlo probes, got {M}")
    out = []
    tid = task_id(seed, J)
    for r in range(1, J):
        candidates = [(j, j - r, h) for j in range(r, J) for h in visited.get(j - r, ())]
        if not candidates:
            continue
        rng = random.Random(f"{mc_seed}.{tid}.reach{r}")
        for i, (j, tgt, h) in enumerate(rng.sample(candidates, min(M, len(candidates)))):
            out.append(_probe(f"s{j}_r{r}_p{i:03d}_mc", j, tgt, r, h, cue_of))
    return out


def chain_probes(visits: Mapping[int, Sequence[str]], J: int, seed: int, cue_of: CueLookup, *,
                 mc: int | None = None, mc_seed: str = MC_SEED) -> list[Probe]:
    """A chain's probes: exhaustive (``mc`` None or 0) or Monte Carlo with ``M = mc``. Only
    sessions ``0..J-1`` of ``visits`` are used."""
    visited = visited_per_session({j: v for j, v in visits.items() if j < J}, cue_of)
    if mc:
        return mc_probes(visited, J, mc, seed, cue_of, mc_seed=mc_seed)
    return exhaustive_probes(visited, J, cue_of)


def probes_at(probes: Iterable[Probe], j: int) -> list[Probe]:
    """The probes run at the end of session ``j``, in the official run order (by reach, stable)."""
    return sorted((p for p in probes if p.at_session == j), key=lambda p: p.reach)


def exhaustive_count(sizes: Sequence[int]) -> int:
    """``sum_t |V_t| * (J-1-t)`` for per-session distinct-product counts ``sizes`` (J = len)."""
    J = len(sizes)
    return sum(k * (J - 1 - t) for t, k in enumerate(sizes))
