"""Record upstream LongMemEval's ``flat-bm25`` retrieval on generated files, for a test to check
ours against (``tests/memory/dialogue/test_lme_upstream.py``; the test cannot download upstream).

Runs upstream's own per-question function (``src/retrieval/run_retrieval.py``:
``batch_get_retrieved_context_and_eval``: corpus, BM25, ranking and metrics) on synthetic
LongMemEval files written by :func:`vismem.env.dialogue.lme_synth.write_synthetic_longmemeval`,
and writes each question's ranked corpus ids and metrics, with the generator's arguments and the
file's SHA-256 (the test regenerates the file and checks it is the one upstream read).

Regenerate (upstream checkout at any path; the commit recorded is the one read)::

    git clone https://github.com/xiaowu0162/LongMemEval /tmp/LongMemEval
    .venv/bin/python scripts/lme_upstream_fixture.py /tmp/LongMemEval \\
        -o tests/memory/dialogue/lme_upstream_bm25.json

Upstream is imported, not copied. Two shims let it run here, neither touching what it computes:
its worker reads a GPU number from the process name (set to ``Worker-1``), and ``np.asfarray``
(removed in NumPy 2) is restored as ``np.asarray(x, dtype=float)``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing as mp
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

#: The generated files: write_synthetic_longmemeval keyword arguments. Over 16 sessions (60 user
#: turns) so numpy's introsort partitions and tie order is more than insertion order; no repeated
#: sessions (our loader keeps a repeat once, upstream indexes it twice).
FILES = ({"seed": 3, "n_questions": 6, "sessions_per_question": 30, "turns_per_session": 4, "words_per_turn": 8,
          "pool_size": 40, "dup_every": 0, "abs_every": 5},
         {"seed": 11, "n_questions": 5, "sessions_per_question": 12, "turns_per_session": 2, "words_per_turn": 5,
          "pool_size": 12, "dup_every": 0, "abs_every": 0})


def _upstream(root: Path):
    sys.path.insert(0, str(root))
    if not hasattr(np, "asfarray"):
        np.asfarray = lambda a: np.asarray(a, dtype=float)  # removed in NumPy 2; upstream's dcg uses it
    from src.retrieval.run_retrieval import batch_get_retrieved_context_and_eval

    mp.current_process().name = "Worker-1"  # upstream derives its GPU id from the worker's name
    return batch_get_retrieved_context_and_eval


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("upstream", type=Path, help="a LongMemEval checkout")
    ap.add_argument("-o", "--out", type=Path, required=True)
    ap.add_argument("--commit", help="the checkout's commit, where it is not a git clone (an export)")
    args = ap.parse_args(argv)
    from vismem.env.dialogue.lme_synth import write_synthetic_longmemeval

    run = _upstream(args.upstream)
    commit = subprocess.run(["git", "-C", str(args.upstream), "rev-parse", "HEAD"], capture_output=True,
                            text=True).stdout.strip() if args.commit is None else args.commit
    files = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, kw in enumerate(FILES):
            path = Path(tmp) / f"lme_{i}.json"
            write_synthetic_longmemeval(path, **kw)
            entries = json.loads(path.read_text())
            out = {"generator": kw, "sha256": hashlib.sha256(path.read_bytes()).hexdigest(), "questions": []}
            for gran in ("session", "turn"):
                ns = argparse.Namespace(retriever="flat-bm25", granularity=gran, index_expansion_method="none")
                for res in run(entries, ns):
                    r = res["retrieval_results"]
                    out["questions"].append({"question_id": res["question_id"], "granularity": gran,
                                             "ranked": [it["corpus_id"] for it in r["ranked_items"]],
                                             "metrics": r["metrics"]})
            files.append(out)
    doc = {"upstream": "github.com/xiaowu0162/LongMemEval", "commit": commit, "retriever": "flat-bm25",
           "numpy": np.__version__, "files": files}
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.out}: {sum(len(f['questions']) for f in files)} rankings")


if __name__ == "__main__":
    main()
