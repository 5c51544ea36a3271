"""The commitInfo ``operation``, ``operationParameters`` and ``operationMetrics`` of each operation,
as Delta names them (the same for every engine, so that their commits read the same)."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple


class OperationRecord(NamedTuple):
    operation: str
    parameters: Dict[str, Any]
    metrics: Dict[str, int]


def _predicate(where: Optional[str]) -> str:
    return where if where is not None else "true"


def append(rows: int, files: int) -> OperationRecord:
    return OperationRecord("WRITE", {"mode": "Append"}, {"numOutputRows": rows, "numFiles": files})


def overwrite(replace_where: Optional[str], rows: int, removed: int) -> OperationRecord:
    params: Dict[str, Any] = {"mode": "Overwrite"}
    if replace_where is not None:
        params["predicate"] = replace_where
    return OperationRecord("WRITE", params, {"numOutputRows": rows, "numRemovedRows": removed})


def delete(where: Optional[str], deleted: int) -> OperationRecord:
    return OperationRecord("DELETE", {"predicate": _predicate(where)}, {"numDeletedRows": deleted})


def update(where: Optional[str], set_: Mapping[str, str], updated: int) -> OperationRecord:
    return OperationRecord("UPDATE", {"predicate": _predicate(where), "set": dict(set_)}, {"numUpdatedRows": updated})


def merge(
    on: str, read_where: Optional[str], counts: Mapping[str, int], inserted: int, clauses: Sequence[Tuple[str, str, Optional[str]]] = (),
) -> OperationRecord:
    """Delta's MERGE record: the clauses of each group as ``matchedPredicates``,
    ``notMatchedPredicates`` and ``notMatchedBySourcePredicates`` (JSON lists of ``actionType``
    and, where given, ``predicate``), and the rows per group. ``counts``: ``matched_updated``,
    ``matched_deleted``, ``by_source_updated``, ``by_source_deleted``; ``clauses``: (group key,
    action, condition) in call order, group keys ``matched`` / ``notMatched`` / ``notMatchedBySource``."""
    params: Dict[str, Any] = {"predicate": on, "readPredicate": _predicate(read_where)}
    for key in ("matched", "notMatched", "notMatchedBySource"):
        mine = [{"actionType": action.lower(), **({"predicate": cond} if cond is not None else {})} for group, action, cond in clauses if group == key]
        params[f"{key}Predicates"] = json.dumps(mine)
    return OperationRecord(
        "MERGE",
        params,
        {
            "numTargetRowsUpdated": counts["matched_updated"] + counts["by_source_updated"],
            "numTargetRowsDeleted": counts["matched_deleted"] + counts["by_source_deleted"],
            "numTargetRowsInserted": inserted,
            "numTargetRowsMatchedUpdated": counts["matched_updated"],
            "numTargetRowsMatchedDeleted": counts["matched_deleted"],
            "numTargetRowsNotMatchedBySourceUpdated": counts["by_source_updated"],
            "numTargetRowsNotMatchedBySourceDeleted": counts["by_source_deleted"],
        },
    )


def optimize(
    where: Optional[str], target: int, bins: Sequence[Sequence[Any]], rows: int, zorder_by: Sequence[str] = (), cluster_by: Sequence[str] = ()
) -> OperationRecord:
    """Delta's OPTIMIZE parameter and metric names: ``zOrderBy``, ``clusterBy``,
    ``numRemovedFiles`` (the core adds ``numAddedFiles``)."""
    params = {"predicate": json.dumps([where] if where else []), "targetFileSize": str(target)}
    if zorder_by:
        params["zOrderBy"] = json.dumps(list(zorder_by))
    if cluster_by:
        params["clusterBy"] = json.dumps(list(cluster_by))
    return OperationRecord(
        "OPTIMIZE",
        params,
        {"numBins": len(bins), "numRemovedFiles": sum(len(b) for b in bins), "numOutputRows": rows},
    )


def purge(bins: Sequence[Sequence[Any]], rows: int) -> OperationRecord:
    """delta-spark's REORG TABLE ... APPLY (PURGE) record."""
    return OperationRecord(
        "REORG",
        {"predicate": "[]", "applyPurge": "true"},
        {"numBins": len(bins), "numRemovedFiles": sum(len(b) for b in bins), "numOutputRows": rows},
    )


def combined(records: List[OperationRecord]) -> OperationRecord:
    """One commit's record for the operations of one transaction: the operation itself when there
    is one; else ``WRITE`` listing them, with their metrics summed."""
    if len(records) == 1:
        return records[0]
    if not records:
        return OperationRecord("WRITE", {}, {})
    metrics: Dict[str, int] = {}
    for r in records:
        for k, v in r.metrics.items():
            metrics[k] = metrics.get(k, 0) + v
    return OperationRecord("WRITE", {"operations": [{"operation": r.operation, **r.parameters} for r in records]}, metrics)


__all__ = ["OperationRecord", "append", "overwrite", "delete", "update", "merge", "optimize", "combined"]
