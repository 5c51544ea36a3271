"""Reading live files with Spark: the core decides which files (partition pruning, statistics)
and hands over a scan plan as Arrow; Spark reads exactly those files with the physical schema;
partition values come from the plan, never from directory names; deletion vectors are applied by
an anti-join on (file, row position), so no Python runs on executors."""

from __future__ import annotations

import contextlib
import functools
import json
import os
from typing import Any, Dict, Iterator, List, Optional, Sequence

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from .. import _arrow
from .._read import _referenced as referenced
from ..exceptions import InvalidArgumentError
from ._columns import col, logical_schema, physical_schema, quote

FILE = "__delta_occ_file"
ROW = "__delta_occ_row"
_KEY = "__delta_occ_key"
_PACKED = "__delta_occ_packed"
_DV_PACKED = "__delta_occ_dv_packed"
_DV_KEY = "__delta_occ_dv_key"
#: DV positions up to this many are broadcast to every task (16 bytes each plus the path key);
#: more go through a shuffle join (broadcasting 5M pairs took 10 s and 4.3 GB of JVM memory).
_BROADCAST_POSITIONS = 2_000_000
#: Spark lists explicitly given paths with a job above this many; a driver-side plan needs none.
_DISCOVERY_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"
_GLOB = str.maketrans({c: "\\" + c for c in "\\*?[]{}"})


@contextlib.contextmanager
def session_conf(spark: SparkSession, **settings: str) -> Iterator[None]:
    """Set SQL confs for the duration of a block and put the previous values back."""
    old: Dict[str, Optional[str]] = {}
    for k, v in settings.items():
        old[k] = spark.conf.get(k, None)
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, prev in old.items():
            if prev is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, prev)


def read_path(abs_path: str) -> str:
    """A local path as Spark must be given it: a file URI, glob characters escaped."""
    return "file://" + abs_path.translate(_GLOB)


class ScanPlan:
    """Live files of one snapshot that a Spark read covers, in plan order (``FILE`` numbers)."""

    def __init__(self, snap_handle: Any, paths: Sequence[str]) -> None:
        self.handle = snap_handle
        self.paths = list(paths)
        self.table: pa.Table = _arrow.table([snap_handle.scan_plan(self.paths)])
        self.partition_columns: List[str] = list(snap_handle.partition_columns)
        self.mode: str = snap_handle.column_mapping_mode
        self.schema_json: str = snap_handle.schema_json
        self.logical = logical_schema(self.schema_json)
        self.physical = physical_schema(self.schema_json, self.mode)

    def __len__(self) -> int:
        return len(self.paths)

    @functools.cached_property
    def has_dvs(self) -> bool:
        """Whether any planned file has a DV (asked several times per read; computed once)."""
        return bool(pc.any(pc.greater(self.table.column("dv_cardinality"), 0)).as_py())

    @property
    def packable(self) -> bool:
        """Whether (file size << 32) + row position is unique per row of a file: sizes below
        2 GiB and a known row count below 2^32 for every file with a DV."""
        sizes = self.table.column("size").to_pylist()
        rows = self.table.column("num_records").to_pylist()
        cards = self.table.column("dv_cardinality").to_pylist()
        paths = self.table.column("abs_path").to_pylist()
        for size, n, card, path in zip(sizes, rows, cards, paths):
            if size >= 2**31:
                return False
            # Spark's _metadata.file_size must be the logged size, or the key would miss.
            if card and (n is None or n >= 2**32 or os.path.getsize(path) != size):
                return False
        return True

    def live_rows(self) -> List[Optional[int]]:
        """Rows each file holds after its DV (None where the file has no numRecords)."""
        return [
            None if n is None else n - d
            for n, d in zip(self.table.column("num_records").to_pylist(), self.table.column("dv_cardinality").to_pylist())
        ]

    def dv_positions(self) -> pa.Table:
        return _arrow.table([self.handle.dv_positions(self.paths)])


