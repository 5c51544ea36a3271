"""Data as every operation that takes rows takes it (``append``, ``overwrite``, a MERGE source,
``write_table``; the embedded engine): a pyarrow ``Table``, ``RecordBatch`` or
``RecordBatchReader``, a list of record batches, a pandas or polars ``DataFrame``, or anything
that exports an Arrow C stream (``__arrow_c_stream__``: DuckDB results, polars, arro3, nanoarrow)
or array (``__arrow_c_array__``).

Neither pandas nor polars is imported here: a DataFrame is recognised by its class, so a
process that never hands one in never loads them. A pandas DataFrame's index is not written (as
``pa.Table.from_pandas(df, preserve_index=False)``): only its columns are rows' values."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from .exceptions import InvalidArgumentError

#: What a message names as accepted.
ACCEPTED = "a pyarrow Table, RecordBatch or RecordBatchReader, a list of RecordBatches, a pandas or polars DataFrame, or an object with __arrow_c_stream__"


def _is_class(data: Any, module: str, name: str) -> bool:
    """``data`` is an instance of ``module``'s class ``name`` (or of a subclass of it), decided
    without importing ``module``."""
    return any(c.__name__ == name and (c.__module__ == module or c.__module__.startswith(module + ".")) for c in type(data).__mro__)


def is_pandas(data: Any) -> bool:
    return _is_class(data, "pandas", "DataFrame")


def as_table(data: Any, what: str = "data") -> pa.Table:
    """``data`` as a pyarrow Table (a reader or stream read to its end), view types (polars'
    strings) as their plain forms. ``what``: the argument's name, for the InvalidArgumentError
    anything else raises."""
    table = _read(data, what)
    schema = pa.schema([f.with_type(_plain(f.type)) for f in table.schema], metadata=table.schema.metadata)
    return table if schema == table.schema else table.cast(schema)


_IS_LIST_VIEW = getattr(pa.types, "is_list_view", lambda t: False)
_IS_LARGE_LIST_VIEW = getattr(pa.types, "is_large_list_view", lambda t: False)


def _plain(t: pa.DataType) -> pa.DataType:
    """``t`` with string / binary / list views as string, binary and lists (what Delta's types
    are read as, and what every pyarrow kernel takes: a MERGE join cannot take a view)."""
    name = str(t)  # (views are pyarrow >= 16; the names are what older versions can compare)
    if name == "string_view":
        return pa.string()
    if name == "binary_view":
        return pa.binary()
    large_view = _IS_LARGE_LIST_VIEW(t)
    if _IS_LIST_VIEW(t) or large_view or pa.types.is_list(t) or pa.types.is_large_list(t):
        item = t.value_field.with_type(_plain(t.value_type))
        return pa.large_list(item) if pa.types.is_large_list(t) or large_view else pa.list_(item)
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_plain(f.type)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(_plain(t.key_type)), t.item_field.with_type(_plain(t.item_type)), t.keys_sorted)
    return t


def _read(data: Any, what: str) -> pa.Table:
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.read_all()
    if is_pandas(data):
        # Before the C stream: pandas' own export writes a non-default index as a column.
        return pa.Table.from_pandas(data, preserve_index=False)
    if _is_class(data, "polars", "LazyFrame"):
        raise InvalidArgumentError(f"{what} is a polars LazyFrame: collect() it first (a write needs its rows)")
    if isinstance(data, (list, tuple)):
        return _batches(data, what)
    if hasattr(data, "__arrow_c_stream__"):
        try:
            return pa.RecordBatchReader.from_stream(data).read_all()
        except (TypeError, ValueError, pa.ArrowException) as e:
            raise InvalidArgumentError(f"{what}: its Arrow C stream could not be read: {e}") from e
    if hasattr(data, "__arrow_c_array__"):
        try:
            batch = pa.record_batch(data)
        except (TypeError, ValueError, pa.ArrowException) as e:
            raise InvalidArgumentError(f"{what}: its Arrow C array could not be read: {e}") from e
        return pa.Table.from_batches([batch])
    raise InvalidArgumentError(f"{what} must be {ACCEPTED}, got {type(data).__module__}.{type(data).__name__}")


def _batches(data: Any, what: str) -> pa.Table:
    """A list of record batches (deltalake's ``Sequence[ArrowArrayExportable]``)."""
    if not data:
        raise InvalidArgumentError(f"{what} is an empty list: there is no schema to write with (pass an empty pyarrow Table instead)")
    batches = []
    for b in data:
        if isinstance(b, pa.RecordBatch):
            batches.append(b)
        elif hasattr(b, "__arrow_c_array__"):
            batches.append(pa.record_batch(b))
        else:
            raise InvalidArgumentError(f"{what}: a list must hold record batches, got an item of type {type(b).__name__}")
    try:
        return pa.Table.from_batches(batches)
    except pa.ArrowInvalid as e:
        raise InvalidArgumentError(f"{what}: the record batches do not share one schema: {e}") from e


__all__ = ["ACCEPTED", "as_table", "is_pandas"]
