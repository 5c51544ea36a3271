"""Reading live files with Spark: the core decides which files (partition pruning, statistics)
and hands over a scan plan as Arrow; Spark reads exactly those files with the physical schema;
partition values come from the plan, never from directory names; deletion vectors are applied by
a broadcast anti-join against one dense bitmap per file (for DVs above 32 MB in all, by a shuffle
join on (file, 64-bit word) with the bit tested, or on (file, row position) where the positions
are fewer bytes), so no Python runs on executors."""

from __future__ import annotations

import functools
from typing import Any, List, Optional, Sequence, Tuple

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame

from .. import _arrow, _core
from ..exceptions import DeltaOccError, InvalidArgumentError
from ..operations import row_tracking
from ..operations.row_tracking import ROW_COMMIT_VERSION, ROW_ID
from ..reader import arange
from ..scan_plan import scan_plan
from ._columns import col, logical_schema, physical_schema, quote
from ._rowexpr import Compiled
from ._session import F, Session, session_conf

FILE = "__delta_occ_file"
ROW = "__delta_occ_row"
_KEY = "__delta_occ_key"
_SIZE = "__delta_occ_size"
_DV_KEY = "__delta_occ_dv_key"
_DV_WORDS = "__delta_occ_dv_words"
_BASE = "__delta_occ_base_row_id"
_DEFAULT_VERSION = "__delta_occ_default_row_commit_version"
#: DVs are broadcast as dense bitmaps up to this many 64-bit words in all (32 MB, files of up to
#: 256M rows); beyond, as (file, row) positions.
BITMAP_WORDS = 4_000_000
#: DV positions up to this many are broadcast to every task (16 bytes each plus the path key);
#: more go through a shuffle join (broadcasting 5M pairs took 10 s and 4.3 GB of JVM memory).
_BROADCAST_POSITIONS = 2_000_000
#: Above BITMAP_WORDS, a DV's words travel as rows (a file number, an index, the word: about 20
#: bytes of each 64 rows) where that is smaller than its positions (16 bytes a deleted row).
_WORD_BYTES, _POSITION_BYTES = 20, 16
_WORD = "__delta_occ_dv_word"
#: Spark lists explicitly given paths with a job above this many; a driver-side plan needs none.
_DISCOVERY_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"
_GLOB = str.maketrans({c: "\\" + c for c in "\\*?[]{}"})


def read_path(storage: Any, abs_path: str) -> str:
    """A data file as Spark must be given it: its Hadoop path (``file://``, ``s3a://``, ...),
    glob characters escaped."""
    return str(storage.hadoop_path(abs_path)).translate(_GLOB)


class ScanPlan:
    """Live files of one snapshot that a Spark read covers, in plan order (``FILE`` numbers)."""

    def __init__(self, snap_handle: Any, paths: Sequence[str]) -> None:
        self.handle = snap_handle
        self.paths = list(paths)
        self.partition_columns: List[str] = list(snap_handle.partition_columns)
        #: The plan's fixed columns, and its partition values apart (see ``delta_occ.scan_plan``).
        self.table, self.partition_values = scan_plan(snap_handle, self.paths, self.partition_columns)
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

    def live_rows(self) -> List[Optional[int]]:
        """Rows each file holds after its DV (None where the file has no numRecords)."""
        return [
            None if n is None else n - d
            for n, d in zip(self.table.column("num_records").to_pylist(), self.table.column("dv_cardinality").to_pylist())
        ]

    def exact_live_rows(self) -> List[int]:
        """Rows each file holds after its DV: numRecords, or the footer where the stats lack it."""
        storage = self.handle.storage
        return [
            n if n is not None else storage.footer_stats(p)[1] - d
            for n, d, p in zip(self.live_rows(), self.table.column("dv_cardinality").to_pylist(), self.table.column("abs_path").to_pylist())
        ]

    def dv_positions(self) -> pa.Table:
        return _arrow.table([self.handle.dv_positions(self.paths)])

    def row_id_defaults(self) -> pa.Table:
        """Per plan file, what its rows' ids and commit versions default to (``_BASE``: its
        baseRowId, ``_DEFAULT_VERSION``: its defaultRowCommitVersion; protocol-notes §6)."""
        return pa.table({_BASE: self.table.column("base_row_id"), _DEFAULT_VERSION: self.table.column("default_row_commit_version")})

    def dv_bitmaps(self, max_words: Optional[int] = None) -> Optional[pa.Table]:
        """The DVs as dense bitmaps (``file``, ``words``), or None above ``max_words`` words in
        all (default ``BITMAP_WORDS``)."""
        capsules = self.handle.dv_bitmaps(self.paths, BITMAP_WORDS if max_words is None else max_words)
        return None if capsules is None else _arrow.table([capsules])

    def dv_words(self) -> Optional[pa.Table]:
        """Above ``BITMAP_WORDS``: the DVs as one row per non-zero 64-bit word (``FILE``,
        ``_WORD``: its index, ``_DV_WORDS``: its bits), when that is smaller than one row per
        deleted position (dense DVs); None otherwise. Built in Arrow, no Python value per word."""
        deleted = int(pc.sum(self.table.column("dv_cardinality")).as_py() or 0)
        limit = deleted * _POSITION_BYTES // _WORD_BYTES
        bitmaps = self.dv_bitmaps(limit) if limit >= 1 else None
        if bitmaps is None:
            return None
        words = bitmaps.column("words").combine_chunks()
        flat = pc.list_flatten(words)
        parents = pc.list_parent_indices(words)
        offsets = words.offsets.slice(0, len(words))  # each list's first index into `flat`
        index = pc.subtract(arange(len(flat), pa.int64()), pc.take(offsets, parents).cast(pa.int64()))
        out = pa.table({FILE: pc.take(bitmaps.column("file"), parents), _WORD: index, _DV_WORDS: flat})
        return out.filter(pc.not_equal(out.column(_DV_WORDS), 0))


