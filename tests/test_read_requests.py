"""Requests a read of a table's rows makes on S3 (issue 45), counted by the proxy in front of a Ceph
gateway (``tests/servers/faultproxy.py``, which logs each request's method, path and Range).

What a read of N data files must cost: O(N) GETs, and exactly this many: per file, one GET of
its last 512 KiB (the footer, and with it the object's size: a suffix range, so no HEAD; a file
no larger comes whole) and, for a file larger than that, one more GET of the column chunks the
read needs that the first did not hold (the chunks are merged into one range). No listing at all: the snapshot was loaded before
(its one listing, of ``_delta_log/``, is counted with the open). No byte of a data file is asked
for twice. The same holds for ``to_batches`` (streamed), a ``where`` read (only the files the
statistics leave) and a read of some columns (fewer bytes).

Where the expected numbers come from: the rows are the test's own; 64 KiB is the tail the core
fetches when it opens a remote data file (``DATA_FILE_TAIL`` in rust/core/src/data_file.rs), a
design constant; which files a ``where`` reads follows from their ``id`` ranges, which the test wrote."""

from __future__ import annotations

import json
import re
import uuid
from typing import Dict, List, Optional, Tuple

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import delta_occ as docc
from delta_occ import explain

from conftest import BUCKET

TAIL = 512 << 10
#: Rows of each file: files above 512 KiB (two GETs) and below it (one GET).
FILE_ROWS = [50_000, 10_000, 1_000, 50_000, 500]


def _rows(lo: int, n: int) -> pa.Table:
    ids = pc.add(pc.indices_nonzero(pa.repeat(True, n)).cast(pa.int64()), lo)
    # Values that do not compress away, so a 50,000-row file is well above 512 KiB.
    noise = pc.multiply(pc.power(ids.cast(pa.float64()), 1.7), 1.000001)
    return pa.table({"id": ids, "value": noise, "tag": pc.binary_join_element_wise("row-", ids.cast(pa.string()), "")})


@pytest.fixture(scope="module")
def table(s3_server) -> Tuple[str, Dict[str, str], List[Tuple[int, int]]]:
    """(uri, storage options, per file in table order its (first id, rows))."""
    uri = f"s3://{BUCKET}/read-requests-{uuid.uuid4().hex[:8]}"
    opts = s3_server.storage_options()
    # A checkpoint at version 3: the stats a ``where`` prunes with are then read again from the
    # checkpoint (from the bytes fetched at open: no request, not even a HEAD).
    t = docc.Table.create(uri, _rows(0, 1).schema, properties={"delta.checkpointInterval": "3"}, storage_options=opts)
    spans, lo = [], 0
    for n in FILE_ROWS:
        t.append(_rows(lo, n))
        spans.append((lo, n))
        lo += n
    return uri, opts, spans


def _span(range_header: Optional[str], size: int) -> Tuple[int, int]:
    """[start, end) of a GET's Range header ("bytes=-N" suffix or "bytes=A-B")."""
    assert range_header is not None, "a data file is read whole instead of by ranges"
    m = re.fullmatch(r"bytes=(\d*)-(\d*)", range_header)
    assert m, range_header
    if m.group(1) == "":
        return max(0, size - int(m.group(2))), size
    return int(m.group(1)), min(size, int(m.group(2)) + 1) if m.group(2) else size


READS = [
    # (name, the read returning its row count, the files it reads by index: None for all)
    ("to_pyarrow", lambda s: s.to_pyarrow().num_rows, None),
    ("to_batches", lambda s: sum(b.num_rows for b in s.to_batches(batch_size=700)), None),
    ("where", lambda s: s.to_pyarrow(where="id >= 60000 AND id < 61000").num_rows, [2]),
    ("where-big", lambda s: s.to_pyarrow(where="id >= 61000 AND id < 111000").num_rows, [3]),
    ("columns", lambda s: s.to_pyarrow(columns=["id"]).num_rows, None),
]


