"""Row-level concurrency under contention: concurrent DELETEs of distinct rows of one file.

Workload (``test_concurrent_deletes``): one table holding a single parquet file of
``max(1000, writers * deletes)`` rows (``id`` 0.., ``v``). ``writers`` worker processes start
together (a barrier) and worker ``w`` deletes ids ``w*deletes .. w*deletes+deletes-1``, one
DELETE per row, one after the other. Every delete touches the same file and no two touch the
same row. Each worker counts commits and failures (any exception: a conflict, exhausted retries);
a failed row is skipped, not retried by the worker. Systems, one table each, fresh every round:

* ``delta-occ-row-level`` -- table with ``delta.enableDeletionVectors=true``,
  ``Table.delete(where, row_level=True, max_attempts=1000)``: conflicts on the shared file are
  resolved on row positions, so every delete must commit (asserted).
* ``delta-occ-file-level`` -- the same DV table and call with ``row_level=False`` and the default
  ``max_attempts``: a concurrent delete of the same file is a conflict.
* ``deltalake`` -- delta-rs (``deltalake`` 1.6.x), table written by ``write_deltalake`` (no DVs),
  ``DeltaTable.delete(where)`` after ``update_incremental()`` (so each delete starts from the latest
  version, as delta-occ's ``begin`` does); deletes rewrite the file, default commit retries.

Workers are ``spawn``-ed processes for every system (deltalake panics in forked children of a
process that used it). Timing starts when the barrier opens, after the imports and table opens:
wall time is the last worker's end minus the first worker's start (``time.monotonic``, one clock
for all processes on Linux). Reported per system (``extra_info``, stdout with ``-s``, and
``$DELTA_OCC_BENCH_DIR/row_level.json``): attempted, committed, success rate, commits/s, failures
by exception class, and for delta-occ the mean attempts per commit and rows resolved at row level.
After each round the table is read back and must hold exactly the rows whose delete did not
commit (every system). The pytest-benchmark timing of a round includes spawning the workers.

Row-level check cost (``test_row_level_check_per_pair``): a DV table with one file of
``$DELTA_OCC_BENCH_RLC_ROWS`` rows; transaction A stages ``DELETE id = 1`` (not committed), then
``K`` other deletes of distinct rows of the same file commit, each a winner that removes and
re-adds that file with a new DV. ``A.validate()`` checks A against the K winners without
committing; ``check_seconds / K`` is the time of one row-level check of a conflicting file pair
(A's remove against the winner's remove + add of the same file). The same transaction at file
level must raise ConcurrentAppendException or ConcurrentDeleteReadException.

Sizes: ``DELTA_OCC_BENCH_WRITERS`` (8), ``DELTA_OCC_BENCH_DELETES`` (50 per writer),
``DELTA_OCC_BENCH_RLC_WINNERS`` (100) and ``DELTA_OCC_BENCH_RLC_ROWS`` (100,000). Without
``--benchmark-enable`` (the CI smoke pass, every body runs once) the unset ones default to the
smoke sizes 2 writers x 5 deletes and 10 winners over 10,000 rows.
"""

from __future__ import annotations

import collections
import json
import multiprocessing
import os
import shutil
import time
from typing import Any, Dict, List, Tuple

import pytest

import delta_occ as docc

from _tables import BENCH_DIR, ROUNDS

SYSTEMS = ("delta-occ-row-level", "delta-occ-file-level", "deltalake")
FULL = {"WRITERS": 8, "DELETES": 50, "RLC_WINNERS": 100, "RLC_ROWS": 100_000}
SMOKE = {"WRITERS": 2, "DELETES": 5, "RLC_WINNERS": 10, "RLC_ROWS": 10_000}
ROW_LEVEL_MAX_ATTEMPTS = 1000
WORKER_TIMEOUT = 600.0  # seconds for one round before the parent gives up


def _size(name: str, smoke: bool) -> int:
    v = os.environ.get(f"DELTA_OCC_BENCH_{name}")
    return int(v) if v else (SMOKE if smoke else FULL)[name]


def _data(rows: int):
    import pyarrow as pa

    return pa.table({"id": pa.array(range(rows), pa.int64()), "v": pa.array(range(rows), pa.int64())})


def _create(system: str, path: str, rows: int) -> None:
    """One table holding one data file of ``rows`` rows."""
    shutil.rmtree(path, ignore_errors=True)
    if system == "deltalake":
        import deltalake

        deltalake.write_deltalake(path, _data(rows))
        assert len(deltalake.DeltaTable(path).file_uris()) == 1
    else:
        import pyarrow as pa

        t = docc.Table.create(path, pa.schema([("id", pa.int64()), ("v", pa.int64())]), [],
                              {"delta.enableDeletionVectors": "true"})
        t.append(_data(rows))
        assert t.snapshot().files().num_rows == 1


