"""VACUUM (issue 31). What must stay comes from the Delta protocol ("a file may be deleted once no
version a reader may still ask for references it", tombstones carrying ``deletionTimestamp``) and
delta-spark's documented rules (the retention window, default one week, a shorter one refused
unless the check is disabled; files newer than the window kept because a writer may be about to
commit them). The oracles: the log itself, replayed here by a small independent model
(``live_files``, its own Z85 decoding of DV paths), and delta-kernel-rs reading each version in the
window from a copy of the log cut at that version."""

from __future__ import annotations

import json
import os
import pathlib
import threading
import time
import uuid
from typing import Any, Dict, List, Optional, Set

import pyarrow as pa
import pytest

import delta_occ as docc
from delta_occ import exceptions as exc

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])
DV = {"delta.enableDeletionVectors": "true"}

_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"


def z85_uuid(text: str) -> str:
    """The UUID a 20-character Z85 text encodes (Z85: 5 characters per 4 big-endian bytes)."""
    out = bytearray()
    for i in range(0, 20, 5):
        n = 0
        for c in text[i : i + 5]:
            n = n * 85 + _Z85.index(c)
        out += n.to_bytes(4, "big")
    return str(uuid.UUID(bytes=bytes(out)))


def actions(root: pathlib.Path, version: int) -> List[Dict[str, Any]]:
    return [json.loads(line) for line in (root / "_delta_log" / f"{version:020}.json").read_text().splitlines() if line]


def dv_file(dv: Optional[Dict[str, Any]]) -> Optional[str]:
    if not dv or dv["storageType"] != "u":
        return None
    s = dv["pathOrInlineDv"]
    prefix, enc = s[:-20], s[-20:]
    return (prefix + "/" if prefix else "") + f"deletion_vector_{z85_uuid(enc)}.bin"


def live_files(root: pathlib.Path, version: int) -> Set[str]:
    """Data and DV files (relative paths) that version ``version`` reads, replayed from the JSON
    commits (the tests never checkpoint: checkpointInterval is large)."""
    live: Dict[str, Optional[str]] = {}
    for v in range(version + 1):
        for a in actions(root, v):
            if "remove" in a:
                live.pop(a["remove"]["path"], None)
            if "add" in a:
                live[a["add"]["path"]] = dv_file(a["add"].get("deletionVector"))
    out = set(live)
    out |= {d for d in live.values() if d}
    return out


def live_sets(root: pathlib.Path, latest: int) -> Dict[int, Set[str]]:
    """``live_files`` of every version 0..latest, in one pass over the log."""
    live: Dict[str, Optional[str]] = {}
    out: Dict[int, Set[str]] = {}
    for v in range(latest + 1):
        for a in actions(root, v):
            if "remove" in a:
                live.pop(a["remove"]["path"], None)
            if "add" in a:
                live[a["add"]["path"]] = dv_file(a["add"].get("deletionVector"))
        out[v] = set(live) | {d for d in live.values() if d}
    return out


def kernel_rows_at(root: pathlib.Path, version: int, scratch: pathlib.Path) -> List[Any]:
    """delta-kernel-rs reading ``version``: a table directory whose log holds the commits up to
    it and whose data entries are symlinks to the real table's (a deleted file is a broken link)."""
    import delta_kernel_rust_sharing_wrapper as dk

    cut = scratch / f"v{version}"
    (cut / "_delta_log").mkdir(parents=True)
    for v in range(version + 1):
        name = f"{v:020}.json"
        (cut / "_delta_log" / name).write_bytes((root / "_delta_log" / name).read_bytes())
    for entry in root.iterdir():
        if entry.name != "_delta_log":
            (cut / entry.name).symlink_to(entry)
    uri = cut.resolve().as_uri() + "/"
    iface = dk.PythonInterface(uri)
    result = dk.ScanBuilder(dk.Table(uri).snapshot(iface)).build().execute(iface)
    table = result if isinstance(result, pa.Table) else pa.Table.from_batches(list(result))
    return sorted(table["id"].to_pylist())


def data_files(root: pathlib.Path) -> Set[str]:
    """Every file under the table but the log, relative."""
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and not str(p.relative_to(root)).startswith("_delta_log")}


def age(root: pathlib.Path, seconds: float) -> None:
    """Make every data file look ``seconds`` old (as if written that long ago)."""
    t = time.time() - seconds
    for rel in data_files(root):
        os.utime(root / rel, (t, t))


def make(tmp_path, props: Optional[Dict[str, str]] = None, partitioned: bool = False) -> docc.Table:
    return docc.Table.create(
        str(tmp_path / "t"), SCHEMA, partition_by=["p"] if partitioned else [],
        properties={"delta.checkpointInterval": "1000", **DV, **(props or {})},
    )


