"""`delta-occ check`: will two planned operations conflict on a table as it is now?

Both operations run for real, in both commit orders, on scratch clones of the table: a copy of
`_delta_log` beside symbolic links to the table's data and deletion-vector files (nothing is
written to the table; the clone's new files are its own). Each order reports the second
operation's outcome and the rule that decided it (see `explain`).

Operation text (keywords in any letter case; predicates and expressions in delta-occ's SQL subset):

    INSERT <json rows> [READING <predicate>]   a blind append, or one that first scans <predicate>
    DELETE [WHERE <predicate>]
    UPDATE SET <col> = <expr>[, ...] [WHERE <predicate>]
    MERGE <json rows> ON <condition>           update every source column of matched rows (s.<col>),
                                               insert the rows that match none
    OPTIMIZE [WHERE <partition predicate>]

<json rows> is a JSON object (one row) or a list of objects; missing nullable columns are null.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import tempfile
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pyarrow as pa

from . import explain
from .exceptions import DeltaConcurrentModificationException, InvalidArgumentError
from .table import Table

_KINDS = ("INSERT", "DELETE", "UPDATE", "MERGE", "OPTIMIZE")


@dataclasses.dataclass
class Planned:
    kind: str
    text: str
    rows: Optional[List[Dict[str, Any]]] = None
    where: Optional[str] = None
    reading: Optional[str] = None
    set: Optional[Dict[str, str]] = None
    on: Optional[str] = None

    def stage(self, txn: Any, schema: pa.Schema) -> None:
        if self.kind == "INSERT":
            if self.reading is not None:
                txn.scan(self.reading)
            txn.append(_table(self.rows or [], schema))
        elif self.kind == "DELETE":
            txn.delete(self.where)
        elif self.kind == "UPDATE":
            txn.update(self.where, self.set or {})
        elif self.kind == "MERGE":
            source = _table(self.rows or [], schema)
            update = {c: f"s.{c}" for c in source.column_names}
            txn.merge(source, self.on, when_matched_update=update, when_not_matched_insert=True)
        else:
            txn.optimize(where=self.where)


def parse(text: str) -> Planned:
    """One planned operation from its text (see the module docstring)."""
    stripped = text.strip()
    word = stripped.split(None, 1)[0].upper() if stripped else ""
    if word not in _KINDS:
        raise InvalidArgumentError(f"operation {text!r} must start with one of {', '.join(_KINDS)}")
    rest = stripped[len(word):].strip()
    if word in ("DELETE", "OPTIMIZE"):
        return Planned(word, text, where=_clause(rest, "WHERE", text, optional=True))
    if word == "UPDATE":
        m = re.match(r"(?is)^SET\s+(.*)$", rest)
        if not m:
            raise InvalidArgumentError(f"operation {text!r}: expected UPDATE SET <col> = <expr>[, ...] [WHERE <predicate>]")
        body = m.group(1)
        where = next((i for i in _top_level(body) if re.match(r"(?is)\sWHERE\s", body[i : i + 7])), None)
        if where is None:
            return Planned(word, text, set=_assignments(body, text))
        return Planned(word, text, set=_assignments(body[:where], text), where=body[where + 7 :].strip())
    rows, rest = _rows(rest, text)
    if word == "INSERT":
        return Planned(word, text, rows=rows, reading=_clause(rest, "READING", text, optional=True))
    return Planned(word, text, rows=rows, on=_clause(rest, "ON", text, optional=False))


def _clause(rest: str, keyword: str, text: str, optional: bool) -> Optional[str]:
    if not rest and optional:
        return None
    m = re.match(rf"(?is)^{keyword}\s+(.+)$", rest)
    if not m:
        raise InvalidArgumentError(f"operation {text!r}: expected {keyword} <...> after the operation, got {rest!r}")
    return m.group(1).strip()


def _assignments(text: str, op: str) -> Dict[str, str]:
    out: Dict[str, str] = {}
    for part in _split_top_level(text):
        col, eq, expr = part.partition("=")
        if not eq or not col.strip() or not expr.strip():
            raise InvalidArgumentError(f"operation {op!r}: SET needs <col> = <expr>, got {part.strip()!r}")
        out[col.strip()] = expr.strip()
    return out


def _top_level(text: str) -> Iterator[int]:
    """Positions in `text` outside parentheses and quotes."""
    depth, quote = 0, None
    for i, ch in enumerate(text):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "()":
            depth += 1 if ch == "(" else -1
        elif depth == 0:
            yield i


def _split_top_level(text: str) -> List[str]:
    """Split on commas outside parentheses and quotes."""
    cuts = [i for i in _top_level(text) if text[i] == ","]
    return [text[a + 1 : b] for a, b in zip([-1] + cuts, cuts + [len(text)])]


def _rows(rest: str, text: str) -> Tuple[List[Dict[str, Any]], str]:
    try:
        value, end = json.JSONDecoder().raw_decode(rest)
    except json.JSONDecodeError as e:
        raise InvalidArgumentError(f"operation {text!r}: expected JSON rows after the keyword ({e})") from None
    rows = [value] if isinstance(value, dict) else value
    if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
        raise InvalidArgumentError(f"operation {text!r}: the rows must be a JSON object or a non-empty list of objects")
    return rows, rest[end:].strip()


def _table(rows: List[Dict[str, Any]], schema: pa.Schema) -> pa.Table:
    names = {k for r in rows for k in r}
    unknown = sorted(names - set(schema.names))
    if unknown:
        raise InvalidArgumentError(f"column(s) {unknown} are not in the table schema {schema.names}")
    fields = [f for f in schema if f.name in names]
    return pa.Table.from_pylist(rows, schema=pa.schema(fields))


def clone(src: str, dst: str, storage: Any = None) -> None:
    """A scratch copy of the table at `src`: `_delta_log` copied, every other file linked. A
    table in an object store (``storage``, its ``_core.StorageHandle``) is copied whole, through
    its storage: the scratch tables are local."""
    if storage is not None and not storage.is_local:
        for name, _ in storage.list(""):
            out = os.path.join(dst, name)
            os.makedirs(os.path.dirname(out), exist_ok=True)
            with open(out, "wb") as f:
                f.write(storage.read(name))
        return
    for dirpath, dirnames, filenames in os.walk(src):
        rel = os.path.relpath(dirpath, src)
        if rel == "_delta_log" or rel.startswith("_delta_log" + os.sep):
            dirnames[:] = []
            shutil.copytree(dirpath, os.path.join(dst, rel))
            continue
        os.makedirs(os.path.join(dst, rel), exist_ok=True)
        for name in filenames:
            os.symlink(os.path.abspath(os.path.join(dirpath, name)), os.path.join(dst, rel, name))


def check(
    path: str,
    first: str,
    second: str,
    *,
    isolation_level: Optional[str] = None,
    row_level: bool = True,
    storage_options: Optional[Dict[str, str]] = None,
) -> Dict[str, Any]:
    """Run both operations against the table's current state in both commit orders (on scratch
    copies: a table in an object store is copied to the local disk first)."""
    planned = [parse(first), parse(second)]
    table = Table(path, storage_options=storage_options)
    snap = table.snapshot()
    # Row-level concurrency needs deletion vectors; elsewhere the file-level checks decide.
    row_level = row_level and snap.deletion_vectors_enabled
    orders = []
    scratch = tempfile.mkdtemp(prefix="delta-occ-check-")
    try:
        for n, (winner, loser) in enumerate([(planned[0], planned[1]), (planned[1], planned[0])]):
            dst = os.path.join(scratch, str(n))
            clone(table.path, dst, table.handle.storage)
            orders.append(_race(Table(dst), winner, loser, isolation_level, row_level))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return {
        "table": table.path,
        "version": table.version,
        "first": first,
        "second": second,
        "isolation_level": isolation_level or snap.isolation_level.value,
        "row_level": row_level,
        "orders": orders,
        "conflicts": any(o["outcome"] != "no conflict" for o in orders),
    }


def _race(t: Table, winner: Planned, loser: Planned, level: Optional[str], row_level: bool) -> Dict[str, Any]:
    schema = t.snapshot().schema
    txns = []
    for op in (loser, winner):
        txn = t.begin(isolation_level=level, row_level=row_level)
        op.stage(txn, schema)
        txns.append(txn)
    won = txns[1].commit()
    out: Dict[str, Any] = {"winner": winner.text, "loser": loser.text, "winner_version": won.version}
    try:
        r = txns[0].commit()
    except DeltaConcurrentModificationException as e:
        out.update(outcome=type(e).__name__, rule_id=e.rule, explanation=explain.conflict(e), message=str(e))
        return out
    if not r.committed:
        out.update(outcome="no conflict", rule="nothing to commit", explanation=None)
        return out
    detail = explain.commit(t, r.version)
    rules = [c["rule"] for c in detail["checked"]]
    ids = [i for c in detail["checked"] for i in c["rule_ids"][:1]]
    out.update(outcome="no conflict", rule=rules[0] if rules else None, rule_id=ids[0] if ids else None, explanation=detail)
    return out