def _remaining_ids(system: str, path: str) -> List[int]:
    if system == "deltalake":
        import deltalake

        tbl = deltalake.DeltaTable(path).to_pyarrow_table(columns=["id"])
    else:
        t = docc.Table(path)
        t.refresh()
        tbl = t.snapshot().to_pyarrow(columns=["id"])
    return sorted(tbl.column("id").to_pylist())


# -- worker process -----------------------------------------------------------------------------


def _worker(system: str, path: str, w: int, deletes: int, barrier: Any, out: Any) -> None:
    """Delete ids w*deletes .. w*deletes+deletes-1 one by one; report to ``out``."""
    res: Dict[str, Any] = {"w": w, "committed_ids": [], "failures": {}, "attempts": 0, "rows_resolved": 0}
    try:
        if system == "deltalake":
            import deltalake

            dt = deltalake.DeltaTable(path)

            def delete(where: str) -> None:
                dt.update_incremental()
                dt.delete(where)
        else:
            t = docc.Table(path)
            row_level = system == "delta-occ-row-level"
            max_attempts = ROW_LEVEL_MAX_ATTEMPTS if row_level else None

            def delete(where: str) -> None:
                r = t.delete(where, row_level=row_level, max_attempts=max_attempts)
                res["attempts"] += r.attempts
                res["rows_resolved"] += r.rows_resolved
        failures: Dict[str, int] = collections.Counter()
        barrier.wait()
        res["start"] = time.monotonic()
        for i in range(deletes):
            rid = w * deletes + i
            try:
                delete(f"id = {rid}")
            except Exception as e:  # noqa: BLE001 - every failure counts, by class
                failures[type(e).__name__] += 1
                res.setdefault("first_error", f"{type(e).__name__}: {e}"[:500])
            else:
                res["committed_ids"].append(rid)
        res["end"] = time.monotonic()
        res["failures"] = dict(failures)
    except BaseException as e:  # noqa: BLE001 - the parent reports it
        res["fatal"] = f"{type(e).__name__}: {e}"
        try:
            barrier.abort()
        except Exception:  # noqa: BLE001
            pass
    out.put(res)


def run_workload(system: str, path: str, writers: int, deletes: int) -> Dict[str, Any]:
    """Start ``writers`` spawned workers on ``path`` together; collect and summarize."""
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(writers)
    out = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(system, path, w, deletes, barrier, out), daemon=True)
             for w in range(writers)]
    for p in procs:
        p.start()
    results = []
    deadline = time.monotonic() + WORKER_TIMEOUT
    try:
        for _ in procs:
            results.append(out.get(timeout=max(1.0, deadline - time.monotonic())))
    finally:
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
                p.join()
    fatal = [r["fatal"] for r in results if "fatal" in r]
    assert not fatal, f"{system}: worker failed: {fatal}"
    failures: Dict[str, int] = collections.Counter()
    for r in results:
        failures.update(r["failures"])
    committed = sorted(i for r in results for i in r["committed_ids"])
    wall = max(r["end"] for r in results) - min(r["start"] for r in results)
    attempted = writers * deletes
    summary = {
        "system": system,
        "writers": writers,
        "deletes_per_writer": deletes,
        "attempted": attempted,
        "committed": len(committed),
        "failed": attempted - len(committed),
        "success_rate": len(committed) / attempted,
        "wall_seconds": wall,
        "commits_per_second": len(committed) / wall,
        "failures": dict(failures),
        "first_error": next((r["first_error"] for r in results if "first_error" in r), None),
        "committed_ids": committed,
    }
    if system != "deltalake":
        attempts = sum(r["attempts"] for r in results)
        summary["attempts_per_commit"] = attempts / len(committed) if committed else None
        summary["rows_resolved"] = sum(r["rows_resolved"] for r in results)
    return summary


# -- the benchmarks -----------------------------------------------------------------------------


_RESULTS: Dict[str, Dict[str, Any]] = {}


def _save() -> None:
    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    (BENCH_DIR / "row_level.json").write_text(json.dumps(_RESULTS, indent=2, sort_keys=True) + "\n")


