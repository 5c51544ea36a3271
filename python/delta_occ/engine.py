"""The embedded engine (api.md "One-call operations"): DML on pyarrow, no JVM.

Each function stages one operation on an open :class:`~delta_occ.Transaction` and records
exactly what it read, so the conflict checker sees the true read set; ``Table.append`` and the
other one-call methods wrap them in a transaction and commit. Staging on a transaction is also how
tests force two operations into a chosen interleaving.

The operations themselves (checks, choices, commitInfo) are written once for both engines in
:mod:`delta_occ.operations`; :class:`ArrowEngine` finds, reads and writes their rows with pyarrow.
On tables with deletion vectors (``delta.enableDeletionVectors=true``), DELETE, UPDATE and MERGE
mark removed rows in DVs instead of rewriting files, which lets row-level concurrency resolve
concurrent changes to different rows of one file.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Protocol, Sequence, Set, Tuple

import pyarrow as pa
import pyarrow.compute as pc

from . import _core, _rows, data_input, identity
from ._schema import arrow_widens, check_stored, type_name
from ._write import Layout, as_table, concat
from .change_data import Changes
from .constraints import Compiled, Rule, compile_rule, first_broken
from .exceptions import InvalidArgumentError, PredicateError
from .operations import append as _append
from .operations import delete as _delete
from .operations import merge as _merge
from .operations import optimize as _optimize
from .operations import overwrite as _overwrite
from .operations import row_tracking
from .operations import update as _update
from .operations.commit_info import OperationRecord
from .operations.conform import evolve, find_column
from .operations.merge import Matched, MergeColumns, MergePlan
from .operations.optimize import PROVENANCE_TAG, BinFile, Compacted, provenance_tag
from .operations.protocols import Staging, Written
from .operations.removal import Removal, choose
from .reader import ROW, arange

#: Each transaction's Layout, built on first use (weakly held: it goes with the transaction).
_LAYOUTS: "weakref.WeakKeyDictionary[Staging, Layout]" = weakref.WeakKeyDictionary()

#: A written file: log path, partition values, size, stats (see ``Layout.encode``).
_Encoded = Tuple[str, Dict[str, Optional[str]], int, str]


def _layout(txn: Staging) -> Layout:
    lay = _LAYOUTS.get(txn)
    if lay is None:
        lay = _LAYOUTS[txn] = Layout(txn.snapshot, txn.schema_json)
    return lay


class ArrowEngine:
    """The embedded engine's side of every operation (``delta_occ.operations``' protocols) on one
    transaction: rows are pyarrow Tables, conditions the core's compiled ``RowExpr``."""

    def __init__(self, txn: Staging) -> None:
        self.txn = txn
        # MERGE's rows between matching and writing (see ``match``).
        self._files: List[str] = []
        self._file_rows: List[pa.Table] = []
        #: Per clause group, its rows and each row's clause (``_first_clause``).
        self._sides: Dict[str, Tuple[pa.Table, pa.Array]] = {}

    @property
    def lay(self) -> Layout:
        return _layout(self.txn)

    @property
    def schema(self) -> pa.Schema:
        return self.lay.schema

    @property
    def partition_columns(self) -> List[str]:
        return self.lay.partition_columns

    @property
    def identity(self) -> Mapping[str, identity.IdentityColumn]:
        return self.lay.identity

    @property
    def generated(self) -> Sequence[str]:
        return list(self.lay.generation.expressions)

    def record(self, record: OperationRecord) -> None:
        self.txn.stage_operation(*record)

    # -- append / overwrite ------------------------------------------------------------------

    def conform(self, data: Any, schema_mode: Optional[str]) -> pa.Table:
        data = as_table(data)
        return self._new_rows(self._evolved(data.schema, schema_mode).conform(data), data.column_names)

    def _new_rows(self, rows: pa.Table, given: Sequence[str]) -> pa.Table:
        """New rows with the identity values the data did not give (``given``: the columns it
        gave), consecutive from each column's next value; the marks move in this transaction."""
        for name, column in identity.to_generate(self.lay.identity, given).items():
            if not rows.num_rows:
                continue
            first = identity.reserve(self.txn, name, rows.num_rows)
            values = pc.add_checked(pc.multiply_checked(arange(rows.num_rows, pa.int64()), column.step), first)
            rows = rows.set_column(rows.schema.get_field_index(name), rows.schema.field(name), values)
        return rows

    def _evolved(self, data: pa.Schema, schema_mode: Optional[str]) -> Layout:
        """The layout to write ``data`` with, after the schema change ``schema_mode`` asks for
        (``operations.conform.evolve``)."""
        if evolve(self.txn, data, schema_mode):
            _LAYOUTS.pop(self.txn, None)
        return self.lay

    def write(self, rows: pa.Table) -> Written:
        return Written(rows.num_rows, len(self.lay.write(self.txn, rows)))

    def partition_tuples(self, rows: pa.Table) -> pa.Table:
        return rows.select(self.partition_columns)

    def count_outside(self, rows: pa.Table, where: str) -> int:
        cond = self._condition(where)
        return rows.num_rows - (pc.sum(_rows.mask(rows, cond)).as_py() or 0) if rows.num_rows else 0

    def replace(self, where: Optional[str], rows: pa.Table) -> Tuple[int, int]:
        lay = self.lay
        cond = self._condition(where)
        removed = 0
        keep: List[pa.Table] = []
        changes: Changes = []
        for path, old, hit, n in self._matched(where, cond, _condition_columns(cond) if lay.dv_enabled and not lay.cdf else None, ids=not lay.dv_enabled):
            removed += n
            if lay.cdf:
                changes += _delete.recorded(old.filter(hit))
            keep.append(self._remove_rows(path, old, hit))
        lay.write(self.txn, concat(keep + [rows], lay.schema))
        if lay.cdf:
            lay.write_changes(self.txn, changes + _append.recorded(rows))
        return removed, rows.num_rows

    # -- delete / update ---------------------------------------------------------------------

    def remove_matching(self, where: Optional[str]) -> int:
        lay, txn = self.lay, self.txn
        cond = self._condition(where)
        deleted = 0
        changes: Changes = []
        if lay.dv_enabled:
            # (the change feed records whole rows: then every column is read)
            for path, rows, hit, n in self._matched(where, cond, None if lay.cdf else _condition_columns(cond)):
                deleted += n
                if lay.cdf:
                    changes += _delete.recorded(rows.filter(hit))
                self._remove_rows(path, rows, hit)  # marks the rows in a DV, or removes the file: nothing to write
            lay.write_changes(txn, changes)
            return deleted
        # The worker that read and matched a file also writes its other rows again (one file per
        # rewritten file, as Delta does): no wait for every file to be read before the first is
        # written, and each file's rows are let go once written.
        written: List[_Encoded] = []

        def rewrite(rows: pa.Table, hit: pa.Array) -> Tuple[List[_Encoded], Optional[pa.Table]]:
            how = choose(pc.sum(hit).as_py() or 0, rows.num_rows, False)
            kept = lay.encode(txn, _kept(rows, hit)) if how is Removal.REWRITE else []
            return kept, rows.filter(hit) if lay.cdf else None

        for path, (files, gone), _, n in self._matched(where, cond, then=rewrite, ids=True):
            deleted += n
            txn.remove_file(path)
            written.extend(files)
            if gone is not None:
                changes += _delete.recorded(gone)
        lay.stage(txn, written)
        lay.write_changes(txn, changes)
        return deleted

    def expression(self, text: str) -> _core.RowExpr:
        return _rows.compile(text, self.schema)

    def update_matching(self, where: Optional[str], assign: Dict[str, _core.RowExpr]) -> int:
        lay = self.lay
        cond = self._condition(where)
        updated = 0
        out: List[pa.Table] = []
        changes: Changes = []
        for path, rows, hit, n in self._matched(where, cond, ids=True):
            updated += n
            before = rows.filter(hit)
            changed = row_tracking.updated(lay.conform(_apply(before, lay.schema, assign, {c: c for c in lay.schema.names})), before)
            out.append(self._remove_rows(path, rows, hit))
            out.append(changed)
            if lay.cdf:
                changes += _update.recorded(before, changed)
        lay.write(self.txn, concat(out, lay.schema))
        lay.write_changes(self.txn, changes)
        return updated

    # -- merge -------------------------------------------------------------------------------

    def merge_source(self, source: Any) -> pa.Table:
        return data_input.as_table(source, "source")

    def source_schema(self, source: pa.Table) -> pa.Schema:
        return source.schema

    def prepare_source(self, source: pa.Table, columns: MergeColumns, keys: List[Tuple[str, str]], schema_mode: Optional[str]) -> pa.Table:
        if schema_mode == "overwrite":
            raise InvalidArgumentError('schema_mode="overwrite" replaces the table schema: it needs overwrite() of the whole table, not MERGE')
        lay = self._evolved(source.schema, schema_mode)
        # A source key that widens to the target type is cast to it, so the join and the narrowing
        # compare like with like (a wider source key is compared in its own type by _join).
        for t_col, s_col in keys:
            typ = lay.schema.field(t_col).type
            if source.schema.field(s_col).type != typ and arrow_widens(source.schema.field(s_col).type, typ):
                i = source.schema.get_field_index(s_col)
                source = source.set_column(i, pa.field(s_col, typ), source.column(s_col).cast(typ))
        columns.target, columns.source = lay.schema, source.schema  # with schema_mode="merge", t.<new column> resolves
        return source

    def distinct_keys(self, source: pa.Table, target_column: str, source_column: str, limit: Optional[int]) -> pa.Array:
        return pc.unique(pc.drop_null(source.column(source_column)))

    def key_range(self, source: pa.Table, target_column: str, source_column: str) -> pa.Array:
        col = source.column(source_column)
        mm = pc.min_max(col)
        hi = mm["max"]
        if pa.types.is_floating(col.type) and pc.any(pc.is_nan(col)).as_py():
            hi = pa.scalar(float("nan"), col.type)  # min_max skips NaN, which is above every value (Spark's order)
        return pa.array([mm["min"].as_py(), hi.as_py()], col.type)

    def merge_expression(self, columns: MergeColumns, text: str, *, target_readable: bool, source_readable: bool = True) -> _core.RowExpr:
        return _rows.compile(text, columns.joined_schema(), columns.scopes(target_readable, source_readable))

    def match(self, source: pa.Table, plan: MergePlan[_core.RowExpr]) -> Matched:
        lay, cols = self.lay, plan.columns
        target_conds = [cols.target_only(sql) for sql in plan.target_only]
        residual_conds = [cols.joined(sql) for sql in plan.residual]
        conds = {g: [c.when for c in plan.group(g)] for g in _merge.GROUPS}  # compiled by the operation
        self._files = self.txn.scan(plan.read_where, ["path"]).column("path").to_pylist()
        self._file_rows = lay.reader.read_many(self._files, ids=True)
        every, on_side = [], []
        for i, rows in enumerate(self._file_rows):
            rows = rows.append_column("__file", pa.repeat(pa.scalar(i, pa.int32()), rows.num_rows))
            every.append(rows)
            for cond in target_conds:  # a target row failing a target-only conjunct of `on` is unmatched
                rows = rows.filter(_rows.mask(rows, cond))
            on_side.append(rows)
        shape = lay.schema.append(pa.field(ROW, pa.uint64())).append(pa.field("__file", pa.int32()))

        def prefixed(t: pa.Table) -> pa.Table:
            return t.rename_columns([f"t.{n}" if not n.startswith("__") else n for n in t.column_names])

        tgt_all, tgt = prefixed(concat(every, shape)), prefixed(concat(on_side, shape))
        src = source.rename_columns([f"s.{n}" for n in source.column_names]).append_column("__src", arange(source.num_rows, pa.int64()))
        joined = _join(tgt, src, [f"t.{t}" for t, _ in plan.keys], [f"s.{s}" for _, s in plan.keys])
        for cond in residual_conds:
            joined = joined.filter(_rows.mask(joined, cond))
        paired = _row_keys(joined)
        unmatched_t = tgt_all.filter(pc.invert(pc.is_in(_row_keys(tgt_all), value_set=paired)))
        matched_src = joined.column("__src").combine_chunks() if joined.num_rows else pa.array([], pa.int64())
        unmatched_s = src.filter(pc.invert(pc.is_in(src.column("__src"), value_set=matched_src)))
        self._sides = {
            _merge.MATCHED: (joined, _first_clause(joined, conds[_merge.MATCHED])),
            _merge.NOT_MATCHED_BY_SOURCE: (unmatched_t, _first_clause(unmatched_t, conds[_merge.NOT_MATCHED_BY_SOURCE])),
            _merge.NOT_MATCHED: (unmatched_s, _first_clause(unmatched_s, conds[_merge.NOT_MATCHED])),
        }
        counts = {(g, a): 0 for g in _merge.GROUPS for a in (_merge.UPDATE, _merge.DELETE)}
        repeated = 0
        by_file: Dict[str, Set[int]] = {}
        for g in (_merge.MATCHED, _merge.NOT_MATCHED_BY_SOURCE):
            rows, act = self._sides[g]
            first = 0 if g == _merge.MATCHED else len(plan.group(_merge.MATCHED))  # clause numbers
            acts = pa.table({"file": rows.column("__file"), "act": act}).filter(pc.is_valid(act)).group_by(["file", "act"]).aggregate([])
            for f, a in zip(acts.column("file").to_pylist(), acts.column("act").to_pylist()):
                by_file.setdefault(self._files[f], set()).add(first + a)
            acting = pa.table({"key": _row_keys(rows), "act": act}).filter(pc.is_valid(act))
            per_row = acting.group_by("key").aggregate([([], "count_all"), ("act", "min")])
            if g == _merge.MATCHED:
                repeated = pc.sum(pc.greater(per_row.column("count_all"), 1)).as_py() or 0
            for k, clause in enumerate(plan.group(g)):
                counts[(g, clause.action)] += pc.sum(pc.equal(per_row.column("act_min"), k)).as_py() or 0
        m, b = _merge.MATCHED, _merge.NOT_MATCHED_BY_SOURCE
        return Matched(counts[(m, _merge.UPDATE)], counts[(m, _merge.DELETE)], repeated, counts[(b, _merge.UPDATE)], counts[(b, _merge.DELETE)],
                       {f: sorted(ks) for f, ks in by_file.items()})

    def write_merge(self, source: pa.Table, plan: MergePlan[_core.RowExpr]) -> int:
        lay = self.lay
        if not self._sides:
            raise InvalidArgumentError("MERGE: write_merge before match")
        new_rows: List[pa.Table] = []
        changes: Changes = []
        touched: List[pa.Table] = []
        base = {c: f"t.{c}" for c in lay.schema.names}
        for g in (_merge.MATCHED, _merge.NOT_MATCHED_BY_SOURCE):
            rows, act = self._sides[g]
            for k, clause in enumerate(plan.group(g)):
                mine = rows.filter(pc.fill_null(pc.equal(act, k), False))
                if not mine.num_rows:
                    continue
                touched.append(pa.table({"file": mine.column("__file"), "row": mine.column(ROW)}))
                changed = None
                if clause.action == _merge.UPDATE:
                    assert isinstance(clause.values, dict)
                    changed = row_tracking.updated(lay.conform(_apply(mine, lay.schema, clause.values, base)), mine)
                    new_rows.append(changed)
                if lay.cdf:
                    changes += _merge.recorded(clause, _target_side(mine, lay.schema), changed)
        hits = pa.concat_tables(touched) if touched else pa.table({"file": pa.array([], pa.int32()), "row": pa.array([], pa.uint64())})
        for i, path in enumerate(self._files):
            in_file = hits.filter(pc.equal(hits.column("file"), i))
            if in_file.num_rows == 0:
                continue
            rows = self._file_rows[i]
            hit = pc.is_in(rows.column(ROW), value_set=in_file.column("row").combine_chunks())
            new_rows.insert(0, self._remove_rows(path, rows, hit))
        inserted = 0
        unmatched, act = self._sides[_merge.NOT_MATCHED]
        for k, clause in enumerate(plan.group(_merge.NOT_MATCHED)):
            mine = unmatched.filter(pc.fill_null(pc.equal(act, k), False))
            if not mine.num_rows:
                continue
            if clause.values is True:
                ins = source.take(mine.column("__src"))
                given = [n for n in ins.column_names if find_column(lay.schema.names, n)]
                new_rows.append(self._new_rows(lay.conform(ins.select(given)), given))
            else:
                assert isinstance(clause.values, dict)
                # Only the columns the INSERT names are given: the others get their default,
                # generated value or NULL from conform, as an append's missing columns do.
                given = list(clause.values)
                new_rows.append(self._new_rows(lay.conform(_apply(mine, lay.schema, clause.values, {}, "INSERT value").select(given)), given))
            inserted += mine.num_rows
            if lay.cdf:
                changes += _merge.recorded(clause, None, new_rows[-1])
        lay.write(self.txn, concat(new_rows, lay.schema))
        lay.write_changes(self.txn, changes)
        return inserted

    # -- optimize ----------------------------------------------------------------------------

    def compact(self, bins: List[List[BinFile]]) -> Compacted:
        lay = self.lay
        rows_out = 0
        files_per_bin = []
        for b in bins:
            parts = lay.reader.read_many([f["path"] for f in b], positions=False, ids=True)
            provenance = provenance_tag([(f, p.num_rows) for f, p in zip(b, parts)])
            data = concat(parts, lay.schema)
            rows_out += data.num_rows
            written = lay.write(self.txn, data, data_change=False, tags={PROVENANCE_TAG: provenance}) if data.num_rows else []
            files_per_bin.append(len(written))
        return Compacted(rows_out, files_per_bin)

    def zorder(self, bins: List[List[BinFile]], columns: Sequence[str], rows_per_file: Sequence[int]) -> Compacted:
        lay = self.lay
        rows_out = 0
        files_per_bin = []
        for b, per_file in zip(bins, rows_per_file):
            data = concat(lay.reader.read_many([f["path"] for f in b], positions=False, ids=True), lay.schema)
            rows_out += data.num_rows
            if not data.num_rows:
                files_per_bin.append(0)
                continue
            data = data.take(_optimize.zorder_order(data, columns))
            pieces = [data.slice(start, per_file) for start in range(0, data.num_rows, per_file)]
            files_per_bin.append(len(lay.write_many(self.txn, pieces, data_change=False)))
        return Compacted(rows_out, files_per_bin)

    def remove_files(self, paths: Sequence[str]) -> None:
        for p in paths:
            self.txn.remove_file(p, data_change=False)

    # -- finding rows ------------------------------------------------------------------------

    def _condition(self, where: Optional[str]) -> Optional[_core.RowExpr]:
        """`where` compiled against the table's columns (None: every row)."""
        if where is None:
            return None
        if not isinstance(where, str):
            raise InvalidArgumentError(f"where must be SQL text, got {type(where).__name__}")
        return _rows.compile(where, self.schema)

    def _remove_rows(self, path: str, rows: pa.Table, hit: pa.Array) -> pa.Table:
        """Stage the removal of the rows where `hit` is TRUE; return the rows that must be
        written again (a rewrite; empty otherwise)."""
        lay = self.lay
        how = choose(pc.sum(hit).as_py() or 0, rows.num_rows, lay.dv_enabled)
        if how is Removal.DELETION_VECTOR:
            self.txn.delete_rows(path, rows.filter(hit).column(ROW))
            return lay.schema.empty_table()
        self.txn.remove_file(path)
        if how is Removal.FILE:
            return lay.schema.empty_table()  # (`rows` may hold only the condition's columns)
        return _kept(rows, hit)

    def _matched(
        self, where: Optional[str], cond: Optional[_core.RowExpr], columns: Optional[List[str]] = None,
        then: Optional[Callable[[pa.Table, pa.Array], Any]] = None, ids: bool = False,
    ) -> Iterator[Tuple[str, Any, pa.Array, int]]:
        """(path, rows, hit mask, hits) of every file `where` may select that has a matching row.
        Files are read and matched a chunk at a time on a few threads; results come in scan order.
        With `then`, the worker also runs `then(rows, hit)` on each such file, and its result
        comes in place of the rows. ``ids``: the rows carry their row ids (``Layout.read_rows``),
        for operations that copy them."""
        lay = self.lay
        if lay.snapshot.version < 0:
            return  # a transaction that creates the table: it has no rows yet

        def find(path: str) -> Optional[Tuple[str, Any, pa.Array, int]]:
            rows = lay.reader.read_rows(path, columns, positions=lay.dv_enabled, ids=ids)  # positions only to mark rows in DVs
            hit = _rows.mask(rows, cond)
            n = pc.sum(hit).as_py() or 0
            if not n:
                return None  # a file without a match is let go at once
            return (path, rows if then is None else then(rows, hit), hit, n)

        paths = self.txn.scan(where, ["path"]).column("path").to_pylist()
        yield from (found for found in lay.reader.each(paths, find) if found is not None)


