"""Writing real parquet data files for tests of the transaction API (a driver that writes its own
files), with Delta statistics from the engine's stats writer."""

from __future__ import annotations

import os
import uuid
from typing import Any, Dict, Optional

import pyarrow as pa
import pyarrow.parquet as pq

from delta_occ._write import stats_json


def write_file(table_path: str, data: pa.Table, partition: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Write `data` (data columns only) under the partition directory; return add_file kwargs."""
    partition = partition or {}
    sub = "/".join(f"{k}={v}" for k, v in partition.items())
    rel = (sub + "/" if sub else "") + f"part-{uuid.uuid4()}.parquet"
    full = os.path.join(table_path, rel)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    pq.write_table(data, full)
    return {
        "path": rel,
        "partition_values": {k: None if v is None else str(v) for k, v in partition.items()},
        "size": os.path.getsize(full),
        "stats": stats_json(data),
    }


def rows(ids, x=None) -> pa.Table:
    ids = list(ids)
    xs = list(x) if x is not None else [i % 10 for i in ids]
    return pa.table({"id": pa.array(ids, pa.int64()), "x": pa.array(xs, pa.int64())})


def add(txn, table_path: str, data: pa.Table, partition: Optional[Dict[str, Any]] = None, data_change: bool = True) -> str:
    kw = write_file(table_path, data, partition)
    txn.add_file(data_change=data_change, **kw)
    return kw["path"]
