"""Overwrite: replace all rows, the rows matching ``replace_where`` (new rows must match it too),
or with ``dynamic_partitions`` the partitions present in the new rows."""

from __future__ import annotations

from typing import Any, List, Optional, Protocol, Tuple, TypeVar

import pyarrow as pa

from .. import _arrow, _core
from ..exceptions import InvalidArgumentError
from ..instant import Now
from . import commit_info
from .append import Writer

Rows = TypeVar("Rows")


class Replacer(Writer[Rows], Protocol[Rows]):
    def partition_tuples(self, rows: Rows) -> pa.Table:
        """The partition columns of ``rows`` (typed; repeats allowed)."""
        ...

    def count_outside(self, rows: Rows, where: str) -> int:
        """How many of ``rows`` do not satisfy ``where``."""
        ...

    def replace(self, where: Optional[str], rows: Rows) -> Tuple[int, int]:
        """Remove the rows matching ``where`` and write ``rows``: (rows removed, rows written)."""
        ...


def overwrite(
    engine: Replacer[Rows], data: Any, replace_where: Optional[str] = None, *, dynamic_partitions: bool = False, schema_mode: Optional[str] = None
) -> None:
    replace_where = Now().text(replace_where)
    if schema_mode == "overwrite" and (replace_where is not None or dynamic_partitions):
        raise InvalidArgumentError('schema_mode="overwrite" replaces the table schema: it needs an overwrite of the whole table (no replace_where or dynamic_partitions)')
    rows = engine.conform(data, schema_mode)
    where = replace_where
    if dynamic_partitions:
        if replace_where is not None:
            raise InvalidArgumentError("give replace_where or dynamic_partitions, not both")
        if not engine.partition_columns:
            raise InvalidArgumentError("dynamic partition overwrite needs a partitioned table")
        where = partitions_predicate(engine.partition_columns, engine.partition_tuples(rows))
    elif replace_where is not None:
        bad = engine.count_outside(rows, replace_where)
        if bad:
            raise InvalidArgumentError(f"{bad} row(s) of the new data do not satisfy replace_where {replace_where!r}")
    removed, written = engine.replace(where, rows)
    engine.record(commit_info.overwrite(where, written, removed))


def partitions_predicate(partition_columns: List[str], tuples: pa.Table) -> str:
    """The partitions of ``tuples`` as a predicate (NULL as ``IS NULL``; FALSE for none)."""
    if tuples.num_rows == 0:
        return "FALSE"
    groups = tuples.select(partition_columns).group_by(partition_columns, use_threads=False).aggregate([])
    literals = {c: _core.sql_literals(_arrow.array_capsules(groups.column(c))) for c in partition_columns}
    terms = []
    for i in range(groups.num_rows):
        parts = []
        for c in partition_columns:
            lit = literals[c][i]
            parts.append(f"`{c}` IS NULL" if lit == "NULL" else f"`{c}` = {lit}")
        terms.append("(" + " AND ".join(parts) + ")")
    return " OR ".join(terms)


__all__ = ["Replacer", "overwrite", "partitions_predicate"]
