"""The probes stage's adaptive rounds (pipelines.dmv.adaptive) without Ray: unit sizes agree with
the official probe generator, and rounds take each unit once, in the shared draw order, until the
rule is met."""

from __future__ import annotations

from types import SimpleNamespace

import polars as pl

from vismem.agents.probes import chain_probes, probes_at
from vismem.analysis.adaptive import Rule
from vismem.pipelines.dmv.adaptive import run_rounds, unit_sizes


def test_unit_sizes_count_the_official_exhaustive_probes():
    visits = {0: ["a", "b", "a", "x"], 1: ["c"], 2: ["d", "e", "b"], 3: ["f"], 4: []}
    obs = [SimpleNamespace(j=j, url_hash=h) for j, hs in visits.items() for h in hs]
    cue_of = lambda h: None if h == "x" else ("red", "cap")  # noqa: E731 - "x" is not a registered product
    sizes = unit_sizes(obs, cue_of, 5)
    probes = chain_probes(visits, 5, 0, cue_of)
    assert sizes == {j: len(probes_at(probes, j)) for j in range(1, 5)} == {1: 2, 2: 3, 3: 6, 4: 7}


def _frame(n_slots=20, archs=("nomemory", "dualmem")):
    rows = [{"backend": "b", "architecture": a, "study": "main", "chain": k % 4, "j": 1 + k // 4, "draw": (7 * k) % n_slots,
             "n": 3, "arch": i, "correct": None} for i, a in enumerate(archs) for k in range(n_slots)]
    return pl.DataFrame(rows, schema_overrides={"correct": pl.Int64})


def _run(rule, frame):
    units = [{"chain": r["chain"], "j": r["j"], "arch": r["arch"], "set": "ex"} for r in frame.iter_rows(named=True)]
    calls = []
    truth = {(r["chain"], r["j"], r["arch"]): (r["arch"] * (r["chain"] + r["j"])) % 4 for r in frame.iter_rows(named=True)}

    def score(batch):
        calls.append(batch)
        return {"finished": batch, "failed": []}

    cfg = SimpleNamespace(probes=SimpleNamespace(J=None), encode=SimpleNamespace(J=6))
    log = SimpleNamespace(info=lambda *a: None)
    chosen, status, rounds = run_rounds(cfg, frame, units, score, lambda u: min(truth[(u["chain"], u["j"], u["arch"])], 3),
                                        rule, log)
    return chosen, status, rounds, calls


def test_rounds_stop_when_the_rule_is_met_and_take_each_unit_once():
    frame = _frame()
    chosen, status, rounds, calls = _run(Rule(width=1.0, min_units=6, batch=4), frame)
    assert rounds == 1 and len(chosen) == 12 and set(status["reason"]) == {"width"}
    first = frame.filter(pl.col("draw") < 6)
    assert {(u["chain"], u["j"], u["arch"]) for u in chosen} == set(first.select("chain", "j", "arch").iter_rows())

    chosen, status, rounds, calls = _run(Rule(width=0.0, min_units=6, batch=4), frame)
    keys = [(u["chain"], u["j"], u["arch"]) for u in chosen]
    assert rounds == 1 + 4 and len(keys) == len(set(keys)) == 40  # 6 + 4 x 4 slots, both architectures
    assert set(status["reason"]) == {"exhausted"} and [len(c) for c in calls] == [12, 8, 8, 8, 4]


def test_adaptive_config_is_checked():
    import pytest

    from vismem.core.errors import ConfigError
    from vismem.pipelines.config import load_config
    from vismem.pipelines.dmv.probes import check

    with pytest.raises(ConfigError, match="cannot be combined with probes.mc"):
        load_config(overrides={"probes": {"mode": "adaptive", "mc": 10}})
    # the same architecture twice: the config's strict list check says so first (a contrast needs two)
    with pytest.raises(ConfigError, match="contrast: 'dualmem' is given more than once"):
        load_config(overrides={"probes": {"mode": "adaptive", "adaptive": {"contrast": ["dualmem", "dualmem"]}}})
    cfg = load_config(overrides={"memory": {"architectures": ["nomemory", "dualmem"]},
                                 "probes": {"mode": "adaptive", "adaptive": {"contrast": ["dualmem", "m2a-lite"]}}})
    with pytest.raises(ConfigError, match=r"probes.adaptive.contrast: \['m2a-lite'\] not among"):
        check(cfg)
    assert load_config().probes.mode == load_config(preset="paper").probes.mode == "exhaustive"