def _print_table() -> None:
    cols = "system                 attempted  committed  success   commits/s  failures"
    lines = ["", f"[row-level] {cols}"]
    for s in SYSTEMS:
        r = _RESULTS.get(s)
        if r is None:
            continue
        fails = ", ".join(f"{k} {v}" for k, v in sorted(r["failures"].items())) or "-"
        lines.append(f"[row-level] {s:<22} {r['attempted']:>9}  {r['committed']:>9}  "
                     f"{r['success_rate'] * 100:>6.1f}%  {r['commits_per_second']:>10.1f}  {fails}")
    ours = _RESULTS.get("delta-occ-row-level")
    for other in SYSTEMS[1:]:
        r = _RESULTS.get(other)
        if ours and r:
            ratio = ours["commits_per_second"] / r["commits_per_second"] if r["commits_per_second"] else float("inf")
            lines.append(f"[row-level] delta-occ row-level / {other}: {ratio:.1f}x commits/s, "
                         f"{ours['committed']} vs {r['committed']} of {r['attempted']} committed")
    print("\n".join(lines))


@pytest.mark.parametrize("system", SYSTEMS)
def test_concurrent_deletes(benchmark, system):
    writers = _size("WRITERS", benchmark.disabled)
    deletes = _size("DELETES", benchmark.disabled)
    rows = max(1000, writers * deletes)
    path = str(BENCH_DIR / f"row-level-{system}")
    runs: List[Dict[str, Any]] = []

    def setup() -> Tuple[tuple, dict]:
        _create(system, path, rows)
        return (), {}

    def run() -> None:
        r = run_workload(system, path, writers, deletes)
        # read back: exactly the rows whose delete did not commit
        assert _remaining_ids(system, path) == sorted(set(range(rows)) - set(r["committed_ids"])), system
        runs.append(r)

    benchmark.group = "row-level-deletes"
    benchmark.pedantic(run, setup=setup, rounds=ROUNDS, iterations=1, warmup_rounds=0)
    shutil.rmtree(path, ignore_errors=True)

    if system == "delta-occ-row-level":
        for r in runs:
            assert r["committed"] == r["attempted"], (r["failures"], r["first_error"])
    best = max(runs, key=lambda x: x["commits_per_second"])
    summary = {k: v for k, v in best.items() if k != "committed_ids"}
    summary["rounds"] = len(runs)
    summary["success_rate_all_rounds"] = sum(r["committed"] for r in runs) / sum(r["attempted"] for r in runs)
    benchmark.extra_info.update(summary)
    _RESULTS[system] = summary
    _save()
    print(f"\n[row-level] {system}: {best['committed']}/{best['attempted']} committed "
          f"({best['success_rate'] * 100:.1f}%) in {best['wall_seconds']:.2f}s, "
          f"{best['commits_per_second']:.1f} commits/s, failures {best['failures'] or '-'}"
          + (f", {best['attempts_per_commit']:.2f} attempts/commit" if best.get("attempts_per_commit") else ""))
    if system == SYSTEMS[-1]:
        _print_table()


def test_row_level_check_per_pair(benchmark):
    winners = _size("RLC_WINNERS", benchmark.disabled)
    rows = _size("RLC_ROWS", benchmark.disabled)
    assert rows > winners + 2
    path = str(BENCH_DIR / "row-level-check")
    _create("delta-occ", path, rows)
    t = docc.Table(path)
    a = t.begin(row_level=True)
    a.delete("id = 1")
    f = t.begin(row_level=False)
    f.delete("id = 1")
    for k in range(winners):
        t.delete(f"id = {rows - 1 - k}")  # distinct rows of the same file, not A's
    results = []

    def run() -> None:
        results.append(a.validate())

    benchmark.group = "row-level-check"
    benchmark.pedantic(run, rounds=ROUNDS, iterations=1, warmup_rounds=0)
    r = min(results, key=lambda x: x["check_seconds"])
    assert r["winners"] == winners

    with pytest.raises(docc.exceptions.DeltaConcurrentModificationException) as exc:
        f.validate()
    assert type(exc.value).__name__ in ("ConcurrentAppendException", "ConcurrentDeleteReadException"), exc.value
    a.abort()
    f.abort()
    shutil.rmtree(path, ignore_errors=True)

    per_pair = r["check_seconds"] / winners
    benchmark.extra_info.update(
        rows=rows,
        winners=winners,
        check_seconds=r["check_seconds"],
        read_seconds=r["read_seconds"],
        per_pair_seconds=per_pair,
        file_level_error=type(exc.value).__name__,
    )
    _RESULTS["row-level-check"] = dict(benchmark.extra_info)
    _save()
    print(f"\n[row-level check] {winners} conflicting file pairs ({rows:,} rows, DVs of 1..{winners} rows): "
          f"check {r['check_seconds'] * 1e3:.2f} ms = {per_pair * 1e6:.1f} us per pair "
          f"(+ {r['read_seconds'] * 1e3:.2f} ms reading the winners); file level raises "
          f"{type(exc.value).__name__}")
