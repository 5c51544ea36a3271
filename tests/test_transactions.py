"""The transaction API around the checker: predicates, isolation-level rules, metadata commits,
change reading, in-commit timestamps, argument validation."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest

import delta_occ as docc
from delta_occ import exceptions as ex

from datafiles import add

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.int32()), ("x", pa.int64()), ("s", pa.string())])


def make(tmp_path, props=None, partition_by=("p",)):
    path = str(tmp_path / "t")
    t = docc.Table.create(path, SCHEMA, list(partition_by), props or {})
    return t, path


def data(ids, xs, ss):
    return pa.table({"id": pa.array(ids, pa.int64()), "x": pa.array(xs, pa.int64()), "s": pa.array(ss, pa.string())})


@pytest.fixture
def filled(tmp_path):
    t, path = make(tmp_path)
    txn = t.begin()
    add(txn, path, data([1, 2, 3], [10, None, 30], ["apple", "banana", None]), {"p": 1})
    add(txn, path, data([4, 5], [40, 50], ["cherry", "apple pie"]), {"p": 2})
    add(txn, path, data([6], [None], ["date"]), {"p": None})
    txn.commit()
    return t


def sql_reference(row, text):
    """Expected matches, written by hand from SQL semantics for each case below."""
    p, x, s, i = row["p"], row["x"], row["s"], row["id"]
    return {
        "p = 1": p == 1,
        "p <> 1": p is not None and p != 1,
        "NOT (p = 1)": p is not None and p != 1,
        "p IS NULL": p is None,
        "x > 20": x is not None and x > 20,
        "x IS NULL OR p = 2": x is None or p == 2,
        "x BETWEEN 10 AND 40": x is not None and 10 <= x <= 40,
        "id IN (1, 5, 6)": i in (1, 5, 6),
        "id NOT IN (1, 5)": i not in (1, 5),
        "s LIKE 'apple%'": s is not None and s.startswith("apple"),
        "s NOT LIKE '%a%'": s is not None and "a" not in s,
        "p = 1 AND x >= 30": p == 1 and x is not None and x >= 30,
        "p = 2 OR s = 'date'": p == 2 or s == "date",
        "x <=> NULL": x is None,
        "TRUE": True,
        "1 = 0": False,
    }[text]


CASES = ["p = 1", "p <> 1", "NOT (p = 1)", "p IS NULL", "x > 20", "x IS NULL OR p = 2", "x BETWEEN 10 AND 40",
         "id IN (1, 5, 6)", "id NOT IN (1, 5)", "s LIKE 'apple%'", "s NOT LIKE '%a%'", "p = 1 AND x >= 30",
         "p = 2 OR s = 'date'", "x <=> NULL", "TRUE", "1 = 0"]


@pytest.mark.parametrize("text", CASES)
def test_to_pyarrow_where_matches_sql_semantics(filled, text):
    all_rows = filled.snapshot().to_pyarrow().to_pylist()
    want = sorted(r["id"] for r in all_rows if sql_reference(r, text))
    got = filled.snapshot().to_pyarrow(where=text)
    assert sorted(got.column("id").to_pylist()) == want
    assert got.schema == filled.snapshot().schema


def test_scan_prunes_by_partition_and_stats(filled):
    txn = filled.begin()
    assert txn.scan("p = 2").num_rows == 1
    assert txn.scan("x > 45").num_rows == 1, "stats max(x)=30 and 40... skip; only the p=2 file has 50"
    assert txn.scan("x > 1000").num_rows == 0
    assert txn.scan().num_rows == 3


@pytest.mark.parametrize("text,position,needle", [
    ("x > 5 AND nope = 1", 11, "nope"),
    ("x >", 4, ""),
    ("x > 5 5", 7, "unexpected"),
    ("p = 'abc'", 5, "integer"),
    ("", 1, "empty"),
    ("x = (SELECT 1)", 6, "subquer"),
])
def test_bad_predicate_text(filled, text, position, needle):
    with pytest.raises(ex.PredicateError) as info:
        filled.begin().scan(text)
    assert info.value.position == position, info.value
    assert needle in str(info.value)
    assert isinstance(info.value, ValueError)


def test_opaque_predicate_is_may_match_for_files_and_evaluated_on_rows(filled):
    """File skipping cannot decide `abs(x) > 1000` (every file may match); the core's row
    evaluator can (#17: functions used to be refused on rows)."""
    txn = filled.begin()
    assert txn.scan("abs(x) > 1000").num_rows == 3, "undecidable: every file may match"
    xs = filled.snapshot().to_pyarrow().column("x").to_pylist()
    expected = sorted(v for v in xs if v is not None and abs(v) > 25)
    got = filled.snapshot().to_pyarrow(where="abs(x) > 25").column("x").to_pylist()
    assert sorted(got) == expected and 0 < len(expected) < len(xs)


def test_isolation_level_rules(tmp_path):
    t, _ = make(tmp_path, {"delta.isolationLevel": "serializable"})
    assert t.snapshot().properties["delta.isolationLevel"] == "Serializable"
    with pytest.raises(ex.InvalidArgumentError, match="weaker"):
        t.begin(isolation_level="WriteSerializable")
    with pytest.raises(ex.InvalidArgumentError, match="SnapshotIsolation"):
        t.begin(isolation_level="snapshotisolation")
    with pytest.raises(ValueError, match="Serializable"):
        t.begin(isolation_level="strict")
    r = t.set_isolation_level("writeserializable")
    assert t.snapshot().isolation_level is docc.IsolationLevel.WRITE_SERIALIZABLE
    assert r.operation == "SET TBLPROPERTIES"
    assert t.begin(isolation_level=docc.IsolationLevel.SERIALIZABLE).isolation_level.value == "Serializable"
    with pytest.raises(ex.InvalidArgumentError, match="Serializable or WriteSerializable"):
        t.set_properties({"delta.isolationLevel": "SnapshotIsolation"})


def test_default_level_is_write_serializable(tmp_path):
    t, _ = make(tmp_path)
    assert "delta.isolationLevel" not in t.snapshot().properties
    assert t.begin().isolation_level is docc.IsolationLevel.WRITE_SERIALIZABLE


def test_changes_stop_at_metadata_change(tmp_path):
    t, path = make(tmp_path)
    for i in range(2):
        with t.begin() as txn:
            add(txn, path, data([i], [i], ["a"]), {"p": i})
    t.set_properties({"owner": "me"})
    with t.begin() as txn:
        add(txn, path, data([9], [9], ["a"]), {"p": 9})
    seen = []
    with pytest.raises(ex.MetadataChangedException) as info:
        for c in t.changes(0):
            seen.append(c["version"])
    assert seen == [0, 1, 2] and info.value.winning_version == 3
    after = list(t.changes(4))
    assert [c["version"] for c in after] == [4] and len(after[0]["added"]) == 1
    # Restarting deliberately from the metadata change, as the message says, yields it and goes on
    # (before, changes(3) raised the same exception again, so v3 could only be skipped).
    restarted = list(t.changes(info.value.winning_version))
    assert [c["version"] for c in restarted] == [3, 4] and restarted[0]["operation"] == "SET TBLPROPERTIES"
    with pytest.raises(ex.VersionNotFoundError):
        list(t.changes(99))


def test_context_manager_commits_or_aborts(tmp_path):
    t, path = make(tmp_path)
    with t.begin() as txn:
        add(txn, path, data([1], [1], ["a"]), {"p": 1})
    assert txn.state == "committed" and t.version == 1
    with pytest.raises(RuntimeError):
        with t.begin() as txn2:
            add(txn2, path, data([2], [2], ["a"]), {"p": 1})
            raise RuntimeError("boom")
    assert txn2.state == "aborted" and t.refresh() == 1
    with pytest.raises(ex.InvalidArgumentError, match="aborted"):
        txn2.commit()
    with pytest.raises(ex.InvalidArgumentError, match="already committed"):
        txn.commit()


@pytest.mark.parametrize("kwargs,needle", [
    ({"path": "p=1/a.parquet", "partition_values": {}, "size": 1}, "missing a value for partition column"),
    ({"path": "p=1/a.parquet", "partition_values": {"p": "1", "q": "2"}, "size": 1}, "not a partition column"),
    ({"path": "p=1/a.parquet", "partition_values": {"p": "one"}, "size": 1}, "not a valid integer"),
    ({"path": "/elsewhere/a.parquet", "partition_values": {"p": "1"}, "size": 1}, "inside the table directory"),
    ({"path": "../a.parquet", "partition_values": {"p": "1"}, "size": 1}, "'..'"),
    ({"path": "p=1/a.parquet", "partition_values": {"p": "1"}, "size": -1}, "size"),
    ({"path": "p=1/a.parquet", "partition_values": {"p": "1"}, "size": 1, "stats": "[1]"}, "JSON object"),
])
def test_add_file_validation(tmp_path, kwargs, needle):
    t, _ = make(tmp_path)
    with pytest.raises(ex.InvalidArgumentError, match=needle):
        t.begin().add_file(**kwargs)


def test_remove_and_delete_rows_validation(filled):
    txn = filled.begin()
    with pytest.raises(ex.InvalidArgumentError, match="not a live file"):
        txn.remove_file("p=1/nope.parquet")
    path = txn.scan("p = 1").column("path")[0].as_py()
    with pytest.raises(ex.InvalidArgumentError, match="deletion vectors"):
        txn.delete_rows(path, [0])
    txn.remove_file(path)
    with pytest.raises(ex.InvalidArgumentError, match="already removes"):
        txn.remove_file(path)


def test_set_properties_upgrades_protocol_for_dvs_and_delete_rows_works(tmp_path):
    t, path = make(tmp_path)
    with t.begin() as txn:
        f = add(txn, path, data([1, 2, 3], [1, 2, 3], ["a", "b", "c"]), {"p": 1})
    assert t.snapshot().protocol["min_writer_version"] == 2
    t.set_properties({"delta.enableDeletionVectors": "true"})
    proto = t.snapshot().protocol
    assert (proto["min_reader_version"], proto["min_writer_version"]) == (3, 7)
    assert "deletionVectors" in proto["reader_features"] and "invariants" in proto["writer_features"]
    txn = t.begin()
    txn.scan("id = 2")
    txn.delete_rows(f, [1])
    with pytest.raises(ex.InvalidArgumentError, match="beyond"):
        txn.delete_rows(f, [3])
    r = txn.commit("DELETE")
    assert r.metrics["numDeletedRows"] == "1" and not r.is_blind_append
    assert sorted(t.snapshot().to_pyarrow().column("id").to_pylist()) == [1, 3]
    assert t.snapshot().deleted_rows(f).to_pylist() == [1]
    stats = json.loads(t.snapshot().files().column("stats")[0].as_py())
    assert stats["tightBounds"] is False


def test_set_schema_keeps_column_mapping_ids(tmp_path):
    path = str(tmp_path / "t")
    t = docc.Table.create(path, SCHEMA, ["p"], {"delta.columnMapping.mode": "name"})
    before = {f["name"]: f["metadata"] for f in json.loads(t.snapshot().handle.schema_json)["fields"]}
    t.set_schema(SCHEMA.append(pa.field("extra", pa.float64())))
    after = {f["name"]: f["metadata"] for f in json.loads(t.snapshot().handle.schema_json)["fields"]}
    for name in before:
        assert after[name] == before[name]
    assert after["extra"]["delta.columnMapping.id"] > max(m["delta.columnMapping.id"] for m in before.values())
    assert t.snapshot().schema.field("extra").type == pa.float64()
    with pytest.raises(ex.InvalidArgumentError, match="partition column"):
        t.set_schema(pa.schema([("id", pa.int64())]))


SCHEMA_CHANGES = {
    # name: (new schema from SCHEMA, column mapping, expected error or None). Rules from
    # protocol-notes.md (schema, column mapping) and Delta's type-widening feature list.
    "add nullable column": (SCHEMA.append(pa.field("extra", pa.float64())), False, None),
    "add NOT NULL column": (SCHEMA.append(pa.field("extra", pa.float64(), nullable=False)), False, ex.InvalidArgumentError),
    "drop column": (pa.schema([SCHEMA.field("id"), SCHEMA.field("p"), SCHEMA.field("s")]), False, ex.InvalidArgumentError),
    # Issue 44: a missing column loses its data, so dropping must be asked for.
    "drop column with mapping": (pa.schema([SCHEMA.field("id"), SCHEMA.field("p"), SCHEMA.field("s")]), True, ex.SchemaMismatchError),
    "drop column with mapping and allow_drop": (pa.schema([SCHEMA.field("id"), SCHEMA.field("p"), SCHEMA.field("s")]), True, None),
    "rename by case": (pa.schema([SCHEMA.field("id"), SCHEMA.field("p"), pa.field("X", pa.int64()), SCHEMA.field("s")]), False, ex.InvalidArgumentError),
    "narrow type": (SCHEMA.set(2, pa.field("x", pa.int32())), False, ex.InvalidArgumentError),
    "unrelated type": (SCHEMA.set(3, pa.field("s", pa.int64())), True, ex.InvalidArgumentError),
    "widen type": (SCHEMA.set(1, pa.field("p", pa.int64())), False, ex.UnsupportedFeatureError),
    "tighten nullability": (SCHEMA.set(2, pa.field("x", pa.int64(), nullable=False)), False, ex.InvalidArgumentError),
}


@pytest.mark.parametrize("case", list(SCHEMA_CHANGES))
def test_set_schema_keeps_existing_files_readable(tmp_path, case):
    schema, mapping, error = SCHEMA_CHANGES[case]
    t, path = make(tmp_path, {"delta.columnMapping.mode": "name"} if mapping else None)
    t.append(pa.table({"id": [1, 2], "p": pa.array([1, 1], pa.int32()), "x": [10, 20], "s": ["a", "b"]}))
    version = t.version
    if error is not None:
        with pytest.raises(error) as info:
            t.set_schema(schema)
        assert path in str(info.value) or os.path.abspath(path) in str(info.value)
        assert docc.Table(path).version == version
        return
    t.set_schema(schema, allow_drop="allow_drop" in case)
    got = docc.Table(path).snapshot().to_pyarrow()
    assert got.schema.names == schema.names
    expected = {n: [None, None] if n not in SCHEMA.names else {"id": [1, 2], "p": [1, 1], "x": [10, 20], "s": ["a", "b"]}[n] for n in schema.names}
    assert got.sort_by("id").to_pydict() == expected
    from rowmodel import oracle_rows

    assert pa.Table.from_pylist(oracle_rows(docc.Table(path))).to_pydict() == expected


def test_set_schema_keeps_field_metadata(tmp_path):
    """A schema from Arrow cannot spell Delta field metadata: existing columns keep theirs."""
    t, path = make(tmp_path)
    log = os.path.join(path, "_delta_log", f"{t.version:020}.json")
    lines = [json.loads(x) for x in open(log)]
    meta = next(x["metaData"] for x in lines if "metaData" in x)
    schema = json.loads(meta["schemaString"])
    schema["fields"][2]["metadata"] = {"comment": "the x column"}
    meta["schemaString"] = json.dumps(schema)
    with open(log, "w") as f:
        f.write("\n".join(json.dumps(x) for x in lines) + "\n")
    t = docc.Table(path)
    t.set_schema(SCHEMA.append(pa.field("extra", pa.float64())))
    fields = {f["name"]: f["metadata"] for f in json.loads(t.snapshot().handle.schema_json)["fields"]}
    assert fields["x"] == {"comment": "the x column"} and fields["extra"] == {}


def test_schema_change_conflicts_with_concurrent_blind_append(tmp_path):
    """A schema change reads the whole table: a blind append that lands first conflicts even
    under WriteSerializable (§2: WriteSerializable + metadata change checks blind appends)."""
    t, path = make(tmp_path)
    txn = t.begin()
    txn.set_schema(SCHEMA.append(pa.field("extra", pa.int32())))
    with t.begin() as w:
        add(w, path, data([1], [1], ["a"]), {"p": 1})
    with pytest.raises(ex.ConcurrentAppendException) as info:
        txn.commit("REPLACE COLUMNS")
    assert info.value.partition_hint is None


def test_in_commit_timestamps(tmp_path):
    t, path = make(tmp_path, {"delta.enableInCommitTimestamps": "true"})
    for i in range(3):
        with t.begin() as txn:
            add(txn, path, data([i], [i], ["a"]), {"p": 1})
    icts = []
    for v in range(4):
        with open(os.path.join(path, "_delta_log", f"{v:020}.json")) as f:
            first = json.loads(f.readline())
        assert "commitInfo" in first, "with ICT the commitInfo is the first action"
        icts.append(first["commitInfo"]["inCommitTimestamp"])
    assert icts == sorted(icts) and len(set(icts)) == 4
    assert "inCommitTimestamp" in t.snapshot().protocol["writer_features"]


def test_validate_explains_without_committing(filled):
    txn = filled.begin()
    txn.scan("p = 1")
    with filled.begin() as w:
        w.scan("p = 9")
        add(w, filled.path, data([7], [7], ["z"]), {"p": 2})
    v = txn.validate()
    assert v["winners"] == 1 and "none of the 1 added files" in v["checks"][0]["outcome"]
    assert txn.state == "open" and filled.refresh() == 2
