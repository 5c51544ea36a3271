"""Reads and DML evaluate a `where` on rows the same way.

`Snapshot.to_pyarrow(where=...)` evaluates the predicate the Rust core resolved (its negations
already pushed into comparisons), the embedded engine's DELETE evaluates the SQL tree as written.
Both must select the same rows, including on floating point NaN, where they follow Spark SQL's
documented NaN semantics (Spark SQL reference, "NaN Semantics": NaN = NaN is true, and NaN is
larger than any other numeric value in comparisons). A table with one file per row keeps file
skipping from hiding an evaluation difference.
"""

from __future__ import annotations

import datetime
import json
import math

import pyarrow as pa
import pytest

import delta_occ as docc

NAN = float("nan")
SCHEMA = pa.schema([("id", pa.int64()), ("x", pa.float64()), ("n", pa.int32()), ("s", pa.string()), ("d", pa.date32())])
ROWS = [
    # id, x, n, s, d
    (0, 1.0, 1, "foo", datetime.date(2024, 1, 1)),
    (1, None, 2, "bar", datetime.date(2024, 1, 2)),
    (2, 2.5, None, None, datetime.date(2024, 1, 3)),
    (3, -1.0, 4, "Foo", datetime.date(2024, 1, 4)),
    (4, 0.0, 5, "f%o", None),
    (5, 3.0, 6, "baz", datetime.date(2024, 1, 6)),
    (6, NAN, 7, "", datetime.date(2024, 1, 7)),
    (7, float("inf"), 8, "foo_", datetime.date(2024, 1, 8)),
    (8, NAN, None, "zz", datetime.date(2024, 1, 9)),
]


def _cmp(a, b):
    """Spark's order on doubles: NaN above everything, equal to itself; None propagates."""
    if a is None or b is None:
        return None
    key = lambda v: (1, 0.0) if isinstance(v, float) and math.isnan(v) else (0, v)  # noqa: E731
    return (key(a) > key(b)) - (key(a) < key(b))


def _x(op, lit):
    def pred(r):
        c = _cmp(r[1], lit)
        return None if c is None else {">": c > 0, ">=": c >= 0, "<": c < 0, "<=": c <= 0, "=": c == 0, "!=": c != 0}[op]
    return pred


def _not(f):
    return lambda r: None if f(r) is None else not f(r)


# (where, Python reference predicate on a row tuple: True/False/None per SQL three-valued logic)
CASES = [
    ("x > 1", _x(">", 1.0)),
    ("x >= 2.5", _x(">=", 2.5)),
    ("x < 1", _x("<", 1.0)),
    ("x <= 0", _x("<=", 0.0)),
    ("x = 1", _x("=", 1.0)),
    ("x != 1", _x("!=", 1.0)),
    ("NOT (x > 1)", _not(_x(">", 1.0))),
    ("NOT (x <= 0)", _not(_x("<=", 0.0))),
    ("x = 'NaN'", _x("=", NAN)),
    ("x != 'NaN'", _x("!=", NAN)),
    ("x < 'NaN'", _x("<", NAN)),
    ("x >= 'NaN'", _x(">=", NAN)),
    ("x > 'Infinity'", _x(">", float("inf"))),
    ("x IN (1, 'NaN')", lambda r: None if r[1] is None else (_x("=", 1.0)(r) or _x("=", NAN)(r))),
    ("x BETWEEN 0 AND 3", lambda r: None if r[1] is None else (_x(">=", 0.0)(r) and _x("<=", 3.0)(r))),
    ("x IS NULL", lambda r: r[1] is None),
    ("n IN (1, 2, NULL)", lambda r: True if r[2] in (1, 2) else None),
    ("n NOT IN (1, NULL)", lambda r: False if r[2] == 1 else None),
    ("n NOT BETWEEN 2 AND 5", lambda r: None if r[2] is None else not (2 <= r[2] <= 5)),
    ("s LIKE 'f%'", lambda r: None if r[3] is None else r[3].startswith("f")),
    ("s ILIKE 'f%'", lambda r: None if r[3] is None else r[3].lower().startswith("f")),
    ("d > '2024-01-03'", lambda r: None if r[4] is None else r[4] > datetime.date(2024, 1, 3)),
    ("x > 1 OR s = 'foo'", lambda r: (_x(">", 1.0)(r) is True) or r[3] == "foo"),
    # NaN against NULL stays NULL (a NULL literal, and a NULL from an integer column).
    ("x >= NULL", lambda r: None),
    ("x > n", lambda r: None if r[1] is None or r[2] is None else _cmp(r[1], float(r[2])) > 0),
    ("n <= x", lambda r: None if r[1] is None or r[2] is None else _cmp(float(r[2]), r[1]) <= 0),
]


