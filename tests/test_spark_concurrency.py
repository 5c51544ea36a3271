"""Cross-engine concurrency (issue 15, "What it must show" 3): a Spark transaction and an embedded
transaction staged on the same read version and committed in both orders. Expected outcomes are the
scenarios of concurrency.md §8 (numbers in the ids); the Spark side goes through the same core
checker, so it must get the same answers as two embedded writers."""

from __future__ import annotations

import pathlib

import pyarrow as pa
import pytest

import delta_occ as docc
from delta_occ import exceptions as exc

from conftest import BOTH_SESSIONS, with_connect
from helpers import kernel_rows

spark_mod = pytest.importorskip("delta_occ.spark", reason="pyspark is not installed")
SparkTable = spark_mod.SparkTable

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.int64()), ("x", pa.int64())])
DV = {"delta.enableDeletionVectors": "true"}


def make(path, props=None, parts=("p",)) -> docc.Table:
    t = docc.Table.create(path, SCHEMA, partition_by=list(parts), properties=props or {})
    t.append(pa.table({"id": list(range(20)), "p": [i % 2 for i in range(20)], "x": [i * 10 for i in range(20)]}, schema=SCHEMA))
    return t


def ids(path):
    """The table's ids, read by delta_occ and (the same, or the assertion fails) by delta-kernel-rs."""
    got = sorted(docc.Table(path).snapshot().to_pyarrow().column("id").to_pylist())
    assert sorted(kernel_rows(docc.Table(path)).column("id").to_pylist()) == got, "delta-kernel-rs reads other rows"
    return got


def rows(ids_, p):
    return pa.table({"id": ids_, "p": [p] * len(ids_), "x": [0] * len(ids_)}, schema=SCHEMA)


# Each case: (scenario, table props, partitioned, stage_spark(st, txn), stage_embedded(txn),
#             outcome for whichever commits second: None = success, or the exception class)
CASES = [
    ("s01-blind-appends", {}, True,
     lambda spark, txn: txn.append(spark.createDataFrame(rows([100], 0))),
     lambda txn: txn.append(rows([200], 0)),
     None),
    ("s04-disjoint-partitions", {}, True,
     lambda spark, txn: (txn.read("p = 0"), txn.append(spark.createDataFrame(rows([100], 0)))),
     lambda txn: (txn.scan("p = 1"), txn.append(rows([200], 1))),
     None),
    # s03/s07 without DVs: both rewrite the one file; the winner's rewritten file holds a row the
    # loser's predicate reads, and added files are checked first (§3): Append.
    ("s03-rewrites-of-one-file", {}, False,
     lambda spark, txn: txn.delete("id = 3"),
     lambda txn: txn.delete("id = 4"),
     exc.ConcurrentAppendException),
    ("s08-read-all-vs-delete", {}, True,
     lambda spark, txn: (txn.read(), txn.append(spark.createDataFrame(rows([100], 0)))),
     lambda txn: txn.delete("p = 1"),
     "depends"),
    ("s23-row-level-deletes", DV, False,
     lambda spark, txn: txn.delete("id = 3"),
     lambda txn: txn.delete("id = 4"),
     None),
    ("s24-same-row", DV, False,
     lambda spark, txn: txn.delete("id = 3"),
     lambda txn: txn.delete("id = 3"),
     exc.ConcurrentDeleteDeleteException),
    ("s25-update-vs-delete", DV, False,
     lambda spark, txn: txn.update("id = 5", {"x": "x + 1"}),
     lambda txn: txn.delete("id = 6"),
     None),
    ("s28-optimize-vs-delete", DV, True,
     lambda spark, txn: txn.optimize(),
     lambda txn: txn.delete("id IN (2, 5)"),
     None),
    ("s30-merge-disjoint-partitions", DV, True,
     lambda spark, txn: txn.merge(spark.createDataFrame(rows([0, 2], 0)), "t.id = s.id AND t.p = s.p", when_matched_update={"x": "s.x"}),
     lambda txn: txn.merge(rows([1, 3], 1), "t.id = s.id AND t.p = s.p", when_matched_update={"x": "s.x"}),
     None),
]


CROSS = [pytest.param(*c, first, id=f"{c[0]}-{'spark' if first else 'embedded'}-first") for c in CASES for first in (True, False)]
# The Connect tier (a subset, for CI time): a conflict in both orders, a read conflict, a rebase.
CROSS_CONNECT = {"s24-same-row-spark-first", "s24-same-row-embedded-first", "s08-read-all-vs-delete-embedded-first", "s23-row-level-deletes-embedded-first"}


