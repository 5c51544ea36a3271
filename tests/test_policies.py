"""The policies a new user meets first (issue 18; docs/guide.md "Policies"). Each test says where
its expected behaviour comes from.

1. An operation with nothing to write writes no commit (delta-spark: OptimisticTransaction skips
   a commit without actions when ``spark.databricks.delta.skipRecordingEmptyCommits`` is on, the
   default; its test "Elide empty commits when requested" appends an empty DataFrame).
2. Schema enforcement on write (Delta's schema enforcement): same type or a widening of Delta's
   type widening feature; a missing nullable column becomes NULL; anything else raises
   SchemaMismatchError; ``schema_mode="merge"`` adds new columns (delta-spark's ``mergeSchema``).
3. Predicate literals must fit the column type in both directions.
4. SET / INSERT value errors are worded as such, not as predicate errors.
5. Paths and versions.
"""

from __future__ import annotations

import datetime
import decimal
import os

import pyarrow as pa
import pytest

import delta_occ as docc
from delta_occ import exceptions as exc

SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    ("i", pa.int32()),
    ("x", pa.float64()),
    ("s", pa.string()),
    ("d", pa.date32()),
    ("ts", pa.timestamp("us")),
    ("dec", pa.decimal128(10, 2)),
])
DAY = datetime.date(2024, 1, 1)


def _rows(ids) -> pa.Table:
    n = len(ids)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "i": pa.array(ids, pa.int32()),
        "x": pa.array([float(v) for v in ids]),
        "s": pa.array([f"s{v}" for v in ids]),
        "d": pa.array([DAY] * n, pa.date32()),
        "ts": pa.array([datetime.datetime(2024, 1, 1)] * n, pa.timestamp("us")),
        "dec": pa.array([decimal.Decimal("1.25")] * n, pa.decimal128(10, 2)),
    }, schema=SCHEMA)


@pytest.fixture(params=["flat", "dv"])
def table(request, tmp_path):
    props = {"delta.enableDeletionVectors": "true"} if request.param == "dv" else {}
    t = docc.Table.create(tmp_path / "t", SCHEMA, properties=props)
    t.append(_rows([1, 2, 3]))
    return t


def _log_versions(t: docc.Table) -> int:
    return len([f for f in os.listdir(os.path.join(t.path, "_delta_log")) if f.endswith(".json")])


# -- 1. no commit without actions ------------------------------------------------------------------

def _source(ids, **extra) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "x": pa.array([float(v) for v in ids]), **extra})


def _scan_only(t):
    with t.begin() as txn:
        txn.scan("id > 0")
    return txn.result


#: (operation that changes nothing, the same operation when it does change something)
NOOPS = {
    "delete matching no row": (lambda t: t.delete("id < 0"), lambda t: t.delete("id = 1")),
    "update matching no row": (lambda t: t.update("id < 0", {"x": "x + 1"}), lambda t: t.update("id = 1", {"x": "x + 1"})),
    "merge matching no row": (
        lambda t: t.merge(_source([9]), "t.id = s.id", when_matched_update={"x": "s.x"}),
        lambda t: t.merge(_source([1]), "t.id = s.id", when_matched_update={"x": "s.x"}),
    ),
    "merge of an empty source": (
        lambda t: t.merge(_source([]), "t.id = s.id", when_not_matched_insert=True),
        lambda t: t.merge(_source([9]), "t.id = s.id", when_not_matched_insert=True),
    ),
    "append of 0 rows": (lambda t: t.append(_rows([])), lambda t: t.append(_rows([4]))),
    "overwrite of no row by no row": (
        lambda t: t.overwrite(_rows([]), replace_where="id < 0"),
        lambda t: t.overwrite(_rows([]), replace_where="id = 1"),
    ),
    "optimize with nothing to compact": (lambda t: t.optimize(), lambda t: (t.append(_rows([4])), t.optimize())[1]),
    "transaction that only scanned": (_scan_only, lambda t: t.delete("id = 2")),
}


@pytest.mark.parametrize("name", list(NOOPS))
def test_an_operation_with_nothing_to_write_writes_no_commit(table, name):
    noop, change = NOOPS[name]
    before, files = table.version, _log_versions(table)
    r = noop(table)
    assert (r.committed, r.version, r.read_version, r.attempts) == (False, before, before, 0), name
    assert r.isolation_level is docc.IsolationLevel.SNAPSHOT_ISOLATION
    assert (table.refresh(), _log_versions(table)) == (before, files), "nothing in the log"
    r = change(table)
    assert r.committed and r.version == table.version > before, "the control case commits"