@pytest.fixture
def table(tmp_path):
    t = docc.Table.create(str(tmp_path / "t"), SCHEMA)
    for row in ROWS:  # one file per row
        t.append(pa.table({f.name: [v] for f, v in zip(SCHEMA, row)}, schema=SCHEMA))
    return t


@pytest.mark.parametrize("where, reference", CASES, ids=[c[0] for c in CASES])
def test_read_and_delete_select_the_rows_spark_semantics_select(table, where, reference):
    expected = {r[0] for r in ROWS if reference(r) is True}
    read = set(table.snapshot().to_pyarrow(where=where).column("id").to_pylist())
    assert read == expected, f"to_pyarrow(where={where!r})"
    table.delete(where)
    left = set(docc.Table(table.path).snapshot().to_pyarrow().column("id").to_pylist())
    assert {r[0] for r in ROWS} - left == expected, f"delete({where!r})"


def test_infinite_values_are_written_and_bound_only_one_side(tmp_path):
    """JSON stats cannot hold an infinity: the infinite bound is left out, the finite one kept
    (before, appending an infinity failed with "stats must be a JSON object")."""
    t = docc.Table.create(str(tmp_path / "t"), pa.schema([("x", pa.float64())]))
    t.append(pa.table({"x": [1.0, float("inf")]}))
    stats = json.loads(t.snapshot().files().column("stats")[0].as_py())
    assert stats["minValues"] == {"x": 1.0} and stats["maxValues"] == {}
    assert t.snapshot().to_pyarrow(where="x > 5").column("x").to_pylist() == [float("inf")]
    assert t.snapshot().to_pyarrow(where="x < 0").num_rows == 0


@pytest.mark.parametrize("extra_keys", [0, 1500], ids=["in-list", "range"])
def test_merge_on_a_float_key_with_nan(tmp_path, extra_keys):
    """MERGE matches NaN keys (NaN = NaN in Spark) and its narrowed read predicate covers them:
    before, the predicate text held a bare `nan` and the MERGE failed with PredicateError. Above
    1,000 distinct keys the narrowing is a range, whose upper end must then be NaN."""
    schema = pa.schema([("x", pa.float64()), ("v", pa.string())])
    t = docc.Table.create(str(tmp_path / "t"), schema)
    t.append(pa.table({"x": [1.0, NAN, 3.0, None], "v": ["a", "b", "c", "d"]}, schema=schema))
    keys = [10.0, NAN] + [100.0 + i for i in range(extra_keys)]
    source = pa.table({"x": keys, "v": ["s"] * len(keys)}, schema=schema)
    before = docc.Table(t.path).version
    t.merge(source, "t.x = s.x", when_matched_delete=True)
    left = docc.Table(t.path).snapshot().to_pyarrow().column("v").to_pylist()
    assert sorted(left) == ["a", "c", "d"]
    read = docc.Table(t.path).snapshot().commit_info["operationParameters"]["readPredicate"]
    assert "'NaN'" in read, read
    # The read predicate selects the row the MERGE deleted, in the snapshot it read.
    assert docc.Table(t.path).snapshot(before).to_pyarrow(where=read).column("v").to_pylist() == ["b"]


@pytest.mark.parametrize("set_, error, message", [
    ({"n": "n + 9223372036854775807"}, docc.exceptions.PredicateError, "the value of 'n' on the rows: .*overflow"),
    # A string is never cast into a number column (docs/guide.md "Policies"), so the type, not
    # the value 'abc', is the error.
    ({"n": "'abc'"}, docc.exceptions.SchemaMismatchError, "SET expression for column n: its value is string but the column is long"),
], ids=["overflow", "bad-cast"])
def test_update_evaluation_errors_are_typed_and_commit_nothing(tmp_path, set_, error, message):
    schema = pa.schema([("n", pa.int64())])
    t = docc.Table.create(str(tmp_path / "t"), schema)
    t.append(pa.table({"n": [1, 2]}, schema=schema))
    before = docc.Table(t.path).version
    with pytest.raises(error, match=message):
        t.update("n = 1", set_)
    assert docc.Table(t.path).version == before


