"""The MemShot sample viewer of a run: read what the run used, hand frames to ``analysis``.

Reads the run's ranking (``runs/<id>/memshot/ranked.parquet``), its units (every variant's and
memory's ``units.parquet``), the questions (re-read from the dataset the manifest names, else
pieced together from the result tables), answers and verdicts, the read-rate rows, and where
each question's first evidence unit ranked in the whole ranking (``memshot/evidence_ranks/``:
a miss's rank below the top k). For each
unit some question's top k shows it adds what its retriever actually saw:

* a pixel reader's OCR text, from the store's OCR cache (``ocr/<ocr_key>/<sha256>.txt``,
  :mod:`vismem.memory.dialogue.pixels`) under the reader of the run's ``memshot.image_embedder``;
* where the embedder truncates (MiniLM: 256 word pieces, ``[CLS]`` and ``[SEP]`` included), how
  many characters of the embedded text it kept -- counted with the embedder's own tokenizer
  (``tokenizer.json`` beside its weights), else estimated from a lower bound on the pieces.

Shots are written as files beside the page (``runs/<id>/report/samples/<sha256>.png``), named
by content, and the page refers to them by relative URL: the page stays small whatever the
number of shots, and the browser loads only those of the question on screen.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

import polars as pl

if TYPE_CHECKING:
    from vismem.core.store import Store

log = logging.getLogger("vismem")

#: Questions in the sample viewer (full LoCoMo has 1,986; a full LongMemEval run has 500).
MAX_QUESTIONS = 2_500
#: Folder beside the page that holds its shots (relative URL ``samples/<name>``).
SHOT_DIR = "samples"
#: Embedders that truncate with a MiniLM tokenizer: registry name -> where the MiniLM args sit.
_MINILM_ARGS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "minilm": lambda args: args,
    "ocr-minilm": lambda args: dict(args.get("minilm") or {}),
}
_PIECE = re.compile(r"\w+|[^\w\s]")
_MIME = {"png": "image/png", "jpg": "image/jpeg", "webp": "image/webp"}


def shot_file(data: bytes) -> str:
    """A shot's file name: its content's SHA-256 and the extension its bytes say."""
    from vismem.analysis.viewer_files import image_ext

    return f"{hashlib.sha256(data).hexdigest()}.{image_ext(data)}"


class Truncation:
    """Where an embedder's input limit cuts a text: ``cut(texts)`` gives, per text, the number of
    leading characters it embeds (None: the whole text). ``exact``: counted with the embedder's
    own tokenizer; else estimated (words and punctuation marks are a lower bound on word pieces,
    so the estimated cut is never earlier than the real one)."""

    def __init__(self, max_tokens: int, tokenizer: Any = None) -> None:
        self.max_tokens = int(max_tokens)
        self.tokenizer = tokenizer
        self.exact = tokenizer is not None

    @property
    def label(self) -> str:
        return f"embeds the first {self.max_tokens} word pieces" + ("" if self.exact else " (cut estimated)")

    def cut(self, texts: Sequence[str]) -> list[int | None]:
        if self.tokenizer is None:
            return [self._estimate(t) for t in texts]
        out: list[int | None] = []
        for enc in self.tokenizer.encode_batch(list(texts)):
            content = [off for off, special in zip(enc.offsets, enc.special_tokens_mask) if not special]
            keep = self.max_tokens - (len(enc.ids) - len(content))  # the specials count against the limit
            out.append(None if len(content) <= keep else content[keep - 1][1])
        return out

    def _estimate(self, text: str) -> int | None:
        pieces = list(_PIECE.finditer(text))
        keep = self.max_tokens - 2
        return None if len(pieces) <= keep else pieces[keep - 1].end()


def minilm_truncation(path: str | None) -> Truncation:
    """The truncation of a sentence-transformers MiniLM at ``path`` (None: the packaged model):
    its ``max_seq_length`` and its ``tokenizer.json``; 256 pieces, estimated, when they cannot be read."""
    try:
        if path is None:
            from vismem.serve.embedders.minilm import packaged_model_path

            path = packaged_model_path()
        root = Path(path)
        limit = json.loads((root / "sentence_bert_config.json").read_text()).get("max_seq_length", 256)
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(root / "tokenizer.json"))
        tok.no_truncation()
        tok.no_padding()
        return Truncation(limit, tok)
    except Exception as err:  # noqa: BLE001 - a viewer never fails for want of a tokenizer
        log.info("sample viewer: MiniLM tokenizer not read (%s); truncation points estimated", err)
        return Truncation(256)


def _config(manifest: dict[str, Any] | None) -> Any:
    from vismem.pipelines.config import load_config

    try:
        return load_config(None, overrides=(manifest or {})["config"])
    except Exception as err:  # noqa: BLE001 - a manifest from another version: the tables still show
        log.info("sample viewer: run config not read from the manifest (%s)", err)
        return None


def _questions(cfg: Any, tables: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """The run's questions: re-read from its dataset, else pieced together from the result tables."""
    try:
        from vismem.memory.dialogue.retrieval import questions_frame
        from vismem.pipelines.context import resolve_data_dir
        from vismem.pipelines.memshot.render import load_conversations

        if cfg is None:
            raise ValueError("no run config")
        return questions_frame(load_conversations(cfg.memshot, resolve_data_dir(cfg)), scored_only=False)
    except Exception as err:  # noqa: BLE001 - the dataset may live only on the cluster that ran
        log.info("sample viewer: questions not re-read from the dataset (%s); using the result tables", err)
    parts = []
    for kind, cols in (("memshot_answers", ["conversation_id", "question_id", "question", "answer", "category"]),
                       ("memshot_recall", ["conversation_id", "question_id", "category"])):
        df = tables.get(kind)
        if df is not None and df.height:
            parts.append(df.select([c for c in cols if c in df.columns]).unique("question_id", maintain_order=True))
    if not parts:
        return pl.DataFrame(schema={"conversation_id": pl.String, "question_id": pl.String})
    out = pl.concat(parts, how="diagonal_relaxed").unique("question_id", keep="first", maintain_order=True)
    return out.with_columns(pl.lit([], pl.List(pl.String)).alias("evidence"))


