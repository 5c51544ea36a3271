"""VACUUM (issue 31): delete the data and deletion-vector files that no version inside the
retention window can read. The rules (what stays, what a shorter retention needs) are the core's
(``delta_occ_core::vacuum``); this module takes the arguments and shapes the result."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, List, Optional, Tuple

from .exceptions import InvalidArgumentError


@dataclasses.dataclass(frozen=True)
class VacuumResult:
    """What a VACUUM deleted (``dry_run``: would delete)."""

    #: The table version whose files (and tombstones inside the window) were kept.
    version: int
    retention_hours: float
    #: Files last modified before this instant (ms since the epoch) that no version inside the
    #: window references were deleted.
    cutoff_ms: int
    #: ``(path relative to the table root, size in bytes)``, in path order.
    files: List[Tuple[str, int]]
    bytes: int
    #: Files kept because a version inside the window references them.
    kept_referenced: int
    #: Unreferenced files kept because they are newer than the cutoff (a writer may be about to
    #: commit them).
    kept_recent: int
    dry_run: bool

    @property
    def paths(self) -> List[str]:
        return [p for p, _ in self.files]


def retention_ms(retention_hours: Optional[float]) -> Optional[int]:
    """``retention_hours`` in milliseconds (None: the table's ``delta.deletedFileRetentionDuration``)."""
    if retention_hours is None:
        return None
    if isinstance(retention_hours, bool) or not isinstance(retention_hours, (int, float)) or not math.isfinite(retention_hours) or retention_hours < 0:
        raise InvalidArgumentError(f"retention_hours must be a number of hours >= 0 (or None for the table's retention), got {retention_hours!r}")
    return int(round(retention_hours * 3_600_000))


def vacuum(snapshot: Any, retention_hours: Optional[float] = None, dry_run: bool = False, enforce_retention_duration: bool = True) -> VacuumResult:
    """VACUUM the table of ``snapshot`` (a ``_core.SnapshotHandle`` of its latest version)."""
    r = snapshot.vacuum(retention_ms(retention_hours), bool(enforce_retention_duration), bool(dry_run))
    return VacuumResult(
        version=r["version"], retention_hours=r["retention_ms"] / 3_600_000, cutoff_ms=r["cutoff_ms"],
        files=[(str(p), int(n)) for p, n in r["files"]], bytes=r["bytes"], kept_referenced=r["kept_referenced"],
        kept_recent=r["kept_recent"], dry_run=r["dry_run"],
    )


__all__ = ["VacuumResult", "vacuum"]
