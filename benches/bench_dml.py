"""DML benchmark: delta-occ's embedded engine against deltalake (delta-rs) on the same tables.

Every workload runs once per system in the same pytest process, delta-occ first, on a fresh copy
of one prepared table per round (``benchmark.pedantic(setup=...)``: the copy and the opening of
the table are untimed). Groups (``--benchmark-group-by=group``):

* ``dml-delete-dv`` -- ``DELETE WHERE id % 100 = 0`` (1% of ``$DELTA_OCC_BENCH_ROWS`` rows,
  default 1,000,000, scattered over all of its 10 files) on a table with
  ``delta.enableDeletionVectors=true``. Timed: ``Table.delete(where)`` on an open
  ``delta_occ.Table`` (writes one DV per file, no data file) against ``DeltaTable.delete(where)``
  on an open ``DeltaTable`` of the same table (deltalake 1.6 does not write DVs: it rewrites
  the 10 files into one).
* ``dml-delete-rewrite`` -- the same DELETE on the same data without DVs: both rewrite.
* ``dml-optimize`` -- compaction of ``$DELTA_OCC_BENCH_OPT_FILES`` (100) files of 1,000 rows:
  ``Table.optimize()`` against ``DeltaTable.optimize.compact()``, both with their default target
  size (128 MiB and 100 MiB: one output file).
* ``dml-delete-one-of-many`` -- ``DELETE WHERE id = <k*100+42>`` on a log of one JSON commit of
  ``$DELTA_OCC_BENCH_ADDS`` (1,000,000) adds with ``id`` min/max stats that exclude every file but
  file ``k = adds // 2``, the only data file that exists (100 rows). Both systems prune by stats,
  read that file and rewrite its 99 other rows. Timed: the delete call alone, on a table opened in
  the untimed setup. delta-occ reads the ``add.stats`` of a commit above 16 MiB only when first
  needed, so its timing includes reading the stats of all the adds; deltalake read them in the
  constructor.
* ``dml-delete-one-of-many-process`` -- the same DELETE as a whole fresh process:
  ``python -c`` that imports the library, opens the table and deletes, timed from the parent
  (``subprocess.run``). The child also reports its import / open / delete split and its peak RSS
  (``VmHWM``), printed and kept in ``extra_info``.

The data tables (``id`` int64, ``value`` double, ``tag`` string; stats on every column) are
written once per session with pyarrow and committed with ``delta_occ.Transaction.add_file``, so
both systems read the same parquet files. The many-files log is generated like ``_tables.py``'s
``single_commit`` shape and cached as ``$DELTA_OCC_BENCH_DIR/dml_many_files-<adds>``; round copies
of it hard-link the files (neither system modifies an existing file).

Recorded per round, by this module (pytest-benchmark keeps no timings without
``--benchmark-enable``): wall seconds and CPU seconds (user + system of this process and of waited
children, so the subprocess variant counts the child). ``extra_info`` of the deltalake test holds
the medians and the ratio deltalake / delta-occ of the median wall times (> 1: delta-occ faster);
all of it is printed with ``-s`` and kept in ``$DELTA_OCC_BENCH_DIR/dml.json``. Correctness is
asserted (deleted-row counts from the commit metrics, rows and files read back by each system --
by delta-occ for both on the DV table, which deltalake 1.6 can rewrite but not read --
DVs written only where expected, the actions of the commit for the many-files table); speed never.

Sizes: ``DELTA_OCC_BENCH_ROWS`` defaults to ``min($DELTA_OCC_BENCH_ADDS, 1000000)``, so the CI
smoke pass (``DELTA_OCC_BENCH_ADDS=2000``) deletes 20 of 2,000 rows and the many-files table has
2,000 adds; ``DELTA_OCC_BENCH_OPT_FILES`` defaults to 100 (20 in the smoke pass, ADDS < 100,000).
"""

from __future__ import annotations

import json
import os
import pathlib
import resource
import shutil
import statistics
import subprocess
import sys
import textwrap
import time
from typing import Any, Callable, Dict, List

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from _tables import _BASE_TS_MS, ADDS, BENCH_DIR, ROUNDS, _AddWriter, _commit_info, _metadata, _protocol, _write_commit

delta_occ = pytest.importorskip("delta_occ")
deltalake = pytest.importorskip("deltalake")

SYSTEMS = ("delta-occ", "deltalake")
ROWS = int(os.environ.get("DELTA_OCC_BENCH_ROWS") or min(ADDS, 1_000_000))
DML_FILES = 10
SCATTER = "id % 100 = 0"
OPT_FILES = int(os.environ.get("DELTA_OCC_BENCH_OPT_FILES") or (100 if ADDS >= 100_000 else 20))
OPT_ROWS = 1000
TARGET = ADDS // 2  # the one file of the many-files table that exists
TARGET_WHERE = f"id = {TARGET * 100 + 42}"
TARGET_NAME = "part-00000-dml-target-c000.snappy.parquet"