def read_plan(
    spark: Session,
    plan: ScanPlan,
    columns: Optional[Sequence[str]] = None,
    *,
    positions: bool = False,
    extra: Optional[pa.Table] = None,
    ids: Optional[Tuple[str, str]] = None,
) -> DataFrame:
    """The live rows of the plan's files with logical column names (all, or ``columns``), DVs
    applied. ``positions`` adds ``FILE`` (plan number) and ``ROW`` (physical position). ``extra``:
    more per-file columns (one row per plan file, in plan order) joined onto every row. ``ids``:
    the table's materialized row-id and row-commit-version columns (``Layout.row_id_columns``):
    every row also carries its id and commit version (``row_tracking.ROW_ID`` and
    ``ROW_COMMIT_VERSION``: the materialized value, else the file's default; the rule of
    ``row_tracking.ids_of``), for the copies to keep them."""
    names = [f.name for f in plan.logical.fields] if columns is None else list(columns)
    if not len(plan):
        return _empty(spark, plan, names, positions, extra, ids)
    by_logical = {f.name: p for f, p in zip(plan.logical.fields, plan.physical.fields)}
    read_fields = [by_logical[c] for c in names if c not in plan.partition_columns]
    if ids is not None:
        from pyspark.sql.types import LongType, StructField

        read_fields += [StructField(n, LongType()) for n in ids]
        defaults = plan.row_id_defaults()
        extra = defaults if extra is None else pa.Table.from_arrays(extra.columns + defaults.columns, names=extra.column_names + defaults.column_names)
    bitmaps = plan.dv_bitmaps() if plan.has_dvs else None
    # Huge DVs go through a (shuffle) join on (file, row), which needs every row's plan number.
    per_row_file = any(c in plan.partition_columns for c in names) or positions or extra is not None or (plan.has_dvs and bitmaps is None)
    if per_row_file:
        df = _with_plan_columns(spark, plan, _scan(spark, plan, range(len(plan)), read_fields, _KEY), extra)
        if bitmaps is not None:
            df = _drop_deleted(spark, df, FILE, bitmaps.column("file"), bitmaps.column("words"))
        elif plan.has_dvs and (words := plan.dv_words()) is not None:
            # One row per non-zero word of each DV: a shuffle join on (file, word), the bit tested.
            dv = spark.createDataFrame(words.rename_columns([_DV_KEY, _WORD, _DV_WORDS]))
            hit = (F.col(FILE) == F.col(_DV_KEY)) & (F.shiftright(F.col(ROW), 6) == F.col(_WORD))
            deleted_bit = F.expr(f"bit_get({_DV_WORDS}, CAST({ROW} & 63 AS INT)) = 1")
            df = df.join(dv, on=hit & deleted_bit, how="left_anti")
        elif plan.has_dvs:
            deleted = plan.dv_positions()
            dv = spark.createDataFrame(deleted.rename_columns([FILE, ROW]))
            if deleted.num_rows <= _BROADCAST_POSITIONS:
                dv = F.broadcast(dv)
            df = df.join(dv, on=[FILE, ROW], how="left_anti")
    else:
        df = _read_unjoined(spark, plan, read_fields, bitmaps)
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
        out += [col(n) for n in extra.column_names if n not in (_BASE, _DEFAULT_VERSION)]
    if ids is not None:
        out += _kept_ids(plan, ids)
    return df.select(*out)


