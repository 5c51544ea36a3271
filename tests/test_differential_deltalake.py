"""Differential tests: delta_occ's read layer against `deltalake` (delta-rs, 1.6.6) as the oracle.

Each seed builds one small random table with deltalake itself (appends, overwrites, partitioned by a
string and/or an int column with null partition values, deletes that rewrite files, checkpoints with
commits after them). Every expected value comes from deltalake's view of the same table at the same
version: `DeltaTable(path, version=v)`, its `get_add_actions`, `file_uris` and `to_pyarrow_table`.
delta_occ is never compared with itself.
"""

from __future__ import annotations

import json
import os
import random
import urllib.parse

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable, write_deltalake  # noqa: E402

import delta_occ as docc  # noqa: E402

from helpers import add, metadata, protocol, write_commit  # noqa: E402

SEEDS = list(range(24))

# Partition values chosen to stress path encoding: spaces, '/', '=', '%', '#', non-ASCII, and null
# (written by deltalake as __HIVE_DEFAULT_PARTITION__).
STRINGS = ["a", "b b", "c/d", "x=y", "p%q", "#h", "ü", None]
INTS = [-3, 0, 1, 2, 70000, None]
PARTITIONINGS = [None, ["s"], ["k"], ["s", "k"], ["k", "s"]]

SCHEMA = pa.schema([
    ("id", pa.int64()),
    ("s", pa.string()),
    ("k", pa.int32()),
    ("v", pa.float64()),
    ("note", pa.string()),
])


class _Builder:
    """Builds one random table with deltalake and remembers what it did (for test ids / messages)."""

    def __init__(self, seed: int, root: str):
        self.seed = seed
        self.rng = random.Random(seed)
        self.root = root
        self.next_id = 0
        self.partition_by = self.rng.choice(PARTITIONINGS)
        self.log: list[str] = []
        self.checkpoints: list[int] = []

    def batch(self) -> pa.Table:
        rng = self.rng
        n = rng.randint(1, 40)
        ids = list(range(self.next_id, self.next_id + n))
        self.next_id += n
        # A batch draws from a few partition values only, so files stay few.
        svals = rng.sample(STRINGS, rng.randint(1, 3))
        kvals = rng.sample(INTS, rng.randint(1, 3))
        return pa.table({
            "id": pa.array(ids, pa.int64()),
            "s": pa.array([rng.choice(svals) for _ in ids], pa.string()),
            "k": pa.array([rng.choice(kvals) for _ in ids], pa.int32()),
            "v": pa.array([rng.choice([None, rng.uniform(-1e3, 1e3)]) for _ in ids], pa.float64()),
            "note": pa.array([rng.choice([None, "", "n%d" % i]) for i in ids], pa.string()),
        }, schema=SCHEMA)

    def write(self, mode: str) -> None:
        data = self.batch()
        write_deltalake(self.root, data, mode=mode, partition_by=self.partition_by)
        self.log.append(f"{mode}({data.num_rows})")

    def delete(self) -> None:
        rng = self.rng
        s = rng.choice([x for x in STRINGS if x is not None])
        predicate = rng.choice([
            f"id % {rng.randint(2, 5)} = {rng.randint(0, 1)}",
            f"id < {rng.randint(0, max(1, self.next_id))}",
            f"s = '{s}'",
            "s IS NULL",
            f"k = {rng.choice([x for x in INTS if x is not None])}",
            "k IS NULL",
            f"v > {rng.uniform(-1e3, 1e3):.3f}",
        ])
        DeltaTable(self.root).delete(predicate)
        self.log.append(f"delete({predicate})")

    def checkpoint(self) -> None:
        dt = DeltaTable(self.root)
        dt.create_checkpoint()
        self.checkpoints.append(dt.version())
        self.log.append(f"checkpoint@{dt.version()}")

    def build(self) -> None:
        rng = self.rng
        self.write("overwrite")
        steps = rng.randint(3, 8)
        # Every other table gets a checkpoint strictly before its last commit, so later commits
        # have to be replayed on top of it; others get one at random (maybe at the very end).
        forced = rng.randrange(0, steps - 1) if rng.random() < 0.5 else None
        for step in range(steps):
            op = rng.choices(["append", "overwrite", "delete"], weights=[6, 1, 3])[0]
            if op == "delete":
                self.delete()
            else:
                self.write(op)
            if step == forced or rng.random() < 0.1:
                self.checkpoint()


