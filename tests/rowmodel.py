"""A pure-Python reference model for concurrent DML tests: each operation is staged on a real
transaction and also applied to a dict of rows keyed by their unique id, so the table after a
concurrent run can be compared with the serial application of the committed operations in log
order (issue #4 content invariants). The WriteSerializable reorder is the stress checker's model
(``delta_occ.stress.model``)."""

from __future__ import annotations

import dataclasses
import tempfile
import uuid
from typing import Any, Callable, Dict, List, Optional, Sequence

import pyarrow as pa

import delta_occ as docc
from delta_occ.stress.model import unseen_blind_appends

from helpers import kernel_rows

Rows = Dict[int, Dict[str, Any]]


@dataclasses.dataclass
class Op:
    kind: str  # INSERT, UPDATE, DELETE, MERGE, OPTIMIZE
    stage: Callable[[Any], None]
    apply: Callable[[Rows], None]
    desc: str = ""
    ids: Sequence[int] = ()  # the ids an INSERT adds

    def __repr__(self) -> str:
        return f"{self.kind}({self.desc})"


def insert(rows: List[Dict[str, Any]], schema: pa.Schema) -> Op:
    def apply(m: Rows) -> None:
        for r in rows:
            assert r["id"] not in m, "ids are unique"
            m[r["id"]] = dict(r)

    table = pa.Table.from_pylist(rows, schema=schema)
    ids = [r["id"] for r in rows]
    return Op("INSERT", lambda txn: txn.append(table), apply, f"ids {ids}", ids)


def delete(where: str, pred: Callable[[Dict[str, Any]], bool]) -> Op:
    def apply(m: Rows) -> None:
        for k in [k for k, r in m.items() if pred(r)]:
            del m[k]

    return Op("DELETE", lambda txn: txn.delete(where), apply, where)


def update(where: str, pred: Callable[[Dict[str, Any]], bool], set_: Dict[str, str], fn: Callable[[Dict[str, Any]], None]) -> Op:
    def apply(m: Rows) -> None:
        for r in m.values():
            if pred(r):
                fn(r)

    return Op("UPDATE", lambda txn: txn.update(where, set_), apply, f"{where} SET {set_}")


def merge_update(source: List[Dict[str, Any]], schema: pa.Schema, on: str = "t.id = s.id") -> Op:
    """MERGE ... WHEN MATCHED THEN UPDATE SET x = s.x WHEN NOT MATCHED THEN INSERT *."""

    def apply(m: Rows) -> None:
        for r in source:
            if r["id"] in m:
                m[r["id"]]["x"] = r["x"]
            else:
                m[r["id"]] = dict(r)

    table = pa.Table.from_pylist(source, schema=schema)
    return Op(
        "MERGE",
        lambda txn: txn.merge(table, on, when_matched_update={"x": "s.x"}, when_not_matched_insert=True),
        apply,
        f"ids {[r['id'] for r in source]}",
    )


def merge_update_only(source: List[Dict[str, Any]], schema: pa.Schema, on: str = "t.id = s.id") -> Op:
    """MERGE ... WHEN MATCHED THEN UPDATE SET x = s.x (no insert clause)."""

    def apply(m: Rows) -> None:
        for r in source:
            if r["id"] in m:
                m[r["id"]]["x"] = r["x"]

    table = pa.Table.from_pylist(source, schema=schema)
    return Op("MERGE", lambda txn: txn.merge(table, on, when_matched_update={"x": "s.x"}), apply, f"ids {[r['id'] for r in source]}")


def optimize() -> Op:
    return Op("OPTIMIZE", lambda txn: txn.optimize(), lambda m: None, "")


def make_table(
    *,
    dv: bool,
    partitioned: bool,
    level: str = "WriteSerializable",
    batches: int = 4,
    per_batch: int = 10,
    path: Optional[str] = None,
    where: Any = None,
) -> "tuple[docc.Table, Rows]":
    """A table with `batches` appends of `per_batch` rows: id, x = id, and p = id % 2 when
    partitioned (so every append leaves one small file per partition). ``where`` (the conftest
    fixture) puts it in that storage; otherwise a new local directory."""
    options = None
    if where is not None:
        path, options = where(f"t-{uuid.uuid4().hex[:8]}"), where.options
    path = path or tempfile.mkdtemp(prefix="docc-rl-")
    props = {"delta.isolationLevel": level}
    if dv:
        props["delta.enableDeletionVectors"] = "true"
    t = docc.Table.create(path, schema(partitioned), partition_by=["p"] if partitioned else [], properties=props, storage_options=options)
    model: Rows = {}
    for b in range(batches):
        rows = [row(i, partitioned) for i in range(b * per_batch, (b + 1) * per_batch)]
        t.append(pa.Table.from_pylist(rows, schema=schema(partitioned)))
        model.update({r["id"]: r for r in rows})
    return t, model


