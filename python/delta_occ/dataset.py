"""A snapshot's live files as a ``pyarrow.dataset.Dataset``: one parquet fragment per file, its
partition values as the fragment's partition expression (pyarrow fills the partition columns from
it), read through the table's own storage (the core's: local disk or object store, the
credentials the table was opened with, never handed to pyarrow).

Only tables whose files a plain parquet reader reads as Delta means them: deletion vectors on live
files (rows a plain reader would resurrect), column mapping (physical names) and widened column
types (old files in the old type) are refused with UnsupportedFeatureError."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, List, Optional

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.fs as pafs

from . import _arrow
from .exceptions import UnsupportedFeatureError

if TYPE_CHECKING:
    from .snapshot import Snapshot


def _refuse(snapshot: "Snapshot", feature: str, why: str) -> UnsupportedFeatureError:
    h = snapshot.handle
    return UnsupportedFeatureError(
        f"{h.root} at version {h.version}: to_pyarrow_dataset() cannot present this table: {why}; read it with "
        "to_batches() or to_pyarrow(), which apply it",
        table=h.root, version=h.version, feature=feature,
    )


def _widened(schema_json: str) -> bool:
    """Whether any field at any depth records a type change (``delta.typeChanges``)."""

    def walk(node: Any) -> bool:
        if isinstance(node, dict):
            if "delta.typeChanges" in (node.get("metadata") or {}):
                return True
            return any(walk(v) for v in node.values())
        if isinstance(node, list):
            return any(walk(v) for v in node)
        return False

    return walk(json.loads(schema_json))


def snapshot_dataset(snapshot: "Snapshot") -> ds.Dataset:
    h = snapshot.handle
    if h.column_mapping_mode != "none":
        raise _refuse(snapshot, "columnMapping", f"column mapping (mode {h.column_mapping_mode!r}) stores columns under physical names")
    if _widened(h.schema_json):
        raise _refuse(snapshot, "typeWidening", "a column's type was widened, so older files hold the narrower type")
    files = h.data_files(None)
    with_dv = sum(1 for _, _, has_dv in files if has_dv)
    if with_dv:
        raise _refuse(snapshot, "deletionVectors", f"{with_dv} live file(s) have deletion vectors (deleted rows a plain parquet reader would return)")
    schema = snapshot.schema
    partition_columns = snapshot.partition_columns
    fmt = ds.ParquetFileFormat(read_options=ds.ParquetReadOptions(coerce_int96_timestamp_unit="us"))
    storage = h.storage
    if storage.is_local:
        filesystem: pafs.FileSystem = pafs.LocalFileSystem()
        paths: List[str] = [storage.local_path(abs_path) or abs_path for abs_path, _, _ in files]
    else:
        filesystem = pafs.PyFileSystem(_StorageFiles(storage))
        paths = [abs_path for abs_path, _, _ in files]
    partitions = _partition_expressions(snapshot, partition_columns, len(files))
    return ds.FileSystemDataset.from_paths(paths, schema=schema, format=fmt, filesystem=filesystem, partitions=partitions)


def _partition_expressions(snapshot: "Snapshot", columns: List[str], n: int) -> List[ds.Expression]:
    if not columns:
        return [ds.scalar(True)] * n
    values = _arrow.batch(snapshot.handle.partition_values(None))
    types = {f.name: f.type for f in snapshot.schema}
    # Each column as Python values once, not a lookup and a boxed scalar per file and column.
    as_py = {c: values.column(values.schema.get_field_index(c)).to_pylist() for c in columns}
    out = []
    for i in range(n):
        expr: Optional[ds.Expression] = None
        for c in columns:
            v = as_py[c][i]
            term = pc.field(c).is_null() if v is None else pc.field(c) == pa.scalar(v, types[c])
            expr = term if expr is None else expr & term
        out.append(expr)
    return out


class _StorageFiles(pafs.FileSystemHandler):
    """Read-only pyarrow file system over the table's storage (object stores): each file is
    fetched whole in one request when a fragment is opened."""

    def __init__(self, storage: Any) -> None:
        self.storage = storage

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, _StorageFiles) and other.storage is self.storage

    def __ne__(self, other: Any) -> bool:
        return not self == other

    def get_type_name(self) -> str:
        return "delta-occ-storage"

    def normalize_path(self, path: str) -> str:
        return path

    def get_file_info(self, paths: List[str]) -> List[pafs.FileInfo]:
        return [pafs.FileInfo(p, pafs.FileType.File, size=self.storage.size(p)) for p in paths]

    def open_input_file(self, path: str) -> pa.NativeFile:
        return pa.BufferReader(self.storage.read(path))

    def open_input_stream(self, path: str) -> pa.NativeFile:
        return self.open_input_file(path)

    def _read_only(self, *args: Any, **kwargs: Any) -> Any:
        raise pa.ArrowNotImplementedError("a delta-occ dataset is read-only")

    get_file_info_selector = create_dir = delete_dir = delete_dir_contents = delete_root_dir_contents = _read_only
    delete_file = move = copy_file = open_output_stream = open_append_stream = _read_only
