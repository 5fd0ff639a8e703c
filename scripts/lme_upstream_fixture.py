"""Record upstream LongMemEval's ``flat-bm25`` and ``flat-contriever`` retrieval on generated
files, for a test to check ours against (``tests/memory/dialogue/test_lme_upstream.py``; the test
cannot download upstream).

Runs upstream's own per-question function (``src/retrieval/run_retrieval.py``:
``batch_get_retrieved_context_and_eval``: corpus, retrieval, ranking and metrics) on synthetic
LongMemEval files written by :func:`vismem.env.dialogue.lme_synth.write_synthetic_longmemeval`,
and writes each question's ranked corpus ids and metrics, with the generator's arguments and the
file's SHA-256 (the test regenerates the file and checks it is the one upstream read).
``flat-contriever`` runs a tiny random Contriever-shaped model
(``tests/memory/dialogue/tiny_contriever.py``, seeded, built from the file's words) in place of
``facebook/contriever``: what is compared is upstream's pooling, scoring and tie order.

Regenerate (upstream checkout at any path; the commit recorded is the one read)::

    git clone https://github.com/xiaowu0162/LongMemEval /tmp/LongMemEval
    .venv/bin/python scripts/lme_upstream_fixture.py /tmp/LongMemEval \\
        -o tests/memory/dialogue/lme_upstream.json

Upstream is imported, not copied. Three shims let it run here, none touching what it computes:
its worker reads a GPU number from the process name (set to ``Worker-1``), ``np.asfarray``
(removed in NumPy 2) is restored as ``np.asarray(x, dtype=float)``, and its model loading
(``prepare_retriever``: ``facebook/contriever`` from the hub onto a GPU) loads the tiny model.
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


RETRIEVERS = ("flat-bm25", "flat-contriever")


def corpus_texts(entries: list[dict]) -> list[str]:
    """Every turn and question of a file: the tiny model's vocabulary is built from them."""
    return [t["content"] for e in entries for s in e["haystack_sessions"] for t in s] + [e["question"] for e in entries]


def _upstream(root: Path):
    sys.path.insert(0, str(root))
    if not hasattr(np, "asfarray"):
        np.asfarray = lambda a: np.asarray(a, dtype=float)  # removed in NumPy 2; upstream's dcg uses it
    from src.retrieval import run_retrieval

    mp.current_process().name = "Worker-1"  # upstream derives its GPU id from the worker's name
    return run_retrieval


def _tiny_loader(folder: Path):
    def prepare_retriever(self) -> None:  # in place of loading facebook/contriever onto a GPU
        from transformers import AutoModel, AutoTokenizer

        self.retriever_model = (AutoTokenizer.from_pretrained(folder), AutoModel.from_pretrained(folder).eval())
    return prepare_retriever


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("upstream", type=Path, help="a LongMemEval checkout")
    ap.add_argument("-o", "--out", type=Path, required=True)
    ap.add_argument("--commit", help="the checkout's commit, where it is not a git clone (an export)")
    args = ap.parse_args(argv)
    from vismem.env.dialogue.lme_synth import write_synthetic_longmemeval

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.memory.dialogue.tiny_contriever import build_tiny_contriever

    upstream = _upstream(args.upstream)
    commit = subprocess.run(["git", "-C", str(args.upstream), "rev-parse", "HEAD"], capture_output=True,
                            text=True).stdout.strip() if args.commit is None else args.commit
    files = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, kw in enumerate(FILES):
            path = Path(tmp) / f"lme_{i}.json"
            write_synthetic_longmemeval(path, **kw)
            entries = json.loads(path.read_text())
            out = {"generator": kw, "sha256": hashlib.sha256(path.read_bytes()).hexdigest(), "questions": []}
            tiny = build_tiny_contriever(Path(tmp) / f"tiny_{i}", corpus_texts(entries))
            upstream.DenseRetrievalMaster.prepare_retriever = _tiny_loader(tiny)
            for retriever in RETRIEVERS:
                for gran in ("session", "turn"):
                    ns = argparse.Namespace(retriever=retriever, granularity=gran, index_expansion_method="none")
                    for res in upstream.batch_get_retrieved_context_and_eval(entries, ns):
                        r = res["retrieval_results"]
                        out["questions"].append({"question_id": res["question_id"], "retriever": retriever,
                                                 "granularity": gran,
                                                 "ranked": [it["corpus_id"] for it in r["ranked_items"]],
                                                 "metrics": r["metrics"]})
            files.append(out)
    import torch

    doc = {"upstream": "github.com/xiaowu0162/LongMemEval", "commit": commit, "retrievers": list(RETRIEVERS),
           "numpy": np.__version__, "torch": torch.__version__, "files": files}
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.out}: {sum(len(f['questions']) for f in files)} rankings")


if __name__ == "__main__":
    main()
