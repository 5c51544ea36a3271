"""Spark on S3 (issue 27, "What it must show" 3): a standalone Spark cluster on loopback (master
and worker started with pyspark's spark-class), executors writing ``s3a://`` with hadoop-aws and
the AWS SDK bundle from Maven Central, every ``SparkTable`` operation on a table with deletion
vectors, and conflicts against an embedded writer; the result read back from the bucket by
delta-kernel-rs (a byte copy: its Python wrapper takes no credentials) and by a fresh table.
Python workers cannot start on the cluster (tests/servers/spark_cluster.py's sentinel): the job
proves it with an RDD lambda that must fail, so none of the operations needed one.
Expected rows come from the operations the job runs (tests/spark_s3_job.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

import pytest

import delta_occ as docc

from conftest import BUCKET, REPO, _spark_missing
from helpers import kernel_rows


def expected_rows():
    rows = {i: ["a" if i % 2 else "b c", i * 10] for i in range(30)}
    for i in (3, 4, 7, 9, 11):
        del rows[i]
    rows[5][1] = -1
    rows[6][1] = 0
    rows[100] = ["b c", 1000]
    return sorted([i, p, x] for i, (p, x) in rows.items())


def test_spark_cluster_writes_s3a_and_commits(s3_server):
    reason = _spark_missing()
    if reason:
        pytest.skip(reason)
    s3 = s3_server
    uri = f"s3a://{BUCKET}/spark-{uuid.uuid4().hex[:10]}/t"
    args = {"uri": uri, "options": s3.storage_options(), "endpoint": s3.endpoint, "access_key": s3.access_key,
            "secret_key": s3.secret_key, "region": s3.region}
    proc = subprocess.run([sys.executable, str(REPO / "tests" / "spark_s3_job.py"), json.dumps(args)],
                          capture_output=True, text=True, timeout=1500)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, f"the job printed no result (exit {proc.returncode}): {proc.stderr[-3000:]}"
    result = json.loads(lines[-1][len("RESULT "):])
    assert "error" not in result, result.get("error")
    steps = [(s["step"], s["version"], s["committed"]) for s in result["steps"]]
    assert steps == [("append", 1, True), ("append", 2, True), ("delete", 3, True), ("update", 4, True), ("merge", 5, True),
                     ("optimize", 6, True), ("delete-rebased", 9, True)], steps
    assert result["same_row"] == "ConcurrentDeleteDeleteException"
    assert result["rebased_over"] == [8]
    assert result["rows"] == expected_rows()
    assert result["empty_rows"] == 0
    # Python workers were impossible on the cluster (every step above ran without one).
    from servers.spark_cluster import SENTINEL_MESSAGE

    assert SENTINEL_MESSAGE in result["python_worker"], result["python_worker"][:2000]
    # From the bucket: a fresh table of ours (s3:// = s3a://) and delta-kernel-rs.
    t = docc.Table(uri.replace("s3a://", "s3://"), storage_options=s3.storage_options())
    assert t.version == 9
    data = t.snapshot().to_pyarrow()
    assert sorted([i, p, x] for i, p, x in zip(*(data.column(c).to_pylist() for c in ("id", "p", "x")))) == expected_rows()
    assert t.history()[0]["deltaOcc"]["checkedWinners"][0]["version"] == 8
    kdata = kernel_rows(t)
    assert sorted(zip(*(kdata.column(c).to_pylist() for c in ("id", "p", "x")))) == [tuple(r) for r in expected_rows()]
