"""One-call writes as deltalake users write them (``delta_occ.write_table``), rows in every form
(``delta_occ.data_input``), and the table tools deltalake users reach for (``Table.detail``,
``create_checkpoint``, ``cleanup_metadata``, ``unset_properties``).

Oracles: deltalake 1.6 reads what we write and writes what we read (tables without deletion
vectors); delta-kernel-rs reads tables from a checkpoint alone; expected rows are written out by
hand from the inputs; log facts (commit file times, ``_last_checkpoint``, in-commit timestamps)
are read from the log files themselves; DESCRIBE DETAIL's field names are Delta's documented
ones."""

from __future__ import annotations

import datetime as dt
import json
import os
import pathlib
import shutil
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

import delta_occ as docc
from delta_occ import exceptions as ex
from delta_occ import write_modes

ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "s": ["a", "b", None], "p": ["x", "y", "x"]})
MORE = pa.table({"id": pa.array([10, 11], pa.int64()), "s": ["c", "d"], "p": ["y", "z"]})


def rows_of(t: pa.Table) -> List[Dict[str, Any]]:
    return sorted(t.select(sorted(t.column_names)).to_pylist(), key=lambda r: json.dumps(r, sort_keys=True, default=str))


def deltalake_rows(uri: str, options: Any) -> List[Dict[str, Any]]:
    return rows_of(DeltaTable(uri, storage_options=options).to_pyarrow_table())


def our_rows(uri: str, options: Any) -> List[Dict[str, Any]]:
    return rows_of(docc.Table(uri, options).snapshot().to_pyarrow())


def dl_options(options: Any) -> Any:
    """deltalake writes to S3 only when told how to commit; one writer at a time here."""
    return None if options is None else dict(options, AWS_S3_ALLOW_UNSAFE_RENAME="true")


# -- every mode on a new and an existing table ----------------------------------------------------

# (mode, on an existing table?) -> rows afterwards (None: raises TableAlreadyExistsError), and
# whether a commit was written. The existing table holds ROWS, written by deltalake.
MODES = [
    ("error", False, MORE, True),
    ("append", False, MORE, True),
    ("overwrite", False, MORE, True),
    ("ignore", False, MORE, True),
    ("error", True, None, False),
    ("append", True, pa.concat_tables([ROWS, MORE]), True),
    ("overwrite", True, MORE, True),
    ("ignore", True, ROWS, False),
]


@pytest.mark.parametrize("mode,existing,expected,commits", MODES, ids=[f"{m}-{'existing' if e else 'new'}" for m, e, _, _ in MODES])
def test_every_mode_on_a_new_and_an_existing_table(where, mode, existing, expected, commits):
    uri, opts = where("t"), where.options
    if existing:
        write_deltalake(uri, ROWS, partition_by=["p"], storage_options=dl_options(opts))
        assert our_rows(uri, opts) == rows_of(ROWS)  # we read what write_deltalake wrote
    before = DeltaTable(uri, storage_options=opts).version() if existing else -1
    if expected is None:
        with pytest.raises(ex.TableAlreadyExistsError, match="already holds a Delta table"):
            docc.write_table(uri, MORE, mode, partition_by="p", storage_options=opts)
        expected = ROWS
    else:
        r = docc.write_table(uri, MORE, mode, partition_by="p", storage_options=opts)
        assert r.committed is commits
        assert r.version == (before + 1 if commits else before)
        if not commits:
            assert "mode='ignore'" in r.reason
    dl = DeltaTable(uri, storage_options=opts)
    assert dl.version() == (before + 1 if commits else before)
    assert dl.metadata().partition_columns == ["p"]
    assert deltalake_rows(uri, opts) == our_rows(uri, opts) == rows_of(expected)
    if not existing:
        # the first write is one commit: the table and its rows (as deltalake writes it)
        (entry,) = dl.history()
        assert entry["operation"] == "WRITE" and entry["operationParameters"]["mode"] == write_modes.MODES[mode]


