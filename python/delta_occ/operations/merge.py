"""MERGE INTO target USING source ON ``on`` with any WHEN clauses, in three groups as Spark SQL
has them: MATCHED (update or delete a target row the condition pairs with a source row), NOT
MATCHED (insert a source row no target row pairs with) and NOT MATCHED BY SOURCE (update or
delete a target row no source row pairs with). In each group the first clause, in call order,
whose condition holds acts; a row no clause acts on is left alone.

The read is narrowed from the source (concurrency.md §4 rule 7): key values (or key ranges)
present in the source, plus the condition's target-only conjuncts, worked out by the core from
the same summary on every engine so that they record the same read. A NOT MATCHED BY SOURCE
clause reads every target row its condition covers (the whole table without one): a target row
that fails a target-only part of ``on`` is unmatched, so ``on`` never narrows that read."""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, Generic, List, Mapping, Optional, Protocol, Sequence, Tuple, TypeVar, Union

import pyarrow as pa

from .. import _arrow, _core, _rows, change_data
from .._schema import arrow_widens, type_name
from ..exceptions import InvalidArgumentError, MergeCardinalityError, SchemaMismatchError
from ..instant import Now
from . import append as _append
from . import assignments, commit_info
from . import delete as _delete
from . import update as _update
from .protocols import Engine

#: Above this many distinct source key values MERGE narrows its read by a key range, not a list.
MERGE_IN_LIST_LIMIT = 1000

#: The clause groups, in the order Spark SQL's MERGE lists them.
MATCHED, NOT_MATCHED, NOT_MATCHED_BY_SOURCE = "WHEN MATCHED", "WHEN NOT MATCHED", "WHEN NOT MATCHED BY SOURCE"
GROUPS = (MATCHED, NOT_MATCHED, NOT_MATCHED_BY_SOURCE)
#: What a clause does.
UPDATE, DELETE, INSERT = "UPDATE", "DELETE", "INSERT"

Source = TypeVar("Source")
Expr = TypeVar("Expr")
#: Per target key column ``(column, distinct non-null values)`` or ``(column, None, [min, max])``.
KeySummary = Tuple[Any, ...]


@dataclasses.dataclass
class ClauseSpec:
    """A WHEN clause as the user gave it (``MergeBuilder`` and the keyword form build these):
    ``values`` is the SET / INSERT mapping of column to SQL text, ``"*"`` for every column by
    name (``update_all`` / ``insert_all``), None for DELETE."""

    group: str
    action: str
    condition: Optional[str] = None
    values: Union[None, str, Mapping[str, str]] = None

    def describe(self) -> str:
        what = f"{self.action} *" if self.values == "*" else self.action
        return f"{self.group}{' AND ' + self.condition if self.condition else ''} THEN {what}"


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

    def scopes(self, target_readable: bool = True, source_readable: bool = True) -> List[_rows.Scope]:
        return [(self.ta, "t.", target_readable), (self.sa, "s.", source_readable)]

    def joined(self, text: str) -> _core.RowExpr:
        return _rows.compile(text, self.joined_schema(), self.scopes())

    def target_only(self, text: str) -> _core.RowExpr:
        """A conjunct on target rows alone (named as in the table)."""
        return _rows.compile(text, self.target, [(self.ta, "", True)])

    def readable(self, group: str) -> Tuple[bool, bool]:
        """(target readable, source readable) in a clause of ``group``."""
        return (group != NOT_MATCHED, group != NOT_MATCHED_BY_SOURCE)


#: What a clause records in the change data feed: the kind of the target rows it takes and the
#: kind of the rows it writes (``delta_occ.change_data``); the engines only produce the rows.
RECORDED_AS: Dict[str, change_data.Kinds] = {DELETE: _delete.RECORDED_AS, UPDATE: _update.RECORDED_AS, INSERT: _append.RECORDED_AS}


def recorded(clause: "Clause[Any]", taken: Any, written: Any) -> List[Tuple[str, Any]]:
    """The change-feed entries of one clause's rows: ``taken`` (target rows it deletes or
    updates) and ``written`` (rows it writes), each under the kind ``RECORDED_AS`` gives."""
    return change_data.entries(RECORDED_AS[clause.action], taken, written)


@dataclasses.dataclass
class Clause(Generic[Expr]):
    """A WHEN clause checked for its engine: ``condition`` as SQL text (None: always), ``values``
    resolved to ``{table column: Expr}`` (INSERT ``*``: True, the source's columns the table
    has, matched by name; DELETE: None)."""

    group: str
    action: str
    condition: Optional[str]
    values: Union[None, bool, Dict[str, Expr]]
    text: str
    #: ``condition`` compiled by the engine (None: always), once, before any row is read.
    when: Optional[Expr] = None


