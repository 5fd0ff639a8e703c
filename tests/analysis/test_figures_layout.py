"""Every figure of a full report keeps its titles inside the canvas and its legend off the axes,
even for a back-end whose name is long (a stand-in browser / recaller pair)."""

from __future__ import annotations

import polars as pl
import pytest

from vismem.analysis import figures, memshot_sections, synthetic
from vismem.analysis.report import ReportOptions, build_report

LONG = "a-very-long-browsing-back-end-name (stand-in) / scripted-recall (stand-in)"


def _tables() -> dict[str, pl.DataFrame]:
    sweep = [synthetic.probes(Js=(4,), backends=(LONG,), chains=3, study="alpha_sweep", alpha=a,
                              p={"dualmem": 0.5 + a / 3}) for a in (0.0, 0.5, 1.0)]
    main = synthetic.probes(Js=(4,), backends=(LONG, "gemini-2.5-flash"), chains=3)
    return {"probes": pl.concat([main, *sweep], how="diagonal_relaxed"),
            "encoding": synthetic.encoding(backends=(LONG, "gemini-2.5-flash"), chains=3, J=4),
            "memshot_answers": synthetic.memshot_answers(questions=8, heights=(None, 512, 768)),
            "memshot_recall": synthetic.memshot_recall(questions=8)}


def _problems(fig) -> list[str]:
    fig.canvas.draw()
    canvas, out = fig.bbox, []
    texts = [fig._suptitle, *[ax.title for ax in fig.axes if ax.get_visible()]]
    for text in (t for t in texts if t is not None and t.get_text()):
        box = text.get_window_extent()
        if box.x0 < canvas.x0 - 1 or box.x1 > canvas.x1 + 1 or box.y1 > canvas.y1 + 1:
            out.append(f"title clipped: {text.get_text()!r}")
    for legend in fig.legends:
        if any(ax.get_visible() and legend.get_window_extent().overlaps(ax.get_window_extent()) for ax in fig.axes):
            out.append("figure legend over an axes")
    out += ["legend inside an axes" for ax in fig.axes if ax.get_legend() is not None]
    return out


def test_every_report_figure_keeps_titles_in_and_legends_off_the_data(monkeypatch):
    seen: dict[str, list[str]] = {}
    render = figures.render

    def checked(fig):
        title = fig._suptitle.get_text() if fig._suptitle else next((a.get_title() for a in fig.axes), "")
        seen[title] = _problems(fig)
        return render(fig)

    monkeypatch.setattr(figures, "render", checked)
    # Fig. 1 drawn by an earlier report of this process is reused, not drawn: draw it here too.
    monkeypatch.setattr(memshot_sections, "FIG1_DRAWN", {})
    rep = build_report(_tables(), "f", options=ReportOptions(n_resamples=100, seed=1))
    # The bank-size/position figure (its title names the back-end), the alpha sweep, the encoding
    # histogram (the back-end in its legend) and MemShot's figures are among those drawn.
    assert len(seen) == len(rep.figures()) >= 8
    assert any(LONG.split()[0] in t for t in seen) and "Hybrid retrieval weight sweep" in seen
    assert {t: p for t, p in seen.items() if p} == {}


@pytest.mark.parametrize("label", [LONG, "short"])
def test_legend_labels_are_wrapped_not_squeezing_the_axes(label):
    import matplotlib.pyplot as plt

    fig = figures.encoding(synthetic.encoding(backends=(label,), chains=2, J=3))
    fig.canvas.draw()
    ax = fig.axes[0]
    # The axes keep most of the figure's width; the legend's lines stay short.
    assert ax.get_window_extent().width > 0.45 * fig.bbox.width
    assert max(len(line) for t in fig.legends[0].get_texts() for line in t.get_text().split("\n")) <= 32
    plt.close(fig)
