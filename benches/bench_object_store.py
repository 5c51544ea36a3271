"""Object-store benchmark (issue 27): tables on S3 (a Ceph RGW on loopback), delta_occ against
deltalake on the same bucket in the same run.

What is measured
----------------
* ``open-s3``: opening a table of ``$DELTA_OCC_BENCH_ADDS / 10`` (default 100,000) adds with a
  classic checkpoint and 101 newer single-add commits: ``delta_occ.Table(uri, storage_options)``
  against ``deltalake.DeltaTable(uri, storage_options)``. Both are eager (the live-file list is
  built in Rust memory), as ``bench_snapshot.py`` explains for local tables. The table is written
  once by delta_occ on a local disk (create; one commit of the adds; the checkpoint at version 2;
  ``checkpointInterval`` raised; 101 commits of one add each) and uploaded byte for byte.
* requests (no timing): through a counting proxy in front of the server, the requests each
  reader's open makes, the requests of an uncontested commit, of a commit that loses to 10
  winners, and of one that loses twice (10 winners, then 3 more landing before its retry)
  (``test_request_counts`` prints them and writes ``requests.json``). The targets: one
  conditional PUT per uncontested commit; each lost race lists the log once from the version
  tried and reads each new winner once, never an older one again.

Timings are ``benchmark.pedantic(rounds=$DELTA_OCC_BENCH_ROUNDS)``; ratios are reported in
BENCHMARKS.md, never asserted. The loopback server answers in about a millisecond, so these
numbers are CPU and request counts, not a cloud region's latency (where fewer, concurrent
requests matter more).
"""

from __future__ import annotations

import json
import os
import pathlib
import sys
import tempfile
import uuid

import pytest

from _tables import ADDS, BENCH_DIR

delta_occ = pytest.importorskip("delta_occ")
deltalake = pytest.importorskip("deltalake")

_TESTS = str(pathlib.Path(__file__).resolve().parent.parent / "tests")
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

