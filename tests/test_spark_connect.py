"""Spark Connect as a supported mode (issue 29, "What to build" 1 and 5): the Connect server of the
test run (tests/servers/spark_connect.py) runs no Python worker — proved by a Python UDF that must
fail with the sentinel's message —, a Connect session and a classic one are both taken wherever a
session is, and Spark's output directories refuse to overwrite existing files on both. The engine
tests themselves run on Connect in test_spark_engine.py and test_spark_concurrency.py."""

from __future__ import annotations

import pathlib

import pyarrow as pa
import pytest

import delta_occ as docc
from delta_occ import exceptions as exc

from conftest import BOTH_SESSIONS

spark_mod = pytest.importorskip("delta_occ.spark", reason="pyspark is not installed")
SparkTable = spark_mod.SparkTable
_write = pytest.importorskip("delta_occ.spark._write")
_session = pytest.importorskip("delta_occ.spark._session")

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])


def test_python_workers_are_impossible_on_the_connect_server(spark_connect):
    """The sentinel is what a Python worker would run: a Python UDF fails its task with the
    sentinel's message, while the same query without the UDF runs (so it is the worker that fails)."""
    from pyspark.sql.connect.functions import col, udf
    from pyspark.sql.types import LongType

    from servers.spark_connect import SENTINEL_MESSAGE

    assert spark_connect.range(3).select((col("id") + 1).alias("y")).toArrow().column("y").to_pylist() == [1, 2, 3]
    plus_one = udf(lambda x: x + 1, LongType())
    with pytest.raises(Exception) as info:
        spark_connect.range(3).select(plus_one(col("id")).alias("y")).toArrow()
    assert SENTINEL_MESSAGE in str(info.value), str(info.value)[:2000]


def test_connect_operations_leave_the_process_in_classic_mode(spark_connect, spark_classic, tmp_path):
    """delta_occ builds Connect columns for a Connect session without switching pyspark's
    process-wide mode: classic sessions of the same process keep working (pyspark.sql.utils.is_remote)."""
    from pyspark.sql.utils import is_remote

    st = SparkTable.create(spark_connect, tmp_path / "t", SCHEMA)
    st.append(spark_connect.createDataFrame(pa.table({"id": [1, 2], "p": ["a", "b"]}, schema=SCHEMA)))
    assert sorted(st.to_df(where="p = 'b'").toArrow().column("id").to_pylist()) == [2]
    assert not is_remote()
    classic = SparkTable(spark_classic, tmp_path / "t")
    classic.delete("id = 1")
    assert sorted(classic.to_df().toArrow().column("id").to_pylist()) == [2]


def test_sessions_of_both_kinds_are_taken_and_others_refused(spark_connect, spark_classic, tmp_path):
    with pytest.raises(exc.InvalidArgumentError, match="SparkSession"):
        SparkTable("not a session", tmp_path / "t")
    with pytest.raises(exc.InvalidArgumentError, match="SparkSession"):
        SparkTable.create(object(), tmp_path / "t", SCHEMA)
    assert not (tmp_path / "t").exists(), "a refused session created the table"
    st = SparkTable.create(spark_connect, tmp_path / "t", SCHEMA)
    assert _session.is_connect(st.spark) and not _session.is_connect(SparkTable(spark_classic, tmp_path / "t").spark)
    # A DataFrame of the other kind of session cannot be joined with this one's: refused by name.
    classic_df = spark_classic.createDataFrame(pa.table({"id": [1], "p": ["a"]}, schema=SCHEMA))
    with pytest.raises(exc.InvalidArgumentError, match="classic session but the table's session is Spark Connect"):
        st.append(classic_df)
    connect_df = spark_connect.createDataFrame(pa.table({"id": [1], "p": ["a"]}, schema=SCHEMA))
    with pytest.raises(exc.InvalidArgumentError, match="Spark Connect session but the table's session is classic"):
        SparkTable(spark_classic, tmp_path / "t").merge(connect_df, "t.id = s.id", when_not_matched_insert=True)
    assert docc.Table(tmp_path / "t").version == 0


@pytest.mark.parametrize("spark", BOTH_SESSIONS, indirect=True)
def test_output_directories_never_overwrite_existing_files(spark, tmp_path, monkeypatch):
    """Spark writes each job into a new directory with the writer's "error" mode (Connect has no
    "errorifexists"; the two are one SaveMode): were the directory to exist, the job fails and the
    files there stay as they were (the hand fact: a mode that overwrote would replace them)."""
    st = SparkTable.create(spark, tmp_path / "t", SCHEMA)
    taken = tmp_path / "t" / "spark-taken"
    taken.mkdir()
    (taken / "part-0.parquet").write_bytes(b"not Spark's")
    monkeypatch.setattr(_write.Job, "new_dir", lambda self: "spark-taken")
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException, match="PATH_ALREADY_EXISTS"):
        st.append(spark.createDataFrame(pa.table({"id": [1], "p": ["a"]}, schema=SCHEMA)))
    assert [p.name for p in taken.iterdir()] == ["part-0.parquet"]
    assert (taken / "part-0.parquet").read_bytes() == b"not Spark's"
    assert docc.Table(tmp_path / "t").version == 0 and pathlib.Path(tmp_path / "t" / "_delta_log").is_dir()


@pytest.mark.parametrize("spark", BOTH_SESSIONS, indirect=True)
def test_an_update_set_spark_cannot_analyse_is_a_predicate_error_on_both(spark, tmp_path):
    """Connect analyses lazily (at the write); the SET is analysed before any job runs, so both
    sessions raise the same PredicateError and leave no commit and no output directory."""
    st = SparkTable.create(spark, tmp_path / "t", SCHEMA)
    st.append(spark.createDataFrame(pa.table({"id": [1, 2], "p": ["a", "b"]}, schema=SCHEMA)))
    with pytest.raises(exc.PredicateError, match="no_such_column"):
        st.update("id = 1", {"p": "no_such_column || 'x'"})
    assert docc.Table(tmp_path / "t").version == 1
    assert {p.name for p in (tmp_path / "t").iterdir() if p.name.startswith("spark-")} == _written(tmp_path / "t"), "the failed update left output"


def _written(path) -> set:
    """Output directories the table references."""
    return {f.split("/", 1)[0] for f in docc.Table(path).snapshot().files().column("path").to_pylist()}
