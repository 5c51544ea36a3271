"""Table.create, refresh, time travel, history, isolation levels, and interop of created tables."""

from __future__ import annotations

import json
import multiprocessing
import threading
import time

import pyarrow as pa
import pytest

import delta_occ as docc
from delta_occ import IsolationLevel
from delta_occ import exceptions as exc

from helpers import add, metadata, protocol, simple_table, write_commit, write_parquet

SCHEMA = pa.schema([("id", pa.int64()), ("date", pa.string()), ("v", pa.float64())])


def _commit_lines(root, version=0):
    return [json.loads(l) for l in (root / "_delta_log" / f"{version:020d}.json").read_text().splitlines()]


@pytest.mark.parametrize("props, reader, writer, rf, wf", [
    ({}, 1, 2, None, None),
    ({"delta.enableDeletionVectors": "true"}, 3, 7, ["deletionVectors"], ["deletionVectors"]),
    ({"delta.appendOnly": "true"}, 1, 7, None, ["appendOnly"]),
    ({"delta.enableInCommitTimestamps": "true"}, 1, 7, None, ["inCommitTimestamp"]),
    ({"delta.columnMapping.mode": "name"}, 3, 7, ["columnMapping"], ["columnMapping"]),
])
def test_create_protocol_follows_properties(tmp_path, props, reader, writer, rf, wf):
    t = docc.Table.create(tmp_path / "t", SCHEMA, partition_by=["date"], properties=props, name="n")
    s = t.snapshot()
    assert t.version == 0
    assert s.protocol == {"min_reader_version": reader, "min_writer_version": writer,
                          "reader_features": rf, "writer_features": wf}
    assert s.schema.names == ["id", "date", "v"] and s.partition_columns == ["date"]
    assert s.metadata["name"] == "n"
    lines = _commit_lines(tmp_path / "t")
    assert list(lines[0]) == ["commitInfo"]  # commitInfo first (required with ICT)
    info = lines[0]["commitInfo"]
    assert info["operation"] == "CREATE TABLE" and info["isBlindAppend"] is True and info["txnId"]
    assert ("inCommitTimestamp" in info) == ("delta.enableInCommitTimestamps" in props)


def test_create_column_mapping_assigns_physical_names(tmp_path):
    t = docc.Table.create(tmp_path, SCHEMA, properties={"delta.columnMapping.mode": "NAME"})
    meta = [l for l in _commit_lines(tmp_path) if "metaData" in l][0]["metaData"]
    fields = json.loads(meta["schemaString"])["fields"]
    assert [f["metadata"]["delta.columnMapping.id"] for f in fields] == [1, 2, 3]
    assert all(f["metadata"]["delta.columnMapping.physicalName"].startswith("col-") for f in fields)
    assert meta["configuration"]["delta.columnMapping.maxColumnId"] == "3"
    assert t.snapshot().schema.names == ["id", "date", "v"]


@pytest.mark.parametrize("how", ["create", "begin_create"])
@pytest.mark.parametrize("partition_by, want", [(None, []), ((), []), ("date", ["date"]), (["date"], ["date"])])
def test_create_takes_every_form_of_partition_by(tmp_path, how, partition_by, want):
    """api.md: ``partition_by`` is None (no partitions), one column name or a sequence of names,
    for Table.create and Table.begin_create alike."""
    if how == "create":
        docc.Table.create(tmp_path / "t", SCHEMA, partition_by=partition_by)
    else:
        assert docc.Table.begin_create(tmp_path / "t", SCHEMA, partition_by=partition_by).commit().version == 0
    assert docc.Table(tmp_path / "t").snapshot().partition_columns == want


@pytest.mark.parametrize("mode", ["name", "id"])
def test_nested_columns_round_trip_under_column_mapping(tmp_path, mode):
    """Column mapping names nested fields too (protocol-notes.md: physical names at every
    level): rows written into struct, list and map columns read back as written."""
    schema = pa.schema([
        ("id", pa.int64()),
        ("s", pa.struct([("a", pa.int64()), ("b", pa.string())])),
        ("l", pa.list_(pa.struct([("x", pa.int32())]))),
        ("m", pa.map_(pa.string(), pa.struct([("y", pa.int64())]))),
    ])
    rows = [{"id": 1, "s": {"a": 5, "b": "x"}, "l": [{"x": 3}], "m": [("k", {"y": 7})]}]
    t = docc.Table.create(tmp_path / "t", schema, properties={"delta.columnMapping.mode": mode})
    t.append(pa.Table.from_pylist(rows, schema=schema))
    assert t.snapshot().to_pyarrow().to_pylist() == rows


