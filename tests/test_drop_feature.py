"""DROP FEATURE deletionVectors (issue 31), the protocol's steps: stop using the feature (property
off, files with deletion vectors rewritten), wait until the last version that used it is older
than ``delta.dropFeatureTruncateHistory.retentionDuration`` (default 24 hours, delta-spark's),
then downgrade the protocol in a commit that truncates the log before itself.

Expected rows: a model kept by the test, checked with delta-kernel-rs (and deltalake once the
table has no deletion vectors). Expected protocols: the feature removed from both lists, reader
version 1 when no reader feature is left (protocol-notes.md §2.2). Conflicts: concurrency.md §3
check 1 (a protocol change fails every concurrent writer)."""

from __future__ import annotations

import json
import os
import pathlib
import time
from typing import List

import pyarrow as pa
import pytest

import delta_occ as docc
from delta_occ import exceptions as exc

from helpers import kernel_rows

SCHEMA = pa.schema([("id", pa.int64())])
DV = {"delta.enableDeletionVectors": "true"}


def ids(table: pa.Table) -> List[int]:
    return sorted(table["id"].to_pylist())


def with_dvs(root: pathlib.Path, **props: str) -> docc.Table:
    t = docc.Table.create(str(root), SCHEMA, properties={**DV, **props})
    t.append(pa.table({"id": list(range(10))}, schema=SCHEMA))
    t.append(pa.table({"id": list(range(10, 20))}, schema=SCHEMA))
    t.delete("id % 4 = 0")  # deletion vectors on both files
    assert sum(1 for f in t.snapshot().files().to_pylist() if f["deletion_vector"]) == 2
    return t


MODEL = [i for i in range(20) if i % 4 != 0]


def age_log(root: pathlib.Path, seconds: float) -> None:
    when = time.time() - seconds
    for name in os.listdir(root / "_delta_log"):
        if name.endswith(".json"):
            os.utime(root / "_delta_log" / name, (when, when))


def dv_in_commit(root: pathlib.Path, version: int) -> bool:
    text = (root / "_delta_log" / f"{version:020}.json").read_text()
    return any((a.get("add") or a.get("remove") or {}).get("deletionVector") for a in map(json.loads, text.splitlines()))


def test_first_call_stops_using_the_feature_then_waits(tmp_path):
    root = tmp_path / "t"
    t = with_dvs(root)
    before = t.version
    with pytest.raises(exc.FeatureDropPendingError) as e:
        t.drop_feature("deletionVectors")
    # step 1 committed: property off, no live file has a deletion vector, same rows
    assert t.refresh() == before + 1
    snap = t.snapshot()
    assert snap.properties["delta.enableDeletionVectors"] == "false"
    assert not any(f["deletion_vector"] for f in snap.files().to_pylist())
    assert ids(kernel_rows(t)) == MODEL and ids(snap.to_pyarrow()) == MODEL
    assert "deletionVectors" in snap.protocol["reader_features"]
    # step 2: the purge commit itself removed files with deletion vectors: wait 24 h from it
    commit_ms = os.stat(root / "_delta_log" / f"{before + 1:020}.json").st_mtime * 1000
    assert e.value.ready_at_ms is not None and abs(e.value.ready_at_ms - (commit_ms + 86_400_000)) < 2000
    assert e.value.feature == "deletionVectors" and e.value.version == before + 1
    # again right away: the same wait, nothing committed
    with pytest.raises(exc.FeatureDropPendingError, match="run again after"):
        t.drop_feature("deletionVectors")
    assert t.refresh() == before + 1


def test_after_the_wait_the_protocol_is_downgraded_and_history_truncated(tmp_path):
    root = tmp_path / "t"
    t = with_dvs(root)
    with pytest.raises(exc.FeatureDropPendingError):
        t.drop_feature("deletionVectors")
    age_log(root, 2 * 86400)  # the wait is over
    r = t.drop_feature("deletionVectors")
    d = r.version
    p = t.snapshot().protocol
    assert (p["min_reader_version"], p["min_writer_version"]) == (1, 7)
    assert "deletionVectors" not in (p["writer_features"] or [])
    log = sorted(os.listdir(root / "_delta_log"))
    assert f"{d:020}.checkpoint.parquet" in log
    assert not [n for n in log if n[:20].isdigit() and int(n[:20]) < d], log
    with pytest.raises(exc.VersionNotFoundError):
        t.snapshot(d - 1)
    assert ids(kernel_rows(t)) == MODEL
    import deltalake

    assert ids(deltalake.DeltaTable(str(root)).to_pyarrow_table()) == MODEL
    # later writes use no deletion vectors
    t.delete("id = 1")
    assert not dv_in_commit(root, t.version)
    assert ids(kernel_rows(t)) == [i for i in MODEL if i != 1]
    assert json.loads(last_line(root, d, "commitInfo"))["operation"] == "DROP FEATURE"


def last_line(root: pathlib.Path, version: int, key: str) -> str:
    for line in (root / "_delta_log" / f"{version:020}.json").read_text().splitlines():
        if key in json.loads(line):
            return json.dumps(json.loads(line)[key])
    raise AssertionError(f"no {key} in version {version}")


def test_zero_wait_drops_in_one_call(tmp_path):
    root = tmp_path / "t"
    t = with_dvs(root, **{"delta.dropFeatureTruncateHistory.retentionDuration": "interval 0 seconds"})
    r = t.drop_feature("deletionVectors")
    assert r.committed and "deletionVectors" not in (t.snapshot().protocol["writer_features"] or [])
    assert ids(kernel_rows(t)) == MODEL


def test_a_writer_racing_the_downgrade_conflicts(tmp_path):
    root = tmp_path / "t"
    t = with_dvs(root, **{"delta.dropFeatureTruncateHistory.retentionDuration": "interval 1 hours"})
    with pytest.raises(exc.FeatureDropPendingError):
        t.drop_feature("deletionVectors")  # step 1 commits; the hour has not passed
    age_log(root, 7200)
    writer = docc.Table(str(root)).begin()
    writer.append(pa.table({"id": [100]}, schema=SCHEMA))
    t.drop_feature("deletionVectors")
    with pytest.raises(exc.ProtocolChangedException):
        writer.commit()
    assert ids(kernel_rows(t)) == MODEL


@pytest.mark.parametrize(
    "props, feature, error",
    [
        ({}, "deletionVectors", exc.InvalidArgumentError),  # the table does not have it
        (DV, "columnMapping", exc.UnsupportedFeatureError),  # not one delta-occ drops
        (DV, "", exc.InvalidArgumentError),
    ],
)
def test_refusals(tmp_path, props, feature, error):
    t = docc.Table.create(str(tmp_path / "t"), SCHEMA, properties=props)
    before = t.version
    with pytest.raises(error):
        t.drop_feature(feature)
    assert t.refresh() == before
