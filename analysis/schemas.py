"""Result-table schemas: the one place that says what every result Parquet holds.

Where results live
------------------
Every stage writes its results under the run's prefix in the store::

    runs/<run_id>/results/<kind>.parquet        one object, or
    runs/<run_id>/results/<kind>/*.parquet      a folder of parts (what Ray Data writes)

``kind`` is one of :data:`KINDS`. The report stage reads whichever of these exist.

Writing
-------
Call :func:`validate` before writing (or use :func:`write_results`, which validates, stamps
``schema_version`` and writes atomically)::

    from vismem.analysis.schemas import validate, write_results, result_key
    df = validate(df, "probes")                 # raises SchemaError naming the problem
    write_results(store, "runs/<run_id>", "probes", df)

``validate`` casts columns to the declared dtypes where that is lossless, adds missing optional
columns as nulls, keeps extra columns (after the declared ones), and raises
:class:`SchemaError` (a :class:`vismem.core.errors.DataError`, exit code 4) naming the kind, the
column and the first offending row otherwise.

Kinds
-----
``probes``            one row per DMV-Bench recall probe x architecture (x variant).
``encoding``          one row per DMV-Bench encoding session (backend, seed, j).
``memshot_answers``   one row per MemShot question x variant x k (x model).
``memshot_recall``    one row per MemShot question x variant x k: evidence recall of retrieval.
``adaptive``          one row per DMV-Bench cell of an adaptive probes run: units probed / eligible, interval, reason.

This module imports only polars so any pipeline can use it cheaply.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import polars as pl

from vismem.core.errors import DataError


class SchemaError(DataError):
    """A result table does not match its schema (the message names kind, column and row)."""


@dataclass(frozen=True)
class Column:
    """One declared column: dtype, whether it may be missing/null, and what it means."""

    name: str
    dtype: Any
    required: bool
    description: str
    nullable: bool = False


@dataclass(frozen=True)
class Schema:
    kind: str
    version: int
    description: str
    columns: tuple[Column, ...]
    #: Row-level checks: (description, polars expression that is True for *bad* rows).
    checks: tuple[tuple[str, Callable[[], pl.Expr]], ...] = ()
    #: Columns that together identify a row (duplicates are an error).
    key: tuple[str, ...] = ()

    def polars_schema(self) -> dict[str, Any]:
        return {c.name: c.dtype for c in self.columns}

    def arrow_schema(self) -> Any:
        """The equivalent ``pyarrow.Schema`` (for writers that build Arrow tables directly)."""
        return pl.DataFrame(schema=self.polars_schema()).to_arrow().schema


def _c(name: str, dtype: Any, description: str, *, required: bool = True, nullable: bool | None = None) -> Column:
    return Column(name, dtype, required, description, (not required) if nullable is None else nullable)


#: Values of ``probes.study``: which experiment a probe row belongs to.
STUDIES = ("main", "ablation", "alpha_sweep")

PROBES = Schema(
    kind="probes",
    version=1,
    description="DMV-Bench recall probes: one row per (probe, architecture, variant).",
    columns=(
        _c("backend", pl.String, "VLM back-end that browsed and recalled (e.g. gemini-2.5-flash, a stand-in name)."),
        _c("seed", pl.Int64, "Chain seed: the chain (cluster) a probe belongs to; trajectories are keyed (backend, seed, j)."),
        _c("J", pl.Int64, "Chain length (number of encoding sessions)."),
        _c("architecture", pl.String, "Memory architecture name as registered (e.g. dualmem, m2a-lite)."),
        _c("probe_id", pl.String, "Probe id, unique within (backend, seed, J); equal ids pair probes across architectures."),
        _c("visit_session", pl.Int64, "Session (1-based) in which the target product was visited."),
        _c("recall_session", pl.Int64, "Session after which the probe is issued."),
        _c("reach", pl.Int64, "recall_session - visit_session (>= 1)."),
        _c("bank_size", pl.Int64, "Bank size at recall: the chain's distinct products visited up to the recall session "
                                  "(the same for every architecture, NoMemory included)."),
        _c("encoding_position", pl.Int64, "Position of the target's visit in the chain's observation stream (0-based)."),
        _c("target_url", pl.String, "Ground-truth product URL."),
        _c("final_url", pl.String, "URL the recall agent ended on (null when it produced none).", nullable=True),
        _c("correct", pl.Boolean, "URL match of final_url against target_url."),
        _c("steps", pl.Int64, "Recall-agent steps used."),
        _c("study", pl.String, "Experiment: main (Table 2 grid; the default), ablation (Table 4), alpha_sweep (Fig. 7).", required=False, nullable=False),
        _c("variant", pl.String, "Ablation/variant label (e.g. 'retrieval=visual inject=image'); 'default' on the main grid.", required=False, nullable=False),
        _c("alpha", pl.Float64, "Visual weight of hybrid retrieval, when the architecture has one.", required=False),
        _c("encoder", pl.String, "Visual encoder of the memory (e.g. siglip2, clip).", required=False),
        _c("target_cue", pl.String, "The cue phrase of the probe (e.g. 'red baseball cap').", required=False),
        _c("failure", pl.String, "Why the probe failed when it did not end on a URL (invalid action, step cap, ...).", required=False),
    ),
    checks=(
        ("reach must equal recall_session - visit_session",
         lambda: pl.col("reach") != (pl.col("recall_session") - pl.col("visit_session"))),
        ("reach must be >= 1", lambda: pl.col("reach") < 1),
        ("bank_size, steps and encoding_position must be >= 0",
         lambda: (pl.col("bank_size") < 0) | (pl.col("steps") < 0) | (pl.col("encoding_position") < 0)),
        (f"study must be one of {STUDIES}", lambda: ~pl.col("study").is_in(list(STUDIES))),
        ("alpha must lie in [0, 1]", lambda: (pl.col("alpha") < 0) | (pl.col("alpha") > 1)),
    ),
    key=("backend", "seed", "J", "architecture", "study", "variant", "alpha", "probe_id"),
)

ENCODING = Schema(
    kind="encoding",
    version=1,
    description="DMV-Bench encoding sessions: one row per (backend, seed, j).",
    columns=(
        _c("backend", pl.String, "VLM back-end that browsed."),
        _c("seed", pl.Int64, "Chain seed."),
        _c("j", pl.Int64, "Session index in the chain (1-based)."),
        _c("steps", pl.Int64, "Agent steps taken in the session."),
        _c("distinct_products", pl.Int64, "Distinct product pages visited."),
        _c("styles", pl.Int64, "Distinct collection styles opened."),
        _c("category", pl.String, "Product category of the session's shopping task.", required=False),
        _c("invalid_actions", pl.Int64, "Malformed or invalid model replies recorded as invalid steps.", required=False),
        _c("terminated", pl.String, "How the session ended (step_cap, done, wishlist, error).", required=False),
        _c("wall_s", pl.Float64, "Wall-clock seconds of the session.", required=False),
    ),
    checks=(
        ("j must be >= 1", lambda: pl.col("j") < 1),
        ("steps, distinct_products and styles must be >= 0",
         lambda: (pl.col("steps") < 0) | (pl.col("distinct_products") < 0) | (pl.col("styles") < 0)),
    ),
    key=("backend", "seed", "j"),
)

MEMSHOT_ANSWERS = Schema(
    kind="memshot_answers",
    version=1,
    description="MemShot answers: one row per (dataset, model, question, variant, k, max_height).",
    columns=(
        _c("dataset", pl.String, "locomo or longmemeval."),
        _c("conversation_id", pl.String, "Conversation (sample) id."),
        _c("question_id", pl.String, "Question id, unique within the conversation."),
        _c("question", pl.String, "Question text."),
        _c("category", pl.String, "Question category (e.g. multi-hop, temporal, open-domain, single-hop)."),
        _c("variant", pl.String, "Method/variant: memshot, text_rag, memshot_full_session, memshot_no_header, ..."),
        _c("k", pl.Int64, "Retrieved memory units given to the VLM."),
        _c("prediction", pl.String, "The VLM's answer (null when the reply was malformed).", nullable=True),
        _c("judge_label", pl.Boolean, "LLM-judge verdict (null when not judged).", nullable=True),
        _c("f1", pl.Float64, "Token F1 of prediction against the gold answer, in [0, 1]."),
        _c("f1_mem0", pl.Float64, "The paper's F1 (LightMem / A-MEM set-based token F1), in [0, 1].", required=False,
           nullable=True),
        _c("embedder", pl.String, "Retriever of the answer's units (a stand-in marked so); null when none.",
           required=False, nullable=True),
        _c("recall_hit", pl.Boolean, "Whether any evidence unit was in the top k (null if unknown).", required=False),
        _c("answer", pl.String, "Gold answer.", required=False),
        _c("model", pl.String, "Answering VLM (backbone) name; '(stand-in)' after it when a stand-in answered.",
           required=False),
        _c("max_height", pl.Int64, "Maximum rendering height of a shot in px, also for the default variant "
           "(null = full session / unbounded; variants named h<px> are read as that height).", required=False),
        _c("latency_s", pl.Float64, "Memory-construction latency attributed to the conversation, seconds.", required=False),
    ),
    checks=(
        ("f1 must lie in [0, 1]", lambda: (pl.col("f1") < 0) | (pl.col("f1") > 1)),
        ("k must be >= 1", lambda: pl.col("k") < 1),
    ),
    key=("dataset", "model", "conversation_id", "question_id", "variant", "k", "max_height"),
)

MEMSHOT_RECALL = Schema(
    kind="memshot_recall",
    # 2: a LoCoMo question without evidence turns has a row (recall 1, hit null, n_evidence 0), as
    # the official LoCoMo evaluation scores it; version 1 left it out.
    version=2,
    description="MemShot evidence recall: one row per (dataset, question, variant, k).",
    columns=(
        _c("dataset", pl.String, "locomo or longmemeval."),
        _c("conversation_id", pl.String, "Conversation id."),
        _c("question_id", pl.String, "Question id."),
        _c("category", pl.String, "Question category."),
        _c("variant", pl.String, "Retrieval unit variant (memshot, text_rag, ...)."),
        _c("k", pl.Int64, "Cut-off of the ranked list."),
        _c("recall", pl.Float64, "Fraction of the question's evidence turns covered by the top k units, in [0, 1]; "
           "1 for a LoCoMo question without evidence turns (official LoCoMo evaluation; LongMemEval leaves such "
           "questions out)."),
        _c("hit", pl.Boolean, "At least one evidence turn covered by the top k; null for a question without "
           "evidence turns.", nullable=True),
        _c("n_evidence", pl.Int64, "Evidence turns of the question (0: none; recall 1 then).", required=False),
        _c("embedder", pl.String, "Embedder name (a stand-in's name when one was used).", required=False),
        _c("max_height", pl.Int64, "Maximum rendering height (null = unbounded).", required=False),
    ),
    checks=(
        ("recall must lie in [0, 1]", lambda: (pl.col("recall") < 0) | (pl.col("recall") > 1)),
        ("k must be >= 1", lambda: pl.col("k") < 1),
    ),
    key=("dataset", "conversation_id", "question_id", "variant", "k", "embedder", "max_height"),
)

ADAPTIVE = Schema(
    kind="adaptive",
    version=1,
    description="Adaptive probing (probes.mode adaptive): one row per (backend, J, architecture) cell, and per "
                "(backend, J) one row for the headline contrast, as the stopping rule last saw them.",
    columns=(
        _c("backend", pl.String, "Back-end, as in the probes table."),
        _c("J", pl.Int64, "Chain length of the cell."),
        _c("architecture", pl.String, "Architecture, or 'A − B' for the contrast row."),
        _c("kind", pl.String, "tsr (a cell) or contrast (the paired difference A − B)."),
        _c("study", pl.String, "The architecture's study (main, ablation, alpha_sweep); main for the contrast."),
        _c("units_probed", pl.Int64, "Probe units (chain, recall session) scored."),
        _c("units_eligible", pl.Int64, "Probe units an exhaustive run scores."),
        _c("probes_probed", pl.Int64, "Probes in the scored units."),
        _c("probes_eligible", pl.Int64, "Probes an exhaustive run scores."),
        _c("estimate", pl.Float64, "TSR (or A − B) over the scored probes.", nullable=True),
        _c("low", pl.Float64, "Lower end of the anytime-valid interval for the exhaustive value."),
        _c("high", pl.Float64, "Upper end of that interval."),
        _c("reason", pl.String, "Why scoring stopped: width, decided (the contrast), exhausted, or open (the "
           "back-end ran out of rounds: a partial run)."),
    ),
    checks=(("units_probed must not exceed units_eligible", lambda: pl.col("units_probed") > pl.col("units_eligible")),),
    key=("backend", "J", "architecture", "kind"),
)

SCHEMAS: dict[str, Schema] = {s.kind: s for s in (PROBES, ENCODING, MEMSHOT_ANSWERS, MEMSHOT_RECALL, ADAPTIVE)}
KINDS: tuple[str, ...] = tuple(SCHEMAS)

#: Defaults filled into missing optional columns that are not nullable.
_DEFAULTS: dict[tuple[str, str], Any] = {("probes", "study"): "main", ("probes", "variant"): "default"}


def schema(kind: str) -> Schema:
    """The schema of ``kind`` (SchemaError listing the kinds otherwise)."""
    if kind not in SCHEMAS:
        raise SchemaError(f"unknown result kind {kind!r}; known kinds: {', '.join(KINDS)}")
    return SCHEMAS[kind]


def result_key(run_prefix: str, kind: str) -> str:
    """Store key of a kind's single-object table: ``<run_prefix>/results/<kind>.parquet``."""
    schema(kind)
    return f"{run_prefix.rstrip('/')}/results/{kind}.parquet"