def test_the_first_write_carries_name_description_and_properties(tmp_path):
    uri = str(tmp_path / "t")
    docc.write_table(uri, ROWS, name="events", description="what happened", properties={"delta.appendOnly": "true"})
    m = DeltaTable(uri).metadata()
    assert (m.name, m.description, m.configuration) == ("events", "what happened", {"delta.appendOnly": "true"})
    # passing the same definition again is a rerun of the same script: allowed
    r = docc.write_table(uri, MORE, "append", name="events", description="what happened", properties={"delta.appendOnly": "true"})
    assert r.version == 1


def test_a_table_stands_for_its_uri(tmp_path):
    uri = str(tmp_path / "t")
    docc.write_table(uri, ROWS)
    t = docc.Table(uri)
    assert docc.write_table(t, MORE, "append").version == 1
    assert deltalake_rows(uri, None) == rows_of(pa.concat_tables([ROWS, MORE]))
    with pytest.raises(ex.InvalidArgumentError, match="storage_options go with a path"):
        docc.write_table(t, MORE, "append", storage_options={"AWS_REGION": "x"})
    assert DeltaTable(uri).version() == 1


def test_replace_where_on_a_new_table_checks_every_row(tmp_path):
    uri = str(tmp_path / "t")
    # deltalake refuses rows outside its predicate on a new table too
    with pytest.raises(ex.InvalidArgumentError, match="do not satisfy replace_where"):
        docc.write_table(uri, ROWS, "overwrite", replace_where="p = 'x'")
    assert not (tmp_path / "t" / "_delta_log").exists() or not os.listdir(tmp_path / "t" / "_delta_log")
    assert not list((tmp_path / "t").rglob("*.parquet"))  # the refused write left no file behind
    docc.write_table(uri, ROWS.filter(pa.compute.equal(ROWS["p"], "x")), "overwrite", replace_where="p = 'x'")
    docc.write_table(uri, MORE, "append")
    docc.write_table(uri, pa.table({"id": pa.array([7], pa.int64()), "s": ["q"], "p": ["x"]}), "overwrite", replace_where="p = 'x'")
    assert deltalake_rows(uri, None) == rows_of(pa.concat_tables([MORE, pa.table({"id": pa.array([7], pa.int64()), "s": ["q"], "p": ["x"]})]))


def test_schema_mode_merge_adds_a_column(tmp_path):
    uri = str(tmp_path / "t")
    docc.write_table(uri, ROWS)
    wider = pa.table({"id": pa.array([4], pa.int64()), "s": ["e"], "p": ["x"], "n": pa.array([1.5])})
    with pytest.raises(ex.SchemaMismatchError):
        docc.write_table(uri, wider, "append")
    docc.write_table(uri, wider, "append", schema_mode="merge")
    got = DeltaTable(uri).to_pyarrow_table()
    assert got.schema.field("n").type == pa.float64() and got.num_rows == 4


# -- refusals: typed, naming what to do, nothing written ------------------------------------------

REFUSED = [
    ("mode", dict(mode="upsert"), ex.InvalidArgumentError, "mode must be one of"),
    ("configuration", dict(configuration={"a": "b"}), ex.InvalidArgumentError, "properties="),
    ("predicate", dict(mode="overwrite", predicate="id > 1"), ex.InvalidArgumentError, "replace_where="),
    ("target_file_size", dict(target_file_size=1 << 20), ex.InvalidArgumentError, "target_file_size"),
    ("writer_properties", dict(writer_properties=object()), ex.InvalidArgumentError, "writer_properties"),
    ("commit_properties", dict(commit_properties=object()), ex.InvalidArgumentError, "app_id="),
    ("post_commithook", dict(post_commithook_properties=object()), ex.InvalidArgumentError, "create_checkpoint"),
    ("unknown", dict(colour="red"), ex.InvalidArgumentError, "unexpected argument 'colour'"),
    ("replace_where-append", dict(mode="append", replace_where="id > 1"), ex.InvalidArgumentError, 'mode="overwrite"'),
    ("app_version-alone", dict(app_version=3), ex.InvalidArgumentError, "app_id and app_version"),
]


@pytest.mark.parametrize("case,kwargs,error,message", REFUSED, ids=[c[0] for c in REFUSED])
def test_refused_arguments_write_nothing(tmp_path, case, kwargs, error, message):
    kwargs = dict(kwargs)
    mode = kwargs.pop("mode", "error")
    with pytest.raises(error, match=message):
        docc.write_table(str(tmp_path / "t"), ROWS, mode, **kwargs)
    assert not (tmp_path / "t").exists()