BUCKET = "bench"
TABLE_ADDS = max(10, ADDS // 10)
TAIL_COMMITS = 101


@pytest.fixture(scope="module")
def s3(ceph_s3):
    ceph_s3.create_bucket(BUCKET)
    return ceph_s3


def _write_table(root: str) -> int:
    """The benchmark table on a local disk; returns its version."""
    import pyarrow as pa

    schema = pa.schema([("id", pa.int64()), ("value", pa.float64())])
    t = delta_occ.Table.create(root, schema, properties={"delta.checkpointInterval": "2"})
    txn = t.begin()
    for i in range(TABLE_ADDS):
        stats = {"numRecords": 10, "minValues": {"id": i * 10, "value": 0.5}, "maxValues": {"id": i * 10 + 9, "value": 9.5},
                 "nullCount": {"id": 0, "value": 0}}
        txn.add_file(f"part-{i:07d}-{uuid.UUID(int=i)}.c000.snappy.parquet", {}, 4096, json.dumps(stats))
    txn.commit("WRITE")
    t.set_properties({"bench": "checkpoint"})  # version 2: the checkpoint
    t.set_properties({"delta.checkpointInterval": "100000"})
    for i in range(TAIL_COMMITS):
        txn = t.begin()
        txn.add_file(f"tail-{i:04d}.parquet", {}, 4096, json.dumps({"numRecords": 1}))
        txn.commit("WRITE")
    return t.refresh()


@pytest.fixture(scope="module")
def table(s3):
    """(uri, storage options, version) of the uploaded benchmark table."""
    from delta_occ import _core

    local = tempfile.mkdtemp(prefix="bench-s3-", dir=BENCH_DIR if os.path.isdir(BENCH_DIR) else None)
    version = _write_table(os.path.join(local, "t"))
    uri = f"s3://{BUCKET}/open-{TABLE_ADDS}"
    opts = s3.storage_options()
    storage = _core.StorageHandle(uri, opts)
    base = pathlib.Path(local, "t")
    for f in base.rglob("*"):
        if f.is_file():
            storage.write(f.relative_to(base).as_posix(), f.read_bytes())
    return uri, opts, version


def _check(uri, opts, version):
    t = delta_occ.Table(uri, storage_options=opts)
    dl = deltalake.DeltaTable(uri, storage_options=opts)
    assert t.version == dl.version() == version
    assert t.snapshot().files().num_rows == len(dl.file_uris()) == TABLE_ADDS + TAIL_COMMITS


@pytest.mark.benchmark(group="open-s3")
def test_delta_occ_open(benchmark, table, rounds):
    uri, opts, version = table
    _check(uri, opts, version)
    benchmark.pedantic(lambda: delta_occ.Table(uri, storage_options=opts), rounds=rounds, iterations=1, warmup_rounds=1)


@pytest.mark.benchmark(group="open-s3")
def test_deltalake_open(benchmark, table, rounds):
    uri, opts, version = table
    benchmark.pedantic(lambda: deltalake.DeltaTable(uri, storage_options=opts), rounds=rounds, iterations=1, warmup_rounds=1)


def test_request_counts(s3, table):
    """Requests by kind through a counting proxy: each reader's open, an uncontested commit, a
    commit that loses to 10 winners."""
    from servers.faultproxy import FaultProxy

    uri, opts, version = table
    out = {}
    with FaultProxy(s3.endpoint) as proxy:
        via = dict(opts, AWS_ENDPOINT_URL=proxy.endpoint)

        def count(fn):
            proxy.reset_counts()
            fn()
            return {"requests": len(proxy.log), **{m: n for m, n in sorted(proxy.counts.items())}}

        out["delta_occ_open"] = count(lambda: delta_occ.Table(uri, storage_options=via))
        out["deltalake_open"] = count(lambda: deltalake.DeltaTable(uri, storage_options=via))
        import pyarrow as pa

        made = []
        create = lambda: made.append(  # noqa: E731
            delta_occ.Table.create(f"s3://{BUCKET}/commits-{uuid.uuid4().hex[:8]}", pa.schema([("id", pa.int64())]), storage_options=via)
        )
        # The first commit of this process to this store: the conditional-write probe, then version 0.
        out["create_first_commit_of_the_process"] = count(create)
        t = made[0]
        txn = t.begin()
        txn.set_app_version("a", 1)
        out["uncontested_commit"] = count(txn.commit)
        loser = t.begin()
        loser.set_app_version("loser", 1)
        others = delta_occ.Table(t.path, storage_options=via)
        for i in range(10):
            w = others.begin()
            w.set_app_version(f"w{i}", 1)
            w.commit()
        out["commit_losing_to_10_winners"] = count(loser.commit)
        # Losing twice: 10 winners, then 3 more land between the loser's listing and its next
        # put (committed through the server directly, not counted). The second round lists
        # again from the version tried and reads only the 3 new winners.
        twice = t.begin()
        twice.set_app_version("twice", 1)
        direct = delta_occ.Table(t.path, storage_options=opts)

        def commit_direct(n: int, name: str) -> None:
            for i in range(n):
                w = direct.begin()
                w.set_app_version(f"{name}{i}", 1)
                w.commit()

        commit_direct(10, "a")
        proxy.after("GET", r"list-type=2", lambda: commit_direct(3, "b"))
        out["commit_losing_twice_to_10_then_3_winners"] = count(twice.commit)
        object_gets = [p for m, p, _ in proxy.log if m == "GET" and "list-type=2" not in p]
    print("\n[bench] requests:", json.dumps(out, indent=1))
    os.makedirs(BENCH_DIR, exist_ok=True)
    with open(os.path.join(BENCH_DIR, "requests.json"), "w") as f:
        json.dump(out, f, indent=1)
    assert out["uncontested_commit"] == {"requests": 1, "PUT": 1}
    # the probe: two conditional PUTs of one scratch key and its delete; version 0 one more PUT
    assert out["create_first_commit_of_the_process"]["PUT"] == 3
    assert out["commit_losing_to_10_winners"]["GET"] == 11  # one listing + each winner once
    # Two listings, each of the 13 winners read once, three conditional PUTs (two lost).
    assert out["commit_losing_twice_to_10_then_3_winners"] == {"requests": 18, "GET": 15, "PUT": 3}
    assert len(object_gets) == len(set(object_gets)) == 13, object_gets