@dataclasses.dataclass
class MergePlan(Generic[Expr]):
    """One MERGE, engine-neutral: its condition split by what it reads, its read predicate and
    its clauses in call order."""

    on: str
    columns: MergeColumns
    #: Equality keys (target column, source column).
    keys: List[Tuple[str, str]]
    #: Conjuncts reading target columns only, and the rest, as SQL texts.
    target_only: List[str]
    residual: List[str]
    read_where: Optional[str]
    clauses: List[Clause[Expr]]

    def group(self, group: str) -> List[Clause[Expr]]:
        return [c for c in self.clauses if c.group == group]

    @property
    def only_unconditional_delete(self) -> bool:
        """Delta's exception to the one-source-row rule: the MATCHED group is one DELETE without
        a condition (a target row deleted twice is deleted once)."""
        matched = self.group(MATCHED)
        return len(matched) == 1 and matched[0].action == DELETE and matched[0].condition is None


@dataclasses.dataclass
class Matched:
    """What MERGE's join found, counted by the engine (no row reaches the caller): target rows
    updated and deleted by the MATCHED and by the NOT MATCHED BY SOURCE clauses, and target rows
    that more than one source row would change (MATCHED clauses)."""

    matched_updated: int
    matched_deleted: int
    repeated: int
    by_source_updated: int = 0
    by_source_deleted: int = 0
    #: Per target file (its path in the log), the clauses that change its rows: numbers in the
    #: MATCHED clauses, then the NOT MATCHED BY SOURCE ones, in call order.
    clauses_by_file: Dict[str, List[int]] = dataclasses.field(default_factory=dict)

    def counts(self) -> Dict[str, int]:
        return {"matched_updated": self.matched_updated, "matched_deleted": self.matched_deleted,
                "by_source_updated": self.by_source_updated, "by_source_deleted": self.by_source_deleted}


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

    def merge_expression(self, columns: MergeColumns, text: str, *, target_readable: bool, source_readable: bool = True) -> Expr:
        """A clause value checked as the engine evaluates it on joined rows (a NOT MATCHED
        clause must not read the target, a NOT MATCHED BY SOURCE one not the source)."""
        ...

    def match(self, source: Source, plan: MergePlan[Expr]) -> Matched:
        """Record the read of ``plan.read_where``, join, choose each row's clause, and count."""
        ...

    def write_merge(self, source: Source, plan: MergePlan[Expr]) -> int:
        """Remove the target rows a clause updates or deletes, write the updated ones and the
        inserted source rows; returns how many were inserted."""
        ...


def keyword_clauses(
    when_matched_update: Optional[Mapping[str, str]], when_matched_delete: Union[bool, str], when_not_matched_insert: Union[bool, Mapping[str, str]],
) -> List[ClauseSpec]:
    """The keyword form of ``Table.merge`` as clauses: a matched row is deleted where
    ``when_matched_delete`` holds (True: always), else updated; an unmatched source row inserted
    (True: every column by name)."""
    out: List[ClauseSpec] = []
    if when_matched_delete is not False and when_matched_delete is not None:
        if when_matched_delete is True:
            if when_matched_update:
                raise InvalidArgumentError(
                    "when_matched_delete=True deletes every matched row, so when_matched_update would never act: "
                    "give when_matched_delete a condition, or drop when_matched_update"
                )
            out.append(ClauseSpec(MATCHED, DELETE))
        elif isinstance(when_matched_delete, str):
            out.append(ClauseSpec(MATCHED, DELETE, when_matched_delete))
        else:
            raise InvalidArgumentError(f"when_matched_delete must be True, False or SQL text, got {type(when_matched_delete).__name__}")
    if when_matched_update:
        out.append(ClauseSpec(MATCHED, UPDATE, None, when_matched_update))
    if when_not_matched_insert is True:
        out.append(ClauseSpec(NOT_MATCHED, INSERT, None, "*"))
    elif when_not_matched_insert:
        out.append(ClauseSpec(NOT_MATCHED, INSERT, None, when_not_matched_insert))
    return out


