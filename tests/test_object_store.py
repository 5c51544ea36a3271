"""Tables on an object store (issue 27), on a real S3 server (Ceph radosgw on loopback, whose
conditional PUTs are atomic) and through a fault-injecting proxy in front of it: the engine's
operations, reads by another Delta reader from the bucket, the commit protocol under lost
acknowledgements, and the typed refusals. Expected values come from the operations themselves
(rows appended and deleted by the test), deltalake reading the bucket, and the S3 dialect
(412 PreconditionFailed, 403, 404 NoSuchBucket) measured on the server."""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import subprocess
import sys
import time
import urllib.parse
import uuid
from typing import List, Tuple

import pyarrow as pa
import pytest

import delta_occ as docc
from delta_occ import exceptions as ex

from conftest import BUCKET, REPO
from helpers import kernel_rows

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("x", pa.int64())])


def rows(ids, p="a"):
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), "p": [p] * len(ids), "x": pa.array([i * 10 for i in ids], pa.int64())}, schema=SCHEMA)


def keys(s3, prefix: str):
    """Every object key under ``prefix`` of the test bucket (listed by boto3-free SigV4 GETs)."""
    out, token = [], None
    while True:
        q = {"list-type": "2", "prefix": prefix}
        if token:
            q["continuation-token"] = token
        r = s3.request("GET", f"/{BUCKET}", query=q)
        assert r.status == 200, r
        body = r.body.decode()
        out += re.findall(r"<Key>([^<]+)</Key>", body)
        m = re.search(r"<NextContinuationToken>([^<]+)</NextContinuationToken>", body)
        if not m:
            return out
        token = m.group(1)


# -- locations and options, no server ------------------------------------------------------------


@pytest.mark.parametrize(
    "location,problem",
    [
        ("dbfs:/mnt/t", "unsupported_scheme"),
        ("dbfs:///mnt/t", "unsupported_scheme"),
        ("hdfs://namenode/t", "unsupported_scheme"),
        ("wasbs://c@acct.blob.core.windows.net/t", "unsupported_scheme"),
        ("s3:///no-bucket", "invalid_location"),
        ("s3://b/a/../t", "invalid_location"),
        ("az://c/t?sv=2022&sig=SECRETSIG", "invalid_location"),
        ("https://acct.blob.core.windows.net/c/t?sv=2022&sig=SECRETSIG", "unsupported_scheme"),
        ("s3://b/a/../t?sig=SECRETSIG", "invalid_location"),
    ],
)
def test_unsupported_locations_are_typed_errors(tmp_path, monkeypatch, location, problem):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ex.StorageError) as info:
        docc.Table(location)
    assert info.value.problem == problem and isinstance(info.value, ex.DeltaIOError)
    assert "SECRETSIG" not in str(info.value) and "SECRETSIG" not in str(vars(info.value))
    with pytest.raises(ex.StorageError):
        docc.Table.create(location, SCHEMA)
    assert os.listdir(tmp_path) == [], "nothing may be created locally (dbfs: once became a folder)"


@pytest.mark.parametrize(
    "options,text",
    [
        ({"AWS_NOT_A_KEY": "1"}, "unknown storage option"),
        ({"AWS_S3_LOCKING_PROVIDER": "dynamodb"}, "no lock table"),
        ({"AWS_REGION": "a", "aws_region": "b"}, "given twice"),
        ({"max_retries": "many"}, "not a number"),
        ({"retry_timeout": "soon"}, "not a duration"),
    ],
)
def test_bad_storage_options_fail_when_the_table_is_opened(options, text):
    with pytest.raises(ex.StorageError) as info:
        docc.Table(f"s3://{BUCKET}/nowhere", storage_options=options)
    assert info.value.problem == "invalid_options" and text in str(info.value), str(info.value)


def test_storage_options_must_be_a_mapping_of_strings():
    with pytest.raises(ex.InvalidArgumentError):
        docc.Table("s3://b/t", storage_options=[("AWS_REGION", "x")])  # type: ignore[arg-type]
    with pytest.raises(ex.InvalidArgumentError):
        docc.Table("s3://b/t", storage_options={1: "x"})  # type: ignore[dict-item]


