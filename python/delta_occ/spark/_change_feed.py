"""The change data feed as a DataFrame (``SparkTable.read_change_feed``): the commits and files
``delta_occ.change_feed.plan`` chose, read by the executors (change-data files; or removed files
with the DVs they had, added files with theirs), so the driver handles files, never rows."""

from __future__ import annotations

from typing import List, Optional
from urllib.parse import unquote

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.types import StringType, StructField, StructType

from ..change_data import CHANGE_TYPE, COMMIT_TIMESTAMP, COMMIT_VERSION, DELETE, INSERT
from ..change_feed import CommitChanges, FeedPlan, cdc_partition_values
from ._columns import col, field, logical_schema, physical_schema
from ._scan import FILE, ROW, ScanPlan, read_path, read_plan
from ._session import F, Session

_PLACE = "__delta_occ_removed"


def read_feed(spark: Session, feed: FeedPlan) -> DataFrame:
    out_types = logical_schema(feed.schema_json)
    frames: List[DataFrame] = []
    for commit in feed.commits:
        for rows in _commit_rows(spark, commit):
            frames.append(rows.select(
                *[(col(f.name) if f.name in rows.columns else F.lit(None)).cast(field(out_types, f.name).dataType).alias(f.name) for f in feed.schema],
                col(CHANGE_TYPE),
                F.lit(commit.version).cast("long").alias(COMMIT_VERSION),
                F.timestamp_micros(F.lit(commit.timestamp_ms * 1000)).alias(COMMIT_TIMESTAMP),
            ))
    if not frames:
        empty = [F.lit(None).cast(field(out_types, f.name).dataType).alias(f.name) for f in feed.schema]
        return spark.range(0).select(*empty, F.lit(None).cast("string").alias(CHANGE_TYPE), F.lit(None).cast("long").alias(COMMIT_VERSION),
                                     F.lit(None).cast("timestamp").alias(COMMIT_TIMESTAMP))
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return out


def _commit_rows(spark: Session, commit: CommitChanges) -> List[DataFrame]:
    """The commit's changed rows with logical columns of its own version and ``CHANGE_TYPE``."""
    if commit.cdc:
        return [_cdc_rows(spark, commit)]
    out: List[DataFrame] = []
    if commit.removed:
        assert commit.before is not None
        place = {p: i for i, p in enumerate(commit.removed)}
        old_plan = ScanPlan(commit.before.snapshot.handle, commit.removed)
        old = read_plan(spark, old_plan, positions=True, extra=pa.table({_PLACE: pa.array(range(len(commit.removed)), pa.int64())}))
        if commit.readded:  # the same file with a larger DV: only the rows the new DV hides
            new_plan = ScanPlan(commit.layout.snapshot.handle, commit.readded)
            still = read_plan(spark, new_plan, [], positions=True, extra=pa.table({_PLACE: pa.array([place[p] for p in commit.readded], pa.int64())}))
            old = old.join(still.select(_PLACE, ROW), on=[_PLACE, ROW], how="left_anti")
        out.append(old.drop(FILE, ROW, _PLACE).withColumn(CHANGE_TYPE, F.lit(DELETE)))
    if commit.added:
        out.append(read_plan(spark, ScanPlan(commit.layout.snapshot.handle, commit.added)).withColumn(CHANGE_TYPE, F.lit(INSERT)))
    return out


def _cdc_rows(spark: Session, commit: CommitChanges) -> DataFrame:
    """The commit's change-data files: physical columns renamed to logical ones, partition values
    from their actions (typed by the core), ``_change_type`` as written."""
    snap = commit.layout.snapshot
    handle = snap.handle
    logical = logical_schema(handle.schema_json)
    physical = physical_schema(handle.schema_json, handle.column_mapping_mode)
    parts = set(commit.layout.partition_columns)
    data = [(lf, pf) for lf, pf in zip(logical.fields, physical.fields) if lf.name not in parts]
    values = cdc_partition_values(commit)
    schema = StructType([pf for _, pf in data] + [StructField(CHANGE_TYPE, StringType())])
    frames: Optional[DataFrame] = None
    for i, action in enumerate(commit.cdc):
        df = spark.read.schema(schema).parquet(read_path(handle.storage, unquote(action["path"])))
        cols = []
        for lf in logical.fields:
            if lf.name in parts:
                cols.append(F.lit(values.column(lf.name)[i].as_py()).cast(lf.dataType).alias(lf.name))
            else:
                pf = next(p for l_, p in data if l_.name == lf.name)
                c = col(pf.name)
                cols.append((c.cast(lf.dataType) if pf.dataType != lf.dataType else c).alias(lf.name))
        df = df.select(*cols, col(CHANGE_TYPE))
        frames = df if frames is None else frames.unionByName(df)
    assert frames is not None
    return frames


__all__ = ["read_feed"]
