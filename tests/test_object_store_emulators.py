"""Tables on Azure Blob Storage (Azurite) and GCS (fake-gcs-server) emulators, as far as they are
faithful (tests/servers/azurite.py and fake_gcs.py say where they are not): the engine's
operations, conflicts and races between writers (both emulators create atomically under races:
0 double winners in 2,000 rounds of 8 processes, measured when they were added), and the typed
refusals Azurite can produce (fake-gcs-server checks no credentials)."""

from __future__ import annotations

import multiprocessing
import uuid

import pyarrow as pa
import pytest

import delta_occ as docc
from delta_occ import exceptions as ex

from conftest import BUCKET, azure_options, gcs_options

SCHEMA = pa.schema([("id", pa.int64()), ("x", pa.int64())])


def rows(ids):
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), "x": pa.array([i * 10 for i in ids], pa.int64())}, schema=SCHEMA)


@pytest.fixture(params=["azure", "gcs"])
def store(request):
    """``(new table URI, storage options)`` on each emulator."""
    name = f"t-{uuid.uuid4().hex[:12]}"
    if request.param == "azure":
        az = request.getfixturevalue("azurite_server")
        return f"az://{BUCKET}/{name}", azure_options(az)
    gcs = request.getfixturevalue("gcs_server")
    return f"gs://{BUCKET}/{name}", gcs_options(gcs)


def test_engine_operations(store):
    uri, opts = store
    t = docc.Table.create(uri, SCHEMA, properties={"delta.enableDeletionVectors": "true", "delta.checkpointInterval": "4"}, storage_options=opts)
    t.append(rows(range(10)))
    t.append(rows(range(10, 15)))
    t.delete("id = 3")
    t.update("id = 4", {"x": "-1"})
    t.merge(rows([5, 99]), "t.id = s.id", when_matched_update={"x": "0"}, when_not_matched_insert=True)
    assert t.optimize().committed
    expected = {i: i * 10 for i in range(15) if i != 3}
    expected.update({4: -1, 5: 0, 99: 990})
    fresh = docc.Table(uri, storage_options=opts)  # replays from the checkpoint at version 4
    assert fresh.version == 6
    got = fresh.snapshot().to_pyarrow()
    assert dict(zip(got.column("id").to_pylist(), got.column("x").to_pylist())) == expected
    assert fresh.snapshot(2).to_pyarrow().num_rows == 15


def test_concurrent_writers_rebase_or_conflict(store):
    uri, opts = store
    t = docc.Table.create(uri, SCHEMA, properties={"delta.enableDeletionVectors": "true", "delta.isolationLevel": "Serializable"}, storage_options=opts)
    t.append(rows(range(10)))
    a, b = t.begin(), t.begin()
    a.delete("id = 1")
    b.delete("id = 2")
    a.commit()
    r = b.commit()  # different rows of one file: rebased at row level
    assert r.attempts == 2 and r.rows_resolved >= 1
    c = t.begin()
    c.scan("id > 5")
    c.delete("id = 6")
    t.append(rows([7_000]))
    with pytest.raises(ex.ConcurrentAppendException):
        c.commit()
    assert sorted(docc.Table(uri, storage_options=opts).snapshot().to_pyarrow().column("id").to_pylist()) == [0, 3, 4, 5, 6, 7, 8, 9, 7_000]


def _writer(uri: str, opts: dict, w: int, n: int, queue) -> None:
    try:
        t = docc.Table(uri, storage_options=opts)
        queue.put([(w, i, t.append(rows([w * 1000 + i]), max_attempts=1000).version) for i in range(n)])
    except BaseException as e:  # noqa: BLE001 - reported to the parent
        queue.put(f"{type(e).__name__}: {e}")


def test_writers_race(store):
    """4 processes append 10 times each: every acknowledged commit present once, versions
    contiguous (the emulators create atomically, so the race is real)."""
    uri, opts = store
    docc.Table.create(uri, SCHEMA, storage_options=opts)
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(uri, opts, w, 10, queue)) for w in range(4)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(timeout=30)
    assert all(isinstance(r, list) for r in results), results
    acked = {v: w * 1000 + i for r in results for w, i, v in r}
    assert sorted(acked) == list(range(1, 41))
    t = docc.Table(uri, storage_options=opts)
    assert t.version == 40
    assert sorted(t.snapshot().to_pyarrow().column("id").to_pylist()) == sorted(acked.values())
    for h in t.history()[:-1]:
        assert h["operation"] == "WRITE"


def test_azure_refusals(azurite_server):
    az = azurite_server
    uri = f"az://{BUCKET}/t-{uuid.uuid4().hex[:12]}"
    docc.Table.create(uri, SCHEMA, storage_options=azure_options(az)).append(rows([1]))
    wrong = dict(azure_options(az), azure_storage_account_key="V3Jvbmcga2V5IGZvciB0aGUgZW11bGF0b3I=")
    with pytest.raises(ex.StorageError) as info:
        docc.Table(uri, storage_options=wrong)
    assert info.value.problem in ("unauthenticated", "permission_denied"), str(info.value)
    assert "V3Jvbmcg" not in str(info.value)
    with pytest.raises(ex.StorageError) as info:
        docc.Table(f"az://no-such-container-{uuid.uuid4().hex[:6]}/t", storage_options=azure_options(az))
    assert info.value.problem == "bucket_not_found", str(info.value)
    # A read-only SAS reads, and its writes are refused at once; the token never shows.
    sas = az.container_sas(BUCKET, permissions="rl")
    ro = docc.Table(uri, storage_options=azure_options(az, sas=sas))
    assert ro.snapshot().to_pyarrow().num_rows == 1
    with pytest.raises(ex.StorageError) as info:
        ro.append(rows([2]))
    assert info.value.problem == "permission_denied", str(info.value)
    sig = [p for p in sas.split("&") if p.startswith("sig=")][0][4:]
    assert sig not in str(info.value) and sas not in repr(info.value)
    assert docc.Table(uri, storage_options=azure_options(az)).version == 1
