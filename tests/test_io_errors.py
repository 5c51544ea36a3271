"""Permanent I/O errors when publishing a commit (issue 16): a permission problem, a read-only or
a full file system fails the operation at once with DeltaIOError (no back-off and retry until
CommitRetriesExceededError), leaves no file of the attempt behind (data files the engine wrote,
DV files the commit wrote), and the table stays as it was. A transient error is still retried.
Errors are injected with DELTA_OCC_FAULTS=publish_error=... (running as root, file modes would
not stop the writes)."""

from __future__ import annotations

import pathlib

import pyarrow as pa
import pytest

import delta_occ as docc
from delta_occ import exceptions as exc

DV = {"delta.enableDeletionVectors": "true"}
SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.int64())])


def files_under(root) -> set:
    return {str(p.relative_to(root)) for p in pathlib.Path(root).rglob("*") if p.is_file()}


@pytest.fixture
def table(tmp_path):
    t = docc.Table.create(tmp_path / "t", SCHEMA, properties=DV)
    for k in range(3):
        t.append(pa.table({"id": list(range(k * 10, k * 10 + 10)), "p": [k] * 10}, schema=SCHEMA))
    return t


OPERATIONS = [
    ("append", lambda t: t.append(pa.table({"id": [100], "p": [9]}, schema=SCHEMA))),
    ("delete-dv", lambda t: t.delete("id IN (1, 2)")),
    ("update", lambda t: t.update("id = 3", {"p": "p + 1"})),
    ("merge", lambda t: t.merge(pa.table({"id": [4, 200], "p": [7, 7]}, schema=SCHEMA), "t.id = s.id",
                                when_matched_update={"p": "s.p"}, when_not_matched_insert=True)),
    ("optimize", lambda t: t.optimize()),
]


@pytest.mark.test_hooks
@pytest.mark.parametrize("fault", ["eacces", "erofs", "enospc"])
@pytest.mark.parametrize("name,op", OPERATIONS, ids=[o[0] for o in OPERATIONS])
def test_permanent_publish_error_fails_at_once_and_cleans_up(table, monkeypatch, fault, name, op):
    root = table.path
    before_files = files_under(root)
    before_rows = sorted(table.snapshot().to_pyarrow().column("id").to_pylist())
    version = table.version
    monkeypatch.setenv("DELTA_OCC_FAULTS", f"publish_error={fault}")
    with pytest.raises(exc.DeltaIOError) as info:
        op(table)
    assert not isinstance(info.value, exc.CommitRetriesExceededError)
    assert "injected fault" in str(info.value) and "_delta_log" in str(info.value)
    monkeypatch.delenv("DELTA_OCC_FAULTS")
    assert files_under(root) == before_files, "the failed attempt left files behind"
    fresh = docc.Table(root)
    assert fresh.version == version
    assert sorted(fresh.snapshot().to_pyarrow().column("id").to_pylist()) == before_rows


@pytest.mark.test_hooks
def test_transient_publish_error_is_retried(table, monkeypatch):
    before_files = files_under(table.path)
    monkeypatch.setenv("DELTA_OCC_FAULTS", "publish_error=eio")
    with pytest.raises(exc.CommitRetriesExceededError):
        table.delete("id = 5", max_attempts=3)
    monkeypatch.delenv("DELTA_OCC_FAULTS")
    assert files_under(table.path) == before_files


def test_aborted_transaction_removes_the_engines_files(table):
    before_files = files_under(table.path)
    txn = table.begin()
    txn.append(pa.table({"id": [1000], "p": [1]}, schema=SCHEMA))
    assert files_under(table.path) != before_files  # the engine wrote a data file
    txn.abort()
    assert files_under(table.path) == before_files


