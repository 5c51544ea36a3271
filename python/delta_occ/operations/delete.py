"""Delete: the rows matching ``where`` (all rows when None) leave their files (see ``removal``)."""

from __future__ import annotations

from typing import Any, Optional, Protocol

from .. import change_data
from ..instant import Now
from . import commit_info
from .protocols import Engine

#: A DELETE records the rows it removes as deletes.
RECORDED_AS: change_data.Kinds = (change_data.DELETE, None)


def recorded(removed: Any) -> change_data.Changes:
    """The change-feed entries of rows a DELETE (or an overwrite's ``replace_where``) removes."""
    return change_data.entries(RECORDED_AS, removed)


class Remover(Engine, Protocol):
    def remove_matching(self, where: Optional[str]) -> int:
        """Record the read of ``where`` and remove its rows (``removal.choose`` per file); how many."""
        ...


def delete(engine: Remover, where: Optional[str] = None) -> None:
    where = Now().text(where)
    engine.record(commit_info.delete(where, engine.remove_matching(where)))


__all__ = ["Remover", "delete"]
