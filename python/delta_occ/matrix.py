"""`delta-occ matrix`: the conflict matrices of concurrency.md §5, run live.

Every ordered pair of operations is staged on two transactions of a fresh scratch table (embedded
engine, temporary directory), the *first* commits, then the *second*; the outcome of the second is
compared with what §5 documents for that cell. Configurations: row-level concurrency (a DV table),
file level on a table without DVs, and file level on a DV table (`row_level=False`, the
"no conflict with DVs enabled" cells); partitioned and not; Serializable and WriteSerializable.

Scratch table: `id`, `x = id` (and `p = id % 2` when partitioned), two appends of 8 rows, so each
partition holds two small files OPTIMIZE can compact. Every operation touches one row, named by its
`x` (and its partition). A cell has up to two variants: *same* (the winner touches the row the
second touches, or inserts a row its predicate matches; for partitioned file-level tables, the same
partition) and *other* (a different row of the same file, or a row of the other partition).
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import pyarrow as pa

from . import one_call
from .exceptions import DeltaConcurrentModificationException
from .table import Table

KINDS = ("INSERT", "INSERT-READ", "UPDATE", "DELETE", "MERGE", "OPTIMIZE")
"""INSERT is a blind append; INSERT-READ scans the table with a predicate and then appends (an
INSERT that reads the target table, which §5 says behaves like MERGE)."""
MODES = ("row-level", "file-level", "file-level-dv")
LEVELS = ("Serializable", "WriteSerializable")
NO_CONFLICT = "no conflict"
CONFLICT = "conflict"
RERUN = "re-run"

# The two tables of concurrency.md §5: rows the operation committing second, columns the winner.
DOCUMENTED = {
    "with row-level concurrency (DVs enabled)": [
        ("INSERT", ["no conflict", "no conflict", "no conflict"]),
        ("UPDATE / DELETE / MERGE", [
            "WriteSerializable: no conflict; Serializable: conflicts only if the inserted rows match its predicate",
            "conflicts only when both touch the same row (or the winner changed a row it read)",
            "no conflict",
        ]),
        ("OPTIMIZE", ["no conflict", "no conflict", "no conflict"]),
    ],
    "without row-level concurrency (file level)": [
        ("INSERT", ["no conflict", "no conflict", "no conflict"]),
        ("UPDATE / DELETE / MERGE", [
            "WriteSerializable: no conflict; Serializable: conflicts if files were added in a partition it read",
            "conflicts if they read or rewrite the same files / partitions",
            "conflicts if they touch the same files (no conflict with DVs enabled)",
        ]),
        ("OPTIMIZE", [
            "no conflict",
            "conflicts on the same files (no conflict with DVs enabled)",
            "conflicts on the same files (no conflict with DVs enabled)",
        ]),
    ],
}
DOCUMENTED_COLUMNS = ("INSERT", "UPDATE / DELETE / MERGE", "OPTIMIZE")

_TARGET = 2  # the row the second operation touches (first file; partition p = 0)
_NEW_BASE = 300  # ids of rows the operations insert


@dataclasses.dataclass
class Cell:
    mode: str
    partitioned: bool
    level: str
    second: str
    first: str
    variant: str
    observed: str  # NO_CONFLICT or CONFLICT
    exception: Optional[str]  # the class the second raised
    documented: str
    rule: str  # the §5 text the documented outcome comes from
    message: str = ""
    #: With ``rerun=True``: the second run as a one-call operation with ``rerun_on_conflict=1``:
    #: NO_CONFLICT, RERUN (it conflicted, was executed again on the new snapshot and committed)
    #: or CONFLICT (a conflict re-running does not resolve); None without ``rerun``.
    with_rerun: Optional[str] = None

    @property
    def agrees(self) -> bool:
        return self.observed == self.documented

    def to_json(self) -> Dict[str, Any]:
        d = dataclasses.asdict(self)
        d["agrees"] = self.agrees
        return d


def _group(kind: str) -> str:
    return "DML" if kind in ("UPDATE", "DELETE", "MERGE", "INSERT-READ") else kind


def documented(second: str, first: str, mode: str, level: str, partitioned: bool, same: bool) -> Tuple[str, str]:
    """The §5 outcome of `second` committing after `first`, and the table text it comes from."""
    s, f = _group(second), _group(first)
    if s == "INSERT":
        return NO_CONFLICT, "INSERT row: no conflict"
    if mode == "row-level":
        if "OPTIMIZE" in (s, f):
            return NO_CONFLICT, "row level: OPTIMIZE never conflicts"
        if first == "INSERT":
            if level == "WriteSerializable":
                return NO_CONFLICT, "WriteSerializable: no conflict with a blind INSERT"
            return _when(same, "Serializable: conflicts only if the inserted rows match its predicate")
        return _when(same, "conflicts only when both touch the same row (or the winner changed a row it read)")
    dv = mode == "file-level-dv"
    if s == "OPTIMIZE":
        if first in ("INSERT", "INSERT-READ"):
            return NO_CONFLICT, "OPTIMIZE ignores added files; the winner rewrote none"
        return (NO_CONFLICT, "no conflict with DVs enabled") if dv else (CONFLICT, "conflicts on the same files")
    if f == "OPTIMIZE":
        return (NO_CONFLICT, "no conflict with DVs enabled") if dv else (CONFLICT, "conflicts if they touch the same files")
    if first == "INSERT":
        if level == "WriteSerializable":
            return NO_CONFLICT, "WriteSerializable: no conflict with a blind INSERT"
        return _when(same or not partitioned, "Serializable: conflicts if files were added in a partition it read")
    return _when(same or not partitioned, "conflicts if they read or rewrite the same files / partitions")


def _when(conflicts: bool, rule: str) -> Tuple[str, str]:
    return (CONFLICT if conflicts else NO_CONFLICT), rule


def _schema(partitioned: bool) -> pa.Schema:
    fields = [("id", pa.int64()), ("x", pa.int64())]
    return pa.schema(fields + [("p", pa.int64())] if partitioned else fields)


def _rows(schema: pa.Schema, rows: Sequence[Tuple[int, int, int]]) -> pa.Table:
    """Rows of (id, x, p); p is dropped on unpartitioned tables."""
    cols = {"id": [r[0] for r in rows], "x": [r[1] for r in rows], "p": [r[2] for r in rows]}
    return pa.table({n: cols[n] for n in schema.names}, schema=schema)


def _scratch(root: str, name: str, dv: bool, partitioned: bool, level: str) -> Table:
    props = {"delta.isolationLevel": level}
    if dv:
        props["delta.enableDeletionVectors"] = "true"
    schema = _schema(partitioned)
    t = Table.create(f"{root}/{name}", schema, partition_by=["p"] if partitioned else [], properties=props)
    for batch in range(2):
        ids = range(batch * 8, batch * 8 + 8)
        t.append(_rows(schema, [(i, i, i % 2) for i in ids]))
    return t


def _stage(txn: Any, kind: str, ident: int, partitioned: bool, insert_x: int, new_id: int) -> None:
    """Stage `kind` touching row `ident` (for inserts: a new row `new_id` with x = `insert_x`, in
    `ident`'s partition)."""
    schema = _schema(partitioned)
    part = ident % 2
    where = f"x = {ident}" + (f" AND p = {part}" if partitioned else "")
    if kind == "INSERT":
        txn.append(_rows(schema, [(new_id, insert_x, part)]))
    elif kind == "INSERT-READ":
        txn.scan(where)
        txn.append(_rows(schema, [(new_id, insert_x, part)]))
    elif kind == "DELETE":
        txn.delete(where)
    elif kind == "UPDATE":
        txn.update(where, {"x": "x + 1000"})
    elif kind == "MERGE":
        # The source also holds a key the table lacks (an insert the MERGE should have read).
        source = _rows(schema, [(ident, -ident, part), (_NEW_BASE + ident, 0, part)])
        on = "t.id = s.id" + (" AND t.p = s.p" if partitioned else "")
        txn.merge(source, on, when_matched_update={"x": "s.x"})
    else:
        txn.optimize()


def _variants(second: str, first: str) -> List[str]:
    return ["same", "other"] if _group(second) == "DML" and first != "OPTIMIZE" else ["same"]


def run_cell(root: str, mode: str, partitioned: bool, level: str, second: str, first: str, variant: str, rerun: bool = False) -> Cell:
    name = f"{mode}-{int(partitioned)}-{level}-{second}-{first}-{variant}"
    t = _scratch(root, name, dv=mode != "file-level", partitioned=partitioned, level=level)
    row_level = mode == "row-level"
    same = variant == "same"
    loser = t.begin(isolation_level=level, row_level=row_level, data_skipping=False)
    _stage(loser, second, _TARGET, partitioned, insert_x=200, new_id=200)
    _commit_winner(t.begin(isolation_level=level, row_level=row_level, data_skipping=False), first, second, partitioned, same)
    want, rule = documented(second, first, mode, level, partitioned, same)
    exception, message, observed = None, "", NO_CONFLICT
    try:
        loser.commit()
    except DeltaConcurrentModificationException as e:
        exception, message, observed = type(e).__name__, str(e), CONFLICT
    finally:
        shutil.rmtree(t.path, ignore_errors=True)
    cell = Cell(mode, partitioned, level, second, first, variant, observed, exception, want, rule, message)
    if rerun:
        cell.with_rerun = _rerun_cell(root, name, mode, partitioned, level, second, first, same)
    return cell


def _commit_winner(winner: Any, first: str, second: str, partitioned: bool, same: bool) -> None:
    """Stage and commit the winner of a cell: it touches the second's row ("same") or another one;
    an inserting winner adds a row the second's predicate matches ("same") or one it does not."""
    winner_row = _TARGET if same else (3 if partitioned else 4)
    insert_x = _TARGET if same else 500
    new_id = _NEW_BASE + _TARGET if (same and second == "MERGE") else 100
    _stage(winner, first, (_TARGET if same else winner_row) if first.startswith("INSERT") else winner_row, partitioned, insert_x, new_id)
    winner.commit()


def _rerun_cell(root: str, name: str, mode: str, partitioned: bool, level: str, second: str, first: str, same: bool) -> str:
    """The cell again, the second as a one-call operation (``rerun_on_conflict=1``) whose first
    execution loses to the winner. INSERT-READ is a transaction whose reads the caller made:
    never re-run."""
    t = _scratch(root, name + "-rerun", dv=mode != "file-level", partitioned=partitioned, level=level)
    row_level = mode == "row-level"

    def begin() -> Any:
        return t.begin(isolation_level=level, row_level=row_level, data_skipping=False)

    def execute(loser: Any) -> Any:
        _stage(loser, second, _TARGET, partitioned, insert_x=200, new_id=200)
        if not executions:
            _commit_winner(begin(), first, second, partitioned, same)
        executions.append(1)
        return loser.commit()

    executions: List[int] = []
    try:
        result = one_call.run(
            begin, execute, core=lambda x: x, latest=t.newest_snapshot, operation=second, rerun_on_conflict=0 if second == "INSERT-READ" else 1, sleep=lambda s: None
        )
        return RERUN if result.executions > 1 else NO_CONFLICT
    except DeltaConcurrentModificationException:
        return CONFLICT
    finally:
        shutil.rmtree(t.path, ignore_errors=True)


def cells(modes: Sequence[str] = MODES, partitioned: Sequence[bool] = (False, True), levels: Sequence[str] = LEVELS) -> Iterator[Tuple[str, bool, str, str, str, str]]:
    for mode in modes:
        for part in partitioned:
            for level in levels:
                for second in KINDS:
                    for first in KINDS:
                        for variant in _variants(second, first):
                            yield mode, part, level, second, first, variant


def run(
    modes: Sequence[str] = MODES,
    partitioned: Sequence[bool] = (False, True),
    levels: Sequence[str] = LEVELS,
    progress: Optional[Callable[[int, int], None]] = None,
    rerun: bool = False,
) -> Dict[str, Any]:
    """Run every cell on scratch tables under a temporary directory; the JSON-ready summary.
    ``rerun``: also run each cell with the second as a one-call operation that re-runs once on a
    conflict re-reading resolves (``Cell.with_rerun``; ``rerun_resolved`` counts the conflicts
    that disappear)."""
    todo = list(cells(modes, partitioned, levels))
    started = time.monotonic()
    out: List[Cell] = []
    root = tempfile.mkdtemp(prefix="delta-occ-matrix-")
    try:
        for i, spec in enumerate(todo):
            out.append(run_cell(root, *spec, rerun=rerun))
            if progress:
                progress(i + 1, len(todo))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    differences = [c for c in out if not c.agrees]
    summary: Dict[str, Any] = {
        "cells": [c.to_json() for c in out],
        "checked": len(out),
        "differences": len(differences),
        "seconds": round(time.monotonic() - started, 2),
    }
    if rerun:
        summary["conflicts"] = sum(c.observed == CONFLICT for c in out)
        summary["rerun_resolved"] = sum(c.observed == CONFLICT and c.with_rerun == RERUN for c in out)
    return summary


def _summary(cells: List[Dict[str, Any]], key: str) -> str:
    """One grid entry from a cell's variants: `-` no conflict, `same` conflict only when the
    winner touched the same row / partition, `X` conflict in every variant."""
    by = {c["variant"]: c[key] for c in cells}
    if all(v == NO_CONFLICT for v in by.values()):
        return "-"
    if all(v == CONFLICT for v in by.values()):
        return "X"
    return "same" if by.get("same") == CONFLICT else "other"


Grid = List[Tuple[str, List[Optional[Tuple[str, str]]]]]


def grids(result: Dict[str, Any]) -> List[Tuple[str, Grid]]:
    """Per configuration, a title and rows (second operation, [(observed, documented) per first
    operation, None where no cell ran])."""
    groups: Dict[Tuple[str, bool, str], Dict[Tuple[str, str], List[Dict[str, Any]]]] = {}
    for c in result["cells"]:
        key = (c["mode"], c["partitioned"], c["level"])
        groups.setdefault(key, {}).setdefault((c["second"], c["first"]), []).append(c)
    out = []
    for (mode, part, level), by_pair in groups.items():
        rows: Grid = []
        for second in KINDS:
            entries = [by_pair.get((second, first)) for first in KINDS]
            rows.append((second, [(_summary(e, "observed"), _summary(e, "documented")) if e else None for e in entries]))
        out.append((f"{mode}, {'partitioned' if part else 'unpartitioned'}, {level}", rows))
    return out