@pytest.mark.parametrize("spark,name,props,partitioned,stage_spark,stage_emb,outcome,spark_first", with_connect(CROSS, CROSS_CONNECT), indirect=["spark"])
def test_cross_engine(spark, tmp_path, name, props, partitioned, stage_spark, stage_emb, outcome, spark_first):
    path = tmp_path / "t"
    t = make(path, props, ("p",) if partitioned else ())
    if name.startswith("s28"):  # two small files per partition, so that OPTIMIZE has bins
        t.append(pa.table({"id": list(range(20, 30)), "p": [i % 2 for i in range(10)], "x": [0] * 10}, schema=SCHEMA))
    st = SparkTable(spark, path)
    s_txn = st.begin()
    e_txn = docc.Table(path).begin()
    stage_spark(spark, s_txn)
    stage_emb(e_txn)
    first, second = (s_txn, e_txn) if spark_first else (e_txn, s_txn)
    first.commit()
    if outcome == "depends":  # s08: a whole-table reader fails; the other way round it succeeds
        outcome = exc.ConcurrentDeleteReadException if not spark_first else None
    if outcome is None:
        second.commit()
    else:
        with pytest.raises(outcome):
            second.commit()
        if second is s_txn:  # the failed Spark work deleted its output directories
            assert not [p for p in pathlib.Path(path).iterdir() if p.name.startswith("spark-")]
    # Nothing of a failed Spark attempt stays referenced, and every file referenced exists.
    ids(path)  # delta_occ and delta-kernel-rs read the same rows
    snap = docc.Table(path).snapshot()
    for abs_path, _, _ in snap.handle.data_files():
        assert pathlib.Path(abs_path).exists()


@pytest.mark.parametrize("spark", BOTH_SESSIONS, indirect=True)
def test_row_level_spark_and_embedded_delete_of_one_file(spark, tmp_path):
    """Scenario 23 across engines: different rows of one file, both commit, the DV is the union."""
    path = tmp_path / "t"
    make(path, DV, ())
    assert len(docc.Table(path).snapshot().files()) == 1
    s_txn = SparkTable(spark, path).begin()
    s_txn.delete("id IN (1, 2)")
    e = docc.Table(path).delete("id = 7")
    r = s_txn.commit()
    assert r.rebased_over == [e.version] and r.attempts == 2
    assert ids(path) == [i for i in range(20) if i not in (1, 2, 7)]
    files = docc.Table(path).snapshot().files().to_pylist()
    assert len(files) == 1 and files[0]["dv_cardinality"] == 3


@pytest.mark.parametrize("spark", BOTH_SESSIONS, indirect=True)
def test_conflicting_spark_work_removes_its_output(spark, tmp_path):
    path = tmp_path / "t"
    make(path, {}, ("p",))
    s_txn = SparkTable(spark, path).begin()
    s_txn.update("p = 0", {"x": "x + 1"})
    written = [p for p in pathlib.Path(path).iterdir() if p.name.startswith("spark-")]
    assert written, "the Spark job wrote its output"
    docc.Table(path).delete("id = 0")  # rewrites a file of p=0, which the update read: §3.1 Append
    with pytest.raises(exc.ConcurrentAppendException):
        s_txn.commit()
    assert not any(p.exists() for p in written)
    assert ids(path) == list(range(1, 20))


def test_spark_output_stays_when_the_commit_outcome_is_unknown(spark, tmp_path, monkeypatch):
    """A commit whose outcome could not be learned may have landed: the files the Spark job wrote
    must stay (unlike a conflict, above), also when the transaction is then aborted."""
    path = tmp_path / "t"
    make(path, {}, ("p",))
    s_txn = SparkTable(spark, path).begin()
    s_txn.update("p = 0", {"x": "x + 1"})
    written = [f for d in pathlib.Path(path).iterdir() if d.name.startswith("spark-") for f in d.rglob("*.parquet")]
    assert written, "the Spark job wrote its output"

    def unknown(*args, **kwargs):
        raise exc.CommitOutcomeUnknownError("the answer to the commit's put was lost", table=str(path), version=2)

    monkeypatch.setattr(s_txn.txn, "commit", unknown)
    with pytest.raises(exc.CommitOutcomeUnknownError):
        s_txn.commit()
    s_txn.abort()
    assert all(f.exists() for f in written)
