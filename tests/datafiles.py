"""Writing real parquet data files for tests of the transaction API (a driver that writes its own
files), with Delta statistics from the engine's stats writer."""

from __future__ import annotations

import uuid
from typing import Any, Dict, Optional

import pyarrow as pa
import pyarrow.parquet as pq

from delta_occ import _core
from delta_occ._write import stats_json


def write_file(table: Any, data: pa.Table, partition: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Write `data` (data columns only) under the partition directory of ``table`` (a local table
    path, or a ``_core.StorageHandle`` of any storage); return add_file kwargs."""
    partition = partition or {}
    sub = "/".join(f"{k}={v}" for k, v in partition.items())
    rel = (sub + "/" if sub else "") + f"part-{uuid.uuid4()}.parquet"
    storage = _core.StorageHandle(table) if isinstance(table, str) else table
    sink = pa.BufferOutputStream()
    pq.write_table(data, sink)
    buf = sink.getvalue().to_pybytes()
    storage.write(rel, buf)
    return {
        "path": rel,
        "partition_values": {k: None if v is None else str(v) for k, v in partition.items()},
        "size": len(buf),
        "stats": stats_json(data),
    }


def rows(ids, x=None) -> pa.Table:
    ids = list(ids)
    xs = list(x) if x is not None else [i % 10 for i in ids]
    return pa.table({"id": pa.array(ids, pa.int64()), "x": pa.array(xs, pa.int64())})


def add(txn, table_path: str, data: pa.Table, partition: Optional[Dict[str, Any]] = None, data_change: bool = True) -> str:
    """Write a file into the transaction's table (through its storage: ``table_path`` names it for
    the reader of the test) and stage its add."""
    kw = write_file(txn.storage, data, partition)
    txn.add_file(data_change=data_change, **kw)
    return kw["path"]
