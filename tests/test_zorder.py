"""OPTIMIZE ... ZORDER BY (issue 30): ``optimize(zorder_by=[...])`` rewrites each partition's
files with the rows in the Z-order of those columns.

Expected values: the rows are the table's before the rewrite (delta-kernel-rs and deltalake read
them back); the layout claim is checked from the files' own min/max statistics in the log (not
through delta-occ's pruning): on a shuffled 100 x 100 grid in 10 files every file spans every
value, and after Z-ordering into 16 files a point predicate on either column can match at most
the files whose range holds it — for a Z curve cut into 16 files of 625 rows, each file is one
cell of the 4 x 4 grid of quarter ranges (25 x values by 25 y values), so a point lies in 4
files (one row or column of cells), worked out by hand. Parameter names: delta-spark's ``zOrderBy``."""

from __future__ import annotations

import json
import os
import pathlib
import random
from typing import Any, Dict, List, Tuple

import pyarrow as pa
import pytest

import delta_occ as docc
from delta_occ import exceptions as exc

from helpers import kernel_rows

SCHEMA = pa.schema([("id", pa.int64()), ("x", pa.int64()), ("y", pa.string()), ("p", pa.string())])


def grid(seed: int = 7) -> List[Dict[str, Any]]:
    rows = [{"id": i, "x": i % 100, "y": f"{i // 100:03d}", "p": "a"} for i in range(10_000)]
    random.Random(seed).shuffle(rows)
    return rows


def build(root: pathlib.Path, partitioned: bool = False) -> docc.Table:
    t = docc.Table.create(str(root), SCHEMA, partition_by=["p"] if partitioned else [])
    rows = grid()
    for k in range(10):
        t.append(pa.Table.from_pylist(rows[k * 1000 : (k + 1) * 1000], schema=SCHEMA))
    return t


def live_stats(root: pathlib.Path, t: docc.Table) -> List[Tuple[int, int, str, str]]:
    """(min x, max x, min y, max y) of every live file, from its add's stats in the log."""
    live = set(t.snapshot().files().column("path").to_pylist())
    out: Dict[str, Tuple[int, int, str, str]] = {}
    for name in sorted(os.listdir(root / "_delta_log")):
        if name.endswith(".json"):
            for line in (root / "_delta_log" / name).read_text().splitlines():
                a = json.loads(line).get("add")
                if a and a["path"] in live:
                    s = json.loads(a["stats"])
                    out[a["path"]] = (s["minValues"]["x"], s["maxValues"]["x"], s["minValues"]["y"], s["maxValues"]["y"])
    return list(out.values())


