"""Spark at cluster scale (issue 43, "What it must show" 3): on a standalone cluster where Python
workers cannot start, with the driver JVM at 512 MB, a 50% DELETE and a MERGE with one clause of
every kind on a DV table of ``DELTA_OCC_SPARK_CLUSTER_ROWS`` rows (default 200,000; 20,000,000 for
the figures in BENCHMARKS.md). Expected rows from the workload's arithmetic (see the job)."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("delta_occ.spark", reason="pyspark is not installed")
ROWS = int(os.environ.get("DELTA_OCC_SPARK_CLUSTER_ROWS", "200000"))
JOB = pathlib.Path(__file__).resolve().parent / "spark_cluster_scale_job.py"


def expected_rows(n: int) -> int:
    """Rows after the job, by its arithmetic: g = id * 37 % 100 over range(n)."""
    g = [(i * 37) % 100 for i in range(100)]  # g of consecutive ids cycles through 0..99
    per = n // 100
    assert n % 100 == 0
    live = [x for x in g if x >= 50]          # the DELETE removes g < 50
    # MERGE: matched (g in [50, 75)): none deleted (x >= 0), all updated. Not matched by source:
    # g = 80 deleted, others kept. New ids (n .. n + n/10): even ones inserted by the first
    # clause, odd ones by insert_all. Deleted ids with g in [25, 50) are unmatched source rows too:
    # inserted (even by the first clause, odd by the second).
    kept = sum(1 for x in live if x != 80) * per
    new = n // 10
    reinserted = sum(1 for x in g if 25 <= x < 50) * per
    return kept + new + reinserted


def test_expected_rows_arithmetic():
    assert expected_rows(100) == 49 + 10 + 25


def test_delete_and_every_clause_on_a_cluster_with_a_small_driver(tmp_path):
    proc = subprocess.run([sys.executable, str(JOB), str(tmp_path / "t"), str(ROWS), "clauses"], capture_output=True, text=True, timeout=3000,
                          env=dict(os.environ, PYTHONPATH=str(pathlib.Path(__file__).resolve().parent)))
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, f"the job printed no result (exit {proc.returncode}): {proc.stderr[-3000:]}"
    result = json.loads(lines[-1][len("RESULT "):])
    assert "error" not in result, result
    print(f"\n[cluster scale {ROWS:,} rows, driver 512m] {json.dumps(result)}")
    assert [s["step"] for s in result["steps"]] == ["append", "delete 50%", "merge (every clause kind)"]
    assert result["rows"] == expected_rows(ROWS)