def _kept(rows: pa.Table, hit: pa.Array) -> pa.Table:
    """The rows a rewrite writes again (where `hit` is not TRUE), without positions."""
    kept = rows.drop_columns([ROW]) if ROW in rows.column_names else rows  # (before the filter: one column less to copy)
    return kept.filter(pc.invert(hit))


def _row_keys(rows: pa.Table) -> pa.Array:
    """One int64 per target row of MERGE's rows (``__file``, ``ROW``): file << 40 | position."""
    if not rows.num_rows:
        return pa.array([], pa.int64())
    f = pc.shift_left(pc.cast(rows.column("__file"), pa.int64()), 40)
    return pc.bit_wise_or(f, pc.cast(rows.column(ROW), pa.int64())).combine_chunks()


def _first_clause(rows: pa.Table, conds: List[Optional[_core.RowExpr]]) -> pa.Array:
    """Per row, the number (int16) of the first clause whose condition holds (NULL: no clause
    acts). A condition is evaluated only on the rows no earlier clause took, as Spark's CASE WHEN
    is."""
    n = rows.num_rows
    open_rows = arange(n, pa.int64())
    taken: List[pa.Array] = []
    numbers: List[pa.Array] = []
    for k, cond in enumerate(conds):
        if not len(open_rows):
            break
        hit = pa.repeat(True, len(open_rows)) if cond is None else _rows.mask(rows.take(open_rows), cond)
        mine = open_rows.filter(hit)
        taken.append(mine)
        numbers.append(pa.repeat(pa.scalar(k, pa.int16()), len(mine)))
        open_rows = open_rows.filter(pc.invert(hit))
    if not taken:
        return pa.nulls(n, pa.int16())
    where = pc.index_in(arange(n, pa.int64()), value_set=pa.concat_arrays(taken))
    return pa.concat_arrays(numbers).take(where)