def result_prefix(run_prefix: str, kind: str) -> str:
    """Store prefix of a kind's multi-part table: ``<run_prefix>/results/<kind>/``."""
    schema(kind)
    return f"{run_prefix.rstrip('/')}/results/{kind}"


def _first_bad(df: pl.DataFrame, mask: pl.Series) -> str:
    idx = int(mask.arg_true()[0])
    row = df.row(idx, named=True)
    shown = {k: row[k] for k in list(row)[:8]}
    return f"row {idx} ({int(mask.sum())} bad rows in all): {shown}"


def validate(df: Any, kind: str) -> pl.DataFrame:
    """Check ``df`` against ``kind``'s schema and return it normalised.

    Accepts a Polars DataFrame or an Arrow table. Columns come back in declared order with
    declared dtypes (lossless casts only: integers from integral floats, Int32 to Int64,
    ...); missing optional columns are added (nulls, or the documented default); extra
    columns are kept after them. A ``schema_version`` column, if present, must equal the
    schema's version. Raises :class:`SchemaError` naming the problem.
    """
    sc = schema(kind)
    if not isinstance(df, pl.DataFrame):
        try:
            df = pl.from_arrow(df)
        except Exception as err:  # noqa: BLE001 - report any conversion failure as a schema error
            raise SchemaError(f"{kind}: expected a Polars DataFrame or Arrow table, got {type(df).__name__}: {err}") from None
    missing = [c.name for c in sc.columns if c.required and c.name not in df.columns]
    if missing:
        raise SchemaError(f"{kind}: missing required column(s) {missing}; present: {df.columns}")
    if "schema_version" in df.columns:
        bad = df.filter(pl.col("schema_version") != sc.version)
        if bad.height:
            got = bad["schema_version"][0]
            raise SchemaError(f"{kind}: schema_version {got} found, this code reads version {sc.version}")
    cols: list[pl.Series] = []
    for c in sc.columns:
        if c.name not in df.columns:
            default = _DEFAULTS.get((kind, c.name))
            cols.append(pl.Series(c.name, [default] * df.height, dtype=c.dtype))
            continue
        col = df[c.name]
        if col.dtype != c.dtype:
            try:
                cast = col.cast(c.dtype, strict=True)
            except Exception:  # noqa: BLE001 - any failed cast is a schema error
                raise SchemaError(f"{kind}: column {c.name!r} has dtype {col.dtype}, expected {c.dtype} "
                                  f"(not castable losslessly)") from None
            if c.dtype == pl.Boolean and col.dtype.is_integer() and not col.is_in([0, 1]).fill_null(True).all():
                raise SchemaError(f"{kind}: column {c.name!r} must be boolean (or 0/1), got {col.dtype}: "
                                  + _first_bad(df, ~col.is_in([0, 1]).fill_null(True)))
            if col.dtype.is_float() and c.dtype.is_integer():
                # A cast that changes values (1.5 -> 1) is not lossless.
                diff = col.fill_null(0) != cast.cast(col.dtype).fill_null(0)
                if diff.any():
                    raise SchemaError(f"{kind}: column {c.name!r} holds non-integral values, expected "
                                      f"{c.dtype}: " + _first_bad(df, diff))
            col = cast
        cols.append(col.alias(c.name))
    declared = {c.name for c in sc.columns}
    cols += [df[n] for n in df.columns if n not in declared]
    out = pl.DataFrame(cols)
    for c in sc.columns:
        if not c.nullable and out[c.name].null_count():
            raise SchemaError(f"{kind}: column {c.name!r} must not be null: " + _first_bad(out, out[c.name].is_null()))
    for desc, bad_expr in sc.checks:
        mask = out.select(bad_expr().fill_null(False).alias("bad"))["bad"]
        if mask.any():
            raise SchemaError(f"{kind}: {desc}: " + _first_bad(out, mask))
    if sc.key and out.height:
        dup = out.select(list(sc.key)).is_duplicated()
        if dup.any():
            raise SchemaError(f"{kind}: duplicate rows for key {list(sc.key)}: " + _first_bad(out, dup))
    return out