def test_importing_creates_no_thread(s3_server):
    """No runtime or thread pool at import time (pyarrow's own threads aside): the I/O runtime's
    threads appear with the first object-store request, and opening a local table starts none."""
    opts = s3_server.storage_options()
    code = (
        "import os, sys, tempfile, pyarrow\n"
        "n = lambda: len(os.listdir('/proc/self/task'))\n"
        "before = n()\n"
        "import delta_occ, delta_occ._core\n"
        "imported = n()\n"
        "t = delta_occ.Table.create(tempfile.mkdtemp() + '/t', pyarrow.schema([('a', pyarrow.int64())]))\n"
        "local = n()\n"
        "try:\n"
        f"    delta_occ.Table('s3://{BUCKET}/none-here', storage_options={opts!r})\n"
        "except delta_occ.exceptions.TableNotFoundError:\n"
        "    pass\n"
        "print(before, imported, local, n())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    before, imported, local, remote = map(int, out)
    assert before == imported == local, f"threads before import / after import / after a local table: {out}"
    assert remote > local, f"the first object-store request starts the I/O runtime: {out}"


# -- S3 -------------------------------------------------------------------------------------------


@pytest.fixture
def s3(s3_server):
    return s3_server


@pytest.fixture
def loc(s3_server):
    """A new table location in the bucket and its options."""
    return f"s3://{BUCKET}/t-{uuid.uuid4().hex[:12]}", s3_server.storage_options()


def test_engine_operations_on_s3_read_back_by_deltalake(loc, s3):
    uri, opts = loc
    t = docc.Table.create(uri, SCHEMA, partition_by=["p"], storage_options=opts)
    t.append(rows(range(0, 10), "a"))
    t.append(rows(range(10, 20), "b c"))
    t.delete("id IN (3, 13)")
    t.update("id = 4", {"x": "-1"})
    t.merge(rows([5, 100], "a"), "t.id = s.id", when_matched_update={"x": "0"}, when_not_matched_insert=True)
    t.append(rows([200, 201], "a"))
    t.append(rows([300], "a"))
    r = t.optimize()
    assert r.committed and t.version == 8 and int(r.metrics["numRemovedFiles"]) >= 3, r
    expected = {i: i * 10 for i in range(20) if i not in (3, 13)}
    expected.update({4: -1, 5: 0, 100: 1000, 200: 2000, 201: 2010, 300: 3000})
    got = t.snapshot().to_pyarrow()
    assert dict(zip(got.column("id").to_pylist(), got.column("x").to_pylist())) == expected
    # Another reader, from the bucket itself.
    import deltalake

    dl = deltalake.DeltaTable(uri, storage_options=opts)
    assert dl.version() == 8
    data = dl.to_pyarrow_table()
    assert dict(zip(data.column("id").to_pylist(), data.column("x").to_pylist())) == expected
    # Every file the log references exists; nothing of ours is left that the log does not name.
    prefix = uri.split(f"{BUCKET}/", 1)[1] + "/"
    stored = set(keys(s3, prefix))
    live = {prefix + urllib.parse.unquote(p) for p in t.snapshot().files().column("path").to_pylist()}
    assert live <= stored
    history = t.history()
    assert [h["operation"] for h in history] == ["OPTIMIZE", "WRITE", "WRITE", "MERGE", "UPDATE", "DELETE", "WRITE", "WRITE", "CREATE TABLE"]
    assert docc.Table(uri, storage_options=opts).snapshot(2).to_pyarrow().num_rows == 20


def test_dv_table_on_s3_read_back_by_kernel(loc):
    uri, opts = loc
    t = docc.Table.create(uri, SCHEMA, properties={"delta.enableDeletionVectors": "true"}, storage_options=opts)
    t.append(rows(range(50)))
    first = t.begin()
    first.delete("id = 7")
    t.delete("id = 8")  # wins; the first is rebased at row level (one file, different rows)
    r = first.commit()
    assert r.rows_resolved >= 1 and r.attempts == 2
    assert len(t.snapshot().deleted_rows(t.snapshot().files().column("path")[0].as_py())) == 2
    # delta-kernel-rs reads a byte-for-byte local copy of the bucket (its wrapper takes no
    # credentials): what is in the bucket is a valid DV table.
    data = kernel_rows(t)
    assert sorted(data.column("id").to_pylist()) == [i for i in range(50) if i not in (7, 8)]


def test_checkpoint_on_s3_is_read_with_ranged_requests(loc, s3):
    uri, opts = loc
    t = docc.Table.create(uri, SCHEMA, properties={"delta.checkpointInterval": "3"}, storage_options=opts)
    for n in range(4):
        r = t.append(rows(range(n * 10, n * 10 + 10)))
    assert r.version == 4
    prefix = uri.split(f"{BUCKET}/", 1)[1]
    assert f"{prefix}/_delta_log/00000000000000000003.checkpoint.parquet" in keys(s3, prefix)
    fresh = docc.Table(uri, storage_options=opts)
    assert fresh.version == 4 and fresh.snapshot().to_pyarrow().num_rows == 40


def test_secrets_never_appear(loc, s3):
    uri, opts = loc
    secret = opts["AWS_SECRET_ACCESS_KEY"]
    t = docc.Table.create(uri, SCHEMA, storage_options=opts)
    t.append(rows([1]))
    texts = [repr(t), repr(t.snapshot()), json.dumps(t.history()), t.path, repr(t.handle.storage)]
    wrong = dict(opts, AWS_SECRET_ACCESS_KEY="wrong-" + secret)
    with pytest.raises(ex.StorageError) as info:
        docc.Table(uri, storage_options=wrong)
    texts += [str(info.value), repr(info.value), str(vars(info.value))]
    for text in texts:
        assert secret not in text and opts["AWS_ACCESS_KEY_ID"] not in text, text


# -- refusals (issue 27 "What it must show" 5) ------------------------------------------------------


def test_missing_bucket(s3):
    opts = s3.storage_options()
    for make in (lambda u: docc.Table(u, storage_options=opts), lambda u: docc.Table.create(u, SCHEMA, storage_options=opts)):
        uri = f"s3://no-such-bucket-{uuid.uuid4().hex[:8]}/t"
        with pytest.raises(ex.StorageError) as info:
            make(uri)
        assert info.value.problem == "bucket_not_found", str(info.value)
        assert "no-such-bucket" in str(info.value) and opts["AWS_SECRET_ACCESS_KEY"] not in str(info.value)


@pytest.mark.parametrize("which", ["AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID"])
def test_wrong_key(loc, which):
    uri, opts = loc
    docc.Table.create(uri, SCHEMA, storage_options=opts)
    wrong = dict(opts, **{which: "WRONG" + opts[which][5:]})
    start = time.monotonic()
    with pytest.raises(ex.StorageError) as info:
        docc.Table(uri, storage_options=wrong)
    assert time.monotonic() - start < 10, "a refused credential must fail at once, not after retries"
    assert info.value.problem == "unauthenticated" and uri in str(info.value)
    assert wrong[which] not in str(info.value) and opts["AWS_SECRET_ACCESS_KEY"] not in str(info.value)


def test_read_only_credential_reads_but_cannot_write(loc, s3):
    uri, opts = loc
    t = docc.Table.create(uri, SCHEMA, storage_options=opts)
    t.append(rows(range(5)))
    prefix = uri.split(f"{BUCKET}/", 1)[1]
    before = set(keys(s3, prefix))
    ro = docc.Table(uri, storage_options=s3.storage_options(read_only=True))
    assert ro.snapshot().to_pyarrow().num_rows == 5
    for op in (lambda: ro.append(rows([9])), lambda: ro.delete("id = 1"), lambda: ro.set_properties({"a": "b"})):
        start = time.monotonic()
        with pytest.raises(ex.StorageError) as info:
            op()
        assert info.value.problem == "permission_denied", str(info.value)
        assert time.monotonic() - start < 10
        assert s3.ro_secret_key not in str(info.value)
    assert set(keys(s3, prefix)) == before, "a refused write leaves no object behind"
    assert docc.Table(uri, storage_options=opts).version == 1


def test_store_without_conditional_writes_is_refused(s3):
    from servers.faultproxy import FaultProxy

    with FaultProxy(s3.endpoint) as proxy:
        proxy.ignore_conditions()
        opts = dict(s3.storage_options(), AWS_ENDPOINT_URL=proxy.endpoint)
        uri = f"s3://{BUCKET}/t-{uuid.uuid4().hex[:12]}"
        with pytest.raises(ex.StorageError) as info:
            docc.Table.create(uri, SCHEMA, storage_options=opts)
        assert info.value.problem == "no_conditional_writes", str(info.value)
        assert "If-None-Match" in str(info.value) and "no lock-table fallback" in str(info.value)
    prefix = uri.split(f"{BUCKET}/", 1)[1]
    assert keys(s3, prefix) == [], "the probe leaves no object behind"


def test_conditional_put_disabled_fails_every_commit(s3):
    """Guide, options table: `AWS_CONDITIONAL_PUT=disabled` makes every commit fail (a store
    without conditional creates is refused: there is no lock-table fallback), nothing written."""
    opts = dict(s3.storage_options(), AWS_CONDITIONAL_PUT="disabled")
    uri = f"s3://{BUCKET}/t-{uuid.uuid4().hex[:12]}"
    with pytest.raises(ex.StorageError) as info:
        docc.Table.create(uri, SCHEMA, storage_options=opts)
    assert info.value.problem == "no_conditional_writes", str(info.value)
    assert keys(s3, uri.split(f"{BUCKET}/", 1)[1]) == []


# -- the commit protocol under faults --------------------------------------------------------------


@pytest.mark.parametrize("drop", [False, True], ids=["500-after-landing", "connection-dropped-after-landing"])
def test_lost_acknowledgement_commits_exactly_once(s3, drop):
    from servers.faultproxy import FaultProxy

    with FaultProxy(s3.endpoint) as proxy:
        opts = dict(s3.storage_options(), AWS_ENDPOINT_URL=proxy.endpoint)
        uri = f"s3://{BUCKET}/t-{uuid.uuid4().hex[:12]}"
        t = docc.Table.create(uri, SCHEMA, storage_options=opts)
        proxy.lose_ack(r"_delta_log/\d{20}\.json", drop=drop, count=3)
        results = [t.append(rows([i])) for i in range(3)]
        assert proxy.injected["lose_ack"] == 3
    assert [r.version for r in results] == [1, 2, 3]
    fresh = docc.Table(uri, storage_options=s3.storage_options())
    assert fresh.version == 3
    txn_ids = [h.get("txnId") for h in fresh.history() if h["operation"] == "WRITE"]
    assert sorted(txn_ids) == sorted(r.txn_id for r in results), "each acknowledged commit once"
    assert sorted(fresh.snapshot().to_pyarrow().column("id").to_pylist()) == [0, 1, 2]


def test_lost_answer_then_a_failed_listing_still_finds_the_commit(s3):
    """The PUT lands, its answer is lost, the client's retry gets 412 (the commit looks like a
    collision) and listing the winners then fails: the commit is ours, and it must be reported
    as committed, not as an error (which would delete its data file)."""
    from servers.faultproxy import FaultProxy

    with FaultProxy(s3.endpoint) as proxy:
        opts = dict(s3.storage_options(), AWS_ENDPOINT_URL=proxy.endpoint, max_retries="1")
        uri = f"s3://{BUCKET}/t-{uuid.uuid4().hex[:12]}"
        t = docc.Table.create(uri, SCHEMA, storage_options=opts)
        txn = t.begin()
        txn.append(rows([1, 2]))
        proxy.lose_ack(r"_delta_log/\d{20}\.json$", count=1)
        proxy.fail_reads(r"list-type", count=1000)
        r = txn.commit()
        assert r.version == 1 and proxy.injected["lose_ack"] == 1 and proxy.injected["fail_reads"] >= 1
    fresh = docc.Table(uri, storage_options=s3.storage_options())
    assert fresh.version == 1 and sorted(fresh.snapshot().to_pyarrow().column("id").to_pylist()) == [1, 2]


def test_a_credential_that_cannot_delete_still_commits(s3):
    """The conditional-write probe cannot delete its scratch object: it stays (hidden, harmless)
    and commits go on."""
    from servers.faultproxy import FaultProxy

    with FaultProxy(s3.endpoint) as proxy:
        proxy.refuse_deletes()
        opts = dict(s3.storage_options(), AWS_ENDPOINT_URL=proxy.endpoint)
        uri = f"s3://{BUCKET}/t-{uuid.uuid4().hex[:12]}"
        t = docc.Table.create(uri, SCHEMA, storage_options=opts)
        assert t.append(rows([1])).version == 1
    prefix = uri.split(f"{BUCKET}/", 1)[1]
    assert [k for k in keys(s3, prefix) if ".delta-occ-probe-" in k], "the probe object stays"


PROBE = re.compile(r"_delta_log/\.delta-occ-probe-(\d+)-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}$")


def test_a_probe_left_by_a_killed_process_is_removed_once_stale(loc, s3):
    """Issue 45 item 5. A writer SIGKILLed between the conditional-write probe's first PUT (landed)
    and its delete leaves the probe in `_delta_log/`. Every reader skips it (delta-occ, deltalake,
    delta-kernel-rs read the table with it there); log cleanup keeps it while it is fresh (a live
    writer's probe in progress stays too, through a checkpoint's cleanup), keeps it without error
    when the credential may not delete, and removes it, and nothing else, once it is older than
    an hour. Expected rows: the ones this test committed."""
    import signal
    import threading

    import deltalake

    from servers.faultproxy import FaultProxy

    uri, opts = loc
    prefix = uri.split(f"{BUCKET}/", 1)[1]
    t = docc.Table.create(uri, SCHEMA, storage_options=opts, properties={"delta.checkpointInterval": "2"})
    t.append(rows([0, 1]))  # version 1

    def writer(proxy: FaultProxy, ids) -> subprocess.Popen:
        code = (
            "import sys, pyarrow as pa, delta_occ as docc\n"
            f"t = docc.Table({uri!r}, storage_options={dict(opts, AWS_ENDPOINT_URL=proxy.endpoint)!r})\n"
            f"ids = {list(ids)!r}\n"
            "t.append(pa.table({'id': pa.array(ids, pa.int64()), 'p': ['a'] * len(ids), 'x': pa.array([i * 10 for i in ids], pa.int64())}))\n"
        )
        return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def probes():
        return sorted(k for k in keys(s3, prefix) if PROBE.search(k))

    def read_everywhere():
        fresh = docc.Table(uri, storage_options=opts)
        ours = sorted(fresh.snapshot().to_pyarrow().column("id").to_pylist())
        theirs = sorted(deltalake.DeltaTable(uri, storage_options=opts).to_pyarrow_table().column("id").to_pylist())
        kernel = sorted(kernel_rows(fresh).column("id").to_pylist())
        return ours, theirs, kernel

    # 1. Killed after the probe's first PUT landed, before anything else.
    with FaultProxy(s3.endpoint) as proxy:
        child: list = []
        proxy.landed("PUT", r"/_delta_log/\.delta-occ-probe-", lambda: (child[0].kill(), child[0].wait(30)))
        started = time.time() * 1000
        child.append(writer(proxy, [99]))
        out, err = child[0].communicate(timeout=120)
        ended = time.time() * 1000
    assert child[0].returncode == -signal.SIGKILL, (child[0].returncode, err[-2000:])
    (left,) = probes()
    created = int(PROBE.search(left).group(1))
    assert started <= created <= ended, "the probe's name carries its creation time"
    assert read_everywhere() == ([0, 1],) * 3, "every reader skips the leftover"

    # 2. Fresh probes stay: the leftover, and a live writer's probe held in progress, through a
    # cleanup now and through the one a checkpoint runs (version 2, checkpointInterval 2).
    with FaultProxy(s3.endpoint) as proxy:
        held, release = threading.Event(), threading.Event()
        proxy.landed("PUT", r"/_delta_log/\.delta-occ-probe-", lambda: (held.set(), release.wait(60)))
        live = writer(proxy, [7])
        try:
            assert held.wait(60), "the live writer never probed"
            (live_probe,) = set(probes()) - {left}
            assert t.newest_snapshot().handle.cleanup_log()["probes_deleted"] == 0
            r = t.append(rows([2]))
            assert r.version == 2 and r.checkpoint_written and r.checkpoint_error is None, r
            assert set(probes()) == {left, live_probe}
        finally:
            release.set()
        out, err = live.communicate(timeout=120)
    assert live.returncode == 0, err[-2000:]
    assert probes() == [left], "the live writer removed its own probe"

    # 3. A credential that may write but not delete: the stale probe stays, no error.
    later = int(time.time() * 1000) + 2 * 3600 * 1000
    with FaultProxy(s3.endpoint) as proxy:
        proxy.refuse_deletes()
        no_delete = docc.Table(uri, storage_options=dict(opts, AWS_ENDPOINT_URL=proxy.endpoint))
        cleaned = no_delete.snapshot().handle.cleanup_log(now_ms=later)
        assert proxy.injected["refuse_deletes"] >= 1, "the cleanup tried"
    assert cleaned["probes_deleted"] == 0 and probes() == [left]

    # 4. Two hours on, the stale probe goes, and nothing else.
    before = set(keys(s3, prefix))
    cleaned = docc.Table(uri, storage_options=opts).snapshot().handle.cleanup_log(now_ms=later)
    assert cleaned == {"boundary": None, "deleted": 0, "sidecars_deleted": 0, "probes_deleted": 1}, cleaned
    assert set(keys(s3, prefix)) == before - {left}
    assert read_everywhere() == ([0, 1, 2, 7],) * 3


def test_unknown_outcome_keeps_the_files(s3):
    """The put's answer is lost and reading the commit back fails for the whole retry window: the
    outcome is unknown, the error says so and the data file stays (the commit did land)."""
    from servers.faultproxy import FaultProxy

    with FaultProxy(s3.endpoint) as proxy:
        opts = dict(s3.storage_options(), AWS_ENDPOINT_URL=proxy.endpoint, max_retries="0")
        uri = f"s3://{BUCKET}/t-{uuid.uuid4().hex[:12]}"
        t = docc.Table.create(uri, SCHEMA, storage_options=opts)
        proxy.lose_ack(r"_delta_log/\d{20}\.json", drop=True, count=1)
        proxy.fail_reads(r"_delta_log/00000000000000000001\.json", count=10_000)
        txn = t.begin(time_budget=1)
        txn.append(rows([1]))
        with pytest.raises(ex.CommitOutcomeUnknownError) as info:
            txn.commit()
        assert info.value.version == 1
    fresh = docc.Table(uri, storage_options=s3.storage_options())
    assert fresh.version == 1 and fresh.snapshot().to_pyarrow().num_rows == 1, "the commit landed and its file is there"


def test_requests_per_commit(s3):
    """An uncontested commit is one conditional PUT; a commit that loses to 10 winners lists the
    log and reads each winner once (issue 27 "What it must show" 4)."""
    from servers.faultproxy import FaultProxy

    with FaultProxy(s3.endpoint) as proxy:
        opts = dict(s3.storage_options(), AWS_ENDPOINT_URL=proxy.endpoint)
        uri = f"s3://{BUCKET}/t-{uuid.uuid4().hex[:12]}"
        t = docc.Table.create(uri, SCHEMA, storage_options=opts)
        t.append(rows([0]))
        txn = t.begin()
        txn.set_app_version("app", 1)  # a commit with no data file: only the commit's requests
        proxy.reset_counts()
        txn.commit()
        log = [(m, p) for m, p, _ in proxy.log]
        assert log == [("PUT", f"/{BUCKET}/{uri.split(BUCKET + '/', 1)[1]}/_delta_log/00000000000000000002.json")], log
        loser = t.begin()
        loser.set_app_version("other", 1)
        winners = docc.Table(uri, storage_options=opts)
        for i in range(10):
            w = winners.begin()
            w.set_app_version(f"w{i}", 1)
            w.commit()
        proxy.reset_counts()
        r = loser.commit()
        assert r.version == 13 and r.attempts == 2 and len(r.rebased_over) == 10
        gets = [p for m, p, _ in proxy.log if m == "GET" and "list-type" not in p]
        lists = [p for m, p, _ in proxy.log if m == "GET" and "list-type" in p]
        puts = [p for m, p, _ in proxy.log if m == "PUT"]
        winner_keys = [f"_delta_log/{v:020}.json" for v in range(3, 13)]
        assert sorted(g.rsplit("/_delta_log/", 1)[1] for g in gets) == sorted(k.split("/", 1)[1] for k in winner_keys), gets
        assert len(lists) == 1 and len(puts) == 2, proxy.log


def test_an_append_after_the_tables_own_reads_no_commit_back(s3):
    """An append to a table whose last commit is its own makes three requests: the listing that
    finds other writers' commits, the data file, the commit. Its own last commit is not read back
    (it was, one GET more per append: BENCHMARKS.md, issue 45, "appends remain the closest row");
    another writer's commit in between is read, once, and its rows are there."""
    from servers.faultproxy import FaultProxy

    with FaultProxy(s3.endpoint) as proxy:
        opts = dict(s3.storage_options(), AWS_ENDPOINT_URL=proxy.endpoint)
        uri = f"s3://{BUCKET}/t-{uuid.uuid4().hex[:12]}"
        key = uri.split(BUCKET + "/", 1)[1]
        t = docc.Table.create(uri, SCHEMA, storage_options=opts)
        t.append(rows([0]))

        def requests_of(work) -> Tuple[List[str], List[str], List[str], List[str]]:
            proxy.reset_counts()
            work()
            log = [(m, p.split("?")[0], "list-type" in p) for m, p, _ in proxy.log]
            lists = [p for m, p, listing in log if m == "GET" and listing]
            gets = [p for m, p, listing in log if m == "GET" and not listing]
            puts = [p for m, p, _ in log if m == "PUT"]
            other = [f"{m} {p}" for m, p, _ in log if m not in ("GET", "PUT")]
            return lists, gets, puts, other

        lists, gets, puts, other = requests_of(lambda: t.append(rows([1])))
        assert (len(lists), gets, other) == (1, [], []), proxy.log
        assert [p.rsplit("/", 1)[1].endswith(".parquet") for p in puts] == [True, False], puts
        assert puts[1] == f"/{BUCKET}/{key}/_delta_log/{2:020}.json", puts

        docc.Table(uri, storage_options=opts).append(rows([2]))  # another writer: version 3
        lists, gets, puts, other = requests_of(lambda: t.append(rows([3])))
        assert (len(lists), gets, len(puts), other) == (1, [f"/{BUCKET}/{key}/_delta_log/{3:020}.json"], 2, []), proxy.log
        assert t.version == 4
        ids = docc.Table(uri, storage_options=opts).snapshot().to_pyarrow().column("id").to_pylist()
        assert sorted(ids) == [0, 1, 2, 3]
        assert sorted(t.snapshot().to_pyarrow().column("id").to_pylist()) == [0, 1, 2, 3]


def _fork_child_commits(uri: str, opts: dict, queue) -> None:
    try:
        t = docc.Table(uri, storage_options=opts)
        queue.put(("ok", t.append(rows([99])).version))
    except BaseException as e:  # noqa: BLE001 - reported to the parent
        queue.put((type(e).__name__, str(e)))


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_child_processes_commit_after_the_parent_used_s3(loc, method):
    uri, opts = loc
    t = docc.Table.create(uri, SCHEMA, storage_options=opts)
    t.append(rows([1]))  # the parent's I/O runtime and connections exist now
    ctx = multiprocessing.get_context(method)
    queue = ctx.Queue()
    p = ctx.Process(target=_fork_child_commits, args=(uri, opts, queue))
    p.start()
    got = queue.get(timeout=120)
    p.join(timeout=30)
    assert got == ("ok", 2), got
    assert t.append(rows([2])).version == 3, "the parent still commits after its child"


def test_cli_reads_a_table_on_s3(loc):
    uri, opts = loc
    t = docc.Table.create(uri, SCHEMA, storage_options=opts)
    t.append(rows([1, 2]))
    args = [a for k, v in opts.items() for a in ("--storage-option", f"{k}={v}")]
    out = subprocess.run(
        [sys.executable, "-m", "delta_occ", "history", uri, "--json", *args], capture_output=True, text=True, cwd=REPO, check=True
    ).stdout
    assert [e["operation"] for e in json.loads(out)] == ["WRITE", "CREATE TABLE"]
    out = subprocess.run([sys.executable, "-m", "delta_occ", "snapshot", uri, "--json", *args], capture_output=True, text=True, check=True).stdout
    assert json.loads(out)["rows"] == 2
    bad = subprocess.run([sys.executable, "-m", "delta_occ", "history", uri, "--storage-option", "NOEQUALS"], capture_output=True, text=True)
    assert bad.returncode == 1 and "KEY=VALUE" in bad.stderr
    # check: two DELETEs of the same row conflict in both orders (concurrency.md §5, file level),
    # predicted on local copies; the table itself is not written.
    out = subprocess.run(
        [sys.executable, "-m", "delta_occ", "check", uri, "--first", "DELETE WHERE id = 1", "--second", "DELETE WHERE id = 1", "--json", *args],
        capture_output=True, text=True,
    )
    assert out.returncode == 4, out.stderr
    assert [o["outcome"] for o in json.loads(out.stdout)["orders"]] == ["ConcurrentDeleteReadException"] * 2
    assert docc.Table(uri, storage_options=opts).version == 1
