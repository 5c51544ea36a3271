"""Update: the rows matching ``where`` are replaced by their assigned versions (SET values are
checked before any row is read)."""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Protocol, TypeVar

from .. import change_data
from ..instant import Now
from . import assignments, commit_info
from .protocols import Engine

#: An UPDATE records each changed row before (pre-image) and after (post-image).
RECORDED_AS: change_data.Kinds = (change_data.PREIMAGE, change_data.POSTIMAGE)


def recorded(before: Any, after: Any) -> change_data.Changes:
    """The change-feed entries of the rows an UPDATE changed."""
    return change_data.entries(RECORDED_AS, before, after)

#: An engine's checked expression (a compiled RowExpr; on Spark, the RowExpr with its tree).
Expr = TypeVar("Expr")


class Updater(Engine, Protocol[Expr]):
    def expression(self, text: str) -> Expr:
        """A SET value, checked (PredicateError) as the engine will evaluate it."""
        ...

    def update_matching(self, where: Optional[str], assign: Dict[str, Expr]) -> int:
        """Record the read of ``where`` and replace its rows by the assigned ones; how many."""
        ...


def update(engine: Updater[Expr], where: Optional[str], set_: Mapping[str, str]) -> None:
    now = Now()
    where, set_ = now.text(where), now.values(set_)
    assign = assignments.resolve(engine.schema, set_, "set", engine.expression, identity=engine.identity, generated=engine.generated)
    updated = engine.update_matching(where, assign)
    engine.record(commit_info.update(where, set_, updated))


__all__ = ["Updater", "update"]
