"""How a one-call operation (``append``, ``overwrite``, ``delete``, ``update``, ``merge``,
``optimize`` on ``Table`` or ``SparkTable``) runs, for both engines: exactly-once application
versions, and re-execution when a conflict is one that re-reading resolves.

**Exactly once** (``app_id=``, ``app_version=``): the operation reads the app's recorded version
in its transaction (a dependency the conflict checker keeps: a concurrent commit of the same app
id raises ``ConcurrentTransactionException``, concurrency.md §3 check 4). A version at or below
the recorded one is not executed at all: the result has ``committed=False`` and ``reason`` says
why. Otherwise the transaction also writes the new version (a ``txn`` action) with its data, so a
retried Structured Streaming batch is written once.

**Re-execution** (``rerun_on_conflict=N``): the commit loop already rebases a transaction over
winners it does not conflict with. A conflict that a fresh read resolves — a winner appended rows
the operation should have read, deleted or rewrote files it read or also removes — ends the
transaction; the operation is then planned and executed again on the new snapshot, after a
jittered backoff, at most N times. Never after a metadata or protocol change (a conflict of those
kinds, or such a change anywhere between the two snapshots: the operation was planned against a
table that no longer exists), never for an application-version conflict (another writer of the
app id committed: re-running would silently turn its batch into ours), and never for a
transaction whose reads the caller made (``begin()``: only the caller knows what it read).
``CommitResult.executions`` counts the executions (1 = none re-run) and ``CommitResult.reruns``
names, per re-run, the winner whose conflict forced it.
"""

from __future__ import annotations

import dataclasses
import random
import time
from typing import Any, Callable, Dict, List, Optional, Tuple, Type, TypeVar

import pyarrow as pa

from . import commit_note
from ._args import int_arg
from .exceptions import (
    ConcurrentAppendException,
    ConcurrentDeleteDeleteException,
    ConcurrentDeleteReadException,
    DeltaConcurrentModificationException,
    InvalidArgumentError,
)
from .isolation import IsolationLevel
from .snapshot import Snapshot
from .transaction import CommitResult, Transaction

#: Conflicts a fresh read of the table resolves (the winner changed data, not the table's shape).
RERUNNABLE: Tuple[Type[DeltaConcurrentModificationException], ...] = (ConcurrentAppendException, ConcurrentDeleteReadException, ConcurrentDeleteDeleteException)

#: Backoff before re-run k (1-based): BASE * 2**(k-1) seconds, capped, times a jitter in [0.5, 1.5)
#: so writers that lost to each other do not meet again in lockstep.
BACKOFF_BASE = 0.05
BACKOFF_CAP = 2.0

#: A transaction of either engine (``Transaction``, ``SparkTransaction``).
T = TypeVar("T")

AppVersion = Optional[Tuple[str, int]]


def app_args(app_id: Optional[str], app_version: Any) -> AppVersion:
    """``(app_id, app_version)`` checked, or None when neither is given."""
    if app_id is None and app_version is None:
        return None
    if app_id is None or app_version is None:
        raise InvalidArgumentError("app_id and app_version go together: give both or neither")
    if not isinstance(app_id, str) or not app_id:
        raise InvalidArgumentError(f"app_id must be a non-empty string, got {app_id!r}")
    return app_id, int_arg("app_version", app_version, 0)


def rerun_arg(value: Any) -> int:
    return int_arg("rerun_on_conflict", value, 0, 1000)


def rereadable(data: Any, rerun_on_conflict: int) -> None:
    """A re-run reads its input again: a RecordBatchReader cannot be read twice."""
    if rerun_on_conflict and isinstance(data, pa.RecordBatchReader):
        raise InvalidArgumentError(
            "rerun_on_conflict needs input it can read again: pass a pyarrow Table, not a RecordBatchReader (or rerun_on_conflict=0)"
        )


def backoff(rerun: int) -> float:
    return min(BACKOFF_CAP, BACKOFF_BASE * 2 ** (rerun - 1)) * random.uniform(0.5, 1.5)


def not_written(version: int, operation: str, reason: str) -> CommitResult:
    """The result of an operation that wrote nothing because of its input (``reason``), on the
    table at ``version``."""
    return CommitResult(
        version=version,
        attempts=0,
        isolation_level=IsolationLevel.SNAPSHOT_ISOLATION,
        read_version=version,
        rebased_over=[],
        rows_resolved=0,
        operation=operation,
        metrics={},
        committed=False,
        reason=reason,
    )


def _claim(txn: Transaction, app: Tuple[str, int]) -> Optional[str]:
    """Stage the app version, or say why it was already written."""
    app_id, version = app
    recorded = txn.app_version(app_id)  # recorded as a read: a concurrent writer of app_id conflicts
    if version <= recorded:
        return f"application {app_id!r} already committed version {recorded}; version {version} was not written again"
    txn.set_app_version(app_id, version)
    return None


def _shape(snap: Snapshot) -> Tuple[Any, ...]:
    """What a metadata or protocol change alters: a re-run must not cross one."""
    return snap.metadata, snap.protocol, snap.handle.schema_json, snap.properties, snap.partition_columns


def run(
    begin: Callable[[], T],
    execute: Callable[[T], CommitResult],
    *,
    core: Callable[[T], Transaction],
    latest: Callable[[], Snapshot],
    operation: str,
    app: AppVersion = None,
    rerun_on_conflict: int = 0,
    sleep: Callable[[float], None] = time.sleep,
) -> CommitResult:
    """Run one operation: ``begin()`` a transaction, ``execute`` stages and commits it (aborting
    it when staging fails). ``core`` gives the delta-occ transaction under an engine's,
    ``latest`` the table's newest snapshot (refreshed)."""
    reruns: List[Dict[str, Any]] = []
    first_read = commit_note.now_ms()
    while True:
        txn = begin()
        t = core(txn)
        t.note.update(commit_note.execution(len(reruns) + 1, first_read, [r["winning_version"] for r in reruns]))
        read = _shape(t.snapshot)
        if app is not None:
            try:
                reason = _claim(t, app)
            except BaseException:
                t.abort()
                raise
            if reason is not None:
                skipped = not_written(t.read_version, operation, reason)
                t.abort()
                return skipped
        try:
            result = execute(txn)
        except RERUNNABLE as e:
            if len(reruns) >= rerun_on_conflict or _shape(latest()) != read:
                _note_executions(e, len(reruns) + 1, reruns)
                raise
            reruns.append({"winning_version": e.winning_version, "exception": type(e).__name__, "rule": e.rule})
            sleep(backoff(len(reruns)))
            continue
        except DeltaConcurrentModificationException as e:
            _note_executions(e, len(reruns) + 1, reruns)
            raise
        return dataclasses.replace(result, executions=len(reruns) + 1, reruns=reruns)


def _note_executions(e: DeltaConcurrentModificationException, executions: int, reruns: List[Dict[str, Any]]) -> None:
    """The conflict that ended the operation also says how many executions it made."""
    e.executions = executions
    e.reruns = reruns


__all__ = ["RERUNNABLE", "AppVersion", "app_args", "backoff", "not_written", "rereadable", "rerun_arg", "run"]