def _target_side(joined: pa.Table, schema: pa.Schema) -> pa.Table:
    """The target rows of joined MERGE rows (``t.<column>``), as rows of the table."""
    return pa.Table.from_arrays([joined.column(f"t.{f.name}") for f in schema], schema=schema)


def _condition_columns(cond: Optional[_core.RowExpr]) -> List[str]:
    """The table columns a condition reads: with DVs nothing is rewritten, so finding the rows
    needs only those."""
    return sorted(cond.columns) if cond is not None else []


def _stored(f: pa.Field, col: Any, what: str) -> Any:
    """An assigned value as the column's type: a widening, a number into a numeric column
    (overflow checked) or a string into a date/timestamp column; other changes are refused."""
    if col.type == f.type:
        return col
    check_stored(col.type, f, what)
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


# -- the operations, staged on a transaction ---------------------------------------------------


def append(txn: Staging, data: Any, schema_mode: Optional[str] = None) -> None:
    """Blind append: reads nothing (a schema change makes it read the whole table)."""
    _append.append(ArrowEngine(txn), data, schema_mode)


def overwrite(
    txn: Staging, data: Any, replace_where: Optional[str] = None, *, dynamic_partitions: bool = False, schema_mode: Optional[str] = None
) -> None:
    """Replace the table's rows (all, those matching ``replace_where``, or with
    ``dynamic_partitions`` the partitions present in ``data``) by ``data``. New rows must satisfy
    ``replace_where``."""
    _overwrite.overwrite(ArrowEngine(txn), data, replace_where, dynamic_partitions=dynamic_partitions, schema_mode=schema_mode)


