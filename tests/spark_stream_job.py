"""A Structured Streaming job for tests/test_spark_streaming.py: JSON files → foreachBatch(
SparkTable.foreach_batch_sink(app_id)), one file per micro-batch, until the input is drained.

    python spark_stream_job.py TABLE INPUT CHECKPOINT [CRASH]

CRASH kills this process at a fixed point of one batch, as a failing driver would die:
``before_commit:N`` once batch N's data files are written but before its commit,
``after_commit:N`` once batch N is committed but before Spark records the batch as done (the case
that makes Spark run it again with the same batch id). Exit status 0: the input was drained.
"""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

from delta_occ.spark import SparkTable
from delta_occ.transaction import Transaction


def main() -> None:
    table, input_dir, checkpoint = sys.argv[1:4]
    crash = sys.argv[4].split(":") if len(sys.argv) > 4 else None
    spark = (
        SparkSession.builder.master("local[1]")
        .appName("delta-occ-stream-test")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        # a short-lived driver (one of three per test): C1 and the serial GC start it fastest
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
        .getOrCreate()
    )
    sink = SparkTable(spark, table).foreach_batch_sink("stream-test")
    current = {"batch": -1}

    if crash and crash[0] == "before_commit":
        real = Transaction.commit

        def commit(self, *args, **kwargs):
            if current["batch"] == int(crash[1]):
                os._exit(3)  # the batch's parquet files exist; its commit was never written
            return real(self, *args, **kwargs)

        Transaction.commit = commit  # type: ignore[method-assign]

    def batch(df, batch_id):
        current["batch"] = batch_id
        sink(df, batch_id)
        if crash and crash[0] == "after_commit" and batch_id == int(crash[1]):
            os._exit(4)  # committed; Spark's commit log does not have this batch yet

    query = (
        spark.readStream.schema("id long, src string")
        .option("maxFilesPerTrigger", 1)
        .json(input_dir)
        .writeStream.foreachBatch(batch)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    spark.stop()


if __name__ == "__main__":
    main()
