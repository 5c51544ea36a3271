"""A transaction's own bookkeeping, the same for both engines: the operations staged on it (for
its commitInfo) and the files and directories written for it, removed again when it does not
commit, so that failed work leaves no orphans behind."""

from __future__ import annotations

import contextlib
import shutil
from typing import Any, Callable, Iterable, Iterator, List, Optional, Protocol, Tuple, TypeVar

from ..exceptions import CommitOutcomeUnknownError, DeltaConcurrentModificationException, DeltaOccError, InvalidArgumentError
from . import commit_info
from .commit_info import OperationRecord


class OutputStorage(Protocol):
    """The table's storage, as far as cleaning up needs it (the core's storage handle)."""

    def delete(self, path: str) -> None: ...

    def list(self, prefix: str) -> Iterable[Tuple[str, int]]: ...

    def local_path(self, path: str) -> Optional[str]: ...


_T = TypeVar("_T", bound="Lifecycle")


class Lifecycle:
    """``with`` on a transaction (either engine's): commit on a normal exit when still open,
    abort on an exception (which removes the outputs)."""

    @property
    def state(self) -> str:
        raise NotImplementedError

    def commit(self) -> object:
        raise NotImplementedError

    def abort(self) -> None:
        raise NotImplementedError

    def __enter__(self: _T) -> _T:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None:
            self.abort()
        elif self.state == "open":
            self.commit()


class Culprits(Protocol):
    """What a staged operation can say about a conflict afterwards (``operations.merge``)."""

    def behind(self, conflict: DeltaConcurrentModificationException, snapshot_at: Callable[[Optional[int]], Any]) -> List[str]:
        """The parts of the operation behind ``conflict`` (``snapshot_at(None)``: the read
        snapshot; ``snapshot_at(v)``: version ``v``)."""
        ...


class Bookkeeping:
    def __init__(self) -> None:
        self._records: List[OperationRecord] = []
        self._culprits: List[Culprits] = []
        #: Data files written for the transaction (paths in the table's storage).
        self._files: List[str] = []
        #: Output directories of engine jobs (every file below them is the transaction's).
        self._dirs: List[str] = []

    # -- operations ----------------------------------------------------------------------------

    def record(self, record: OperationRecord, *, alone: bool) -> None:
        """Add an operation. ``alone``: it must be the transaction's only one (the embedded engine,
        whose second operation would not see the first one's staged changes); InvalidArgumentError
        if one is staged already."""
        if alone and self._records:
            raise InvalidArgumentError(f"this transaction already staged {self.combined().operation}; one engine operation per transaction")
        self._records.append(record)

    def note_culprits(self, culprits: Culprits) -> None:
        """Keep what an operation can say about a conflict (see :meth:`behind`)."""
        self._culprits.append(culprits)

    def behind(self, conflict: DeltaConcurrentModificationException, snapshot_at: Callable[[Optional[int]], Any]) -> Optional[List[str]]:
        """The staged operations' parts behind ``conflict`` (None: no operation can say)."""
        if not self._culprits:
            return None
        return [part for c in self._culprits for part in c.behind(conflict, snapshot_at)]

    @property
    def operations(self) -> List[str]:
        return [r.operation for r in self._records]

    @property
    def staged(self) -> bool:
        return bool(self._records)

    def combined(self) -> OperationRecord:
        """The commit's operation, parameters and metrics (see ``commit_info.combined``)."""
        return commit_info.combined(self._records)

    # -- outputs -------------------------------------------------------------------------------

    def own_file(self, path: str) -> None:
        """Registered before the file is written: a failure elsewhere still cleans it up."""
        self._files.append(path)

    def own_dir(self, path: str) -> None:
        self._dirs.append(path)

    def keep_outputs(self) -> None:
        """The commit may have landed (its outcome is unknown): readers of it need these files."""
        self._files, self._dirs = [], []

    @contextlib.contextmanager
    def committing(self, storage: OutputStorage) -> Iterator[None]:
        """Around a commit: when it fails, remove the outputs, unless it may have landed."""
        try:
            yield
        except CommitOutcomeUnknownError:
            # The commit may have landed: its files stay (readers of that version need them).
            self.keep_outputs()
            raise
        except DeltaOccError:
            # Otherwise the core raises only when no attempt landed (it resolves unknown outcomes
            # by the commit's txnId), so the outputs are referenced by nobody. (Not on
            # KeyboardInterrupt: a commit that landed must keep its files.)
            self.remove_outputs(storage)
            raise

    def remove_outputs(self, storage: OutputStorage) -> None:
        """Delete every output (best effort: an orphan file is harmless, nothing references it)."""
        for f in self._files:
            try:
                storage.delete(f)
            except DeltaOccError:
                pass
        for d in self._dirs:
            try:
                for name, _ in storage.list(d):
                    storage.delete(f"{d}/{name}")
            except DeltaOccError:
                pass
            local = storage.local_path(d)
            if local is not None:
                shutil.rmtree(local, ignore_errors=True)
        self.keep_outputs()


__all__ = ["Bookkeeping", "Lifecycle", "OutputStorage"]
