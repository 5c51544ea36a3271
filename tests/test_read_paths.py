"""The engine reads data files with the core's parquet reader (the row-level checker's reader) and
falls back to pyarrow only for an INT96 timestamp nested in a struct, list or map. Both must
return the same columns: every data file of every golden table is read both ways and compared value
for value and type for type (the reference is pyarrow's reader, which the engine used alone
before). INT96 dates outside the nanosecond range must keep their value on either path."""

from __future__ import annotations

import datetime
import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import delta_occ as docc
from delta_occ import _arrow, _core, _read

import golden_index
from conftest import GOLDEN, GOLDEN_REASON
from helpers import add, metadata, protocol, write_commit


def _readable(tables):
    """The golden tables delta-occ opens (the others are refused on purpose: test_golden.py)."""
    out = []
    for t in tables:
        try:
            out.append((t.rel, docc.Table(GOLDEN / t.repo / t.name).snapshot()))
        except docc.exceptions.DeltaOccError:
            pass
    return out


READABLE = _readable(golden_index.load())


def _data_fields(snap: docc.Snapshot) -> list:
    schema = json.loads(snap.handle.schema_json)
    parts = set(snap.handle.partition_columns)
    return [f for f in schema["fields"] if f["name"] not in parts]


@pytest.mark.skipif(not READABLE, reason=GOLDEN_REASON)
@pytest.mark.parametrize("rel,snap", READABLE, ids=[r for r, _ in READABLE])
def test_core_reader_equals_pyarrow_on_golden_files(rel, snap):
    fields, mode = _data_fields(snap), snap.handle.column_mapping_mode
    columns = _read.data_columns(fields, mode)
    for abs_path, _, _ in snap.handle.data_files():
        if not os.path.exists(abs_path):  # log-only golden tables: the reader refuses the file
            with pytest.raises(docc.exceptions.CorruptLogError, match="does not exist"):
                _read.read_file(snap.handle.storage, abs_path, columns)
            continue
        expected = _read.read_file_pyarrow(abs_path, columns)
        got = _read.read_file(snap.handle.storage, abs_path, columns)
        assert got[1] == expected[1], abs_path
        for f in fields:
            a, b = got[0][f["name"]], expected[0][f["name"]]
            assert a.type == b.type, (abs_path, f["name"])
            assert a.equals(b), (abs_path, f["name"])


def _table_with_file(tmp_path, table: pa.Table, **write_args) -> str:
    schema = json.dumps({"type": "struct", "fields": [
        {"name": "ts", "type": "timestamp", "nullable": True, "metadata": {}},
        {"name": "id", "type": "long", "nullable": True, "metadata": {}}]})
    pq.write_table(table, tmp_path / "f.parquet", **write_args)
    write_commit(tmp_path, 0, [protocol(), metadata(schema_string=schema), add("f.parquet")])
    return str(tmp_path / "f.parquet")


def test_int96_is_read_at_microseconds_and_keeps_far_dates(tmp_path):
    """Year 2500 is beyond int64 nanoseconds (2262): the core reads INT96 at microseconds (as
    Spark writes them), so engine and checker see the value pyarrow's microsecond decode gives."""
    far = datetime.datetime(2500, 1, 2, 3, 4, 5, 6)
    near = datetime.datetime(2020, 5, 6, 7, 8, 9, 10)
    data = pa.table({"ts": pa.array([far, near, None], pa.timestamp("us")), "id": pa.array([1, 2, 3], pa.int64())})
    # no embedded Arrow schema (as Spark writes INT96), so nothing else hints at microseconds
    path = _table_with_file(tmp_path, data, use_deprecated_int96_timestamps=True, store_schema=False)
    assert pq.ParquetFile(path).schema.column(0).physical_type == "INT96"
    reference = pq.read_table(path, coerce_int96_timestamp_unit="us").column("ts").to_pylist()
    assert reference == [far, near, None]
    arrays, n = _core.read_parquet_columns(path, [("ts", None), ("id", None)])
    assert n == 3
    core_ts = _arrow.array(arrays[0])
    assert core_ts.type.unit == "us"
    assert core_ts.to_pylist() == reference
    rows = docc.Table(str(tmp_path)).snapshot().to_pyarrow().to_pylist()
    utc = datetime.timezone.utc
    assert rows == [{"ts": far.replace(tzinfo=utc), "id": 1}, {"ts": near.replace(tzinfo=utc), "id": 2},
                    {"ts": None, "id": 3}]
    t = docc.Table(str(tmp_path))
    t.delete("ts > '2400-01-01'")
    assert t.snapshot().to_pyarrow().column("id").to_pylist() == [2, 3]