def delete(txn: Staging, where: Optional[str] = None) -> None:
    """Stage a DELETE of the rows ``where`` selects (every row when None) on ``txn``."""
    _delete.delete(ArrowEngine(txn), where)


def update(txn: Staging, where: Optional[str], set: Mapping[str, str]) -> None:  # noqa: A002 - api.md name
    """Stage an UPDATE on ``txn``: ``set`` maps columns to SQL expressions, for the rows ``where`` selects."""
    _update.update(ArrowEngine(txn), where, set)


def merge(txn: Staging, source: Any, on: str, **clauses: Any) -> None:
    """MERGE INTO target USING source ON `on` (``delta_occ.operations.merge``); with
    ``schema_mode="merge"`` the source columns the target lacks are added to the table first."""
    _merge.merge(ArrowEngine(txn), source, on, **clauses)


class WholeTable(Protocol):
    """Reads of every live row a transaction must make (``Transaction.whole_table``)."""

    def check_rules(self, rules: Sequence[Rule]) -> None:
        """Record a read of the whole table; ConstraintViolationError for a live row a rule is
        not TRUE on."""
        ...

    def bounds(self, column: str) -> Tuple[Any, Any]:
        """(min, max) of a column over the live rows (None, None without a value)."""
        ...


class ArrowWholeTable:
    """``WholeTable`` on the embedded engine (the rows come to this process)."""

    def __init__(self, txn: Any) -> None:
        self.txn = txn

    def check_rules(self, rules: Sequence[Rule]) -> None:
        check_rules(self.txn, rules)

    def bounds(self, column: str) -> Tuple[Any, Any]:
        values = self.txn.snapshot.to_pyarrow(columns=[column]).column(column)
        mm = pc.min_max(values)
        return mm["min"].as_py(), mm["max"].as_py()


