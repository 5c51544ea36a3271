"""The model the history checker judges a table with: the rows of the workload, what each logged
operation does to them, and the one WriteSerializable reorder rule (also used by the tests' row
model, tests/rowmodel.py)."""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Tuple

from .. import _core

WRITE_SERIALIZABLE = "WriteSerializable"
#: The strings of the workload's rows share a prefix longer than the statistics prefix, so string
#: statistics are cut and the predicates on them cannot be decided by statistics alone.
LONG = "stress-row-with-a-shared-prefix-" + "x" * _core.STATS_STRING_PREFIX
PARTS = ["a", "b c", "k=v"]

Row = Tuple[str, str, int]  # p, s, x
Rows = Dict[int, Row]


def unseen_blind_appends(level: str, read_version: Optional[int], version: int, blind: Iterable[int]) -> List[int]:
    """The versions among the blind appends ``blind`` that an operation committed at ``version``
    did not see: under WriteSerializable, those committed after its read version. Delta lets such
    an append serialize after the operation (concurrency.md §2), so the rows it added are outside
    the operation's predicates and survive it."""
    if level != WRITE_SERIALIZABLE or read_version is None:
        return []
    return [u for u in blind if read_version < u < version]


def make_row(i: int) -> Row:
    return (PARTS[i % len(PARTS)], f"{LONG}{i:012d}", 0)


def pred_match(p: List[Any], i: int, row: Row) -> bool:
    kind = p[0]
    if kind == "ids":
        return i in p[1]
    if kind == "range":
        return p[1] <= i <= p[2]
    if kind == "part":
        return row[0] == p[1]
    if kind == "str":
        return row[1] == p[1]
    return row[1] >= p[1]


def apply(op: Dict[str, Any], rows: Rows, outside: frozenset = frozenset()) -> Tuple[Rows, List[str]]:
    """``op`` evaluated on ``rows`` (ids in ``outside`` are beyond its predicates): the new rows and
    the anomalies the operation itself implies (an id inserted twice)."""
    out, bad = dict(rows), []
    kind = op["op"]

    def insert(i: int, row: Row) -> None:
        if i in out:
            bad.append(f"id {i} inserted while present")
        out[i] = row

    if kind in ("append", "app_append"):
        for i in op["ids"]:
            insert(i, make_row(i))
    elif kind == "delete":
        for i, r in rows.items():
            if i not in outside and pred_match(op["pred"], i, r):
                del out[i]
    elif kind == "update":
        for i, r in rows.items():
            if i not in outside and pred_match(op["pred"], i, r):
                out[i] = (r[0], r[1], r[2] + op["inc"])
    elif kind == "merge":
        for key, x in op["src"]:
            if key in rows and key not in outside:
                r = rows[key]
                out[key] = (r[0], r[1], x)
            else:
                p, s, _ = make_row(key)
                insert(key, (p, s, x))
    return out, bad


def touched(op: Dict[str, Any], rows: Rows) -> set:
    """Ids of ``rows`` an operation reads to change (its predicate's matches)."""
    if op["op"] in ("delete", "update"):
        return {i for i, r in rows.items() if pred_match(op["pred"], i, r)}
    if op["op"] == "merge":
        return {k for k, _ in op["src"] if k in rows}
    return set()