def read_plan(
    spark: SparkSession,
    plan: ScanPlan,
    columns: Optional[Sequence[str]] = None,
    *,
    positions: bool = False,
    extra: Optional[pa.Table] = None,
) -> DataFrame:
    """The live rows of the plan's files with logical column names (all, or ``columns``), DVs
    applied. ``positions`` adds ``FILE`` (plan number) and ``ROW`` (physical position). ``extra``:
    more per-file columns (one row per plan file, in plan order) joined onto every row."""
    names = [f.name for f in plan.logical.fields] if columns is None else list(columns)
    data_cols = [c for c in names if c not in plan.partition_columns]
    part_cols = [c for c in names if c in plan.partition_columns]
    if not len(plan):
        return _empty(spark, plan, names, positions, extra)
    by_logical = {f.name: p for f, p in zip(plan.logical.fields, plan.physical.fields)}
    read_fields = [by_logical[c] for c in data_cols]
    from pyspark.sql.types import StructType

    with session_conf(spark, **{_DISCOVERY_THRESHOLD: str(max(len(plan), 32) + 1)}):
        reader = spark.read.schema(StructType(read_fields) if read_fields else StructType())
        df = reader.parquet(*[read_path(p) for p in plan.table.column("abs_path").to_pylist()])
    need_join = bool(part_cols) or positions or extra is not None
    packed = plan.has_dvs and not need_join and plan.packable
    selected = [col(f.name) for f in read_fields]
    if need_join or plan.has_dvs:
        selected += [F.col("_metadata.file_path").alias(_KEY), F.col("_metadata.row_index").alias(ROW)]
    if packed:
        selected.append((F.shiftleft(F.col("_metadata.file_size"), 32) + F.col("_metadata.row_index")).alias(_PACKED))
    df = df.select(*selected)
    if need_join or (plan.has_dvs and not packed):
        per_file = plan.table.select(["file", "key"] + part_cols).rename_columns([FILE, _KEY] + part_cols)
        if extra is not None:
            for name in extra.column_names:
                per_file = per_file.append_column(name, extra.column(name))
        files_df = spark.createDataFrame(per_file)
        df = df.join(F.broadcast(files_df), on=_KEY, how="left")
        # An unmatched key would drop a file's partition values or resurrect its deleted rows.
        df = df.withColumn(
            FILE,
            F.when(F.col(FILE).isNull(), F.raise_error(F.concat(F.lit("delta-occ: no scan-plan entry for file "), F.col(_KEY)))).otherwise(F.col(FILE)),
        )
    if plan.has_dvs:
        deleted = plan.dv_positions()
        if packed:
            # One long key per row: (file size << 32) + row position; two files of equal size
            # are told apart by the exact path, checked only on key matches (a residual
            # condition, not a join key, so the join stays on one long).
            sizes, keys = plan.table.column("size"), plan.table.column("key")
            files = deleted.column("file")
            dv = spark.createDataFrame(
                pa.table({_DV_PACKED: pc.add(pc.shift_left(sizes.take(files), 32), deleted.column("row")), _DV_KEY: keys.take(files)})
            )
            if deleted.num_rows <= _BROADCAST_POSITIONS:
                dv = F.broadcast(dv)
            cond = (F.col(_PACKED) == F.col(_DV_PACKED)) & F.col(_KEY).startswith(F.col(_DV_KEY)) & (F.length(F.col(_KEY)) <= F.length(F.col(_DV_KEY)))
            df = df.join(dv, on=cond, how="left_anti")
        else:
            dv = spark.createDataFrame(deleted.rename_columns([FILE, ROW]))
            if deleted.num_rows <= _BROADCAST_POSITIONS:
                dv = F.broadcast(dv)
            df = df.join(dv, on=[FILE, ROW], how="left_anti")
    out: List[Column] = []
    for c in names:
        if c in plan.partition_columns:
            out.append(col(c))
        else:
            p = by_logical[c]
            logical_type = next(f.dataType for f in plan.logical.fields if f.name == c)
            expr = col(p.name)
            if p.dataType != logical_type:  # nested physical names: cast renames them by position
                expr = expr.cast(logical_type)
            out.append(expr.alias(c))
    if positions:
        out += [F.col(FILE), F.col(ROW)]
    if extra is not None:
        out += [col(n) for n in extra.column_names]
    return df.select(*out)


def _empty(spark: SparkSession, plan: ScanPlan, names: List[str], positions: bool, extra: Optional[pa.Table]) -> DataFrame:
    from pyspark.sql.types import IntegerType, LongType, StructField, StructType

    fields = [f for n in names for f in plan.logical.fields if f.name == n]
    if positions:
        fields += [StructField(FILE, IntegerType(), False), StructField(ROW, LongType(), False)]
    if extra is not None:
        fields += [StructField(n, LongType(), True) for n in extra.column_names]
    return spark.createDataFrame([], StructType(fields))


def check_columns(plan_schema: Any, columns: Optional[Sequence[str]]) -> Optional[List[str]]:
    if columns is None:
        return None
    if isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
        raise InvalidArgumentError(f"columns must be a list of column names, got {columns!r}")
    columns = list(columns)
    names = [f.name for f in plan_schema.fields]
    if not columns:
        raise InvalidArgumentError("columns must name at least one column (or be None for all)")
    unknown = [c for c in columns if c not in names]
    if unknown:
        raise InvalidArgumentError(f"unknown column(s) {unknown}; the table has {names}")
    return columns


def predicate(snap_handle: Any, where: Optional[str]) -> "tuple[Optional[List[int]], Optional[Dict[str, Any]]]":
    """Files that may match ``where`` (indices into ``files()``) and its resolved tree."""
    if where is None:
        return None, None
    if not isinstance(where, str):
        raise InvalidArgumentError(f"where must be SQL text, got {type(where).__name__}")
    selected, tree = snap_handle.prune(where)
    return list(selected), json.loads(tree)


__all__ = ["ScanPlan", "read_plan", "session_conf", "FILE", "ROW", "quote", "referenced"]