_BUILT: dict[int, _Builder] = {}


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    """seed -> built table (each built once per module, lazily)."""

    def get(seed: int) -> _Builder:
        if seed not in _BUILT:
            b = _Builder(seed, str(tmp_path_factory.mktemp(f"dl_seed{seed}")))
            b.build()
            _BUILT[seed] = b
        return _BUILT[seed]

    yield get
    _BUILT.clear()


def _version(b: _Builder, which: str) -> int:
    latest = DeltaTable(b.root).version()
    if which == "latest":
        return latest
    # A random earlier version, drawn from a separate RNG so the table build is not affected.
    return random.Random(f"older-{b.seed}").randrange(0, latest)


def _rel(uri: str, root: str) -> str:
    """deltalake's file_uris() are absolute local paths (or file:// URLs): make them root-relative."""
    if uri.startswith("file://"):
        uri = urllib.parse.unquote(urllib.parse.urlparse(uri).path)
    return os.path.relpath(uri, root)


def _oracle_files(dt: DeltaTable, partition_by) -> dict:
    """path (as written in the log) -> facts, from deltalake's flattened add actions."""
    actions = pa.table(dt.get_add_actions(flatten=True))  # arro3 table -> pyarrow via the C stream
    out = {}
    for row in actions.to_pylist():
        # deltalake returns typed partition values (`partition.k` is int32); the log holds raw
        # strings, so compare the string form (None stays None).
        parts = {c: (None if row[f"partition.{c}"] is None else str(row[f"partition.{c}"]))
                 for c in (partition_by or [])}
        out[row["path"]] = {
            "size": row["size_bytes"],
            "modification_time": row["modification_time"],
            "num_records": row["num_records"],
            # ids are unique across files, so these pin each file's own stats text.
            "id_range": (row["min.id"], row["max.id"]),
            "partition_values": parts,
        }
    return out


def _occ_files(snap) -> dict:
    out = {}
    for row in snap.files().to_pylist():
        stats = json.loads(row["stats"]) if row["stats"] else {}
        out[row["path"]] = {
            "size": row["size"],
            "modification_time": row["modification_time"],
            "num_records": row["num_records"],
            "id_range": (stats.get("minValues", {}).get("id"), stats.get("maxValues", {}).get("id")),
            "partition_values": dict(row["partition_values"] or []),
        }
    return out


CASES = [(seed, which) for seed in SEEDS for which in ("latest", "older")]
IDS = [f"seed{seed}-{which}" for seed, which in CASES]


@pytest.mark.parametrize("seed,which", CASES, ids=IDS)
def test_version_and_partition_columns(tables, seed, which):
    """Snapshot version and partition columns equal deltalake's metadata at that version."""
    b = tables(seed)
    v = _version(b, which)
    snap = docc.Table(b.root).snapshot(v)
    dt = DeltaTable(b.root, version=v)
    assert snap.version == dt.version() == v
    assert snap.partition_columns == list(dt.metadata().partition_columns), b.log
    if which == "latest":
        assert docc.Table(b.root).version == dt.version()


@pytest.mark.parametrize("seed,which", CASES, ids=IDS)
def test_live_files(tables, seed, which):
    """Live file paths, partition values, sizes, mtimes, record counts and id ranges (from stats,
    read lazily from checkpoints) equal deltalake's add actions."""
    b = tables(seed)
    v = _version(b, which)
    snap = docc.Table(b.root).snapshot(v)
    dt = DeltaTable(b.root, version=v)
    expected = _oracle_files(dt, b.partition_by)
    got = _occ_files(snap)
    # Paths exactly as written in the log (URI-encoded, relative) on both sides.
    assert sorted(got) == sorted(expected), b.log
    for path in expected:
        assert got[path] == expected[path], (path, b.log)
    # Decoding the log path once gives the file on disk, which is what deltalake's file_uris() lists.
    on_disk = sorted(_rel(u, b.root) for u in dt.file_uris())
    assert sorted(urllib.parse.unquote(p) for p in got) == on_disk, b.log
    assert all(os.path.isfile(os.path.join(b.root, urllib.parse.unquote(p))) for p in got)


