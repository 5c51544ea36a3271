"""One-call operations on Spark: exactly-once streaming and re-execution on conflict.

A Structured Streaming job writing through ``SparkTable.foreach_batch_sink`` is killed mid-batch
(before and after its commit) and restarted from its checkpoint; every input row must be in the
table exactly once. A Spark DELETE that loses a race re-runs (``rerun_on_conflict``).

Oracle: the input files written here (each row once), read back with deltalake; the app version
deltalake reports is the last batch id Spark ran (one input file per batch: 0 .. files-1)."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import deltalake
import pyarrow as pa
import pytest

from delta_occ import Table
from delta_occ.exceptions import InvalidArgumentError

pytestmark = pytest.mark.usefixtures("spark")  # skips, saying why, without pyspark or Java

JOB = pathlib.Path(__file__).with_name("spark_stream_job.py")
FILES, ROWS = 6, 5


def run_job(table: str, inp: pathlib.Path, ckpt: pathlib.Path, crash: "str | None" = None) -> int:
    cmd = [sys.executable, str(JOB), table, str(inp), str(ckpt)] + ([crash] if crash else [])
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    if done.returncode not in (0, 3, 4):
        raise AssertionError(f"stream job failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return done.returncode


def test_a_stream_killed_mid_batch_writes_every_row_once(tmp_path):
    inp = tmp_path / "in"
    inp.mkdir()
    expected = []
    for f in range(FILES):
        ids = [f * 100 + j for j in range(ROWS)]
        expected += ids
        (inp / f"part-{f:02d}.json").write_text("".join(json.dumps({"id": i, "src": f"f{f}"}) + "\n" for i in ids))
    table = str(tmp_path / "t")
    Table.create(table, pa.schema([("id", pa.int64()), ("src", pa.string())]))
    ckpt = tmp_path / "ckpt"
    # Killed after batch 1 wrote its files, then after batch 3 committed (Spark runs it again),
    # then a run that drains the input.
    assert run_job(table, inp, ckpt, "before_commit:1") == 3
    assert run_job(table, inp, ckpt, "after_commit:3") == 4
    mid = deltalake.DeltaTable(table).to_pyarrow_table().column("id").to_pylist()
    # Batches 0-3 committed once each (Spark picks the files, one per batch, in its own order).
    assert len(mid) == len(set(mid)) == 4 * ROWS
    assert len({i // 100 for i in mid}) == 4, "each batch's file whole"
    assert run_job(table, inp, ckpt) == 0
    dt = deltalake.DeltaTable(table)
    got = dt.to_pyarrow_table().column("id").to_pylist()
    assert sorted(got) == sorted(expected), "every row exactly once"
    assert dt.transaction_version("stream-test") == FILES - 1


def test_the_sink_needs_an_app_id(spark, tmp_path):
    from delta_occ.spark import SparkTable

    st = SparkTable.create(spark, str(tmp_path / "t"), pa.schema([("id", pa.int64())]))
    for bad in ("", None, 5):
        with pytest.raises(InvalidArgumentError):
            st.foreach_batch_sink(bad)  # type: ignore[arg-type]


def test_the_sink_skips_a_batch_it_already_wrote(spark, tmp_path):
    from delta_occ.spark import SparkTable

    st = SparkTable.create(spark, str(tmp_path / "t"), pa.schema([("id", pa.int64())]))
    sink = st.foreach_batch_sink("s")
    df = spark.createDataFrame([(1,), (2,)], "id long")
    sink(df, 0)
    sink(df, 0)  # Spark re-running batch 0 after a failure
    sink(spark.createDataFrame([(3,)], "id long"), 1)
    assert sorted(deltalake.DeltaTable(st.path).to_pyarrow_table().column("id").to_pylist()) == [1, 2, 3]


def test_to_df_reads_the_commits_of_the_sink_and_of_other_writers(spark, tmp_path):
    """Issue 43 item 5: ``to_df()`` without a version reads the newest version in storage, as a
    delta-spark DataFrame does; the pinned embedded ``Table`` keeps its version until refresh()."""
    from delta_occ.spark import SparkTable

    st = SparkTable.create(spark, str(tmp_path / "t"), pa.schema([("id", pa.int64())]))
    pinned = Table(st.path)
    sink = st.foreach_batch_sink("s")
    sink(spark.createDataFrame([(1,), (2,)], "id long"), 0)
    sink(spark.createDataFrame([(3,)], "id long"), 1)
    assert sorted(r.id for r in st.to_df().collect()) == [1, 2, 3]
    Table(st.path).append(pa.table({"id": pa.array([4], pa.int64())}))  # another writer
    assert sorted(r.id for r in st.to_df().collect()) == [1, 2, 3, 4]
    assert sorted(r.id for r in st.to_df(version=1).collect()) == [1, 2]
    assert pinned.snapshot().to_pyarrow().num_rows == 0  # the embedded handle stays at version 0
    pinned.refresh()
    assert pinned.snapshot().to_pyarrow().num_rows == 4


def test_a_spark_delete_that_lost_is_run_again(spark, tmp_path, monkeypatch):
    """rerun_on_conflict on Spark: a winner rewrites the file between the job's read and its
    commit; the DELETE runs again on the new snapshot. Expected rows: the serial model (the
    winner's delete of 7, then ours of id < 5), read back with deltalake."""
    from delta_occ.spark import SparkTable
    from delta_occ.transaction import Transaction

    st = SparkTable.create(spark, str(tmp_path / "t"), pa.schema([("id", pa.int64())]))
    st.append(spark.createDataFrame([(i,) for i in range(10)], "id long").coalesce(1))
    other = Table(st.path)
    real, calls = Transaction.commit, []

    def commit(self, *args, **kwargs):
        if not calls:
            calls.append(1)
            other.delete("id = 7")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Transaction, "commit", commit)
    r = st.delete("id < 5", rerun_on_conflict=1)
    assert (r.committed, r.executions, [x["winning_version"] for x in r.reruns]) == (True, 2, [2])
    assert sorted(deltalake.DeltaTable(st.path).to_pyarrow_table().column("id").to_pylist()) == [5, 6, 8, 9]
    # The first execution's output went with its transaction: every parquet file on disk is
    # live or was removed by a commit (no orphan of the execution that lost).
    live = set(pa.table(deltalake.DeltaTable(st.path).get_add_actions(flatten=True)).column("path").to_pylist())
    removed = set()
    for log in pathlib.Path(st.path, "_delta_log").glob("*.json"):
        removed |= {json.loads(line)["remove"]["path"] for line in log.read_text().splitlines() if '"remove"' in line}
    on_disk = {str(p.relative_to(st.path)) for p in pathlib.Path(st.path).rglob("*.parquet")}
    assert on_disk == live | removed
