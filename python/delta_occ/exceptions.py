"""Every error delta-occ raises (concurrency.md §6).

Catching :class:`DeltaOccError` catches everything; catching
:class:`DeltaConcurrentModificationException` catches every write conflict. Conflict class names
follow delta-spark's ``delta.exceptions`` so user code reads the same.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

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
    "FeatureDropPendingError",
    "DeletionVectorError",
    "PredicateError",
    "CommitRetriesExceededError",
    "CommitInterruptedError",
    "InvalidArgumentError",
    "MergeCardinalityError",
    "SchemaMismatchError",
    "ConstraintViolationError",
    "DeltaIOError",
    "StorageError",
    "CommitOutcomeUnknownError",
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
    for row-level conflicts, ``overlapping_rows``. ``rule`` is the id of the rule of
    concurrency.md that failed (``"concurrent_append"``, ``"row_delete_delete"``, ...; docs/guide.md
    lists them) and ``fallback`` the id of the reason row-level concurrency fell back to file
    level (§4 rule 6), or None. Decide on these ids, never on the message's words.
    """

    winning_version: Optional[int] = None
    winning_operation: Optional[str] = None
    table: Optional[str] = None
    isolation_level: Optional[str] = None
    partition_hint: Optional[dict] = None
    conflicting_file: Optional[str] = None
    winning_commit_info: Optional[dict] = None
    overlapping_rows: Optional[int] = None

    reason: Optional[str] = None
    rule: Optional[str] = None
    fallback: Optional[str] = None
    #: Set by one-call operations: how many times the operation was executed before this
    #: conflict ended it, and the winners whose conflicts made it re-run (``rerun_on_conflict``).
    executions: int = 1
    reruns: Optional[List[Dict[str, Any]]] = None
    #: For a MERGE: the WHEN clauses behind the conflict (those that change rows of the
    #: conflicting file, or whose read covers it), as SQL; None for other operations.
    clauses: Optional[List[str]] = None

    def explain(self) -> Dict[str, Any]:
        """The winning version, the rule that failed, the file and the partition involved (the
        same answer `delta-occ explain` gives for a commit)."""
        return {
            "exception": type(self).__name__,
            "table": self.table,
            "winning_version": self.winning_version,
            "winning_operation": self.winning_operation,
            "isolation_level": self.isolation_level,
            "rule": rule_text(self.rule, self.fallback),
            "file": self.conflicting_file,
            "partition": self.partition_hint,
            "overlapping_rows": self.overlapping_rows,
            **({"clauses": self.clauses} if self.clauses is not None else {}),
            "reason": self.reason or "",
        }


def rule_text(rule: Optional[str], fallback: Optional[str] = None) -> Optional[str]:
    """The rule of concurrency.md an id names, as `explain` words it (the core owns the texts);
    a fallback's rule follows in parentheses. An id this version does not know is given as is."""
    if rule is None:
        return None
    from . import _core

    text = _core.rule_description(rule) or rule
    if fallback is not None:
        text += f" ({_core.rule_description(fallback) or fallback})"
    return text


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

    table: Optional[str] = None


class TableAlreadyExistsError(DeltaOccError, FileExistsError):
    """``Table.create`` found an existing table (attribute ``table``)."""

    table: Optional[str] = None


class CorruptLogError(DeltaOccError):
    """The log is unreadable or inconsistent (attributes ``file`` and ``version``)."""

    file: Optional[str] = None
    version: Optional[int] = None


class VersionNotFoundError(DeltaOccError, LookupError):
    """Time travel to a version the log cannot reconstruct (attributes ``table``, ``version``)."""

    table: Optional[str] = None
    version: Optional[int] = None


class UnsupportedFeatureError(DeltaOccError):
    """The table needs a protocol version or feature delta-occ does not support."""

    table: Optional[str] = None
    version: Optional[int] = None
    feature: Optional[str] = None


class FeatureDropPendingError(DeltaOccError):
    """``drop_feature`` cannot finish yet (attributes ``table``, ``version``, ``feature`` and
    ``ready_at_ms``: when running it again can downgrade the protocol, None while the feature is
    still in use). What could be done now was committed."""

    table: Optional[str] = None
    version: Optional[int] = None
    feature: Optional[str] = None
    ready_at_ms: Optional[int] = None


