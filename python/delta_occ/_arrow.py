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


def batch(pair: Tuple[Any, Any]) -> pa.RecordBatch:
    """One record batch the core handed over as capsules."""
    return pa.record_batch(_Capsules(pair))


def table(pairs: Iterable[Tuple[Any, Any]]) -> pa.Table:
    """The batches as one table (no copy)."""
    return pa.Table.from_batches([batch(p) for p in pairs])