def ids(n0: int, n: int, p: str = "a") -> pa.Table:
    return pa.table({"id": list(range(n0, n0 + n)), "p": [p] * n}, schema=SCHEMA)


# -- what stays, what goes ---------------------------------------------------------------------


@pytest.mark.parametrize("partitioned", [False, True], ids=["flat", "partitioned"])
def test_every_version_inside_the_window_still_reads_and_nothing_outside_remains(tmp_path, partitioned):
    t = make(tmp_path, partitioned=partitioned)
    root = pathlib.Path(t.path)
    # phase 1: files written, deleted from, rewritten and compacted: all of it then ages
    t.append(ids(0, 10, "a"))
    t.append(ids(10, 10, "b"))
    t.delete("id < 3")                 # a DV
    t.delete("id >= 3 AND id < 5")     # a second DV replaces the first (its file is dropped)
    t.optimize()                       # rewrites: the old data and DV files become tombstones
    t.append(ids(20, 5, "a"))
    v_mid = t.version
    age(root, 3600)
    time.sleep(0.05)
    mid = time.time()
    time.sleep(0.05)
    # phase 2, inside the window: its removals keep their files
    t.delete("id = 20")
    t.update("id = 21", {"id": "121"})
    t.optimize()
    t.append(ids(30, 3, "b"))
    latest = t.version
    expected = {v: kernel_rows_at(root, v, tmp_path / "before") for v in range(v_mid, latest + 1)}
    retention_hours = (time.time() - mid) / 3600
    before = data_files(root)

    dry = t.vacuum(retention_hours, dry_run=True, enforce_retention_duration=False)
    assert data_files(root) == before, "a dry run deletes nothing"
    real = t.vacuum(retention_hours, enforce_retention_duration=False)
    assert real.paths == dry.paths and real.bytes == dry.bytes == sum(n for _, n in real.files)
    assert dry.dry_run and not real.dry_run
    after = data_files(root)
    assert after == before - set(real.paths)
    # what the window needs (the model): every file a version from v_mid on reads
    needed = set().union(*(live_files(root, v) for v in range(v_mid, latest + 1)))
    assert needed <= after, sorted(needed - after)
    # what phase 1 alone read is gone: data files compacted away and superseded DV files
    old_only = set().union(*(live_files(root, v) for v in range(1, v_mid))) - needed
    assert old_only and old_only.isdisjoint(after), sorted(old_only & after)
    assert set(real.paths) == old_only
    assert real.kept_referenced == len(needed)
    for v in range(v_mid, latest + 1):
        assert kernel_rows_at(root, v, tmp_path / "after") == expected[v], v
    # an older version lost files (a typed error from our reader, not a wrong answer)
    with pytest.raises(exc.CorruptLogError, match="does not exist"):
        t.snapshot(v_mid - 2).to_pyarrow()
    # the same window again (its start, ``mid``, fixed): nothing more to delete
    again = t.vacuum((time.time() - mid) / 3600, enforce_retention_duration=False)
    assert again.files == [], "a second VACUUM over the same window finds nothing more"


def test_a_shorter_retention_than_the_tables_is_refused(tmp_path):
    t = make(tmp_path)
    t.append(ids(0, 3))
    with pytest.raises(exc.InvalidArgumentError, match="enforce_retention_duration"):
        t.vacuum(retention_hours=1)
    assert t.vacuum().retention_hours == 168  # delta.deletedFileRetentionDuration's default, one week
    t.set_properties({"delta.deletedFileRetentionDuration": "interval 1 hours"})
    assert t.vacuum(retention_hours=1).retention_hours == 1
    with pytest.raises(exc.InvalidArgumentError, match="retention_hours"):
        t.vacuum(retention_hours=-1)
    with pytest.raises(exc.InvalidArgumentError, match="interval"):
        t.set_properties({"delta.deletedFileRetentionDuration": "a while"})


def test_unreferenced_files_go_only_once_older_than_the_window(tmp_path):
    """An unreferenced file newer than the cutoff may be a writer's about to commit: kept."""
    t = make(tmp_path, {"delta.deletedFileRetentionDuration": "interval 1 hours"})
    t.append(ids(0, 3))
    root = pathlib.Path(t.path)
    stale, fresh = root / "part-stale.parquet", root / "part-fresh.parquet"
    stale.write_bytes(b"x" * 10)
    fresh.write_bytes(b"y" * 7)
    old = time.time() - 2 * 3600
    os.utime(stale, (old, old))
    r = t.vacuum(retention_hours=1)
    assert r.files == [("part-stale.parquet", 10)] and r.kept_recent == 1 and r.kept_referenced == 1
    assert fresh.exists() and not stale.exists()


