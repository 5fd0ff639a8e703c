"""Issue 43.3: every step of a run says it is running. The `local` preset's stages on tiny data,
in-process on the session's local Ray, with progress lines on and their period cut to
:data:`EVERY_S`: no two lines may be further apart than :data:`THRESHOLD_S`. A step that loops,
waits on a Ray job or loads a model without going through ``core.progress`` (``track``, ``step``,
``rayctx.collect``) leaves a gap as long as it runs (the memshot stage's render and OCR jobs
left two minutes of nothing before), and the failure names the lines on either side of it."""

from __future__ import annotations

from vismem.core import progress
from vismem.pipelines.config import load_config
from vismem.pipelines.runner import run
from tests.conftest import cut_locomo

#: The heartbeat of tracked loops and steps in this test (10 s in a run).
EVERY_S = 0.25
#: The longest silence allowed: a few heartbeats, so only code outside any tracked step -- glue
#: between steps, a table write on tiny data -- may run between two lines, and not for long.
THRESHOLD_S = 6.0


def _tiny_local(tmp_path, dialogue):
    """The local preset, every stage, on tiny inputs (its components and variants unchanged)."""
    return load_config(preset="local", overrides={
        "name": "silence-test", "runs_dir": str(tmp_path / "runs"), "store": {"uri": f"file://{tmp_path}/store"},
        "memshot": {"dataset_path": str(dialogue), "k": [1, 3]},
        "catalog": {"limit": 12},
        "encode": {"chains": 1, "J": 2, "env": "http"},
        "probes": {"workers": 1},
        "report": {"n_resamples": 200}})


def test_no_step_of_the_local_presets_stages_is_silent(tmp_path, ray_local, data_dir, monkeypatch, capsys):
    # one LoCoMo session: every step of the memshot stage still runs (render, OCR, embeddings, the
    # MemOCR stand-in's shots), on half the shots of the shared two-session cut
    cfg = _tiny_local(tmp_path, cut_locomo(data_dir, tmp_path / "locomo-1.json", sessions=1))
    assert len(cfg.stages) == 6
    monkeypatch.setenv("VISMEM_PROGRESS", "1")
    monkeypatch.setattr(progress, "EVERY_S", EVERY_S)
    with progress.watch() as heard:
        out = run(cfg, progress=True)
    assert all(out[s].get("status", "done") in ("done", "partial") for s in cfg.stages), out
    stages = [m for _, m in heard.lines if m.startswith("stage ")]
    assert stages[0] == "stage 1/6 memshot: started" and stages[-1].startswith("stage 6/6 report: done")
    gaps = sorted(((b[0] - a[0], a[1], b[1]) for a, b in zip(heard.lines, heard.lines[1:])), reverse=True)
    worst = "\n".join(f"  {g:5.1f} s between {a!r} and {b!r}" for g, a, b in gaps[:5])
    assert gaps[0][0] <= THRESHOLD_S, f"silent for longer than {THRESHOLD_S} s:\n{worst}"
    # the long steps of each stage report their start, count and end
    said = [m for _, m in heard.lines]
    for step in ("memshot: rendering memshot sessions", "memshot OCR: sessions read",
                 "session-summary-shots (stand-in extractive): reading its shots", "catalog: product images",
                 "encode: sessions", "probes: units", "report: scoring"):
        start = next(i for i, m in enumerate(said) if m.startswith(step) and ": started" in m)
        assert any(m.startswith(step) and " done in " in m for m in said[start:]), step
    assert capsys.readouterr().out == ""  # lines go to stderr only