def _units(store: "Store", run_id: str) -> pl.DataFrame | None:
    keys = [k for k in store.list(f"runs/{run_id}/memshot") if k.endswith("/units.parquet")]
    parts = [store.read_table(k) for k in keys]
    return pl.concat(parts, how="diagonal_relaxed") if parts else None


def _embedders(tables: dict[str, pl.DataFrame]) -> dict[str, str]:
    """variant -> the retriever label the recall / answers tables name."""
    out: dict[str, str] = {}
    for kind in ("memshot_recall", "memshot_answers"):
        df = tables.get(kind)
        if df is not None and {"variant", "embedder"} <= set(df.columns):
            for v, e in df.select("variant", "embedder").drop_nulls().unique(maintain_order=True).iter_rows():
                out.setdefault(v, e)
    return out


def _specs(cfg: Any) -> dict[str, dict[str, Any]]:
    """``{"text": spec, "image": spec}`` of the run's embedders (resolved; absent when unset)."""
    from vismem.serve.registry import EMBEDDERS

    out = {}
    for role in ("text", "image"):
        raw = getattr(cfg.memshot, f"{role}_embedder", None) if cfg is not None else None
        if raw is not None:
            try:
                out[role] = EMBEDDERS.resolve(raw)
            except Exception:  # noqa: BLE001 - an embedder this version no longer knows
                continue
    return out


def _ocr_texts(store: "Store", spec: dict[str, Any] | None, shots: dict[str, bytes]) -> dict[str, str]:
    """shot key -> the text the pixel reader ``spec`` read from it, where the OCR cache has it."""
    from vismem.memory.dialogue.pixels import cache_key, cached_text, store_cache
    from vismem.serve.embedders.ocr import reader_ocr_key

    key = reader_ocr_key(spec) if spec is not None else None
    if key is None:
        return {}
    get, _ = store_cache(store)
    out = {}
    for k, data in shots.items():
        hit = cached_text(get, cache_key(key, data))
        if hit is not None:
            out[k] = hit[0]
    return out


def _what_was_embedded(units: pl.DataFrame, cfg: Any, tables: dict[str, pl.DataFrame],
                       ocr: dict[str, str]) -> tuple[pl.DataFrame, dict[str, dict[str, Any]]]:
    """``units`` with ``ocr_text``, ``embedded`` and ``embedded_chars`` (see the module doc), and
    per variant its retriever and truncation."""
    from vismem.serve.embedders.ocr import is_pixel_reader

    specs, labels = _specs(cfg), _embedders(tables)
    pixel = "image" in specs and is_pixel_reader(specs["image"])
    truncs: dict[str, Truncation] = {}
    by_path: dict[str | None, Truncation] = {}
    info: dict[str, dict[str, Any]] = {}
    role_of: dict[str, str | None] = {}
    for v in units["variant"].unique(maintain_order=True).to_list():
        label = labels.get(v, "")
        name = re.split(r"[: ]", label, maxsplit=1)[0]
        role = next((r for r, s in specs.items() if s["name"] == name), None)
        role_of[v] = role
        info[v] = {"embedder": label} if label else {}
        if role is not None and name in _MINILM_ARGS:
            path = _MINILM_ARGS[name](dict(specs[role].get("args") or {})).get("path")
            truncs[v] = by_path[path] = by_path.get(path) or minilm_truncation(path)
            info[v]["limit"] = truncs[v].label
    rows = units.select("variant", "key", "text").to_dicts()
    ocr_col = [ocr.get(r["key"]) if r["key"] else None for r in rows]
    emb = [("ocr" if pixel and role_of.get(r["variant"]) == "image" else None) if r["key"]
           else ("text" if role_of.get(r["variant"]) else None) for r in rows]
    chars: list[int | None] = [None] * len(rows)
    for v, tr in truncs.items():
        idx = [i for i, r in enumerate(rows) if r["variant"] == v and emb[i]]
        texts = [(ocr_col[i] if emb[i] == "ocr" else rows[i]["text"]) or "" for i in idx]
        for i, c in zip(idx, tr.cut(texts)):
            chars[i] = c
    return units.with_columns(pl.Series("ocr_text", ocr_col, pl.String), pl.Series("embedded", emb, pl.String),
                              pl.Series("embedded_chars", chars, pl.Int64)), info


