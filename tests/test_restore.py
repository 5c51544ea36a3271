"""RESTORE (issue 31): ``Table.restore(version=|timestamp=)`` is one commit that makes the data
what it was at the target version, conflicting like any writer that read the whole table.

Expected rows: the target version's rows as delta-kernel-rs reads them (DV tables) or deltalake
(tables without DVs), read before the restore. Expected conflicts: concurrency.md §3 for a
whole-table read (a winner's data-changing adds → check 5, ConcurrentAppendException; a winner
that only removes → check 6, ConcurrentDeleteReadException). Metric names and values: delta-spark's
RESTORE metrics, counted by hand from the files each case writes."""

from __future__ import annotations

import datetime as dt
import json
import os
import pathlib
import time
from typing import Any, Dict, List

import pyarrow as pa
import pytest

import delta_occ as docc
from delta_occ import exceptions as exc

from helpers import kernel_rows

SCHEMA = pa.schema([("id", pa.int64())])


def ids_of(table: pa.Table) -> List[int]:
    return sorted(table["id"].to_pylist())


def deltalake_ids(root: pathlib.Path, version: int) -> List[int]:
    import deltalake

    return ids_of(deltalake.DeltaTable(str(root), version=version).to_pyarrow_table())


def last_commit_info(root: pathlib.Path) -> Dict[str, Any]:
    newest = max(n for n in os.listdir(root / "_delta_log") if n.endswith(".json"))
    for line in (root / "_delta_log" / newest).read_text().splitlines():
        a = json.loads(line)
        if "commitInfo" in a:
            return a["commitInfo"]
    raise AssertionError("no commitInfo")


def three_versions(root: pathlib.Path, **props: str) -> docc.Table:
    t = docc.Table.create(str(root), SCHEMA, properties=props)
    t.append(pa.table({"id": list(range(0, 10))}, schema=SCHEMA))  # v1: file A
    t.append(pa.table({"id": list(range(10, 20))}, schema=SCHEMA))  # v2: file B
    t.delete("id = 3")  # v3: A rewritten (or given a DV)
    return t


def test_restore_to_a_version(tmp_path):
    root = tmp_path / "t"
    t = three_versions(root)
    expected = deltalake_ids(root, 1)
    assert expected == list(range(10))
    r = t.restore(version=1)
    assert r.version == 4 and r.operation == "RESTORE"
    assert ids_of(t.snapshot().to_pyarrow()) == expected
    assert deltalake_ids(root, 4) == expected
    info = last_commit_info(root)
    assert info["operation"] == "RESTORE" and info["operationParameters"]["version"] == "1"  # parameters are JSON texts (protocol commitInfo)
    m = info["operationMetrics"]
    # now: A' (A without 3) and B; version 1: A. Remove A' and B, re-add A.
    assert (m["numRemovedFiles"], m["numRestoredFiles"], m["numOfFilesAfterRestore"]) == ("2", "1", "1")
    assert int(m["tableSizeAfterRestore"]) == sum(f["size"] for f in t.snapshot(1).files().to_pylist())
    # the re-added file is version 1's file, data change true
    (add,) = [json.loads(line)["add"] for line in (root / "_delta_log" / f"{4:020}.json").read_text().splitlines() if "add" in json.loads(line)]
    assert add["dataChange"] is True and add["path"] == t.snapshot(1).files().column("path")[0].as_py()


def test_restore_with_deletion_vectors(tmp_path):
    root = tmp_path / "t"
    t = three_versions(root, **{"delta.enableDeletionVectors": "true"})
    assert any(f["deletion_vector"] for f in t.snapshot().files().to_pylist())  # v3 wrote a DV
    t.delete("id >= 15")  # v4: B gets a DV
    t.restore(version=2)  # v5: A and B without DVs again
    assert ids_of(kernel_rows(t)) == list(range(20))
    assert ids_of(t.snapshot().to_pyarrow()) == list(range(20))
    t.restore(version=3)  # v6: back to A with its DV (file re-added with the old DV), B plain
    expected = [i for i in range(20) if i != 3]
    assert ids_of(kernel_rows(t)) == expected
    assert ids_of(t.snapshot().to_pyarrow()) == expected
    m = last_commit_info(root)["operationMetrics"]
    assert (m["numRemovedFiles"], m["numRestoredFiles"]) == ("1", "1")  # A swapped for A+DV


def test_restore_by_timestamp_and_to_the_current_state(tmp_path):
    root = tmp_path / "t"
    t = three_versions(root)
    for v in range(4):
        when = (dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(minutes=v)).timestamp()
        os.utime(root / "_delta_log" / f"{v:020}.json", (when, when))
    t.restore(timestamp="2026-01-01T00:02:30Z")  # version 2 (committed 00:02)
    assert ids_of(t.snapshot().to_pyarrow()) == deltalake_ids(root, 2) == list(range(20))
    before = t.version
    r = t.restore(version=t.version)  # already there: nothing to write
    assert not r.committed and t.refresh() == before