def test_case_results_compare_with_nan_order(tmp_path):
    """A CASE over float results is floating point too: its comparisons use Spark's NaN order, and
    so does `CASE x WHEN ...` (concurrency.md is silent; Spark SQL's NaN semantics decide)."""
    schema = pa.schema([("x", pa.float64()), ("i", pa.int64())])
    t = docc.Table.create(str(tmp_path / "t"), schema)
    t.append(pa.table({"x": [NAN, -1.0, 2.0], "i": [1, 2, 3]}, schema=schema))
    t.delete("CASE WHEN i >= 0 THEN x ELSE x END > 0")
    assert sorted(docc.Table(t.path).snapshot().to_pyarrow().column("i").to_pylist()) == [2]
    t.update(None, {"i": "CASE x WHEN CAST('NaN' AS DOUBLE) THEN 10 ELSE 20 END"})
    assert docc.Table(t.path).snapshot().to_pyarrow().column("i").to_pylist() == [20]


def test_nan_and_infinite_partition_values_are_kept_and_pruned_in_order(tmp_path):
    """Splitting rows by partition used equality, which NaN never satisfies: a NaN partition was
    written as an empty file and its rows were lost. Values are spelled as Spark spells doubles
    (NaN, Infinity), and partition pruning orders NaN above everything."""
    schema = pa.schema([("p", pa.float64()), ("v", pa.int64())])
    t = docc.Table.create(str(tmp_path / "t"), schema, ["p"])
    t.append(pa.table({"p": [1.0, NAN, float("inf"), None], "v": [1, 2, 3, 4]}, schema=schema))
    snap = docc.Table(t.path).snapshot()
    assert sorted(snap.to_pyarrow().column("v").to_pylist()) == [1, 2, 3, 4]
    files = snap.files()
    assert sorted(v for pv in files.column("partition_values").to_pylist() for _, v in pv if v) == ["1.0", "Infinity", "NaN"]
    assert files.column("num_records").to_pylist() == [1, 1, 1, 1]
    for where, expected in [("p = 'NaN'", [2]), ("p > 1", [2, 3]), ("p IN (1.0, 'NaN')", [1, 2]), ("p < 'NaN'", [1, 3])]:
        assert sorted(snap.to_pyarrow(where=where).column("v").to_pylist()) == expected, where
    # deltalake reads what we wrote (the oracle for tables without deletion vectors)
    import deltalake

    rows = deltalake.DeltaTable(t.path).to_pyarrow_table().to_pylist()
    assert sorted(r["v"] for r in rows) == [1, 2, 3, 4]
    assert any(r["v"] == 2 and math.isnan(r["p"]) for r in rows)


@pytest.mark.parametrize("where", [
    "ts = TIMESTAMP '2024-01-01 00:00:00'",
    "ts = '2024-01-01 00:00:00'",
    "ts = '2024-01-01T00:00:00Z'",
    "ts > TIMESTAMP '2023-12-31 23:59:59'",
    "ts = TIMESTAMP '2024-01-01 01:00:00+01:00'",
])
def test_timestamp_literals_read_and_delete_alike(tmp_path, where):
    """A timestamp literal without a zone offset is UTC for a zoned column in reads (the core) and
    now in DML too, which raised a bare ArrowInvalid ("expected a zone offset")."""
    typ = pa.timestamp("us", tz="UTC")
    t = docc.Table.create(str(tmp_path / "t"), pa.schema([("id", pa.int64()), ("ts", typ)]))
    utc = datetime.timezone.utc
    t.append(pa.table({"id": [1, 2], "ts": pa.array([datetime.datetime(2024, 1, 1, tzinfo=utc), datetime.datetime(2023, 1, 1, tzinfo=utc)], typ)}))
    assert t.snapshot().to_pyarrow(where=where).column("id").to_pylist() == [1]
    t.delete(where)
    assert docc.Table(t.path).snapshot().to_pyarrow().column("id").to_pylist() == [2]
