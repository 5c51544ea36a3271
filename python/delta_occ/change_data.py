"""The change data feed (``delta.enableChangeDataFeed=true``): what the writers record (the feed
is read back by ``change_feed``).

Writers record the rows a DELETE, UPDATE, MERGE or overwrite changed in change-data files under
``_change_data/`` (``cdc`` actions), each row with its ``_change_type``: ``delete``, ``insert``,
``update_preimage`` or ``update_postimage``. A commit with cdc files is read from them alone, so
such a commit records all of its changes there, inserts included. A commit without any (an
append, a whole-file DELETE written by another engine) is read from its data files: the rows of
its ``dataChange`` adds are inserts, those of its ``dataChange`` removes deletes, and for a file
both removed and added (a deletion vector that grew) the rows the new DV hides are deletes.
Rows of the feed carry ``_commit_version`` and ``_commit_timestamp`` (the in-commit timestamp,
else commitInfo's ``timestamp``), the column names delta-spark and deltalake use."""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Tuple

import pyarrow as pa

from .exceptions import InvalidArgumentError

#: The property that turns the feed on.
PROPERTY = "delta.enableChangeDataFeed"
CHANGE_TYPE = "_change_type"
COMMIT_VERSION = "_commit_version"
COMMIT_TIMESTAMP = "_commit_timestamp"
#: The directory, under the table root, of change-data files.
DIRECTORY = "_change_data"

INSERT = "insert"
DELETE = "delete"
PREIMAGE = "update_preimage"
POSTIMAGE = "update_postimage"
KINDS = (INSERT, DELETE, PREIMAGE, POSTIMAGE)

#: One operation's changed rows, by kind (rows of the table schema).
Changes = List[Tuple[str, Any]]


#: The kinds an operation records its rows under: (rows it takes away, rows it writes); None:
#: not recorded. Each operation names its own (``operations/*.RECORDED_AS``); engines only give rows.
Kinds = Tuple[Optional[str], Optional[str]]


def entries(kinds: Kinds, taken: Any = None, written: Any = None) -> Changes:
    """The change-feed entries of an operation's rows under its ``kinds``."""
    taken_as, written_as = kinds
    return ([(taken_as, taken)] if taken_as is not None else []) + ([(written_as, written)] if written_as is not None else [])


def enabled(properties: Mapping[str, str]) -> bool:
    """Whether writers of a table with these properties record changes."""
    return str(properties.get(PROPERTY, "false")).lower() == "true"


def with_kind(rows: pa.Table, kind: str) -> pa.Table:
    """Rows with their ``_change_type`` column (what a change-data file holds)."""
    if kind not in KINDS:
        raise InvalidArgumentError(f"unknown change type {kind!r}; one of {list(KINDS)}")
    return rows.append_column(pa.field(CHANGE_TYPE, pa.string()), pa.repeat(pa.scalar(kind), rows.num_rows))


__all__ = [
    "PROPERTY", "CHANGE_TYPE", "COMMIT_VERSION", "COMMIT_TIMESTAMP", "DIRECTORY", "INSERT", "DELETE", "PREIMAGE", "POSTIMAGE", "KINDS",
    "Changes", "enabled", "with_kind",
]