def test_restore_brings_back_the_schema_but_not_identity_values(tmp_path):
    root = tmp_path / "t"
    t = docc.Table.create(str(root), SCHEMA)
    t.append(pa.table({"id": [1]}, schema=SCHEMA))  # v1
    wide = pa.schema([("id", pa.int64()), ("extra", pa.string())])
    t.append(pa.table({"id": [2], "extra": ["x"]}, schema=wide), schema_mode="merge")  # v2
    t.restore(version=1)
    assert t.snapshot().schema.names == ["id"]
    assert ids_of(t.snapshot().to_pyarrow()) == [1]

    ident = pa.schema([pa.field("k", pa.int64(), metadata={"delta.identity.start": "1", "delta.identity.step": "1"}), ("v", pa.string())])
    u = docc.Table.create(str(tmp_path / "u"), ident)
    u.append(pa.table({"v": ["a", "b", "c"]}))  # k = 1, 2, 3
    u.restore(version=0)
    u.append(pa.table({"v": ["d"]}))
    # the high-water mark (3) survived the restore: 4, never 1 again
    assert u.snapshot().to_pyarrow().to_pylist() == [{"k": 4, "v": "d"}]


def test_vacuumed_target_is_a_typed_error(tmp_path):
    root = tmp_path / "t"
    t = three_versions(root)
    # A window of 0 deletes tombstones older than now: one stamped in this very millisecond stays
    # (it happened, on a fast run), so let a few pass first.
    time.sleep(0.01)
    t.vacuum(retention_hours=0, enforce_retention_duration=False)  # deletes version 1's file A
    before = t.version
    with pytest.raises(exc.VersionNotFoundError, match="no longer exists"):
        t.restore(version=1)
    assert t.refresh() == before  # nothing committed


@pytest.mark.parametrize(
    "winner, expected",
    [
        ("id = 15", exc.ConcurrentAppendException),  # rewrites B: data-changing adds (check 5)
        ("id >= 10", exc.ConcurrentDeleteReadException),  # removes all of B, adds nothing (check 6)
    ],
)
def test_restore_racing_a_delete(tmp_path, winner, expected):
    root = tmp_path / "t"
    t = three_versions(root)
    target = t.snapshot(1)
    txn = t.begin()
    txn.restore(target)
    docc.Table(str(root)).delete(winner)
    with pytest.raises(expected):
        txn.commit("RESTORE", {"version": 1})
    assert ids_of(t.newest_snapshot().to_pyarrow()) == deltalake_ids(root, 4)  # only the DELETE landed


def test_restore_arguments(tmp_path):
    t = three_versions(tmp_path / "t")
    with pytest.raises(exc.InvalidArgumentError):
        t.restore()
    with pytest.raises(exc.InvalidArgumentError):
        t.restore(version=1, timestamp="2026-01-01")
    with pytest.raises(exc.VersionNotFoundError):
        t.restore(version=99)


def test_append_only_binds_the_table_restore_finds(tmp_path):
    """delta.appendOnly is the current table's rule: restoring a version from before it was set
    must not remove data (nor lift the rule on the way)."""
    root = tmp_path / "t"
    t = docc.Table.create(str(root), SCHEMA)
    t.append(pa.table({"id": [1]}, schema=SCHEMA))  # v1
    t.set_properties({"delta.appendOnly": "true"})  # v2
    t.append(pa.table({"id": [2]}, schema=SCHEMA))  # v3
    with pytest.raises(exc.InvalidArgumentError, match="append-only"):
        t.restore(version=1)
    assert t.refresh() == 3 and t.snapshot().properties["delta.appendOnly"] == "true"


def test_restore_puts_back_the_clustering(tmp_path):
    root = tmp_path / "t"
    t = docc.Table.create(str(root), SCHEMA)
    t.append(pa.table({"id": [1]}, schema=SCHEMA))  # v1
    t.set_clustering(["id"])  # v2
    t.restore(version=1)
    assert not t.snapshot().clustering_columns  # the domain is removed again
    t.restore(version=2)
    assert t.snapshot().clustering_columns == ["id"]


def test_a_file_vacuumed_while_restore_commits_is_not_referenced(tmp_path):
    """The commit re-checks the adds older than the VACUUM window (a RESTORE's), so a VACUUM
    that deletes one between staging and commit fails the RESTORE instead of leaving a
    reference to a missing file."""
    import pyarrow.parquet as pq

    root = tmp_path / "t"
    t = docc.Table.create(str(root), SCHEMA)
    pq.write_table(pa.table({"id": [1, 2]}, schema=SCHEMA), root / "old.parquet")
    ten_days_ms = int((time.time() - 10 * 86400) * 1000)
    txn = t.begin()
    txn.add_file("old.parquet", size=(root / "old.parquet").stat().st_size, stats={"numRecords": 2}, modification_time=ten_days_ms)
    txn.commit()  # v1: a file the log says is ten days old (older than the 7-day window)
    t.delete("id > 0")  # v2: removed
    txn = t.begin()
    txn.restore(t.snapshot(1))
    (root / "old.parquet").unlink()  # what a VACUUM would do meanwhile
    with pytest.raises(exc.DeltaIOError, match="no longer exists"):
        txn.commit("RESTORE", {"version": 1})
    assert t.refresh() == 2
