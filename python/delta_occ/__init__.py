"""delta-occ: optimistic concurrency control for Delta Lake writers."""

from . import exceptions
from ._core import __version__
from .isolation import IsolationLevel
from .table import Snapshot, Table

__all__ = ["Table", "Snapshot", "IsolationLevel", "exceptions", "__version__"]