@pytest.mark.parametrize("level", ["Serializable", "WriteSerializable"])
def test_a_transaction_that_writes_nothing_cannot_conflict(table, level):
    """It read the whole table, a winner deleted everything: with nothing to write there is no
    commit to check (delta-spark returns before its conflict checks)."""
    txn = table.begin(isolation_level=level if level == "Serializable" else None)
    txn.read_whole_table()
    table.delete()
    r = txn.commit()
    assert not r.committed and r.version == txn.read_version and txn.state == "committed"


@pytest.mark.parametrize("stage", [
    lambda txn: txn.set_app_version("app", 1),
    lambda txn: txn.set_properties({"k": "v"}),
    lambda txn: txn.set_domain_metadata("user.domain", "{}"),
])
def test_an_action_other_than_a_file_action_still_commits(table, stage):
    txn = table.begin()
    stage(txn)
    r = txn.commit()
    assert r.committed and r.version == txn.read_version + 1


# -- 2. schema enforcement -------------------------------------------------------------------------

#: (column, data, allowed): Delta's type widening table (byte → short → int → long, byte/short/int
#: → double, float → double, integers/decimals into a decimal with enough digits, date →
#: timestamp_ntz); everything else is refused, as delta-spark's schema enforcement refuses it.
TYPES = [
    ("i", pa.array([7], pa.int8()), True),
    ("i", pa.array([7], pa.int16()), True),
    ("i", pa.array([7], pa.uint16()), True),
    ("id", pa.array([7], pa.int32()), True),
    ("x", pa.array([7], pa.int32()), True),
    ("x", pa.array([7.5], pa.float32()), True),
    ("ts", pa.array([DAY], pa.date32()), True),
    ("dec", pa.array([7], pa.int8()), True),
    ("dec", pa.array([decimal.Decimal("7.5")], pa.decimal128(5, 1)), True),
    ("s", pa.array(["7"], pa.large_string()), True),
    ("x", pa.array([None], pa.null()), True),
    ("x", pa.array(["7.5"]), False),
    ("id", pa.array(["7"]), False),
    ("i", pa.array([7], pa.int64()), False),
    ("i", pa.array([7], pa.uint32()), False),
    ("i", pa.array([7.0]), False),
    ("x", pa.array([7], pa.int64()), False),
    ("s", pa.array([7], pa.int64()), False),
    ("d", pa.array(["2024-01-01"]), False),
    ("ts", pa.array([datetime.datetime(2024, 1, 1)], pa.timestamp("us", tz="UTC")), False),
    ("dec", pa.array([7], pa.int32()), False),
    ("dec", pa.array([decimal.Decimal("7.125")], pa.decimal128(10, 3)), False),
]


@pytest.mark.parametrize("data, delta", [
    (pa.uint8(), "short"), (pa.uint16(), "integer"), (pa.uint32(), "long"), (pa.uint64(), "uint64"),
    (pa.int32(), "integer"), (pa.large_string(), "string"), (pa.null(), "null"),
])
def test_type_names_in_messages(data, delta):
    """docs/guide.md "Policies": Delta has no unsigned types; unsigned integers count as the
    smallest Delta type holding every value (uint32: up to 4,294,967,295, above integer's range:
    long) and are written as that type; uint64 fits no Delta integer and keeps its Arrow name."""
    from delta_occ._schema import type_name

    assert type_name(data) == delta


def _one_row(column: str, values: pa.Array) -> pa.Table:
    base = {"id": pa.array([7], pa.int64())}
    base[column] = values
    return pa.table(base)


@pytest.mark.parametrize("column, values, allowed", TYPES, ids=[f"{c}<-{v.type}" for c, v, _ in TYPES])
@pytest.mark.parametrize("how", ["Table.append", "Transaction.append", "merge insert"])
def test_write_types_follow_delta_type_widening(table, column, values, allowed, how):
    data = _one_row(column, values)
    before = table.version

    def write():
        if how == "Table.append":
            table.append(data)
        elif how == "Transaction.append":
            with table.begin() as txn:
                txn.append(data)
        else:
            table.merge(data, "t.id = s.id", when_not_matched_insert=True)

    if not allowed:
        # MERGE checks the key column before any row: its message names the two keys.
        error = f"(column '{column}' is .* in the table but|MERGE keys t.{column} )"
        with pytest.raises(exc.SchemaMismatchError, match=error) as info:
            write()
        assert info.value.column == column and isinstance(info.value, exc.InvalidArgumentError)
        assert table.refresh() == before
        return
    write()
    got = table.snapshot().to_pyarrow(where="id = 7")
    want = values.cast(table.snapshot().schema.field(column).type)
    assert got.column(column).to_pylist() == want.to_pylist()