def test_a_writer_in_flight_keeps_its_files_and_commits(tmp_path):
    t = make(tmp_path, {"delta.deletedFileRetentionDuration": "interval 1 hours"})
    t.append(ids(0, 3))
    age(pathlib.Path(t.path), 7200)
    with t.begin() as txn:
        txn.append(ids(3, 2))           # written, not committed
        r = t.vacuum(retention_hours=1)
        assert r.files == [] and r.kept_recent == 1
    assert sorted(t.snapshot().to_pyarrow()["id"].to_pylist()) == [0, 1, 2, 3, 4]


def test_a_transaction_older_than_the_window_does_not_commit_a_vacuumed_file(tmp_path):
    """The one way VACUUM can take a writer's file: the writer stays open longer than the window
    (delta-spark's documented hazard). The commit then checks its files and fails typed, with
    nothing committed, instead of referencing a missing file."""
    t = make(tmp_path, {"delta.deletedFileRetentionDuration": "interval 1 seconds"})
    t.append(ids(0, 3))
    txn = t.begin()
    txn.append(ids(3, 2))
    time.sleep(1.2)
    age(pathlib.Path(t.path), 60)       # the written file now looks old and is unreferenced
    assert len(t.vacuum().files) == 1
    with pytest.raises(exc.DeltaIOError, match="no longer exists"):
        txn.commit()
    assert t.refresh() == 1 and sorted(t.snapshot().to_pyarrow()["id"].to_pylist()) == [0, 1, 2]
    # an old transaction whose files survived commits
    txn = t.begin()
    txn.append(ids(5, 1))
    time.sleep(1.2)
    txn.commit()
    assert sorted(t.snapshot().to_pyarrow()["id"].to_pylist()) == [0, 1, 2, 5]


def test_the_log_and_hidden_files_are_left_alone_but_companions_go(tmp_path):
    """Hidden entries (``_``/``.``) are other tools' (a Spark job's ``_temporary``); a checksum
    companion of a deleted file (Hadoop's ``.name.crc``) and the ``_SUCCESS`` marker of a directory
    emptied here go with them."""
    t = make(tmp_path, {"delta.deletedFileRetentionDuration": "interval 1 hours"})
    t.append(ids(0, 3))
    root = pathlib.Path(t.path)
    made = {
        "orphan.parquet": True, ".orphan.parquet.crc": True,
        "spark-0a/part-0.parquet": True, "spark-0a/.part-0.parquet.crc": True, "spark-0a/_SUCCESS": True,
        "_temporary/0/part-9.parquet": False, ".hidden": False, "_SUCCESS": False, "keep/_SUCCESS": False,
        "keep/.x.crc": False,
    }
    for rel in made:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(b"z")
    live = next(iter(live_files(root, t.version)))
    os.makedirs(root / "keep", exist_ok=True)
    (root / "keep" / "part-live.parquet").write_bytes(b"z")  # fresh: keeps its directory's marker
    age(root, 7200)
    os.utime(root / "keep" / "part-live.parquet")
    log_before = sorted(os.listdir(root / "_delta_log"))
    r = t.vacuum(retention_hours=1)
    assert set(r.paths) == {rel for rel, goes in made.items() if goes}
    assert sorted(os.listdir(root / "_delta_log")) == log_before
    assert (root / live).exists()
    for rel, goes in made.items():
        assert (root / rel).exists() != goes, rel


