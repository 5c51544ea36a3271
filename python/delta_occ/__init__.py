"""delta-occ: optimistic concurrency control for Delta Lake writers."""

from . import engine, exceptions
from ._core import __version__
from .isolation import IsolationLevel
from .snapshot import Snapshot
from .table import Table, convert_to_delta
from .timeline import Timeline
from .transaction import CommitResult, Transaction

__all__ = ["Table", "Snapshot", "Transaction", "CommitResult", "IsolationLevel", "convert_to_delta", "Timeline", "engine", "exceptions", "__version__"]