class Selection:
    """The rows a condition selects from a plan's files, as lazy DataFrames (nothing runs here):
    the first step of a DELETE or UPDATE, before the hits are summed up (``_bits``) and the files'
    other rows written again (``_write``)."""

    def __init__(
        self, spark: Session, plan: ScanPlan, hit: Column, holds: Column, columns: Optional[Sequence[str]], ids: Optional[Tuple[str, str]]
    ) -> None:
        self.plan = plan
        #: Live rows per plan file, exact (what ``removal.choose`` weighs the hits against).
        self.live = plan.exact_live_rows()
        self._names = [f.name for f in plan.logical.fields]
        self._spark, self._ids, self._holds = spark, ids, holds
        #: The selected rows with ``FILE`` and ``ROW``: only the ``columns`` the condition reads
        #: when given (all columns otherwise).
        self.hit = (self.rows if columns is None else read_plan(spark, plan, columns, positions=True)).filter(hit)

    @functools.cached_property
    def rows(self) -> DataFrame:
        """Every live row, all columns, with ``FILE``, ``ROW`` (and the row ids, with ``ids``);
        planned only when asked for (a DELETE whose hits all become DVs needs only ``hit``, and
        planning a read loads the DVs on the driver)."""
        return read_plan(self._spark, self.plan, positions=True, ids=self._ids)

    def matching(self) -> DataFrame:
        """The selected rows, the table's columns only (for the change feed)."""
        return self.rows.filter(self._holds).select(*[col(n) for n in self._names])

    def kept(self, files: Sequence[int]) -> DataFrame:
        """The rows of these plan files the condition does not select, to be written again (row
        ids kept, positions dropped)."""
        in_files = F.col(FILE).isin(*files) if files else F.lit(False)
        return self.rows.filter(in_files & ~self._holds).drop(FILE, ROW)


def _kept_ids(plan: ScanPlan, ids: Tuple[str, str]) -> List[Column]:
    """Each row's id and commit version: materialized, else its file's baseRowId + position and
    defaultRowCommitVersion; a row with neither fails the job (a file from before row tracking)."""
    inputs = {"materialized_row_id": col(ids[0]), "base_row_id": F.col(_BASE), "row_position": F.col(ROW).cast("long"),
              "materialized_row_commit_version": col(ids[1]), "default_row_commit_version": F.col(_DEFAULT_VERSION)}
    rid, version = (Compiled(rule, row_tracking.rule_inputs()).value(inputs.__getitem__) for rule in (_core.ROW_ID_RULE, _core.ROW_COMMIT_VERSION_RULE))
    missing = F.raise_error(F.concat(F.lit(f"delta-occ: {plan.handle.root}: a row without a row id (no baseRowId, no materialized id) in plan file "), F.col(FILE).cast("string")))
    return [
        F.when(rid.isNull(), missing.cast("long")).otherwise(rid).alias(ROW_ID),
        F.when(version.isNull(), missing.cast("long")).otherwise(version).alias(ROW_COMMIT_VERSION),
    ]


def _scan(spark: Session, plan: ScanPlan, files: Sequence[int], read_fields: List[Any], key: Optional[str]) -> DataFrame:
    """The physical columns of plan files ``files``; with ``key``, also the row position (``ROW``)
    and the file's identity as column ``key``: ``_metadata.file_path`` for ``_KEY``, else
    ``_metadata.file_size``."""
    from pyspark.sql.types import StructType

    paths = plan.table.column("abs_path").take(pa.array(files, pa.int64())).to_pylist()
    with session_conf(spark, **{_DISCOVERY_THRESHOLD: str(max(len(paths), 32) + 1)}):
        reader = spark.read.schema(StructType(read_fields) if read_fields else StructType())
        storage = plan.handle.storage
        df = reader.parquet(*[read_path(storage, p) for p in paths])
    selected = [col(f.name) for f in read_fields]
    if key is not None:
        identity = "_metadata.file_path" if key == _KEY else "_metadata.file_size"
        selected += [F.col(identity).alias(key), F.col("_metadata.row_index").alias(ROW)]
    return df.select(*selected)