@pytest.mark.parametrize("bad, error", [
    ({"partition_by": ["nope"]}, exc.InvalidArgumentError),
    ({"properties": {"delta.isolationLevel": "Strict"}}, exc.InvalidArgumentError),
    ({"properties": {"delta.isolationLevel": "SnapshotIsolation"}}, exc.InvalidArgumentError),
    ({"properties": {"delta.enableRowTracking": "true", "delta.rowTrackingSuspended": "true"}}, exc.InvalidArgumentError),
    ({"properties": {"delta.columnMapping.mode": "fancy"}}, exc.InvalidArgumentError),
    ({"schema": pa.schema([("u", pa.uint32())])}, exc.InvalidArgumentError),
    ({"schema": pa.schema([("a", pa.int64()), ("A", pa.int64())])}, exc.InvalidArgumentError),
    ({"schema": pa.schema([("date", pa.string())]), "partition_by": ["date"]}, exc.InvalidArgumentError),
])
def test_create_rejects_bad_input(tmp_path, bad, error):
    kwargs = {"schema": SCHEMA, **bad}
    schema = kwargs.pop("schema")
    with pytest.raises(error):
        docc.Table.create(tmp_path / "t", schema, **kwargs)
    assert not (tmp_path / "t" / "_delta_log" / f"{0:020d}.json").exists()


def test_create_twice(tmp_path):
    docc.Table.create(tmp_path, SCHEMA)
    with pytest.raises(exc.TableAlreadyExistsError):
        docc.Table.create(tmp_path, SCHEMA)


def test_isolation_level_property_normalised(tmp_path):
    t = docc.Table.create(tmp_path, SCHEMA, properties={"delta.isolationLevel": "serializable"})
    assert t.snapshot().properties["delta.isolationLevel"] == "Serializable"
    assert t.snapshot().isolation_level is IsolationLevel.SERIALIZABLE


def test_default_isolation_is_write_serializable(tmp_path):
    # concurrency.md §2: absent property → WriteSerializable
    assert docc.Table.create(tmp_path, SCHEMA).snapshot().isolation_level is IsolationLevel.WRITE_SERIALIZABLE


@pytest.mark.parametrize("text, level", [
    ("serializable", IsolationLevel.SERIALIZABLE), ("SERIALIZABLE", IsolationLevel.SERIALIZABLE),
    ("WriteSerializable", IsolationLevel.WRITE_SERIALIZABLE), ("write_serializable", IsolationLevel.WRITE_SERIALIZABLE),
    ("snapshotisolation", IsolationLevel.SNAPSHOT_ISOLATION), (IsolationLevel.SERIALIZABLE, IsolationLevel.SERIALIZABLE),
])
def test_isolation_parse(text, level):
    assert IsolationLevel.parse(text) is level
    assert level.value in ("Serializable", "WriteSerializable", "SnapshotIsolation")


def test_isolation_parse_error_names_levels():
    with pytest.raises(ValueError) as info:
        IsolationLevel.parse("strict")
    assert "Serializable" in str(info.value) and "WriteSerializable" in str(info.value)


def test_created_tables_are_readable_by_deltalake(tmp_path):
    """deltalake (oracle) reads delta-occ's version 0: schema, partitioning, properties."""
    import deltalake

    docc.Table.create(tmp_path / "a", SCHEMA, partition_by=["date"], properties={"delta.appendOnly": "true"}, name="x")
    dt = deltalake.DeltaTable(str(tmp_path / "a"))
    assert dt.version() == 0
    assert dt.metadata().partition_columns == ["date"]
    assert dt.metadata().name == "x"
    assert [f.name for f in dt.schema().fields] == ["id", "date", "v"]
    deltalake.write_deltalake(str(tmp_path / "a"), pa.table({"id": [1], "date": ["d"], "v": [1.0]},
                                                           schema=SCHEMA), mode="append")
    rows = docc.Table(tmp_path / "a").snapshot().to_pyarrow().to_pylist()
    assert rows == [{"id": 1, "date": "d", "v": 1.0}]


def test_refresh_reads_only_new_commits_and_old_snapshots_stay(tmp_path):
    simple_table(tmp_path)
    t = docc.Table(tmp_path)
    old = t.snapshot()
    size = write_parquet(tmp_path, "g.parquet", [100, 101])
    write_commit(tmp_path, 1, [{"commitInfo": {"operation": "WRITE"}}, add("g.parquet", size)])
    assert t.version == 0
    assert t.refresh() == 1 and t.version == 1
    assert old.version == 0 and old.files().num_rows == 2
    assert t.snapshot().files().num_rows == 3
    assert t.refresh() == 1
    # A corrupt commit 0 would break a full replay; refresh must not re-read it.
    (tmp_path / "_delta_log" / f"{0:020d}.json").write_text("garbage\n")
    write_commit(tmp_path, 2, [{"remove": {"path": "g.parquet", "dataChange": True}}])
    assert t.refresh() == 2 and t.snapshot().files().num_rows == 2
    with pytest.raises(exc.CorruptLogError):
        docc.Table(tmp_path)


