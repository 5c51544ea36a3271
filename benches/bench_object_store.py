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

* at cloud latency (issue 45; ``test_at_latency[<ms>-<work>]``): every request goes through a
  proxy in its own process (``_proxy_process.py``) that holds it ``<ms>`` before forwarding it
  (``$DELTA_OCC_BENCH_LATENCY_MS``, comma-separated: default ``0,10,30,60``, only ``0`` in the
  smoke pass, ``DELTA_OCC_BENCH_ADDS`` below 100,000). Per work item, rounds alternate delta-occ
  and deltalake 1.6 (one round in the smoke pass, ``$DELTA_OCC_BENCH_ROUNDS`` with
  ``--benchmark-enable``); a work item that writes gets a fresh upload of its table per round and
  system, opened untimed through the proxy. Timed, and what each side calls:

  ==================  ===============================================  ============================================
  work                delta-occ                                        deltalake
  ==================  ===============================================  ============================================
  ``open``            ``Table(uri).snapshot().files()``                ``DeltaTable(uri).get_add_actions()``
  ``read``            ``snapshot.to_pyarrow()``                        ``dt.to_pyarrow_table()``
  ``read-filtered``   ``to_pyarrow(where="id >= a AND id < b")``       ``to_pyarrow_table(filters=[...])``
  ``read-streamed``   ``snapshot.to_batches()``, every batch taken     ``dt.to_pyarrow_dataset().to_batches()``
  ``delete-dv``       ``Table.delete("id % 100 = 0")``, DVs             ``dt.delete(...)`` (rewrites: no DVs in 1.6)
  ``delete-rewrite``  the same without DVs (rewrites)                  ``dt.delete(...)``
  ``update``          ``Table.update(where, {"value": "value + 1"})``  ``dt.update(...)``
  ``merge``           ``Table.merge(...)`` update 1%, insert as many   ``dt.merge(...)...execute()``
  ``optimize``        ``Table.optimize()``                             ``dt.optimize.compact()``
  ``appends``         ``Table.append`` N times                         ``write_deltalake(dt, ..., mode="append")``
  ==================  ===============================================  ============================================

  Tables (full size; the smoke pass's are a few files of a few hundred rows), written once with
  pyarrow (``id``, ``value``, ``tag``; consecutive ids per file, stats on every column) and
  uploaded: reads 100 files of 10,000 rows (80 in one commit, a classic checkpoint, then one file
  per commit: 20 commits after it); the filtered read asks for the ids of one file; DELETE /
  UPDATE / MERGE 25 files of 10,000 rows, 1% of the rows in every file; OPTIMIZE 40 files of 1,000
  rows; 10 appends of 1,000 rows to an empty table. Recorded per round: wall and CPU seconds of
  this process (the proxy is not in it) and the requests each side made (the proxy counts them);
  the medians and the ratio deltalake / delta-occ go to ``latency.json`` and ``test_latency_report``
  prints them as a table. Every round's result is checked (rows read, rows deleted / updated /
  inserted, files compacted, versions).

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
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest

from _tables import ADDS, BENCH_DIR, ROUNDS

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



# -- issue 45: the everyday work at cloud latency ---------------------------------------------------
#
# Reads, DML, OPTIMIZE and appends on S3 through a proxy that holds every request LATENCY ms
# (in a process of its own: _proxy_process.py), delta-occ and deltalake on the same tables in one
# run; the module docstring says what each work item times.

FULL = ADDS >= 100_000
LATENCIES_MS = [int(x) for x in (os.environ.get("DELTA_OCC_BENCH_LATENCY_MS") or ("0,10,30,60" if FULL else "0")).split(",")]
SYSTEMS = ("delta-occ", "deltalake")
# (files, rows per file) of the read table (CHECKPOINTED files in one commit, a checkpoint, then
# one file per commit), the DML tables and the small files OPTIMIZE compacts; appends of rows.
READ_FILES, READ_ROWS, CHECKPOINTED = (100, 10_000, 80) if FULL else (4, 500, 2)
DML_FILES, DML_ROWS = (25, 10_000) if FULL else (3, 300)
SMALL_FILES, SMALL_ROWS = (40, 1_000) if FULL else (4, 100)
APPENDS, APPEND_ROWS = (10, 1_000) if FULL else (2, 100)
#: The filtered read: the rows of one file of the read table, found by the stats of ``id``.
FILTER_LO = READ_FILES // 2 * READ_ROWS
FILTER_HI = FILTER_LO + READ_ROWS
SCATTER = "id % 100 = 0"  # 1% of the rows, in every file
WORKS = ("open", "read", "read-filtered", "read-streamed", "delete-dv", "delete-rewrite", "update", "merge", "optimize", "appends")

