"""Append: conform the data to the table, write it, record a blind ``WRITE`` (reads nothing; a
schema change staged with it makes the transaction read the whole table)."""

from __future__ import annotations

from typing import Any, Optional, Protocol, TypeVar

from .. import change_data
from ..exceptions import InvalidArgumentError
from . import commit_info
from .protocols import Engine, Written

#: Rows written by an append (or an overwrite) are recorded as inserts, where a change feed
#: records them at all (a commit's adds are its inserts unless it also wrote change files).
RECORDED_AS: change_data.Kinds = (None, change_data.INSERT)


def recorded(written: Any) -> change_data.Changes:
    """The change-feed entries of rows an append or overwrite writes."""
    return change_data.entries(RECORDED_AS, written=written)

#: An engine's rows (pa.Table, DataFrame).
Rows = TypeVar("Rows")


class Writer(Engine, Protocol[Rows]):
    def conform(self, data: Any, schema_mode: Optional[str]) -> Rows:
        """``data`` as rows of the table schema (``schema_mode="merge"`` first adds the columns
        the table lacks, where the engine supports it)."""
        ...

    def write(self, rows: Rows) -> Written:
        """Write new rows and stage their adds."""
        ...


def append(engine: Writer[Rows], data: Any, schema_mode: Optional[str] = None) -> None:
    if schema_mode == "overwrite":
        raise InvalidArgumentError('schema_mode="overwrite" replaces the table schema: it needs overwrite() of the whole table, not append()')
    written = engine.write(engine.conform(data, schema_mode))
    engine.record(commit_info.append(written.rows, written.files))


__all__ = ["Writer", "append"]
