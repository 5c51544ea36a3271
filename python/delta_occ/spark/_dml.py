"""Spark operations staged on a driver-side transaction. Executors read and write parquet; the
driver collects row positions as Arrow, stages DVs, removes and adds on the core's transaction,
and the core's conflict checker decides at commit. The row rules are the embedded engine's
(``delta_occ.engine``): the same read sets, the same DV-or-rewrite choice, the same metrics."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Tuple, Union

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from .. import _rows
from .. import engine as _engine
from ..exceptions import InvalidArgumentError, PredicateError
from ._columns import col, field, quote, selected, to_column
from ._scan import FILE, ROW, ScanPlan, predicate, read_plan, referenced
from ._write import GROUP, conform, write, write_groups

if TYPE_CHECKING:
    from . import SparkTransaction

_BIN_ORDER = "__delta_occ_order"


def _plan(ctx: "SparkTransaction", where: Optional[str]) -> Tuple[ScanPlan, Optional[Dict[str, Any]]]:
    """Record the read of ``where`` and plan the files it may touch."""
    _, tree = predicate(ctx.snap_handle, where)
    paths = ctx.txn.scan(where, ["path"]).column("path").to_pylist()
    ctx.check_untouched(paths)
    return ScanPlan(ctx.snap_handle, paths), tree


def _live_rows(plan: ScanPlan) -> List[int]:
    """Exact live rows per plan file (numRecords, or the footer when the stats lack it)."""
    out = []
    storage = plan.handle.storage
    for n, d, p in zip(plan.live_rows(), plan.table.column("dv_cardinality").to_pylist(), plan.table.column("abs_path").to_pylist()):
        out.append(n if n is not None else storage.footer_stats(p)[1] - d)
    return out


def _stage_hits(ctx: "SparkTransaction", plan: ScanPlan, hits: pa.Table) -> List[int]:
    """Stage the removal of the hit rows (``FILE``, ``ROW``): DV deletes where the table has DVs
    and some live rows stay, else file removes. Returns the plan numbers of files whose
    remaining rows must be written again (no DVs)."""
    if hits.num_rows == 0:
        return []
    counts = hits.group_by(FILE).aggregate([([], "count_all")])
    live = _live_rows(plan)
    dv_files, rewrite = [], []
    for i, n in zip(counts.column(FILE).to_pylist(), counts.column("count_all").to_pylist()):
        path = plan.paths[i]
        if ctx.lay.dv_enabled and n < live[i]:
            dv_files.append(i)
            continue
        ctx.txn.remove_file(path)
        if n < live[i]:
            rewrite.append(i)
        ctx.touched.add(path)
    if dv_files:
        rows = hits.filter(pc.is_in(hits.column(FILE), value_set=pa.array(dv_files, pa.int32())))
        ctx.txn.delete_rows_batch(plan.paths, rows.column(FILE), rows.column(ROW))
        ctx.touched.update(plan.paths[i] for i in dv_files)
    return rewrite


def _in_files(ids: List[int]) -> Column:
    return F.col(FILE).isin(*ids) if ids else F.lit(False)


def _where_column(tree: Optional[Dict[str, Any]], schema: StructType) -> Column:
    return selected(None if tree is None else to_column(tree, schema))


# -- append / overwrite / delete -----------------------------------------------------------------


def append(ctx: "SparkTransaction", df: DataFrame) -> None:
    rows = conform(df, ctx.lay)
    before = ctx.job.rows
    paths, _ = write(ctx.spark, ctx.lay, ctx.txn, ctx.job, rows)
    ctx.record("WRITE", {"mode": "Append"}, {"numOutputRows": ctx.job.rows - before, "numFiles": len(paths)})


def _remove_matching(ctx: "SparkTransaction", where: Optional[str]) -> int:
    """Remove the rows matching ``where`` (all when None); returns how many."""
    plan, tree = _plan(ctx, where)
    if not len(plan):
        return 0
    if tree is None:  # every row goes: no need to read any
        for p in plan.paths:
            ctx.txn.remove_file(p)
            ctx.touched.add(p)
        return sum(_live_rows(plan))
    cond = _where_column(tree, plan.logical)
    rows = read_plan(ctx.spark, plan, referenced(tree), positions=True)
    with ctx.timed("spark"):
        hits = rows.filter(cond).select(FILE, ROW).toArrow()
    with ctx.timed("driver"):
        rewrite = _stage_hits(ctx, plan, hits)
    if rewrite:
        keep = read_plan(ctx.spark, plan, positions=True).filter(_in_files(rewrite) & ~cond).drop(FILE, ROW)
        write(ctx.spark, ctx.lay, ctx.txn, ctx.job, keep, rewrite=True)
    return hits.num_rows


def delete(ctx: "SparkTransaction", where: Optional[str]) -> None:
    n = _remove_matching(ctx, where)
    ctx.record("DELETE", {"predicate": where if where is not None else "true"}, {"numDeletedRows": n})


def overwrite(ctx: "SparkTransaction", df: DataFrame, replace_where: Optional[str], dynamic_partitions: bool) -> None:
    lay = ctx.lay
    rows = conform(df, lay)
    if dynamic_partitions:
        if replace_where is not None:
            raise InvalidArgumentError("give replace_where or dynamic_partitions, not both")
        if not lay.partition_columns:
            raise InvalidArgumentError("dynamic partition overwrite needs a partitioned table")
        tuples = rows.select(*[col(c) for c in lay.partition_columns]).distinct().toArrow()
        replace_where = _engine._partitions_predicate(lay, tuples)
    elif replace_where is not None:
        _, tree = predicate(ctx.snap_handle, replace_where)
        bad = rows.filter(~_where_column(tree, ctx.logical)).count()
        if bad:
            raise InvalidArgumentError(f"{bad} row(s) of the new data do not satisfy replace_where {replace_where!r}")
    removed = _remove_matching(ctx, replace_where)
    before = ctx.job.rows
    write(ctx.spark, lay, ctx.txn, ctx.job, rows)
    params: Dict[str, Any] = {"mode": "Overwrite"}
    if replace_where is not None:
        params["predicate"] = replace_where
    ctx.record("WRITE", params, {"numOutputRows": ctx.job.rows - before, "numRemovedRows": removed})


# -- update ----------------------------------------------------------------------------------------


def _assignments(ctx: "SparkTransaction", set_: Mapping[str, str], what: str) -> Dict[str, str]:
    if not isinstance(set_, Mapping) or not set_:
        raise InvalidArgumentError(f"{what} must be a non-empty mapping of column name to SQL expression text")
    lower = {f.name.lower(): f.name for f in ctx.lay.schema}
    out = {}
    for c, text in set_.items():
        name = lower.get(str(c).lower())
        if name is None:
            raise InvalidArgumentError(f"cannot set unknown column {c!r} (columns: {ctx.lay.schema.names})")
        if not isinstance(text, str):
            raise InvalidArgumentError(f"the expression for {name!r} must be SQL text, got {type(text).__name__}")
        try:
            _rows.parse(text)  # the core's parser: the same errors as the embedded engine
        except PredicateError as e:
            raise _engine.assignment_error("INSERT value" if what == "when_not_matched_insert" else "SET expression", name, text, e) from e
        out[name] = text
    return out


def _project(df: DataFrame, ctx: "SparkTransaction", assign: Dict[str, str], base: Dict[str, Column]) -> DataFrame:
    """Rows of the table schema: assigned columns from their SQL, the rest from ``base``."""
    out = []
    for f in ctx.logical.fields:
        c = F.expr(assign[f.name]).cast(f.dataType) if f.name in assign else base[f.name]
        out.append(c.alias(f.name))
    try:
        return df.select(*out)
    except AnalysisException as e:
        raise PredicateError(f"cannot evaluate {', '.join(repr(a) for a in assign.values())}: {e}", reason="invalid expression", problem="invalid") from e


def update(ctx: "SparkTransaction", where: Optional[str], set_: Mapping[str, str]) -> None:
    assign = _assignments(ctx, set_, "set")
    plan, tree = _plan(ctx, where)
    n = 0
    if len(plan):
        cond = _where_column(tree, plan.logical)
        rows = read_plan(ctx.spark, plan, positions=True)
        names = [f.name for f in plan.logical.fields]
        changed = _project(rows.filter(cond), ctx, assign, {c: col(c) for c in names})
        hits = rows.filter(cond).select(FILE, ROW).toArrow()
        n = hits.num_rows
        rewrite = _stage_hits(ctx, plan, hits)
        out = changed
        if rewrite:
            out = out.unionByName(rows.filter(_in_files(rewrite) & ~cond).drop(FILE, ROW))
        if n:
            write(ctx.spark, ctx.lay, ctx.txn, ctx.job, out)
    params = {"predicate": where if where is not None else "true", "set": dict(set_)}
    ctx.record("UPDATE", params, {"numUpdatedRows": n})


# -- merge -----------------------------------------------------------------------------------------


def _arrow_schema(df: DataFrame) -> pa.Schema:
    return df.limit(0).toArrow().schema


def merge(
    ctx: "SparkTransaction",
    source: DataFrame,
    on: str,
    *,
    source_alias: str = "s",
    target_alias: str = "t",
    when_matched_update: Optional[Mapping[str, str]] = None,
    when_matched_delete: Union[bool, str] = False,
    when_not_matched_insert: Union[bool, Mapping[str, str]] = False,
) -> None:
    lay = ctx.lay
    if not isinstance(source, DataFrame):
        raise InvalidArgumentError(f"source must be a pyspark DataFrame, got {type(source).__name__}")
    _engine.check_merge_clauses(on, when_matched_update, when_matched_delete, when_not_matched_insert)
    src_schema = _arrow_schema(source)
    cols = _engine._MergeColumns(lay.schema, src_schema, target_alias, source_alias)
    keys, target_only, _ = _engine.split_merge_condition(on, cols)
    _engine.check_merge_keys(keys, cols)
    read_where = _engine.narrowed_predicate([_key_summary(ctx, source, t, s) for t, s in keys], target_only)
    plan, _ = _plan(ctx, read_where)
    names = [f.name for f in lay.schema]
    target = read_plan(ctx.spark, plan, positions=True)  # an empty plan gives an empty frame
    t, s = target.alias(target_alias), source.alias(source_alias)
    tq = lambda c: F.col(f"{quote(target_alias)}.{quote(c)}")  # noqa: E731
    try:
        joined = t.join(s, F.expr(on), "inner")
        if when_matched_delete is True:
            is_del: Column = F.lit(True)
        elif when_matched_delete:
            is_del = selected(F.expr(str(when_matched_delete)))
        else:
            is_del = F.lit(False)
        matched = joined.select(tq(FILE).alias(FILE), tq(ROW).alias(ROW), is_del.alias("del")).toArrow()
    except AnalysisException as e:
        raise PredicateError(f"MERGE condition cannot be evaluated: {e}", reason="invalid expression", problem="invalid") from e
    if matched.num_rows:
        counts = matched.group_by([FILE, ROW]).aggregate([([], "count_all")])
        if pc.max(counts.column("count_all")).as_py() > 1:
            raise InvalidArgumentError("MERGE: a target row matched more than one source row; make the source unique on the merge keys")
    del_mask = matched.column("del")
    deleted = pc.sum(del_mask).as_py() or 0
    updated = (matched.num_rows - deleted) if when_matched_update else 0
    touched = matched if when_matched_update else matched.filter(del_mask)
    rewrite = _stage_hits(ctx, plan, touched.select([FILE, ROW]))
    parts: List[DataFrame] = []
    if when_matched_update and updated:
        assign = _assignments(ctx, when_matched_update, "when_matched_update")
        parts.append(_project(joined.filter(~is_del), ctx, assign, {c: tq(c) for c in names}))
    if rewrite:
        gone = ctx.spark.createDataFrame(touched.select([FILE, ROW]))
        parts.append(target.filter(_in_files(rewrite)).join(gone, on=[FILE, ROW], how="left_anti").drop(FILE, ROW))
    inserted = 0
    if when_not_matched_insert:
        unmatched = s.join(t, F.expr(on), "left_anti")
        if when_not_matched_insert is True:
            ins = conform(unmatched.select(*[col(c) for c in source.columns if _engine._find(lay.schema, c)]), lay)
        else:
            assign = _assignments(ctx, when_not_matched_insert, "when_not_matched_insert")
            base = {f.name: F.lit(None).cast(f.dataType) for f in ctx.logical.fields}
            ins = _project(unmatched, ctx, assign, base)
        inserted = ins.count()
        if inserted:
            parts.append(ins)
    if parts:
        out = parts[0]
        for p in parts[1:]:
            out = out.unionByName(p)
        write(ctx.spark, lay, ctx.txn, ctx.job, out)
    params = {"predicate": on, "readPredicate": read_where or "true"}
    ctx.record("MERGE", params, {"numTargetRowsUpdated": updated, "numTargetRowsDeleted": deleted, "numTargetRowsInserted": inserted})


def _key_summary(ctx: "SparkTransaction", source: DataFrame, t_col: str, s_col: str) -> Tuple[Any, ...]:
    """The distinct source values of one key (cast to the target type), or their range when there
    are more than the engine lists, as Arrow (``engine.narrowed_predicate``'s summary)."""
    typ = field(ctx.logical, t_col).dataType
    keys = source.select(col(s_col).cast(typ).alias("k")).where(F.col("k").isNotNull())
    limit = _engine._MERGE_IN_LIST_LIMIT
    values = keys.distinct().limit(limit + 1).toArrow().column("k")
    if t_col in ctx.lay.partition_columns or len(values) <= limit:
        if t_col in ctx.lay.partition_columns and len(values) > limit:
            values = keys.distinct().toArrow().column("k")
        return t_col, values
    bounds = keys.agg(F.min("k").alias("lo"), F.max("k").alias("hi")).toArrow()  # Spark's max puts NaN on top
    return t_col, None, pa.concat_arrays([bounds.column("lo").combine_chunks(), bounds.column("hi").combine_chunks()])


# -- optimize --------------------------------------------------------------------------------------


def optimize(ctx: "SparkTransaction", target_file_size: Optional[int], where: Optional[str]) -> int:
    """The embedded engine's bins; each compacted by one Spark task into one file whose rows keep
    the inputs' order, so the provenance tag (inputs and their live rows, in order) is exact."""
    lay = ctx.lay
    target = _engine.target_size(lay, target_file_size)
    bins = _engine.compaction_bins(ctx.txn, where, target)
    ctx.check_untouched([f["path"] for b in bins for f in b])
    rows_out = 0
    if bins:
        members = [(b, k, f) for b, fs in enumerate(bins) for k, f in enumerate(fs)]
        plan = ScanPlan(ctx.snap_handle, [f["path"] for _, _, f in members])
        live = _live_rows(plan)
        extra = pa.table({GROUP: pa.array([b for b, _, _ in members], pa.int32()), _BIN_ORDER: pa.array([k for _, k, _ in members], pa.int32())})
        groups: Dict[int, Tuple[Dict[str, Optional[str]], Optional[Dict[str, str]]]] = {}
        for b, fs in enumerate(bins):
            first = next(i for i, (bb, _, _) in enumerate(members) if bb == b)
            provenance = _engine.provenance_tag([(f, live[first + k]) for k, f in enumerate(fs)])
            values = dict(fs[0]["partition_values"] or [])
            groups[b] = ({c: values.get(c) for c in lay.partition_columns}, {_engine.PROVENANCE_TAG: provenance})
            rows_out += sum(live[first + k] for k in range(len(fs)))
        rows = read_plan(ctx.spark, plan, positions=True, extra=extra)
        rows = rows.repartition(len(bins), F.col(GROUP)).sortWithinPartitions(GROUP, _BIN_ORDER, ROW).drop(FILE, ROW, _BIN_ORDER)
        before = len(ctx.job.written)
        write_groups(ctx.spark, lay, ctx.txn, ctx.job, rows, GROUP, groups, data_change=False)
        per_group: Dict[int, int] = {}
        for g in ctx.job.written[before:]:
            per_group[g] = per_group.get(g, 0) + 1
        if any(n != 1 for n in per_group.values()):
            raise InvalidArgumentError(f"OPTIMIZE: Spark split a bin into several files ({per_group}); provenance would be wrong")
        for _, _, f in members:
            ctx.txn.remove_file(f["path"], data_change=False)
            ctx.touched.add(f["path"])
    params = {"predicate": json.dumps([where] if where else []), "targetFileSize": str(target)}
    ctx.record("OPTIMIZE", params, {"numBins": len(bins), "numRemovedFiles": sum(len(b) for b in bins), "numOutputRows": rows_out})
    return len(bins)


__all__ = ["append", "overwrite", "delete", "update", "merge", "optimize"]
