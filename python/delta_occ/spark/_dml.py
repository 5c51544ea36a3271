"""Spark's side of the operations (``delta_occ.operations``), staged on a driver-side transaction.
Executors read and write parquet; the driver collects row positions as Arrow, stages DVs, removes
and adds on the core's transaction, and the core's conflict checker decides at commit. The
checks, the DV-or-rewrite choice, the read sets and the commitInfo are the operations' own, the
same as the embedded engine's."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Tuple

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql.pandas.types import to_arrow_schema

from .._schema import check_stored
from .._write import Layout
from ..exceptions import InvalidArgumentError
from ..identity import IdentityColumn
from ..operations import append as _append
from ..operations import delete as _delete
from ..operations import merge as _merge
from ..operations import optimize as _optimize
from ..operations import overwrite as _overwrite
from ..operations import update as _update
from ..operations.commit_info import OperationRecord
from ..operations.conform import evolve, find_column
from ..operations.merge import Matched, MergeColumns, MergePlan
from ..operations.optimize import PROVENANCE_TAG, BinFile, Compacted, provenance_tag
from ..operations.protocols import Staging, Written
from ..operations.row_tracking import ROW_COMMIT_VERSION, ROW_ID
from ._bits import FileHits, hits_per_file, stage, summarise
from ._columns import col, field, quote
from ._rowexpr import Compiled, Resolver, compile_where
from ._scan import FILE, ROW, ScanPlan, Selection, read_plan
from ._session import F, window
from ._write import GROUP, conform, missing_column, new_rows, write, write_changes, write_groups
from ._zorder import KEYS, integer_div, with_curve_keys

if TYPE_CHECKING:
    from . import SparkTransaction

_BIN_ORDER = "__delta_occ_order"
_BIN = "__delta_occ_bin"
_CURVE = "__delta_occ_curve"
_PER = "__delta_occ_rows_per_file"
_FIRST = "__delta_occ_first_group"
_PAIRS = "__delta_occ_pairs"
_ACT = "__delta_occ_clause"


class SparkEngine:
    """The operations' engine protocols on Spark: rows are DataFrames; conditions and SET values
    the core's compiled row expressions (``_rowexpr.Compiled``), built into Spark Columns, so
    Spark selects and computes what the embedded engine does."""

    def __init__(self, ctx: "SparkTransaction") -> None:
        self.ctx = ctx
        self.spark = ctx.spark
        self.txn: Staging = ctx.txn
        # A write's schema_mode may stage a new schema: ``conform`` then takes the new layout.
        self.lay: Layout = ctx.lay
        self.schema: pa.Schema = ctx.lay.schema
        self.partition_columns: List[str] = ctx.lay.partition_columns
        # MERGE's frames between matching and writing (see ``match``).
        self._target: Optional[DataFrame] = None
        self._joined: Optional[DataFrame] = None
        self._by_source: Optional[DataFrame] = None
        self._by_target: Optional[DataFrame] = None
        self._on: Optional[Column] = None
        self._plan: Optional[ScanPlan] = None
        self._target_alias = "t"
        self._hits: Dict[int, FileHits] = {}
        self._touched_rows: Optional[DataFrame] = None

    def record(self, record: OperationRecord) -> None:
        self.txn.record_operation(record)

    # -- append / overwrite ------------------------------------------------------------------

    @property
    def identity(self) -> Mapping[str, IdentityColumn]:
        return self.lay.identity

    @property
    def generated(self) -> Sequence[str]:
        return list(self.lay.generation.expressions)

    def conform(self, data: Any, schema_mode: Optional[str]) -> DataFrame:
        if schema_mode is not None and isinstance(data, DataFrame) and evolve(self.txn, to_arrow_schema(data.schema), schema_mode):
            self.ctx.relayout()
            self.lay, self.schema = self.ctx.lay, self.ctx.lay.schema
        return new_rows(self.txn, self.lay, conform(data, self.lay), data.columns)

    def write(self, rows: DataFrame) -> Written:
        """An append's rows. With the change data feed, after an operation of this transaction
        recorded changes, they are recorded as inserts too."""
        if self.lay.cdf and self.ctx.changes_recorded:
            rows = rows.localCheckpoint()
            written = self._write_rows(rows)
            self._changes(_append.recorded(rows))
            return written
        if self.lay.cdf:
            self.ctx.appended_unrecorded = True
        return self._write_rows(rows)

    def _write_rows(self, rows: DataFrame) -> Written:
        before = self.ctx.job.rows
        paths, _ = write(self.spark, self.lay, self.txn, self.ctx.job, rows)
        return Written(self.ctx.job.rows - before, len(paths))

    def partition_tuples(self, rows: DataFrame) -> pa.Table:
        return rows.select(*[col(c) for c in self.partition_columns]).distinct().toArrow()

    def count_outside(self, rows: DataFrame, where: str) -> int:
        cond = compile_where(where, self.schema)
        return int(rows.filter(~_holds(cond)).count())

    def replace(self, where: Optional[str], rows: DataFrame) -> Tuple[int, int]:
        removed = self.remove_matching(where)
        if self.lay.cdf:
            rows = rows.localCheckpoint()  # written twice (data, changes): the same rows both times
        written = self._write_rows(rows).rows
        if self.lay.cdf:
            self._changes(_append.recorded(rows))
        return removed, written

    def _may_record_changes(self) -> None:
        """Refuse, before anything is staged, an operation whose change-feed rows could not be
        recorded (a commit with change-data files is read from them alone)."""
        if self.lay.cdf and self.ctx.appended_unrecorded:
            raise InvalidArgumentError(
                f"{self.lay.root} has the change data feed on: this transaction appended rows before an operation that changes rows, "
                "and a commit with change-data files is read from them alone; commit the append first (or append after the change)"
            )

    def _changes(self, changes: List[Tuple[str, DataFrame]]) -> None:
        """Record an operation's changed rows in the change feed (``delta_occ.change_data``)."""
        self._may_record_changes()
        self.ctx.changes_recorded = True
        with self.ctx.timed("spark"):
            write_changes(self.spark, self.lay, self.txn, self.ctx.job, changes)

    # -- delete / update ---------------------------------------------------------------------

    def remove_matching(self, where: Optional[str]) -> int:
        # In order: the selection (``_scan``), the hits' bits and the DVs staged from them
        # (``_bits``), the removed files' other rows and the change feed written (``_write``).
        ctx = self.ctx
        plan, where_expr = self._scan_where(where)
        if not len(plan):
            return 0
        self._may_record_changes()
        if where_expr is None:  # every row goes: no need to read any (but the change feed's)
            self._remove_files(plan.paths)
            if self.lay.cdf:
                self._changes(_delete.recorded(read_plan(self.spark, plan)))
            return sum(plan.exact_live_rows())
        sel = Selection(self.spark, plan, where_expr.filter(), where_expr.condition(), where_expr.columns, self.lay.row_id_columns)
        with ctx.timed("spark"):
            hits = hits_per_file(sel.hit, self.lay.dv_enabled)
        with ctx.timed("driver"):
            rewrite = self._stage(plan.paths, sel.live, hits)
        if rewrite:
            write(self.spark, self.lay, self.txn, ctx.job, sel.kept(rewrite), rewrite=True)
        if self.lay.cdf:
            self._changes(_delete.recorded(sel.matching()))
        return sum(h.count for h in hits.values())

    def expression(self, text: str) -> Compiled:
        return Compiled(text, self.schema)  # the embedded engine's compile: the same errors

    def update_matching(self, where: Optional[str], assign: Dict[str, Compiled]) -> int:
        # The order of ``remove_matching``; the changed rows are written with the kept ones.
        plan, where_expr = self._scan_where(where)
        if not len(plan):
            return 0
        self._may_record_changes()
        cond = _holds(where_expr)
        sel = Selection(self.spark, plan, cond, cond, None, self.lay.row_id_columns)
        names = [f.name for f in plan.logical.fields]
        changed = self._project(sel.hit, assign, {c: col(c) for c in names}, col, ids=_ids_of(sel.rows, col))
        hits = hits_per_file(sel.hit, self.lay.dv_enabled)
        rewrite = self._stage(plan.paths, sel.live, hits)
        if hits:
            write(self.spark, self.lay, self.txn, self.ctx.job, changed.unionByName(sel.kept(rewrite)) if rewrite else changed)
        if self.lay.cdf and hits:
            self._changes(_update.recorded(sel.hit.drop(FILE, ROW), changed))
        return sum(h.count for h in hits.values())

    # -- merge -------------------------------------------------------------------------------

    def merge_source(self, source: Any) -> DataFrame:
        if not isinstance(source, DataFrame):
            raise InvalidArgumentError(f"source must be a pyspark DataFrame, got {type(source).__name__}")
        return source

    def source_schema(self, source: DataFrame) -> pa.Schema:
        return source.limit(0).toArrow().schema

    def prepare_source(self, source: DataFrame, columns: MergeColumns, keys: List[Tuple[str, str]], schema_mode: Optional[str]) -> DataFrame:
        if schema_mode is not None:
            raise InvalidArgumentError("MERGE on the Spark engine does not change the schema yet: add the columns first (add_columns), or append with schema_mode")
        return source  # keys are cast where they are summarised and compared (Spark's join)

    def _keys(self, source: DataFrame, target_column: str, source_column: str) -> DataFrame:
        typ = field(self.ctx.logical, target_column).dataType
        return source.select(col(source_column).cast(typ).alias("k")).where(F.col("k").isNotNull())

    def distinct_keys(self, source: DataFrame, target_column: str, source_column: str, limit: Optional[int]) -> pa.Array:
        keys = self._keys(source, target_column, source_column).distinct()
        return (keys if limit is None else keys.limit(limit)).toArrow().column("k").combine_chunks()

    def key_range(self, source: DataFrame, target_column: str, source_column: str) -> pa.Array:
        keys = self._keys(source, target_column, source_column)
        bounds = keys.agg(F.min("k").alias("lo"), F.max("k").alias("hi")).toArrow()  # Spark's max puts NaN on top
        return pa.concat_arrays([bounds.column("lo").combine_chunks(), bounds.column("hi").combine_chunks()])

    def merge_expression(self, columns: MergeColumns, text: str, *, target_readable: bool, source_readable: bool = True) -> Compiled:
        return Compiled(text, columns.joined_schema(), columns.scopes(target_readable, source_readable))

    def _joined_column(self, columns: MergeColumns) -> Resolver:
        """A column of the joined schema (``t.<name>``, ``s.<name>``: ``MergeColumns``) as the
        aliased column of the joined frames."""

        def resolve(name: str) -> Column:
            side, _, column = name.partition(".")
            return F.col(f"{quote(columns.ta if side == 't' else columns.sa)}.{quote(column)}")

        return resolve

    def _first_clause(self, plan: MergePlan[Compiled], group: str, resolve: Resolver, offset: int = 0) -> Column:
        """The number (``offset`` + place in the group) of the first clause of ``group`` whose
        condition holds, NULL where none does: a CASE WHEN, so a condition is evaluated only on
        the rows no earlier clause took (as the embedded engine does)."""
        out: Optional[Column] = None
        for k, clause in enumerate(plan.group(group)):
            cond = F.lit(True) if clause.when is None else clause.when.condition(resolve)
            out = F.when(cond, F.lit(offset + k)) if out is None else out.when(cond, F.lit(offset + k))
        return F.lit(None).cast("int") if out is None else out

    def match(self, source: DataFrame, plan: MergePlan[Compiled]) -> Matched:
        cols = plan.columns
        resolve = self._joined_column(cols)
        on = Compiled(plan.on, cols.joined_schema(), cols.scopes())  # compiled before any row is read
        self._target_alias = cols.ta
        self._plan = self._scan(plan.read_where)
        # (an empty plan gives an empty frame)
        self._target = target = read_plan(self.spark, self._plan, positions=True, ids=self.lay.row_id_columns)
        t, s = target.alias(cols.ta), source.alias(cols.sa)
        self._on = on.filter(resolve)
        matched_n = len(plan.group(_merge.MATCHED))
        # Each side's rows with their clause: matched pairs (clauses 0..), target rows without a
        # pair (NOT MATCHED BY SOURCE: clauses after the MATCHED ones), source rows without one.
        self._joined = joined = t.join(s, self._on, "inner").withColumn(_ACT, self._first_clause(plan, _merge.MATCHED, resolve))
        self._by_source = by_source = t.join(s, self._on, "left_anti").withColumn(
            _ACT, self._first_clause(plan, _merge.NOT_MATCHED_BY_SOURCE, resolve, matched_n))
        self._by_target = s.join(t, self._on, "left_anti").withColumn(_ACT, self._first_clause(plan, _merge.NOT_MATCHED, resolve))
        # Per target row: how many source rows would change it, and the clause that does.
        per_row = joined.select(self._tq(FILE).alias(FILE), self._tq(ROW).alias(ROW), F.col(_ACT)).groupBy(FILE, ROW).agg(
            F.count(F.col(_ACT)).alias(_PAIRS), F.min(F.col(_ACT)).alias(_ACT))
        if plan.group(_merge.NOT_MATCHED_BY_SOURCE):
            per_row = per_row.unionByName(by_source.select(
                self._tq(FILE).alias(FILE), self._tq(ROW).alias(ROW), F.when(F.col(_ACT).isNotNull(), 1).otherwise(0).alias(_PAIRS), F.col(_ACT)))
        numbered = plan.group(_merge.MATCHED) + plan.group(_merge.NOT_MATCHED_BY_SOURCE)

        def rows_of(action: str, by_source: bool) -> Column:
            ks = [k for k, c in enumerate(numbered) if c.action == action and (k >= matched_n) == by_source]
            return F.when(F.col(_ACT).isin(*ks), 1).otherwise(0) if ks else F.lit(0)

        totals = {
            "matched_updated": rows_of(_merge.UPDATE, False), "matched_deleted": rows_of(_merge.DELETE, False),
            "by_source_updated": rows_of(_merge.UPDATE, True), "by_source_deleted": rows_of(_merge.DELETE, True),
            "repeated": F.when(F.col(_PAIRS) > 1, 1).otherwise(0),
        }
        touched = F.col(_ACT).isNotNull()
        with self.ctx.timed("spark"):
            self._hits, sums = summarise(per_row, self.lay.dv_enabled, touched, totals, tag=F.col(_ACT))
        self._touched_rows = per_row.filter(touched).select(FILE, ROW)
        return Matched(sums["matched_updated"], sums["matched_deleted"], sums["repeated"], sums["by_source_updated"], sums["by_source_deleted"],
                       {self._plan.paths[i]: sorted(h.tags) for i, h in self._hits.items()})

    def _tq(self, name: str) -> Column:
        """A target column of the joined rows."""
        return F.col(f"{quote(self._target_alias)}.{quote(name)}")

    def write_merge(self, source: DataFrame, plan: MergePlan[Compiled]) -> int:
        if self._plan is None or self._target is None or self._joined is None or self._by_source is None or self._by_target is None \
                or self._touched_rows is None:
            raise InvalidArgumentError("MERGE: write_merge before match")
        cols = plan.columns
        target = self._target
        resolve = self._joined_column(cols)
        with self.ctx.timed("driver"):
            rewrite = self._stage(self._plan.paths, self._plan.exact_live_rows(), self._hits)
        parts: List[DataFrame] = []
        names = [f.name for f in self.schema]
        changes: List[Tuple[str, DataFrame]] = []
        ids = _ids_of(target, self._tq)
        numbered = [(self._joined, c) for c in plan.group(_merge.MATCHED)] + [(self._by_source, c) for c in plan.group(_merge.NOT_MATCHED_BY_SOURCE)]
        for k, (rows, clause) in enumerate(numbered):
            mine = rows.filter(F.col(_ACT) == k)
            written = None
            if clause.action == _merge.UPDATE:
                assert isinstance(clause.values, dict)
                written = self._project(mine, clause.values, {c: self._tq(c) for c in names}, resolve, ids=ids)
                parts.append(written)
            if self.lay.cdf:
                changes += _merge.recorded(clause, mine.select(*[self._tq(c).alias(c) for c in names]), written)
        if rewrite:  # the rewritten files' untouched rows, found on the executors
            parts.append(target.filter(_in_files(rewrite)).join(self._touched_rows, on=[FILE, ROW], how="left_anti").drop(FILE, ROW))
        inserted = 0
        for k, clause in enumerate(plan.group(_merge.NOT_MATCHED)):
            unmatched = self._by_target.filter(F.col(_ACT) == k)
            if clause.values is True:
                given = [c for c in source.columns if find_column(self.schema.names, c)]
                ins = new_rows(self.txn, self.lay, conform(unmatched.select(*[F.col(f"{quote(cols.sa)}.{quote(c)}").alias(c) for c in given]), self.lay), given)
            else:
                assert isinstance(clause.values, dict)
                base = {f.name: missing_column(self.lay, f) for f in self.ctx.logical.fields}
                ins = new_rows(self.txn, self.lay, self._project(unmatched, clause.values, base, resolve), list(clause.values))
            if self.lay.cdf:
                ins = ins.localCheckpoint()  # written twice (data, changes): the same rows both times
            n = ins.count()
            if n:
                inserted += n
                parts.append(ins)
                if self.lay.cdf:
                    changes += _merge.recorded(clause, None, ins)
        if parts:
            out = parts[0]
            for p in parts[1:]:
                out = out.unionByName(p, allowMissingColumns=True)  # inserted rows take fresh row ids (NULL)
            write(self.spark, self.lay, self.txn, self.ctx.job, out)
        if changes:
            self._changes(changes)
        return inserted

    # -- optimize ----------------------------------------------------------------------------

    def compact(self, bins: List[List[BinFile]]) -> Compacted:
        """The bins, each compacted by one Spark task into one file whose rows keep the inputs'
        order, so the provenance tag (inputs and their live rows, in order) is exact."""
        ctx, lay = self.ctx, self.lay
        ctx.check_untouched([f["path"] for b in bins for f in b])
        members = [(b, k, f) for b, fs in enumerate(bins) for k, f in enumerate(fs)]
        plan = ScanPlan(ctx.snap_handle, [f["path"] for _, _, f in members])
        live = plan.exact_live_rows()
        extra = pa.table({GROUP: pa.array([b for b, _, _ in members], pa.int32()), _BIN_ORDER: pa.array([k for _, k, _ in members], pa.int32())})
        groups: Dict[int, Tuple[Dict[str, Optional[str]], Optional[Dict[str, str]]]] = {}
        rows_out = 0
        for b, fs in enumerate(bins):
            first = next(i for i, (bb, _, _) in enumerate(members) if bb == b)
            provenance = provenance_tag([(f, live[first + k]) for k, f in enumerate(fs)])
            values = dict(fs[0]["partition_values"] or [])
            groups[b] = ({c: values.get(c) for c in lay.partition_columns}, {PROVENANCE_TAG: provenance})
            rows_out += sum(live[first + k] for k in range(len(fs)))
        rows = read_plan(self.spark, plan, positions=True, extra=extra, ids=lay.row_id_columns)
        rows = rows.repartition(len(bins), F.col(GROUP)).sortWithinPartitions(GROUP, _BIN_ORDER, ROW).drop(FILE, ROW, _BIN_ORDER)
        before = len(ctx.job.written)
        write_groups(self.spark, lay, self.txn, ctx.job, rows, GROUP, groups, data_change=False)
        per_bin = [0] * len(bins)
        for g in ctx.job.written[before:]:
            per_bin[g] += 1
        return Compacted(rows_out, per_bin)

    def zorder(self, bins: List[List[BinFile]], columns: Sequence[str], rows_per_file: Sequence[int]) -> Compacted:
        """Each bin's rows ordered on the core's curve by the executors (``_zorder``) and cut into
        files of ``rows_per_file`` rows; the driver only counts each bin's live rows (from the
        log, or the footers) to number the output files."""
        ctx, lay = self.ctx, self.lay
        ctx.check_untouched([f["path"] for b in bins for f in b])
        members = [(b, k, f) for b, fs in enumerate(bins) for k, f in enumerate(fs)]
        plan = ScanPlan(ctx.snap_handle, [f["path"] for _, _, f in members])
        live = plan.exact_live_rows()
        per_bin_rows = [0] * len(bins)
        for (b, _, _), n in zip(members, live):
            per_bin_rows[b] += n
        groups: Dict[int, Tuple[Dict[str, Optional[str]], Optional[Dict[str, str]]]] = {}
        per_bin = [0] * len(bins)
        first_group = [0] * len(bins)
        for b, fs in enumerate(bins):
            pieces = -(-per_bin_rows[b] // rows_per_file[b]) if per_bin_rows[b] else 0
            first_group[b] = len(groups)
            values = dict(fs[0]["partition_values"] or [])
            for g in range(len(groups), len(groups) + pieces):
                groups[g] = ({c: values.get(c) for c in lay.partition_columns}, None)
            per_bin[b] = pieces
        if not groups:
            return Compacted(0, per_bin)
        extra = pa.table({
            _BIN: pa.array([b for b, _, _ in members], pa.int32()),
            _BIN_ORDER: pa.array([k for _, k, _ in members], pa.int32()),
            _PER: pa.array([rows_per_file[b] for b, _, _ in members], pa.int64()),
            _FIRST: pa.array([first_group[b] for b, _, _ in members], pa.int64()),
        })
        rows = read_plan(self.spark, plan, positions=True, extra=extra, ids=lay.row_id_columns)
        keyed = with_curve_keys(rows, columns, _BIN)
        keys = [k for k in KEYS if k in keyed.columns]
        order = window().partitionBy(F.col(_BIN)).orderBy(*[F.col(k) for k in keys], F.col(_BIN_ORDER), F.col(ROW))
        placed = keyed.withColumn(_CURVE, (F.row_number().over(order) - 1).cast("long"))
        placed = placed.withColumn(GROUP, (integer_div(F.col(_CURVE), F.col(_PER)) + F.col(_FIRST)).cast("int"))
        out = placed.drop(_BIN, _BIN_ORDER, _PER, _FIRST, FILE, ROW, *keys).repartition(len(groups), F.col(GROUP)).sortWithinPartitions(GROUP, _CURVE).drop(_CURVE)
        write_groups(self.spark, lay, self.txn, ctx.job, out, GROUP, groups, data_change=False)
        return Compacted(sum(per_bin_rows), per_bin)

    def remove_files(self, paths: Sequence[str]) -> None:
        self._remove_files(paths, data_change=False)

    # -- finding rows ------------------------------------------------------------------------

    def _scan(self, where: Optional[str]) -> ScanPlan:
        """Record the read of ``where`` and plan the files it may touch."""
        ctx = self.ctx
        paths = self.txn.scan(where, ["path"]).column("path").to_pylist()
        ctx.check_untouched(paths)
        return ScanPlan(ctx.snap_handle, paths)

    def _scan_where(self, where: Optional[str]) -> Tuple[ScanPlan, Optional[Compiled]]:
        """A table condition compiled (first: a bad one records no read), then ``_scan``."""
        cond = compile_where(where, self.schema)
        return self._scan(where), cond

    def _remove_files(self, paths: Sequence[str], data_change: bool = True) -> None:
        for p in paths:
            self.txn.remove_file(p, data_change=data_change)
            self.ctx.touched.add(p)

    def _stage(self, paths: List[str], live: List[int], hits: Dict[int, FileHits]) -> List[int]:
        """``_bits.stage`` on this transaction; the paths it touched noted. Returns the plan
        numbers of files to write again."""
        rewrite, touched = stage(self.txn, paths, live, hits, self.lay.dv_enabled)
        self.ctx.touched.update(touched)
        return rewrite

    def _project(
        self, df: DataFrame, assign: Dict[str, Compiled], base: Dict[str, Column], resolve: Resolver, ids: Optional[Column] = None
    ) -> DataFrame:
        """Rows of the table schema: assigned columns from their compiled expressions (columns
        found by ``resolve``), the rest from ``base``. ``ids``: the updated rows' ids, which they
        keep (their commit version becomes the update's: ``row_tracking.updated``)."""
        out = []
        for name, e in assign.items():  # the embedded engine's type rule; Spark then casts
            check_stored(e.value_type(), self.schema.field(name), "SET expression")
        for f in self.ctx.logical.fields:
            c = assign[f.name].value(resolve).cast(f.dataType) if f.name in assign else base[f.name]
            out.append(c.alias(f.name))
        if ids is not None:
            out += [ids.alias(ROW_ID), F.lit(None).cast("long").alias(ROW_COMMIT_VERSION)]
        projected = df.select(*out)
        _ = projected.schema  # Spark Connect analyses lazily: make a bad SET fail here, as on classic
        return projected


def _ids_of(rows: DataFrame, column: Resolver) -> Optional[Column]:
    """The row-id column of rows read with ids (``read_plan``), found by ``column``; else None."""
    return column(ROW_ID) if ROW_ID in rows.columns else None


def _in_files(ids: List[int]) -> Column:
    return F.col(FILE).isin(*ids) if ids else F.lit(False)


def _holds(cond: Optional[Compiled]) -> Column:
    """TRUE where the condition holds (every row without one), FALSE elsewhere."""
    return F.lit(True) if cond is None else cond.condition()


# -- the operations, staged on a Spark transaction ----------------------------------------------


def append(ctx: "SparkTransaction", df: DataFrame, schema_mode: Optional[str] = None) -> None:
    _append.append(SparkEngine(ctx), df, schema_mode)


def overwrite(
    ctx: "SparkTransaction", df: DataFrame, replace_where: Optional[str], dynamic_partitions: bool, schema_mode: Optional[str] = None
) -> None:
    _overwrite.overwrite(SparkEngine(ctx), df, replace_where, dynamic_partitions=dynamic_partitions, schema_mode=schema_mode)


def delete(ctx: "SparkTransaction", where: Optional[str]) -> None:
    _delete.delete(SparkEngine(ctx), where)


def update(ctx: "SparkTransaction", where: Optional[str], set_: Mapping[str, str]) -> None:
    _update.update(SparkEngine(ctx), where, set_)


def merge(ctx: "SparkTransaction", source: DataFrame, on: str, **clauses: Any) -> None:
    """MERGE with the keywords of ``Table.merge`` (``schema_mode`` is the embedded engine's only)."""
    _merge.merge(SparkEngine(ctx), source, on, **clauses)


def optimize(
    ctx: "SparkTransaction", target_file_size: Optional[int], where: Optional[str], zorder_by: Optional[Sequence[str]] = None, full: bool = False
) -> int:
    if zorder_by is not None:
        return _optimize.zorder(SparkEngine(ctx), zorder_by, target_file_size, where)
    return _optimize.optimize(SparkEngine(ctx), target_file_size, where, full=full)


def purge(ctx: "SparkTransaction") -> int:
    return _optimize.purge(SparkEngine(ctx))


__all__ = ["SparkEngine", "append", "overwrite", "delete", "update", "merge", "optimize", "purge"]