class DeletionVectorError(DeltaOccError):
    """A deletion vector is missing, truncated, or fails its size/checksum/cardinality checks."""

    file: Optional[str] = None


class PredicateError(DeltaOccError, ValueError):
    """Bad ``where`` text (or a bad SET / MERGE expression); attributes ``text``, ``position``,
    ``reason`` and ``problem``: ``"invalid"`` (not valid SQL, or not valid here),
    ``"unknown_column"`` (``position`` points at the name) or ``"evaluation"`` (valid, but failed
    on the rows: an overflow, a bad cast)."""

    text: Optional[str] = None
    position: Optional[int] = None
    reason: Optional[str] = None
    problem: Optional[str] = None


class CommitRetriesExceededError(DeltaOccError):
    """The commit loop ran out of attempts or time; attribute ``versions_tried``."""

    table: Optional[str] = None
    attempts: Optional[int] = None
    elapsed_ms: Optional[int] = None
    versions_tried: Optional[list] = None


class CommitInterruptedError(DeltaOccError, KeyboardInterrupt):
    """Ctrl-C (SIGINT) while the commit loop was backing off between attempts: nothing was
    published. A KeyboardInterrupt too, so ``except KeyboardInterrupt`` still sees it."""

    table: Optional[str] = None
    attempts: Optional[int] = None


class InvalidArgumentError(DeltaOccError, ValueError):
    """A bad argument (unknown column, invalid property value, ...)."""


class MergeCardinalityError(InvalidArgumentError):
    """MERGE: a target row that a MATCHED clause would change pairs with more than one source row
    (Delta's rule; nothing is written)."""


class SchemaMismatchError(InvalidArgumentError):
    """Data that does not fit the table schema (Delta's schema enforcement): a column the table
    lacks (without ``schema_mode="merge"``), a missing NOT NULL column, a type that is neither
    the column's nor a widening of it, or MERGE keys of incompatible types. Attributes
    ``column``, ``table_type`` and ``data_type`` (None where they do not apply)."""

    column: Optional[str] = None
    table_type: Optional[str] = None
    data_type: Optional[str] = None


class ConstraintViolationError(InvalidArgumentError):
    """Rows break a CHECK constraint or a column invariant of the table (the rule is FALSE or
    NULL on them): nothing was written. Attributes ``table``, ``constraint`` (its name, or the
    column of an invariant), ``expression``, ``row`` (the first such row's columns the rule
    reads) and ``rows`` (how many)."""

    table: Optional[str] = None
    constraint: Optional[str] = None
    expression: Optional[str] = None
    row: Optional[dict] = None
    rows: Optional[int] = None


class DeltaIOError(DeltaOccError, OSError):
    """An I/O error (a local disk or an object store), with the file it happened on (attribute
    ``file``)."""

    file: Optional[str] = None
    errno: Optional[int] = None


class StorageError(DeltaIOError):
    """A table's storage refused the work for a reason that retrying cannot cure; raised at
    once, before anything is written. ``problem`` says which (docs/guide.md "Tables on S3, ADLS and
    GCS"): ``unsupported_scheme`` (``dbfs:``, ``hdfs://``, ...), ``invalid_location``,
    ``invalid_options`` (an unknown storage option or a bad value), ``no_conditional_writes`` (the
    store ignores conditional creates, so commits could overwrite each other), ``bucket_not_found``,
    ``unauthenticated`` (a wrong or expired key) or ``permission_denied`` (a read-only
    credential). ``location`` is the URI it happened on; no message holds a secret."""

    problem: Optional[str] = None
    location: Optional[str] = None


class CommitOutcomeUnknownError(DeltaIOError):
    """The commit's put failed ambiguously (a timeout or a dropped connection after the bytes may
    have landed) and reading version ``version`` back kept failing: the commit may or may not be
    in the table. Its data files are kept; read the table (``history``) to see whether it
    landed before retrying the work."""

    table: Optional[str] = None
    version: Optional[int] = None
