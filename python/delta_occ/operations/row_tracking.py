"""Row tracking on the writing side (the ids themselves are handed out by the core's commit,
``rust/core/src/row_tracking.rs``). A table with ``delta.enableRowTracking=true`` promises that a
row keeps its id and commit version when it is copied into another file, which needs them written
into the file: the materialized columns the table's configuration names. A row's id is the
materialized one where its file holds it, else the file's ``baseRowId`` plus the row's physical
position; its commit version likewise, else the file's ``defaultRowCommitVersion``
(protocol-notes §6).

Both engines write them wherever they copy rows (rows read with ``ROW_ID`` /
``ROW_COMMIT_VERSION``, by ``ids_of`` here and by the same rule in the Spark scan, written into the
materialized columns): OPTIMIZE (bin-packing, Z-order, clustering), DV purges and rewrites keep
both; UPDATE and MERGE's update keep the id and take the new commit version (``updated``).
Appended and inserted rows take fresh ids (NULL in the materialized columns)."""

from __future__ import annotations

import functools
from typing import Mapping, Optional, Tuple

import pyarrow as pa

from .. import _core, _rows
from ..exceptions import UnsupportedFeatureError

PROPERTY = "delta.enableRowTracking"
MATERIALIZED_ID = "delta.rowTracking.materializedRowIdColumnName"
MATERIALIZED_VERSION = "delta.rowTracking.materializedRowCommitVersionColumnName"

#: Columns carrying each copied row's id and commit version from the read to the write (never
#: table columns: the write puts them in the materialized columns).
ROW_ID = "__delta_occ_row_id"
ROW_COMMIT_VERSION = "__delta_occ_row_commit_version"


def enabled(properties: Mapping[str, str]) -> bool:
    """Whether rows must keep their ids when copied."""
    return str(properties.get(PROPERTY, "false")).lower() == "true"


def materialized(properties: Mapping[str, str]) -> Optional[Tuple[str, str]]:
    """The physical names of the materialized row-id and row-commit-version columns, when rows
    keep their ids (a table enabled without naming them cannot keep them: ``None``)."""
    if not enabled(properties):
        return None
    names = properties.get(MATERIALIZED_ID), properties.get(MATERIALIZED_VERSION)
    return (names[0], names[1]) if names[0] and names[1] else None


def ids_of(
    materialized_ids: pa.Array, materialized_versions: pa.Array, positions: pa.Array, base_row_id: Optional[int], default_version: Optional[int], table: str, path: str
) -> Tuple[pa.Array, pa.Array]:
    """The row ids and commit versions of the rows of one file at ``positions`` (physical),
    given the file's materialized columns at those rows (NULL where not materialized)."""
    if (base_row_id is None and materialized_ids.null_count) or (default_version is None and materialized_versions.null_count):
        raise UnsupportedFeatureError(
            f"{table} has {PROPERTY}=true but {path} has no baseRowId/defaultRowCommitVersion for rows without materialized ids "
            "(written by a writer that did not assign row ids; enabling row tracking with delta-occ assigns them to every file)",
            table=table, feature="rowTracking",
        )
    n = len(positions)
    inputs = pa.table({
        "materialized_row_id": materialized_ids.cast(pa.int64()),
        "base_row_id": pa.repeat(pa.scalar(base_row_id, pa.int64()), n),
        "row_position": positions.cast(pa.int64()),
        "materialized_row_commit_version": materialized_versions.cast(pa.int64()),
        "default_row_commit_version": pa.repeat(pa.scalar(default_version, pa.int64()), n),
    })
    ids, versions = (_rows.values(inputs, rule).combine_chunks() if n else pa.array([], pa.int64()) for rule in _rules())
    return ids, versions


def rule_inputs() -> pa.Schema:
    """What the core's row-id rules (``_core.ROW_ID_RULE``, ``ROW_COMMIT_VERSION_RULE``) read."""
    return pa.schema([(n, pa.int64()) for n in RULE_INPUTS])


#: The inputs of the core's row-id rules, all BIGINT.
RULE_INPUTS = ["materialized_row_id", "base_row_id", "row_position", "materialized_row_commit_version", "default_row_commit_version"]


@functools.lru_cache(maxsize=1)
def _rules() -> Tuple[_core.RowExpr, _core.RowExpr]:
    """The core's row-id rules, compiled once."""
    return _rows.compile(_core.ROW_ID_RULE, rule_inputs()), _rows.compile(_core.ROW_COMMIT_VERSION_RULE, rule_inputs())


def updated(new: pa.Table, old: pa.Table) -> pa.Table:
    """Rows an UPDATE (or MERGE's update) wrote in place of ``old`` (row for row): each keeps
    the old row's id; its commit version is the update's (NULL: the new file's
    defaultRowCommitVersion). Unchanged when ``old`` carries no ids."""
    if ROW_ID not in old.column_names:
        return new
    return new.append_column(ROW_ID, old.column(ROW_ID)).append_column(ROW_COMMIT_VERSION, pa.nulls(new.num_rows, pa.int64()))


__all__ = [
    "PROPERTY", "MATERIALIZED_ID", "MATERIALIZED_VERSION", "ROW_ID", "ROW_COMMIT_VERSION", "enabled", "materialized", "ids_of",
    "updated",
]
