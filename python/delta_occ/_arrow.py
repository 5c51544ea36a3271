"""Arrow data from the core through the public Arrow PyCapsule interface (no pyarrow internals)."""

from __future__ import annotations

from typing import Any, Iterable, Optional, Tuple

import pyarrow as pa


class _Capsules:
    """A (schema, array) capsule pair exposed as ``__arrow_c_array__`` for ``pa.record_batch``."""

    __slots__ = ("_pair",)

    def __init__(self, pair: Tuple[Any, Any]) -> None:
        self._pair = pair

    def __arrow_c_array__(self, requested_schema: Optional[Any] = None) -> Tuple[Any, Any]:
        return self._pair


class _SchemaCapsule:
    """An ``arrow_schema`` capsule exposed as ``__arrow_c_schema__`` for ``pa.schema``."""

    __slots__ = ("_capsule",)

    def __init__(self, capsule: Any) -> None:
        self._capsule = capsule

    def __arrow_c_schema__(self) -> Any:
        return self._capsule


def schema(capsule: Any) -> pa.Schema:
    """A schema the core handed over as a capsule."""
    return pa.schema(_SchemaCapsule(capsule))


def batch(pair: Tuple[Any, Any]) -> pa.RecordBatch:
    """One record batch the core handed over as capsules."""
    return pa.record_batch(_Capsules(pair))


def array(pair: Tuple[Any, Any]) -> pa.Array:
    """One array the core handed over as capsules."""
    return pa.array(_Capsules(pair))


def table(pairs: Iterable[Tuple[Any, Any]]) -> pa.Table:
    """The batches as one table (no copy)."""
    return pa.Table.from_batches([batch(p) for p in pairs])


def array_capsules(values: Any) -> Tuple[Any, Any]:
    """A pyarrow array or chunked array as one array's capsules for the core (chunks combined)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    return values.__arrow_c_array__()