def test_time_travel_forward_from_stale_handle(tmp_path):
    simple_table(tmp_path)
    t = docc.Table(tmp_path)
    write_commit(tmp_path, 1, [add("x.parquet")])
    write_commit(tmp_path, 2, [add("y.parquet")])
    assert t.snapshot(2).files().num_rows == 4 and t.snapshot(1).files().num_rows == 3
    assert t.snapshot(0).files().num_rows == 2


def test_history_newest_first(tmp_path):
    simple_table(tmp_path)
    write_commit(tmp_path, 1, [{"commitInfo": {"operation": "DELETE", "timestamp": 7}}])
    h = docc.Table(tmp_path).history()
    assert [e["version"] for e in h] == [1, 0]
    assert h[0]["operation"] == "DELETE" and h[1] == {"version": 0}
    assert len(docc.Table(tmp_path).history(limit=1)) == 1


def _child_read(path):
    t = docc.Table(path)
    return t.version, t.snapshot().to_pyarrow().num_rows


def test_works_in_forked_children(tmp_path):
    """The package is used in the parent, then in children created by fork (deltalake panics)."""
    simple_table(tmp_path, n_files=4)
    parent = _child_read(str(tmp_path))
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(3) as pool:
        results = pool.map(_child_read, [str(tmp_path)] * 6, chunksize=1)
    assert results == [parent] * 6 == [(0, 20)] * 6


def test_gil_is_released_during_replay(tmp_path):
    """Another Python thread keeps running while a large log replays in Rust."""
    lines = [json.dumps({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}),
             json.dumps({"metaData": {"id": "x", "format": {"provider": "parquet", "options": {}},
                                      "schemaString": json.dumps({"type": "struct", "fields": [
                                          {"name": "id", "type": "long", "nullable": True, "metadata": {}}]}),
                                      "partitionColumns": [], "configuration": {}}})]
    stats = json.dumps({"numRecords": 10, "minValues": {"id": 0}, "maxValues": {"id": 9}, "nullCount": {"id": 0}})
    lines += [json.dumps({"add": {"path": f"part-{i:08d}.parquet", "partitionValues": {}, "size": 100,
                                  "modificationTime": 1, "dataChange": True, "stats": stats}}) for i in range(120_000)]
    (tmp_path / "_delta_log").mkdir()
    (tmp_path / "_delta_log" / f"{0:020d}.json").write_text("\n".join(lines) + "\n")
    window = {}

    def load():
        window["start"] = time.perf_counter()
        docc.Table(tmp_path)
        window["end"] = time.perf_counter()

    ticks = []
    th = threading.Thread(target=load)
    th.start()
    while th.is_alive():
        ticks.append(time.perf_counter())
    th.join()
    duration = window["end"] - window["start"]
    inside = [x for x in ticks if window["start"] + duration * 0.1 < x < window["end"] - duration * 0.1]
    assert duration > 0.01
    assert len(inside) > 100, (duration, len(inside))


# concurrency.md §4 and protocol-notes §5.1: a table has deletion vectors enabled when the protocol
# has the deletionVectors feature and delta.enableDeletionVectors is "true"; only then may a writer
# create DVs (delete_rows) and row-level concurrency apply.
@pytest.mark.parametrize("prop,features,enabled", [
    ("true", ["deletionVectors"], True),
    ("TRUE", ["deletionVectors"], True),
    ("false", ["deletionVectors"], False),
    (None, ["deletionVectors"], False),
    ("true", [], False),
    ("true", None, False),
])
def test_deletion_vectors_enabled_rule(tmp_path, prop, features, enabled):
    proto = protocol(3, 7, ["deletionVectors"] if features else [], features) if features is not None \
        else protocol(1, 2)
    config = {"delta.enableDeletionVectors": prop} if prop is not None else {}
    write_commit(tmp_path, 0, [proto, metadata(configuration=config), add("a.parquet")])
    t = docc.Table(str(tmp_path))
    assert t.snapshot().deletion_vectors_enabled is enabled
    txn = t.begin()
    if enabled:
        txn.delete_rows("a.parquet", [0])  # staged only: the file need not exist until commit
    else:
        with pytest.raises(exc.InvalidArgumentError, match="needs deletion vectors"):
            txn.delete_rows("a.parquet", [0])
    txn.abort()


def test_failed_refresh_leaves_a_current_table_usable(tmp_path):
    """An explicit refresh that cannot read a new commit raises, and the table still answers at
    the version it knew (it was not behind its own commits); a table that was behind stays so."""
    write_commit(tmp_path, 0, [protocol(), metadata(), add("a.parquet")])
    t = docc.Table(str(tmp_path))
    assert t.version == 0
    (tmp_path / "_delta_log" / f"{1:020d}.json").write_text('{"add": not json\n')
    with pytest.raises(exc.CorruptLogError):
        t.refresh()
    assert t.version == 0
    t.note_committed()  # as after a commit through this table
    with pytest.raises(exc.CorruptLogError):
        t.refresh()
    assert t._behind