def merge(
    engine: Merger[Source, Expr], source: Any, on: str, *, source_alias: str = "s", target_alias: str = "t",
    when_matched_update: Optional[Mapping[str, str]] = None, when_matched_delete: Union[bool, str] = False,
    when_not_matched_insert: Union[bool, Mapping[str, str]] = False, schema_mode: Optional[str] = None,
    clauses: Optional[Sequence[ClauseSpec]] = None,
) -> None:
    """The keywords of ``Table.merge``, or ``clauses`` (``MergeBuilder``): not both."""
    if clauses is not None and (when_matched_update or when_matched_delete or when_not_matched_insert):
        raise InvalidArgumentError("merge: give the clause keywords or a builder's clauses, not both")
    specs = list(clauses) if clauses is not None else keyword_clauses(when_matched_update, when_matched_delete, when_not_matched_insert)
    now = Now()
    on = now.text(on)
    specs = [ClauseSpec(c.group, c.action, now.text(c.condition), c.values if isinstance(c.values, str) or c.values is None else now.values(c.values)) for c in specs]
    src = engine.merge_source(source)
    check_merge_clauses(on, specs)
    cols = MergeColumns(engine.schema, engine.source_schema(src), target_alias, source_alias)
    keys, target_only, residual = split_merge_condition(on, cols)
    check_merge_keys(keys, cols)
    src = engine.prepare_source(src, cols, keys, schema_mode)
    read_where = narrowed_predicate([key_summary(engine, src, t, s) for t, s in keys], [_core.unqualified(c, target_alias) for c in target_only])
    join_read = read_where
    read_where = widened_by_source(read_where, specs, target_alias)
    checked = [check_clause(engine, cols, c) for c in specs]
    plan = MergePlan(on, cols, keys, target_only, residual, read_where, checked)
    matched = engine.match(src, plan)
    engine.txn.bookkeeping.note_culprits(ClauseCulprits.of(plan, join_read, matched, target_alias))
    check_one_source_row(matched, plan)
    inserted = engine.write_merge(src, plan)
    group_keys = {MATCHED: "matched", NOT_MATCHED: "notMatched", NOT_MATCHED_BY_SOURCE: "notMatchedBySource"}
    engine.record(commit_info.merge(on, read_where, matched.counts(), inserted, [(group_keys[c.group], c.action, c.condition) for c in checked]))


#: Conflicts on rows a transaction changes, and on what it read (winners' rows added or removed).
_WRITE_RULES = ("delete_delete", "row_delete_delete")
_APPEND_RULES = ("concurrent_append", "row_append")
_READ_RULES = ("delete_read", "row_delete_read")


@dataclasses.dataclass
class ClauseCulprits:
    """Which WHEN clauses of one MERGE a conflict touches (``DeltaConcurrentModificationException
    .clauses``): for a conflict on rows it changes, the clauses that change rows of the
    conflicting file; for one on what it read, the clauses whose read may cover that file (by its
    partition values and statistics): the join's read serves the MATCHED and NOT MATCHED clauses,
    each NOT MATCHED BY SOURCE clause reads what its own condition covers."""

    changed: Dict[str, List[str]]
    reads: List[Tuple[Optional[str], List[str]]]

    @classmethod
    def of(cls, plan: "MergePlan[Any]", join_read: Optional[str], matched: Matched, target_alias: str) -> "ClauseCulprits":
        numbered = plan.group(MATCHED) + plan.group(NOT_MATCHED_BY_SOURCE)
        changed = {path: [numbered[k].text for k in sorted(ks)] for path, ks in matched.clauses_by_file.items()}
        reads: List[Tuple[Optional[str], List[str]]] = [(join_read, [c.text for c in plan.group(MATCHED) + plan.group(NOT_MATCHED)])]
        reads += [(None if c.condition is None else _core.unqualified(c.condition, target_alias), [c.text]) for c in plan.group(NOT_MATCHED_BY_SOURCE)]
        return cls(changed, [(p, cs) for p, cs in reads if cs])

    def behind(self, conflict: Any, snapshot_at: Any) -> List[str]:
        f = conflict.conflicting_file
        if conflict.rule in _WRITE_RULES:
            if f is None:
                return list(dict.fromkeys(c for cs in self.changed.values() for c in cs))
            return list(self.changed.get(f, []))
        if conflict.rule in _APPEND_RULES + _READ_RULES:
            snap = snapshot_at(conflict.winning_version if conflict.rule in _APPEND_RULES else None)
            return [c for predicate, cs in self.reads if _may_cover(snap, predicate, f) for c in cs]
        return []


def _may_cover(snap: Any, predicate: Optional[str], path: Optional[str]) -> bool:
    """Whether a read of ``predicate`` may cover the file ``path`` of ``snap`` (yes when any of
    them is unknown)."""
    if predicate is None or path is None or snap is None:
        return True
    paths = snap.files(["path"]).column("path").to_pylist()
    if path not in paths:
        return True
    selected, _ = snap.handle.prune(predicate)
    return paths.index(path) in set(selected)