def test_unknown_writer_features_refuse_vacuum(tmp_path):
    root = tmp_path / "t"
    (root / "_delta_log").mkdir(parents=True)
    meta = {"id": "x", "format": {"provider": "parquet", "options": {}}, "partitionColumns": [], "configuration": {},
            "schemaString": json.dumps({"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]})}
    lines = [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["someFutureFeature"]}}, {"metaData": meta}]
    (root / "_delta_log" / f"{0:020}.json").write_text("\n".join(json.dumps(a) for a in lines) + "\n")
    (root / "orphan.parquet").write_bytes(b"z")
    with pytest.raises(exc.UnsupportedFeatureError, match="someFutureFeature"):
        docc.Table(str(root)).vacuum(retention_hours=0, enforce_retention_duration=False)
    assert (root / "orphan.parquet").exists()


def test_files_of_another_store_are_skipped_not_an_error(tmp_path):
    """A shallow clone's adds point into another bucket: never listed here, so never deleted,
    and no reason to refuse the VACUUM."""
    t = make(tmp_path, {"delta.deletedFileRetentionDuration": "interval 1 hours"})
    t.append(ids(0, 3))
    root = pathlib.Path(t.path)
    add = {"add": {"path": "s3://another-bucket/t/part-0.parquet", "partitionValues": {}, "size": 10,
                   "modificationTime": 0, "dataChange": True}}
    (root / "_delta_log" / f"{2:020}.json").write_text(json.dumps(add) + "\n")
    (root / "orphan.parquet").write_bytes(b"z")
    age(root, 7200)
    r = docc.Table(t.path).vacuum(retention_hours=1)
    assert r.paths == ["orphan.parquet"] and r.kept_referenced == 1


def test_cli_vacuum_dry_run(tmp_path, capsys):
    from delta_occ.cli import main

    t = make(tmp_path, {"delta.deletedFileRetentionDuration": "interval 1 hours"})
    t.append(ids(0, 3))
    t.optimize()
    t.append(ids(3, 3))
    t.delete("id < 3")
    (pathlib.Path(t.path) / "orphan.parquet").write_bytes(b"12345")
    age(pathlib.Path(t.path), 7200)
    assert main(["vacuum", t.path, "--retention-hours", "1", "--dry-run", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["dry_run"] is True and ["orphan.parquet", 5] in out["files"]
    assert (pathlib.Path(t.path) / "orphan.parquet").exists()
    # a window shorter than the table's: refused, nothing deleted
    assert main(["vacuum", t.path, "--retention-hours", "0.5"]) != 0
    assert "enforce" in capsys.readouterr().err
    assert (pathlib.Path(t.path) / "orphan.parquet").exists()
    assert main(["vacuum", t.path, "--retention-hours", "1"]) == 0
    assert not (pathlib.Path(t.path) / "orphan.parquet").exists()


# -- VACUUM racing writers (issue 31, "What it must show" 1) -----------------------------------


def test_vacuum_while_four_writers_run_dml_and_optimize(tmp_path):
    """4 writer threads (appends, DV deletes, updates, OPTIMIZE) for ~7 s while VACUUM runs every
    0.5 s with a 3 s window (the table's retention, so no check is disabled). Afterwards every
    version inside the last VACUUM's window reads in full (delta-kernel-rs, compared with our
    reader), no commit references a missing file, and VACUUM did delete files. A writer whose
    operation outlived the window (possible on a loaded machine) may fail typed instead of
    committing; no other error is allowed."""
    t = make(tmp_path, {"delta.deletedFileRetentionDuration": "interval 3 seconds"})
    root = pathlib.Path(t.path)
    t.append(ids(0, 20))
    stop = time.monotonic() + 7
    errors: List[BaseException] = []
    outlived: List[str] = []
    deleted: List[str] = []
    lock = threading.Lock()

    def writer(w: int) -> None:
        table = docc.Table(t.path)
        n = 0
        try:
            while time.monotonic() < stop:
                n += 1
                base = 1000 * (w + 1) + 10 * n
                try:
                    if n % 4 == 1:
                        table.append(ids(base, 5))
                    elif n % 4 == 2:
                        table.delete(f"id = {base - 10 + 1}")
                    elif n % 4 == 3:
                        table.update(f"id = {base - 20 + 2}", {"p": "'u'"})
                    else:
                        table.optimize()
                except exc.DeltaConcurrentModificationException:
                    pass
                except (exc.DeltaIOError, exc.CorruptLogError) as e:
                    if "exist" not in str(e):
                        raise
                    with lock:
                        outlived.append(str(e))
        except BaseException as e:  # noqa: BLE001 - reported below
            with lock:
                errors.append(e)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for th in threads:
        th.start()
    last = None
    while time.monotonic() < stop:
        time.sleep(0.5)
        last = docc.Table(t.path).vacuum()
        deleted += last.paths
    for th in threads:
        th.join()
    assert not errors, errors
    assert last is not None and deleted, "VACUUM deleted nothing: the test did not test it"
    latest = docc.Table(t.path).refresh()
    # versions committed after the last VACUUM's cutoff (inside its window) all read in full
    first_in_window = next(
        v for v in range(latest + 1)
        if all(a["commitInfo"]["timestamp"] >= last.cutoff_ms for a in actions(root, v) if "commitInfo" in a)
    )
    window = list(range(max(first_in_window - 1, 0), latest + 1))
    present = data_files(root)
    for v, live in live_sets(root, latest).items():
        if v >= window[0]:
            assert live <= present, (v, sorted(live - present))
    # delta-kernel-rs and our reader on a sample of the window (each cut copies the log)
    sample = sorted({window[0], window[len(window) // 3], window[2 * len(window) // 3], latest})
    for v in sample:
        want = sorted(docc.Table(t.path).snapshot(v).to_pyarrow()["id"].to_pylist())
        assert kernel_rows_at(root, v, tmp_path / "cut") == want, v
    # the latest version reads in full: no commit references a file VACUUM took
    assert live_files(root, latest) <= data_files(root)
    assert len(outlived) < 20, outlived[:3]
