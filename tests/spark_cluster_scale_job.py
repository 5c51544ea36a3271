"""The cluster-scale workload of tests/test_spark_cluster_scale.py in its own process (pyspark
keeps one driver JVM per process): a standalone cluster on loopback (Python workers impossible),
the driver JVM at ``spark.driver.memory=512m``; a DV table of ROWS rows written by the executors,
a DELETE of half the rows, then a MERGE touching half the rows again. With ``--clauses`` the MERGE
has one clause of every kind (the builder); without, the keyword form (which the code before the
builder had too). Prints ``RESULT <json>``: each step's wall time, the Python driver's peak RSS
growth over the run, the driver JVM's peak heap, the rows after, or the error."""

from __future__ import annotations

import json
import resource
import sys
import time
import traceback


def main(root: str, rows: int, clauses: bool) -> dict:
    from delta_occ.spark import SparkTable

    from servers.spark_cluster import SparkCluster

    out: dict = {"steps": []}
    with SparkCluster() as cluster:
        spark = cluster.session("delta-occ-scale", {"spark.sql.shuffle.partitions": "8"}, driver_memory="512m", executor_memory="1g")
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        heap_pools = _heap_pools(spark)
        for pool in heap_pools:
            pool.resetPeakUsage()
        data = spark.range(rows).selectExpr("id", "(id * 37) % 100 AS g", "CAST(id AS DOUBLE) AS x").repartition(8)
        st = SparkTable.create(spark, root, data.schema, properties={"delta.enableDeletionVectors": "true"})

        def step(name, fn):
            t0 = time.monotonic()
            fn()
            out["steps"].append({"step": name, "seconds": round(time.monotonic() - t0, 2)})

        step("append", lambda: st.append(data))
        step("delete 50%", lambda: st.delete("g < 50"))
        # Source: every id with g in [25, 75) (half of them deleted above), and new ids.
        source = spark.range(rows + rows // 10).selectExpr("id", "CAST(id AS DOUBLE) * 2 AS x").where(f"id >= {rows} OR ((id * 37) % 100 BETWEEN 25 AND 74)")
        if clauses:
            step("merge (every clause kind)", lambda: st.merge(source, "t.id = s.id")
                 .when_matched_delete("s.x < 0")
                 .when_matched_update({"x": "s.x"}, "t.g < 60")
                 .when_matched_update_all()
                 .when_not_matched_insert({"id": "s.id", "g": "-1", "x": "s.x"}, "s.id % 2 = 0")
                 .when_not_matched_insert_all()
                 .when_not_matched_by_source_update({"x": "-t.x"}, "t.g > 90")
                 .when_not_matched_by_source_delete("t.g = 80")
                 .execute())
        else:
            step("merge (keyword form)", lambda: st.merge(source, "t.id = s.id", when_matched_update={"x": "s.x"}, when_not_matched_insert=True))
        out["rows"] = st.to_df().count()
        out["python_rss_growth_mb"] = round((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) / 1024, 1)
        # The driver JVM's heap: the sum of each heap pool's peak since the start (an upper bound
        # of the heap's peak occupancy), against its maximum (spark.driver.memory).
        out["driver_jvm_heap_peak_mb"] = round(sum(p.getPeakUsage().getUsed() for p in heap_pools) / 2**20, 1)
        out["driver_jvm_heap_max_mb"] = round(spark.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory() / 2**20, 1)
        spark.stop()
    return out


def _heap_pools(spark) -> list:
    """The driver JVM's heap memory pools (measurement only: a classic session's py4j gateway)."""
    factory = spark.sparkContext._jvm.java.lang.management.ManagementFactory
    return [p for p in factory.getMemoryPoolMXBeans() if str(p.getType()) == "Heap memory"]


if __name__ == "__main__":
    try:
        result = main(sys.argv[1], int(sys.argv[2]), sys.argv[3] == "clauses")
    except Exception as e:  # noqa: BLE001 - reported to the test, which fails on it
        result = {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()[-4000:]}
    print("RESULT " + json.dumps(result), flush=True)
