"""Reading a snapshot concurrently and as a stream (issue 45, items 1 and 2): ``to_pyarrow``,
``to_batches``, ``__arrow_c_stream__``, ``to_pandas`` and ``to_pyarrow_dataset`` return the same
rows, in table order, on a local disk and on S3.

Oracles: deltalake 1.6 for tables without deletion vectors and delta-kernel-rs for tables with
them (the rows); pyarrow reading each data file on its own, in the order of the snapshot's file
list, for the order (``pq.read_table`` of the files, not our reader); the spec (api.md "Reading
and writing (new)") for the refusals."""

from __future__ import annotations

import threading
import time

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import delta_occ as docc
from delta_occ import exceptions as exc
from delta_occ import workers

from conftest import Where
from helpers import kernel_rows

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.float64())])


def _rows(lo: int, hi: int, p) -> pa.Table:
    return pa.table({"id": list(range(lo, hi)), "p": [p] * (hi - lo), "v": [i / 4 for i in range(lo, hi)]}, schema=SCHEMA)


def _make(where, kind: str):
    """A table of 12 files (7 rows each): flat, partitioned (a null partition too), or with DVs
    on some files (rows deleted by DV)."""
    props = {"delta.enableDeletionVectors": "true"} if kind == "dv" else {}
    t = docc.Table.create(where(kind), SCHEMA, partition_by=["p"] if kind == "partitioned" else [], properties=props, storage_options=where.options)
    for i in range(12):
        t.append(_rows(i * 7, i * 7 + 7, [None, "a", "b c"][i % 3]))
    if kind == "dv":
        t.delete("id % 5 = 0")
    return t


def _oracle(t, kind: str, options) -> pa.Table:
    if kind == "dv":
        return kernel_rows(t).select(SCHEMA.names)
    import deltalake

    return deltalake.DeltaTable(t.path, storage_options=options).to_pyarrow_table().select(SCHEMA.names)


def _local(tmp_path) -> Where:
    return Where(str(tmp_path), None, "local")


def _sorted(table: pa.Table) -> list:
    return sorted(table.select(SCHEMA.names).cast(SCHEMA).to_pylist(), key=lambda r: r["id"])


READS = {
    "to_pyarrow": lambda s: s.to_pyarrow(),
    "to_batches": lambda s: pa.Table.from_batches(list(s.to_batches(batch_size=3)), schema=s.schema),
    "arrow_c_stream": lambda s: pa.table(s),
    "to_pandas": lambda s: pa.Table.from_pandas(s.to_pandas(), schema=s.schema, preserve_index=False),
}


@pytest.mark.parametrize("kind", ["flat", "partitioned", "dv"])
def test_every_read_returns_the_oracles_rows(where, kind):
    t = _make(where, kind)
    expected = _sorted(_oracle(t, kind, where.options))
    assert len(expected) == 84 - (17 if kind == "dv" else 0)  # 84 rows, 17 ids divisible by 5
    snap = t.snapshot()
    for name, read in READS.items():
        assert _sorted(read(snap)) == expected, name