# -- tables -------------------------------------------------------------------------------------


def _data(lo: int, n: int) -> pa.Table:
    ids = pc.add(pc.indices_nonzero(pa.repeat(True, n)).cast(pa.int64()), lo)
    return pa.table({
        "id": ids,
        "value": pc.multiply(ids.cast(pa.float64()), 0.5),
        "tag": pc.binary_join_element_wise("row-", ids.cast(pa.string()), ""),
    })


def _stats(part: pa.Table) -> str:
    mins, maxs = {}, {}
    for name in part.column_names:
        mm = pc.min_max(part.column(name))
        mins[name], maxs[name] = mm["min"].as_py(), mm["max"].as_py()
    nulls = {name: part.column(name).null_count for name in part.column_names}
    return json.dumps({"numRecords": part.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls})


def _build(path: pathlib.Path, files: int, rows_per_file: int, dv: bool) -> str:
    """A table whose version 1 adds ``files`` parquet files of consecutive ids."""
    shutil.rmtree(path, ignore_errors=True)
    props = {"delta.enableDeletionVectors": "true"} if dv else {}
    t = delta_occ.Table.create(str(path), _data(0, 1).schema, [], props)
    txn = t.begin()
    for i in range(files):
        part = _data(i * rows_per_file, rows_per_file)
        rel = f"part-{i:05d}-c000.snappy.parquet"
        pq.write_table(part, path / rel, compression="snappy")
        txn.add_file(rel, {}, (path / rel).stat().st_size, _stats(part))
    assert txn.commit().version == 1
    return str(path)


@pytest.fixture(scope="module")
def sources():
    """The prepared data tables of this session (removed at the end)."""
    root = BENCH_DIR / f"dml-src-{os.getpid()}"
    per_file = max(1, ROWS // DML_FILES)
    yield {
        "dv": _build(root / "dv", DML_FILES, per_file, dv=True),
        "plain": _build(root / "plain", DML_FILES, per_file, dv=False),
        "small": _build(root / "small", OPT_FILES, OPT_ROWS, dv=False),
    }
    shutil.rmtree(root, ignore_errors=True)


def _target_line(rel: str, part: pa.Table, size: int) -> str:
    add = {"path": rel, "partitionValues": {}, "size": size, "modificationTime": _BASE_TS_MS,
           "dataChange": True, "stats": _stats(part)}
    return json.dumps({"add": add}, separators=(",", ":"))


def _gen_many_files(root: pathlib.Path, adds: int) -> None:
    """``single_commit`` of _tables.py with add ``TARGET`` replaced by a real 100-row file."""
    (root / "_delta_log").mkdir(parents=True)
    lo = TARGET * 100
    ids = pa.array(range(lo, lo + 100), pa.int64())
    part = pa.table({"id": ids, "value": pc.multiply(ids.cast(pa.float64()), 0.5),
                     "date": pa.array(["2024-06-01"] * 100)})
    pq.write_table(part, root / TARGET_NAME, compression="snappy")
    real = _target_line(TARGET_NAME, part, (root / TARGET_NAME).stat().st_size)
    lines = (real if i == TARGET else line for i, line in enumerate(_AddWriter(seed=1, partitioned=False).lines(adds, _BASE_TS_MS)))
    head = [_commit_info(0, _BASE_TS_MS, "WRITE", "ErrorIfExists", adds, partition_by=[]), _protocol(), _metadata([], _BASE_TS_MS)]
    _write_commit(root / "_delta_log", 0, head, lines)


@pytest.fixture(scope="module")
def many_files() -> str:
    """The cached many-files table (generated under a temporary name, then renamed)."""
    final = BENCH_DIR / f"dml_many_files-{ADDS}"
    if not final.is_dir():
        tmp = BENCH_DIR / f".dml_many_files-{ADDS}.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        t0 = time.perf_counter()
        _gen_many_files(tmp, ADDS)
        os.rename(tmp, final)
        print(f"\n[dml] generated dml_many_files ({ADDS} adds) in {time.perf_counter() - t0:.1f}s -> {final}")
    return str(final)


def _fresh(src: str, dst: pathlib.Path, link: bool = False) -> str:
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst, copy_function=os.link if link else shutil.copy2)
    return str(dst)


# -- one system on one table ----------------------------------------------------------------------


def _open(system: str, path: str) -> Any:
    return delta_occ.Table(path) if system == "delta-occ" else deltalake.DeltaTable(path)