def check_clause(engine: Merger[Source, Expr], cols: MergeColumns, spec: ClauseSpec) -> Clause[Expr]:
    """A clause's condition compiled where its group may read (errors before any row is read)
    and its values resolved against the table."""
    target_readable, source_readable = cols.readable(spec.group)
    when = None
    if spec.condition is not None:
        when = engine.merge_expression(cols, spec.condition, target_readable=target_readable, source_readable=source_readable)
    values: Union[None, bool, Dict[str, Expr]] = None
    argument = f"{spec.group} THEN {spec.action}"

    def check(text: str) -> Expr:
        return engine.merge_expression(cols, text, target_readable=target_readable, source_readable=source_readable)

    if spec.action == INSERT:
        if spec.values == "*":
            values = True
        else:
            values = assignments.resolve(engine.schema, spec.values, argument, check, assignments.INSERT, identity=engine.identity)
    elif spec.action == UPDATE:
        set_ = spec.values
        if set_ == "*":
            source_names = {f.name.lower(): f.name for f in cols.source}
            set_ = {f.name: f"{_quoted(cols.sa)}.{_quoted(source_names[f.name.lower()])}" for f in engine.schema
                    if f.name.lower() in source_names and f.name not in engine.identity}
            if not set_:
                raise InvalidArgumentError(f"{argument} *: the source has none of the table's columns {engine.schema.names}")
        values = assignments.resolve(engine.schema, set_, argument, check, identity=engine.identity, generated=engine.generated)
    return Clause(spec.group, spec.action, spec.condition, values, spec.describe(), when)


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def widened_by_source(read_where: Optional[str], specs: Sequence[ClauseSpec], target_alias: str) -> Optional[str]:
    """MERGE's read with NOT MATCHED BY SOURCE clauses: also every target row a clause's
    condition covers (the whole table when one has none), over the table's own column names."""
    by_source = [c for c in specs if c.group == NOT_MATCHED_BY_SOURCE]
    if not by_source:
        return read_where
    if any(c.condition is None for c in by_source) or read_where is None:
        return None
    return " OR ".join(f"({t})" for t in [read_where] + [_core.unqualified(str(c.condition), target_alias) for c in by_source])


def check_merge_clauses(on: Any, specs: Sequence[ClauseSpec]) -> None:
    """At least one clause; each group's clauses in an order Spark SQL accepts: only the last may
    lack a condition (a clause after it could never act); each action allowed in its group."""
    if not isinstance(on, str):
        raise InvalidArgumentError("on must be SQL text")
    if not specs:
        raise InvalidArgumentError(
            "merge needs at least one clause (when_matched_update / _delete, when_not_matched_insert, "
            "when_not_matched_by_source_update / _delete)"
        )
    allowed = {MATCHED: (UPDATE, DELETE), NOT_MATCHED: (INSERT,), NOT_MATCHED_BY_SOURCE: (UPDATE, DELETE)}
    for group in GROUPS:
        mine = [c for c in specs if c.group == group]
        for k, c in enumerate(mine):
            if c.action not in allowed[group]:
                raise InvalidArgumentError(f"{group} THEN {c.action} is not a MERGE clause")
            if c.condition is not None and not isinstance(c.condition, str):
                raise InvalidArgumentError(f"the condition of {c.describe()} must be SQL text, got {type(c.condition).__name__}")
            if c.condition is None and k < len(mine) - 1:
                raise InvalidArgumentError(
                    f"{c.describe()} has no condition but is not the last {group} clause: the clauses after it "
                    f"({', '.join(x.describe() for x in mine[k + 1:])}) could never act; give it a condition or move it last"
                )


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


def check_one_source_row(matched: Matched, plan: MergePlan[Any]) -> None:
    """A target row that a MATCHED clause would change may pair with one source row only
    (Delta's rule; not when the MATCHED group is one unconditional DELETE)."""
    if matched.repeated and not plan.only_unconditional_delete:
        raise MergeCardinalityError(
            f"MERGE: {matched.repeated} target row(s) matched more than one source row that a MATCHED clause would "
            "change them by; make the source unique on the merge keys (nothing was written)"
        )


__all__ = [
    "MERGE_IN_LIST_LIMIT", "MATCHED", "NOT_MATCHED", "NOT_MATCHED_BY_SOURCE", "GROUPS", "UPDATE", "DELETE", "INSERT", "ClauseSpec",
    "Clause", "ClauseCulprits", "RECORDED_AS", "recorded", "MergeColumns", "MergePlan", "Matched", "Merger", "keyword_clauses", "merge", "check_clause", "widened_by_source",
    "check_merge_clauses", "split_merge_condition", "check_merge_keys", "key_summary", "narrowed_predicate", "check_one_source_row",
]
