"""Log cleanup (issue 31): after a checkpoint, log files older than ``delta.logRetentionDuration``
go, keeping the newest checkpoint at or before the version that was current when the window
began (the protocol's "Metadata Cleanup": every version inside the window stays reconstructable).
Expected file sets are worked out by hand per case from the commit times set here; the contents
of the retained versions are compared with what deltalake (the oracle for tables without DVs)
read before the cleanup."""

from __future__ import annotations

import os
import pathlib
import time
from typing import Dict, List

import pyarrow as pa
import pytest

import delta_occ as docc
from delta_occ import exceptions as exc

SCHEMA = pa.schema([("id", pa.int64())])


def log_names(t: docc.Table) -> List[str]:
    return sorted(os.listdir(pathlib.Path(t.path) / "_delta_log"))


def age_versions(t: docc.Table, upto: int, seconds: float) -> None:
    """Make the log files of versions 0..upto look ``seconds`` old."""
    when = time.time() - seconds
    for name in log_names(t):
        if name[:20].isdigit() and int(name[:20]) <= upto:
            os.utime(pathlib.Path(t.path) / "_delta_log" / name, (when, when))


def build(tmp_path, **props: str) -> docc.Table:
    t = docc.Table.create(str(tmp_path / "t"), SCHEMA, properties={"delta.checkpointInterval": "5", "delta.logRetentionDuration": "interval 1 hours", **props})
    for i in range(13):
        t.append(pa.table({"id": [i]}, schema=SCHEMA))
    return t  # versions 0..13, checkpoints at 5 and 10


def rows(path: str, version: int) -> List[int]:
    import deltalake

    return sorted(deltalake.DeltaTable(path, version=version).to_pyarrow_table()["id"].to_pylist())


def test_expired_commits_go_and_the_window_stays_readable(tmp_path):
    t = build(tmp_path)
    age_versions(t, 7, 7200)  # versions 0..7 committed two hours ago; 8.. inside the window
    for i in (13, 14):
        t.append(pa.table({"id": [i]}, schema=SCHEMA))  # version 15 checkpoints and cleans up
    assert t.version == 15
    before: Dict[int, List[int]] = {v: list(range(v)) for v in range(5, 16)}  # version v: ids 0..v-1, one per append
    names = log_names(t)
    # v* = 7 (newest commit before the window): the newest checkpoint at or before it is 5, so
    # versions 0..4 go and 5 (its checkpoint and commit) stays
    assert not [n for n in names if n[:20].isdigit() and int(n[:20]) < 5], names
    assert f"{5:020}.checkpoint.parquet" in names and f"{5:020}.json" in names
    assert all(f"{v:020}.json" in names for v in range(5, 16))
    for v in range(5, 16):
        assert rows(t.path, v) == before[v], v  # deltalake reads every retained version
        assert sorted(t.snapshot(v).to_pyarrow()["id"].to_pylist()) == before[v], v
    with pytest.raises(exc.DeltaOccError) as e:
        docc.Table(t.path).snapshot(4)
    assert isinstance(e.value, (exc.VersionNotFoundError, exc.CorruptLogError)), repr(e.value)


def test_nothing_goes_inside_the_window_or_when_disabled(tmp_path):
    t = build(tmp_path)
    names = log_names(t)
    t.append(pa.table({"id": [13]}, schema=SCHEMA))
    t.append(pa.table({"id": [14]}, schema=SCHEMA))  # version 15: a checkpoint, nothing expired
    assert set(names) <= set(log_names(t))
    off = build(tmp_path / "off", **{"delta.enableExpiredLogCleanup": "false"})
    age_versions(off, 13, 7200)
    names = log_names(off)
    off.append(pa.table({"id": [13]}, schema=SCHEMA))
    off.append(pa.table({"id": [14]}, schema=SCHEMA))
    assert set(names) <= set(log_names(off))


def test_a_reader_from_before_the_cleanup_fails_typed_or_reads_whole(tmp_path):
    t = build(tmp_path)
    old_reader = docc.Table(t.path)
    snap = old_reader.snapshot()  # version 13, replayed before the cleanup
    age_versions(t, 12, 7200)
    for i in (13, 14):
        t.append(pa.table({"id": [i]}, schema=SCHEMA))  # v* = 12 -> boundary checkpoint 10
    assert not [n for n in log_names(t) if n[:20].isdigit() and int(n[:20]) < 10]
    # the snapshot replayed before reads whole (its data files are untouched)
    assert sorted(snap.to_pyarrow()["id"].to_pylist()) == list(range(13))
    # asking the old handle for a cleaned version is a typed error, the latest still works
    with pytest.raises(exc.DeltaOccError):
        old_reader.snapshot(3).to_pyarrow()
    assert old_reader.refresh() == 15
    assert sorted(old_reader.snapshot().to_pyarrow()["id"].to_pylist()) == list(range(15))
