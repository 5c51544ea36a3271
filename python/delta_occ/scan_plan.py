"""The core's scan plan (``SnapshotHandle.scan_plan``) as Arrow, for every engine that reads live
files itself: per file its fixed columns (``file``, ``path``, ``abs_path``, ``key``, ``size``,
``num_records``, ``dv_cardinality``, ``base_row_id``, ``default_row_commit_version``), then its
typed partition values. The two are split by
position, so that a partition column named like a fixed column (``key``, ``size``, ``path``) is
never taken for it."""

from __future__ import annotations

from typing import Any, List, NamedTuple, Sequence

import pyarrow as pa

from . import _arrow


class ScanPlanColumns(NamedTuple):
    #: One row per planned file: the fixed columns only.
    files: pa.Table
    #: One row per planned file: its partition values, one column per partition column (table order).
    partition_values: pa.Table


def scan_plan(snap_handle: Any, paths: Sequence[str], partition_columns: List[str]) -> ScanPlanColumns:
    """The plan of ``paths`` (live files of the snapshot), its fixed columns apart from its
    partition values."""
    plan = _arrow.table([snap_handle.scan_plan(list(paths))])
    fixed = plan.num_columns - len(partition_columns)
    values = pa.Table.from_arrays(plan.columns[fixed:], names=list(partition_columns))
    return ScanPlanColumns(plan.select(list(range(fixed))), values)


__all__ = ["ScanPlanColumns", "scan_plan"]
