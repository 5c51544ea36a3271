"""The cases of bench_spark_scale.py in one fresh process: ``python _spark_scale_case.py ROWS
TABLE:OP:PERCENT ...``. Before each case the kernel's peak-RSS mark is reset (``clear_refs``), so
each case's driver peak is its own. Prints one JSON line per case: wall seconds, the growth of the
Python driver's peak RSS over its RSS before the operation (MB), and the live rows after."""

from __future__ import annotations

import json
import sys
import time


def _status(key: str) -> float:
    """A /proc/self/status figure in MB (VmRSS: now; VmHWM: the peak since the last reset)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {key} in /proc/self/status")


def main() -> None:
    rows = int(sys.argv[1])
    from pyspark.sql import SparkSession

    import delta_occ as docc
    from delta_occ.spark import SparkTable

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("delta-occ-bench-scale")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.driver.memory", "4g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    for case in sys.argv[2:]:
        table, op, percent_text = case.rsplit(":", 2)
        percent = int(percent_text)
        st = SparkTable(spark, table)
        touched = f"g < {percent}"  # g = id * 37 % 100: PERCENT% of the rows, scattered over every file
        source = None
        if op == "merge":
            source = spark.range(rows).selectExpr("id", "CAST(id AS DOUBLE) * 2 AS x").where(f"(id * 37) % 100 < {percent}")
        if op == "change_feed":  # the feed of an UPDATE of PERCENT% of the rows (made before the measurement)
            st.table.set_properties({"delta.enableChangeDataFeed": "true"})
            st.update(touched, {"x": "x + 1"})
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset VmHWM to the current RSS
        rss0 = _status("VmRSS")
        t0 = time.perf_counter()
        if op == "delete":
            st.delete(touched)
        elif op == "update":
            st.update(touched, {"x": "x + 1"})
        elif op == "merge":
            st.merge(source, "t.id = s.id", when_matched_update={"x": "s.x"})
        elif op == "zorder":  # the whole table (PERCENT ignored)
            st.optimize(zorder_by=["g", "x"])
        elif op == "add_constraint":  # every row checked (PERCENT ignored)
            st.add_constraint("non_negative", "x >= 0")
        elif op == "change_feed":
            n = st.read_change_feed(st.version).count()
            assert n == 2 * (rows // 100) * percent, n  # pre- and post-image of each updated row
        else:
            raise SystemExit(f"unknown op {op}")
        wall = time.perf_counter() - t0
        peak = _status("VmHWM")
        live = docc.Table(table).snapshot().to_pyarrow(columns=["g"]).num_rows
        print(json.dumps({"op": op, "percent": percent, "wall_s": wall, "rss_growth_mb": peak - rss0, "live_rows": live}), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
