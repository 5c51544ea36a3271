"""Reading the columns of one data file: column mapping resolved to logical names and the table's
types (``delta_occ.reader`` reads a snapshot's files with it)."""

from __future__ import annotations

import json
from typing import Any, List, NamedTuple, Optional, Sequence, Tuple

import pyarrow as pa
import pyarrow.parquet as pq

from . import _arrow, _core
from ._schema import delta_schema_to_arrow, field_id, physical_schema


class DataColumns(NamedTuple):
    """Table columns to read from data files: as users see them (logical names and types) and as
    the files hold them (physical names, field ids), in the same order; both the core's
    (``_schema``)."""

    logical: List[pa.Field]
    physical: List[pa.Field]


def data_columns(fields: Sequence[dict], mode: str) -> DataColumns:
    """:class:`DataColumns` of Delta schema fields under column mapping ``mode``."""
    schema_json = json.dumps({"type": "struct", "fields": list(fields)})
    return DataColumns(list(delta_schema_to_arrow(schema_json)), list(physical_schema(schema_json, mode)))


def _find_all(file_fields: Sequence[pa.Field], physical: Sequence[pa.Field]) -> List[Optional[int]]:
    """Index of the file column holding each table field: the core's resolver (field id in id
    mode, the physical name, then any letter case), shared with the row-level conflict checker."""
    return _core.file_column_indexes([(f.name, field_id(f)) for f in file_fields], _wanted(physical))


def _wanted(physical: Sequence[pa.Field]) -> List[Tuple[str, Optional[int]]]:
    """What the core's resolver looks for per table field: its physical name and field id."""
    return [(f.name, field_id(f)) for f in physical]


def _conform(arr: pa.Array, logical: pa.DataType, physical: pa.DataType) -> pa.Array:
    """Rename nested physical fields to logical names and cast to the table's types."""
    if pa.types.is_struct(logical):
        src_fields = [arr.type.field(i) for i in range(arr.type.num_fields)]
        wanted = [physical.field(i) for i in range(physical.num_fields)]
        fields = [logical.field(i) for i in range(logical.num_fields)]
        children = []
        for f, p, i in zip(fields, wanted, _find_all(src_fields, wanted)):
            children.append(pa.nulls(len(arr), f.type) if i is None else _conform(arr.field(i), f.type, p.type))
        mask = arr.is_null() if arr.null_count else None
        return pa.StructArray.from_arrays(children, fields=[f.with_nullable(True) for f in fields], mask=mask)
    if pa.types.is_list(logical):
        if pa.types.is_large_list(arr.type):
            arr = arr.cast(pa.list_(arr.type.value_type))
        values = _conform(arr.values, logical.value_type, physical.value_type)
        mask = arr.is_null() if arr.null_count else None
        return pa.ListArray.from_arrays(arr.offsets, values, type=logical, mask=mask)
    if pa.types.is_map(logical):
        keys = _conform(arr.keys, logical.key_type, physical.key_type)
        items = _conform(arr.items, logical.item_type, physical.item_type)
        mask = arr.is_null() if arr.null_count else None
        return pa.MapArray.from_arrays(arr.offsets, keys, items, type=logical, mask=mask)
    if arr.type != logical:
        arr = arr.cast(logical)
    return arr


def _one_chunk(col: pa.ChunkedArray) -> pa.Array:
    """The column as one array; a single chunk as it is (``combine_chunks`` copies even that)."""
    return col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()


class FileRead(NamedTuple):
    """What `read_file` read."""

    #: {logical name: array} of the rows read.
    data: dict
    #: Rows in the file (physical, before any DV).
    rows: int
    #: When a filter skipped row groups: ``(first row, rows)`` of each group read, in file order;
    #: None when every row was read.
    kept: Optional[List[Tuple[int, int]]] = None


def read_file(storage: Any, path: str, columns: DataColumns, filter: Any = None) -> FileRead:
    """Read the data ``columns`` of one file of the table's ``storage`` (a ``_core.StorageHandle``),
    only the row groups ``filter`` (a ``_core.RowGroupFilter``) may match when given.

    The core reads them (parquet-rs, the GIL released, through the table's storage: a local disk
    or an object store; the columns found by the checker's resolver, and INT96 timestamps at
    microseconds as Spark means them): 100 files of 1,000 rows in 7 ms against pyarrow's 19 ms.
    The one file it does not decode, an INT96 timestamp nested in a struct, list or map, is read
    by pyarrow."""
    got = storage.read_parquet_columns(path, _wanted(columns.physical), filter)
    if got is None:
        local = storage.local_path(path)
        data, n = read_file_pyarrow(local if local is not None else pa.BufferReader(storage.read(path)), columns)
        return FileRead(data, n)
    pairs, n, kept = got
    read = n if kept is None else sum(k[1] for k in kept)
    return FileRead(_by_name(columns, [None if p is None else _arrow.array(p) for p in pairs], read), n, kept)


def read_file_pyarrow(source: Any, columns: DataColumns) -> "tuple[dict, int]":
    """`read_file` by pyarrow, for the one file the core does not decode (and, in tests, as the
    reference reader): ``source`` is a local path or the file's bytes. ``pre_buffer=False``:
    pre-buffering (coalesced reads through the I/O thread pool, meant for object stores) made
    reading 100 local files of 1,000 rows about 1.6x slower. One thread: the engine already reads
    several files at a time."""
    pf = pq.ParquetFile(source, coerce_int96_timestamp_unit="us", pre_buffer=False)
    file_fields = list(pf.schema_arrow)
    found = _find_all(file_fields, columns.physical)
    wanted = {f.name: file_fields[i].name for f, i in zip(columns.logical, found) if i is not None}
    n = pf.metadata.num_rows
    names = sorted(set(wanted.values()))
    raw = pf.read(columns=names, use_threads=False) if wanted else None
    arrays = [_one_chunk(raw.column(wanted[f.name])) if raw is not None and f.name in wanted else None for f in columns.logical]
    return _by_name(columns, arrays, n), n


def _by_name(columns: DataColumns, arrays: Sequence[Optional[pa.Array]], n: int) -> dict:
    """{logical name: column in the table's type}, NULLs for a column the file lacks."""
    return {
        f.name: pa.nulls(n, f.type) if a is None else _conform(a, f.type, p.type)
        for f, p, a in zip(columns.logical, columns.physical, arrays)
    }


def keep_mask(handle: Any, log_path: str, n: int, dv: Any = None) -> pa.Array:
    """Boolean mask of the file's rows its DV keeps (checked against the file's row count); from
    ``dv`` (a ``_core.DeletionVector`` of the file) when it was fetched already."""
    bits = handle.keep_mask(log_path, n) if dv is None else dv.keep_mask(n)
    return pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(bits)])
