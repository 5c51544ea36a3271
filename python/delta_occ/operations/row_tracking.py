"""Row tracking on the writing side (the ids themselves are handed out by the core's commit,
``rust/core/src/row_tracking.rs``). A table with ``delta.enableRowTracking=true`` promises that a
row keeps its id when it is updated or copied into another file, which needs the id written into
the file (a materialized row-id column). delta-occ does not write those yet, so every operation
that copies rows is refused there, with the same error on both engines: UPDATE, MERGE with
WHEN MATCHED UPDATE, OPTIMIZE and purges, and a DELETE, MERGE or overwrite that would rewrite a
file's other rows (a table without deletion vectors). Appends, DELETE through deletion vectors or
of whole files, and inserts work, their files taking fresh ids."""

from __future__ import annotations

from typing import Mapping

from ..exceptions import UnsupportedFeatureError
from .protocols import Staging

PROPERTY = "delta.enableRowTracking"


def enabled(properties: Mapping[str, str]) -> bool:
    """Whether rows must keep their ids when copied."""
    return str(properties.get(PROPERTY, "false")).lower() == "true"


def copy_refused(table: str, what: str) -> UnsupportedFeatureError:
    """The error for ``what``, an operation that would copy rows of ``table``."""
    return UnsupportedFeatureError(
        f"{table} has {PROPERTY}=true: {what} copies rows, which must keep their row ids (a materialized row-id column), "
        "and delta-occ does not write those yet; appends, DELETE with deletion vectors and inserts work",
        table=table, feature="rowTracking",
    )


def refuse_copies(txn: Staging, what: str) -> None:
    """Refuse ``what`` (an operation that copies rows) on a table whose rows keep their ids."""
    snap = txn.snapshot
    if enabled(snap.properties):
        raise copy_refused(snap.handle.root, what)


__all__ = ["PROPERTY", "enabled", "copy_refused", "refuse_copies"]
