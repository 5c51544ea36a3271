"""MERGE INTO target USING source ON ``on``: matched target rows are deleted (when
``when_matched_delete`` is True or its condition holds) or else updated; unmatched source rows
are inserted. The read is narrowed from the source (concurrency.md §4 rule 7): key values (or key
ranges) present in the source, plus the condition's target-only conjuncts, worked out by the core
from the same summary on every engine so that they record the same read."""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Generic, List, Mapping, Optional, Protocol, Tuple, TypeVar, Union

import pyarrow as pa

from .. import _arrow, _core, _rows
from .._schema import arrow_widens, type_name
from ..exceptions import InvalidArgumentError, SchemaMismatchError
from ..instant import Now
from . import assignments, commit_info
from .protocols import Engine

#: Above this many distinct source key values MERGE narrows its read by a key range, not a list.
MERGE_IN_LIST_LIMIT = 1000

Source = TypeVar("Source")
Expr = TypeVar("Expr")
#: Per target key column ``(column, distinct non-null values)`` or ``(column, None, [min, max])``.
KeySummary = Tuple[Any, ...]


class MergeColumns:
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


@dataclasses.dataclass
class MergePlan(Generic[Expr]):
    """One MERGE, engine-neutral: its condition split by what it reads, its read predicate and
    its clauses (SET / INSERT values checked by the engine, as ``Expr``)."""

    on: str
    columns: MergeColumns
    #: Equality keys (target column, source column).
    keys: List[Tuple[str, str]]
    #: Conjuncts reading target columns only, and the rest, as SQL texts.
    target_only: List[str]
    residual: List[str]
    read_where: Optional[str]
    #: True: every matched row is deleted; SQL text: those where it holds; False: none.
    delete: Union[bool, str]
    update: Optional[Dict[str, Expr]]
    #: True: insert the source row's columns the table has; a mapping: those values; False: none.
    insert: Union[bool, Dict[str, Expr]]


    @property
    def touches_updated(self) -> bool:
        """Whether a matched row that is not deleted leaves its file too (it is updated)."""
        return self.update is not None


@dataclasses.dataclass
class Matched:
    """What MERGE's join found, counted by the engine (no row reaches the caller)."""

    #: (target row, source row) pairs the ON condition matched.
    pairs: int
    #: Those the DELETE clause applies to.
    deleted: int
    #: Target rows matched by more than one source row.
    repeated: int


class Merger(Engine, Protocol[Source, Expr]):
    def merge_source(self, source: Any) -> Source:
        """The source as the engine joins it (InvalidArgumentError for anything else)."""
        ...

    def source_schema(self, source: Source) -> pa.Schema: ...

    def prepare_source(self, source: Source, columns: MergeColumns, keys: List[Tuple[str, str]], schema_mode: Optional[str]) -> Source:
        """Before reading: the table schema extended (``schema_mode``), key columns cast to it;
        ``columns`` follow."""
        ...

    def distinct_keys(self, source: Source, target_column: str, source_column: str, limit: Optional[int]) -> pa.Array:
        """Distinct non-null values of a source key as the target column's type (at least
        ``limit`` of them, when there are that many, when ``limit`` is given)."""
        ...

    def key_range(self, source: Source, target_column: str, source_column: str) -> pa.Array:
        """[min, max] of a source key as the target column's type (NaN above every value)."""
        ...

    def merge_expression(self, columns: MergeColumns, text: str, *, target_readable: bool) -> Expr:
        """A clause value checked as the engine evaluates it on joined rows (a NOT MATCHED
        clause must not read the target)."""
        ...

    def match(self, source: Source, plan: MergePlan[Expr]) -> Matched:
        """Record the read of ``plan.read_where``, join, and count what matched."""
        ...

    def write_merge(self, source: Source, plan: MergePlan[Expr]) -> int:
        """Remove the matched target rows that are deleted (and, when ``plan.touches_updated``,
        the others), write the updated ones and the inserted source rows; returns how many were
        inserted."""
        ...


