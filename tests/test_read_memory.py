"""A streamed read holds a bounded amount of memory (issue 45, must-show 2): ``to_batches`` over a
table much larger than the bound grows the reading process's peak RSS by at most 300 MB, on a
local disk and on S3, and returns exactly the rows delta-kernel-rs reads (per data file: row count
and an order-independent hash of its rows, computed in a separate process from a local copy).

Sizes: by default 640 MB of parquet locally and 320 MB on S3 (both above the 300 MB bound, and
the default memory budget is 32 MiB of files in flight); ``DELTA_OCC_STREAM_FULL=1`` reads 3 GB on
each. The table has deletion vectors (a DELETE of every 997th row), so the kernel is the oracle.
Its files are written by pyarrow and adopted with ``convert_to_delta``."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import delta_occ as docc

from conftest import BUCKET

HERE = pathlib.Path(__file__).resolve().parent
FULL = os.environ.get("DELTA_OCC_STREAM_FULL") == "1"
#: Rows per data file: 3 columns (int64 id, int32 file_no, random float64 x), about 13 bytes a row
#: in parquet (random doubles do not compress; the ids and file numbers do): about 21 MB a file.
ROWS_PER_FILE = 1_600_000
BOUND = 300 * 1024 * 1024


def _write_files(root: pathlib.Path, megabytes: int) -> int:
    """Parquet files under ``root`` until they hold ``megabytes``; their total size."""
    root.mkdir(parents=True)
    rng = np.random.default_rng(45)
    total = 0
    f = -1
    while total < megabytes << 20:
        f += 1
        ids = np.arange(f * ROWS_PER_FILE, (f + 1) * ROWS_PER_FILE, dtype=np.int64)
        table = pa.table({"id": ids, "file_no": np.full(ROWS_PER_FILE, f, dtype=np.int32), "x": rng.random(ROWS_PER_FILE)})
        path = root / f"part-{f:05d}.parquet"
        pq.write_table(table, path, compression="snappy", row_group_size=ROWS_PER_FILE // 4)
        total += path.stat().st_size
    return total


def _child(*args: str) -> dict:
    # The child imports delta_occ as this process does (installed, or on this PYTHONPATH).
    out = subprocess.run([sys.executable, str(HERE / "stream_memory_job.py"), *args], check=True, capture_output=True, text=True, timeout=1800)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _table(tmp_path: pathlib.Path, megabytes: int) -> "tuple[pathlib.Path, int]":
    root = tmp_path / "t"
    size = _write_files(root, megabytes)
    t = docc.convert_to_delta(str(root), properties={"delta.enableDeletionVectors": "true"})
    t.delete("id % 997 = 0")
    return root, size


def _check(location: str, options, local_root: pathlib.Path, size: int) -> None:
    assert size > BOUND, "the table must be larger than the bound for the bound to mean anything"
    ours = _child("ours", location, json.dumps(options))
    kernel = _child("kernel", local_root.resolve().as_uri() + "/")
    assert ours["files"] == kernel["files"]
    assert sum(c for c, _ in ours["files"].values()) == sum(c for c, _ in kernel["files"].values()) > 0
    print(f"streamed {size / 2**20:.0f} MB of parquet; peak RSS growth {ours['peak_growth'] / 2**20:.0f} MB")
    assert ours["peak_growth"] <= BOUND


def test_streamed_read_of_a_local_table_is_bounded(tmp_path):
    root, size = _table(tmp_path, 3072 if FULL else 640)
    _check(str(root), None, root, size)


@pytest.fixture
def stream_s3(request):
    """The shared S3 gateway; for the full size one of its own, whose in-memory store holds 3 GB
    (the shared one keeps 1 GiB: the full-size upload failed at the 58th file)."""
    if not FULL:
        yield request.getfixturevalue("s3_server")
        return
    if os.environ.get("DELTA_OCC_NO_OBJECT_STORES"):
        pytest.skip("DELTA_OCC_NO_OBJECT_STORES is set: object-store servers are not started")
    from servers import ceph

    ceph.ensure_installed()
    with ceph.CephS3(memstore_bytes=5 << 30) as s3:
        s3.create_bucket(BUCKET)
        yield s3


def test_streamed_read_from_s3_is_bounded(tmp_path, stream_s3):
    import uuid

    root, size = _table(tmp_path, 3072 if FULL else 320)
    options = stream_s3.storage_options()
    location = f"s3://{BUCKET}/{uuid.uuid4().hex}/t"
    storage = docc._core.StorageHandle(location, options)
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        storage.write(str(path.relative_to(root)), path.read_bytes())
    _check(location, options, root, size)
