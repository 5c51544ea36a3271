"""Exactly-once streaming into a delta-occ table: a Structured Streaming job writing through
``SparkTable.foreach_batch_sink`` is killed mid-batch (before and after its commit) and restarted
from its checkpoint; every input row must be in the table exactly once.

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
    assert sorted(mid) == expected[: 4 * ROWS], "batches 0-3 committed once each before the second kill"
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
