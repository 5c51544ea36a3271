"""Identity columns on the Spark engine (issue 30, "Identity columns"): a write spread over several
Spark partitions takes the same consecutive values the embedded engine takes (the Delta
protocol's ``start + k * step`` beyond the mark, worked out by hand per case), on a classic and a
Connect session; MERGE inserts likewise; GENERATED ALWAYS refuses given values."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest

import delta_occ as docc
from delta_occ import exceptions as exc

spark_mod = pytest.importorskip("delta_occ.spark", reason="pyspark is not installed")
SparkTable = spark_mod.SparkTable


def schema(start: int, step: int) -> pa.Schema:
    meta = {"delta.identity.start": str(start), "delta.identity.step": str(step)}
    return pa.schema([pa.field("id", pa.int64(), metadata=meta), pa.field("v", pa.string()), pa.field("p", pa.string())])


def mark(path) -> int:
    log = os.path.join(str(path), "_delta_log")
    for name in sorted(os.listdir(log), reverse=True):
        if name.endswith(".json"):
            for line in open(os.path.join(log, name)):
                a = json.loads(line)
                if "metaData" in a:
                    return json.loads(a["metaData"]["schemaString"])["fields"][0]["metadata"]["delta.identity.highWaterMark"]
    raise AssertionError("no mark")


def frame(spark, names, partitions):
    rows = [(n, "a" if i % 2 else "b") for i, n in enumerate(names)]
    return spark.createDataFrame(rows, "v string, p string").repartition(partitions)


# Partitioned (the join path) on classic, flat on Connect: every piece on each kind of session
# once, without the four-way product (CI time).
@pytest.mark.parametrize(
    "spark,partitioned", [pytest.param("classic", True, id="classic-partitioned"), pytest.param("connect", False, id="connect-flat")], indirect=["spark"],
)
def test_spark_writes_take_consecutive_values_over_partitions(spark, tmp_path, partitioned):
    st = SparkTable.create(spark, tmp_path / "t", schema(100, -3), partition_by=["p"] if partitioned else [])
    names = [f"r{i}" for i in range(23)]
    st.append(frame(spark, names, 4))
    got = docc.Table(str(tmp_path / "t")).snapshot().to_pyarrow()
    # 23 rows: 100, 97, ..., 100 - 22*3 = 34, each exactly once (which row takes which is Spark's order)
    assert sorted(got["id"].to_pylist()) == sorted(100 - 3 * k for k in range(23))
    assert sorted(got["v"].to_pylist()) == sorted(names)
    assert mark(tmp_path / "t") == 34
    # the embedded engine continues from Spark's mark, and Spark from the embedded engine's
    docc.Table(str(tmp_path / "t")).append(pa.table({"v": ["e"], "p": ["a"]}))
    st.merge(spark.createDataFrame([("m1", "a"), ("m2", "b"), ("e", "a")], "v string, p string"), on="t.v = s.v", when_not_matched_insert=True)
    st.merge(spark.createDataFrame([("m3", "a")], "v string, p string"), on="t.v = s.v", when_not_matched_insert={"v": "s.v", "p": "s.p"})
    got = docc.Table(str(tmp_path / "t")).snapshot().to_pyarrow()
    by = dict(zip(got["v"].to_pylist(), got["id"].to_pylist()))
    assert by["e"] == 31 and sorted([by["m1"], by["m2"]]) == [25, 28] and by["m3"] == 22
    assert len(set(by.values())) == got.num_rows == 27
    assert mark(tmp_path / "t") == 22


def test_spark_refuses_given_values_for_generated_always(spark_classic, tmp_path):
    st = SparkTable.create(spark_classic, tmp_path / "t", schema(1, 1))
    with pytest.raises(exc.SchemaMismatchError, match="GENERATED ALWAYS"):
        st.append(spark_classic.createDataFrame([(5, "x", "a")], "id long, v string, p string"))
    with pytest.raises(exc.InvalidArgumentError, match="cannot be updated"):
        st.update(None, {"id": "id + 1"})
    assert st.table.refresh() == 0


def test_struct_type_schema_declares_identity_under_the_same_rule(spark, tmp_path):
    """A Spark StructType declares identity columns as Arrow metadata does (the core's one rule):
    a step of 0 or a declared high-water mark is refused before anything is created; a good
    declaration generates start + k * step (10, 15, 20 worked out by hand)."""
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    def st(meta):
        return StructType([StructField("id", LongType(), True, meta), StructField("v", StringType(), True)])

    for meta, why in [({"delta.identity.step": 0}, "must not be 0"), ({"delta.identity.highWaterMark": 3}, "cannot be declared")]:
        with pytest.raises(exc.InvalidArgumentError, match=why):
            SparkTable.create(spark, tmp_path / f"bad{len(why)}", st(meta))
        assert not (tmp_path / f"bad{len(why)}" / "_delta_log").exists() or not os.listdir(tmp_path / f"bad{len(why)}" / "_delta_log")
    t = SparkTable.create(spark, tmp_path / "good", st({"delta.identity.start": 10, "delta.identity.step": 5}))
    t.append(spark.createDataFrame([("a",), ("b",), ("c",)], "v string").coalesce(1))
    got = docc.Table(str(tmp_path / "good")).snapshot().to_pyarrow()
    assert sorted(got["id"].to_pylist()) == [10, 15, 20]
