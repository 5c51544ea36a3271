"""Housekeeping through a SparkTable (issue 31): RESTORE and DROP FEATURE deletionVectors, the
purge done by Spark jobs. Expected rows: a model kept by the test, read back by delta-kernel-rs
(the oracle for DV tables) and, once the feature is dropped, deltalake."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

import delta_occ as docc

from helpers import kernel_rows

spark_mod = pytest.importorskip("delta_occ.spark", reason="pyspark is not installed")
SparkTable = spark_mod.SparkTable

SCHEMA = pa.schema([("id", pa.int64())])


def ids(table: pa.Table) -> list:
    return sorted(table["id"].to_pylist())


def test_restore_and_drop_deletion_vectors_on_spark(spark, tmp_path):
    path = tmp_path / "t"
    props = {"delta.enableDeletionVectors": "true", "delta.dropFeatureTruncateHistory.retentionDuration": "interval 0 seconds"}
    st = SparkTable.create(spark, path, SCHEMA, properties=props)
    st.append(spark.createDataFrame([(i,) for i in range(20)], "id long").repartition(2))  # v1
    st.delete("id % 5 = 0")  # v2: deletion vectors
    st.delete("id = 7")  # v3
    t = docc.Table(str(path))
    assert any(f["deletion_vector"] for f in t.snapshot().files().to_pylist())
    st.restore(version=2)  # v4: id 7 back
    model = [i for i in range(20) if i % 5 != 0]
    assert ids(kernel_rows(t)) == model
    r = st.drop_feature("deletionVectors")  # v5 purge (Spark job), v6 downgrade
    assert r.operation == "DROP FEATURE"
    t.refresh()
    snap = t.snapshot()
    assert "deletionVectors" not in (snap.protocol["writer_features"] or [])
    assert not any(f["deletion_vector"] for f in snap.files().to_pylist())
    # the purge (a Spark job's REORG commit) and everything before the downgrade are truncated
    log = os.listdir(os.path.join(path, "_delta_log"))
    assert not [n for n in log if n[:20].isdigit() and int(n[:20]) < r.version], log
    assert r.version == 6
    assert ids(kernel_rows(t)) == model
    import deltalake

    assert ids(deltalake.DeltaTable(str(path)).to_pyarrow_table()) == model


ZORDER_CASES = {
    # (schema of the Z-order columns, value of column c for row i, Z-order columns)
    "grid-no-ties": ([("x", pa.int64()), ("y", pa.int64())], {"x": lambda i: i % 40, "y": lambda i: i // 40}, ["x", "y"]),
    "ties-and-nulls": ([("x", pa.int64()), ("y", pa.string())],
                       {"x": lambda i: None if i % 11 == 0 else i % 7, "y": lambda i: None if i % 17 == 0 else f"s{i % 13}"}, ["x", "y"]),
    "three-columns": ([("x", pa.int64()), ("y", pa.string()), ("z", pa.float64())],
                      {"x": lambda i: i % 5, "y": lambda i: f"v{i % 9}", "z": lambda i: float(i % 4) - 1.5}, ["z", "x", "y"]),
    "one-column": ([("x", pa.int64())], {"x": lambda i: (i * 7919) % 1000}, ["x"]),
}


@pytest.mark.parametrize("case", list(ZORDER_CASES))
def test_spark_zorder_writes_the_files_the_embedded_engine_writes(spark, tmp_path, case):
    """Both engines order rows by the core's curve (Spark computes it on the executors,
    spark/_zorder.py) and cut files at the same row counts: the files must hold the same rows in
    the same order, ties kept in input order (file, then position)."""
    import random
    import shutil

    import pyarrow.parquet as pq

    fields, values, by = ZORDER_CASES[case]
    schema = pa.schema([("id", pa.int64())] + fields)
    rows = [{"id": i, **{name: fn(i) for name, fn in values.items()}} for i in range(1600)]
    random.Random(3).shuffle(rows)
    a = tmp_path / "a"
    t = docc.Table.create(str(a), schema)
    for k in range(4):
        t.append(pa.Table.from_pylist(rows[k * 400 : (k + 1) * 400], schema=schema))
    b = tmp_path / "b"
    shutil.copytree(a, b)
    size = sum(f["size"] for f in t.snapshot().files().to_pylist())
    target = -(-400 * size // 1600)
    t.optimize(target_file_size=target, zorder_by=by)
    SparkTable(spark, b).optimize(target_file_size=target, zorder_by=by)

    def files(root):
        snap = docc.Table(str(root)).snapshot()
        return sorted(tuple(pq.read_table(os.path.join(root, p)).column("id").to_pylist()) for p in snap.files().column("path").to_pylist())

    got_a, got_b = files(a), files(b)
    assert len(got_a) >= 3 and got_a == got_b