def test_rebased_dv_commit_leaves_no_orphan_dv_file(table):
    """Row-level rebase rewrites the DV: the first attempt's DV file must not stay behind."""
    a = table.begin()
    a.delete("id = 1")
    table.delete("id = 2")  # the winner: same file, another row
    r = a.commit()
    assert r.rebased_over and r.attempts == 2
    t = docc.Table(table.path)
    referenced = set()  # every DV any version of the log points at
    for v in range(t.version + 1):
        for f in t.snapshot(v).files().to_pylist():
            if f["deletion_vector"]:
                referenced.add(f["deletion_vector"]["path_or_inline_dv"])
    on_disk = [p for p in files_under(table.path) if p.startswith("deletion_vector_")]
    assert len(on_disk) == len(referenced) == 2  # the winner's DV and the rebased union


@pytest.mark.test_hooks
def test_ctrl_c_stops_a_commit_loop_that_backs_off(tmp_path):
    """SIGINT during the back-off between attempts stops the loop (issue 17): a KeyboardInterrupt
    that is also a DeltaOccError, raised within a back-off step instead of after max_attempts or
    the 120 s time budget, with nothing published and the engine's data file removed."""
    import subprocess
    import sys

    root = tmp_path / "t"
    docc.Table.create(root, SCHEMA)
    script = f"""
import os, signal, threading
import pyarrow as pa
import delta_occ as docc
from delta_occ import exceptions as exc
t = docc.Table({str(root)!r})
os.environ["DELTA_OCC_FAULTS"] = "publish_error=eio"
# Python's own Ctrl-C handler even when started from a shell's background job (SIGINT ignored)
signal.signal(signal.SIGINT, signal.default_int_handler)
# 2 s: the append must be in its loop by then even on a loaded machine
threading.Timer(2.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
try:
    t.append(pa.table({{"id": [1], "p": [1]}}), max_attempts=1000000)
except exc.CommitInterruptedError as e:
    print("interrupted", isinstance(e, KeyboardInterrupt), e.attempts > 1)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=90)
    assert out.stdout.strip() == "interrupted True True", out.stderr[-2000:]
    assert files_under(root) == {p for p in files_under(root) if p.startswith("_delta_log/")}, "the data file stayed"
    assert docc.Table(root).version == 0


@pytest.fixture
def full_disk(tmp_path):
    """A table on a 1 MiB tmpfs, then the file system filled up (a real ENOSPC, not an injected
    one). Needs permission to mount (root here); skipped with that reason otherwise."""
    import errno
    import os
    import subprocess

    mnt = tmp_path / "fs"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount a small tmpfs here (needs root); the injected enospc cases above still run")
    try:
        t = docc.Table.create(mnt / "t", SCHEMA, properties=DV)
        for k in range(3):
            t.append(pa.table({"id": list(range(k * 10, k * 10 + 10)), "p": [k] * 10}, schema=SCHEMA))
        fd = os.open(mnt / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            while True:
                os.write(fd, b"\0" * 4096)
        except OSError as e:
            assert e.errno == errno.ENOSPC
        finally:
            os.close(fd)
        yield t
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


FULL_DISK_OPERATIONS = OPERATIONS + [("set_properties", lambda t: t.set_properties({"delta.appendOnly": "false"}))]


@pytest.mark.parametrize("name,op", FULL_DISK_OPERATIONS, ids=[o[0] for o in FULL_DISK_OPERATIONS])
def test_a_full_disk_fails_at_once_typed_and_leaves_nothing(full_disk, name, op):
    """Issue 16 item 6 on a real full file system: DeltaIOError naming the file, no partial data,
    DV or commit file left, the table unchanged and readable."""
    root = full_disk.path
    before = files_under(root)
    version = full_disk.version
    with pytest.raises(exc.DeltaIOError) as info:
        op(full_disk)
    assert info.value.errno == 28 and str(root) in str(info.value), info.value
    assert not isinstance(info.value, exc.CommitRetriesExceededError)
    assert files_under(root) == before, "the failed attempt left files behind"
    fresh = docc.Table(root)
    assert fresh.version == version and fresh.snapshot().to_pyarrow().num_rows == 30