@pytest.mark.parametrize("seed,which", CASES, ids=IDS)
def test_rows(tables, seed, which):
    """All rows (partition columns filled, deleted rows gone) equal deltalake's to_pyarrow_table()."""
    b = tables(seed)
    v = _version(b, which)
    got = docc.Table(b.root).snapshot(v).to_pyarrow()
    expected = DeltaTable(b.root, version=v).to_pyarrow_table()
    assert got.schema.names == expected.schema.names
    # deltalake 1.6.6 returns the same arrow types (string, int32, ...) for every column, partition
    # columns included, so no cast is needed; a type difference is reported, not papered over.
    assert [f.type for f in got.schema] == [f.type for f in expected.schema]
    assert got.sort_by("id").to_pylist() == expected.sort_by("id").to_pylist(), b.log


@pytest.mark.parametrize("seed", SEEDS, ids=[f"seed{s}" for s in SEEDS])
def test_every_version_row_count(tables, seed):
    """Row ids at every version 0..latest equal deltalake's time travel to that version."""
    b = tables(seed)
    latest = DeltaTable(b.root).version()
    t = docc.Table(b.root)
    for v in range(latest + 1):
        got = t.snapshot(v).to_pyarrow(columns=["id"]).column("id").to_pylist()
        expected = DeltaTable(b.root, version=v).to_pyarrow_table(columns=["id"]).column("id").to_pylist()
        assert sorted(got) == sorted(expected), (v, b.log)


def test_large_single_commit_stats(tmp_path):
    """A commit above the 16 MiB large-commit threshold is read in byte ranges, one per thread,
    and its stats are left in the file until first use; every file's record count and id range
    must still equal deltalake's add actions for the same log, and a data-skipping scan must
    find exactly the files the stats allow."""
    schema = json.dumps({"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}},
                                                      {"name": "s", "type": "string", "nullable": True, "metadata": {}}]})
    # Above 100k files Snapshot.files() is built in slices on several threads (on 2+ cores).
    n = 110_000
    adds = [add(f"part-{i:08d}-{'x' * 120}.parquet", size=100 + i,
                # every 7th file has no stats; the quote and ü in a string bound are escaped in the log
                stats=None if i % 7 == 0 else {"numRecords": 1 + i % 13, "minValues": {"id": 10 * i, "s": 'a"ü'},
                                               "maxValues": {"id": 10 * i + 9, "s": "z"}, "nullCount": {"id": 0, "s": 0}})
            for i in range(n)]
    commit = write_commit(tmp_path, 0, [protocol(), metadata(schema_string=schema), *adds])
    assert commit.stat().st_size > 16 << 20

    expected = _oracle_files(DeltaTable(str(tmp_path)), None)
    snap = docc.Table(str(tmp_path)).snapshot()
    got = _occ_files(snap)
    assert len(got) == n
    assert got == expected
    streamed = snap.files()
    row = streamed.filter(pc.field("path") == adds[1]["add"]["path"])
    stats = json.loads(row.column("stats")[0].as_py())
    assert stats["minValues"]["s"] == 'a"ü'

    # ids 10*i .. 10*i+9: "id >= 500000" may match files 50000.. and every file without stats.
    t = docc.Table(str(tmp_path))
    txn = t.begin()
    scanned = {f["path"] for f in txn.scan("id >= 500000").to_pylist()}
    txn.abort()
    want = {p for p, f in expected.items() if f["id_range"][1] is None or f["id_range"][1] >= 500000}
    assert scanned == want
    # a second list, from the same snapshot, equals the first
    assert snap.files().equals(streamed)
    # files() streamed the stats from the commit and kept none: with the commit gone the paths
    # still list, and the stats cannot be read (a corrupt-log error naming the commit)
    commit.rename(tmp_path / "moved.json")
    assert snap.files(columns=["path"]).column("path").to_pylist() == [a["add"]["path"] for a in adds]
    with pytest.raises(docc.exceptions.CorruptLogError, match="00000000000000000000.json"):
        snap.files(columns=["stats"])