def test_zorder_keeps_the_rows_and_narrows_every_column(tmp_path):
    root = tmp_path / "t"
    t = build(root)
    before = live_stats(root, t)
    assert len(before) == 10 and all(s[:2] == (0, 99) for s in before)  # shuffled: every file spans x
    size = sum(f["size"] for f in t.snapshot().files().to_pylist())
    # a target of exactly 625 rows' worth (the estimate is the inputs' bytes per row): 16 files
    r = t.optimize(target_file_size=-(-625 * size // 10_000), zorder_by=["x", "y"])
    assert r.committed and r.operation == "OPTIMIZE"
    after = live_stats(root, t)
    assert len(after) == 16
    # each file is one cell of the 4 x 4 grid of quarter ranges: a point hits one column of it
    for x in (0, 37, 99):
        assert sum(1 for lo, hi, _, _ in after if lo <= x <= hi) == 4, (x, after)
    for y in ("000", "042", "099"):
        assert sum(1 for _, _, lo, hi in after if lo <= y <= hi) == 4, (y, after)
    expected = sorted(r_["id"] for r_ in grid())
    assert sorted(kernel_rows(t)["id"].to_pylist()) == expected
    import deltalake

    assert sorted(deltalake.DeltaTable(str(root)).to_pyarrow_table()["id"].to_pylist()) == expected
    info = t.history(1)[0]
    assert json.loads(info["operationParameters"]["zOrderBy"]) == ["x", "y"]
    commit = [json.loads(line) for line in (root / "_delta_log" / f"{r.version:020}.json").read_text().splitlines()]
    assert all(a["add"]["dataChange"] is False for a in commit if "add" in a)
    assert all(a["remove"]["dataChange"] is False for a in commit if "remove" in a)


def test_zorder_on_a_partitioned_table_with_deletion_vectors(tmp_path):
    root = tmp_path / "t"
    t = docc.Table.create(str(root), SCHEMA, partition_by=["p"], properties={"delta.enableDeletionVectors": "true"})
    rows = grid()
    for k in range(4):
        chunk = rows[k * 500 : (k + 1) * 500]
        for r_ in chunk:
            r_["p"] = "a" if k < 3 else "b"
        t.append(pa.Table.from_pylist(chunk, schema=SCHEMA))
    t.delete("x = 5")  # deletion vectors
    model = sorted(r_["id"] for r_ in rows[:2000] if r_["x"] != 5)
    r = t.optimize(zorder_by=["y"])
    # partition a (3 files) is rewritten; b's single file has a DV, so it is rewritten too
    assert r.committed
    snap = t.snapshot()
    assert not any(f["deletion_vector"] for f in snap.files().to_pylist())
    assert sorted(kernel_rows(t)["id"].to_pylist()) == model
    assert len({tuple(f["partition_values"]) for f in snap.files().to_pylist()}) == 2


@pytest.mark.parametrize(
    "zorder_by, match",
    [
        (["p"], "partition column"),
        (["nope"], "no column"),
        ([], "non-empty"),
        ("x", "non-empty"),
        (["x", "X"], "twice"),
    ],
)
def test_zorder_refusals(tmp_path, zorder_by, match):
    t = build(tmp_path / "t", partitioned=True)
    before = t.version
    with pytest.raises(exc.InvalidArgumentError, match=match):
        t.optimize(zorder_by=zorder_by)
    assert t.refresh() == before


@pytest.mark.parametrize("column", ["l", "st", "m"])
def test_zorder_refuses_nested_columns(tmp_path, column):
    """The guide ("Z-order and liquid clustering"): struct, array and map columns are refused
    (an array column was once Z-ordered and committed), nothing committed."""
    schema = pa.schema([("id", pa.int64()), ("l", pa.list_(pa.int64())), ("st", pa.struct([("a", pa.int64())])),
                        ("m", pa.map_(pa.string(), pa.int64()))])
    t = docc.Table.create(tmp_path / "t", schema)
    t.append(pa.table({"id": [1], "l": [[1]], "st": [{"a": 1}], "m": [[("k", 1)]]}, schema=schema))
    with pytest.raises(exc.InvalidArgumentError, match=f"zorder_by: '{column}' is a .* column"):
        t.optimize(zorder_by=[column])
    assert t.refresh() == 1


def test_dml_racing_a_zorder_conflicts_at_file_level(tmp_path):
    """The rewritten files carry no row provenance (their rows come from many inputs), so a
    DELETE that read files the Z-order removed fails as concurrency.md §3 check 6 says."""
    root = tmp_path / "t"
    t = build(root)
    txn = docc.Table(str(root)).begin()
    txn.delete("id = 5")
    t.optimize(zorder_by=["x"])
    with pytest.raises(exc.ConcurrentDeleteReadException):
        txn.commit()



DV_ONLY = {"delta.enableDeletionVectors": "true"}
ROW_TRACKING = {"delta.enableRowTracking": "true", **DV_ONLY}


def _three_files(path: pathlib.Path, properties: Dict[str, str]) -> docc.Table:
    t = docc.Table.create(str(path), pa.schema([("id", pa.int64()), ("x", pa.int64())]), properties=properties)
    for k in range(3):
        t.append(pa.table({"id": [3 * k, 3 * k + 1, 3 * k + 2], "x": [k, k, k]}))
    return t


@pytest.mark.parametrize("winner", ["bin-packing", "zorder"])
@pytest.mark.parametrize("properties", [{}, DV_ONLY, ROW_TRACKING], ids=["plain", "dvs", "row-tracking"])
def test_a_zorder_losing_to_another_compaction_drops_its_bin(tmp_path, winner, properties):
    """A Z-order records no provenance, but its bin is its partition: when another compaction
    replaced an input first, the bin is dropped (§4 rule 5, pass_bin_dropped) and nothing is
    committed twice (found by `stress --row-tracking`: rows duplicated). Without deletion
    vectors the file-level checks decide: §3 check 6, ConcurrentDeleteReadException."""
    t = _three_files(tmp_path / "t", properties)
    txn = docc.Table(str(tmp_path / "t")).begin()
    txn.optimize(zorder_by=["x"])
    if winner == "zorder":
        t.optimize(zorder_by=["id"])
    else:
        t.optimize()
    files = sorted(t.snapshot().files(["path"]).column("path").to_pylist())
    if not properties:
        with pytest.raises(exc.ConcurrentDeleteReadException):
            txn.commit()
    else:
        result = txn.commit()
        assert "pass_bin_dropped" in [r for c in result.checks for r in c["rules"]], result.checks
        assert sorted(t.snapshot().files(["path"]).column("path").to_pylist()) == files  # nothing rewritten again
    assert sorted(t.snapshot().to_pyarrow().column("id").to_pylist()) == list(range(9))


@pytest.mark.parametrize("dml,gone", [("id = 4", {4}), ("id >= 3 AND id < 6", {3, 4, 5})], ids=["dv", "whole-file"])
def test_a_zorder_losing_to_dml_carries_its_deletes_by_row_id(tmp_path, dml, gone):
    """On a row-tracking table the Z-order's outputs hold every row's id: the rows a concurrent
    DELETE removed are found there by id and stay deleted (§4 rule 5,
    pass_compaction_carries_deletes); the result is the serial model (DELETE, then Z-order).
    Without row tracking the same race conflicts (§4 rule 6: no provenance)."""
    for properties in (ROW_TRACKING, DV_ONLY):
        t = _three_files(tmp_path / str(len(properties)), properties)
        txn = docc.Table(t.path).begin()
        txn.optimize(zorder_by=["x"])
        t.delete(dml)
        if properties is DV_ONLY:
            with pytest.raises(exc.ConcurrentDeleteReadException):
                txn.commit()
            continue
        result = txn.commit()
        assert "pass_compaction_carries_deletes" in [r for c in result.checks for r in c["rules"]], result.checks
        assert sorted(t.snapshot().to_pyarrow().column("id").to_pylist()) == sorted(set(range(9)) - gone)
        assert sorted(kernel_rows(t).column("id").to_pylist()) == sorted(set(range(9)) - gone)