#: Per "<work>@<latency>ms": each system's rounds and medians, the ratio (written to latency.json).
LATENCY_RESULTS: Dict[str, Dict[str, Any]] = {}


def _rows(lo: int, n: int) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    ids = pc.add(pc.indices_nonzero(pa.repeat(True, n)).cast(pa.int64()), lo)
    return pa.table({
        "id": ids,
        "value": pc.multiply(ids.cast(pa.float64()), 0.5),
        "tag": pc.binary_join_element_wise("row-", ids.cast(pa.string()), ""),
    })


def _stats(part: Any) -> str:
    import pyarrow.compute as pc

    mins, maxs = {}, {}
    for name in part.column_names:
        mm = pc.min_max(part.column(name))
        mins[name], maxs[name] = mm["min"].as_py(), mm["max"].as_py()
    return json.dumps({"numRecords": part.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": {n: 0 for n in part.column_names}})


def _add_file(txn: Any, root: pathlib.Path, i: int, rows: int) -> None:
    import pyarrow.parquet as pq

    part = _rows(i * rows, rows)
    rel = f"part-{i:05d}-{uuid.UUID(int=i)}-c000.snappy.parquet"
    pq.write_table(part, root / rel, compression="snappy")
    txn.add_file(rel, {}, (root / rel).stat().st_size, _stats(part))


def _local_table(root: pathlib.Path, files: int, rows: int, dv: bool = False, checkpointed: Optional[int] = None) -> pathlib.Path:
    """A table on a local disk whose files hold consecutive ids (stats on every column), written
    with pyarrow, so both systems read the same parquet: all files in one commit, or the first
    ``checkpointed`` of them, a classic checkpoint, then one file per commit."""
    props = {"delta.enableDeletionVectors": "true"} if dv else {}
    if checkpointed is not None:
        props["delta.checkpointInterval"] = "2"
    t = delta_occ.Table.create(str(root), _rows(0, 1).schema, properties=props)
    first = files if checkpointed is None else checkpointed
    txn = t.begin()
    for i in range(first):
        _add_file(txn, root, i, rows)
    txn.commit("WRITE")
    if checkpointed is not None:
        t.set_properties({"bench": "checkpoint"})  # version 2: the checkpoint
        t.set_properties({"delta.checkpointInterval": "100000"})
        for i in range(first, files):
            txn = t.begin()
            _add_file(txn, root, i, rows)
            txn.commit("WRITE")
    return root


def _upload(local: pathlib.Path, uri: str, opts: Dict[str, str]) -> str:
    """A byte-for-byte copy of a local table at ``uri`` (straight to the server, not through the
    proxy: untimed setup)."""
    from delta_occ import _core

    storage = _core.StorageHandle(uri, opts)
    for f in sorted(local.rglob("*")):
        if f.is_file():
            storage.write(f.relative_to(local).as_posix(), f.read_bytes())
    return uri


@pytest.fixture(scope="module")
def latency_tables(s3):
    """The prepared tables, on a local disk (uploaded per use) and the read table on S3."""
    local = pathlib.Path(tempfile.mkdtemp(prefix="bench-latency-", dir=BENCH_DIR if os.path.isdir(BENCH_DIR) else None))
    tables = {
        "read": _local_table(local / "read", READ_FILES, READ_ROWS, checkpointed=CHECKPOINTED),
        "plain": _local_table(local / "plain", DML_FILES, DML_ROWS),
        "dv": _local_table(local / "dv", DML_FILES, DML_ROWS, dv=True),
        "small": _local_table(local / "small", SMALL_FILES, SMALL_ROWS),
        "empty": _local_table(local / "empty", 0, 0),
    }
    read_uri = _upload(tables["read"], f"s3://{BUCKET}/latency-read-{uuid.uuid4().hex[:8]}", s3.storage_options())
    yield tables, read_uri
    import shutil

    shutil.rmtree(local, ignore_errors=True)


@pytest.fixture(scope="module")
def slow(s3):
    """The delaying proxy, and storage options that go through it."""
    from _proxy_process import ProxyProcess

    with ProxyProcess(s3.endpoint) as proxy:
        yield proxy, dict(s3.storage_options(), AWS_ENDPOINT_URL=proxy.endpoint)


def _open(system: str, uri: str, opts: Dict[str, str]) -> Any:
    return delta_occ.Table(uri, storage_options=opts) if system == "delta-occ" else deltalake.DeltaTable(uri, storage_options=opts)


def _work(name: str, tables: Dict[str, pathlib.Path], read_uri: str, direct: Dict[str, str], via: Dict[str, str]) -> Tuple[Callable[[str], Any], Callable[[str, Any], Any], Any]:
    """(prepare(system) -> the argument, untimed; run(system, argument) -> result, timed;
    the result each round must give)."""
    import pyarrow as pa

    def fresh(table: str) -> Callable[[str], Any]:
        def prepare(system: str) -> Any:
            uri = _upload(tables[table], f"s3://{BUCKET}/latency-{name}-{uuid.uuid4().hex[:8]}", direct)
            return _open(system, uri, via)

        return prepare

    def opened(system: str) -> Any:
        t = _open(system, read_uri, via)
        return t.snapshot() if system == "delta-occ" else t

    rows = READ_FILES * READ_ROWS
    hits = sum(1 for i in range(DML_FILES * DML_ROWS) if i % 100 == 0)
    if name == "open":
        def run_open(system: str, _: Any) -> int:
            if system == "delta-occ":
                return delta_occ.Table(read_uri, storage_options=via).snapshot().files().num_rows
            return deltalake.DeltaTable(read_uri, storage_options=via).get_add_actions().num_rows

        return (lambda system: None), run_open, READ_FILES
    if name == "read":
        return opened, lambda system, t: (t.to_pyarrow() if system == "delta-occ" else t.to_pyarrow_table()).num_rows, rows
    if name == "read-filtered":
        def run_filtered(system: str, t: Any) -> int:
            if system == "delta-occ":
                return t.to_pyarrow(where=f"id >= {FILTER_LO} AND id < {FILTER_HI}").num_rows
            return t.to_pyarrow_table(filters=[("id", ">=", FILTER_LO), ("id", "<", FILTER_HI)]).num_rows

        return opened, run_filtered, READ_ROWS
    if name == "read-streamed":
        def run_streamed(system: str, t: Any) -> int:
            batches = t.to_batches() if system == "delta-occ" else t.to_pyarrow_dataset().to_batches()
            return sum(b.num_rows for b in batches)

        return opened, run_streamed, rows
    if name in ("delete-dv", "delete-rewrite"):
        def run_delete(system: str, t: Any) -> int:
            if system == "delta-occ":
                return int(t.delete(SCATTER).metrics["numDeletedRows"])
            return int(t.delete(SCATTER)["num_deleted_rows"])

        # deltalake 1.6 writes no DVs: it rewrites the plain table in both rows.
        def prepare_delete(system: str) -> Any:
            return fresh("dv" if system == "delta-occ" and name == "delete-dv" else "plain")(system)

        return prepare_delete, run_delete, hits
    if name == "update":
        def run_update(system: str, t: Any) -> int:
            if system == "delta-occ":
                return int(t.update(SCATTER, {"value": "value + 1"}).metrics["numUpdatedRows"])
            return int(t.update(updates={"value": "value + 1"}, predicate=SCATTER)["num_updated_rows"])

        return fresh("plain"), run_update, hits
    if name == "merge":
        # 1% of the rows (every file) updated, as many new ones inserted.
        total = DML_FILES * DML_ROWS
        matched = pa.table({"id": pa.array(range(0, total, 100), pa.int64())})
        new = pa.table({"id": pa.array(range(total, total + matched.num_rows), pa.int64())})
        ids = pa.concat_tables([matched, new]).column("id")
        source = pa.table({"id": ids, "value": pa.array([-1.0] * len(ids)), "tag": pa.array(["merged"] * len(ids))})

        def run_merge(system: str, t: Any) -> Tuple[int, int]:
            if system == "delta-occ":
                m = t.merge(source, "t.id = s.id", when_matched_update={"value": "s.value", "tag": "s.tag"}, when_not_matched_insert=True).metrics
                return int(m["numTargetRowsUpdated"]), int(m["numTargetRowsInserted"])
            m = (t.merge(source, predicate="t.id = s.id", source_alias="s", target_alias="t")
                 .when_matched_update(updates={"value": "s.value", "tag": "s.tag"}).when_not_matched_insert_all().execute())
            return int(m["num_target_rows_updated"]), int(m["num_target_rows_inserted"])

        return fresh("plain"), run_merge, (matched.num_rows, new.num_rows)
    if name == "optimize":
        def run_optimize(system: str, t: Any) -> int:
            if system == "delta-occ":
                return int(t.optimize().metrics["numRemovedFiles"])
            return int(t.optimize.compact()["numFilesRemoved"])

        return fresh("small"), run_optimize, SMALL_FILES
    if name == "appends":
        batches = [_rows(i * APPEND_ROWS, APPEND_ROWS) for i in range(APPENDS)]

        def run_appends(system: str, t: Any) -> int:
            """The versions the appends added."""
            first = t.version if system == "delta-occ" else t.version()
            for b in batches:
                if system == "delta-occ":
                    t.append(b)
                else:
                    deltalake.write_deltalake(t, b, mode="append")
            return (t.version if system == "delta-occ" else t.version()) - first

        return fresh("empty"), run_appends, APPENDS
    raise AssertionError(name)


def _timed_rounds(request) -> int:
    cfg = request.config
    disabled = cfg.getoption("benchmark_disable", False) and not cfg.getoption("benchmark_enable", False)
    return 1 if disabled else ROUNDS


@pytest.mark.parametrize("latency,work", [(lat, w) for lat in LATENCIES_MS for w in WORKS], ids=lambda v: f"{v}ms" if isinstance(v, int) else v)
def test_at_latency(request, s3, latency_tables, slow, latency, work):
    """One work item at one latency: rounds alternate delta-occ, deltalake (each on a fresh copy
    of the table where the work writes, opened untimed through the proxy); wall and CPU seconds
    of this process per round, and the requests each made (counted by the proxy)."""
    import statistics
    import time

    proxy, via = slow
    tables, read_uri = latency_tables
    proxy.delay(latency / 1000)
    prepare, run, expected = _work(work, tables, read_uri, s3.storage_options(), via)
    got: Dict[str, List[Dict[str, Any]]] = {s: [] for s in SYSTEMS}
    for _ in range(_timed_rounds(request)):
        for system in SYSTEMS:
            arg = prepare(system)
            proxy.reset()
            w0, c0 = time.perf_counter(), time.process_time()
            out = run(system, arg)
            wall, cpu = time.perf_counter() - w0, time.process_time() - c0
            assert out == expected, (work, system, out, expected)
            got[system].append({"wall": wall, "cpu": cpu, "requests": proxy.counts()})
    summary: Dict[str, Any] = {"work": work, "latency_ms": latency}
    for system, rounds in got.items():
        summary[system] = {
            "wall_median": statistics.median(r["wall"] for r in rounds),
            "cpu_median": statistics.median(r["cpu"] for r in rounds),
            "requests": rounds[-1]["requests"],
            "walls": [round(r["wall"], 4) for r in rounds],
        }
    ours, theirs = summary["delta-occ"]["wall_median"], summary["deltalake"]["wall_median"]
    summary["ratio"] = theirs / ours if ours > 0 else None
    LATENCY_RESULTS[f"{work}@{latency}ms"] = summary
    print(f"\n[bench] {work} at {latency} ms: delta-occ {ours:.3f}s (cpu {summary['delta-occ']['cpu_median']:.3f}s, "
          f"{summary['delta-occ']['requests']['requests']} requests), deltalake {theirs:.3f}s "
          f"(cpu {summary['deltalake']['cpu_median']:.3f}s, {summary['deltalake']['requests']['requests']} requests), "
          f"ratio {summary['ratio']:.2f}")
    os.makedirs(BENCH_DIR, exist_ok=True)
    path = os.path.join(BENCH_DIR, "latency.json")
    try:
        with open(path) as f:
            kept = json.load(f)
    except (OSError, ValueError):
        kept = {}
    kept.update(LATENCY_RESULTS)
    with open(path, "w") as f:
        json.dump(kept, f, indent=1)


#: Commits of the table the timeline bench draws (one small append each).
TIMELINE_COMMITS = 200 if FULL else 10


@pytest.mark.parametrize("latency", LATENCIES_MS, ids=lambda v: f"{v}ms")
def test_timeline_at_latency(request, s3, slow, latency):
    """``Table.timeline()`` over every commit of a table on S3 (fetched in concurrent batches)
    against one commit at a time (``commit_summary`` of one version after another: the timeline's
    walk before, less the HEAD per version it also made then). No deltalake counterpart, so the
    baseline is that walk, in the same run. Medians of the rounds; printed, never asserted."""
    import statistics
    import time

    proxy, via = slow
    local = pathlib.Path(tempfile.mkdtemp(prefix="bench-timeline-", dir=BENCH_DIR if os.path.isdir(BENCH_DIR) else None))
    t = delta_occ.Table.create(str(local / "t"), _rows(0, 1).schema)
    for i in range(TIMELINE_COMMITS):
        t.append(_rows(i * 10, 10))
    try:
        uri = _upload(local / "t", f"s3://{BUCKET}/latency-timeline-{uuid.uuid4().hex[:8]}", s3.storage_options())
    finally:
        import shutil

        shutil.rmtree(local, ignore_errors=True)
    proxy.delay(latency / 1000)
    walls: Dict[str, List[float]] = {"timeline": [], "one at a time": []}
    requests: Dict[str, Any] = {}
    for _ in range(_timed_rounds(request)):
        table = delta_occ.Table(uri, storage_options=via)
        proxy.reset()
        w0 = time.perf_counter()
        assert table.timeline().to_pyarrow().num_rows == TIMELINE_COMMITS + 1
        walls["timeline"].append(time.perf_counter() - w0)
        requests["timeline"] = proxy.counts()
        proxy.reset()
        w0 = time.perf_counter()
        assert all(table.handle.commit_summary(v) is not None for v in range(TIMELINE_COMMITS + 1))
        walls["one at a time"].append(time.perf_counter() - w0)
        requests["one at a time"] = proxy.counts()
    med = {k: statistics.median(v) for k, v in walls.items()}
    print(f"\n[bench] timeline of {TIMELINE_COMMITS + 1} commits at {latency} ms: {med['timeline']:.3f}s "
          f"({requests['timeline']['requests']} requests), one commit at a time {med['one at a time']:.3f}s "
          f"({requests['one at a time']['requests']} requests), ratio {med['one at a time'] / med['timeline']:.2f}")


#: Commits of the change-feed bench's table: appends, with a DELETE every fifth (change-data files).
FEED_COMMITS = 30 if FULL else 6


@pytest.mark.parametrize("latency", LATENCIES_MS, ids=lambda v: f"{v}ms")
def test_change_feed_at_latency(request, s3, slow, latency):
    """``read_change_feed`` of every commit of a table on S3 with the feed on (appends of one
    file, a rewriting DELETE every fifth commit), against deltalake's ``load_cdf`` of the same
    range, rounds alternating, opened untimed. Both must return the same rows (the oracle:
    deltalake's feed, compared as sorted (change type, version, id) triples). Medians printed."""
    import statistics
    import time

    proxy, via = slow
    local = pathlib.Path(tempfile.mkdtemp(prefix="bench-feed-", dir=BENCH_DIR if os.path.isdir(BENCH_DIR) else None))
    t = delta_occ.Table.create(str(local / "t"), _rows(0, 1).schema, properties={"delta.enableChangeDataFeed": "true"})
    for i in range(FEED_COMMITS):
        if i % 5 == 4:
            t.delete(f"id % 1000 = {i}")
        else:
            t.append(_rows(i * 1000, 1000))
    try:
        uri = _upload(local / "t", f"s3://{BUCKET}/latency-feed-{uuid.uuid4().hex[:8]}", s3.storage_options())
    finally:
        import shutil

        shutil.rmtree(local, ignore_errors=True)
    proxy.delay(latency / 1000)

    def triples(tbl: Any) -> List[Tuple[str, int, int]]:
        return sorted(zip(tbl.column("_change_type").to_pylist(), tbl.column("_commit_version").to_pylist(), tbl.column("id").to_pylist()))

    walls: Dict[str, List[float]] = {s: [] for s in SYSTEMS}
    requests: Dict[str, Any] = {}
    for _ in range(_timed_rounds(request)):
        got = {}
        for system in SYSTEMS:
            table = _open(system, uri, via)
            proxy.reset()
            w0 = time.perf_counter()
            if system == "delta-occ":
                got[system] = table.read_change_feed(1)
            else:
                import pyarrow as pa

                got[system] = pa.table(table.load_cdf(starting_version=1))
            walls[system].append(time.perf_counter() - w0)
            requests[system] = proxy.counts()
        assert triples(got["delta-occ"]) == triples(got["deltalake"])
    med = {k: statistics.median(v) for k, v in walls.items()}
    print(f"\n[bench] change feed of {FEED_COMMITS} commits at {latency} ms: delta-occ {med['delta-occ']:.3f}s "
          f"({requests['delta-occ']['requests']} requests), deltalake {med['deltalake']:.3f}s "
          f"({requests['deltalake']['requests']} requests), ratio {med['deltalake'] / med['delta-occ']:.2f}")


#: Files of the deletion-vector read bench's table (a DV on each).
DV_READ_FILES = 40 if FULL else 4


@pytest.mark.parametrize("latency", LATENCIES_MS, ids=lambda v: f"{v}ms")
def test_dv_read_at_latency(request, s3, slow, latency, monkeypatch):
    """``snapshot().to_pyarrow()`` of a table on S3 with a deletion vector on every file (1,000
    rows each, a tenth deleted), each file's DV fetched while its data is, against the same read
    with each file's DV fetched after its data (``Reader.fetch_deletion_vector`` made a no-op:
    the read before). Both must return the same rows. Rounds alternate; medians printed."""
    import statistics
    import time

    from delta_occ import reader

    proxy, via = slow
    local = pathlib.Path(tempfile.mkdtemp(prefix="bench-dv-", dir=BENCH_DIR if os.path.isdir(BENCH_DIR) else None))
    t = delta_occ.Table.create(str(local / "t"), _rows(0, 1).schema, properties={"delta.enableDeletionVectors": "true"})
    for i in range(DV_READ_FILES):
        t.append(_rows(i * 1000, 1000))
    t.delete("id % 10 = 0")
    try:
        uri = _upload(local / "t", f"s3://{BUCKET}/latency-dv-{uuid.uuid4().hex[:8]}", s3.storage_options())
    finally:
        import shutil

        shutil.rmtree(local, ignore_errors=True)
    proxy.delay(latency / 1000)
    along = reader.Reader.fetch_deletion_vector
    walls: Dict[str, List[float]] = {"DV with its file": [], "DV after each file": []}
    requests: Dict[str, Any] = {}
    for _ in range(_timed_rounds(request)):
        for mode in walls:
            monkeypatch.setattr(reader.Reader, "fetch_deletion_vector", along if mode == "DV with its file" else lambda self, path: None)
            snap = delta_occ.Table(uri, storage_options=via).snapshot()
            proxy.reset()
            w0 = time.perf_counter()
            rows = snap.to_pyarrow()
            walls[mode].append(time.perf_counter() - w0)
            requests[mode] = proxy.counts()
            assert rows.num_rows == DV_READ_FILES * 900
    med = {k: statistics.median(v) for k, v in walls.items()}
    print(f"\n[bench] read of {DV_READ_FILES} files with DVs at {latency} ms: DV with its file {med['DV with its file']:.3f}s "
          f"({requests['DV with its file']['requests']} requests), DV after each file {med['DV after each file']:.3f}s "
          f"({requests['DV after each file']['requests']} requests), ratio {med['DV after each file'] / med['DV with its file']:.2f}")


def test_latency_report():
    """The table of this run's ratios (deltalake / delta-occ wall, medians), printed with ``-s``."""
    if not LATENCY_RESULTS:
        pytest.skip("no latency measurement ran")
    lines = ["| work | latency ms | delta-occ s | deltalake s | ratio | CPU s delta-occ / deltalake | requests delta-occ / deltalake |", "|---|---|---|---|---|---|---|"]
    for r in LATENCY_RESULTS.values():
        a, b = r["delta-occ"], r["deltalake"]
        lines.append(f"| {r['work']} | {r['latency_ms']} | {a['wall_median']:.3f} | {b['wall_median']:.3f} | {r['ratio']:.2f} | "
                     f"{a['cpu_median']:.2f} / {b['cpu_median']:.2f} | {a['requests']['requests']} / {b['requests']['requests']} |")
    print("\n" + "\n".join(lines))
