"""Embedded engine one-call operations (Table.append / overwrite / delete / update / merge /
optimize), table-driven.

Expected rows come from an independent pure-Python model: the same operation applied to a list of
dict rows with Python lambdas that mirror the SQL (three-valued logic: a row qualifies only when
the condition is TRUE). The table written by delta_occ is then read by

* delta_occ itself (``snapshot().to_pyarrow()``), and
* an independent reader: delta-rs (``deltalake``) for tables without deletion vectors,
  delta-kernel-rs (PyPI ``delta-kernel-rust-sharing-wrapper``) for tables with them and for
  column mapping,

and each reader's rows must equal the model's rows. On top of the rows, every DML case checks
the file actions against the model's touched rows: without deletion vectors a touched file is
removed (rewritten); with deletion vectors a partially touched file stays, with exactly the
touched rows added to its DV, and only a file whose every live row is touched is removed.
"""

from __future__ import annotations

import datetime
import json
import os
import pathlib
import re
import shutil
import urllib.parse

import delta_kernel_rust_sharing_wrapper as dk  # test extra: a missing oracle must fail, not skip
import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import delta_occ as docc
from delta_occ import exceptions as exc

# ---------------------------------------------------------------------------------------------
# schema, layouts, base data

SCHEMA = pa.schema([
    ("id", pa.int64()),
    ("p", pa.int32()),
    ("c", pa.string()),
    ("d", pa.date32()),
    ("s", pa.string()),
    ("x", pa.int64()),
])
COLS = SCHEMA.names
DV = {"delta.enableDeletionVectors": "true"}

# name -> (partition columns, properties)
LAYOUTS = {
    "flat": ([], {}),
    "flat-dv": ([], DV),
    "p": (["p"], {}),
    "p-dv": (["p"], DV),
    "dc": (["d", "c"], {}),
    "dc-dv": (["d", "c"], DV),
}
PARTITIONED = [k for k, (parts, _) in LAYOUTS.items() if parts]

# String partition values include characters that need escaping in paths, and NULL.
C_VALUES = ["red", "a b", "x/y", None]
D0 = datetime.date(2024, 1, 1)
D1 = datetime.date(2024, 1, 2)
BASE_APPENDS = 3
ROWS_PER_APPEND = 12


