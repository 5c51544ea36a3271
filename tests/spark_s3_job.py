"""The Spark-on-S3 workload of tests/test_spark_object_store.py, run in its own process (pyspark
keeps one driver JVM per process, and this one needs the S3A JARs on its classpath): a standalone
cluster on loopback whose executors write ``s3a://``, every operation of ``SparkTable``, and
conflicts against an embedded writer, on a cluster where Python workers cannot start (an RDD
lambda must fail). Prints one JSON document (the observations) on stdout."""

from __future__ import annotations

import json
import sys
import time
import traceback


def main(args: dict) -> dict:
    import pyarrow as pa
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    import delta_occ as docc
    from delta_occ import exceptions as ex
    from delta_occ.spark import SparkTable

    from servers.jars import hadoop_s3a_conf, s3a_jars
    from servers.spark_cluster import SparkCluster

    out: dict = {"steps": []}
    uri, opts = args["uri"], args["options"]
    schema = StructType([StructField("id", LongType()), StructField("p", StringType()), StructField("x", LongType())])
    t0 = time.monotonic()
    with SparkCluster() as cluster:
        conf = hadoop_s3a_conf(args["endpoint"], args["access_key"], args["secret_key"], args["region"])
        conf["spark.sql.shuffle.partitions"] = "2"
        spark = cluster.session("delta-occ-s3", conf, jars=s3a_jars())
        out["cluster_seconds"] = round(time.monotonic() - t0, 1)

        def step(name: str, result) -> None:
            out["steps"].append({"step": name, "version": getattr(result, "version", None), "committed": getattr(result, "committed", None),
                                 "rows_resolved": getattr(result, "rows_resolved", None), "attempts": getattr(result, "attempts", None)})

        st = SparkTable.create(spark, uri, schema, partition_by=["p"], properties={"delta.enableDeletionVectors": "true"}, storage_options=opts)
        out["empty_rows"] = st.to_df().count()  # reading a table without files
        # Source rows from Arrow: createDataFrame of a Python list is a Python RDD (its tasks need
        # Python workers, impossible on this cluster).
        rows = lambda ids: spark.createDataFrame(pa.table({"id": list(ids), "p": ["a" if i % 2 else "b c" for i in ids], "x": [i * 10 for i in ids]}), schema)  # noqa: E731
        step("append", st.append(rows(range(20))))
        step("append", st.append(rows(range(20, 30))))
        step("delete", st.delete("id IN (3, 4)"))
        step("update", st.update("id = 5", {"x": "-1"}))
        step("merge", st.merge(rows([6, 100]), "t.id = s.id", when_matched_update={"x": "0"}, when_not_matched_insert=True))
        step("optimize", st.optimize())
        # An embedded writer (the same table, through the core alone) against Spark transactions.
        embedded = docc.Table(uri, storage_options=opts)
        txn = st.begin(isolation_level="Serializable")
        txn.delete("id = 7")
        embedded.delete("id = 7")  # wins: the same row
        try:
            txn.commit()
            out["same_row"] = "committed"
        except ex.DeltaConcurrentModificationException as e:
            out["same_row"] = type(e).__name__
        txn = st.begin()
        txn.delete("id = 9")
        embedded.delete("id = 11")  # wins: another row of the same file
        r = txn.commit()
        step("delete-rebased", r)
        out["rebased_over"] = r.rebased_over
        # The cluster's sentinel: an RDD lambda needs a Python worker, which must fail to start
        # (every step above ran without one).
        try:
            spark.sparkContext.parallelize([1, 2], 1).map(lambda v: v + 1).collect()
            out["python_worker"] = "ran"
        except Exception as e:  # noqa: BLE001 - the task failure, reported to the test
            out["python_worker"] = str(e)[:4000]
        got = st.to_df().collect()
        out["rows"] = sorted([row["id"], row["p"], row["x"]] for row in got)
        out["version"] = st.refresh()
        out["seconds"] = round(time.monotonic() - t0, 1)
        spark.stop()
    return out


if __name__ == "__main__":
    try:
        result = main(json.loads(sys.argv[1]))
    except BaseException:  # noqa: BLE001 - reported to the test
        result = {"error": traceback.format_exc()}
    print("RESULT " + json.dumps(result), flush=True)