EXISTING_REFUSED = [
    ("partition_by", dict(partition_by=["s"]), "partitioned by \\['p'\\]"),
    ("properties", dict(properties={"delta.appendOnly": "true"}), "Table.set_properties"),
    ("name", dict(name="other"), "name='other'"),
    ("description", dict(description="other"), "description='other'"),
]


@pytest.mark.parametrize("case,kwargs,message", EXISTING_REFUSED, ids=[c[0] for c in EXISTING_REFUSED])
@pytest.mark.parametrize("mode", ["append", "overwrite"])
def test_a_definition_the_existing_table_lacks_is_refused(tmp_path, case, kwargs, message, mode):
    uri = str(tmp_path / "t")
    write_deltalake(uri, ROWS, partition_by=["p"], name="events", description="d")
    with pytest.raises(ex.InvalidArgumentError, match=message) as info:
        docc.write_table(uri, MORE, mode, **kwargs)
    assert info.value.table == docc.Table(uri).path and info.value.version == 0
    assert DeltaTable(uri).version() == 0


# -- two first writes at once -----------------------------------------------------------------------

# The loser's create conflicts with the winner's version 0; it then writes as its mode says on the
# winner's table. Rows afterwards (None: TableAlreadyExistsError), and versions in the log.
RACE = [
    ("append", pa.concat_tables([ROWS, MORE]), 2),
    ("overwrite", MORE, 2),
    ("ignore", ROWS, 1),
    ("error", None, 1),
]