def test_rows_come_in_table_order_and_where_filters_per_file(tmp_path):
    t = _make(_local(tmp_path), "partitioned")
    snap = t.snapshot()
    files = snap.files(["path"]).column("path").to_pylist()
    parts = []
    for path in files:
        data = pq.read_table(str(tmp_path / "partitioned" / path.replace("%20", " ")))
        parts.append(data.column("id"))
    expected_order = [i for col in parts for i in col.to_pylist()]
    assert snap.to_pyarrow().column("id").to_pylist() == expected_order
    assert [i for b in snap.to_batches(batch_size=2) for i in b.column("id").to_pylist()] == expected_order
    # A where keeps the order of the rows it keeps; columns come in the order asked for.
    got = snap.to_batches(where="v > 10 AND p IS NOT NULL", columns=["v", "id"]).read_all()
    assert got.column_names == ["v", "id"]
    assert got.column("id").to_pylist() == [i for i in expected_order if i / 4 > 10 and i // 7 % 3 != 0]


def test_batches_hold_at_most_batch_size_rows(tmp_path):
    t = _make(_local(tmp_path), "flat")
    sizes = [b.num_rows for b in t.snapshot().to_batches(batch_size=3)]
    assert max(sizes) <= 3 and sum(sizes) == 84


@pytest.mark.parametrize("batch_size", [0, -1, 2.5, "3", True])
def test_bad_batch_size_is_refused(tmp_path, batch_size):
    t = _make(_local(tmp_path), "flat")
    with pytest.raises(exc.InvalidArgumentError, match="batch_size"):
        t.snapshot().to_batches(batch_size=batch_size)


def test_dataset_reads_what_deltalake_reads(where):
    t = _make(where, "partitioned")
    dataset = t.snapshot().to_pyarrow_dataset()
    assert _sorted(dataset.to_table()) == _sorted(_oracle(t, "partitioned", where.options))
    # A filter on the partition column prunes fragments by their partition expressions.
    got = dataset.to_table(filter=pc.field("p") == "a")
    assert sorted(got.column("id").to_pylist()) == [i for i in range(84) if i // 7 % 3 == 1]
    got = dataset.to_table(filter=pc.field("p").is_null())
    assert sorted(got.column("id").to_pylist()) == [i for i in range(84) if i // 7 % 3 == 0]


@pytest.mark.parametrize(
    "props, make, feature",
    [
        ({"delta.enableDeletionVectors": "true"}, lambda t: t.delete("id = 3"), "deletionVectors"),
        ({"delta.columnMapping.mode": "name"}, lambda t: t.rename_column("v", "w"), "columnMapping"),
        ({}, lambda t: t.widen_column("i", pa.int64()), "typeWidening"),
    ],
    ids=["dv", "column-mapping", "widened"],
)
def test_dataset_refuses_what_a_plain_reader_would_misread(tmp_path, props, make, feature):
    schema = pa.schema([("id", pa.int64()), ("v", pa.float64()), ("i", pa.int32())])
    t = docc.Table.create(str(tmp_path / "t"), schema, properties=props)
    t.append(pa.table({"id": [1, 2, 3], "v": [1.0, 2.0, 3.0], "i": pa.array([1, 2, 3], pa.int32())}))
    if feature != "columnMapping":  # before the change, a plain table: the dataset reads it
        assert t.snapshot().to_pyarrow_dataset().count_rows() == 3
    make(t)
    with pytest.raises(exc.UnsupportedFeatureError) as e:
        t.snapshot().to_pyarrow_dataset()
    assert e.value.feature == feature and "to_batches" in str(e.value)


def test_polars_reads_a_snapshot_through_the_c_stream(tmp_path):
    pl = pytest.importorskip("polars")
    t = _make(_local(tmp_path), "dv")
    frame = pl.DataFrame(t.snapshot())
    assert sorted(frame["id"].to_list()) == sorted(kernel_rows(t).column("id").to_pylist())


# -- the bounded ordered stream (delta_occ.workers.ordered) against a reference: a plain loop --


@pytest.mark.parametrize("workers_n, budget", [(1, None), (4, None), (4, 10), (8, 3), (16, 1000)])
def test_ordered_stream_keeps_order_and_its_bounds(workers_n, budget):
    weights = [(i * 7) % 5 + 1 for i in range(60)]
    lock = threading.Lock()
    state = {"held": 0, "max_held": 0, "running": 0, "max_running": 0}

    def work(i):
        with lock:
            state["held"] += weights[i]
            state["running"] += 1
            state["max_held"] = max(state["max_held"], state["held"])
            state["max_running"] = max(state["max_running"], state["running"])
        time.sleep(0.001 * (i % 3))
        with lock:
            state["running"] -= 1
        return i * i

    got = []
    for r in workers.ordered(range(60), work, workers_n, weight=lambda i: weights[i], budget=budget):
        got.append(r)
        with lock:
            state["held"] -= weights[int(r ** 0.5 + 0.5)]
    assert got == [i * i for i in range(60)]
    assert state["max_running"] <= workers_n
    if budget is not None:
        assert state["max_held"] <= max(budget, max(weights))


def test_ordered_stream_raises_at_its_turn_and_stops_on_close():
    started = []

    def work(i):
        started.append(i)
        if i == 5:
            raise ValueError("five")
        return i

    it = workers.ordered(range(100), work, 4)
    assert [next(it) for _ in range(5)] == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="five"):
        next(it)
    assert max(started) < 5 + 4 + 1  # nothing far past the failed item was started
    started.clear()
    it = workers.ordered(range(1000), work_ok := (lambda i: started.append(i) or i), 4)
    assert next(it) == 0
    it.close()
    assert len(started) <= 8 and work_ok  # closing stops starting items


# -- row groups skipped by their footer statistics (a `where` read) --


def _grouped_table(tmp_path, dv: bool):
    """A converted directory of two files of 4 row groups of 250 sorted ids each; with ``dv``,
    every 7th row deleted by a deletion vector."""
    root = tmp_path / "g"
    root.mkdir()
    for f in range(2):
        ids = list(range(f * 1000, (f + 1) * 1000))
        pq.write_table(pa.table({"id": ids, "s": [f"v{i:04d}" for i in ids]}), root / f"part-{f}.parquet", row_group_size=250)
    t = docc.convert_to_delta(str(root), properties={"delta.enableDeletionVectors": "true"} if dv else None)
    if dv:
        t.delete("id % 7 = 0")
    return t, root


@pytest.mark.parametrize("dv", [False, True], ids=["plain", "dv"])
@pytest.mark.parametrize(
    "where",
    ["id >= 1600", "id < 240 OR id > 1990", "id BETWEEN 480 AND 530", "s = 'v0777'", "s > 'v1750' AND id % 2 = 0", "id < 0", "id IS NULL OR id = 5"],
)
def test_row_groups_ruled_out_by_their_statistics_are_skipped(tmp_path, dv, where):
    t, root = _grouped_table(tmp_path, dv)
    snap = t.snapshot()
    # The rows: the oracle's rows (delta-kernel-rs with DVs, pyarrow without) filtered by pyarrow.
    everything = kernel_rows(t) if dv else pa.concat_tables([pq.read_table(p) for p in sorted(root.glob("*.parquet"))])
    expected = sorted(r["id"] for r in everything.to_pylist() if _holds(where, r))
    assert sorted(snap.to_pyarrow(where=where).column("id").to_pylist()) == expected
    assert sorted(i for b in snap.to_batches(where=where) for i in b.column("id").to_pylist()) == expected
    # What is read: the groups whose pyarrow footer min/max may hold a match, no other.
    filt = snap.handle.row_group_filter(where)
    for abs_path, _, _ in snap.handle.data_files(None):
        local = snap.handle.storage.local_path(abs_path)
        meta = pq.ParquetFile(local).metadata
        ranges, first = [], 0
        for g in range(meta.num_row_groups):
            st = meta.row_group(g).column(0).statistics
            n = meta.row_group(g).num_rows
            if _group_may_match(where, st.min, st.max):
                ranges.append((first, n))
            first += n
        got = snap.handle.storage.read_parquet_columns(abs_path, [("id", None)], filt)
        assert got[2] == (None if len(ranges) == meta.num_row_groups else ranges), (where, abs_path)


def _holds(where: str, r: dict) -> bool:
    i, s = r["id"], r["s"]
    return {
        "id >= 1600": i >= 1600,
        "id < 240 OR id > 1990": i < 240 or i > 1990,
        "id BETWEEN 480 AND 530": 480 <= i <= 530,
        "s = 'v0777'": s == "v0777",
        "s > 'v1750' AND id % 2 = 0": s > "v1750" and i % 2 == 0,
        "id < 0": i < 0,
        "id IS NULL OR id = 5": i == 5,
    }[where]


def _group_may_match(where: str, lo: int, hi: int) -> bool:
    """From the group's id bounds (the s column follows id: s = 'v' + 4-digit id)."""
    return {
        "id >= 1600": hi >= 1600,
        "id < 240 OR id > 1990": lo < 240 or hi > 1990,
        "id BETWEEN 480 AND 530": hi >= 480 and lo <= 530,
        "s = 'v0777'": lo <= 777 <= hi,
        "s > 'v1750' AND id % 2 = 0": hi > 1750,
        "id < 0": lo < 0,
        "id IS NULL OR id = 5": lo <= 5 <= hi,
    }[where]
