"""How rows leave a file (the DV-or-rewrite choice), the same on every engine so that they leave
the same files and DVs behind (tests/test_spark_engine.py holds them to it)."""

from __future__ import annotations

import enum


class Removal(enum.Enum):
    #: Every live row of the file goes: remove the file, nothing to write again.
    FILE = "file"
    #: Mark the rows in the file's deletion vector; the file stays.
    DELETION_VECTOR = "deletion vector"
    #: Remove the file and write its other live rows again (tables without deletion vectors).
    REWRITE = "rewrite"


def choose(hits: int, live: int, dv_enabled: bool) -> Removal:
    """The removal of ``hits`` of a file's ``live`` rows."""
    if hits >= live:
        return Removal.FILE
    return Removal.DELETION_VECTOR if dv_enabled else Removal.REWRITE


__all__ = ["Removal", "choose"]
