"""One-call writes as deltalake's ``write_deltalake`` makes them (api.md "Reading and writing"):
``write_table(uri, data, mode=...)`` creates the table on its first write and then appends to it,
overwrites it, refuses (``"error"``) or leaves it alone (``"ignore"``).

**The first write is one commit**: version 0 holds the protocol, the metadata and the rows (as
deltalake writes it), so no reader ever sees the table without its first rows, and a failure
leaves no table behind for a retry with ``mode="ignore"`` to skip.

**Two first writes at once**: one creates the table; the other's create conflicts
(ProtocolChangedException) and it then writes as ``mode`` says on the table the winner created:
``"append"`` adds its rows, ``"overwrite"`` replaces the winner's, ``"error"`` raises
TableAlreadyExistsError and ``"ignore"`` writes nothing. The result is that of some serial
order of the two calls, never a silent loss; the data must fit the winner's schema as any write
to an existing table must.

**On an existing table** ``partition_by``, ``properties``, ``name`` and ``description`` may only
repeat what the table has (a script run again passes them again); anything else raises
InvalidArgumentError instead of being dropped (``Table.set_properties`` and
``schema_mode="overwrite"`` change a table).

deltalake's parameters with another name here (``configuration``, ``predicate``,
``commit_properties``) and those without an equivalent (``target_file_size``,
``writer_properties``, ``post_commithook_properties``) raise InvalidArgumentError saying so.
"""

from __future__ import annotations

import json
import time
from typing import Any, Dict, Mapping, Optional, Sequence, Union

from . import data_input, one_call
from ._args import LevelLike
from .exceptions import InvalidArgumentError, ProtocolChangedException, TableAlreadyExistsError, TableNotFoundError
from .snapshot import Snapshot
from .table import PathLike, Table, partition_by_arg
from .transaction import CommitResult

#: ``mode`` values, and the name each has in the commit (delta-spark's SaveMode names).
MODES: Dict[str, str] = {"error": "ErrorIfExists", "append": "Append", "overwrite": "Overwrite", "ignore": "Ignore"}

#: deltalake's parameters that are named otherwise here or have no equivalent: what to do instead.
_DELTALAKE_ONLY: Dict[str, str] = {
    "configuration": "pass the table properties as properties=",
    "predicate": "pass the overwrite's condition as replace_where=",
    "commit_properties": "app_id= / app_version= record an application version; max_attempts= bounds the commit loop",
    "target_file_size": "each write makes one file per partition; Table.optimize(target_file_size=) compacts",
    "writer_properties": "delta-occ writes parquet with its own settings",
    "post_commithook_properties": "checkpoints follow delta.checkpointInterval; Table.create_checkpoint() and Table.cleanup_metadata() run them on demand",
}


def write_table(
    uri: Union[PathLike, Table],
    data: Any,
    mode: str = "error",
    *,
    partition_by: Optional[Union[str, Sequence[str]]] = None,
    properties: Optional[Mapping[str, str]] = None,
    name: Optional[str] = None,
    description: Optional[str] = None,
    schema_mode: Optional[str] = None,
    replace_where: Optional[str] = None,
    storage_options: Optional[Mapping[str, str]] = None,
    app_id: Optional[str] = None,
    app_version: Optional[int] = None,
    isolation_level: LevelLike = None,
    max_attempts: Optional[int] = None,
    **deltalake_only: Any,
) -> CommitResult:
    """Write ``data`` (anything ``delta_occ.data_input`` takes: pyarrow, pandas, polars, an Arrow
    stream) to the table at ``uri`` (a path, an object-store URI with ``storage_options``, or a
    :class:`Table`), creating it on the first write with the data's schema, ``partition_by``,
    ``properties``, ``name`` and ``description``.

    ``mode`` on an existing table: ``"error"`` (the default) raises TableAlreadyExistsError,
    ``"append"`` appends, ``"overwrite"`` replaces all rows (those matching ``replace_where``
    only, when given: new rows must match it) and ``"ignore"`` writes nothing (the result has
    ``committed=False`` and ``reason`` says why). ``schema_mode`` as in ``Table.append`` /
    ``Table.overwrite`` (``"merge"`` adds new columns, ``"overwrite"`` replaces the schema in a
    whole-table overwrite). ``app_id`` / ``app_version``, ``isolation_level`` and
    ``max_attempts`` as in :meth:`Table.append`.
    """
    for key in deltalake_only:
        hint = _DELTALAKE_ONLY.get(key)
        if hint is None:
            raise InvalidArgumentError(f"write_table() got an unexpected argument {key!r}")
        raise InvalidArgumentError(f"write_table() does not take deltalake's {key}=: {hint}")
    if not isinstance(mode, str) or mode not in MODES:
        raise InvalidArgumentError(f"mode must be one of {', '.join(map(repr, MODES))}, got {mode!r}")
    if replace_where is not None and mode != "overwrite":
        raise InvalidArgumentError(f'replace_where is a condition of mode="overwrite", not of mode={mode!r}')
    app = one_call.app_args(app_id, app_version)
    partitions = partition_by_arg(partition_by)
    if isinstance(uri, Table) and storage_options is not None:
        raise InvalidArgumentError("storage_options go with a path: a Table was opened with its own")
    # Read once: a create that loses the race writes the same rows into the winner's table.
    rows = data_input.as_table(data)
    table = uri if isinstance(uri, Table) else _existing(uri, storage_options)
    if table is None:
        assert not isinstance(uri, Table)
        try:
            return _create(uri, rows, mode, partitions, properties, name, description, replace_where, storage_options, app)
        except (ProtocolChangedException, TableAlreadyExistsError):
            # Another writer created the table since it was looked for: write as on an existing
            # table. (A location that holds other files is no table: the error stands.)
            table = _created_by_a_racer(uri, storage_options)
            if table is None:
                raise
    # A table opened here is at its newest version already; one passed in is refreshed.
    snap = table.newest_snapshot() if isinstance(uri, Table) else table.snapshot()
    return _into(table, snap, rows, mode, partitions, properties, name, description, schema_mode, replace_where, app, isolation_level, max_attempts)


