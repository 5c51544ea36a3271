"""delta-occ: optimistic concurrency control for Delta Lake writers."""

from . import engine, exceptions
from ._core import __version__
from .isolation import IsolationLevel
from .snapshot import Snapshot
from .table import Table, convert_to_delta
from .transaction import CommitResult, Transaction
from .write_modes import write_table

__all__ = ["Table", "Snapshot", "Transaction", "CommitResult", "IsolationLevel", "convert_to_delta", "write_table", "engine", "exceptions", "__version__"]