def sample_page(store: "Store", run_id: str, tables: dict[str, pl.DataFrame],
                manifest: dict[str, Any] | None) -> str | None:
    """The sample viewer's HTML for a run (None: the run has no MemShot ranking). Writes the shots
    it shows under ``runs/<id>/report/samples/`` first."""
    from vismem.analysis.samples import sample_viewer
    from vismem.core.blobref import read_many

    ranked_key = f"runs/{run_id}/memshot/ranked.parquet"
    units = _units(store, run_id)
    if not store.exists(ranked_key) or units is None:
        return None
    cfg = _config(manifest)
    ranked = store.read_table(ranked_key)
    questions = _questions(cfg, tables)
    asked = set(ranked["question_id"].unique().to_list())
    answers = tables.get("memshot_answers")
    if answers is not None:
        asked |= set(answers["question_id"].unique().to_list())
    questions = questions.filter(pl.col("question_id").is_in(list(asked)))
    note = ""
    if questions.height > MAX_QUESTIONS:
        note = f"First {MAX_QUESTIONS:,} of {questions.height:,} questions."
        questions = questions.head(MAX_QUESTIONS)
    top = ranked.filter(pl.col("question_id").is_in(questions["question_id"].to_list()))
    # Only units some question's ranking holds are described (with any other variant's render of
    # the same unit: a text unit shows how memshot drew it), and only their shots written.
    # Units holding a shown question's evidence turn come too: a miss shows what it missed.
    ev = (questions.select("conversation_id", pl.col("evidence").alias("dia")).explode("dia").drop_nulls().unique()
          if "evidence" in questions.columns else None)
    holding = (units.select("variant", "unit_id", "conversation_id", pl.col("dia_ids").alias("dia")).explode("dia")
               .join(ev, on=["conversation_id", "dia"]).select("variant", "unit_id").unique()
               if ev is not None and ev.height and {"conversation_id", "dia_ids"} <= set(units.columns) else None)
    if holding is None:
        holding = pl.DataFrame(schema={"variant": pl.String, "unit_id": pl.String})
    units = (units.join(holding.with_columns(pl.lit(True).alias("holds_evidence")), on=["variant", "unit_id"],
                        how="left", maintain_order="left")
             .filter(pl.col("unit_id").is_in(top["unit_id"].unique().to_list()) | pl.col("holds_evidence").is_not_null())
             .drop("holds_evidence"))
    if "key" not in units.columns:
        units = units.with_columns(pl.lit(None, pl.String).alias("key"))
    keys = sorted(set(units["key"].drop_nulls().to_list()))
    shots = dict(zip(keys, read_many(store.get_bytes, keys)))  # one request per session pack
    urls = {}
    for k, data in shots.items():
        name = shot_file(data)
        store.put_bytes(f"runs/{run_id}/report/{SHOT_DIR}/{name}", data, content_type=_MIME.get(name.rsplit(".", 1)[1]))
        urls[k] = f"{SHOT_DIR}/{name}"
    spec = _specs(cfg).get("image")
    units, info = _what_was_embedded(units, cfg, tables, _ocr_texts(store, spec, shots))
    rr_key = f"runs/{run_id}/results/memshot_readrate.parquet"
    readings = store.read_table(rr_key) if store.exists(rr_key) else None
    return sample_viewer(questions, top, units, shot_urls=urls, recall=tables.get("memshot_recall"), answers=answers,
                         readings=readings, evidence_ranks=_evidence_ranks(store, run_id), variant_info=info,
                         run_id=run_id, note=note)


def _evidence_ranks(store: "Store", run_id: str) -> pl.DataFrame | None:
    """The ranking retrievers' evidence ranks (``memshot/evidence_ranks/<role>.parquet``, written
    by the memshot stage beside ``ranked.parquet``; the extra retrievers' rank no page variant).
    None for a run from before they were recorded."""
    keys = [f"runs/{run_id}/memshot/evidence_ranks/{role}.parquet" for role in ("text_embedder", "image_embedder")]
    parts = [store.read_table(k) for k in keys if store.exists(k)]
    return pl.concat(parts, how="diagonal_relaxed") if parts else None


__all__ = ["MAX_QUESTIONS", "SHOT_DIR", "Truncation", "minilm_truncation", "sample_page", "shot_file"]
