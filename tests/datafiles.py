"""Writing real parquet data files for transaction tests (the engine of issue #4 will do this for
users; tests need files with correct Delta statistics now)."""

from __future__ import annotations

import json
import os
import uuid
from typing import Any, Dict, Optional

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq


def stats_of(data: pa.Table) -> Dict[str, Any]:
    """Delta stats JSON (numRecords, minValues, maxValues, nullCount) for flat numeric/string columns."""
    mins, maxs, nulls = {}, {}, {}
    for name in data.column_names:
        col = data.column(name)
        nulls[name] = col.null_count
        if col.null_count < len(col) and (pa.types.is_integer(col.type) or pa.types.is_string(col.type)):
            mm = pc.min_max(col)
            mins[name], maxs[name] = mm["min"].as_py(), mm["max"].as_py()
    return {"numRecords": data.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls}


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
        "stats": json.dumps(stats_of(data)),
    }


def rows(ids, x=None) -> pa.Table:
    ids = list(ids)
    xs = list(x) if x is not None else [i % 10 for i in ids]
    return pa.table({"id": pa.array(ids, pa.int64()), "x": pa.array(xs, pa.int64())})


def add(txn, table_path: str, data: pa.Table, partition: Optional[Dict[str, Any]] = None, data_change: bool = True) -> str:
    kw = write_file(table_path, data, partition)
    txn.add_file(data_change=data_change, **kw)
    return kw["path"]
