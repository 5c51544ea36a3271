"""The embedded engine (api.md "One-call operations"): DML on pyarrow, no JVM.

Each function stages one operation on an open :class:`~delta_occ.Transaction` and records
exactly what it read, so the conflict checker sees the true read set; ``Table.append`` and the
other one-call methods wrap them in a transaction and commit. Staging on a transaction is also how
tests force two operations into a chosen interleaving.

On tables with deletion vectors (``delta.enableDeletionVectors=true``), DELETE, UPDATE and MERGE
mark removed rows in DVs instead of rewriting files, which lets row-level concurrency resolve
concurrent changes to different rows of one file.
"""

from __future__ import annotations

import json
import weakref
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Tuple, Union

import pyarrow as pa
import pyarrow.compute as pc

from . import _arrow, _core, _rows
from ._args import int_arg
from ._schema import arrow_widens, assignable, type_name
from ._write import ROW, Layout, arange, as_table, chunks, concat, each, partition_strings, sql_literals
from .exceptions import InvalidArgumentError, PredicateError, SchemaMismatchError

#: Compaction provenance tag (see concurrency.md §4 rule 5).
PROVENANCE_TAG = "delta-occ.compactedFrom"
DEFAULT_TARGET_FILE_SIZE = 128 * 1024 * 1024
#: Above this many distinct source key values MERGE narrows its read by a key range, not a list.
_MERGE_IN_LIST_LIMIT = 1000


#: Each transaction's Layout, built on first use (weakly held: it goes with the transaction).
_LAYOUTS: "weakref.WeakKeyDictionary[Any, Layout]" = weakref.WeakKeyDictionary()


def _layout(txn: Any) -> Layout:
    lay = _LAYOUTS.get(txn)
    if lay is None:
        lay = _LAYOUTS[txn] = Layout(txn.snapshot, txn.schema_json)
    return lay


def _evolved(txn: Any, data: pa.Schema, schema_mode: Optional[str]) -> Layout:
    """The layout to write ``data`` with. With ``schema_mode="merge"`` the data's columns the
    table lacks are added (nullable, at the end) by a schema change staged in this transaction,
    as delta-spark's ``mergeSchema`` does; existing column types never change."""
    lay = _layout(txn)
    if schema_mode is None:
        return lay
    if schema_mode != "merge":
        raise InvalidArgumentError(f"schema_mode must be None or 'merge', got {schema_mode!r}")
    known = {f.name.lower() for f in lay.schema}
    new = [pa.field(f.name, f.type) for f in data if f.name.lower() not in known]
    if not new:
        return lay
    txn.set_schema(pa.schema(list(lay.schema) + new))
    _LAYOUTS.pop(txn, None)
    return _layout(txn)


def _stage(txn: Any, operation: str, parameters: Dict[str, Any], metrics: Dict[str, int]) -> None:
    txn.stage_operation(operation, parameters, metrics)


def _condition(lay: Layout, where: Optional[str]) -> Optional[_core.RowExpr]:
    """`where` compiled against the table's columns (None: every row)."""
    if where is None:
        return None
    if not isinstance(where, str):
        raise InvalidArgumentError(f"where must be SQL text, got {type(where).__name__}")
    return _rows.compile(where, lay.schema)


def _matches(rows: pa.Table, cond: Optional[_core.RowExpr]) -> pa.Array:
    return _rows.mask(rows, cond)


def _remove_rows(txn: Any, lay: Layout, path: str, rows: pa.Table, hit: pa.Array) -> pa.Table:
    """Stage the removal of the rows where `hit` is TRUE; return the rows that must be written
    again (file rewrite without DVs; empty with DVs or when every live row goes)."""
    if pc.sum(hit).as_py() == rows.num_rows:
        txn.remove_file(path)
        return lay.schema.empty_table()  # (`rows` may hold only the condition's columns)
    if lay.dv_enabled:
        txn.delete_rows(path, rows.filter(hit).column(ROW))
        return lay.schema.empty_table()
    txn.remove_file(path)
    return _kept(rows, hit)


def _kept(rows: pa.Table, hit: pa.Array) -> pa.Table:
    """The rows a rewrite writes again (where `hit` is not TRUE), without positions."""
    kept = rows.drop_columns([ROW]) if ROW in rows.column_names else rows  # (before the filter: one column less to copy)
    return kept.filter(pc.invert(hit))


