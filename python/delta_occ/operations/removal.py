"""How rows leave a file (the DV-or-rewrite choice), the same on every engine so that they leave
the same files and DVs behind (tests/test_spark_engine.py holds them to it)."""

from __future__ import annotations

import enum
from typing import Optional

from . import row_tracking


class Removal(enum.Enum):
    #: Every live row of the file goes: remove the file, nothing to write again.
    FILE = "file"
    #: Mark the rows in the file's deletion vector; the file stays.
    DELETION_VECTOR = "deletion vector"
    #: Remove the file and write its other live rows again (tables without deletion vectors).
    REWRITE = "rewrite"


def choose(hits: int, live: int, dv_enabled: bool, refused: Optional[str] = None) -> Removal:
    """The removal of ``hits`` of a file's ``live`` rows. ``refused``: the table, when the engine
    may not copy its rows (``row_tracking.refusing``): a rewrite would, and is refused."""
    if hits >= live:
        return Removal.FILE
    if dv_enabled:
        return Removal.DELETION_VECTOR
    if refused is not None:
        raise row_tracking.copy_refused(refused, "removing some rows of a file without deletion vectors")
    return Removal.REWRITE


__all__ = ["Removal", "choose"]
