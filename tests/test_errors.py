"""Bad input gets a typed error naming the file/version, never a panic or a wrong answer."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest

import delta_occ as docc
from delta_occ import _core
from delta_occ import exceptions as exc

from helpers import add, metadata, protocol, simple_table, write_commit, write_parquet


def test_no_table(tmp_path):
    with pytest.raises(exc.TableNotFoundError) as info:
        docc.Table(tmp_path / "nope")
    assert "nope" in str(info.value)
    (tmp_path / "empty" / "_delta_log").mkdir(parents=True)
    with pytest.raises(exc.TableNotFoundError, match="no commits"):
        docc.Table(tmp_path / "empty")
    assert issubclass(exc.TableNotFoundError, FileNotFoundError)


@pytest.mark.parametrize("content, where", [
    ('{"add": {"path": "a", "partitionValues": {}, "size": 1', "line 3"),          # truncated
    ('{"add": {"path": "a", "partitionValues": {}, "size": "big", "modificationTime": 1, "dataChange": true}}', "line 3"),
    ('{"remove": {"dataChange": true}}', "line 3"),                               # missing path
    ("\x00\x01garbage", "line 3"),
    ('[1, 2, 3]', "line 3"),
])
def test_garbled_commit(tmp_path, content, where):
    simple_table(tmp_path)
    p = tmp_path / "_delta_log" / f"{1:020d}.json"
    p.write_text('{"commitInfo": {}}\n' + json.dumps(add("x.parquet")) + "\n" + content + "\n")
    with pytest.raises(exc.CorruptLogError) as info:
        docc.Table(tmp_path)
    msg = str(info.value)
    assert str(p) in msg and "version 1" in msg and where in msg
    assert info.value.version == 1 and info.value.file == str(p)


def test_non_utf8_commit(tmp_path):
    simple_table(tmp_path)
    (tmp_path / "_delta_log" / f"{1:020d}.json").write_bytes(b'{"commitInfo": {"x": "\xff\xfe"}}\n')
    with pytest.raises(exc.CorruptLogError, match="not UTF-8"):
        docc.Table(tmp_path)


def test_gap_names_missing_version(tmp_path):
    simple_table(tmp_path)
    write_commit(tmp_path, 2, [add("y.parquet")])
    with pytest.raises(exc.CorruptLogError) as info:
        docc.Table(tmp_path)
    assert info.value.version == 1 and "00000000000000000001.json" in str(info.value)


@pytest.mark.parametrize("proto, text", [
    (protocol(3, 7, ["deletionVectors", "futureFeature"], ["deletionVectors", "futureFeature"]), "futureFeature"),
    (protocol(4, 7), "reader version"),
    (protocol(3, 7, ["variantType"], ["variantType"]), "variantType"),  # a real feature delta-occ does not read
])
def test_unknown_reader_feature(tmp_path, proto, text):
    write_commit(tmp_path, 0, [proto, metadata()])
    with pytest.raises(exc.UnsupportedFeatureError) as info:
        docc.Table(tmp_path)
    assert text in str(info.value) and "version 0" in str(info.value)


def test_protocol_upgrade_later_is_refused_only_from_that_version(tmp_path):
    simple_table(tmp_path)
    write_commit(tmp_path, 1, [protocol(3, 7, ["someNewThing"], ["someNewThing"])])
    with pytest.raises(exc.UnsupportedFeatureError):
        docc.Table(tmp_path)


def test_writer_only_features_are_readable(tmp_path):
    write_commit(tmp_path, 0, [protocol(1, 7, None, ["appendOnly", "inCommitTimestamp", "someWriterOnly"]), metadata()])
    assert docc.Table(tmp_path).version == 0


def _checkpointed_table(tmp_path, parts=1):
    """A table whose commits 0..1 are replaced by a checkpoint at v1 (commit JSONs removed)."""
    import deltalake

    for i in range(3):
        deltalake.write_deltalake(str(tmp_path), pa.table({"id": pa.array(range(i * 10, i * 10 + 10), pa.int64())}), mode="append")
    deltalake.DeltaTable(str(tmp_path)).create_checkpoint()
    log = tmp_path / "_delta_log"
    for v in range(2):
        (log / f"{v:020d}.json").unlink()
    return log / f"{2:020d}.checkpoint.parquet"


def test_truncated_checkpoint(tmp_path):
    cp = _checkpointed_table(tmp_path)
    assert docc.Table(tmp_path).snapshot().to_pyarrow().num_rows == 30
    data = cp.read_bytes()
    cp.write_bytes(data[: len(data) // 2])
    with pytest.raises(exc.CorruptLogError) as info:
        docc.Table(tmp_path)
    assert str(cp) in str(info.value) and "version 2" in str(info.value)


def test_missing_checkpoint_part(tmp_path):
    cp = _checkpointed_table(tmp_path)
    # Turn the classic checkpoint into part 1 of a 2-part set whose part 2 is missing.
    cp.rename(cp.with_name(f"{2:020d}.checkpoint.{1:010d}.{2:010d}.parquet"))
    (tmp_path / "_delta_log" / "_last_checkpoint").write_text(json.dumps({"version": 2, "size": 5, "parts": 2}))
    with pytest.raises(exc.CorruptLogError) as info:
        docc.Table(tmp_path)
    assert "checkpoint 2 is incomplete" in str(info.value) and "1/2" in str(info.value)
    assert "00000000000000000000.json" in str(info.value)


def test_incomplete_checkpoint_is_ignored_when_commits_exist(tmp_path):
    simple_table(tmp_path)
    write_commit(tmp_path, 1, [add("g.parquet")])
    (tmp_path / "_delta_log" / f"{1:020d}.checkpoint.{1:010d}.{3:010d}.parquet").write_bytes(b"junk")
    snap = docc.Table(tmp_path).snapshot()
    assert snap.version == 1 and snap.files().num_rows == 3


def test_corrupt_last_checkpoint_is_tolerated(tmp_path):
    simple_table(tmp_path)
    (tmp_path / "_delta_log" / "_last_checkpoint").write_text("{not json")
    assert docc.Table(tmp_path).snapshot().to_pyarrow().num_rows == 10
    (tmp_path / "_delta_log" / "_last_checkpoint").write_text(json.dumps({"version": 99, "size": 1}))
    assert docc.Table(tmp_path).version == 0


def _dv_table(tmp_path, positions=(1, 3)):
    ids = list(range(10))
    size = write_parquet(tmp_path, "d.parquet", ids)
    (descriptor,) = _core.write_deletion_vectors(str(tmp_path), [list(positions)])
    dv = json.loads(descriptor)
    write_commit(tmp_path, 0, [protocol(3, 7, ["deletionVectors"], ["deletionVectors"]),
                               metadata(configuration={"delta.enableDeletionVectors": "true"}),
                               add("d.parquet", size, stats={"numRecords": 10}, dv=dv)])
    return dv


def test_dv_roundtrip(tmp_path):
    _dv_table(tmp_path, (1, 3))
    snap = docc.Table(tmp_path).snapshot()
    assert snap.deleted_rows("d.parquet").to_pylist() == [1, 3]
    assert sorted(snap.to_pyarrow().column("id").to_pylist()) == [0, 2, 4, 5, 6, 7, 8, 9]


def _dv_file(tmp_path, dv):
    return next(tmp_path.glob("deletion_vector_*.bin"))


@pytest.mark.parametrize("damage, text", [
    ("checksum", "checksum mismatch"),
    ("size", "size mismatch"),
    ("truncate", "runs past the end"),
    ("missing", "cannot open DV file"),
    ("cardinality", "cardinality"),
])
def test_bad_dv(tmp_path, damage, text):
    dv = _dv_table(tmp_path)
    f = _dv_file(tmp_path, dv)
    data = bytearray(f.read_bytes())
    if damage == "checksum":
        data[10] ^= 0x55
        f.write_bytes(bytes(data))
    elif damage == "size":
        data[1:5] = (int.from_bytes(data[1:5], "big") - 1).to_bytes(4, "big")
        f.write_bytes(bytes(data))
    elif damage == "truncate":
        f.write_bytes(bytes(data[:-3]))
    elif damage == "missing":
        f.unlink()
    elif damage == "cardinality":
        commit = tmp_path / "_delta_log" / f"{0:020d}.json"
        commit.write_text(commit.read_text().replace('"cardinality": 2', '"cardinality": 5'))
    snap = docc.Table(tmp_path).snapshot()  # DVs are read lazily: opening still works
    for read in (lambda: snap.deleted_rows("d.parquet"), lambda: snap.to_pyarrow()):
        with pytest.raises(exc.DeletionVectorError) as info:
            read()
        assert text in str(info.value) and "deletion_vector_" in str(info.value)


def test_dv_beyond_file_rows(tmp_path):
    _dv_table(tmp_path, (1, 50))
    with pytest.raises(exc.DeletionVectorError, match="deletes row 50 but the data file has 10 rows"):
        docc.Table(tmp_path).snapshot().to_pyarrow()


def test_unknown_dv_storage_type(tmp_path):
    size = write_parquet(tmp_path, "d.parquet", [1, 2])
    dv = {"storageType": "r", "pathOrInlineDv": "x.bin", "offset": 1, "sizeInBytes": 3, "cardinality": 1}
    write_commit(tmp_path, 0, [protocol(3, 7, ["deletionVectors"], ["deletionVectors"]), metadata(),
                               add("d.parquet", size, stats={"numRecords": 2}, dv=dv)])
    with pytest.raises(exc.DeletionVectorError, match="storage type"):
        docc.Table(tmp_path).snapshot().to_pyarrow()


def test_inline_dv(tmp_path):
    size = write_parquet(tmp_path, "d.parquet", list(range(40)))
    # delta-kernel-rs's corrected inline example: rows 3, 4, 7, 11, 18, 29 (protocol-notes.md §5.5)
    dv = {"storageType": "i", "pathOrInlineDv": "^Bg9^0rr910000000000iXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L",
          "sizeInBytes": 44, "cardinality": 6}
    write_commit(tmp_path, 0, [protocol(3, 7, ["deletionVectors"], ["deletionVectors"]), metadata(),
                               add("d.parquet", size, stats={"numRecords": 40}, dv=dv)])
    snap = docc.Table(tmp_path).snapshot()
    assert snap.deleted_rows("d.parquet").to_pylist() == [3, 4, 7, 11, 18, 29]
    assert snap.to_pyarrow().num_rows == 34


def test_time_travel_out_of_range(tmp_path):
    simple_table(tmp_path)
    t = docc.Table(tmp_path)
    latest = t.version
    with pytest.raises(exc.VersionNotFoundError, match=f"version 5 .*the latest version is {latest}"):
        t.snapshot(5)
    with pytest.raises(exc.InvalidArgumentError, match=f"version must be >= 0, got -1 .*latest version .* is {latest}"):
        t.snapshot(-1)
    with pytest.raises(exc.InvalidArgumentError):
        t.snapshot("1")


def test_time_travel_past_the_newest_commit_of_a_stale_handle(tmp_path):
    """A handle that has not seen newer commits names the newest commit on disk."""
    simple_table(tmp_path)
    stale = docc.Table(tmp_path)
    docc.Table(tmp_path).append(pa.table({"id": [99]}))
    newest = docc.Table(tmp_path).version
    assert stale.snapshot(newest).version == newest
    with pytest.raises(exc.VersionNotFoundError, match=f"the latest version is {newest}"):
        docc.Table(tmp_path).snapshot(newest + 3)
    stale2 = docc.Table(tmp_path)
    docc.Table(tmp_path).append(pa.table({"id": [100]}))
    with pytest.raises(exc.VersionNotFoundError, match=f"the latest version is {newest + 1}"):
        stale2.snapshot(newest + 5)


def test_deleted_rows_of_unknown_file(tmp_path):
    simple_table(tmp_path)
    with pytest.raises(exc.InvalidArgumentError, match="not a live file"):
        docc.Table(tmp_path).snapshot().deleted_rows("zzz.parquet")


def test_missing_data_file(tmp_path):
    simple_table(tmp_path)
    os.remove(tmp_path / "f1.parquet")
    with pytest.raises(exc.CorruptLogError, match="f1.parquet"):
        docc.Table(tmp_path).snapshot().to_pyarrow()


def test_bad_partition_value(tmp_path):
    write_commit(tmp_path, 0, [protocol(), metadata(partition_columns=["p"]), add("a.parquet", partition_values={"p": "x"})])
    with pytest.raises(exc.CorruptLogError, match=r"partition column p.*not a valid integer"):
        docc.Table(tmp_path).snapshot().to_pyarrow()


def test_object_store_uri_without_credentials_is_a_clear_error(monkeypatch):
    """No credentials in storage_options or the environment (and no instance metadata service, as
    on this machine): a StorageError that says so, not the metadata service's HTTP error."""
    for k in list(os.environ):
        if k.startswith("AWS_"):
            monkeypatch.delenv(k)
    with pytest.raises(exc.StorageError) as info:
        docc.Table("s3://bucket/table", storage_options={"AWS_REGION": "us-east-1"})
    assert info.value.problem == "unauthenticated" and "credentials" in str(info.value)
    assert "s3://bucket/table" in str(info.value)