@pytest.mark.parametrize("data, error", [
    (pa.table({"id": [7], "extra": [1]}), "column\\(s\\) \\['extra'\\] are not in the table schema"),
    (pa.table({"x": [1.0]}), "column 'id' is NOT NULL and missing"),
    (pa.table({"id": pa.array([None], pa.int64())}), "column 'id' is NOT NULL but the data holds 1 null"),
])
def test_columns_the_table_lacks_or_needs_are_refused(table, data, error):
    with pytest.raises(exc.SchemaMismatchError, match=error):
        table.append(data)


def test_a_missing_nullable_column_becomes_null(table):
    table.append(pa.table({"id": pa.array([7], pa.int64())}))
    row = table.snapshot().to_pyarrow(where="id = 7").to_pylist()[0]
    assert row == {"id": 7, "i": None, "x": None, "s": None, "d": None, "ts": None, "dec": None}


def _evolve_append(t, data):
    return t.append(data, schema_mode="merge")


def _evolve_txn_append(t, data):
    with t.begin() as txn:
        txn.append(data, schema_mode="merge")
    return txn.result


def _evolve_overwrite(t, data):
    return t.overwrite(data, replace_where="id = 7", schema_mode="merge")


def _evolve_merge(t, data):
    return t.merge(data, "t.id = s.id", when_not_matched_insert=True, schema_mode="merge")


def _evolve_txn_merge(t, data):
    with t.begin() as txn:
        txn.merge(data, "t.id = s.id", when_not_matched_insert=True, schema_mode="merge")
    return txn.result


@pytest.mark.parametrize("write", [_evolve_append, _evolve_txn_append, _evolve_overwrite, _evolve_merge, _evolve_txn_merge])
def test_schema_mode_merge_adds_new_columns_in_the_same_commit(table, write):
    """delta-spark's mergeSchema: new columns are appended, nullable; old rows read NULL."""
    r = write(table, pa.table({"id": pa.array([7], pa.int64()), "extra": ["e"], "more": pa.array([1], pa.int16())}))
    assert r.committed
    snap = table.snapshot()
    assert snap.schema.names[-2:] == ["extra", "more"] and snap.schema.field("more").type == pa.int16()
    assert snap.commit_info["operation"] in ("WRITE", "MERGE")
    got = {row["id"]: (row["extra"], row["more"]) for row in snap.to_pyarrow(columns=["id", "extra", "more"]).to_pylist()}
    assert got == {1: (None, None), 2: (None, None), 3: (None, None), 7: ("e", 1)}


def test_schema_mode_merge_never_changes_an_existing_column_type(table):
    with pytest.raises(exc.SchemaMismatchError, match="column 'i' is integer in the table but long"):
        table.append(pa.table({"id": pa.array([7], pa.int64()), "i": pa.array([7], pa.int64()), "extra": [1]}), schema_mode="merge")
    assert table.snapshot().schema == SCHEMA, "the failed write staged no schema change"


def test_schema_mode_is_checked(table):
    with pytest.raises(exc.InvalidArgumentError, match="schema_mode must be None, 'merge' or 'overwrite'"):
        table.append(_rows([7]), schema_mode="overwritten")
    with pytest.raises(exc.InvalidArgumentError, match="not append"):
        table.append(_rows([7]), schema_mode="overwrite")


#: (column, Spark type of the data, allowed): the Spark engine applies the same rule.
SPARK_TYPES = [("x", "string", False), ("i", "bigint", False), ("id", "int", True), ("x", "int", True), ("i", "tinyint", True)]


