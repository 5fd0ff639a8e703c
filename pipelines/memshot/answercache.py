"""The MemShot stage's rules for what of an earlier attempt is reused, and what counts as failed.

* an answer is reused only when final (``ok``/``malformed``: the model answered); a call that
  failed (``error:*``) is asked again by the next run, and its stage ends ``partial``;
* a judge verdict is reused only for the very same prediction and when not ``error:*``;
* a prediction is stored cut to :data:`vismem.core.failures.REPLY_CAP` characters (``answer_truncated``);
* the dataset file must exist before anything is rendered;
* each attempt's table is written with a done marker and read only when it matches it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vismem.pipelines.context import RunContext
    from vismem.pipelines.config import RunConfig


def check_dataset_file(config: "RunConfig") -> None:
    """The dataset file exists (a DataError naming it, before anything is rendered)."""
    from vismem.core.errors import DataError
    from vismem.pipelines.context import resolve_data_dir
    from vismem.pipelines.memshot.render import dataset_path

    from vismem.pipelines.datafetch import fetch_hint

    data_dir = resolve_data_dir(config)
    path = dataset_path(config.memshot, data_dir)
    if not path.is_file():
        raise DataError(f"{path}: {config.memshot.dataset} file not found (memshot.dataset_path, relative to "
                        f"data_dir {config.data_dir!r}){fetch_hint(path, data_dir)}")


def capped(answers: Any) -> Any:
    """Predictions cut to :data:`vismem.core.failures.REPLY_CAP` characters, ``answer_truncated`` saying so
    (a runaway reply of megabytes is stored, judged and scored as its first 64 KiB)."""
    import polars as pl

    from vismem.core.failures import REPLY_CAP

    long = pl.col("prediction").str.len_chars() > REPLY_CAP
    return answers.with_columns(long.fill_null(False).alias("answer_truncated"),
                                pl.col("prediction").str.slice(0, REPLY_CAP))


def verdict(summary: dict[str, Any]) -> None:
    """Mark the stage partial when answers or verdicts failed (they are retried by a re-run)."""
    ans = summary.get("answers")
    if not isinstance(ans, dict):
        return
    errors = {"answers": ans.get("answer_errors", 0), "judge verdicts": ans.get("judge_errors", 0)}
    bad = {k: v for k, v in errors.items() if v}
    if bad:
        summary["status"] = "partial"
        line = (", ".join(f"{v} of {ans['answers']} {k} failed" for k, v in bad.items())
                + " (model calls that failed after retries)")
        summary["failure"] = f"{summary['failure']}; {line}" if summary.get("failure") else line


def cached(ctx: "RunContext", key: str, keep: Any, healed: list[str] | None = None) -> Any:
    """Rows of an earlier attempt's table at ``key`` that pass ``keep`` (None when there is none).

    The table is a :class:`vismem.core.cache.UnitCache` unit: read only when it matches its done
    marker; a damaged one is discarded (named in the log, its line appended to ``healed``, which
    the stage counts) and every row is asked again.
    """
    from vismem.core.cache import UnitCache
    from vismem.core.errors import TooLarge

    units, unit = UnitCache(ctx.store, ""), key.removesuffix(".parquet")
    if not ctx.store.exists(key):
        return None
    try:  # a table written before tables had done markers is read as it is
        df = units.read_table(unit, ".parquet") if units.is_done(unit) else ctx.store.read_table(key)
    except TooLarge:
        raise  # as large as it was written: the bound must be raised, asking again would not help
    except Exception as err:  # noqa: BLE001 - a damaged table, whatever broke it: asked again
        ctx.logger.warning("damaged cache table %s (%s): discarded, asking again", key, type(err).__name__)
        if healed is not None:
            healed.append(f"damaged cache table {key} ({type(err).__name__})")
        units.discard(unit)
        ctx.store.delete(key)
        return None
    df = df.drop("schema_version") if "schema_version" in df.columns else df
    return df.filter(keep)


def save(ctx: "RunContext", key: str, df: Any, *, schema_version: int) -> None:
    """Write an attempt's table at ``key`` and its done marker (size and digest, read by :func:`cached`)."""
    from vismem.core.cache import UnitCache
    from vismem.core.store import parquet_bytes

    UnitCache(ctx.store, "").commit(key.removesuffix(".parquet"),
                                    {".parquet": parquet_bytes(df, schema_version=schema_version)}, {"rows": df.height})