def empty(kind: str) -> pl.DataFrame:
    """An empty, valid table of ``kind`` (every declared column, no rows)."""
    return pl.DataFrame(schema=schema(kind).polars_schema())


def write_results(store: Any, run_prefix: str, kind: str, df: Any) -> str:
    """Validate ``df`` and write it to ``result_key(run_prefix, kind)`` with ``schema_version``.

    Returns the key written. Nothing is written when validation fails.
    """
    out = validate(df, kind)
    if "schema_version" in out.columns:
        out = out.drop("schema_version")
    key = result_key(run_prefix, kind)
    store.write_table(key, out, schema_version=schema(kind).version)
    return key


def describe(kind: str | None = None) -> str:
    """Markdown documentation of one kind's (or every kind's) columns."""
    lines: list[str] = []
    for sc in ([schema(kind)] if kind else SCHEMAS.values()):
        lines += [f"### `{sc.kind}` (schema_version {sc.version})", "", sc.description, "",
                  "| column | dtype | required | description |", "|---|---|---|---|"]
        for c in sc.columns:
            lines.append(f"| `{c.name}` | {c.dtype} | {'yes' if c.required else 'no'}"
                         f"{' (nullable)' if c.nullable else ''} | {c.description} |")
        lines.append("")
    return "\n".join(lines)


def markdown() -> str:
    """The whole schema reference (``analysis/SCHEMAS.md`` is this text; a test keeps them equal)."""
    head = ["# vismem result tables", "",
            "Generated by `python -m vismem.analysis.schemas > analysis/SCHEMAS.md`; do not edit by hand.", "",
            "Each kind lives at `runs/<run_id>/results/<kind>.parquet` (or a folder "
            "`runs/<run_id>/results/<kind>/` of `*.parquet` parts). Validate before writing with "
            "`vismem.analysis.schemas.validate(df, kind)`, or write with `write_results(store, run_prefix, kind, df)`.", "", ""]
    return "\n".join(head) + describe()


if __name__ == "__main__":
    print(markdown(), end="")