def _with_plan_columns(spark: Session, plan: ScanPlan, df: DataFrame, extra: Optional[pa.Table]) -> DataFrame:
    """Every row joined to its file's plan entry: ``FILE``, the partition values, ``extra``."""
    per_file = pa.Table.from_arrays(
        [plan.table.column("file"), plan.table.column("key")] + plan.partition_values.columns, names=[FILE, _KEY] + plan.partition_columns
    )
    if extra is not None:
        for name in extra.column_names:
            per_file = per_file.append_column(name, extra.column(name))
    df = df.join(F.broadcast(spark.createDataFrame(per_file)), on=_KEY, how="left")
    # An unmatched key would drop a file's partition values or resurrect its deleted rows.
    return df.withColumn(
        FILE,
        F.when(F.col(FILE).isNull(), F.raise_error(F.concat(F.lit("delta-occ: no scan-plan entry for file "), F.col(_KEY)))).otherwise(F.col(FILE)),
    )


def _read_unjoined(spark: Session, plan: ScanPlan, read_fields: List[Any], bitmaps: Optional[pa.Table]) -> DataFrame:
    """Data columns only: files without a DV are read plainly; files with one carry their row
    position and identity just long enough to drop their deleted rows."""
    if bitmaps is None:
        return _scan(spark, plan, range(len(plan)), read_fields, None)
    dv_files = bitmaps.column("file").to_pylist()
    with_dv = set(dv_files)
    clean = [i for i in range(len(plan)) if i not in with_dv]
    sizes = plan.table.column("size").take(bitmaps.column("file")).to_pylist()
    abs_paths = plan.table.column("abs_path").take(bitmaps.column("file")).to_pylist()
    # Spark's _metadata.file_size is the size on disk: a long key when it tells these files apart.
    storage = plan.handle.storage
    by_size = len(set(sizes)) == len(sizes) and all(_stored_size(storage, p) == n for p, n in zip(abs_paths, sizes))
    if by_size:
        df = _drop_deleted(spark, _scan(spark, plan, dv_files, read_fields, _SIZE), _SIZE, pa.array(sizes, pa.int64()), bitmaps.column("words"))
    else:
        keys = plan.table.column("key").take(bitmaps.column("file"))
        df = _drop_deleted(spark, _scan(spark, plan, dv_files, read_fields, _KEY), _KEY, keys, bitmaps.column("words"))
    df = df.select(*[col(f.name) for f in read_fields])
    if clean:
        df = df.unionByName(_scan(spark, plan, clean, read_fields, None))
    return df


def _stored_size(storage: Any, path: str) -> Optional[int]:
    try:
        return int(storage.size(path))
    except DeltaOccError:
        return None  # Spark's own read of the file reports it


def _drop_deleted(spark: Session, df: DataFrame, key: str, keys: Any, words: Any) -> DataFrame:
    """Rows of ``df`` whose bit is clear in the bitmap of their file (matched on column ``key``
    against ``keys``): a broadcast anti-join with one entry per file, so each row costs one
    lookup in a tiny table and one array access; rows past a bitmap's end are live."""
    bitmaps = spark.createDataFrame(pa.table({_DV_KEY: keys, _DV_WORDS: words}))
    deleted = F.expr(f"bit_get(try_element_at({_DV_WORDS}, try_cast(({ROW} >> 6) + 1 AS INT)), CAST({ROW} & 63 AS INT)) = 1")
    return df.join(F.broadcast(bitmaps), on=(F.col(key) == F.col(_DV_KEY)) & deleted, how="left_anti")


def _empty(spark: Session, plan: ScanPlan, names: List[str], positions: bool, extra: Optional[pa.Table], ids: Optional[Tuple[str, str]] = None) -> DataFrame:
    """No rows, the plan's columns. Built in the JVM from ``range(0)``: ``createDataFrame`` of a
    Python list (even an empty one) makes a Python RDD, whose tasks start Python workers."""
    from pyspark.sql.types import IntegerType, LongType, StructField

    fields = [f for n in names for f in plan.logical.fields if f.name == n]
    if positions:
        fields += [StructField(FILE, IntegerType(), False), StructField(ROW, LongType(), False)]
    if extra is not None:
        fields += [StructField(n, LongType(), True) for n in extra.column_names]
    if ids is not None:
        fields += [StructField(ROW_ID, LongType(), True), StructField(ROW_COMMIT_VERSION, LongType(), True)]
    return spark.range(0).select(*[F.lit(None).cast(f.dataType).alias(f.name) for f in fields])


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


def files_for(snap_handle: Any, where: Optional[str]) -> Optional[List[int]]:
    """Files that may match ``where`` (indices into ``files()``; None: every file), chosen by
    the core's file skipping."""
    if where is None:
        return None
    if not isinstance(where, str):
        raise InvalidArgumentError(f"where must be SQL text, got {type(where).__name__}")
    selected, _ = snap_handle.prune(where)
    return list(selected)


__all__ = ["ScanPlan", "Selection", "read_plan", "files_for", "FILE", "ROW", "quote"]
