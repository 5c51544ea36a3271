"""Row tracking (issue 30): what keeping row ids costs, and what following rows by id costs.

One table layout, ``ROWS`` rows (default 1,000,000: ``id``, ``v`` a 20-character string) appended
in ``FILES`` (20) batches, made twice per round: with ``delta.enableRowTracking=true`` and
without it (both with deletion vectors).

``test_optimize``: OPTIMIZE (bin-packing every file into one) of each table. Keeping ids means
reading each input's materialized columns and writing two more int64 columns. deltalake
(``DeltaTable.optimize.compact``) compacts its own copy of the plain table in the same run; it
cannot write row-tracking tables at all (1.6 refuses the feature).

``test_delete_losing_to_a_zorder``: a DELETE of 1% of the rows (``id % 100 = 7``) is staged, a
Z-order of the table commits first, and the DELETE then commits. With row tracking the DELETE
follows its rows into the Z-order's outputs by id (``pass_followed_by_row_id``): timed is that
commit (the check reads the row-id columns of the deleted files and of the outputs). Without row
tracking the same commit is a conflict (``ConcurrentDeleteDeleteException``, asserted): the timed
counterpart is then the DELETE rerun from scratch after the conflict, which is what a user pays.
delta-spark's DELETE against its own OPTIMIZE conflicts the same way (not run here: no JVM in
this bench).

Medians of ``ROUNDS`` rounds on fresh tables are printed (``-s``) and written to
``$DELTA_OCC_BENCH_DIR/row_tracking.json``.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import time
from typing import Dict, List

import pyarrow as pa
import pytest

delta_occ = pytest.importorskip("delta_occ")
from delta_occ import exceptions as ex  # noqa: E402

from _tables import BENCH_DIR  # noqa: E402

ROWS = int(os.environ.get("DELTA_OCC_BENCH_ROWS", "1000000"))
FILES = 20
ROUNDS = int(os.environ.get("DELTA_OCC_BENCH_RT_ROUNDS", "3"))
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
DV = {"delta.enableDeletionVectors": "true"}
RT = {**DV, "delta.enableRowTracking": "true"}


def _make(path: str, properties: Dict[str, str]) -> "delta_occ.Table":
    t = delta_occ.Table.create(path, SCHEMA, properties=properties)
    per = ROWS // FILES
    for b in range(FILES):
        ids = pa.array(range(b * per, (b + 1) * per), pa.int64())
        t.append(pa.table({"id": ids, "v": pa.compute.utf8_lpad(pa.compute.cast(ids, pa.string()), 20, "x")}))
    return t


def _report(name: str, results: Dict[str, List[float]], cpu: Dict[str, List[float]]) -> Dict[str, float]:
    medians = {k: statistics.median(v) * 1000 for k, v in results.items()}
    cpu_medians = {k: statistics.median(v) * 1000 for k, v in cpu.items()}
    print(f"\n{name} (ms, median of {ROUNDS}): " + ", ".join(f"{k} {v:.1f} (CPU {cpu_medians[k]:.1f})" for k, v in medians.items()))
    out = os.path.join(BENCH_DIR, "row_tracking.json")
    os.makedirs(BENCH_DIR, exist_ok=True)
    found = json.load(open(out)) if os.path.exists(out) else {}
    found[name] = {"rows": ROWS, "rounds": ROUNDS, "median_ms": medians, "median_cpu_ms": cpu_medians, "all_s": results}
    with open(out, "w") as f:
        json.dump(found, f, indent=1)
    return medians


def test_optimize(tmp_path, benchmark):
    deltalake = pytest.importorskip("deltalake")
    results: Dict[str, List[float]] = {"row-tracking": [], "plain": [], "deltalake": []}
    cpu: Dict[str, List[float]] = {k: [] for k in results}

    def one_round() -> None:
        for name, props in (("row-tracking", RT), ("plain", DV)):
            path = str(tmp_path / name)
            shutil.rmtree(path, ignore_errors=True)
            t = _make(path, props)
            if name == "plain":
                shutil.rmtree(str(tmp_path / "dl"), ignore_errors=True)
                shutil.copytree(path, str(tmp_path / "dl"))
            start, cpu0 = time.perf_counter(), time.process_time()
            t.optimize()
            results[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - cpu0)
            assert len(t.snapshot().files(["path"])) == 1
            assert t.snapshot().to_pyarrow(columns=["id"]).num_rows == ROWS
        dt = deltalake.DeltaTable(str(tmp_path / "dl"))
        start, cpu0 = time.perf_counter(), time.process_time()
        dt.optimize.compact()
        results["deltalake"].append(time.perf_counter() - start)
        cpu["deltalake"].append(time.process_time() - cpu0)

    benchmark.pedantic(one_round, rounds=1, iterations=1)
    for _ in range(ROUNDS - 1):
        one_round()
    m = _report("optimize", results, cpu)
    benchmark.extra_info.update(m)


def test_delete_losing_to_a_zorder(tmp_path, benchmark):
    results: Dict[str, List[float]] = {"followed-by-row-id": [], "plain-rerun-after-conflict": []}
    cpu: Dict[str, List[float]] = {k: [] for k in results}
    gone = len([i for i in range(ROWS - ROWS % FILES) if i % 100 == 7])

    def one_round() -> None:
        for name, props in (("followed-by-row-id", RT), ("plain-rerun-after-conflict", DV)):
            path = str(tmp_path / name)
            shutil.rmtree(path, ignore_errors=True)
            t = _make(path, props)
            txn = delta_occ.Table(path).begin()
            txn.delete("id % 100 = 7")
            t.optimize(zorder_by=["v"])
            start, cpu0 = time.perf_counter(), time.process_time()
            if props is RT:
                result = txn.commit()
                assert "pass_followed_by_row_id" in [r for c in result.checks for r in c["rules"]]
            else:
                with pytest.raises(ex.DeltaConcurrentModificationException):  # (delete/delete on the files it deletes from)
                    txn.commit()
                delta_occ.Table(path).delete("id % 100 = 7")
            results[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - cpu0)
            assert t.snapshot().to_pyarrow(columns=["id"]).num_rows == ROWS - ROWS % FILES - gone

    benchmark.pedantic(one_round, rounds=1, iterations=1)
    for _ in range(ROUNDS - 1):
        one_round()
    m = _report("delete losing to a Z-order", results, cpu)
    benchmark.extra_info.update(m)