@pytest.mark.parametrize("column, spark_type, allowed", SPARK_TYPES)
def test_the_spark_engine_enforces_the_same_types(spark, tmp_path, column, spark_type, allowed):
    from delta_occ.spark import SparkTable

    st = SparkTable.create(spark, str(tmp_path / "t"), pa.schema([("id", pa.int64()), ("i", pa.int32()), ("x", pa.float64())]))
    values = {"id": "CAST(7 AS BIGINT)", column: f"CAST(7 AS {spark_type})"}
    df = spark.sql("SELECT " + ", ".join(f"{v} AS {k}" for k, v in values.items()))
    if not allowed:
        with pytest.raises(exc.SchemaMismatchError, match=f"column '{column}' is .* in the table but {spark_type} in the data"):
            st.append(df)
        with pytest.raises(exc.SchemaMismatchError, match="MERGE keys t.id \\(long\\) and s.id \\(string\\)"):
            st.merge(spark.sql("SELECT '7' AS id"), "t.id = s.id", when_matched_delete=True)
        return
    assert st.append(df).committed
    assert st.table.snapshot().to_pyarrow(columns=[column]).column(column).to_pylist() == [7]


#: MERGE keys compare only when one key type widens to the other (Spark would cast a string key
#: to a number and silently match nothing for 'abc').
KEYS = [
    ("t.id = s.id", pa.array(["1"]), "MERGE keys t.id \\(long\\) and s.id \\(string\\) have incompatible types"),
    ("t.id = s.id", pa.array([1.0]), "MERGE keys t.id \\(long\\) and s.id \\(double\\) have incompatible types"),
    ("t.s = s.id", pa.array([1]), "MERGE keys t.s \\(string\\) and s.id \\(long\\) have incompatible types"),
    ("t.id = s.id", pa.array([1], pa.int32()), None),
    ("t.i = s.id", pa.array([1], pa.int64()), None),
]


@pytest.mark.parametrize("on, key, error", KEYS)
def test_merge_key_types(table, on, key, error):
    source = pa.table({"id": key, "x": [100.0]})
    merge = lambda: table.merge(source, on, when_matched_update={"x": "s.x"})  # noqa: E731
    if error:
        with pytest.raises(exc.SchemaMismatchError, match=error):
            merge()
        return
    r = merge()
    assert r.metrics["numTargetRowsUpdated"] == "1"
    assert table.snapshot().to_pyarrow(where="id = 1").column("x").to_pylist() == [100.0]


#: (assignment, allowed): a SET value must widen to the column, be a number for a numeric column
#: (Spark's ANSI store assignment casts it with an overflow check) or a string for a date column.
SETS = [
    ({"x": "s.n"}, True),
    ({"i": "s.n"}, True),
    ({"d": "'2024-02-01'"}, True),
    ({"x": "s.txt"}, False),
    ({"s": "s.n"}, False),
    ({"d": "s.n"}, False),
]


@pytest.mark.parametrize("assignment, allowed", SETS)
def test_merge_and_update_set_value_types(table, assignment, allowed):
    source = pa.table({"id": pa.array([1], pa.int64()), "n": pa.array([5], pa.int64()), "txt": ["5"]})
    for run in (
        lambda: table.merge(source, "t.id = s.id", when_matched_update=assignment),
        lambda: table.update("id = 1", {k: v.replace("s.n", "5").replace("s.txt", "'5'") for k, v in assignment.items()}),
    ):
        if allowed:
            assert run().committed
            continue
        column = next(iter(assignment))
        with pytest.raises(exc.SchemaMismatchError, match=f"invalid SET expression for column {column}: its value is"):
            run()


@pytest.mark.parametrize("assignment, allowed", SETS)
def test_spark_set_values_follow_the_same_rule(spark, tmp_path, assignment, allowed):
    """The Spark engine applies the embedded engine's store rule (``_schema.check_stored``) before
    Spark's own cast: a string into a double column is refused there too, not parsed by Spark."""
    from delta_occ.spark import SparkTable

    st = SparkTable.create(spark, str(tmp_path / "t"), SCHEMA)
    st.table.append(_rows([1, 2]))  # (the rows: Spark would read the zone-less timestamps as local ones)
    source = spark.createDataFrame([(1, 5, "5")], "id long, n long, txt string")
    for run in (
        lambda: st.merge(source, "t.id = s.id", when_matched_update=assignment),
        lambda: st.update("id = 1", {k: v.replace("s.n", "5").replace("s.txt", "'5'") for k, v in assignment.items()}),
    ):
        if allowed:
            assert run().committed
            continue
        column = next(iter(assignment))
        with pytest.raises(exc.SchemaMismatchError, match=f"invalid SET expression for column {column}: its value is"):
            run()


# -- 3. predicate literal types --------------------------------------------------------------------