def base_row(i: int) -> dict:
    return {
        "id": i,
        "p": i % 3,
        "c": C_VALUES[i % 4],
        "d": D0 + datetime.timedelta(days=(i // 4) % 2),
        "s": None if i % 7 == 3 else f"name-{i:02d}",
        "x": None if i % 5 == 4 else i * 10,
    }


BASE_ROWS = [base_row(i) for i in range(BASE_APPENDS * ROWS_PER_APPEND)]


def rows_table(rows, schema=SCHEMA) -> pa.Table:
    return pa.Table.from_pylist([{k: r.get(k) for k in schema.names} for r in rows], schema=schema)


def is_dv(layout: str) -> bool:
    return LAYOUTS[layout][1].get("delta.enableDeletionVectors") == "true"


# ---------------------------------------------------------------------------------------------
# readers (oracles)


def kernel_read(root) -> pa.Table:
    """The latest snapshot's rows as read by delta-kernel-rs (same as test_differential_kernel)."""
    uri = pathlib.Path(root).resolve().as_uri() + "/"
    iface = dk.PythonInterface(uri)
    snap = dk.Table(uri).snapshot(iface)
    result = dk.ScanBuilder(snap).build().execute(iface)
    if isinstance(result, pa.Table):
        return result
    if isinstance(result, pa.RecordBatchReader):
        return result.read_all()
    return pa.Table.from_batches(list(result))


def canon(rows) -> list:
    """Rows (dicts or a pyarrow Table) in schema column order, sorted by the unique id."""
    if isinstance(rows, pa.Table):
        rows = rows.to_pylist()
    out = [{k: r[k] for k in COLS} for r in rows]
    ids = [r["id"] for r in out]
    assert len(ids) == len(set(ids)), f"duplicate ids: {sorted(ids)}"
    return sorted(out, key=lambda r: r["id"])


def assert_rows(path, expected, *, dv: bool) -> None:
    """delta_occ and the oracle (delta-kernel-rs with DVs, deltalake without) read exactly the
    model's rows."""
    want = canon(expected)
    assert canon(docc.Table(path).snapshot().to_pyarrow()) == want, "delta_occ read"
    if dv:
        assert canon(kernel_read(path)) == want, "delta-kernel-rs read"
    else:
        assert canon(deltalake.DeltaTable(str(path)).to_pyarrow_table()) == want, "deltalake read"


def file_ids(path, known: dict | None = None) -> dict:
    """Live file -> (set of live ids in it, DV cardinality), computed from the parquet files and
    the DV positions (tables without column mapping: the id column is stored as `id`). `known`:
    a previous result whose per-file physical ids may be reused (data files are immutable)."""
    snap = docc.Table(path).snapshot()
    out = {}
    for f in snap.files().to_pylist():
        card = f["dv_cardinality"] or 0
        if known is not None and f["path"] in known and known[f["path"]][1] == 0 and card == 0:
            out[f["path"]] = known[f["path"]]
            continue
        ids = pq.read_table(pathlib.Path(path) / urllib.parse.unquote(f["path"]), columns=["id"]).column("id").to_pylist()
        dead = set(snap.deleted_rows(f["path"]).to_pylist())
        out[f["path"]] = ({v for pos, v in enumerate(ids) if pos not in dead}, card)
    return out


def assert_file_actions(before: dict, after: dict, touched: set, *, dv: bool) -> None:
    """Without DVs every touched file is rewritten (removed); with DVs a partially touched file
    stays with the touched rows in its DV and only fully touched files go."""
    for path, (ids, card) in before.items():
        hit = ids & touched
        if not hit:
            assert after.get(path) == (ids, card), f"untouched file {path} changed"
        elif dv and hit != ids:
            assert path in after, f"{path}: partially touched file was rewritten on a DV table"
            assert after[path] == (ids - hit, card + len(hit)), f"{path}: DV does not cover exactly the touched rows"
        else:
            assert path not in after, f"{path}: touched file still live"
    if not dv:
        assert all(card == 0 for _, card in after.values()), "deletion vector on a table without DVs"


def assert_commit(t, result, operation: str, version: int, changed: bool = True) -> None:
    """The operation committed `version`; or, when it `changed` nothing, it wrote no commit and
    the log still ends at `version - 1` (docs/guide.md "Policies")."""
    assert result.committed == changed
    version -= not changed
    assert result.version == version
    assert result.operation == operation
    assert isinstance(result.metrics, dict)
    h = t.history()
    assert [e["version"] for e in h] == list(range(version, -1, -1))
    assert h[0]["operation"] == operation or not changed


# ---------------------------------------------------------------------------------------------
# base tables: built once per layout, copied per test


_BASE_FILES: dict = {}


@pytest.fixture(scope="module")
def _bases(tmp_path_factory):
    built = {}

    def get(layout: str) -> pathlib.Path:
        if layout not in built:
            parts, props = LAYOUTS[layout]
            root = tmp_path_factory.mktemp("base") / layout
            t = docc.Table.create(root, SCHEMA, partition_by=parts, properties=props)
            for k in range(BASE_APPENDS):
                chunk = BASE_ROWS[k * ROWS_PER_APPEND:(k + 1) * ROWS_PER_APPEND]
                r = t.append(rows_table(chunk))
                assert r.version == k + 1 and r.operation == "WRITE"
            built[layout] = root
            _BASE_FILES[layout] = file_ids(root)
        return built[layout]

    return get


def _copy(src, dst):
    # data files are immutable: hard-link them; copy everything else (the log may be rewritten)
    if src.endswith(".parquet"):
        os.link(src, dst)
    else:
        shutil.copy2(src, dst)


@pytest.fixture
def table(_bases, tmp_path):
    """(layout) -> (Table on a private copy of the base table, its path)."""

    def make(layout: str):
        dest = tmp_path / layout
        shutil.copytree(_bases(layout), dest, copy_function=_copy)
        return docc.Table(dest), dest

    return make


def base_files(layout: str) -> dict:
    """file_ids() of the base table of a layout (the copies have the same relative paths)."""
    return _BASE_FILES[layout]


def test_base_tables_read_back(table):
    for layout in LAYOUTS:
        t, path = table(layout)
        assert t.version == BASE_APPENDS
        assert_rows(path, BASE_ROWS, dv=is_dv(layout))
        assert t.snapshot().partition_columns == LAYOUTS[layout][0]
        assert file_ids(path) == base_files(layout)
        assert sum(len(ids) for ids, _ in base_files(layout).values()) == len(BASE_ROWS)


# ---------------------------------------------------------------------------------------------
# model helpers (SQL three-valued logic by hand)


def nn(*vals) -> bool:
    return all(v is not None for v in vals)


def like(value, pattern: str) -> bool:
    if value is None:
        return False
    rx = "".join(".*" if ch == "%" else "." if ch == "_" else re.escape(ch) for ch in pattern)
    return re.fullmatch(rx, value, re.S) is not None


def add_(a, b):
    return a + b if nn(a, b) else None


def concat_(*parts):
    return "".join(parts) if nn(*parts) else None


# ---------------------------------------------------------------------------------------------
# DELETE

DELETE_CASES = [
    ("in-list", "id IN (1, 5, 9, 33)", lambda r: r["id"] in (1, 5, 9, 33)),
    ("not-in-and", "id NOT IN (0, 3, 6) AND p = 0", lambda r: r["id"] not in (0, 3, 6) and r["p"] == 0),
    ("between", "x BETWEEN 50 AND 150", lambda r: nn(r["x"]) and 50 <= r["x"] <= 150),
    ("not-between", "x NOT BETWEEN 20 AND 300", lambda r: nn(r["x"]) and not 20 <= r["x"] <= 300),
    ("is-null", "s IS NULL", lambda r: r["s"] is None),
    ("is-not-null-and", "x IS NOT NULL AND id >= 30", lambda r: nn(r["x"]) and r["id"] >= 30),
    ("like-prefix", "s LIKE 'name-1%'", lambda r: like(r["s"], "name-1%")),
    ("like-underscore", "s LIKE 'name-_5'", lambda r: like(r["s"], "name-_5")),
    ("not-like", "s NOT LIKE '%0%'", lambda r: nn(r["s"]) and not like(r["s"], "%0%")),
    ("int-partition", "p = 1", lambda r: r["p"] == 1),
    ("string-escaped", "c = 'x/y'", lambda r: r["c"] == "x/y"),
    ("string-in", "c IN ('a b', 'red')", lambda r: r["c"] in ("a b", "red")),
    ("string-null", "c IS NULL", lambda r: r["c"] is None),
    ("date", "d = DATE '2024-01-02'", lambda r: r["d"] == D1),
    ("or-mixed", "c = 'a b' OR x > 300", lambda r: r["c"] == "a b" or (nn(r["x"]) and r["x"] > 300)),
    ("not-null-semantics", "NOT (x < 100)", lambda r: nn(r["x"]) and not r["x"] < 100),
    # <=> is true when both sides are NULL or both are equal (never NULL itself).
    ("null-safe-null", "x <=> NULL", lambda r: r["x"] is None),
    ("null-safe-value", "x <=> 120", lambda r: r["x"] == 120),
    ("all", None, lambda r: True),
    ("none", "id > 1000", lambda r: False),
]


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("name, where, pred", DELETE_CASES, ids=[c[0] for c in DELETE_CASES])
def test_delete(table, layout, name, where, pred):
    t, path = table(layout)
    dv = is_dv(layout)
    before = base_files(layout)
    r = t.delete(where)
    assert_commit(t, r, "DELETE", BASE_APPENDS + 1, changed=any(pred(row) for row in BASE_ROWS))
    expected = [row for row in BASE_ROWS if not pred(row)]
    assert_rows(path, expected, dv=dv)
    touched = {row["id"] for row in BASE_ROWS if pred(row)}
    assert_file_actions(before, file_ids(path, before), touched, dv=dv)


# ---------------------------------------------------------------------------------------------
# UPDATE

UPDATE_CASES = [
    ("arith", "id < 10", {"x": "x + 1"}, lambda r: r["id"] < 10, lambda r: {"x": add_(r["x"], 1)}),
    ("string-literal", "p = 2", {"s": "'abc'"}, lambda r: r["p"] == 2, lambda r: {"s": "abc"}),
    (
        "case-when-and-arith",
        "x IS NOT NULL",
        {"s": "CASE WHEN x > 200 THEN 'big' WHEN x > 100 THEN 'mid' ELSE 'small' END", "x": "x * 2"},
        lambda r: nn(r["x"]),
        lambda r: {"s": "big" if r["x"] > 200 else "mid" if r["x"] > 100 else "small", "x": r["x"] * 2},
    ),
    (
        "case-null-all-rows",
        None,
        {"x": "CASE WHEN x IS NULL THEN -1 ELSE x - id END"},
        lambda r: True,
        lambda r: {"x": -1 if r["x"] is None else r["x"] - r["id"]},
    ),
    ("upper-like", "s LIKE '%-2%'", {"s": "upper(s)"}, lambda r: like(r["s"], "%-2%"), lambda r: {"s": r["s"].upper()}),
    (
        "concat-null-propagates",
        "id BETWEEN 3 AND 8",
        {"s": "concat(s, '-', c)"},
        lambda r: 3 <= r["id"] <= 8,
        lambda r: {"s": concat_(r["s"], "-", r["c"])},
    ),
    (
        "old-values-on-right-side",
        "id < 5",
        {"x": "id", "id": "id + 100"},
        lambda r: r["id"] < 5,
        lambda r: {"x": r["id"], "id": r["id"] + 100},
    ),
    ("move-int-partition", "id IN (0, 1, 2, 3)", {"p": "p + 10"}, lambda r: r["id"] in (0, 1, 2, 3), lambda r: {"p": r["p"] + 10}),
    ("move-string-partition", "x > 250", {"c": "'moved'"}, lambda r: nn(r["x"]) and r["x"] > 250, lambda r: {"c": "moved"}),
    ("null-string-partition", "c = 'red'", {"c": "NULL", "d": "DATE '2024-03-01'"}, lambda r: r["c"] == "red",
     lambda r: {"c": None, "d": datetime.date(2024, 3, 1)}),
    ("set-null", "s IS NOT NULL AND p = 0", {"x": "NULL"}, lambda r: nn(r["s"]) and r["p"] == 0, lambda r: {"x": None}),
    ("no-match", "id > 1000", {"x": "0"}, lambda r: False, lambda r: {"x": 0}),
]


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("name, where, set_, pred, assign", UPDATE_CASES, ids=[c[0] for c in UPDATE_CASES])
def test_update(table, layout, name, where, set_, pred, assign):
    t, path = table(layout)
    dv = is_dv(layout)
    before = base_files(layout)
    r = t.update(where, set_)
    assert_commit(t, r, "UPDATE", BASE_APPENDS + 1, changed=any(pred(row) for row in BASE_ROWS))
    expected = [{**row, **assign(row)} if pred(row) else row for row in BASE_ROWS]
    assert_rows(path, expected, dv=dv)
    touched = {row["id"] for row in BASE_ROWS if pred(row)}
    assert_file_actions(before, file_ids(path, before), touched, dv=dv)


# ---------------------------------------------------------------------------------------------
# MERGE


class DuplicateMatch(Exception):
    pass


def model_merge(target, source, on, *, update=None, delete=None, insert=None):
    """Delta MERGE semantics on dict rows: `on(t, s)`; `delete(t, s)` (True when the delete
    clause applies); `update(t, s)` -> changed columns; `insert(s)` -> new row.
    Returns (rows, touched target ids)."""
    out, touched, matched_src = [], set(), set()
    for t in target:
        hits = [i for i, s in enumerate(source) if on(t, s)]
        if len(hits) > 1:
            raise DuplicateMatch(t["id"])
        if not hits:
            out.append(t)
            continue
        s = source[hits[0]]
        matched_src.add(hits[0])
        if delete is not None and delete(t, s):
            touched.add(t["id"])
            continue
        if update is not None:
            touched.add(t["id"])
            out.append({**t, **update(t, s)})
        else:
            out.append(t)
    if insert is not None:
        out.extend(insert(s) for i, s in enumerate(source) if i not in matched_src)
    return out, touched


def _new_row(i, **kw):
    return {**base_row(i), "s": f"new-{i}", "x": i * 7, **kw}


def _src(cols: dict) -> pa.Table:
    return pa.table(cols)


MERGE_CASES = [
    dict(
        name="upsert",
        source=lambda: rows_table([_new_row(3), _new_row(7, x=None), _new_row(40), _new_row(41, c=None)]),
        kw=dict(on="t.id = s.id", when_matched_update={"s": "s.s", "x": "s.x"}, when_not_matched_insert=True),
        model=dict(on=lambda t, s: t["id"] == s["id"], update=lambda t, s: {"s": s["s"], "x": s["x"]},
                   insert=lambda s: dict(s)),
    ),
    dict(
        name="update-both-sides",
        source=lambda: _src({"id": [1, 2, 30, 99], "x": [5, None, 7, 1]}),
        kw=dict(on="s.id = t.id", when_matched_update={"x": "t.x + s.x", "s": "concat(t.s, '+')"}),
        model=dict(on=lambda t, s: t["id"] == s["id"],
                   update=lambda t, s: {"x": add_(t["x"], s["x"]), "s": concat_(t["s"], "+")}),
    ),
    dict(
        name="delete-with-condition-else-update",
        source=lambda: _src({"id": list(range(10)), "x": [i * 20 if i != 6 else None for i in range(10)]}),
        kw=dict(on="t.id = s.id", when_matched_delete="s.x > 100", when_matched_update={"s": "'kept'"}),
        model=dict(on=lambda t, s: t["id"] == s["id"], delete=lambda t, s: nn(s["x"]) and s["x"] > 100,
                   update=lambda t, s: {"s": "kept"}),
    ),
    dict(
        name="delete-all-matched",
        source=lambda: _src({"id": [2, 4, 6, 50]}),
        kw=dict(on="t.id = s.id", when_matched_delete=True),
        model=dict(on=lambda t, s: t["id"] == s["id"], delete=lambda t, s: True),
    ),
    dict(
        name="delete-condition-on-target",
        source=lambda: _src({"id": list(range(20))}),
        kw=dict(on="t.id = s.id", when_matched_delete="t.p = 1 OR t.s IS NULL"),
        model=dict(on=lambda t, s: t["id"] == s["id"], delete=lambda t, s: t["p"] == 1 or t["s"] is None),
    ),
    dict(
        name="insert-dict-expressions",
        source=lambda: _src({"id": [5, 60, 61, 62], "name": ["e", "f", None, "h"], "amount": [1, 2, 3, None]}),
        kw=dict(on="t.id = s.id", when_not_matched_insert={
            "id": "s.id", "s": "upper(s.name)", "x": "s.amount * 10 + 1", "p": "1",
            "d": "DATE '2024-01-02'"}),  # c not given -> NULL
        model=dict(on=lambda t, s: t["id"] == s["id"], insert=lambda s: {
            "id": s["id"], "s": None if s["name"] is None else s["name"].upper(),
            "x": None if s["amount"] is None else s["amount"] * 10 + 1, "p": 1, "c": None, "d": D1}),
    ),
    dict(
        name="insert-case-expression",
        source=lambda: _src({"id": [70, 71, 72], "v": [5, 500, None]}),
        kw=dict(on="t.id = s.id", when_not_matched_insert={
            "id": "s.id", "c": "CASE WHEN s.v > 100 THEN 'big' ELSE 'red' END", "x": "s.v", "p": "2",
            "d": "DATE '2024-01-01'", "s": "'ins'"}),
        model=dict(on=lambda t, s: t["id"] == s["id"], insert=lambda s: {
            "id": s["id"], "c": "big" if nn(s["v"]) and s["v"] > 100 else "red", "x": s["v"], "p": 2, "d": D0,
            "s": "ins"}),
    ),
    dict(
        name="on-target-only-conjunct",
        source=lambda: _src({"id": list(range(12)), "x": [-i for i in range(12)]}),
        kw=dict(on="t.id = s.id AND t.p = 1", when_matched_update={"x": "s.x"}),
        model=dict(on=lambda t, s: t["id"] == s["id"] and t["p"] == 1, update=lambda t, s: {"x": s["x"]}),
    ),
    dict(
        name="aliases",
        source=lambda: _src({"key": [8, 9, 80], "val": ["v8", "v9", "v80"]}),
        kw=dict(on="tgt.id = src.key", source_alias="src", target_alias="tgt",
                when_matched_update={"s": "src.val", "x": "tgt.x * 3"},
                when_not_matched_insert={"id": "src.key", "s": "src.val", "c": "'red'", "p": "0", "d": "DATE '2024-01-01'"}),
        model=dict(on=lambda t, s: t["id"] == s["key"],
                   update=lambda t, s: {"s": s["val"], "x": None if t["x"] is None else t["x"] * 3},
                   insert=lambda s: {"id": s["key"], "s": s["val"], "c": "red", "p": 0, "d": D0, "x": None}),
    ),
    dict(
        name="source-key-int32-extra-column-insert-all",
        source=lambda: pa.table({
            "id": pa.array([11, 90], pa.int32()), "p": pa.array([2, 1], pa.int32()), "c": ["a b", "x/y"],
            "d": pa.array([D0, D1], pa.date32()), "s": ["u11", "u90"], "x": [1, 2], "w": ["ignored", "ignored"]}),
        kw=dict(on="t.id = s.id", when_matched_update={"s": "s.s"}, when_not_matched_insert=True),
        model=dict(on=lambda t, s: t["id"] == s["id"], update=lambda t, s: {"s": s["s"]},
                   insert=lambda s: {k: s[k] for k in COLS}),
    ),
    dict(
        name="non-equi-on",
        source=lambda: _src({"v": [1, 2, 30, 1000]}),
        kw=dict(on="t.x = s.v * 10", when_matched_update={"s": "'hit'"}),
        model=dict(on=lambda t, s: t["x"] is not None and t["x"] == s["v"] * 10, update=lambda t, s: {"s": "hit"}),
    ),
    dict(
        name="duplicate-key-filtered-by-condition",
        source=lambda: _src({"id": [5, 5, 6], "flag": [1, 0, 1], "x": [111, 222, 333]}),
        kw=dict(on="t.id = s.id AND s.flag = 1", when_matched_update={"x": "s.x"}),
        model=dict(on=lambda t, s: t["id"] == s["id"] and s["flag"] == 1, update=lambda t, s: {"x": s["x"]}),
    ),
    dict(
        name="update-partition-columns",
        source=lambda: _src({"id": [0, 13, 26], "np": [7, 8, 9]}),
        kw=dict(on="t.id = s.id", when_matched_update={"p": "s.np", "c": "'merged'", "d": "DATE '2025-05-05'"}),
        model=dict(on=lambda t, s: t["id"] == s["id"],
                   update=lambda t, s: {"p": s["np"], "c": "merged", "d": datetime.date(2025, 5, 5)}),
    ),
    dict(
        name="no-source-rows-match",
        source=lambda: _src({"id": [500, 501]}),
        kw=dict(on="t.id = s.id", when_matched_delete=True),
        model=dict(on=lambda t, s: t["id"] == s["id"], delete=lambda t, s: True),
    ),
]


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("case", MERGE_CASES, ids=[c["name"] for c in MERGE_CASES])
def test_merge(table, layout, case):
    t, path = table(layout)
    dv = is_dv(layout)
    source = case["source"]()
    expected, touched = model_merge(BASE_ROWS, source.to_pylist(), **case["model"])
    before = base_files(layout)
    r = t.merge(source, **case["kw"])
    assert_commit(t, r, "MERGE", BASE_APPENDS + 1, changed=bool(touched) or len(expected) != len(BASE_ROWS))
    assert_rows(path, expected, dv=dv)
    assert_file_actions(before, file_ids(path, before), touched, dv=dv)


DUPLICATE_SOURCES = [
    ("same-key-twice", _src({"id": [5, 5], "x": [1, 2]}), "t.id = s.id", lambda t, s: t["id"] == s["id"]),
    ("one-of-many-keys", _src({"id": [1, 2, 3, 2, 40], "x": [1, 2, 3, 4, 5]}), "t.id = s.id",
     lambda t, s: t["id"] == s["id"]),
    ("non-equi", _src({"lo": [0, 3], "x": [1, 2]}), "t.id >= s.lo AND t.id < s.lo + 5",
     lambda t, s: s["lo"] <= t["id"] < s["lo"] + 5),
]


@pytest.mark.parametrize("layout", ["flat", "p-dv", "dc"])
@pytest.mark.parametrize("name, source, on, model_on", DUPLICATE_SOURCES, ids=[c[0] for c in DUPLICATE_SOURCES])
def test_merge_target_row_matching_two_source_rows_raises(table, layout, name, source, on, model_on):
    with pytest.raises(DuplicateMatch):  # the model agrees this is the error case
        model_merge(BASE_ROWS, source.to_pylist(), model_on, update=lambda t, s: {})
    t, path = table(layout)
    with pytest.raises(exc.DeltaOccError) as info:
        t.merge(source, on, when_matched_update={"x": "s.x"})
    assert re.search(r"more than one source row", str(info.value)), str(info.value)
    assert t.refresh() == BASE_APPENDS and docc.Table(path).version == BASE_APPENDS
    assert_rows(path, BASE_ROWS, dv=is_dv(layout))


# ---------------------------------------------------------------------------------------------
# OVERWRITE


def _nr(ids, **kw):
    return [_new_row(i, **kw) for i in ids]


OVERWRITE_CASES = [
    ("full", None, lambda: _nr([100, 101, 102, 103, 104]), lambda r: True),
    ("replace-int-partition", "p = 1", lambda: _nr([100, 101, 102], p=1), lambda r: r["p"] == 1),
    ("replace-data-column", "x >= 200", lambda: _nr([100, 101], x=500), lambda r: nn(r["x"]) and r["x"] >= 200),
    ("replace-string", "c = 'a b'", lambda: _nr([100, 101, 102], c="a b"), lambda r: r["c"] == "a b"),
    ("replace-null-string", "c IS NULL", lambda: _nr([100], c=None), lambda r: r["c"] is None),
    ("replace-date", "d = DATE '2024-01-01'", lambda: _nr([100, 105], d=D0), lambda r: r["d"] == D0),
    ("replace-with-nothing", "p = 2", lambda: [], lambda r: r["p"] == 2),
    ("replace-matching-nothing", "id > 1000", lambda: _nr([2000, 2001]), lambda r: False),
    ("replace-in-and", "p IN (0, 2) AND x < 100", lambda: _nr([100, 101], p=2, x=1), lambda r: r["p"] in (0, 2) and nn(r["x"]) and r["x"] < 100),
]


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("name, replace_where, new, pred", OVERWRITE_CASES, ids=[c[0] for c in OVERWRITE_CASES])
def test_overwrite(table, layout, name, replace_where, new, pred):
    t, path = table(layout)
    dv = is_dv(layout)
    new_rows = new()
    before = base_files(layout)
    r = t.overwrite(rows_table(new_rows), replace_where)
    assert_commit(t, r, "WRITE", BASE_APPENDS + 1)
    expected = [row for row in BASE_ROWS if not pred(row)] + new_rows
    assert_rows(path, expected, dv=dv)
    touched = {row["id"] for row in BASE_ROWS if pred(row)}
    assert_file_actions(before, {k: v for k, v in file_ids(path, before).items() if k in before}, touched, dv=dv)


def test_overwrite_conforms_columns_by_name(table):
    """Columns in another order, widening types (int32 id, int16 partition p) and a missing
    nullable column (s)."""
    t, path = table("p")
    data = pa.table({"x": [1, 2], "d": pa.array([D0, D1], pa.date32()), "c": ["red", None],
                     "p": pa.array([1, 1], pa.int16()), "id": pa.array([100, 101], pa.int32())})
    t.overwrite(data, "p = 1")
    expected = [r for r in BASE_ROWS if r["p"] != 1] + [
        {"id": 100, "p": 1, "c": "red", "d": D0, "s": None, "x": 1},
        {"id": 101, "p": 1, "c": None, "d": D1, "s": None, "x": 2}]
    assert_rows(path, expected, dv=False)


VIOLATIONS = [
    ("int-partition", "p = 1", _nr([100, 101], p=1) + _nr([102], p=2)),
    ("data-column", "x >= 200", _nr([100], x=10)),
    ("null-not-matching", "x >= 200", _nr([100], x=None)),
    ("string", "c = 'red'", _nr([100], c="a b")),
]


@pytest.mark.parametrize("layout", ["flat", "p", "dc-dv"])
@pytest.mark.parametrize("name, replace_where, new_rows", VIOLATIONS, ids=[c[0] for c in VIOLATIONS])
def test_overwrite_replace_where_rejects_rows_outside(table, layout, name, replace_where, new_rows):
    t, path = table(layout)
    with pytest.raises(exc.DeltaOccError):
        t.overwrite(rows_table(new_rows), replace_where)
    assert t.refresh() == BASE_APPENDS
    assert_rows(path, BASE_ROWS, dv=is_dv(layout))


DYNAMIC_CASES = [
    ("one-existing-one-new", lambda: _nr([100, 101], p=0, c="red", d=D0) + _nr([102], p=7, c="new", d=D1)),
    ("null-string-partition", lambda: _nr([100], p=2, c=None, d=D1)),
    ("several", lambda: _nr([100], p=1, c="x/y", d=D0) + _nr([101], p=2, c="a b", d=D1) + _nr([102], p=2, c="red", d=D0)),
    ("empty", lambda: []),
]


@pytest.mark.parametrize("layout", PARTITIONED)
@pytest.mark.parametrize("name, new", DYNAMIC_CASES, ids=[c[0] for c in DYNAMIC_CASES])
def test_overwrite_dynamic_partitions(table, layout, name, new):
    t, path = table(layout)
    parts = LAYOUTS[layout][0]
    new_rows = new()
    keys = {tuple(r[c] for c in parts) for r in new_rows}
    r = t.overwrite(rows_table(new_rows), dynamic_partitions=True)
    assert_commit(t, r, "WRITE", BASE_APPENDS + 1, changed=bool(new_rows))
    expected = [row for row in BASE_ROWS if tuple(row[c] for c in parts) not in keys] + new_rows
    assert_rows(path, expected, dv=is_dv(layout))
    # whole partitions are replaced: no DV, the replaced partitions' old files are gone
    files = docc.Table(path).snapshot().files().to_pylist()
    assert all((f["dv_cardinality"] or 0) == 0 for f in files)


def test_overwrite_dynamic_partitions_needs_partitioned_table(table):
    t, path = table("flat")
    with pytest.raises(exc.InvalidArgumentError):
        t.overwrite(rows_table(_nr([100])), dynamic_partitions=True)
    assert t.refresh() == BASE_APPENDS


# ---------------------------------------------------------------------------------------------
# APPEND


APPEND_CASES = [
    ("rows", lambda: rows_table(_nr([100, 101, 102]))),
    ("empty", lambda: rows_table([])),
    ("record-batch-reader", lambda: pa.RecordBatchReader.from_batches(
        SCHEMA, rows_table(_nr([100, 101, 102, 103])).to_batches(max_chunksize=2))),
    ("missing-nullable-columns", lambda: pa.table({"id": [100, 101], "p": pa.array([1, 2], pa.int32()),
                                                   "d": pa.array([D0, D1], pa.date32())})),
]


@pytest.mark.parametrize("layout", ["flat", "p-dv", "dc"])
@pytest.mark.parametrize("name, data", APPEND_CASES, ids=[c[0] for c in APPEND_CASES])
def test_append(table, layout, name, data):
    t, path = table(layout)
    d = data()
    new_rows = (d.read_all() if isinstance(d, pa.RecordBatchReader) else d).to_pylist()
    new_rows = [{k: r.get(k) for k in COLS} for r in new_rows]
    before = base_files(layout)
    r = t.append(data())
    assert_commit(t, r, "WRITE", BASE_APPENDS + 1, changed=bool(new_rows))
    assert_rows(path, BASE_ROWS + new_rows, dv=is_dv(layout))
    after = file_ids(path)
    assert {k: v for k, v in after.items() if k in before} == before  # blind append: nothing removed
    assert sum(len(ids) for k, (ids, _) in after.items() if k not in before) == len(new_rows)


# ---------------------------------------------------------------------------------------------
# OPTIMIZE


def _small_files_table(table, layout, extra_appends=3):
    t, path = table(layout)
    rows = list(BASE_ROWS)
    for k in range(extra_appends):
        chunk = _nr(range(100 + 10 * k, 106 + 10 * k))
        t.append(rows_table(chunk))
        rows += chunk
    return t, path, rows


def _partition_key(f):
    pv = f["partition_values"] or []
    return tuple(sorted(pv.items())) if isinstance(pv, dict) else tuple(sorted(pv))


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_optimize_compacts_and_keeps_rows(table, layout):
    t, path, rows = _small_files_table(table, layout)
    dv = is_dv(layout)
    before = t.snapshot().files().to_pylist()
    version = t.version
    r = t.optimize()
    assert_commit(t, r, "OPTIMIZE", version + 1)
    after = t.snapshot().files().to_pylist()
    assert len(after) < len(before)
    per_part = {}
    for f in after:
        per_part.setdefault(_partition_key(f), []).append(f)
    assert all(len(v) == 1 for v in per_part.values()), "default target size: one file per partition"
    assert {_partition_key(f) for f in before} == set(per_part)
    new = [f for f in after if f["path"] not in {b["path"] for b in before}]
    assert new and all(f["data_change"] is False for f in new)
    assert sum(f["num_records"] for f in after) == len(rows)
    assert_rows(path, rows, dv=dv)


@pytest.mark.parametrize("layout", ["flat-dv", "p-dv", "dc-dv"])
@pytest.mark.parametrize("where", ["id IN (0, 1, 5, 14, 22, 35)", "x > 120"])
def test_optimize_removes_deleted_rows_physically(table, layout, where):
    t, path = table(layout)
    t.delete(where)
    pred = {"id IN (0, 1, 5, 14, 22, 35)": lambda r: r["id"] in (0, 1, 5, 14, 22, 35),
            "x > 120": lambda r: nn(r["x"]) and r["x"] > 120}[where]
    live = [r for r in BASE_ROWS if not pred(r)]
    assert any((f["dv_cardinality"] or 0) > 0 for f in t.snapshot().files().to_pylist()), "setup: DVs expected"
    r = t.optimize()
    assert r.operation == "OPTIMIZE"
    files = t.snapshot().files().to_pylist()
    assert all(f["deletion_vector"] is None and (f["dv_cardinality"] or 0) == 0 for f in files)
    assert sum(f["num_records"] for f in files) == len(live)
    for f in files:
        n = pq.read_metadata(pathlib.Path(path) / urllib.parse.unquote(f["path"])).num_rows
        assert n == f["num_records"] == json.loads(f["stats"])["numRecords"], f["path"]
    assert_rows(path, live, dv=True)


def _reference_bins(files, target):
    """OPTIMIZE's bin-packing as the engine ran it in Python before the core took it over (the
    reference model): per partition in order of first appearance, files below ``target`` bytes or
    with a DV, packed in order into bins closing at ``target`` bytes; lone files without a DV
    dropped."""
    groups: dict = {}
    for f in files:
        groups.setdefault(tuple(f["partition_values"] or []), []).append(f)
    bins = []
    for members in groups.values():
        current, size = [], 0
        for f in (f for f in members if f["size"] < target or (f["dv_cardinality"] or 0) > 0):
            current.append(f)
            size += f["size"]
            if size >= target:
                bins.append(current)
                current, size = [], 0
        if current:
            bins.append(current)
    return [[f["path"] for f in b] for b in bins if len(b) > 1 or (b[0]["dv_cardinality"] or 0) > 0]


@pytest.mark.parametrize("seed", range(6))
def test_compaction_bins_follow_the_reference_packing(tmp_path, seed):
    import random

    rng = random.Random(seed)
    schema = pa.schema([("p", pa.string()), ("x", pa.int64())])
    t = docc.Table.create(str(tmp_path / "t"), schema, partition_by=["p"] if seed % 2 else None,
                          properties={"delta.enableDeletionVectors": str(seed < 4).lower()})
    for _ in range(12):
        n = rng.randint(1, 300)
        t.append(pa.table({"p": [rng.choice("abc")] * n, "x": [rng.randint(0, 999) for _ in range(n)]}, schema=schema))
    t.delete("x < 50")
    snap = t.snapshot()
    files = snap.files(["path", "partition_values", "size", "dv_cardinality"]).to_pylist()
    sizes = sorted(f["size"] for f in files)
    assert seed >= 4 or any(f["dv_cardinality"] for f in files)
    subset = sorted(rng.sample(range(len(files)), len(files) // 2))
    for target in [sizes[0], sizes[len(sizes) // 2], sizes[-1] + 1, sum(sizes)]:
        got = [[files[i]["path"] for i in b] for b in snap.handle.compaction_bins(None, target)]
        assert got == _reference_bins(files, target), target
        got = [[files[i]["path"] for i in b] for b in snap.handle.compaction_bins(subset, target)]
        assert got == _reference_bins([files[i] for i in subset], target), target
    with pytest.raises(exc.InvalidArgumentError, match=f"index {len(files)} is out of range"):
        snap.handle.compaction_bins([0, len(files)], 10)


@pytest.mark.parametrize("layout", ["p", "p-dv"])
def test_optimize_where_limits_to_partition(table, layout):
    t, path, rows = _small_files_table(table, layout)
    before = t.snapshot().files().to_pylist()
    t.optimize(where="p = 1")
    after = t.snapshot().files().to_pylist()
    untouched_before = {f["path"] for f in before if dict(_partition_key(f))["p"] != "1"}
    untouched_after = {f["path"] for f in after if dict(_partition_key(f))["p"] != "1"}
    assert untouched_before == untouched_after
    assert len([f for f in after if dict(_partition_key(f))["p"] == "1"]) == 1
    assert_rows(path, rows, dv=is_dv(layout))


@pytest.mark.parametrize("layout", ["flat", "p-dv"])
@pytest.mark.parametrize("setup", ["compacted", "empty", "no-match"])
def test_optimize_with_nothing_to_compact_writes_no_commit(table, layout, setup):
    """delta-spark's OPTIMIZE commits only when it rewrote files; an empty commit would cost a
    version and could even conflict (DeleteRead) with a concurrent delete."""
    t, path, rows = _small_files_table(table, layout)
    if setup == "compacted":
        t.optimize()
    where = "id < -1000" if setup == "no-match" else None
    if setup == "empty":
        t.delete()
        t.optimize()
        rows = []
    version = t.version
    r = t.optimize(where=where)
    assert (r.committed, r.version, r.read_version, r.attempts) == (False, version, version, 0)
    assert r.operation == "OPTIMIZE" and r.metrics["numRemovedFiles"] == "0"
    assert docc.Table(path).version == version
    assert_rows(path, rows, dv=is_dv(layout))


# ---------------------------------------------------------------------------------------------
# statistics written by the engine

LONG = "z" * 40  # longer than Delta's 32-character string-statistics prefix


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_stats_match_file_data(table, layout):
    t, path = table(layout)
    t.append(rows_table(_nr([200, 201], s=LONG) + _nr([202], s=None, x=None)))
    t.update("id < 6", {"x": "x * 100", "s": "concat(s, '!')"})
    t.delete("id IN (7, 8, 20)")
    t.merge(rows_table(_nr([9, 300])), "t.id = s.id", when_matched_update={"s": "'zz-top'"}, when_not_matched_insert=True)
    t.overwrite(rows_table(_nr([400, 401], p=2, x=555)), "p = 2 AND x > 300")
    parts = set(LAYOUTS[layout][0])
    files = t.snapshot().files().to_pylist()
    assert files
    for f in files:
        data = pq.read_table(pathlib.Path(path) / urllib.parse.unquote(f["path"]))
        stats = json.loads(f["stats"])
        where = f"{f['path']}: {f['stats']}"
        assert stats["numRecords"] == data.num_rows == f["num_records"], where
        assert set(data.column_names) == set(COLS) - parts, where
        for col in ("id", "x", "s", "p", "c"):
            if col in parts:
                continue
            values = [v for v in data.column(col).to_pylist() if v is not None]
            assert stats["nullCount"][col] == data.num_rows - len(values), where
            if not values:
                assert col not in stats.get("minValues", {}) and col not in stats.get("maxValues", {}), where
                continue
            lo, hi = min(values), max(values)
            if col == "s" and (len(lo) > 32 or len(hi) > 32):
                # truncated string stats must still bound the data
                # truncated string stats may be left out; when present they must still bound the data
                assert col not in stats["minValues"] or stats["minValues"][col] <= lo, where
                assert col not in stats["maxValues"] or stats["maxValues"][col] >= hi, where
                continue
            assert stats["minValues"][col] == lo, where
            assert stats["maxValues"][col] == hi, where


# ---------------------------------------------------------------------------------------------
# errors: nothing is committed


ERROR_CASES = [
    ("update-set-unknown-column", lambda t: t.update("id = 1", {"nope": "1"}), None),
    ("update-where-unknown-column", lambda t: t.update("nope = 1", {"x": "1"}), None),
    ("update-expr-unknown-column", lambda t: t.update("id = 1", {"x": "nope + 1"}), None),
    ("update-expr-unknown-column-no-match", lambda t: t.update("id > 1000", {"x": "nope + 1"}), None),
    ("update-where-syntax", lambda t: t.update("id = = 1", {"x": "1"}), None),
    ("delete-where-unknown-column", lambda t: t.delete("nope IS NULL"), None),
    ("delete-where-unknown-column-pruned", lambda t: t.delete("p = 99 AND nope = 1"), None),
    ("merge-on-unknown-column", lambda t: t.merge(_src({"id": [1]}), "t.nope = s.id", when_matched_delete=True), None),
    ("merge-update-unknown-source-column", lambda t: t.merge(_src({"id": [1]}), "t.id = s.id",
                                                              when_matched_update={"x": "s.nope"}), None),
    ("merge-update-unknown-target-column", lambda t: t.merge(_src({"id": [1]}), "t.id = s.id",
                                                              when_matched_update={"nope": "s.id"}), None),
    ("merge-insert-unknown-column", lambda t: t.merge(_src({"id": [1000]}), "t.id = s.id",
                                                      when_not_matched_insert={"nope": "s.id"}), None),
    ("overwrite-replace-where-unknown-column", lambda t: t.overwrite(rows_table(_nr([100])), "nope = 1"), None),
    ("append-extra-column", lambda t: t.append(rows_table(_nr([100]), SCHEMA.append(pa.field("extra", pa.int64())))),
     exc.InvalidArgumentError),
]


@pytest.mark.parametrize("layout", ["flat", "p-dv"])
@pytest.mark.parametrize("name, op, error", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_errors_commit_nothing(table, layout, name, op, error):
    t, path = table(layout)
    with pytest.raises((exc.PredicateError, exc.InvalidArgumentError)) as info:
        op(t)
    assert isinstance(info.value, exc.DeltaOccError)
    if error is not None:
        assert isinstance(info.value, error)
    assert t.refresh() == BASE_APPENDS
    assert_rows(path, BASE_ROWS, dv=is_dv(layout))


@pytest.mark.parametrize("op", [
    pytest.param(lambda t: t.delete("nope = 1"), id="delete"),
    pytest.param(lambda t: t.update("nope = 1", {"x": "1"}), id="update-where"),
    pytest.param(lambda t: t.update(None, {"nope": "1"}), id="update-set"),
    pytest.param(lambda t: t.update(None, {"x": "nope"}), id="update-expr"),
])
def test_unknown_column_on_empty_table_raises(tmp_path, op):
    """The column check does not depend on there being rows to evaluate."""
    t = docc.Table.create(tmp_path / "t", SCHEMA)
    with pytest.raises((exc.PredicateError, exc.InvalidArgumentError)):
        op(t)
    assert t.refresh() == 0


# ---------------------------------------------------------------------------------------------
# column mapping


@pytest.mark.parametrize("props, parts", [
    ({"delta.columnMapping.mode": "name"}, []),
    ({"delta.columnMapping.mode": "name"}, ["c"]),
    ({"delta.columnMapping.mode": "name", **DV}, []),
    ({"delta.columnMapping.mode": "name", **DV}, ["p"]),
], ids=["cm", "cm-part-c", "cm-dv", "cm-dv-part-p"])
def test_column_mapping_dml_matches_kernel(tmp_path, props, parts):
    path = tmp_path / "cm"
    t = docc.Table.create(path, SCHEMA, partition_by=parts, properties=props)
    rows = []
    for k in range(2):
        chunk = BASE_ROWS[k * 18:(k + 1) * 18]
        t.append(rows_table(chunk))
        rows += chunk
    t.update("x > 100 AND s IS NOT NULL", {"s": "upper(s)", "x": "x + 1"})
    rows = [{**r, "s": r["s"].upper(), "x": r["x"] + 1} if nn(r["x"], r["s"]) and r["x"] > 100 else r for r in rows]
    t.delete("id IN (2, 3, 11, 30) OR c IS NULL")
    rows = [r for r in rows if not (r["id"] in (2, 3, 11, 30) or r["c"] is None)]
    t.update("p = 1", {"c": "'m'"})
    rows = [{**r, "c": "m"} if r["p"] == 1 else r for r in rows]
    assert canon(t.snapshot().to_pyarrow()) == canon(rows)
    assert canon(kernel_read(path)) == canon(rows)
    # the data files really use physical names
    schema_fields = json.loads(
        next(json.loads(l) for l in (path / "_delta_log" / f"{0:020d}.json").read_text().splitlines()
             if l.startswith('{"metaData"'))["metaData"]["schemaString"])["fields"]
    physical = {f["name"]: f["metadata"]["delta.columnMapping.physicalName"] for f in schema_fields}
    for f in t.snapshot().files().to_pylist():
        names = pq.read_schema(path / urllib.parse.unquote(f["path"])).names
        assert set(names) == {physical[c] for c in COLS if c not in parts}
        stats = json.loads(f["stats"])
        assert set(stats["nullCount"]) <= set(names)


@pytest.mark.parametrize("typ, value", [
    (pa.list_(pa.int32()), [1, 2]),
    (pa.struct([("a", pa.int32()), ("b", pa.string())]), {"a": 1, "b": "x"}),
    (pa.map_(pa.string(), pa.int32()), [("k", 1)]),
], ids=["list", "struct", "map"])
def test_merge_on_tables_with_nested_columns(tmp_path, typ, value):
    """pyarrow's join cannot carry list/struct/map columns; MERGE raised a bare ArrowInvalid on
    any table holding one. Expected rows: the SQL MERGE semantics (matched row updated with its
    nested value kept, unmatched source row inserted), read back by deltalake as the oracle."""
    schema = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("c", typ)])
    t = docc.Table.create(str(tmp_path / "t"), schema)
    t.append(pa.table({"id": [1, 3], "v": [0, 0], "c": pa.array([value, None], typ)}, schema=schema))
    source = pa.table({"id": [1, 2], "v": [10, 20], "c": pa.array([None, value], typ)}, schema=schema)
    t.merge(source, "t.id = s.id", when_matched_update={"v": "s.v"}, when_not_matched_insert=True)
    expected = [{"id": 1, "v": 10, "c": value}, {"id": 2, "v": 20, "c": value}, {"id": 3, "v": 0, "c": None}]
    got = sorted(docc.Table(t.path).snapshot().to_pyarrow().to_pylist(), key=lambda r: r["id"])
    oracle = sorted(deltalake.DeltaTable(t.path).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])
    assert got == oracle
    assert [(r["id"], r["v"]) for r in got] == [(1, 10), (2, 20), (3, 0)]
    assert pa.array([r["c"] for r in got], typ).to_pylist() == pa.array([e["c"] for e in expected], typ).to_pylist()


def test_optimize_commit_info_uses_deltas_metric_names(tmp_path):
    """OPTIMIZE's removed-file count is Delta's ``numRemovedFiles`` (as the core and the CLI
    spell it), never a second ``numFilesRemoved`` beside it."""
    t = docc.Table.create(tmp_path / "t", pa.schema([("id", pa.int64())]))
    for i in range(3):
        t.append(pa.table({"id": [i]}))
    t.optimize()
    info = t.history(1)[0]
    assert info["operation"] == "OPTIMIZE"
    assert info["operationMetrics"]["numRemovedFiles"] == "3"
    assert info["operationMetrics"]["numAddedFiles"] == "1"
    assert "numFilesRemoved" not in info["operationMetrics"]


def test_optimize_bin_written_as_several_files_is_a_typed_error(tmp_path, monkeypatch):
    """A bin must become one file (its provenance tag names its inputs); a bin that would not is
    refused with a typed error, also under ``python -O``, and the transaction leaves no file."""
    from delta_occ.operations import optimize as optimize_op

    t = docc.Table.create(tmp_path / "t", pa.schema([("id", pa.int64()), ("p", pa.int64())]), partition_by=["p"])
    for p in (1, 1, 2, 2):
        t.append(pa.table({"id": [p], "p": [p]}))
    real = optimize_op.compaction_bins

    def one_bin_across_partitions(*args, **kwargs):
        return [[f for b in real(*args, **kwargs) for f in b]]  # breaks the core's one-partition rule

    monkeypatch.setattr(optimize_op, "compaction_bins", one_bin_across_partitions)
    before = sorted(p.name for p in (tmp_path / "t").rglob("*.parquet"))
    with pytest.raises(exc.InvalidArgumentError, match="one file"):
        t.optimize()
    assert sorted(p.name for p in (tmp_path / "t").rglob("*.parquet")) == before
    assert t.version == 4