def _delete(table: Any, where: str) -> int:
    """The delete; returns the deleted-row count from the commit metrics."""
    if isinstance(table, delta_occ.Table):
        return int(table.delete(where).metrics["numDeletedRows"])
    return int(table.delete(where)["num_deleted_rows"])


def _optimize(table: Any) -> int:
    """Compaction; returns the number of files removed."""
    if isinstance(table, delta_occ.Table):
        return int(table.optimize().metrics["numRemovedFiles"])
    return int(table.optimize.compact()["numFilesRemoved"])  # (deltalake's own name for it)


def _read_back(reader: str, path: str) -> Dict[str, int]:
    """Rows and live files as ``reader`` reads the table."""
    if reader == "delta-occ":
        snap = delta_occ.Table(path).snapshot()
        files = snap.files()
        dv_rows = sum(c or 0 for c in files.column("dv_cardinality").to_pylist())
        return {"rows": snap.to_pyarrow(columns=["id"]).num_rows, "files": files.num_rows, "dv_rows": dv_rows}
    dt = deltalake.DeltaTable(path)
    return {"rows": dt.to_pyarrow_table(columns=["id"]).num_rows, "files": len(dt.file_uris()), "dv_rows": 0}


def _log_actions(path: str, version: int) -> Dict[str, int]:
    counts: Dict[str, int] = {}
    with open(os.path.join(path, "_delta_log", f"{version:020d}.json")) as f:
        for line in f:
            kind = next(iter(json.loads(line)))
            counts[kind] = counts.get(kind, 0) + 1
    return counts


# -- timing and reporting -------------------------------------------------------------------------

_RESULTS: Dict[str, Dict[str, Dict[str, Any]]] = {}


