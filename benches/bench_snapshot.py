"""Snapshot-load benchmark: delta_occ vs deltalake (delta-rs) on large generated Delta logs.

What is timed
-------------
Loading the latest snapshot of a table whose log holds ``$DELTA_OCC_BENCH_ADDS`` (default
1,000,000) add actions, in three shapes (see ``_tables.py``): ``single_commit`` (one JSON
commit, unpartitioned), ``many_commits`` (1,000 JSON commits of 1,000 adds, partitioned by
``date``) and ``checkpoint`` (classic parquet checkpoint at version 10 holding the adds, then
two small JSON commits; partitioned by ``date``).

* ``test_delta_occ[<shape>]`` times ``delta_occ.Table(path).snapshot()``.  ``Table(path)``
  lists the log, reads the checkpoint / commits and builds the live-file set eagerly;
  ``snapshot()`` just hands out that latest snapshot.
* ``test_deltalake[<shape>]`` times ``deltalake.DeltaTable(path)``.  In deltalake 1.6.6 the
  constructor is eager as well: it replays the log and materialises the active-file metadata
  (add actions as Arrow batches) in its Rust snapshot -- ``without_files=True`` is deprecated
  and ignored ("Table loading materializes active-file metadata"), and ``get_add_actions()``
  right after the constructor is ~30x cheaper than the constructor
  (``test_deltalake_loads_files_eagerly`` prints and checks this).  So nothing that
  materialises the file list needs to be added to the deltalake timing; both timed calls end
  with the full live-file list in (Rust) memory, and neither converts it to Python objects.
  ``file_uris()`` (1M Python strings, ~1.4 s) is deliberately not timed here.  Neither reader
  opens data files (they do not exist).
* delta_occ leaves the ``add.stats`` text of checkpoints and of commits above 16 MiB in the
  file and reads it the first time any file's stats are needed (the design reads stats only
  when a caller needs them); deltalake reads it while loading.  So that this is not hidden,
  the ``snapshot+files-<shape>`` group times load + the whole file list with stats as Arrow
  on both sides: ``Table(path).snapshot().files()`` against
  ``DeltaTable(path).get_add_actions()``.

Each timing is ``benchmark.pedantic(..., rounds=$DELTA_OCC_BENCH_ROUNDS (default 3),
iterations=1, warmup_rounds=0)``.  The object a round creates is kept alive until the
(untimed) ``setup`` of the next round drops it, so freeing one million file entries is not
charged to either reader -- only loading is.  Version and live-file count are checked once per
test, outside the timed part (that load also warms the page cache).  Both readers run in the
same pytest process.  Tests are grouped per shape (``snapshot-<shape>``), so
``--benchmark-group-by=group`` puts the two readers side by side.  With
``--benchmark-disable`` (the project default) every benchmark body runs once, which is the
CI smoke pass.

Fresh process
-------------
``test_fresh_process_files[<shape>]`` (issue 45): load + file list with stats in a new
``python -c`` per round, the import included (what a short job pays), delta_occ and deltalake
alternating, timed from the parent; the child reports its import / load / files split. Medians
and the ratio are printed and kept in ``$DELTA_OCC_BENCH_DIR/fresh_process.json``.

Peak memory
-----------
``test_peak_memory_<shape>`` loads the table with each reader in a fresh ``python -c``
subprocess and reports the peak RSS after the load minus the peak RSS right after
``import pyarrow, deltalake, delta_occ`` (the file count is taken after reading the peak, so
converting the file list to Python objects is not charged to either reader).  The peak is
``VmHWM`` from ``/proc/self/status``, i.e. ``ru_maxrss`` of the new process image: plain
``getrusage(RUSAGE_SELF).ru_maxrss`` cannot be used in a subprocess because Linux carries the
parent's (pytest's, easily gigabytes) maximum over fork+exec, which swamped both numbers in a
first attempt.  Results are
printed and merged into ``$DELTA_OCC_BENCH_DIR/memory.json``; the test asserts only that both
loads succeeded with the right version and file count.  Ratios are reported, never asserted.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import textwrap
import time

import pytest

from _tables import ADDS, BENCH_DIR, BenchTable

delta_occ = pytest.importorskip("delta_occ")
deltalake = pytest.importorskip("deltalake")


def _load_delta_occ(path: str):
    return delta_occ.Table(path).snapshot()


def _load_deltalake(path: str):
    return deltalake.DeltaTable(path)


def _version(obj) -> int:
    if isinstance(obj, tuple):  # (reader object, its file list)
        obj = obj[0]
    return obj.version if isinstance(obj, delta_occ.Snapshot) else obj.version()


def _check_delta_occ(t: BenchTable) -> None:
    snap = delta_occ.Table(t.path).snapshot()
    assert snap.version == t.version
    assert snap.handle.num_files() == t.num_files


def _check_deltalake(t: BenchTable) -> None:
    dt = deltalake.DeltaTable(t.path)
    assert dt.version() == t.version
    assert len(dt.file_uris()) == t.num_files


def _run(benchmark, rounds: int, load, t: BenchTable) -> None:
    keep = []  # the last loaded object; dropped by the next (untimed) setup

    def setup():
        keep.clear()

    def target(path):
        obj = load(path)
        keep.append(obj)
        return _version(obj)

    result = benchmark.pedantic(target, args=(t.path,), setup=setup, rounds=rounds, iterations=1,
                                warmup_rounds=0)
    keep.clear()
    assert result == t.version
    benchmark.extra_info.update(adds=ADDS, num_files=t.num_files, version=t.version)


# ---------------------------------------------------------------------------------------
# the timed loads: one delta_occ and one deltalake test per shape, grouped per shape


@pytest.mark.parametrize("shape", ["single_commit", "many_commits", "checkpoint"])
def test_delta_occ(benchmark, bench_table, rounds, shape):
    benchmark.group = f"snapshot-{shape}"
    t = bench_table(shape)
    _check_delta_occ(t)
    _run(benchmark, rounds, _load_delta_occ, t)


@pytest.mark.parametrize("shape", ["single_commit", "many_commits", "checkpoint"])
def test_deltalake(benchmark, bench_table, rounds, shape):
    benchmark.group = f"snapshot-{shape}"
    t = bench_table(shape)
    _check_deltalake(t)
    _run(benchmark, rounds, _load_deltalake, t)


# ---------------------------------------------------------------------------------------
# load + the file list with stats, as Arrow: delta_occ reads add.stats of large commits and of
# checkpoints only when first asked for, so this pair shows what that first use costs


def _load_delta_occ_files(path: str):
    snap = delta_occ.Table(path).snapshot()
    return snap, snap.files()  # both kept alive past the timing, like the plain loads


def _load_deltalake_files(path: str):
    dt = deltalake.DeltaTable(path)
    return dt, dt.get_add_actions()


@pytest.mark.parametrize("shape", ["single_commit", "many_commits", "checkpoint"])
def test_delta_occ_files(benchmark, bench_table, rounds, shape):
    benchmark.group = f"snapshot+files-{shape}"
    t = bench_table(shape)
    _check_delta_occ(t)
    assert _load_delta_occ_files(t.path)[1].num_rows == t.num_files
    _run(benchmark, rounds, _load_delta_occ_files, t)


@pytest.mark.parametrize("shape", ["single_commit", "many_commits", "checkpoint"])
def test_deltalake_files(benchmark, bench_table, rounds, shape):
    benchmark.group = f"snapshot+files-{shape}"
    t = bench_table(shape)
    _check_deltalake(t)
    assert _load_deltalake_files(t.path)[1].num_rows == t.num_files
    _run(benchmark, rounds, _load_deltalake_files, t)


# ---------------------------------------------------------------------------------------
# fairness check: deltalake's constructor is the eager part


def test_deltalake_loads_files_eagerly(bench_table):
    """``DeltaTable(path)`` must do the file-list work itself (otherwise the deltalake timings
    above would leave out work that delta_occ's timings include)."""
    t = bench_table("single_commit")
    deltalake.DeltaTable(t.path)  # warm the page cache
    t0 = time.perf_counter()
    dt = deltalake.DeltaTable(t.path)
    construct = time.perf_counter() - t0
    t0 = time.perf_counter()
    actions = dt.get_add_actions()
    add_actions = time.perf_counter() - t0
    t0 = time.perf_counter()
    n = len(dt.file_uris())
    uris = time.perf_counter() - t0
    print(f"\n[bench] deltalake single_commit ({n} files): DeltaTable() {construct:.3f}s, then "
          f"get_add_actions() {add_actions:.3f}s, file_uris() {uris:.3f}s")
    assert n == t.num_files
    assert actions.num_rows == t.num_files
    if ADDS >= 100_000:
        # the constructor, not the accessors, is where the log is replayed
        assert add_actions < construct / 3


# ---------------------------------------------------------------------------------------
# peak memory (subprocess per reader)

_MEMORY_SCRIPT = textwrap.dedent(
    """
    import json, resource, sys
    import pyarrow, deltalake, delta_occ

    def peak_kib():
        # VmHWM: peak RSS of this process image.  ru_maxrss is not usable on its own here: on
        # Linux a child inherits the parent's ru_maxrss across fork+exec, so a subprocess of
        # a big pytest process would report the parent's peak.  Fall back to it off Linux.
        try:
            with open("/proc/self/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1])
        except OSError:
            pass
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    reader, path = sys.argv[1], sys.argv[2]
    base = peak_kib()
    if reader == "delta_occ":
        obj = delta_occ.Table(path).snapshot()
        peak = peak_kib()
        version, files = obj.version, obj.handle.num_files()
        where = delta_occ.__file__
    else:
        obj = deltalake.DeltaTable(path)
        peak = peak_kib()
        version, files = obj.version(), len(obj.file_uris())
        where = deltalake.__file__
    print(json.dumps({"baseline_kib": base, "peak_kib": peak, "delta_kib": peak - base,
                      "ru_maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                      "version": version, "files": files, "module": where}))
    """
)


def _peak_rss(reader: str, path: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", _MEMORY_SCRIPT, reader, path],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=str(BENCH_DIR),  # not the repo: import the installed delta_occ, as the tests do
    )
    assert proc.returncode == 0, f"{reader} failed:\n{proc.stderr[-4000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _store_memory(key: str, entry: dict) -> None:
    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    path = BENCH_DIR / "memory.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        data = {}
    data[key] = entry
    tmp = path.with_suffix(f".tmp-{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True))
    os.replace(tmp, path)


def _peak_memory(shape: str, t: BenchTable) -> None:
    results = {reader: _peak_rss(reader, t.path) for reader in ("delta_occ", "deltalake")}
    for reader, r in results.items():
        assert r["version"] == t.version, (reader, r)
        assert r["files"] == t.num_files, (reader, r)
    mib = {reader: r["delta_kib"] / 1024 for reader, r in results.items()}
    ratio = mib["deltalake"] / mib["delta_occ"] if mib["delta_occ"] > 0 else None
    print(f"\n[bench] peak RSS over baseline, {shape} ({ADDS} adds): "
          f"delta_occ {mib['delta_occ']:.1f} MiB, deltalake {mib['deltalake']:.1f} MiB"
          + (f", ratio deltalake/delta_occ {ratio:.2f}" if ratio is not None else ""))
    _store_memory(
        f"{shape}-{ADDS}",
        {
            "shape": shape,
            "adds": ADDS,
            "num_files": t.num_files,
            "version": t.version,
            "delta_occ_mib": round(mib["delta_occ"], 1),
            "deltalake_mib": round(mib["deltalake"], 1),
            "ratio_deltalake_over_delta_occ": round(ratio, 2) if ratio is not None else None,
            "raw": results,
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
        },
    )


def test_peak_memory_single_commit(bench_table):
    _peak_memory("single_commit", bench_table("single_commit"))


def test_peak_memory_many_commits(bench_table):
    _peak_memory("many_commits", bench_table("many_commits"))


def test_peak_memory_checkpoint(bench_table):
    _peak_memory("checkpoint", bench_table("checkpoint"))


# ---------------------------------------------------------------------------------------
# load + file list with stats in a fresh process (issue 45): what a short job pays, the import
# included. The parent times the whole child; the child reports its own split.

_FRESH_SCRIPT = textwrap.dedent(
    """
    import json, sys, time
    t0 = time.perf_counter()
    reader, path = sys.argv[1], sys.argv[2]
    if reader == "delta_occ":
        import delta_occ
        t1 = time.perf_counter()
        snap = delta_occ.Table(path).snapshot()
        t2 = time.perf_counter()
        files = snap.files()
        version = snap.version
    else:
        import deltalake
        t1 = time.perf_counter()
        dt = deltalake.DeltaTable(path)
        t2 = time.perf_counter()
        files = dt.get_add_actions()
        version = dt.version()
    t3 = time.perf_counter()
    print(json.dumps({"import": t1 - t0, "load": t2 - t1, "files": t3 - t2, "version": version, "rows": files.num_rows}))
    """
)


def _fresh_run(reader: str, path: str) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    w0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _FRESH_SCRIPT, reader, path], capture_output=True, text=True, timeout=900, cwd=str(BENCH_DIR))
    wall = time.perf_counter() - w0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert proc.returncode == 0, f"{reader} failed:\n{proc.stderr[-4000:]}"
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out.update(wall=wall, cpu=(after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    return out


@pytest.mark.parametrize("shape", ["single_commit", "many_commits", "checkpoint"])
def test_fresh_process_files(bench_table, rounds, shape, request):
    """``python -c`` that imports the library, loads the table and builds its file list with
    stats as Arrow (``Table(path).snapshot().files()`` against ``DeltaTable(path).get_add_actions()``),
    timed from the parent; delta_occ and deltalake alternate, one process each per round (one
    round in the smoke pass). Medians printed and kept in ``fresh_process.json``."""
    import statistics

    cfg = request.config
    n = 1 if cfg.getoption("benchmark_disable", False) and not cfg.getoption("benchmark_enable", False) else rounds
    t = bench_table(shape)
    runs: dict = {"delta_occ": [], "deltalake": []}
    for _ in range(n):
        for reader in runs:
            out = _fresh_run(reader, t.path)
            assert out["version"] == t.version and out["rows"] == t.num_files, (reader, out)
            runs[reader].append(out)
    med = {r: {k: statistics.median(x[k] for x in v) for k in ("wall", "cpu", "import", "load", "files")} for r, v in runs.items()}
    ratio = med["deltalake"]["wall"] / med["delta_occ"]["wall"]
    print(f"\n[bench] fresh process, load + files, {shape} ({ADDS} adds, {n} rounds): "
          + "; ".join(f"{r} wall {m['wall']:.3f}s cpu {m['cpu']:.3f}s (import {m['import']:.3f}, load {m['load']:.3f}, files {m['files']:.3f})" for r, m in med.items())
          + f"; ratio deltalake/delta_occ {ratio:.2f}")
    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    path = BENCH_DIR / "fresh_process.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        data = {}
    data[f"{shape}-{ADDS}"] = {"rounds": n, "median": med, "ratio": round(ratio, 2), "runs": runs, "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S")}
    path.write_text(json.dumps(data, indent=2, sort_keys=True))
