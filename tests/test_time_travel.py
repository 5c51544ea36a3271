"""Time travel by timestamp (issue 31): ``Table.snapshot(timestamp=)`` / ``Table.version_at``.

The rule (protocol "In-Commit Timestamps", as delta-spark and deltalake apply it): the version at
an instant is the newest one committed at or before it; a commit's time is its
``commitInfo.inCommitTimestamp`` where in-commit timestamps are enabled, else its commit file's
modification time, raised to 1 ms after its predecessor's when clocks ran backwards. Expected
versions are worked out by hand from the times the tests set (file times) or read from the log
(in-commit timestamps); deltalake's ``load_as_version(datetime)`` is a second oracle for tables
without in-commit timestamps."""

from __future__ import annotations

import datetime as dt
import json
import os
import pathlib
from typing import List

import pyarrow as pa
import pytest

import delta_occ as docc
from delta_occ import exceptions as exc

SCHEMA = pa.schema([("id", pa.int64())])
BASE = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def at(seconds: float) -> dt.datetime:
    return BASE + dt.timedelta(seconds=seconds)


def set_commit_time(root: pathlib.Path, version: int, when: dt.datetime) -> None:
    ts = when.timestamp()
    os.utime(root / "_delta_log" / f"{version:020}.json", (ts, ts))


def build(root: pathlib.Path, appends: int, **props: str) -> docc.Table:
    t = docc.Table.create(str(root), SCHEMA, properties=props)
    for i in range(appends):
        t.append(pa.table({"id": [i]}, schema=SCHEMA))
    return t


def ict(root: pathlib.Path, version: int) -> int:
    for line in (root / "_delta_log" / f"{version:020}.json").read_text().splitlines():
        a = json.loads(line)
        if "commitInfo" in a:
            return int(a["commitInfo"]["inCommitTimestamp"])
    raise AssertionError(f"no commitInfo in version {version}")


def ids(snap: docc.Snapshot) -> List[int]:
    return sorted(snap.to_pyarrow()["id"].to_pylist())


def test_file_times_pick_the_newest_version_at_or_before(tmp_path):
    root = tmp_path / "t"
    t = build(root, 4)  # versions 0..4
    for v in range(5):
        set_commit_time(root, v, at(10 * v))  # version v committed at 10v seconds
    cases = [  # (instant, expected version): by hand from the times above
        (at(0), 0),
        (at(5), 0),
        (at(10), 1),
        (at(29.999), 2),
        (at(30), 3),
        (at(40), 4),
        (at(10_000), 4),  # after the latest commit: the latest version
    ]
    import deltalake

    for when, version in cases:
        assert t.version_at(when) == version, when
        assert ids(t.snapshot(timestamp=when)) == ids(t.snapshot(version))
        d = deltalake.DeltaTable(str(root))
        d.load_as_version(when)
        assert d.version() == version, when  # the oracle agrees
    with pytest.raises(exc.InvalidArgumentError, match="did not exist"):
        t.snapshot(timestamp=at(-1))


def test_file_times_running_backwards_are_made_increasing(tmp_path):
    root = tmp_path / "t"
    t = build(root, 3)
    for v, s in enumerate([0, 20, 10, 30]):  # version 2's file is older than version 1's
        set_commit_time(root, v, at(s))
    # version 2's time becomes 20 s + 1 ms (after version 1's): between 20 and 20.001 s it is 1
    assert t.version_at(at(15)) == 0
    assert t.version_at(at(20)) == 1
    assert t.version_at(at(20.001)) == 2
    assert t.version_at(at(29)) == 2
    assert t.version_at(at(30)) == 3


def test_in_commit_timestamps_decide_where_enabled(tmp_path):
    root = tmp_path / "t"
    t = build(root, 4, **{"delta.enableInCommitTimestamps": "true"})
    for v in range(5):
        set_commit_time(root, v, at(0))  # file times say nothing useful: all equal, long ago
    times = [ict(root, v) for v in range(5)]
    assert times == sorted(times) and len(set(times)) == 5
    for v, ms in enumerate(times):
        when = dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc)
        assert t.version_at(when) == v
        assert ids(t.snapshot(timestamp=when)) == ids(t.snapshot(version=v)) == list(range(v))
        before = dt.datetime.fromtimestamp((ms - 1) / 1000, dt.timezone.utc)
        if v == 0:
            with pytest.raises(exc.InvalidArgumentError):
                t.version_at(before)
        else:
            assert t.version_at(before) == v - 1
    # the same instant as an ISO text, with Z and as a naive (UTC) datetime
    iso = dt.datetime.fromtimestamp(times[2] / 1000, dt.timezone.utc)
    assert t.version_at(iso.isoformat().replace("+00:00", "Z")) == 2
    assert t.version_at(iso.replace(tzinfo=None)) == 2


def test_in_commit_timestamps_enabled_later(tmp_path):
    root = tmp_path / "t"
    t = build(root, 2)  # versions 0..2 without in-commit timestamps
    t.set_properties({"delta.enableInCommitTimestamps": "true"})  # version 3: enablement
    t.append(pa.table({"id": [9]}, schema=SCHEMA))  # version 4
    for v in range(3):
        set_commit_time(root, v, at(10 * v))
    e = t.snapshot().properties["delta.inCommitTimestampEnablementVersion"]
    assert e == "3"
    assert t.version_at(at(15)) == 1  # file times below the enablement version
    assert t.version_at(at(25)) == 2
    ict4 = dt.datetime.fromtimestamp(ict(root, 4) / 1000, dt.timezone.utc)
    assert t.version_at(ict4) == 4
    ict3 = dt.datetime.fromtimestamp(ict(root, 3) / 1000, dt.timezone.utc)
    assert t.version_at(ict3) == 3


def test_cleaned_up_versions_are_a_typed_error(tmp_path):
    root = tmp_path / "t"
    t = build(root, 12, **{"delta.checkpointInterval": "5", "delta.logRetentionDuration": "interval 1 hours"})
    for v in range(13):
        set_commit_time(root, v, dt.datetime.now(dt.timezone.utc) - dt.timedelta(hours=3) + dt.timedelta(seconds=v))
    for i in range(3):
        t.append(pa.table({"id": [100 + i]}, schema=SCHEMA))  # version 15 checkpoints and cleans up
    assert not (root / "_delta_log" / f"{0:020}.json").exists()
    oldest = min(int(n[:20]) for n in os.listdir(root / "_delta_log") if n.endswith(".json") and n[:20].isdigit())
    assert oldest == 10  # the boundary checkpoint's commit stays
    long_ago = dt.datetime.now(dt.timezone.utc) - dt.timedelta(hours=3) - dt.timedelta(seconds=1)
    with pytest.raises(exc.VersionNotFoundError, match="log cleanup"):
        t.version_at(long_ago)
    kept = dt.datetime.now(dt.timezone.utc) - dt.timedelta(hours=3) + dt.timedelta(seconds=11.5)
    assert t.version_at(kept) == 11


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"version": 1, "timestamp": "2026-01-01"}, "not both"),
        ({"timestamp": "yesterday"}, "ISO 8601"),
        ({"timestamp": 12345}, "datetime"),
    ],
)
def test_bad_arguments_are_refused(tmp_path, kwargs, error):
    t = build(tmp_path / "t", 1)
    with pytest.raises(exc.InvalidArgumentError, match=error):
        t.snapshot(**kwargs)
