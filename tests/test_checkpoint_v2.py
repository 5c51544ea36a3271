"""V2 checkpoints (issue 31): tables with the ``v2Checkpoint`` feature (``delta.checkpointPolicy=v2``)
get UUID-named V2 checkpoints whose adds and removes sit in ``_delta_log/_sidecars/``.

Expected rows come from a model kept by the test (what was appended and deleted); the readers
checked against it are delta-kernel-rs and delta-occ itself, each made to depend on the
checkpoint by deleting the JSON commits it covers from a copy of the table. (deltalake 1.6 is no
oracle here: it refuses every table with the ``v2Checkpoint`` reader feature.) File-name shapes are the protocol's (protocol-notes.md §1)."""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import threading
import time
from typing import List

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import delta_occ as docc
from delta_occ import exceptions as exc

SCHEMA = pa.schema([("id", pa.int64())])
UUID_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint\.[0-9a-f-]{36}\.parquet$")


def log(root: pathlib.Path) -> List[str]:
    return sorted(os.listdir(root / "_delta_log"))


def uuid_checkpoints(root: pathlib.Path) -> List[str]:
    return [n for n in log(root) if UUID_CHECKPOINT.match(n)]


def sidecars(root: pathlib.Path) -> List[str]:
    d = root / "_delta_log" / "_sidecars"
    return sorted(os.listdir(d)) if d.exists() else []


def only_checkpoint(root: pathlib.Path, scratch: pathlib.Path, version: int) -> pathlib.Path:
    """A copy of the table without the commits the checkpoint at ``version`` covers: a reader
    of it must use the checkpoint (and its sidecars)."""
    shutil.copytree(root, scratch)
    for name in log(scratch):
        if name.endswith(".json") and name[:20].isdigit() and int(name[:20]) <= version:
            (scratch / "_delta_log" / name).unlink()
    return scratch


def kernel_ids(root: pathlib.Path) -> List[int]:
    import delta_kernel_rust_sharing_wrapper as dk

    uri = root.resolve().as_uri() + "/"
    iface = dk.PythonInterface(uri)
    result = dk.ScanBuilder(dk.Table(uri).snapshot(iface)).build().execute(iface)
    table = result if isinstance(result, pa.Table) else pa.Table.from_batches(list(result))
    return sorted(table["id"].to_pylist())


def occ_ids(root: pathlib.Path) -> List[int]:
    return sorted(docc.Table(str(root)).snapshot().to_pyarrow()["id"].to_pylist())


def test_policy_v2_gives_the_feature_and_bad_policies_are_refused(tmp_path):
    t = docc.Table.create(str(tmp_path / "t"), SCHEMA, properties={"delta.checkpointPolicy": "v2"})
    p = t.snapshot().protocol
    # protocol: v2Checkpoint is a reader-writer feature (3/7, named in both lists)
    assert (p["min_reader_version"], p["min_writer_version"]) == (3, 7)
    assert "v2Checkpoint" in p["reader_features"] and "v2Checkpoint" in p["writer_features"]
    with pytest.raises(exc.InvalidArgumentError, match="checkpointPolicy"):
        docc.Table.create(str(tmp_path / "u"), SCHEMA, properties={"delta.checkpointPolicy": "v3"})
    assert not (tmp_path / "u" / "_delta_log").exists() or not log(tmp_path / "u")
    # classic stays the default: a plain table's checkpoint is the classic file
    c = docc.Table.create(str(tmp_path / "c"), SCHEMA, properties={"delta.checkpointInterval": "2"})
    for i in range(2):
        c.append(pa.table({"id": [i]}, schema=SCHEMA))
    assert f"{2:020}.checkpoint.parquet" in log(tmp_path / "c") and not sidecars(tmp_path / "c")