def test_nested_int96_goes_to_pyarrow(tmp_path):
    """An INT96 inside a struct is the one file the core does not decode (a type hint reaches only
    top-level columns); pyarrow reads it at microseconds."""
    far = datetime.datetime(2500, 1, 2, 3, 4, 5, 6)
    data = pa.table({"s": pa.array([{"t": far}], pa.struct([("t", pa.timestamp("us"))]))})
    pq.write_table(data, tmp_path / "n.parquet", use_deprecated_int96_timestamps=True, store_schema=False)
    path = str(tmp_path / "n.parquet")
    assert pq.ParquetFile(path).schema.column(0).physical_type == "INT96"
    assert _core.read_parquet_columns(path, [("s", None)]) is None
    assert _core.read_parquet_columns(path, [("absent", None)]) is not None  # INT96 only if read
    schema = json.dumps({"type": "struct", "fields": [{"name": "s", "nullable": True, "metadata": {}, "type": {
        "type": "struct", "fields": [{"name": "t", "type": "timestamp", "nullable": True, "metadata": {}}]}}]})
    write_commit(tmp_path, 0, [protocol(), metadata(schema_string=schema), add("n.parquet")])
    rows = docc.Table(str(tmp_path)).snapshot().to_pyarrow().to_pylist()
    assert rows == [{"s": {"t": far.replace(tzinfo=datetime.timezone.utc)}}]


@pytest.mark.parametrize("wanted,present", [
    ([("id", None), ("absent", None)], [True, False]),
    ([("ID", None)], [True]),  # any letter case, as the checker finds it
    ([("x", 7)], [False]),  # a field id the file does not carry
])
def test_core_reader_finds_columns_like_the_checker(tmp_path, wanted, present):
    data = pa.table({"ts": pa.array([None], pa.timestamp("us")), "id": pa.array([5], pa.int64())})
    path = _table_with_file(tmp_path, data)
    arrays, n = _core.read_parquet_columns(path, wanted)
    assert n == 1
    assert [a is not None for a in arrays] == present


@pytest.mark.parametrize("codec", ["brotli", "gzip", "zstd", "lz4", "snappy", "none"])
def test_every_pyarrow_codec_reads(tmp_path, codec):
    """The core is built with every codec pyarrow writes (snappy, zstd, lz4, gzip, brotli): the
    row-level checker must read every file the engine reads."""
    data = pa.table({"ts": pa.array([None, datetime.datetime(2021, 1, 1)], pa.timestamp("us")),
                     "id": pa.array([1, 2], pa.int64())})
    path = _table_with_file(tmp_path, data, compression=codec)
    arrays, n = _core.read_parquet_columns(path, [("id", None)])
    assert _arrow.array(arrays[0]).to_pylist() == [1, 2]
    got = docc.Table(str(tmp_path)).snapshot().to_pyarrow()
    assert got.column("id").to_pylist() == [1, 2]
    assert got.column("ts").to_pylist()[1] == datetime.datetime(2021, 1, 1, tzinfo=datetime.timezone.utc)


def test_table_behind_after_own_commit_reads_it_on_next_use(tmp_path):
    """commit() leaves the replay to the next use of the table: version, snapshot() and begin()."""
    _table_with_file(tmp_path, pa.table({"ts": pa.array([None], pa.timestamp("us")), "id": pa.array([1], pa.int64())}))
    data = pa.table({"ts": pa.array([None], pa.timestamp("us", tz="UTC")), "id": pa.array([1], pa.int64())})
    t = docc.Table(str(tmp_path))
    for use in (lambda: t.version, lambda: t.snapshot().version, lambda: t.begin().snapshot.version):
        r = t.delete("id = 1") if t.snapshot().to_pyarrow().num_rows else t.append(data)
        assert t._behind
        assert use() == r.version
        assert not t._behind


