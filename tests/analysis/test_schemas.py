"""Result schemas: validation normalises good tables and names the problem in bad ones."""

from __future__ import annotations

import polars as pl
import pytest

from vismem.analysis import synthetic
from vismem.analysis.schemas import KINDS, SchemaError, describe, empty, result_key, validate, write_results
from vismem.core.errors import DataError


def test_every_kind_validates_its_synthetic_table_and_empty_table():
    tables = {"probes": synthetic.probes(chains=2, Js=(3,)), "encoding": synthetic.encoding(chains=2, J=3),
              "memshot_answers": synthetic.memshot_answers(questions=4), "memshot_recall": synthetic.memshot_recall(questions=4),
              "adaptive": synthetic.adaptive()}
    assert set(tables) == set(KINDS)
    for kind, df in tables.items():
        out = validate(df, kind)
        assert out.height == df.height
        assert validate(empty(kind), kind).height == 0


def test_missing_optional_columns_get_defaults_and_casts_are_lossless():
    df = synthetic.probes(chains=1, Js=(3,)).drop("study", "variant", "alpha")
    df = df.with_columns(pl.col("seed").cast(pl.Int32), pl.col("J").cast(pl.Float64))
    out = validate(df, "probes")
    assert out["study"].unique().to_list() == ["main"]
    assert out["variant"].unique().to_list() == ["default"]
    assert out["alpha"].null_count() == out.height
    assert out.schema["seed"] == pl.Int64 and out.schema["J"] == pl.Int64
    with pytest.raises(SchemaError, match="non-integral"):
        validate(df.with_columns(pl.col("J") + 0.5), "probes")


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.drop("correct"), "missing required column"),
    (lambda d: d.with_columns(pl.lit("x").alias("reach")), "reach"),
    (lambda d: d.with_columns(pl.col("reach") + 1), "reach must equal"),
    (lambda d: d.with_columns(pl.lit(None, pl.Boolean).alias("correct")), "must not be null"),
    (lambda d: d.with_columns(pl.lit("weird").alias("study")), "study must be one of"),
    (lambda d: pl.concat([d, d.head(1)]), "duplicate rows"),
    (lambda d: d.with_columns(pl.lit(2).alias("schema_version")), "schema_version 2"),
])
def test_bad_probe_tables_raise_a_clear_schema_error(mutate, message):
    df = synthetic.probes(chains=1, Js=(3,))
    with pytest.raises(SchemaError, match=message) as err:
        validate(mutate(df), "probes")
    assert isinstance(err.value, DataError) and err.value.exit_code == 4
    assert "probes" in str(err.value)


def test_unknown_kind_and_out_of_range_values():
    with pytest.raises(SchemaError, match="unknown result kind"):
        validate(pl.DataFrame({"a": [1]}), "nope")
    a = synthetic.memshot_answers(questions=2)
    with pytest.raises(SchemaError, match="f1 must lie"):
        validate(a.with_columns(pl.lit(1.5).alias("f1")), "memshot_answers")


def test_write_results_round_trips_with_schema_version(file_store):
    df = synthetic.encoding(chains=1, J=2)
    key = write_results(file_store, "runs/r1", "encoding", df)
    assert key == result_key("runs/r1", "encoding") == "runs/r1/results/encoding.parquet"
    back = file_store.read_table(key)
    assert back["schema_version"].unique().to_list() == [1]
    assert validate(back, "encoding").drop("schema_version").equals(validate(df, "encoding"))
    with pytest.raises(SchemaError):
        write_results(file_store, "runs/r1", "probes", df)
    assert not file_store.exists(result_key("runs/r1", "probes"))


def test_describe_documents_every_column():
    text = describe()
    for kind in KINDS:
        assert f"`{kind}`" in text
    assert "`bank_size`" in text and "`judge_label`" in text


def test_booleans_from_0_1_integers_only():
    df = synthetic.probes(chains=1, Js=(3,))
    assert validate(df.with_columns(pl.col("correct").cast(pl.Int8)), "probes")["correct"].equals(df["correct"])
    with pytest.raises(SchemaError, match="must be boolean"):
        validate(df.with_columns(pl.col("correct").cast(pl.Int8) * 2), "probes")


def test_schema_reference_file_is_up_to_date():
    from pathlib import Path

    from vismem.analysis.schemas import markdown

    path = Path(__file__).resolve().parents[2] / "analysis" / "SCHEMAS.md"
    assert path.read_text() == markdown(), "regenerate: python -m vismem.analysis.schemas > analysis/SCHEMAS.md"
