"""Isolation levels (concurrency.md §2)."""

from __future__ import annotations

import enum
from typing import Union

from . import _core


class IsolationLevel(str, enum.Enum):
    """``SERIALIZABLE`` and ``WRITE_SERIALIZABLE`` are table levels (WriteSerializable is the
    default when ``delta.isolationLevel`` is absent). ``SNAPSHOT_ISOLATION`` is only used for
    commits whose file actions all have ``dataChange=false`` (compaction)."""

    SERIALIZABLE = "Serializable"
    WRITE_SERIALIZABLE = "WriteSerializable"
    SNAPSHOT_ISOLATION = "SnapshotIsolation"

    @classmethod
    def parse(cls, value: Union[str, "IsolationLevel"]) -> "IsolationLevel":
        """Accept a level or its name in any letter case; ``ValueError`` names the valid levels."""
        if isinstance(value, IsolationLevel):
            return value
        if not isinstance(value, str):
            raise TypeError(f"isolation level must be a str or IsolationLevel, got {type(value).__name__}")
        return cls(_core.parse_isolation_level(value))

    def __str__(self) -> str:
        return self.value