# -- append / overwrite ----------------------------------------------------------------------------


def append(txn: Any, data: Any, schema_mode: Optional[str] = None) -> None:
    """Blind append: reads nothing (a schema change makes it read the whole table)."""
    data = as_table(data)
    lay = _evolved(txn, data.schema, schema_mode)
    rows = lay.conform(data)
    files = lay.write(txn, rows)
    _stage(txn, "WRITE", {"mode": "Append"}, {"numOutputRows": rows.num_rows, "numFiles": len(files)})


def overwrite(
    txn: Any, data: Any, replace_where: Optional[str] = None, *, dynamic_partitions: bool = False, schema_mode: Optional[str] = None
) -> None:
    """Replace the table's rows (all, those matching ``replace_where``, or with
    ``dynamic_partitions`` the partitions present in ``data``) by ``data``. New rows must satisfy
    ``replace_where``."""
    data = as_table(data)
    lay = _evolved(txn, data.schema, schema_mode)
    rows = lay.conform(data)
    if dynamic_partitions:
        if replace_where is not None:
            raise InvalidArgumentError("give replace_where or dynamic_partitions, not both")
        if not lay.partition_columns:
            raise InvalidArgumentError("dynamic partition overwrite needs a partitioned table")
        replace_where = _partitions_predicate(lay, rows)
    cond = _condition(lay, replace_where)
    if cond is not None and rows.num_rows:
        ok = _rows.mask(rows, cond)
        bad = rows.num_rows - pc.sum(ok).as_py()
        if bad:
            raise InvalidArgumentError(f"{bad} row(s) of the new data do not satisfy replace_where {replace_where!r}")
    removed = 0
    keep: List[pa.Table] = []
    for path, old, hit, n in _matched(txn, lay, replace_where, cond, _condition_columns(cond) if lay.dv_enabled else None):
        removed += n
        keep.append(_remove_rows(txn, lay, path, old, hit))
    lay.write(txn, concat(keep + [rows], lay.schema))
    params: Dict[str, Any] = {"mode": "Overwrite"}
    if replace_where is not None:
        params["predicate"] = replace_where
    _stage(txn, "WRITE", params, {"numOutputRows": rows.num_rows, "numRemovedRows": removed})


def _partitions_predicate(lay: Layout, rows: pa.Table) -> str:
    if rows.num_rows == 0:
        return "FALSE"
    groups = rows.select(lay.partition_columns).group_by(lay.partition_columns, use_threads=False).aggregate([])
    literals = {c: sql_literals(groups.column(c)) for c in lay.partition_columns}
    terms = []
    for i in range(groups.num_rows):
        parts = []
        for c in lay.partition_columns:
            lit = literals[c][i]
            parts.append(f"`{c}` IS NULL" if lit == "NULL" else f"`{c}` = {lit}")
        terms.append("(" + " AND ".join(parts) + ")")
    return " OR ".join(terms)


# -- delete / update -------------------------------------------------------------------------------


def delete(txn: Any, where: Optional[str] = None) -> None:
    lay = _layout(txn)
    cond = _condition(lay, where)
    deleted = 0
    if lay.dv_enabled:
        for path, rows, hit, n in _matched(txn, lay, where, cond, _condition_columns(cond)):
            deleted += n
            _remove_rows(txn, lay, path, rows, hit)  # marks the rows in a DV, or removes the file: nothing to write
    else:
        # The worker that read and matched a file also writes its other rows again (one file per
        # rewritten file, as Delta does): no wait for every file to be read before the first is
        # written, and each file's rows are let go once written.
        written: List[Tuple[str, Dict[str, Optional[str]], int, str]] = []
        for path, files, _, n in _matched(txn, lay, where, cond, then=lambda rows, hit: lay.encode(txn, _kept(rows, hit))):
            deleted += n
            txn.remove_file(path)
            written.extend(files)
        lay.stage(txn, written)
    params = {"predicate": where if where is not None else "true"}
    _stage(txn, "DELETE", params, {"numDeletedRows": deleted})


