"""What the change data feed costs a DML (issue 30, "Change data feed"). One table of ``ROWS`` rows
(default 1,000,000: ``id``, ``x``, a 40-byte ``payload``) in 10 files; DELETE and UPDATE of every
100th row (``id % 100 = 7``: 1% of the rows, in every file). Each is timed once (pytest-benchmark,
ROUNDS rounds (default 3), a fresh copy of the table each time) in four setups, in the same run:

* delta-occ without the feed and with it, on a table with deletion vectors (the DML marks rows);
* delta-occ without the feed and with it, on a table without them (the DML rewrites files);
* deltalake 1.6 with the feed, on the table without deletion vectors (the competitor: its DELETE
  and UPDATE write cdc files too).

Checked, not timed: the feed of the commit holds exactly the changed rows (delete: 1%; update:
1% preimages and 1% postimages), on both systems. The ratios go to BENCHMARKS.md."""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any, Dict

import pyarrow as pa
import pytest

delta_occ = pytest.importorskip("delta_occ")

ROWS = int(os.environ.get("DELTA_OCC_BENCH_ROWS", "1000000"))
FILES = 10
#: Rounds per setup (each on a fresh copy); the minimum is reported.
ROUNDS = int(os.environ.get("DELTA_OCC_BENCH_ROUNDS", "3"))
WHERE = "id % 100 = 7"
SCHEMA = pa.schema([("id", pa.int64()), ("x", pa.int64()), ("payload", pa.string())])
CHANGED = sum(1 for i in range(ROWS) if i % 100 == 7)


def _batch(k: int) -> pa.Table:
    per = ROWS // FILES
    ids = pa.array(range(k * per, (k + 1) * per), pa.int64())
    return pa.table({"id": ids, "x": ids, "payload": pa.array([f"{i:040d}" for i in range(k * per, (k + 1) * per)])}, schema=SCHEMA)


@pytest.fixture(scope="module")
def sources() -> Dict[str, str]:
    root = tempfile.mkdtemp(prefix="bench-cdf-")
    out = {}
    for name, props in {
        "dv": {"delta.enableDeletionVectors": "true"},
        "dv+cdf": {"delta.enableDeletionVectors": "true", "delta.enableChangeDataFeed": "true"},
        "rewrite": {},
        "rewrite+cdf": {"delta.enableChangeDataFeed": "true"},
    }.items():
        t = delta_occ.Table.create(os.path.join(root, name), SCHEMA, properties=props)
        for k in range(FILES):
            t.append(_batch(k))
        out[name] = t.path
    yield out
    shutil.rmtree(root, ignore_errors=True)


def _copy(src: str) -> str:
    dst = tempfile.mkdtemp(prefix="bench-cdf-run-")
    os.rmdir(dst)
    shutil.copytree(src, dst)
    return dst


def _run(benchmark: Any, system: str, src: str, op: str) -> str:
    holder: Dict[str, str] = {}

    def setup() -> Any:
        if "dir" in holder:  # the previous round's copy
            shutil.rmtree(holder["dir"], ignore_errors=True)
        holder["dir"] = _copy(src)
        return (holder["dir"],), {}

    def go(path: str) -> None:
        if system == "deltalake":
            import deltalake

            dt = deltalake.DeltaTable(path)
            dt.delete(WHERE) if op == "delete" else dt.update(predicate=WHERE, updates={"x": "x + 1"})
        else:
            t = delta_occ.Table(path)
            t.delete(WHERE) if op == "delete" else t.update(WHERE, {"x": "x + 1"})

    benchmark.pedantic(go, setup=setup, rounds=ROUNDS, iterations=1)
    benchmark.extra_info.update(system=system, op=op, rows=ROWS)
    return holder["dir"]


def _check_feed(path: str, op: str) -> None:
    t = delta_occ.Table(path)
    feed = t.read_change_feed(t.version)
    kinds = feed.column("_change_type").to_pylist()
    if op == "delete":
        assert kinds.count("delete") == CHANGED == len(kinds)
    else:
        assert kinds.count("update_preimage") == kinds.count("update_postimage") == CHANGED == len(kinds) // 2


@pytest.mark.parametrize("op", ["delete", "update"])
@pytest.mark.parametrize("setup_name", ["dv", "dv+cdf", "rewrite", "rewrite+cdf"])
def test_delta_occ(benchmark, sources, setup_name, op):
    path = _run(benchmark, "delta-occ", sources[setup_name], op)
    if setup_name.endswith("+cdf"):
        _check_feed(path, op)
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize("op", ["delete", "update"])
def test_deltalake(benchmark, sources, op):
    pytest.importorskip("deltalake")
    path = _run(benchmark, "deltalake", sources["rewrite+cdf"], op)
    _check_feed(path, op)  # read by delta-occ: the same feed rules for its cdc files
    shutil.rmtree(path, ignore_errors=True)
