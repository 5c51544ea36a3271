"""delta-occ: optimistic concurrency control for Delta Lake writers.

``import delta_occ`` loads the core and the exceptions only; each public name's module is
imported on first use of the name (PEP 562). ``Table`` does not import pyarrow: its snapshots do
(``snapshot()``), and reads, writes and operations import the engine's modules when first run."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, List

from . import exceptions
from ._core import __version__
from .isolation import IsolationLevel

if TYPE_CHECKING:
    from . import engine
    from .snapshot import Snapshot
    from .table import Table, convert_to_delta
    from .timeline import Timeline
    from .transaction import CommitResult, Transaction
    from .write_modes import write_table

#: Where each lazily imported public name lives (module relative to the package).
_LAZY = {
    "Table": ".table",
    "convert_to_delta": ".table",
    "Snapshot": ".snapshot",
    "Transaction": ".transaction",
    "CommitResult": ".transaction",
    "write_table": ".write_modes",
    "Timeline": ".timeline",
}


def __getattr__(name: str) -> Any:
    if name == "engine":
        return importlib.import_module(".engine", __name__)
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(where, __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = ["Table", "Snapshot", "Transaction", "CommitResult", "IsolationLevel", "convert_to_delta", "write_table", "Timeline", "engine", "exceptions", "__version__"]