def test_missing_data_file_names_it(tmp_path):
    with pytest.raises(docc.exceptions.CorruptLogError, match="gone.parquet.*does not exist"):
        _core.read_parquet_columns(str(tmp_path / "gone.parquet"), [("id", None)])


@pytest.mark.parametrize("year,conflicts", [(2500, True), (2100, False)])
def test_checker_reads_int96_rows_as_the_engine_does(tmp_path, year, conflicts):
    """concurrency.md §4 rule 4: a winner's new file conflicts with a delete only if one of its
    rows satisfies the delete's predicate, decided on the file's rows when it has no stats. Here the
    row is an INT96 timestamp: a year-2500 one read at nanoseconds would overflow and the conflict
    be missed; a year-2100 one must not conflict (the file is not blamed for lacking stats)."""
    schema = pa.schema([("ts", pa.timestamp("us", tz="UTC")), ("id", pa.int64())])
    root = tmp_path / "t"
    t = docc.Table.create(root, schema, properties={"delta.enableDeletionVectors": "true"})
    t.append(pa.table({"ts": [datetime.datetime(2450, 1, 1, tzinfo=datetime.timezone.utc)], "id": [1]}, schema=schema))
    txn = t.begin(isolation_level="Serializable")
    txn.delete("ts > '2400-01-01'")

    winner = pa.table({"ts": pa.array([datetime.datetime(year, 6, 1)], pa.timestamp("us")), "id": [2]})
    # store_schema=False: no embedded Arrow schema to hint microseconds, as Spark writes INT96
    pq.write_table(winner, root / "w.parquet", use_deprecated_int96_timestamps=True, store_schema=False)
    w = docc.Table(root).begin()
    w.add_file("w.parquet", {}, os.path.getsize(root / "w.parquet"))  # no stats: rows decide
    w.commit()

    if conflicts:
        with pytest.raises(docc.exceptions.ConcurrentAppendException):
            txn.commit()
    else:
        txn.commit()
        assert sorted(docc.Table(root).snapshot().to_pyarrow().column("id").to_pylist()) == [2]


def test_filtered_read_lists_only_the_files_it_may_read(tmp_path):
    """to_pyarrow(where=) asks the core for the selected files alone (paths and partition values
    by index, in files() order); every other live file stays out of Python. An index out of range
    is an error naming the live-file count, not a wrong row."""
    t = docc.Table.create(str(tmp_path), pa.schema([("p", pa.string()), ("x", pa.int64())]), partition_by=["p"])
    for p, xs in [("a", [1, 2]), ("b", [3]), ("c", [4, 5])]:
        t.append(pa.table({"p": [p] * len(xs), "x": xs}))
    snap = t.snapshot()
    files = snap.files(["path", "partition_values"]).to_pylist()
    picked = [i for i, f in enumerate(files) if dict(f["partition_values"])["p"] != "b"][::-1]
    listed = snap.handle.data_files(picked)
    assert [log_path for _, log_path, _ in listed] == [files[i]["path"] for i in picked]
    parts = _arrow.batch(snap.handle.partition_values(picked)).column(0).to_pylist()
    assert parts == [dict(files[i]["partition_values"])["p"] for i in picked]
    assert len(snap.handle.data_files()) == len(files) == 3
    # The rows themselves are the reference: what each append wrote.
    got = snap.to_pyarrow(where="p <> 'b' AND x > 1").sort_by("x").to_pylist()
    assert got == [{"p": "a", "x": 2}, {"p": "c", "x": 4}, {"p": "c", "x": 5}]
    with pytest.raises(docc.exceptions.InvalidArgumentError, match="index 3 is out of range.* 3 live files"):
        snap.handle.data_files([0, 3])
    with pytest.raises(docc.exceptions.InvalidArgumentError, match="index 7 is out of range"):
        snap.handle.partition_values([7])