@pytest.mark.parametrize("mode,expected,versions", RACE, ids=[r[0] for r in RACE])
@pytest.mark.parametrize("winner", ["delta-occ", "deltalake"])
def test_a_first_write_that_loses_the_create_race_writes_as_its_mode_says(tmp_path, monkeypatch, mode, expected, versions, winner):
    uri = str(tmp_path / "t")
    real = docc.Table.begin_create

    def begin_then_lose(*args, **kwargs):
        txn = real(*args, **kwargs)  # the location was free when looked at ...
        if winner == "deltalake":
            write_deltalake(uri, ROWS, partition_by=["p"])  # ... and another writer creates the table now
        else:
            monkeypatch.setattr(docc.Table, "begin_create", real)
            docc.write_table(uri, ROWS, partition_by="p")
        return txn

    monkeypatch.setattr(docc.Table, "begin_create", begin_then_lose)
    if expected is None:
        with pytest.raises(ex.TableAlreadyExistsError):
            docc.write_table(uri, MORE, mode, partition_by="p")
        expected = ROWS
    else:
        docc.write_table(uri, MORE, mode, partition_by="p")
    assert DeltaTable(uri).version() == versions - 1
    assert deltalake_rows(uri, None) == rows_of(expected)
    # the losing attempt's files were removed: every data file on disk is one a commit added
    added = set()
    for commit in sorted((tmp_path / "t" / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            a = json.loads(line).get("add")
            if a:
                added.add(a["path"])
    on_disk = {str(p.relative_to(tmp_path / "t")) for p in (tmp_path / "t").rglob("*.parquet") if "_delta_log" not in p.parts}
    assert on_disk == added


def test_a_location_that_is_found_free_but_taken_at_create_is_written_as_existing(tmp_path, monkeypatch):
    """The other window: the table appears between the look-up and begin_create's own check."""
    uri = str(tmp_path / "t")
    write_deltalake(uri, ROWS)
    real, looks = write_modes._existing, []

    def first_look_misses(u, o):
        looks.append(u)
        return None if len(looks) == 1 else real(u, o)

    monkeypatch.setattr(write_modes, "_existing", first_look_misses)
    docc.write_table(uri, MORE, "append")
    assert len(looks) == 2
    assert deltalake_rows(uri, None) == rows_of(pa.concat_tables([ROWS, MORE]))


def test_concurrent_first_appends_all_land(tmp_path):
    """Threads racing to create one table with mode="append": one creates it, every row lands."""
    uri = str(tmp_path / "t")
    n = 4
    start = threading.Barrier(n)
    errors: List[BaseException] = []

    def write(i: int) -> None:
        start.wait()
        try:
            docc.write_table(uri, pa.table({"id": pa.array([i], pa.int64())}), "append")
        except BaseException as e:  # noqa: B036 - reported below
            errors.append(e)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert sorted(DeltaTable(uri).to_pyarrow_table()["id"].to_pylist()) == list(range(n))
    assert DeltaTable(uri).version() == n - 1


# -- rows in every form -------------------------------------------------------------------------------

# (kind, the rows in that form): every form holds the rows of ROWS.
def _forms():
    import pandas as pd
    import polars as pl

    class Stream:  # only the Arrow C stream interface (as DuckDB results, arro3, nanoarrow)
        def __init__(self, t):
            self.t = t

        def __arrow_c_stream__(self, requested_schema=None):
            return self.t.__arrow_c_stream__(requested_schema)

    class Array:  # only the Arrow C array interface
        def __init__(self, b):
            self.b = b

        def __arrow_c_array__(self, requested_schema=None):
            return self.b.__arrow_c_array__(requested_schema)

    batch = ROWS.combine_chunks().to_batches()[0]
    return {
        "pyarrow-table": lambda: ROWS,
        "record-batch": lambda: batch,
        "record-batch-reader": lambda: pa.RecordBatchReader.from_batches(ROWS.schema, ROWS.to_batches()),
        "list-of-batches": lambda: [batch.slice(0, 1), batch.slice(1)],
        "pandas": lambda: pd.DataFrame(ROWS.to_pydict()),
        "pandas-with-index": lambda: pd.DataFrame(ROWS.to_pydict(), index=[7, 8, 9]),
        "polars": lambda: pl.DataFrame(ROWS.to_pydict()),
        "c-stream": lambda: Stream(ROWS),
        "c-array": lambda: Array(batch),
    }


FORMS = list(_forms())


@pytest.mark.parametrize("kind", FORMS)
def test_every_form_of_rows_writes_the_same_rows(tmp_path, kind):
    make = _forms()[kind]
    uri = str(tmp_path / "t")
    docc.write_table(uri, make())
    docc.write_table(uri, make(), "append")
    assert deltalake_rows(uri, None) == rows_of(pa.concat_tables([ROWS, ROWS]))
    assert DeltaTable(uri).schema().to_arrow().names == ["id", "s", "p"]  # a pandas index is not written
    t = docc.Table(uri)
    t.overwrite(make())
    t.append(make())
    t.merge(make(), "t.id = s.id", when_matched_update={"s": "'m'"})  # (a MERGE source)
    assert deltalake_rows(uri, None) == rows_of(pa.concat_tables([ROWS, ROWS]).set_column(1, "s", pa.array(["m"] * 6)))


def _frames(kind: str):
    """A frame with the types pandas and polars users have: strings (large / view), naive
    timestamps (ns / us), floats with nulls, and the rows it holds as Python values."""
    import pandas as pd
    import polars as pl

    when = [dt.datetime(2024, 1, 1, 10), dt.datetime(2024, 1, 2), dt.datetime(2024, 1, 3, 23, 59, 59)]
    values = {"id": [1, 2, 3], "s": ["a", "b", None], "ts": when, "f": [1.5, None, 2.0]}
    expected = [dict(zip(values, row)) for row in zip(*values.values())]
    if kind == "pandas":
        return pd.DataFrame({"id": values["id"], "s": values["s"], "ts": pd.to_datetime(when), "f": values["f"]}), expected
    return pl.DataFrame(values), expected


def py_rows(t: pa.Table) -> List[Dict[str, Any]]:
    return sorted(t.select(["id", "s", "ts", "f"]).to_pylist(), key=lambda r: r["id"])


@pytest.mark.parametrize("kind", ["pandas", "polars"])
def test_pandas_and_polars_frames_round_trip_with_deltalake(where, kind):
    frame, expected = _frames(kind)
    ours, theirs, opts = where("ours"), where("theirs"), where.options
    docc.write_table(ours, frame, storage_options=opts)
    write_deltalake(theirs, frame, storage_options=dl_options(opts))
    assert py_rows(DeltaTable(ours, storage_options=opts).to_pyarrow_table()) == expected  # deltalake reads ours
    assert py_rows(docc.Table(theirs, opts).snapshot().to_pyarrow()) == expected  # we read theirs
    docc.write_table(theirs, frame, "append", storage_options=opts)  # and write into theirs
    write_deltalake(ours, frame, mode="append", storage_options=dl_options(opts))  # they write into ours
    for uri in (ours, theirs):
        both = sorted(expected + expected, key=lambda r: r["id"])
        assert py_rows(DeltaTable(uri, storage_options=opts).to_pyarrow_table()) == both
        assert py_rows(docc.Table(uri, opts).snapshot().to_pyarrow()) == both


BAD_DATA = [
    ("string", "not rows", "must be a pyarrow Table"),
    ("empty-list", [], "empty list"),
    ("list-of-ints", [1, 2], "a list must hold record batches"),
    ("lazy-frame", "lazy", "LazyFrame: collect"),
    ("unsigned", pa.table({"u": pa.array([1], pa.uint32())}), "UInt32 has no Delta equivalent"),
]


@pytest.mark.parametrize("case,data,message", BAD_DATA, ids=[b[0] for b in BAD_DATA])
def test_data_that_is_not_rows_is_refused(tmp_path, case, data, message):
    if data == "lazy":
        import polars as pl

        data = pl.DataFrame({"a": [1]}).lazy()
    with pytest.raises(ex.InvalidArgumentError, match=message):
        docc.write_table(str(tmp_path / "t"), data)
    assert not (tmp_path / "t").exists()


def test_writing_pyarrow_imports_neither_pandas_nor_polars(tmp_path):
    """Rows made from buffers: pyarrow's own ``pa.array([...])`` / ``pa.table({...})`` look for
    pandas (they would import it before delta-occ is called). The writes here read no existing
    rows (an overwrite that reads them converts Python values with pyarrow, which imports pandas
    where it is installed)."""
    uri = str(tmp_path / "t")
    code = f"""
import struct, sys
import pyarrow as pa
import delta_occ

def rows(*values):
    a = pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(struct.pack(f"<{{len(values)}}q", *values))])
    return pa.Table.from_arrays([a], names=["a"])

delta_occ.write_table({uri!r}, rows(1, 2))
delta_occ.write_table({uri!r}, rows(3), "append")
delta_occ.write_table({uri!r}, rows(6), "ignore")
delta_occ.write_table({str(tmp_path / "u")!r}, rows(4), "overwrite")
delta_occ.Table({uri!r}).append(rows(4, 5))
print(sorted(m for m in ("pandas", "polars") if m in sys.modules))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ))
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr
    assert sorted(DeltaTable(uri).to_pyarrow_table()["a"].to_pylist()) == [1, 2, 3, 4, 5]


# -- DESCRIBE DETAIL ------------------------------------------------------------------------------------

DETAIL_FIELDS = [  # Delta's DESCRIBE DETAIL columns (docs "Review Delta Lake table details"), statistics aside
    "format", "id", "name", "description", "location", "createdAt", "lastModified", "partitionColumns", "clusteringColumns",
    "numFiles", "sizeInBytes", "properties", "minReaderVersion", "minWriterVersion", "tableFeatures",
]


def ms(d: dt.datetime) -> int:
    return round(d.timestamp() * 1000)


def test_detail_of_a_table_deltalake_wrote(where):
    uri, opts = where("t"), where.options
    before = time.time()
    write_deltalake(uri, ROWS, partition_by=["p"], name="events", description="d", configuration={"delta.appendOnly": "false"},
                    storage_options=dl_options(opts))
    write_deltalake(uri, MORE, mode="append", storage_options=dl_options(opts))
    after = time.time()
    d = docc.Table(uri, opts).detail()
    assert list(d) == DETAIL_FIELDS
    dl = DeltaTable(uri, storage_options=opts)
    m, p = dl.metadata(), dl.protocol()
    adds = dl.get_add_actions(flatten=True).to_pydict() if hasattr(dl.get_add_actions(flatten=True), "to_pydict") else None
    adds = pa.table(dl.get_add_actions(flatten=True)).to_pydict() if adds is None else adds
    assert d["format"] == "delta"
    assert (d["id"], d["name"], d["description"]) == (m.id, m.name, m.description)
    assert d["location"] == docc.Table(uri, opts).path
    assert ms(d["createdAt"]) == m.created_time and d["createdAt"].tzinfo is not None
    assert (d["partitionColumns"], d["clusteringColumns"]) == (m.partition_columns, [])
    assert (d["numFiles"], d["sizeInBytes"]) == (len(adds["path"]), sum(adds["size_bytes"]))
    assert d["properties"] == m.configuration
    assert (d["minReaderVersion"], d["minWriterVersion"]) == (p.min_reader_version, p.min_writer_version) == (1, 2)
    # PROTOCOL.md "Table Features": writer version 2 supports appendOnly and invariants
    assert d["tableFeatures"] == ["appendOnly", "invariants"]
    # lastModified: the newest commit file's time (a local file's mtime; on S3 inside the write's window)
    if where.kind == "local":
        commit = pathlib.Path(uri) / "_delta_log" / f"{1:020d}.json"
        assert ms(d["lastModified"]) == int(commit.stat().st_mtime * 1000)
    else:
        assert before - 2 <= d["lastModified"].timestamp() <= after + 2


def test_detail_of_a_table_with_features_clustering_and_in_commit_timestamps(tmp_path):
    uri = str(tmp_path / "t")
    props = {"delta.enableDeletionVectors": "true", "delta.enableInCommitTimestamps": "true"}
    t = docc.Table.create(uri, ROWS.schema, properties=props, cluster_by=["id"], name="c")
    t.append(ROWS)
    d = t.detail()
    p = DeltaTable(uri).protocol()
    assert d["tableFeatures"] == sorted(set(p.reader_features or []) | set(p.writer_features or []))
    assert {"deletionVectors", "inCommitTimestamp", "clustering", "domainMetadata"} <= set(d["tableFeatures"])
    assert (d["minReaderVersion"], d["minWriterVersion"]) == (p.min_reader_version, p.min_writer_version) == (3, 7)
    assert d["clusteringColumns"] == ["id"] and d["partitionColumns"] == []
    # with in-commit timestamps, lastModified is the newest commit's inCommitTimestamp
    info = [json.loads(line) for line in (tmp_path / "t" / "_delta_log" / f"{1:020d}.json").read_text().splitlines()]
    ict = next(a["commitInfo"]["inCommitTimestamp"] for a in info if "commitInfo" in a)
    assert ms(d["lastModified"]) == ict


# -- checkpoints and log cleanup --------------------------------------------------------------------------

def _table_with_commits(tmp_path, n: int, props: Dict[str, str]) -> docc.Table:
    uri = str(tmp_path / "t")
    docc.write_table(uri, ROWS, properties=props)
    t = docc.Table(uri)
    for i in range(1, n):
        t.append(pa.table({"id": pa.array([100 + i], pa.int64()), "s": ["n"], "p": ["z"]}))
    return t


def _without_commits_up_to(root: pathlib.Path, scratch: pathlib.Path, version: int) -> pathlib.Path:
    shutil.copytree(root, scratch)
    for f in (scratch / "_delta_log").glob("*.json"):
        if int(f.name[:20]) <= version:
            f.unlink()
    return scratch


def kernel_rows(root: pathlib.Path) -> List[Dict[str, Any]]:
    import delta_kernel_rust_sharing_wrapper as dk

    uri = root.resolve().as_uri() + "/"
    iface = dk.PythonInterface(uri)
    result = dk.ScanBuilder(dk.Table(uri).snapshot(iface)).build().execute(iface)
    table = result if isinstance(result, pa.Table) else pa.Table.from_batches(list(result))
    return rows_of(table)


@pytest.mark.parametrize("policy", ["classic", "v2"])
def test_create_checkpoint_is_what_readers_load(tmp_path, policy):
    props = {"delta.checkpointPolicy": "v2"} if policy == "v2" else {}
    t = _table_with_commits(tmp_path, 5, props)
    expected = our_rows(t.path, None)
    assert t.create_checkpoint() == 4
    last = json.loads((tmp_path / "t" / "_delta_log" / "_last_checkpoint").read_text())
    assert last["version"] == 4
    alone = _without_commits_up_to(tmp_path / "t", tmp_path / "alone", 4)
    assert kernel_rows(alone) == expected
    if policy == "classic":
        assert deltalake_rows(str(alone), None) == expected
    # and the checkpoint is where replay starts for us too
    assert docc.Table(str(alone)).snapshot().handle.checkpoint_version == 4
    assert our_rows(str(alone), None) == expected


def test_create_checkpoint_refuses_a_table_it_cannot_write(tmp_path):
    from helpers import metadata, protocol, simple_table, write_commit

    root = simple_table(tmp_path / "t")
    write_commit(root, 1, [protocol(1, 7, writer_features=["someFutureWriterFeature"]), metadata()])
    t = docc.Table(str(root))
    with pytest.raises(ex.UnsupportedFeatureError, match="someFutureWriterFeature"):
        t.create_checkpoint()
    with pytest.raises(ex.UnsupportedFeatureError):
        t.cleanup_metadata()
    assert not (root / "_delta_log" / "_last_checkpoint").exists()


# (retention, checkpoint first?) -> the commit versions left, the oldest version readable
CLEANUP = [
    ("interval 0 seconds", True, [4, 5, 6], 4),
    ("interval 0 seconds", False, [0, 1, 2, 3, 4, 5, 6], None),  # no checkpoint to start from: nothing goes
    ("interval 30 days", True, [0, 1, 2, 3, 4, 5, 6], None),  # nothing expired
]


@pytest.mark.parametrize("retention,checkpoint,left,oldest", CLEANUP, ids=["expired", "no-checkpoint", "in-window"])
def test_cleanup_metadata_removes_expired_commits_only(tmp_path, retention, checkpoint, left, oldest):
    t = _table_with_commits(tmp_path, 5, {"delta.logRetentionDuration": retention})
    if checkpoint:
        t.create_checkpoint()
    t.append(MORE)
    t.append(MORE)
    expected = our_rows(t.path, None)
    r = t.cleanup_metadata()
    log = tmp_path / "t" / "_delta_log"
    versions = sorted(int(f.name[:20]) for f in log.glob("*.json"))
    assert versions == left
    assert r["oldest_version"] == oldest and r["deleted"] == 7 - len(left)
    assert deltalake_rows(t.path, None) == expected == our_rows(t.path, None)
    assert kernel_rows(tmp_path / "t") == expected
    if oldest is not None:
        with pytest.raises(ex.VersionNotFoundError):
            t.snapshot(oldest - 1).to_pyarrow()


# -- UNSET TBLPROPERTIES ---------------------------------------------------------------------------------

# (deltalake accepts only the delta.* keys it knows)
A, R, C = "delta.appendOnly", "delta.logRetentionDuration", "delta.checkpointInterval"
PROPS = {A: "false", R: "interval 7 days", C: "10"}

# (keys, if_exists) -> properties left (None: InvalidArgumentError, nothing committed)
UNSET = [
    ([R], False, {A: "false", C: "10"}),
    (R, False, {A: "false", C: "10"}),
    ([R, C], False, {A: "false"}),
    ([R, "nope"], False, None),
    ([R, "nope"], True, {A: "false", C: "10"}),
    (["nope"], True, PROPS),
]


@pytest.mark.parametrize("keys,if_exists,left", UNSET)
def test_unset_properties(tmp_path, keys, if_exists, left):
    uri = str(tmp_path / "t")
    write_deltalake(uri, ROWS, configuration=PROPS)
    t = docc.Table(uri)
    if left is None:
        with pytest.raises(ex.InvalidArgumentError, match="no property 'nope'") as info:
            t.unset_properties(keys, if_exists=if_exists)
        assert info.value.table == t.path and info.value.version == 0
        left = PROPS
    else:
        r = t.unset_properties(keys, if_exists=if_exists)
        assert r.committed is (left != PROPS)
    dl = DeltaTable(uri)
    assert dl.metadata().configuration == left
    if left != PROPS:
        assert dl.history(1)[0]["operation"] == "UNSET TBLPROPERTIES"
    else:
        assert dl.version() == 0