def merge(
    engine: Merger[Source, Expr], source: Any, on: str, *, source_alias: str = "s", target_alias: str = "t",
    when_matched_update: Optional[Mapping[str, str]] = None, when_matched_delete: Union[bool, str] = False,
    when_not_matched_insert: Union[bool, Mapping[str, str]] = False, schema_mode: Optional[str] = None,
) -> None:
    """The keywords of ``Table.merge``."""
    now = Now()
    on, when_matched_delete = now.text(on), now.text(when_matched_delete)
    when_matched_update, when_not_matched_insert = now.values(when_matched_update), now.values(when_not_matched_insert)
    src = engine.merge_source(source)
    check_merge_clauses(on, when_matched_update, when_matched_delete, when_not_matched_insert)
    cols = MergeColumns(engine.schema, engine.source_schema(src), target_alias, source_alias)
    keys, target_only, residual = split_merge_condition(on, cols)
    check_merge_keys(keys, cols)
    src = engine.prepare_source(src, cols, keys, schema_mode)
    read_where = narrowed_predicate([key_summary(engine, src, t, s) for t, s in keys], target_only)
    update = None
    if when_matched_update:
        update = assignments.resolve(
            engine.schema, when_matched_update, "when_matched_update", lambda text: engine.merge_expression(cols, text, target_readable=True),
            identity=engine.identity,
        )
    insert: Union[bool, Dict[str, Expr]] = when_not_matched_insert is True
    if when_not_matched_insert and when_not_matched_insert is not True:
        insert = assignments.resolve(
            engine.schema, when_not_matched_insert, "when_not_matched_insert",
            lambda text: engine.merge_expression(cols, text, target_readable=False), assignments.INSERT, identity=engine.identity,
        )
    plan = MergePlan(on, cols, keys, target_only, residual, read_where, when_matched_delete, update, insert)
    matched = engine.match(src, plan)
    check_one_source_row(matched)
    updated = matched.pairs - matched.deleted if plan.touches_updated else 0
    inserted = engine.write_merge(src, plan)
    engine.record(commit_info.merge(on, read_where, updated, matched.deleted, inserted))


def check_merge_clauses(on: Any, update: Any, delete: Any, insert: Any) -> None:
    if not isinstance(on, str):
        raise InvalidArgumentError("on must be SQL text")
    if not (update or delete or insert):
        raise InvalidArgumentError("merge needs at least one clause (when_matched_update, when_matched_delete, when_not_matched_insert)")


def split_merge_condition(on: str, cols: MergeColumns) -> Tuple[List[Tuple[str, str]], List[str], List[str]]:
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


def check_merge_keys(keys: List[Tuple[str, str]], cols: MergeColumns) -> None:
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


def key_summary(engine: Merger[Source, Expr], source: Source, t_col: str, s_col: str) -> KeySummary:
    """The distinct source values of one key, or their range when there are more than
    ``MERGE_IN_LIST_LIMIT`` (a partition column is always listed: it prunes exactly)."""
    partition = t_col in engine.partition_columns
    values = engine.distinct_keys(source, t_col, s_col, None if partition else MERGE_IN_LIST_LIMIT + 1)
    if partition or len(values) <= MERGE_IN_LIST_LIMIT:
        return (t_col, values)
    return (t_col, None, engine.key_range(source, t_col, s_col))


def narrowed_predicate(summaries: List[KeySummary], target_only: List[str]) -> Optional[str]:
    """MERGE's read predicate, in the core, from the key summaries and the target-only conjuncts."""
    keys = []
    for s in summaries:
        kind, values = ("values", s[1]) if s[1] is not None else ("range", s[2])
        keys.append((s[0], kind, _arrow.array_capsules(values)))
    return _core.merge_read_predicate(keys, list(target_only))


def check_one_source_row(matched: Matched) -> None:
    """A target row may match at most one source row (Delta's rule)."""
    if matched.repeated:
        raise InvalidArgumentError(
            f"MERGE: {matched.repeated} target row(s) matched more than one source row; make the source unique on the merge keys"
        )


__all__ = [
    "MERGE_IN_LIST_LIMIT", "MergeColumns", "MergePlan", "Matched", "Merger", "merge", "check_merge_clauses", "split_merge_condition",
    "check_merge_keys", "key_summary", "narrowed_predicate", "check_one_source_row",
]