@pytest.mark.parametrize("dvs", [False, True], ids=["plain", "deletion-vectors"])
def test_v2_checkpoint_with_sidecars_reads_the_same_rows(tmp_path, dvs):
    root = tmp_path / "t"
    props = {"delta.checkpointPolicy": "v2", "delta.checkpointInterval": "4"}
    if dvs:
        props["delta.enableDeletionVectors"] = "true"
    t = docc.Table.create(str(root), SCHEMA, properties=props)
    model: List[int] = []
    for i in range(3):
        batch = list(range(i * 10, i * 10 + 10))
        t.append(pa.table({"id": batch}, schema=SCHEMA))
        model += batch
    t.delete("id % 3 = 0")  # version 4: a checkpoint (DVs or rewritten files, and removes)
    model = [x for x in model if x % 3 != 0]
    assert t.version == 4
    names = uuid_checkpoints(root)
    assert [n[:20] for n in names] == [f"{4:020}"], log(root)
    assert f"{4:020}.checkpoint.parquet" not in log(root)  # no V1 checkpoint beside it
    # the top-level file names its sidecars and holds exactly one checkpointMetadata
    top = pq.read_table(root / "_delta_log" / names[0])
    meta = [m for m in top.column("checkpointMetadata").to_pylist() if m]
    assert [m["version"] for m in meta] == [4]
    named = sorted(s["path"] for s in top.column("sidecar").to_pylist() if s)
    assert named and named == sidecars(root)
    assert all(a is None for a in top.column("add").to_pylist())
    side = pa.concat_tables(pq.read_table(root / "_delta_log" / "_sidecars" / n) for n in named)
    assert side.column_names == ["add", "remove"]
    live = [a for a in side.column("add").to_pylist() if a]
    assert len(live) == len(t.snapshot().files())
    assert json.loads((root / "_delta_log" / "_last_checkpoint").read_text())["version"] == 4

    cut = only_checkpoint(root, tmp_path / "cut", 4)
    assert kernel_ids(cut) == sorted(model)
    assert occ_ids(cut) == sorted(model)
    # writing on top of the checkpoint-only copy works, and the next checkpoint is V2 again
    c = docc.Table(str(cut))
    for i in range(4):
        c.append(pa.table({"id": [100 + i]}, schema=SCHEMA))
    assert [n[:20] for n in uuid_checkpoints(cut)] == [f"{4:020}", f"{8:020}"]
    assert kernel_ids(only_checkpoint(cut, tmp_path / "cut8", 8)) == sorted(model + [100, 101, 102, 103])


def test_set_policy_v2_upgrades_an_existing_table(tmp_path):
    root = tmp_path / "t"
    t = docc.Table.create(str(root), SCHEMA, properties={"delta.checkpointInterval": "3"})
    t.append(pa.table({"id": [1, 2]}, schema=SCHEMA))
    t.set_properties({"delta.checkpointPolicy": "v2"})  # version 2
    assert "v2Checkpoint" in t.snapshot().protocol["reader_features"]
    t.append(pa.table({"id": [3]}, schema=SCHEMA))  # version 3: checkpoint
    assert [n[:20] for n in uuid_checkpoints(root)] == [f"{3:020}"]
    assert kernel_ids(only_checkpoint(root, tmp_path / "cut", 3)) == [1, 2, 3]


def test_concurrent_writers_on_a_v2_table(tmp_path):
    """Four appenders racing with a checkpoint every second version: every checkpoint is V2 and
    complete (a copy without the commits it covers reads every row appended up to it)."""
    root = tmp_path / "t"
    docc.Table.create(str(root), SCHEMA, properties={"delta.checkpointPolicy": "v2", "delta.checkpointInterval": "2"})
    errors: List[BaseException] = []

    def writer(w: int) -> None:
        try:
            t = docc.Table(str(root))
            for i in range(6):
                t.append(pa.table({"id": [w * 100 + i]}, schema=SCHEMA))
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    everything = sorted(w * 100 + i for w in range(4) for i in range(6))
    assert kernel_ids(root) == everything
    newest = max(int(n[:20]) for n in uuid_checkpoints(root))
    assert newest == 24  # versions 1..24, one per append
    assert kernel_ids(only_checkpoint(root, tmp_path / "cut", newest)) == everything


def test_log_cleanup_deletes_only_old_unnamed_sidecars(tmp_path):
    """protocol-notes.md §4.4: unnamed sidecars go, but none younger than a day; sidecars a
    remaining checkpoint names stay whatever their age."""
    root = tmp_path / "t"
    t = docc.Table.create(
        str(root),
        SCHEMA,
        properties={"delta.checkpointPolicy": "v2", "delta.checkpointInterval": "2", "delta.logRetentionDuration": "interval 1 hours"},
    )
    for i in range(2):
        t.append(pa.table({"id": [i]}, schema=SCHEMA))
    (named,) = sidecars(root)  # the version-2 checkpoint's only sidecar
    d = root / "_delta_log" / "_sidecars"
    old_orphan, young_orphan = "orphan-old.parquet", "orphan-young.parquet"
    shutil.copy(d / named, d / old_orphan)
    shutil.copy(d / named, d / young_orphan)
    two_days = time.time() - 2 * 86400
    for n in (named, old_orphan):
        os.utime(d / n, (two_days, two_days))
    for i in range(2):
        t.append(pa.table({"id": [10 + i]}, schema=SCHEMA))  # version 4 checkpoints and cleans up
    left = sidecars(root)
    assert old_orphan not in left  # unnamed, two days old
    assert young_orphan in left  # unnamed but younger than a day
    assert named in left  # named by the (retained) version-2 checkpoint
    assert kernel_ids(only_checkpoint(root, tmp_path / "cut", 4)) == [0, 1, 10, 11]