@pytest.mark.parametrize("name,read,only", READS, ids=[r[0] for r in READS])
def test_a_read_gets_each_needed_byte_once(s3_server, table, name, read, only):
    from servers.faultproxy import FaultProxy

    uri, opts, spans = table
    with FaultProxy(s3_server.endpoint) as proxy:
        via = dict(opts, AWS_ENDPOINT_URL=proxy.endpoint)
        snap = docc.Table(uri, storage_options=via).snapshot()
        opened = list(proxy.ranges)
        proxy.reset_counts()
        got = read(snap)
        requests = list(proxy.ranges)
    # In the order written (by first id, from the stats the writer recorded); asked after the read,
    # which is then the first to need the checkpoint's stats.
    files = sorted(snap.files(["path", "size", "stats"]).to_pylist(), key=lambda f: json.loads(f["stats"])["minValues"]["id"])
    # The open: one listing, of the log; the checkpoint is read.
    lists = [p for m, p, _ in opened if "list-type=2" in p]
    assert len(lists) == 1 and "_delta_log" in lists[0], opened
    assert any(p.endswith("00000000000000000003.checkpoint.parquet") for _, p, _ in opened), opened
    read_files = [files[i] for i in (only if only is not None else range(len(files)))]
    assert sum(1 for f in files if f["size"] > TAIL) == 2, files  # both kinds of file are read
    assert got == sum(n for lo, n in (spans[i] for i in (only if only is not None else range(len(spans))))), got
    # The read: GETs of data files only (no listing, no HEAD, no log object).
    assert {m for m, _, _ in requests} == {"GET"}, requests
    by_file: Dict[str, List[Tuple[int, int]]] = {f["path"]: [] for f in read_files}
    size = {f["path"]: f["size"] for f in read_files}
    for _, path, rng in requests:
        key = next((p for p in by_file if path.endswith("/" + p)), None)
        assert key is not None, f"{path}: not a file this read needs"
        by_file[key].append(_span(rng, size[key]))
    for path, got_spans in by_file.items():
        expected = 1 if size[path] <= TAIL else 2
        assert len(got_spans) == expected, (path, size[path], got_spans)
        ordered = sorted(got_spans)
        for (_, end), (start, _) in zip(ordered, ordered[1:]):
            assert end <= start, f"{path}: bytes asked for twice: {got_spans}"
        fetched = sum(e - s for s, e in got_spans)
        if name == "columns" and size[path] > TAIL:
            assert fetched < size[path] - 4, (path, size[path], got_spans)  # not the other columns
    assert sum(len(v) for v in by_file.values()) == sum(1 if size[p] <= TAIL else 2 for p in by_file)


# ---------------------------------------------------------------------------------------------
# Readers of a range of commits (timeline, change feed, explain): one GET per commit file and no
# HEAD, the GETs of a range sent concurrently. Expected numbers: the commits the test made.

COMMITS = 40


@pytest.fixture(scope="module")
def many_commits(s3_server) -> Tuple[str, Dict[str, str]]:
    uri = f"s3://{BUCKET}/commit-range-{uuid.uuid4().hex[:8]}"
    opts = s3_server.storage_options()
    t = docc.Table.create(uri, _rows(0, 1).schema, properties={"delta.enableChangeDataFeed": "true"}, storage_options=opts)
    for i in range(COMMITS):
        t.append(_rows(i * 10, 10))
    assert t.version == COMMITS
    return uri, opts


def _commit_gets(requests: List[Tuple[str, str, Optional[str]]]) -> Dict[int, int]:
    """GETs per commit version (of ``_delta_log/<version>.json``)."""
    out: Dict[int, int] = {}
    for m, p, _ in requests:
        hit = re.search(r"_delta_log/(\d{20})\.json$", p.split("?")[0])
        if hit and m == "GET":
            out[int(hit.group(1))] = out.get(int(hit.group(1)), 0) + 1
    return out


RANGE_READS = [
    # (name, the read, the versions whose commit files it must read, whether only once each: the
    # change feed also loads the table at each version with changes, the end version and the
    # oldest by a replay from a checkpoint, which reads some of the range's commits again)
    ("timeline", lambda t: t.timeline().to_pyarrow().num_rows, range(0, COMMITS + 1), True),
    ("timeline-range", lambda t: t.timeline(from_version=11, to_version=30).to_pyarrow().num_rows, range(11, 31), True),
    ("change-feed", lambda t: t.read_change_feed(5, 25).num_rows, range(5, 26), False),
]


@pytest.mark.parametrize("name,read,versions,once", RANGE_READS, ids=[r[0] for r in RANGE_READS])
def test_a_range_of_commits_is_fetched_once_each_and_concurrently(s3_server, many_commits, name, read, versions, once):
    from servers.faultproxy import FaultProxy

    uri, opts = many_commits
    with FaultProxy(s3_server.endpoint) as proxy:
        t = docc.Table(uri, storage_options=dict(opts, AWS_ENDPOINT_URL=proxy.endpoint))
        proxy.reset_counts()
        # A round trip per request: requests sent one after another then never overlap.
        proxy.delay = 0.02
        got = read(t)
        requests = list(proxy.ranges)
        overlap = proxy.max_in_flight
    assert got > 0
    gets = _commit_gets(requests)
    if once:
        assert {v: n for v, n in gets.items() if v in versions} == {v: 1 for v in versions}, gets
    else:
        assert set(versions) <= set(gets), gets
    assert not [p for m, p, _ in requests if m == "HEAD" and "_delta_log/" in p and p.endswith(".json")], requests
    assert overlap > 1, f"{name}: the commit files were fetched one after another"