def test_hierarchy():
    # concurrency.md §6
    conflicts = [exc.ConcurrentWriteException, exc.MetadataChangedException, exc.ProtocolChangedException,
                 exc.ConcurrentAppendException, exc.ConcurrentDeleteReadException,
                 exc.ConcurrentDeleteDeleteException, exc.ConcurrentTransactionException]
    for c in conflicts:
        assert issubclass(c, exc.DeltaConcurrentModificationException)
    assert issubclass(exc.DeltaConcurrentModificationException, exc.DeltaOccError)
    for name in exc.__all__:
        assert issubclass(getattr(exc, name), exc.DeltaOccError)
    e = exc.ConcurrentAppendException("m", winning_version=3, partition_hint={"p": "1"})
    assert e.winning_version == 3 and e.partition_hint == {"p": "1"} and str(e) == "m"


def test_compound_retention_intervals_are_accepted(tmp_path):
    t = docc.Table.create(str(tmp_path / "t"), pa.schema([("id", pa.int64())]),
                          properties={"delta.logRetentionDuration": "interval 1 day 12 hours"})
    assert t.snapshot().properties["delta.logRetentionDuration"] == "interval 1 day 12 hours"


@pytest.mark.parametrize("key, value, expected", [
    ("delta.checkpointInterval", "-5", "a positive integer"),
    ("delta.checkpointInterval", "ten", "a positive integer"),
    ("delta.appendOnly", "yes", "true or false"),
    ("delta.enableDeletionVectors", "1", "true or false"),
    ("delta.logRetentionDuration", "30", "an interval"),
    ("delta.dataSkippingNumIndexedCols", "-2", "an integer >= -1"),
    ("delta.targetFileSize", "0", "a positive integer"),
    ("delta.appendOnly", "true ", "true or false"),
    ("DELTA.appendOnly", "yes", "true or false"),
])
def test_bad_table_property_values_are_refused(tmp_path, key, value, expected):
    """Delta reads these as booleans, counts and intervals (Delta table-properties reference); a
    value it cannot read is refused when set, on create and on set_properties, naming key and value."""
    schema = pa.schema([("id", pa.int64())])
    with pytest.raises(exc.InvalidArgumentError, match=f'{key} = "{value}" is not valid: expected {expected}'):
        docc.Table.create(str(tmp_path / "a"), schema, properties={key: value})
    assert not (tmp_path / "a" / "_delta_log").exists() or not any((tmp_path / "a" / "_delta_log").iterdir())
    t = docc.Table.create(str(tmp_path / "b"), schema)
    with pytest.raises(exc.InvalidArgumentError, match=f'{key} = "{value}" is not valid'):
        t.set_properties({key: value})
    assert docc.Table(str(tmp_path / "b")).version == 0


