"""Every error delta-occ raises (concurrency.md §6).

Catching :class:`DeltaOccError` catches everything; catching
:class:`DeltaConcurrentModificationException` catches every write conflict. Conflict class names
follow delta-spark's ``delta.exceptions`` so user code reads the same.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

__all__ = [
    "DeltaOccError",
    "DeltaConcurrentModificationException",
    "ConcurrentWriteException",
    "MetadataChangedException",
    "ProtocolChangedException",
    "ConcurrentAppendException",
    "ConcurrentDeleteReadException",
    "ConcurrentDeleteDeleteException",
    "ConcurrentTransactionException",
    "TableNotFoundError",
    "TableAlreadyExistsError",
    "CorruptLogError",
    "VersionNotFoundError",
    "UnsupportedFeatureError",
    "DeletionVectorError",
    "PredicateError",
    "CommitRetriesExceededError",
    "CommitInterruptedError",
    "InvalidArgumentError",
    "SchemaMismatchError",
    "DeltaIOError",
]


class DeltaOccError(Exception):
    """Base of every error delta-occ raises. Keyword arguments become attributes."""

    def __init__(self, message: str = "", **attributes: Any) -> None:
        super().__init__(message)
        self.message = message
        for key, value in attributes.items():
            setattr(self, key, value)


class DeltaConcurrentModificationException(DeltaOccError):
    """A concurrent commit conflicts with this transaction.

    Attributes: ``winning_version``, ``winning_operation``, ``table``, ``isolation_level``,
    ``partition_hint`` (dict or None), ``conflicting_file``, ``winning_commit_info`` (dict) and,
    for row-level conflicts, ``overlapping_rows``.
    """

    winning_version: Optional[int] = None
    winning_operation: Optional[str] = None
    table: Optional[str] = None
    isolation_level: Optional[str] = None
    partition_hint: Optional[dict] = None
    conflicting_file: Optional[str] = None
    winning_commit_info: Optional[dict] = None
    overlapping_rows: Optional[int] = None

    def explain(self) -> Dict[str, Any]:
        """The winning version, the rule of concurrency.md that failed, the file and the
        partition involved (see :mod:`delta_occ.explain`)."""
        from .explain import conflict

        return conflict(self)


class ConcurrentWriteException(DeltaConcurrentModificationException):
    """A concurrent transaction wrote data this one could not be reconciled with."""


class MetadataChangedException(DeltaConcurrentModificationException):
    """A concurrent commit changed the table metadata (schema, partitioning, properties)."""


class ProtocolChangedException(DeltaConcurrentModificationException):
    """A concurrent commit changed the protocol, or both transactions created the table."""


class ConcurrentAppendException(DeltaConcurrentModificationException):
    """A concurrent commit added files this transaction should have read."""


class ConcurrentDeleteReadException(DeltaConcurrentModificationException):
    """A concurrent commit removed a file (or rows) this transaction read."""


class ConcurrentDeleteDeleteException(DeltaConcurrentModificationException):
    """A concurrent commit removed a file (or rows) this transaction also removes."""


class ConcurrentTransactionException(DeltaConcurrentModificationException):
    """Application transaction ids or metadata domains collided."""


class TableNotFoundError(DeltaOccError, FileNotFoundError):
    """There is no Delta table at the location (attribute ``table``)."""


class TableAlreadyExistsError(DeltaOccError, FileExistsError):
    """``Table.create`` found an existing table (attribute ``table``)."""


class CorruptLogError(DeltaOccError):
    """The log is unreadable or inconsistent (attributes ``file`` and ``version``)."""


class VersionNotFoundError(DeltaOccError, LookupError):
    """Time travel to a version the log cannot reconstruct (attributes ``table``, ``version``)."""


class UnsupportedFeatureError(DeltaOccError):
    """The table needs a protocol version or feature delta-occ does not support."""


class DeletionVectorError(DeltaOccError):
    """A deletion vector is missing, truncated, or fails its size/checksum/cardinality checks."""


class PredicateError(DeltaOccError, ValueError):
    """Bad ``where`` text; attributes ``position`` and ``reason``."""


class CommitRetriesExceededError(DeltaOccError):
    """The commit loop ran out of attempts or time; attribute ``versions_tried``."""


class CommitInterruptedError(DeltaOccError, KeyboardInterrupt):
    """Ctrl-C (SIGINT) while the commit loop was backing off between attempts: nothing was
    published. A KeyboardInterrupt too, so ``except KeyboardInterrupt`` still sees it."""


class InvalidArgumentError(DeltaOccError, ValueError):
    """A bad argument (unknown column, invalid property value, ...)."""


class SchemaMismatchError(InvalidArgumentError):
    """Data that does not fit the table schema (Delta's schema enforcement): a column the table
    lacks (without ``schema_mode="merge"``), a missing NOT NULL column, a type that is neither
    the column's nor a widening of it, or MERGE keys of incompatible types. Attributes
    ``column``, ``table_type`` and ``data_type`` (None where they do not apply)."""

    column: Optional[str] = None
    table_type: Optional[str] = None
    data_type: Optional[str] = None


class DeltaIOError(DeltaOccError, OSError):
    """An operating-system I/O error, with the file it happened on (attribute ``file``)."""