#: (where, refused with): the core refuses `id = 'abc'` on a number column; a number against a
#: string column is refused the same way instead of matching nothing.
PREDICATES = [
    ("s = 5", "cannot compare column s of type string with the number 5"),
    ("s IN ('s1', 2)", "cannot compare column s of type string with the number 2"),
    ("s BETWEEN 1 AND 2", "cannot compare column s of type string with the number 1"),
    ("id = 'abc'", 'cannot compare column id of type long with the string "abc"'),
    ("d = 5", "cannot compare column d of type date with a number"),
    ("id = 1", None),
    ("x = 1", None),
    ("i < 1.5", None),
    ("id = '1'", None),
    ("s = '1'", None),
    ("d = '2024-01-01'", None),
    ("ts >= '2024-01-01 00:00:00'", None),
]


@pytest.mark.parametrize("where, error", PREDICATES)
@pytest.mark.parametrize("path", ["delete", "to_pyarrow", "scan"])
def test_predicate_literal_types(table, where, error, path):
    run = {
        "delete": lambda: table.delete(where),
        "to_pyarrow": lambda: table.snapshot().to_pyarrow(where=where),
        "scan": lambda: table.begin().scan(where),
    }[path]
    if error is None:
        run()
        return
    with pytest.raises(exc.PredicateError, match=error):
        run()


def test_merge_conditions_check_literal_types_too(table):
    with pytest.raises(exc.PredicateError, match="cannot compare column t.s of type string with the number 5"):
        table.merge(_source([1]), "t.id = s.id", when_matched_delete="t.s = 5")


# -- 4. SET expression errors ----------------------------------------------------------------------

@pytest.mark.parametrize("run, message", [
    (lambda t: t.update(None, {"x": "x ** 2"}), "invalid SET expression for column x: 'x \\*\\* 2' at position"),
    (lambda t: t.update(None, {"X": "nope + 1"}), "invalid SET expression for column x: 'nope \\+ 1': unknown column 'nope'"),
    (lambda t: t.merge(_source([1]), "t.id = s.id", when_matched_update={"x": "s.x ** 2"}), "invalid SET expression for column x"),
    (lambda t: t.merge(_source([9]), "t.id = s.id", when_not_matched_insert={"id": "s.id", "x": "s.x +"}), "invalid INSERT value for column x"),
])
def test_set_expression_errors_name_the_column(table, run, message):
    with pytest.raises(exc.PredicateError, match=message) as info:
        run(table)
    assert "invalid predicate" not in str(info.value)


# -- 5. paths and versions -------------------------------------------------------------------------

@pytest.mark.parametrize("open_", [lambda p: docc.Table(p), lambda p: docc.Table.create(p, SCHEMA)], ids=["open", "create"])
def test_table_paths(tmp_path, monkeypatch, open_):
    regular = tmp_path / "regular-file"
    regular.write_text("x")
    with pytest.raises(exc.DeltaOccError, match="not a (table )?directory"):
        open_(regular)
    with pytest.raises(exc.InvalidArgumentError, match="must not be empty"):
        open_("")
    monkeypatch.setenv("HOME", str(tmp_path))
    if not (tmp_path / "home-table").exists():
        docc.Table.create(tmp_path / "home-table", SCHEMA)
    assert docc.Table("~/home-table").path == str(tmp_path / "home-table")
    assert docc.Table.create("~/created", SCHEMA).path == str(tmp_path / "created")


@pytest.mark.parametrize("version, error, message", [
    (-1, exc.InvalidArgumentError, "version must be >= 0, got -1"),
    (True, exc.InvalidArgumentError, "version must be an int"),
    (99, exc.VersionNotFoundError, "99"),
])
def test_snapshot_versions(table, version, error, message):
    with pytest.raises(error, match=message):
        table.snapshot(version)


def test_merge_schema_mode_resolves_the_new_target_column(tmp_path):
    """With schema_mode="merge" a SET expression may read the column the MERGE adds (NULL in
    existing rows): the previous build resolved t.<col> against the schema before the change."""
    schema = pa.schema([("id", pa.int64())])
    t = docc.Table.create(str(tmp_path / "t"), schema)
    t.append(pa.table({"id": [1, 2]}, schema=schema))
    source = pa.table({"id": [2, 3], "extra": ["b", "c"]})
    t.merge(source, "t.id = s.id", when_matched_update={"extra": "coalesce(t.extra, s.extra)"},
            when_not_matched_insert=True, schema_mode="merge")
    rows = sorted(t.snapshot().to_pyarrow().to_pylist(), key=lambda r: r["id"])
    assert rows == [{"id": 1, "extra": None}, {"id": 2, "extra": "b"}, {"id": 3, "extra": "c"}]