@pytest.mark.parametrize("call", [
    lambda t: t.optimize(target_file_size=0),
    lambda t: t.optimize(target_file_size=-1),
    lambda t: t.optimize(target_file_size=1.5),
    lambda t: t.append(pa.table({"id": [1]}), max_attempts=0),
    lambda t: t.append(pa.table({"id": [1]}), max_attempts=-1),
    lambda t: t.append(pa.table({"id": [1]}), max_attempts=2**40),
    lambda t: t.begin(time_budget=1e20).commit(),
    lambda t: t.begin(row_level_budget=1e20).commit(),
    lambda t: t.begin(time_budget=0).commit(),
], ids=["size-0", "size-negative", "size-float", "attempts-0", "attempts-negative", "attempts-huge",
        "time-budget-huge", "row-budget-huge", "time-budget-0"])
def test_bad_operation_arguments_are_typed_errors(tmp_path, call):
    t = docc.Table.create(str(tmp_path / "t"), pa.schema([("id", pa.int64())]))
    with pytest.raises(exc.InvalidArgumentError):
        call(t)
    assert docc.Table(str(tmp_path / "t")).version == 0


@pytest.mark.parametrize("call", [
    lambda txn: txn.add_file(None, {}, 10),
    lambda txn: txn.add_file("", {}, 10),
    lambda txn: txn.add_file("x.parquet", {}, "big"),
    lambda txn: txn.add_file("x.parquet", {}, 10, stats=[1, 2]),
    lambda txn: txn.add_file("x.parquet", {}, 10, modification_time=-1),
    lambda txn: txn.set_app_version("app", -5),
    lambda txn: txn.set_app_version("app", 2**70),
    lambda txn: txn.set_app_version("", 1),
], ids=["path-none", "path-empty", "size-str", "stats-list", "mtime-negative", "app-negative", "app-huge", "app-empty"])
def test_transaction_api_arguments_are_checked(tmp_path, call):
    """Plain TypeError/OverflowError (or, for a None path, a file named "None") before."""
    t = docc.Table.create(str(tmp_path / "t"), pa.schema([("id", pa.int64())]))
    txn = t.begin()
    with pytest.raises(exc.InvalidArgumentError):
        call(txn)


