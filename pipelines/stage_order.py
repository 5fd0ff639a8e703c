"""The one list of stages: each stage's name, in run order, and the module that defines it.

A leaf (imports nothing of the project), so the run config can validate ``stages:`` without
loading any stage. Adding a stage is its module (``STAGE = Stage(...)``) plus one line here.

============  ====================================  ===========================================
stage         module                                what it does
============  ====================================  ===========================================
memshot       ``pipelines/memshot/stage.py``        render dialogue shots, retrieve, recall@k,
                                                    answers and judge
catalog       ``pipelines/dmv/catalog.py``          the storefront's 2,000 product images
encode        ``pipelines/dmv/encode.py``           agents browse chains of sessions (trajectory
                                                    cache)
replay        ``pipelines/dmv/replay.py``           features once; every memory architecture's
                                                    banks from the trajectories
probes        ``pipelines/dmv/probes.py``           recall probes by reach over the banks
report        ``pipelines/report/stage.py``         scoring, statistics, figures, the report
============  ====================================  ===========================================
"""

from __future__ import annotations

#: Stage name -> module defining its ``STAGE``, in the order a run executes them.
STAGE_MODULES: dict[str, str] = {
    "memshot": "vismem.pipelines.memshot.stage",
    "catalog": "vismem.pipelines.dmv.catalog",
    "encode": "vismem.pipelines.dmv.encode",
    "replay": "vismem.pipelines.dmv.replay",
    "probes": "vismem.pipelines.dmv.probes",
    "report": "vismem.pipelines.report.stage",
}

#: Every stage, in run order.
STAGE_ORDER: tuple[str, ...] = tuple(STAGE_MODULES)