def schema(partitioned: bool) -> pa.Schema:
    fields = [("id", pa.int64()), ("x", pa.int64())]
    if partitioned:
        fields.append(("p", pa.int64()))
    return pa.schema(fields)


def row(i: int, partitioned: bool, x: Optional[int] = None) -> Dict[str, Any]:
    r = {"id": i, "x": i if x is None else x}
    if partitioned:
        r["p"] = i % 2
    return r


def table_rows(t: docc.Table) -> List[Dict[str, Any]]:
    t.refresh()
    return sorted(t.snapshot().to_pyarrow().to_pylist(), key=lambda r: r["id"])


def oracle_rows(t: docc.Table) -> List[Dict[str, Any]]:
    """The same table read by an independent reader: delta-kernel-rs when it has deletion
    vectors or column mapping (deltalake 1.6 refuses those) or lives in an object store,
    deltalake otherwise."""
    snap = t.snapshot()
    features = set(snap.protocol.get("reader_features") or [])
    if {"deletionVectors", "columnMapping"} & features or not t.handle.storage.is_local:
        table = kernel_rows(t)  # (a table in an object store: a byte copy of it)
    else:
        import deltalake

        table = deltalake.DeltaTable(t.path).to_pyarrow_table()
    return sorted(table.select(snap.schema.names).to_pylist(), key=lambda r: r["id"])


def serial(base: Rows, ops: Sequence[Op], hidden: Optional[Sequence[Sequence[int]]] = None) -> List[Dict[str, Any]]:
    """The rows after applying ``ops`` in order; ``hidden[k]``: ids operation k does not see
    (they are set aside while it applies and survive it)."""
    m = {k: dict(v) for k, v in base.items()}
    for k, op in enumerate(ops):
        aside = {i: m.pop(i) for i in (hidden[k] if hidden else ()) if i in m}
        op.apply(m)
        m.update(aside)
    return sorted(m.values(), key=lambda r: r["id"])


def unseen_inserts(t: docc.Table, ordered: Sequence[Op]) -> List[List[int]]:
    """Per operation of ``ordered`` (the table's last commits, in log order), the ids of the blind
    INSERTs it did not see under the WriteSerializable reorder (the stress checker's rule, read
    from each commit's readVersion and isolationLevel)."""
    history = sorted(t.history(), key=lambda h: h["version"])[-len(ordered):] if ordered else []
    blind = {h["version"]: op.ids for h, op in zip(history, ordered) if h.get("isBlindAppend")}
    return [
        [i for u in unseen_blind_appends(h.get("isolationLevel", ""), h.get("readVersion"), h["version"], blind) for i in blind[u]]
        for h in history
    ]


def committed_in_log_order(t: docc.Table, results: Dict[int, Op]) -> List[Op]:
    """The operations whose commits are in the log, ordered by version (results: version -> op)."""
    return [results[v] for v in sorted(results)]


def assert_invariants(t: docc.Table, base: Rows, ordered: Sequence[Op], blind_reorder: bool = False) -> None:
    """The table equals the serial application of the committed operations in log order. Under
    WriteSerializable a blind INSERT may serialize after a DML it raced with (concurrency.md §2:
    the inserted rows survive), so with `blind_reorder` each operation is applied without the rows
    of the blind INSERTs it did not see (``unseen_inserts``). Also: ids unique (nothing
    duplicated)."""
    got = table_rows(t)
    assert oracle_rows(t) == got, "an independent reader sees different rows than delta-occ"
    ids = [r["id"] for r in got]
    assert len(ids) == len(set(ids)), f"duplicated rows: {sorted(i for i in ids if ids.count(i) > 1)}"
    want = serial(base, ordered, unseen_inserts(t, ordered) if blind_reorder else None)
    assert got == want, f"table differs from the serial application of {list(ordered)}"