def _cpu() -> float:
    """CPU seconds of this process (all threads) plus its waited-for children."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + ru.ru_utime + ru.ru_stime


def _run_root() -> pathlib.Path:
    return BENCH_DIR / f"dml-run-{os.getpid()}"


@pytest.fixture(scope="module", autouse=True)
def _remove_run_root():
    """Round copies live under one directory per session, removed at the end."""
    yield
    shutil.rmtree(_run_root(), ignore_errors=True)


def _run(benchmark, workload: str, system: str, prepare: Callable[[pathlib.Path], Any], op: Callable[[Any], Any]) -> List[Dict[str, Any]]:
    """Time ``op(prepare(dir))`` for ROUNDS fresh copies; returns the rounds, the last copy kept
    in ``rounds[-1]["dir"]`` until ``_finish``."""
    run_dir = _run_root() / f"{workload}-{system}"
    rounds: List[Dict[str, Any]] = []

    def setup():
        return (prepare(run_dir),), {}

    def target(state):
        w0, c0 = time.perf_counter(), _cpu()
        out = op(state)
        rounds.append({"wall": time.perf_counter() - w0, "cpu": _cpu() - c0, "out": out, "dir": str(run_dir)})

    benchmark.group = f"dml-{workload}"
    benchmark.pedantic(target, setup=setup, rounds=ROUNDS, iterations=1, warmup_rounds=0)
    return rounds


def _finish(benchmark, workload: str, system: str, rounds: List[Dict[str, Any]], **extra: Any) -> None:
    walls = [r["wall"] for r in rounds]
    summary = {"rounds": len(rounds), "wall_median": statistics.median(walls), "wall_min": min(walls),
               "cpu_median": statistics.median(r["cpu"] for r in rounds), **extra}
    _RESULTS.setdefault(workload, {})[system] = summary
    benchmark.extra_info.update(summary)
    print(f"\n[dml] {workload:<26} {system:<9} median {summary['wall_median']:.3f}s min {summary['wall_min']:.3f}s "
          f"cpu {summary['cpu_median']:.3f}s ({len(rounds)} rounds)" + (f" {extra}" if extra else ""))
    both = _RESULTS[workload]
    if len(both) == len(SYSTEMS):
        ratio = both["deltalake"]["wall_median"] / both["delta-occ"]["wall_median"]
        benchmark.extra_info["ratio_deltalake_over_delta_occ"] = ratio
        both["delta-occ"]["ratio_deltalake_over_delta_occ"] = ratio
        print(f"[dml] {workload:<26} deltalake / delta-occ = {ratio:.2f} (median wall; > 1: delta-occ faster)")
    shutil.rmtree(rounds[-1]["dir"], ignore_errors=True)
    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    (BENCH_DIR / "dml.json").write_text(json.dumps(_RESULTS, indent=2, sort_keys=True) + "\n")


# -- the benchmarks -------------------------------------------------------------------------------


def _scattered_delete(benchmark, system: str, src: str, workload: str) -> None:
    rounds = _run(benchmark, workload, system, lambda d: _open(system, _fresh(src, d)), lambda t: _delete(t, SCATTER))
    deleted = len(range(0, max(1, ROWS // DML_FILES) * DML_FILES, 100))
    assert all(r["out"] == deleted for r in rounds), [r["out"] for r in rounds]
    # deltalake 1.6 does not read DV tables (reader feature deletionVectors): delta-occ reads both
    got = _read_back("delta-occ" if workload == "delete-dv" else system, rounds[-1]["dir"])
    assert got["rows"] == max(1, ROWS // DML_FILES) * DML_FILES - deleted, got
    if system == "delta-occ" and workload == "delete-dv":
        assert got["files"] == DML_FILES and got["dv_rows"] == deleted, got  # DVs, no rewrite
    else:
        assert got["dv_rows"] == 0, got
    _finish(benchmark, workload, system, rounds, deleted_rows=deleted, files_after=got["files"])


@pytest.mark.parametrize("system", SYSTEMS)
def test_delete_dv(benchmark, sources, system):
    _scattered_delete(benchmark, system, sources["dv"], "delete-dv")


@pytest.mark.parametrize("system", SYSTEMS)
def test_delete_rewrite(benchmark, sources, system):
    _scattered_delete(benchmark, system, sources["plain"], "delete-rewrite")


@pytest.mark.parametrize("system", SYSTEMS)
def test_optimize(benchmark, sources, system):
    rounds = _run(benchmark, "optimize", system, lambda d: _open(system, _fresh(sources["small"], d)), _optimize)
    assert all(r["out"] == OPT_FILES for r in rounds), [r["out"] for r in rounds]
    got = _read_back(system, rounds[-1]["dir"])
    assert got == {"rows": OPT_FILES * OPT_ROWS, "files": 1, "dv_rows": 0}, got
    _finish(benchmark, "optimize", system, rounds, files_before=OPT_FILES)


def _check_one_of_many(rounds: List[Dict[str, Any]]) -> None:
    path = rounds[-1]["dir"]
    assert _log_actions(path, 1) == {"commitInfo": 1, "remove": 1, "add": 1}, _log_actions(path, 1)
    with open(os.path.join(path, "_delta_log", f"{1:020d}.json")) as f:
        add = next(a["add"] for a in map(json.loads, f) if "add" in a)
    assert json.loads(add["stats"])["numRecords"] == 99, add


@pytest.mark.parametrize("system", SYSTEMS)
def test_delete_one_of_many(benchmark, many_files, system):
    rounds = _run(benchmark, "delete-one-of-many", system, lambda d: _open(system, _fresh(many_files, d, link=True)),
                  lambda t: _delete(t, TARGET_WHERE))
    assert all(r["out"] == 1 for r in rounds), [r["out"] for r in rounds]
    _check_one_of_many(rounds)
    _finish(benchmark, "delete-one-of-many", system, rounds, adds=ADDS)


_PROCESS_SCRIPT = textwrap.dedent(
    """
    import json, sys, time
    t0 = time.perf_counter()
    system, path, where = sys.argv[1:4]
    if system == "delta-occ":
        import delta_occ
        t1 = time.perf_counter()
        table = delta_occ.Table(path)
        t2 = time.perf_counter()
        deleted = int(table.delete(where).metrics["numDeletedRows"])
    else:
        import deltalake
        t1 = time.perf_counter()
        table = deltalake.DeltaTable(path)
        t2 = time.perf_counter()
        deleted = int(table.delete(where)["num_deleted_rows"])
    t3 = time.perf_counter()
    with open("/proc/self/status") as f:
        peak = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    print(json.dumps({"import": t1 - t0, "open": t2 - t1, "delete": t3 - t2, "deleted": deleted, "peak_kib": peak}))
    """
)


def _process_delete(system: str, path: str) -> Dict[str, Any]:
    proc = subprocess.run([sys.executable, "-c", _PROCESS_SCRIPT, system, path, TARGET_WHERE],
                          capture_output=True, text=True, timeout=900, cwd=str(BENCH_DIR))
    assert proc.returncode == 0, f"{system} failed:\n{proc.stderr[-4000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("system", SYSTEMS)
def test_delete_one_of_many_process(benchmark, many_files, system):
    rounds = _run(benchmark, "delete-one-of-many-process", system, lambda d: _fresh(many_files, d, link=True),
                  lambda path: _process_delete(system, path))
    assert all(r["out"]["deleted"] == 1 for r in rounds), [r["out"] for r in rounds]
    _check_one_of_many(rounds)
    split = {k: statistics.median(r["out"][k] for r in rounds) for k in ("import", "open", "delete")}
    peak = max(r["out"]["peak_kib"] for r in rounds) / 1024
    _finish(benchmark, "delete-one-of-many-process", system, rounds, adds=ADDS, peak_rss_mib=round(peak, 1),
            **{f"child_{k}_median": round(v, 4) for k, v in split.items()})

