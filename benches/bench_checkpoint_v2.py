"""Replay from a V2 checkpoint (sidecars) against replay from a classic one (issue 31: within 10%).

Both tables are made from the ``checkpoint`` shape's JSON commits 0..12 (``ADDS`` adds; see
``_tables.py``), its deltalake checkpoint left out. Commit 0 is rewritten to set
``delta.checkpointInterval=13`` and, for the V2 table, ``delta.checkpointPolicy=v2`` with the
``v2Checkpoint`` feature (protocol 3/7). delta_occ then appends one file as version 13, and that
commit writes the checkpoint: classic single-file parquet for one table, a UUID-named top-level
file with ``ceil(files / SIDECAR_ACTIONS)`` sidecars for the other. Both checkpoints are written
by the same code from the same snapshot, so the comparison is only the layout.

Timed, per table: open the latest snapshot and materialise its file list (as
``bench_snapshot.test_delta_occ_files``). deltalake cannot read V2 checkpoints (it refuses the
``v2Checkpoint`` reader feature), so the competitor in this run is delta_occ's own classic replay;
the ratio V2 / classic is what BENCHMARKS.md reports. The checkpoint write time of each is
printed once (untimed by pytest-benchmark, measured with ``time.perf_counter``)."""

from __future__ import annotations

import json
import pathlib
import shutil
import time
from typing import Dict

import pyarrow as pa
import pytest

from _tables import ADDS, BENCH_DIR

delta_occ = pytest.importorskip("delta_occ")

_LAYOUTS = ("classic", "v2")


def _make(source: pathlib.Path, layout: str) -> pathlib.Path:
    dest = BENCH_DIR / f"cp-{layout}-{ADDS}"
    done = dest / "_delta_log" / f"{13:020}.json"
    if done.exists():
        return dest
    if dest.exists():
        shutil.rmtree(dest)
    (dest / "_delta_log").mkdir(parents=True)
    for v in range(13):
        name = f"{v:020}.json"
        src = source / "_delta_log" / name
        if v != 0:
            shutil.copyfile(src, dest / "_delta_log" / name)
            continue
        lines = []
        for line in src.read_text().splitlines():
            a = json.loads(line)
            if "protocol" in a and layout == "v2":
                a["protocol"] = {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["v2Checkpoint"], "writerFeatures": ["v2Checkpoint"]}
            if "metaData" in a:
                conf = a["metaData"].setdefault("configuration", {})
                conf["delta.checkpointInterval"] = "13"
                if layout == "v2":
                    conf["delta.checkpointPolicy"] = "v2"
            lines.append(json.dumps(a))
        (dest / "_delta_log" / name).write_text("\n".join(lines) + "\n")
    t = delta_occ.Table(str(dest))
    schema = t.snapshot().schema
    start = time.perf_counter()
    t.append(pa.table({"id": [1], "value": [1.0], "date": ["2030-01-01"]}, schema=schema))  # v13 + checkpoint
    print(f"\n[bench] {layout}: commit 13 with its checkpoint of {ADDS} files took {time.perf_counter() - start:.2f}s")
    return dest


@pytest.fixture(scope="module")
def tables(bench_table) -> Dict[str, pathlib.Path]:
    source = pathlib.Path(bench_table("checkpoint").path)
    out = {layout: _make(source, layout) for layout in _LAYOUTS}
    log = out["v2"] / "_delta_log"
    assert [n for n in log.iterdir() if n.name.startswith(f"{13:020}.checkpoint.") and n.name.count(".") == 3], "no V2 checkpoint"
    assert (out["classic"] / "_delta_log" / f"{13:020}.checkpoint.parquet").exists()
    return out


def _load(path: str):
    snap = delta_occ.Table(path).snapshot()
    return snap, snap.files()


@pytest.mark.parametrize("layout", _LAYOUTS)
def test_replay(benchmark, tables, rounds, layout):
    benchmark.group = "checkpoint-v2-vs-classic"
    path = str(tables[layout])
    snap, files = _load(path)
    assert snap.version == 13 and snap.handle.checkpoint_version == 13
    expected = ADDS + 10 - 2 + 1  # the checkpoint shape's live files plus commit 13's
    assert files.num_rows == expected
    result = benchmark.pedantic(lambda: _load(path)[1].num_rows, rounds=rounds, iterations=1, warmup_rounds=0)
    assert result == expected
    benchmark.extra_info.update(adds=ADDS, layout=layout)