#: The most request rounds (the proxy's busy periods) ``read_change_feed(5, 25)`` may wait for in
#: sequence: the refresh and the end version's load, the summaries, the first version's load and
#: one walk to the rest, the files of the 21 commits read several at a time. One version after
#: another, each walked and read on its own, waited for 47 (measured before the change; 9-11 after).
FEED_ROUNDS = 15


def test_a_change_feed_waits_for_few_round_trips(s3_server, many_commits):
    from servers.faultproxy import FaultProxy

    uri, opts = many_commits
    with FaultProxy(s3_server.endpoint) as proxy:
        t = docc.Table(uri, storage_options=dict(opts, AWS_ENDPOINT_URL=proxy.endpoint))
        proxy.reset_counts()
        proxy.delay = 0.05
        feed = t.read_change_feed(5, 25)
        rounds = proxy.busy_periods
    # The rows: 10 inserted by each append of versions 5..25 (the fixture's commits).
    assert feed.num_rows == 21 * 10
    assert sorted(set(feed.column("_commit_version").to_pylist())) == list(range(5, 26))
    assert rounds <= FEED_ROUNDS, f"the change feed waited for {rounds} request rounds in sequence"


def test_explaining_one_commit_is_one_get(s3_server, many_commits):
    from servers.faultproxy import FaultProxy

    uri, opts = many_commits
    with FaultProxy(s3_server.endpoint) as proxy:
        t = docc.Table(uri, storage_options=dict(opts, AWS_ENDPOINT_URL=proxy.endpoint))
        proxy.reset_counts()
        assert explain.commit(t, 7)["version"] == 7
        requests = list(proxy.ranges)
    assert _commit_gets(requests) == {7: 1}, requests
    assert "HEAD" not in {m for m, _, _ in requests}, requests


# ---------------------------------------------------------------------------------------------
# Deletion vectors on an object store: each file's DV is fetched while its data is (both in flight
# together), not after it (a second round trip per file, one after the other).

DV_FILES = 8


@pytest.fixture(scope="module")
def dv_table(s3_server) -> Tuple[str, Dict[str, str]]:
    uri = f"s3://{BUCKET}/dv-reads-{uuid.uuid4().hex[:8]}"
    opts = s3_server.storage_options()
    t = docc.Table.create(uri, _rows(0, 1).schema, properties={"delta.enableDeletionVectors": "true"}, storage_options=opts)
    for i in range(DV_FILES):
        t.append(_rows(i * 100, 100))
    t.delete("id % 10 = 0")  # a DV on every file
    return uri, opts


DV_READS = [
    # (name, the read returning its rows): 90 of each file's 100 rows remain.
    ("to_pyarrow", lambda s: s.to_pyarrow().num_rows),
    ("to_batches", lambda s: sum(b.num_rows for b in s.to_batches())),
]


@pytest.mark.parametrize("name,read", DV_READS, ids=[r[0] for r in DV_READS])
def test_a_files_deletion_vector_is_fetched_with_its_data(s3_server, dv_table, name, read, monkeypatch):
    """One file at a time (``DELTA_OCC_READ_CONCURRENCY=1``) and a round trip per request: each
    file (one GET, it is small) and its DV (one GET) are in flight together, so the proxy is busy
    in one period per file; fetched one after the other, two (16 for the 8 files, seen before
    the change)."""
    from servers.faultproxy import FaultProxy

    monkeypatch.setenv("DELTA_OCC_READ_CONCURRENCY", "1")
    uri, opts = dv_table
    with FaultProxy(s3_server.endpoint) as proxy:
        snap = docc.Table(uri, storage_options=dict(opts, AWS_ENDPOINT_URL=proxy.endpoint)).snapshot()
        assert sum(1 for f in snap.files().column("deletion_vector").to_pylist() if f) == DV_FILES
        proxy.reset_counts()
        proxy.delay = 0.05
        assert read(snap) == DV_FILES * 90
        requests = [(m, p.split("?")[0]) for m, p, _ in proxy.ranges]
        rounds, overlap = proxy.busy_periods, proxy.max_in_flight
    kinds = ["dv" if p.endswith(".bin") else "data" if p.endswith(".parquet") else p for m, p in requests if m == "GET"]
    assert kinds.count("data") == DV_FILES and kinds.count("dv") == DV_FILES, requests
    assert overlap == 2 and rounds == DV_FILES, (rounds, overlap, kinds)
