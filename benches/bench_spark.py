"""PySpark integration (issue 15, "What it must show" 5).

Workload: an unpartitioned DV table of ``DELTA_OCC_BENCH_SPARK_ROWS`` rows (10,000,000; smoke:
200,000) in ``DELTA_OCC_BENCH_SPARK_FILES`` files (20), columns ``id`` (long), ``g`` (``id * 37 %
100``, so one value of ``g`` is 1% of the rows, scattered over every file) and ``x`` (double),
written by the embedded engine.

* ``test_spark_delete_one_percent``: ``SparkTable.begin().delete("g = 7")`` and commit, on a fresh
  copy each round. Reported: the Spark job that finds the rows (``timings["spark"]``: read the
  needed column with positions, filter, ``toArrow``), the driver's part (``timings["driver"]``:
  positions -> DVs -> commit), the driver's share of the total (target <= 5%), and the growth of
  the Python driver's peak RSS during the operation. After the run the table must hold 99% of the
  rows (checked).
* ``test_spark_to_df_vs_plain_scan``: on a table with 1% deleted, ``count`` and ``sum(x)`` of
  ``SparkTable.to_df(columns=["x"])`` (DVs applied) against the same aggregate over a plain
  ``spark.read.parquet`` of the same files (no DVs applied), and the same with every column
  summed, alternating in one process; the ratios of medians are reported (target <= 2x).

Results go to stdout (``-s``), ``extra_info`` and ``$DELTA_OCC_BENCH_DIR/spark.json``. Release
builds only (``pip install .``). The Spark session is local[2] with the test suite's flags.
"""

from __future__ import annotations

import json
import os
import pathlib
import resource
import shutil
import statistics
import time
from typing import Any, Dict

import pyarrow as pa
import pytest

import delta_occ as docc

from _tables import BENCH_DIR, ROUNDS

spark_mod = pytest.importorskip("delta_occ.spark", reason="pyspark is not installed")
RESULTS: Dict[str, Any] = {}


def _size(name: str, default: int, smoke_default: int, smoke: bool) -> int:
    v = os.environ.get(f"DELTA_OCC_BENCH_SPARK_{name}")
    return int(v) if v else (smoke_default if smoke else default)


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    s = (
        SparkSession.builder.master("local[2]")
        .appName("delta-occ-bench")
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.memory", "4g")
        .getOrCreate()
    )
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()


def _make(path: pathlib.Path, rows: int, files: int) -> None:
    import pyarrow.compute as pc

    t = docc.Table.create(path, pa.schema([("id", pa.int64()), ("g", pa.int64()), ("x", pa.float64())]),
                          properties={"delta.enableDeletionVectors": "true"})
    per = rows // files
    for f in range(files):
        ids = pa.array(range(f * per, (f + 1) * per), pa.int64())
        g = pc.bit_wise_and(pc.multiply(ids, 37), 0x7FFFFFFF)
        g = pc.subtract(g, pc.multiply(pc.divide(g, 100), 100))
        t.append(pa.table({"id": ids, "g": g, "x": pc.multiply(pc.cast(ids, pa.float64()), 0.5)}))


@pytest.fixture(scope="module")
def base(benchmark_smoke):
    rows = _size("ROWS", 10_000_000, 200_000, benchmark_smoke)
    files = _size("FILES", 20, 4, benchmark_smoke)
    path = pathlib.Path(BENCH_DIR) / f"spark-dv-{rows}-{files}"
    if not (path / "_delta_log").exists():
        shutil.rmtree(path, ignore_errors=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        _make(path, rows, files)
    return path, rows


@pytest.fixture(scope="module")
def benchmark_smoke(request):
    return not request.config.getoption("benchmark_enable", False)


def _save() -> None:
    out = pathlib.Path(BENCH_DIR) / "spark.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(RESULTS, indent=2))


def test_spark_delete_one_percent(benchmark, spark, base, tmp_path):
    src, rows = base
    runs = []

    def setup():
        dst = tmp_path / f"t{len(runs)}"
        shutil.copytree(src, dst)
        return (dst,), {}

    def run(dst):
        st = spark_mod.SparkTable(spark, dst)
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t0 = time.perf_counter()
        txn = st.begin()
        txn.delete("g = 7")
        txn.commit()
        total = time.perf_counter() - t0
        rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        left = docc.Table(dst).snapshot().to_pyarrow(columns=["g"]).num_rows
        assert left == rows - rows // 100, left
        runs.append({"total": total, **txn.timings, "peak_rss_growth_mb": (rss1 - rss0) / 1024})

    benchmark.pedantic(run, setup=setup, rounds=ROUNDS, iterations=1, warmup_rounds=0)
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    med["driver_share"] = med["driver"] / med["total"]
    RESULTS["delete_1pct"] = {"rows": rows, "runs": runs, "median": med}
    benchmark.extra_info.update(med)
    print(f"\n[spark delete 1% of {rows:,}] total {med['total']:.2f}s, spark job {med['spark']:.2f}s, "
          f"driver {med['driver']:.3f}s ({100 * med['driver_share']:.1f}%), driver peak RSS +{med['peak_rss_growth_mb']:.0f} MB")
    _save()


def test_spark_to_df_vs_plain_scan(benchmark, spark, base, tmp_path):
    from pyspark.sql import functions as F

    src, rows = base
    dst = tmp_path / "t"
    shutil.copytree(src, dst)
    st = spark_mod.SparkTable(spark, dst)
    st.delete("g = 7")
    snap = docc.Table(dst).snapshot()
    paths = ["file://" + p for p, _, _ in snap.handle.data_files()]
    times: Dict[str, list] = {k: [] for k in ("to_df", "plain", "to_df_all", "plain_all")}

    def run():
        for name in times:
            every = name.endswith("_all")
            t0 = time.perf_counter()
            if name.startswith("to_df"):
                df = st.to_df() if every else st.to_df(columns=["x"])
            else:
                df = spark.read.parquet(*paths)
                df = df if every else df.select("x")
            aggs = [F.sum(c) for c in (["id", "g", "x"] if every else ["x"])]
            got = df.agg(F.count("*").alias("n"), *aggs).collect()[0]
            times[name].append(time.perf_counter() - t0)
            expected = rows - rows // 100 if name.startswith("to_df") else rows
            assert got["n"] == expected, (name, got["n"])

    benchmark.pedantic(run, rounds=ROUNDS, iterations=1, warmup_rounds=1 if ROUNDS > 1 else 0)
    med = {k: statistics.median(v) for k, v in times.items()}
    ratio = med["to_df"] / med["plain"]
    ratio_all = med["to_df_all"] / med["plain_all"]
    RESULTS["to_df_vs_plain"] = {"rows": rows, "times": times, "median": med, "ratio": ratio, "ratio_all_columns": ratio_all}
    benchmark.extra_info.update({"ratio": ratio, "ratio_all_columns": ratio_all, **med})
    print(f"\n[spark to_df 1% deleted vs plain scan, {rows:,} rows] one column: {med['to_df']:.2f}s vs {med['plain']:.2f}s = {ratio:.2f}x; "
          f"all columns: {med['to_df_all']:.2f}s vs {med['plain_all']:.2f}s = {ratio_all:.2f}x")
    _save()