def test_history_limit_must_be_an_int(tmp_path):
    t = docc.Table.create(str(tmp_path / "t"), pa.schema([("id", pa.int64())]))
    with pytest.raises(exc.InvalidArgumentError, match="limit must be an int"):
        t.history("1")


def test_partition_column_listed_twice(tmp_path):
    """Before: "needs at least one column that is not a partition column", with one left."""
    schema = pa.schema([("a", pa.int64()), ("b", pa.int64())])
    with pytest.raises(exc.InvalidArgumentError, match='partition column "a" is listed twice'):
        docc.Table.create(str(tmp_path / "t"), schema, ["a", "a"])


# -- paths and versions a new user gets wrong (issue 18) ---------------------------------------------


def test_table_paths_new_users_get_wrong(tmp_path, monkeypatch):
    import pyarrow as pa

    f = tmp_path / "regular-file"
    f.write_text("x")
    with pytest.raises(exc.TableNotFoundError, match="it is a file"):
        docc.Table(f)
    with pytest.raises(exc.InvalidArgumentError, match="must not be empty"):
        docc.Table("")
    monkeypatch.setenv("HOME", str(tmp_path))
    docc.Table.create(tmp_path / "home-table", pa.schema([("id", pa.int64())]))
    assert docc.Table("~/home-table").path == str(tmp_path / "home-table")
    t = docc.Table("~/home-table")
    with pytest.raises(exc.InvalidArgumentError, match="version must be >= 0, got -1"):
        t.snapshot(-1)