#: Waits (seconds) for a racing first write's version 0 to land: its data files are written before
#: that commit, and a create that sees them refuses the location (4 threads racing lost a write
#: 2 times in 6 without waiting).
_RACE_WAITS = (0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.4, 0.8)


def _created_by_a_racer(uri: PathLike, storage_options: Optional[Mapping[str, str]]) -> Optional[Table]:
    """The table another first write created, once its version 0 is there (None when none
    appears within about 1.6 s: the location holds files of something else)."""
    for wait in _RACE_WAITS:
        time.sleep(wait)
        table = _existing(uri, storage_options)
        if table is not None:
            return table
    return None


def _existing(uri: PathLike, storage_options: Optional[Mapping[str, str]]) -> Optional[Table]:
    try:
        return Table(uri, storage_options)
    except TableNotFoundError:
        return None


def _parameters(mode: str, partitions: Sequence[str], replace_where: Optional[str]) -> Dict[str, Any]:
    params: Dict[str, Any] = {"mode": MODES[mode], "partitionBy": json.dumps(list(partitions))}
    if replace_where is not None:
        params["predicate"] = replace_where
    return params


def _create(
    uri: PathLike, rows: Any, mode: str, partitions: Sequence[str], properties: Optional[Mapping[str, str]], name: Optional[str],
    description: Optional[str], replace_where: Optional[str], storage_options: Optional[Mapping[str, str]], app: one_call.AppVersion,
) -> CommitResult:
    """Version 0: the table with the rows, in one commit (any concurrent commit is a create that
    won: nothing to retry)."""
    txn = Table.begin_create(uri, rows.schema, partitions, properties, name, storage_options, description=description)
    try:
        if replace_where is not None:
            txn.overwrite(rows, replace_where)  # (checks that every row matches it)
        else:
            txn.append(rows)
        if app is not None:
            txn.set_app_version(*app)
    except BaseException:
        txn.abort()
        raise
    return txn.commit("WRITE", _parameters(mode, partitions, replace_where))


def _into(
    table: Table, snap: Snapshot, rows: Any, mode: str, partitions: Sequence[str], properties: Optional[Mapping[str, str]], name: Optional[str],
    description: Optional[str], schema_mode: Optional[str], replace_where: Optional[str], app: one_call.AppVersion,
    isolation_level: LevelLike, max_attempts: Optional[int],
) -> CommitResult:
    if mode == "error":
        raise TableAlreadyExistsError(
            f"write_table(mode='error'): {table.path} already holds a Delta table (version {snap.version}); "
            "pass mode='append', 'overwrite' or 'ignore' to write to it",
            table=table.path,
        )
    if mode == "ignore":
        return one_call.not_written(snap.version, "WRITE", f"mode='ignore': {table.path} already holds a Delta table (version {snap.version}); nothing was written")
    _check_same(table.path, snap, partitions, properties, name, description, schema_mode)
    options: Dict[str, Any] = dict(schema_mode=schema_mode, isolation_level=isolation_level, max_attempts=max_attempts)
    if app is not None:
        options.update(app_id=app[0], app_version=app[1])
    if mode == "append":
        return table.append(rows, **options)
    return table.overwrite(rows, replace_where, **options)


def _check_same(
    path: str, snap: Any, partitions: Sequence[str], properties: Optional[Mapping[str, str]], name: Optional[str], description: Optional[str],
    schema_mode: Optional[str],
) -> None:
    """Refuse a table definition the existing table does not have (it would be dropped)."""
    at = f"{path} (version {snap.version})"
    if partitions and list(partitions) != snap.partition_columns:
        raise InvalidArgumentError(
            f"partition_by={list(partitions)} but the table at {at} is partitioned by {snap.partition_columns}; "
            "the partitioning of an existing table does not change",
            table=path, version=snap.version,
        )
    current = snap.properties
    differ = {str(k): str(v) for k, v in (properties or {}).items() if current.get(str(k)) != str(v)}
    if differ:
        raise InvalidArgumentError(
            f"properties {differ} are not those of the table at {at}: write_table sets properties when it creates a table; "
            "use Table.set_properties to change them", table=path, version=snap.version,
        )
    meta = snap.metadata
    for key, given in (("name", name), ("description", description)):
        if given is not None and given != meta.get(key):
            raise InvalidArgumentError(
                f"{key}={given!r} but the table at {at} has {key} {meta.get(key)!r}: write_table sets it when it creates a table",
                table=path, version=snap.version,
            )


__all__ = ["MODES", "write_table"]