def _matched(
    txn: Any, lay: Layout, where: Optional[str], cond: Optional[_core.RowExpr], columns: Optional[List[str]] = None,
    then: Optional[Callable[[pa.Table, pa.Array], Any]] = None,
) -> Iterator[Tuple[str, Any, pa.Array, int]]:
    """(path, rows, hit mask, hits) of every file `where` may select that has a matching row.
    Files are read and matched a chunk at a time on a few threads; results come in scan order.
    With `then`, the worker also runs `then(rows, hit)` on each such file, and its result comes
    in place of the rows."""

    def find(path: str) -> Optional[Tuple[str, Any, pa.Array, int]]:
        rows = lay.read_rows(path, columns, positions=lay.dv_enabled)  # positions only to mark rows in DVs
        hit = _matches(rows, cond)
        n = pc.sum(hit).as_py() or 0
        if not n:
            return None  # a file without a match is let go at once
        return (path, rows if then is None else then(rows, hit), hit, n)

    for chunk in chunks(txn.scan(where, ["path"]).column("path").to_pylist()):
        lay.prefetch(chunk)
        yield from (found for found in each(chunk, find) if found is not None)


def _condition_columns(cond: Optional[_core.RowExpr]) -> List[str]:
    """The table columns a condition reads: with DVs nothing is rewritten, so finding the rows
    needs only those."""
    return sorted(cond.columns) if cond is not None else []


Compiler = Callable[[str], _core.RowExpr]


def _assignments(lay: Layout, set_: Mapping[str, str], compile_: Compiler, what: str = "SET expression") -> Dict[str, _core.RowExpr]:
    """Compiled assignments {column: expression}: unknown columns and bad expressions fail here,
    before any row is read."""
    if not isinstance(set_, Mapping) or not set_:
        raise InvalidArgumentError("set must be a non-empty mapping of column name to SQL expression text")
    out = {}
    lower = {f.name.lower(): f.name for f in lay.schema}
    for col, text in set_.items():
        name = lower.get(str(col).lower())
        if name is None:
            raise InvalidArgumentError(f"cannot set unknown column {col!r} (columns: {lay.schema.names})")
        try:
            out[name] = compile_(text)
        except PredicateError as e:
            raise assignment_error(what, name, text, e) from e
    return out


def assignment_error(what: str, column: str, text: Any, e: PredicateError) -> PredicateError:
    """A bad SET / INSERT value, worded as such (not as a predicate): ``invalid SET expression
    for column x: 'x ** 2' at position 4: ...``."""
    position, reason = e.position, e.reason
    if e.problem == "unknown_column":
        position = None  # about a name, not a place in the text
    detail = f"{text!r} at position {position}: {reason}" if position is not None else f"{text!r}: {reason or e}"
    return PredicateError(f"invalid {what} for column {column}: {detail}", position=position, reason=reason, column=column, problem=e.problem)