@pytest.mark.parametrize("call, problem, position", [
    (lambda t: t.delete("n > 1 AND nope = 1"), "unknown_column", 11),
    (lambda t: t.snapshot().to_pyarrow(where="n >"), "invalid", ...),
    (lambda t: t.update("n = 1", {"n": "n + 9223372036854775807"}), "evaluation", ...),
    # A SET value naming an unknown column: about a name, so no position.
    (lambda t: t.update("n = 1", {"n": "nope + 1"}), "unknown_column", None),
], ids=["where-unknown-column", "where-syntax", "set-overflow", "set-unknown-column"])
def test_predicate_errors_say_what_is_wrong(tmp_path, call, problem, position):
    """PredicateError.problem names the kind of fault, so callers word errors from it rather than
    from the message text (concurrency.md §6: one hierarchy; attributes declared on the class).
    ``position`` is 1-based; ``...`` means any."""
    schema = pa.schema([("n", pa.int64())])
    t = docc.Table.create(str(tmp_path / "t"), schema)
    t.append(pa.table({"n": [1, 2]}, schema=schema))
    with pytest.raises(exc.PredicateError) as info:
        call(t)
    assert info.value.problem == problem, info.value
    if position is not ...:
        assert info.value.position == position
    if problem == "unknown_column":
        assert "nope" in str(info.value)
