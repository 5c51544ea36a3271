"""Small builders for hand-made Delta logs in tests."""

from __future__ import annotations

import json
import pathlib
from typing import Iterable, Optional

import pyarrow as pa
import pyarrow.parquet as pq

SCHEMA_STRING = json.dumps({"type": "struct", "fields": [
    {"name": "id", "type": "long", "nullable": True, "metadata": {}},
    {"name": "p", "type": "integer", "nullable": True, "metadata": {}},
]})


def protocol(reader=1, writer=2, reader_features=None, writer_features=None) -> dict:
    p = {"minReaderVersion": reader, "minWriterVersion": writer}
    if reader_features is not None:
        p["readerFeatures"] = reader_features
    if writer_features is not None:
        p["writerFeatures"] = writer_features
    return {"protocol": p}


def metadata(partition_columns=(), configuration=None, schema_string=SCHEMA_STRING) -> dict:
    return {"metaData": {"id": "00000000-0000-0000-0000-000000000001", "format": {"provider": "parquet", "options": {}},
                         "schemaString": schema_string, "partitionColumns": list(partition_columns),
                         "configuration": configuration or {}, "createdTime": 0}}


def add(path: str, size: int = 10, partition_values: Optional[dict] = None, stats: Optional[dict] = None,
        dv: Optional[dict] = None) -> dict:
    a = {"path": path, "partitionValues": partition_values or {}, "size": size, "modificationTime": 1,
         "dataChange": True}
    if stats is not None:
        a["stats"] = json.dumps(stats)
    if dv is not None:
        a["deletionVector"] = dv
    return {"add": a}


def remove(path: str, dv: Optional[dict] = None) -> dict:
    r = {"path": path, "dataChange": True, "deletionTimestamp": 5}
    if dv is not None:
        r["deletionVector"] = dv
    return {"remove": r}


def write_commit(root: pathlib.Path, version: int, actions: Iterable[dict]) -> pathlib.Path:
    log = root / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    path = log / f"{version:020d}.json"
    path.write_text("".join(json.dumps(a) + "\n" for a in actions))
    return path


def write_parquet(root: pathlib.Path, name: str, ids: list) -> int:
    """A data file with column `id`; returns its size."""
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}), path)
    return path.stat().st_size


def simple_table(root: pathlib.Path, n_files: int = 2, rows_per_file: int = 5) -> pathlib.Path:
    actions = [protocol(), metadata()]
    for i in range(n_files):
        ids = list(range(i * rows_per_file, (i + 1) * rows_per_file))
        size = write_parquet(root, f"f{i}.parquet", ids)
        actions.append(add(f"f{i}.parquet", size, stats={"numRecords": rows_per_file}))
    write_commit(root, 0, actions)
    return root


def kernel_rows(table) -> pa.Table:
    """A delta_occ Table read by delta-kernel-rs: in place on a local disk; from an object store,
    a byte-for-byte local copy of its files (the kernel's Python wrapper takes no credentials), so
    what is read is exactly what the bucket holds."""
    import tempfile

    import delta_kernel_rust_sharing_wrapper as dk

    storage = table.handle.storage
    root = storage.local_path("")
    if root is None:
        root = tempfile.mkdtemp(prefix="delta-occ-kernel-")
        for name, _ in storage.list(""):
            dest = pathlib.Path(root) / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(storage.read(name))
    uri = pathlib.Path(root).resolve().as_uri() + "/"
    iface = dk.PythonInterface(uri)
    result = dk.ScanBuilder(dk.Table(uri).snapshot(iface)).build().execute(iface)
    if isinstance(result, pa.Table):
        return result
    if isinstance(result, pa.RecordBatchReader):
        return result.read_all()
    return pa.Table.from_batches(list(result))
