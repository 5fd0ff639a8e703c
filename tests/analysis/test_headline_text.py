"""The one-line headline of ``vismem runs``: picked from the end-of-run summary's frames."""

from __future__ import annotations

import polars as pl

from vismem.analysis import synthetic
from vismem.analysis.headline_text import headline_line
from vismem.analysis.report import ReportOptions, headline


def test_line_names_the_best_cell_of_each_kind_with_its_interval():
    tables = {"probes": synthetic.probes(backends=("toy",), Js=(4,), chains=3),
              "memshot_answers": synthetic.memshot_answers(questions=8, variants={"memshot": 0.9, "text_rag": 0.2}),
              "memshot_recall": synthetic.memshot_recall(questions=8)}
    heads = headline(tables, ReportOptions(n_resamples=200, seed=1))
    line = headline_line(heads)
    best = heads["dmv"].row(0, named=True)
    assert line.startswith(f"TSR {best['architecture']} {100 * best['tsr']:.1f}% "
                           f"[{100 * best['low']:.1f}, {100 * best['high']:.1f}] (toy J=4)")
    acc = heads["memshot_answers"].sort("acc", descending=True).row(0, named=True)
    assert f"Acc memshot k={acc['k']} {100 * acc['acc']:.1f}%" in line
    rec = heads["memshot_recall"].filter(pl.col("k") == 10).sort("recall", descending=True).row(0, named=True)
    assert f"recall@10 {rec['variant']} {100 * rec['recall']:.1f}%" in line


def test_no_tables_no_line():
    assert headline_line({}) == ""