def check_rules(txn: Staging, rules: Sequence[Rule]) -> None:
    """Record a read of the whole table and raise ConstraintViolationError for the first live
    row a rule is not TRUE on (PredicateError for a rule the core cannot compile: it could never
    be enforced). Files are read a few at a time, only the columns the rules read."""
    lay = _layout(txn)
    compiled = [Compiled(r, compile_rule(r, lay.schema)) for r in rules]
    paths = txn.scan(None, ["path"]).column("path").to_pylist()
    columns = sorted({c for x in compiled for c in x.expr.columns}) or [lay.schema.names[0]]
    where = f"{lay.root} at version {txn.snapshot.version}"
    for rows in lay.reader.each(paths, lambda path: lay.reader.read_rows(path, columns, positions=False)):
        for c in compiled:
            first_broken(c, rows, lay.root, where)


def optimize(
    txn: Staging, target_file_size: Optional[int] = None, where: Optional[str] = None, zorder_by: Optional[Sequence[str]] = None, *, full: bool = False
) -> int:
    """Bin-packing compaction, or Z-ordering with ``zorder_by`` (``delta_occ.operations.optimize``);
    returns the number of bins (partitions, with ``zorder_by``) staged."""
    if zorder_by is not None:
        return _optimize.zorder(ArrowEngine(txn), zorder_by, target_file_size, where)
    return _optimize.optimize(ArrowEngine(txn), target_file_size, where, full=full)


def purge(txn: Staging) -> int:
    """Rewrite every file with a deletion vector without its deleted rows (``delta_occ.operations.optimize.purge``)."""
    return _optimize.purge(ArrowEngine(txn))


__all__ = ["ArrowEngine", "WholeTable", "ArrowWholeTable", "append", "overwrite", "delete", "update", "merge", "optimize", "purge", "check_rules"]