def _stored(f: pa.Field, col: Any, what: str) -> Any:
    """An assigned value as the column's type: a widening, a number into a numeric column
    (overflow checked) or a string into a date/timestamp column; other changes are refused."""
    if col.type == f.type:
        return col
    if not assignable(col.type, f.type):
        raise SchemaMismatchError(
            f"invalid {what} for column {f.name}: its value is {type_name(col.type)} but the column is "
            f"{type_name(f.type)} (convert it explicitly with CAST)",
            column=f.name, table_type=type_name(f.type), data_type=type_name(col.type),
        )
    try:
        return col.cast(f.type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise PredicateError(f"invalid {what} for column {f.name}: cannot store a value as {type_name(f.type)}: {e}", reason="evaluation failed", column=f.name, problem="evaluation") from e


def _apply(rows: pa.Table, schema: pa.Schema, assign: Dict[str, _core.RowExpr], base: Dict[str, str], what: str = "SET expression") -> pa.Table:
    """Rows of `schema`: assigned columns from their compiled expressions, the rest from `base`
    (a column name in `rows` per target column) or NULL."""
    if rows.num_rows == 0:
        return schema.empty_table()
    out: Dict[str, Any] = _rows.evaluate(rows, assign, "the value of " + ", ".join(repr(c) for c in assign))
    out.update({f.name: rows.column(base[f.name]) for f in schema if f.name not in assign and f.name in base})
    arrays = [_stored(f, out[f.name], what) if f.name in out else pa.nulls(rows.num_rows, f.type) for f in schema]
    return pa.Table.from_arrays(arrays, schema=schema)


def update(txn: Any, where: Optional[str], set: Mapping[str, str]) -> None:  # noqa: A002 - api.md name
    lay = _layout(txn)
    cond = _condition(lay, where)
    assign = _assignments(lay, set, lambda text: _rows.compile(text, lay.schema))
    updated = 0
    out: List[pa.Table] = []
    for path, rows, hit, n in _matched(txn, lay, where, cond):
        updated += n
        changed = _apply(rows.filter(hit), lay.schema, assign, {c: c for c in lay.schema.names})
        out.append(_remove_rows(txn, lay, path, rows, hit))
        out.append(lay.conform(changed))
    lay.write(txn, concat(out, lay.schema))
    params = {"predicate": where if where is not None else "true", "set": {k: v for k, v in set.items()}}
    _stage(txn, "UPDATE", params, {"numUpdatedRows": updated})


# -- merge ------------------------------------------------------------------------------------------


class _MergeColumns:
    """MERGE's two tables for the evaluator: the joined rows name target columns `t.<name>` and
    source columns `s.<name>`; a condition reads them as `<alias>.col` or an unambiguous bare
    name."""

    def __init__(self, target: pa.Schema, source: pa.Schema, ta: str, sa: str) -> None:
        self.target, self.source, self.ta, self.sa = target, source, ta, sa
        self._joined: Optional[Tuple[pa.Schema, pa.Schema, pa.Schema]] = None

    def joined_schema(self) -> pa.Schema:
        """The joined rows' schema (built once per pair of schemas: every conjunct and clause
        resolves against it)."""
        if self._joined is None or self._joined[0] is not self.target or self._joined[1] is not self.source:
            schema = pa.schema([pa.field(f"t.{f.name}", f.type) for f in self.target] + [pa.field(f"s.{f.name}", f.type) for f in self.source])
            self._joined = (self.target, self.source, schema)
        return self._joined[2]

    def scopes(self, target_readable: bool = True) -> List[_rows.Scope]:
        return [(self.ta, "t.", target_readable), (self.sa, "s.", True)]

    def joined(self, text: str) -> _core.RowExpr:
        return _rows.compile(text, self.joined_schema(), self.scopes())

    def source_only(self, text: str) -> _core.RowExpr:
        """A NOT MATCHED clause: reading a target column is an error."""
        return _rows.compile(text, self.joined_schema(), self.scopes(target_readable=False))

    def target_only(self, text: str) -> _core.RowExpr:
        """A conjunct on target rows alone (named as in the table)."""
        return _rows.compile(text, self.target, [(self.ta, "", True)])


def check_merge_clauses(on: Any, update: Any, delete: Any, insert: Any) -> None:
    if not isinstance(on, str):
        raise InvalidArgumentError("on must be SQL text")
    if not (update or delete or insert):
        raise InvalidArgumentError("merge needs at least one clause (when_matched_update, when_matched_delete, when_not_matched_insert)")


def split_merge_condition(on: str, cols: _MergeColumns) -> Tuple[List[Tuple[str, str]], List[str], List[str]]:
    """The ON condition's conjuncts by the columns they read (resolved, not compiled: the Spark
    engine evaluates them itself): equality keys (target column, source column), target-only
    conjuncts and the rest, as SQL texts."""
    keys: List[Tuple[str, str]] = []
    target_only: List[str] = []
    residual: List[str] = []
    for sql in _core.conjuncts(on):
        columns, pair = _core.referenced_columns(sql, cols.joined_schema(), cols.scopes())
        if pair is not None and {pair[0][:2], pair[1][:2]} == {"t.", "s."}:
            t, s_ = pair if pair[0].startswith("t.") else (pair[1], pair[0])
            keys.append((t[2:], s_[2:]))
        elif columns and all(c.startswith("t.") for c in columns):
            target_only.append(sql)
        else:
            residual.append(sql)
    return keys, target_only, residual


def _find(schema: pa.Schema, name: str) -> Optional[str]:
    if name in schema.names:
        return name
    for n in schema.names:
        if n.lower() == name.lower():
            return n
    return None


def merge(
    txn: Any,
    source: Any,
    on: str,
    *,
    source_alias: str = "s",
    target_alias: str = "t",
    when_matched_update: Optional[Mapping[str, str]] = None,
    when_matched_delete: Union[bool, str] = False,
    when_not_matched_insert: Union[bool, Mapping[str, str]] = False,
    schema_mode: Optional[str] = None,
) -> None:
    """MERGE INTO target USING source ON `on`. Matched target rows are deleted (when
    ``when_matched_delete`` is True or its condition holds) or else updated; unmatched source
    rows are inserted. The read is narrowed from the source (concurrency.md §4 rule 7): key values
    (or key ranges) present in the source, plus the condition's target-only conjuncts. With
    ``schema_mode="merge"`` the source columns the target lacks are added to the table first."""
    if isinstance(source, pa.RecordBatchReader):
        source = source.read_all()
    if not isinstance(source, pa.Table):
        raise InvalidArgumentError(f"source must be a pyarrow Table, got {type(source).__name__}")
    check_merge_clauses(on, when_matched_update, when_matched_delete, when_not_matched_insert)
    cols = _MergeColumns(_layout(txn).schema, source.schema, target_alias, source_alias)
    keys, target_only, residual = split_merge_condition(on, cols)
    check_merge_keys(keys, cols)
    lay = _evolved(txn, source.schema, schema_mode)
    # A source key that widens to the target type is cast to it, so the join and the narrowing
    # compare like with like (a wider source key is compared in its own type by _join).
    for t_col, s_col in keys:
        typ = lay.schema.field(t_col).type
        if source.schema.field(s_col).type != typ and arrow_widens(source.schema.field(s_col).type, typ):
            i = source.schema.get_field_index(s_col)
            source = source.set_column(i, pa.field(s_col, typ), source.column(s_col).cast(typ))
    cols.target, cols.source = lay.schema, source.schema  # with schema_mode="merge", t.<new column> resolves
    read_where = _narrowed_read(lay, source, keys, target_only)
    target_conds = [cols.target_only(sql) for sql in target_only]
    residual_conds = [cols.joined(sql) for sql in residual]  # compiled before any row is read
    files = txn.scan(read_where, ["path"]).column("path").to_pylist()
    file_rows = lay.read_many(files)
    target_rows = []
    for i, rows in enumerate(file_rows):
        for cond in target_conds:
            rows = rows.filter(_rows.mask(rows, cond))
        target_rows.append(rows.append_column("__file", pa.repeat(pa.scalar(i, pa.int32()), rows.num_rows)))
    tgt = concat(target_rows, lay.schema.append(pa.field(ROW, pa.uint64())).append(pa.field("__file", pa.int32())))
    tgt = tgt.rename_columns([f"t.{n}" if not n.startswith("__") else n for n in tgt.column_names])
    src = source.rename_columns([f"s.{n}" for n in source.column_names]).append_column("__src", arange(source.num_rows, pa.int64()))
    joined = _join(tgt, src, [f"t.{t}" for t, _ in keys], [f"s.{s}" for _, s in keys])
    for cond in residual_conds:
        joined = joined.filter(_rows.mask(joined, cond))
    # A target row may match at most one source row (Delta's rule).
    if joined.num_rows:
        counts = joined.group_by(["__file", ROW]).aggregate([([], "count_all")])
        if pc.max(counts.column("count_all")).as_py() > 1:
            raise InvalidArgumentError(
                "MERGE: a target row matched more than one source row; make the source unique on the merge keys"
            )
    deleted = updated = inserted = 0
    if when_matched_delete:
        del_cond = None if when_matched_delete is True else cols.joined(when_matched_delete)
        del_mask = _rows.mask(joined, del_cond)
    else:
        del_mask = pa.repeat(False, joined.num_rows)
    upd_mask = pc.invert(del_mask) if when_matched_update else pa.repeat(False, joined.num_rows)
    new_rows: List[pa.Table] = []
    if when_matched_update:
        assign = _assignments(lay, when_matched_update, cols.joined)
        changed = joined.filter(upd_mask)
        new_rows.append(lay.conform(_apply(changed, lay.schema, assign, {c: f"t.{c}" for c in lay.schema.names})))
        updated = changed.num_rows
    deleted = pc.sum(del_mask).as_py() or 0
    touched = joined.filter(pc.or_(del_mask, upd_mask))
    for i, path in enumerate(files):
        in_file = touched.filter(pc.equal(touched.column("__file"), i))
        if in_file.num_rows == 0:
            continue
        rows = file_rows[i]
        hit = pc.is_in(rows.column(ROW), value_set=in_file.column(ROW).combine_chunks())
        new_rows.insert(0, _remove_rows(txn, lay, path, rows, hit))
    if when_not_matched_insert:
        matched = joined.column("__src").combine_chunks() if joined.num_rows else pa.array([], pa.int64())
        unmatched = src.filter(pc.invert(pc.is_in(src.column("__src"), value_set=matched)))
        if when_not_matched_insert is True:
            ins = source.take(unmatched.column("__src"))
            new_rows.append(lay.conform(ins.select([n for n in ins.column_names if _find(lay.schema, n)])))
        else:
            assign = _assignments(lay, when_not_matched_insert, cols.source_only, "INSERT value")
            new_rows.append(lay.conform(_apply(unmatched, lay.schema, assign, {}, "INSERT value")))
        inserted = unmatched.num_rows
    lay.write(txn, concat(new_rows, lay.schema))
    params = {"predicate": on, "readPredicate": read_where or "true"}
    _stage(txn, "MERGE", params, {"numTargetRowsUpdated": updated, "numTargetRowsDeleted": deleted, "numTargetRowsInserted": inserted})


def check_merge_keys(keys: List[Tuple[str, str]], cols: _MergeColumns) -> None:
    """MERGE compares keys only when one key type widens to the other: a string key against a
    number key is a SchemaMismatchError, never a cast (which would turn 'abc' into NULL)."""
    for t_col, s_col in keys:
        tt, st = cols.target.field(t_col).type, cols.source.field(s_col).type
        if not (arrow_widens(st, tt) or arrow_widens(tt, st)):
            raise SchemaMismatchError(
                f"MERGE keys {cols.ta}.{t_col} ({type_name(tt)}) and {cols.sa}.{s_col} ({type_name(st)}) have "
                f"incompatible types: cast the source column to {type_name(tt)} first",
                column=t_col, table_type=type_name(tt), data_type=type_name(st),
            )


def _join(tgt: pa.Table, src: pa.Table, t_keys: List[str], s_keys: List[str]) -> pa.Table:
    """Inner join of target and source rows on the keys (every pair without keys), a narrower
    key compared as the wider one. Only the keys and row numbers go through pyarrow's join, which
    cannot carry list, struct or map columns; the rows are then taken by number."""
    ti = tgt.select(t_keys).append_column("__ti", arange(tgt.num_rows, pa.int64()))
    si = src.select(s_keys).append_column("__si", arange(src.num_rows, pa.int64()))
    for i, (t_key, s_key) in enumerate(zip(t_keys, s_keys)):
        s_type = si.schema.field(s_key).type
        if ti.schema.field(t_key).type != s_type:
            ti = ti.set_column(i, t_key, ti.column(i).cast(s_type))
    if t_keys:
        pairs = ti.join(si, keys=t_keys, right_keys=s_keys, join_type="inner", coalesce_keys=False)
    else:
        ti = ti.append_column("__k", pa.repeat(pa.scalar(0, pa.int8()), ti.num_rows))
        si = si.append_column("__k", pa.repeat(pa.scalar(0, pa.int8()), si.num_rows))
        pairs = ti.join(si, keys="__k", join_type="inner")
    left, right = tgt.take(pairs.column("__ti")), src.take(pairs.column("__si"))
    return pa.Table.from_arrays(left.columns + right.columns, names=left.column_names + right.column_names)


def _narrowed_read(lay: Layout, source: pa.Table, keys: List[Tuple[str, str]], target_only: List[str]) -> Optional[str]:
    """The target rows MERGE must read: key values present in the source (a list for partition
    columns and small sources, a range otherwise) and the target-only conjuncts."""
    summaries: List[Tuple[Any, ...]] = []
    for t_col, s_col in keys:
        col = source.column(s_col)
        values = pc.unique(pc.drop_null(col))
        if t_col in lay.partition_columns or len(values) <= _MERGE_IN_LIST_LIMIT:
            summaries.append((t_col, values))
            continue
        mm = pc.min_max(col)
        hi = mm["max"]
        if pa.types.is_floating(col.type) and pc.any(pc.is_nan(col)).as_py():
            hi = pa.scalar(float("nan"), col.type)  # min_max skips NaN, which is above every value (Spark's order)
        summaries.append((t_col, None, pa.array([mm["min"].as_py(), hi.as_py()], col.type)))
    return narrowed_predicate(summaries, target_only)


def narrowed_predicate(summaries: List[Tuple[Any, ...]], target_only: List[str]) -> Optional[str]:
    """MERGE's read predicate, in the core, from a summary of the source keys: per target key
    column ``(column, distinct non-null values)`` or ``(column, None, [min, max])`` as Arrow, with
    the condition's target-only conjuncts. Shared by every engine so that they record the same read."""
    keys = []
    for s in summaries:
        kind, values = ("values", s[1]) if s[1] is not None else ("range", s[2])
        keys.append((s[0], kind, _arrow.array_capsules(values)))
    return _core.merge_read_predicate(keys, list(target_only))


# -- optimize ---------------------------------------------------------------------------------------


def target_size(lay: Layout, target_file_size: Optional[int]) -> int:
    if target_file_size is None:
        return int(lay.snapshot.properties.get("delta.targetFileSize", DEFAULT_TARGET_FILE_SIZE))
    return int_arg("target_file_size (bytes)", target_file_size, 1)


def provenance_tag(inputs: List[Tuple[dict, int]]) -> str:
    """The compaction provenance (concurrency.md §4 rule 5): per input in output order its path,
    the live rows written from it, and the DV it was read with (Delta's descriptor, or null), so
    that a later transaction can map rows exactly even after the input's DV has grown."""
    out = []
    for f, rows in inputs:
        d = f.get("deletion_vector")
        dv = None if not d else {
            "storageType": d["storage_type"],
            "pathOrInlineDv": d["path_or_inline_dv"],
            "offset": d["offset"],
            "sizeInBytes": d["size_in_bytes"],
            "cardinality": d["cardinality"],
        }
        out.append([f["path"], rows, dv])
    return json.dumps(out)


def compaction_bins(txn: Any, where: Optional[str], target: int) -> List[List[Dict[str, Any]]]:
    """OPTIMIZE's bins among the live files ``where`` selects. Only the inputs it compacts are
    recorded as read (§4 rule 5; §8 scenario 15): files it looked at and left alone, or an
    OPTIMIZE that found nothing to do, must not make it conflict."""
    snap = txn.snapshot
    # No stats: bin-packing and the provenance tag need these alone.
    selected = None
    if where is not None:
        if not isinstance(where, str):
            raise InvalidArgumentError(f"where must be SQL text, got {type(where).__name__}")
        selected, _ = snap._h.prune(where)
    # The core packs the bins; only the files in them come to Python.
    by_bin = snap._h.compaction_bins(selected, target)
    chosen = [i for b in by_bin for i in b]
    files = snap.files(["path", "partition_values", "size", "deletion_vector", "dv_cardinality"])
    rows = iter(files.take(pa.array(chosen, pa.int64())).to_pylist())
    bins = [[next(rows) for _ in b] for b in by_bin]
    txn.record_files_read([f["path"] for b in bins for f in b])
    return bins


def optimize(txn: Any, target_file_size: Optional[int] = None, where: Optional[str] = None) -> int:
    """Bin-packing compaction (dataChange=false): per partition, small files (and files with
    deletion vectors) are rewritten into files of about ``target_file_size`` bytes. Each output
    records its inputs in order (``add.tags``), so concurrent DML on DV tables is remapped
    instead of conflicting (concurrency.md §4 rule 5). Returns the number of bins staged."""
    lay = _layout(txn)
    target = target_size(lay, target_file_size)
    bins = compaction_bins(txn, where, target)
    rows_out = 0
    for b in bins:
        parts = lay.read_many([f["path"] for f in b], positions=False)
        provenance = provenance_tag([(f, p.num_rows) for f, p in zip(b, parts)])
        data = concat(parts, lay.schema)
        rows_out += data.num_rows
        if data.num_rows:
            written = lay.write(txn, data, data_change=False, tags={PROVENANCE_TAG: provenance})
            if len(written) != 1:  # (a typed error, not an assert: -O must not let a wrong tag through)
                raise InvalidArgumentError(f"OPTIMIZE: a bin was written as {len(written)} files, not one file; provenance would be wrong")
        for f in b:
            txn.remove_file(f["path"], data_change=False)
    params = {"predicate": json.dumps([where] if where else []), "targetFileSize": str(target)}
    _stage(txn, "OPTIMIZE", params, {"numBins": len(bins), "numRemovedFiles": sum(len(b) for b in bins), "numOutputRows": rows_out})
    return len(bins)


__all__ = ["append", "overwrite", "delete", "update", "merge", "optimize", "PROVENANCE_TAG", "partition_strings"]
