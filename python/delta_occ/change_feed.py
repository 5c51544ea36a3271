"""Reading the change data feed back (``Table.read_change_feed``): a commit with change-data files
is read from them alone; any other from its data files (``dataChange`` adds are inserts, removes
deletes, and for a file both removed and added, a deletion vector that grew, the rows the new DV
hides are deletes). Rows carry ``_commit_version`` and ``_commit_timestamp`` (the in-commit
timestamp, else commitInfo's ``timestamp``), the column names delta-spark and deltalake use.
What writers record is ``change_data``'s."""

from __future__ import annotations

import dataclasses
import functools
import json
from typing import Any, Dict, List, Mapping, Optional, Protocol, Sequence, Set, Tuple
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc

from . import _arrow, explain
from ._args import version_arg
from ._read import DataColumns, read_file
from ._write import Layout
from .change_data import CHANGE_TYPE, COMMIT_TIMESTAMP, COMMIT_VERSION, DELETE, INSERT, KINDS, PROPERTY, Changes, enabled
from .exceptions import InvalidArgumentError, VersionNotFoundError
from .reader import ROW
from .snapshot import Snapshot
from .workers import each, ordered


class FeedSource(Protocol):
    """The table whose feed is read (``delta_occ.Table``)."""

    @property
    def path(self) -> str: ...

    @property
    def handle(self) -> Any: ...

    def refresh(self) -> int: ...

    def snapshot(self, version: Optional[int] = None) -> Snapshot: ...


@dataclasses.dataclass
class CommitChanges:
    """Where one commit's changes are: its change-data files (``cdc``: their actions, read with
    ``layout``), or else its data files: ``removed`` paths (rows as of the version before, with
    ``before``), of which ``readded`` are the same file with a larger DV (only the rows the new
    DV hides are deletes), and ``added`` paths (inserts, with ``layout``)."""

    version: int
    timestamp_ms: int
    layout: Layout
    cdc: List[Mapping[str, Any]]
    before: Optional[Layout] = None
    removed: List[str] = dataclasses.field(default_factory=list)
    readded: List[str] = dataclasses.field(default_factory=list)
    added: List[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class FeedPlan:
    """The commits of a feed read that changed rows, in version order, and the columns the
    feed's rows have (the end version's, or those asked for)."""

    schema: pa.Schema
    commits: List[CommitChanges]
    #: The end version's schema as Delta JSON (its Spark types: ``delta_occ.spark``).
    schema_json: str

    @property
    def result_schema(self) -> pa.Schema:
        return self.schema.append(pa.field(CHANGE_TYPE, pa.string())).append(pa.field(COMMIT_VERSION, pa.int64())).append(
            pa.field(COMMIT_TIMESTAMP, pa.timestamp("us", "UTC"))
        )


def plan(table: FeedSource, starting_version: int, ending_version: Optional[int] = None, columns: Optional[Sequence[str]] = None) -> FeedPlan:
    """Which files hold the feed of commits ``starting_version`` .. ``ending_version`` (the
    latest when None). A version in the range whose table did not have the feed on is an
    InvalidArgumentError, as is an empty range. Every engine reads the feed from this plan."""
    latest = table.refresh()
    end = latest if ending_version is None else version_arg("ending_version", ending_version)
    start = version_arg("starting_version", starting_version)
    if start > end:
        raise InvalidArgumentError(f"starting_version {start} is after ending_version {end}")
    if end > latest:
        raise VersionNotFoundError(f"version {end} of {table.path} does not exist yet (latest is {latest})", table=table.path, version=end)
    end_snapshot = table.snapshot(end)
    out_schema = end_snapshot.schema
    if columns is not None:
        unknown = [c for c in columns if c not in out_schema.names]
        if unknown or not columns:
            raise InvalidArgumentError(f"columns must name columns of the table; unknown: {unknown}")
        out_schema = pa.schema([out_schema.field(c) for c in columns])
    # The commits that changed rows, then the table at each version their reading needs: made
    # in one walk (one version after another, each a walk of its own, cost a round trip per
    # version on an object store).
    changed: List[Tuple[int, int, List[Mapping[str, Any]], List[str], Set[str]]] = []
    for version, summary in explain.summaries(table, range(start, end + 1)):
        if summary is None:
            raise VersionNotFoundError(f"commit {version} of {table.path} is not in the log (cleaned up?)", table=table.path, version=version)
        cdc = list(summary.get("cdc") or [])
        removed = [] if cdc else sorted({r["path"] for r in summary["removed"] if r["data_change"]})
        added = set() if cdc else {a["path"] for a in summary["added"] if a["data_change"]}
        if cdc or removed or added:
            changed.append((version, _commit_timestamp(summary), cdc, removed, added))
    needed = sorted({c[0] for c in changed} | {c[0] - 1 for c in changed if c[3]})
    # The oldest first and on its own: a feed that was never on is refused before the walk,
    # which then starts from this snapshot (held meanwhile: the core reuses it while it lives).
    oldest = _feed_on(table, needed[0], table.snapshot(needed[0])) if needed else None
    layouts: Dict[int, Layout] = {}
    for version, handle in zip(needed, table.handle.snapshots(needed)):
        layouts[version] = Layout(_feed_on(table, version, Snapshot(handle)))
    del oldest
    commits = [
        CommitChanges(version, ts, layouts[version], cdc) if cdc
        else CommitChanges(version, ts, layouts[version], [], layouts[version - 1] if removed else None, removed,
                           [p for p in removed if p in added], sorted(added - set(removed)))
        for version, ts, cdc, removed, added in changed
    ]
    return FeedPlan(out_schema, commits, end_snapshot.handle.schema_json)


def _feed_on(table: FeedSource, version: int, snapshot: Snapshot) -> Snapshot:
    """``snapshot`` (of ``version``), or InvalidArgumentError when the feed was off at it."""
    if not enabled(snapshot.properties):
        raise InvalidArgumentError(
            f"the change data feed of {table.path} is not on at version {version} ({PROPERTY} is not true): "
            "its changes were not recorded; read a range where it is on"
        )
    return snapshot


def read(table: FeedSource, starting_version: int, ending_version: Optional[int] = None, columns: Optional[Sequence[str]] = None) -> pa.Table:
    """The feed (see ``plan``) read by this process, in version order, as one Arrow table of the
    plan's columns plus ``_change_type``, ``_commit_version``, ``_commit_timestamp``."""
    feed = plan(table, starting_version, ending_version, columns)
    parts: List[pa.Table] = []
    # Several commits are read at a time, each reading its files concurrently too: one commit
    # after another cost their round trips in sequence on an object store. Commits at a time
    # times files at a time stays within the read concurrency (half of it for commits: a feed
    # is mostly commits of a few files).
    concurrency = feed.commits[0].layout.reader.concurrency if feed.commits else 1
    commits_at_once = max(1, min(len(feed.commits), concurrency // 2))
    files_at_once = max(1, concurrency // commits_at_once)
    changes_of = functools.partial(_commit_changes, workers=files_at_once)
    for commit, changes in zip(feed.commits, ordered(feed.commits, changes_of, commits_at_once)):
        for kind, rows in changes:
            if not rows.num_rows:
                continue
            rows = _as(rows, feed.schema)
            n = rows.num_rows
            rows = rows.append_column(pa.field(CHANGE_TYPE, pa.string()), pa.repeat(pa.scalar(kind), n))
            rows = rows.append_column(pa.field(COMMIT_VERSION, pa.int64()), pa.repeat(pa.scalar(commit.version, pa.int64()), n))
            rows = rows.append_column(pa.field(COMMIT_TIMESTAMP, pa.timestamp("us", "UTC")), pa.repeat(pa.scalar(commit.timestamp_ms * 1000, pa.timestamp("us", "UTC")), n))
            parts.append(rows)
    return pa.concat_tables(parts) if parts else feed.result_schema.empty_table()


def _commit_timestamp(summary: Mapping[str, Any]) -> int:
    info = json.loads(summary["commit_info"]) if summary.get("commit_info") else {}
    return int(info.get("inCommitTimestamp", info.get("timestamp", 0)))


def _as(rows: pa.Table, schema: pa.Schema) -> pa.Table:
    """Rows in ``schema``'s columns: a column the rows lack (added by a later schema change) is
    NULL, one the schema lacks is dropped."""
    arrays = [rows.column(f.name).cast(f.type) if f.name in rows.column_names else pa.nulls(rows.num_rows, f.type) for f in schema]
    return pa.Table.from_arrays(arrays, schema=schema)


def _commit_changes(commit: CommitChanges, workers: int) -> Changes:
    """One commit's changes, by kind (see the module's doc), its files read ``workers`` at a time."""
    if commit.cdc:
        lay = commit.layout
        # Partition values typed by the core, as a live file's are (one row per cdc file).
        values = cdc_partition_values(commit)
        tables = each(list(range(len(commit.cdc))), lambda i: _read_cdc(lay, commit.cdc[i], values.slice(i, 1)), workers)
        rows = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
        kinds = rows.column(CHANGE_TYPE)
        rows = rows.drop_columns([CHANGE_TYPE])
        return [(k, rows.filter(pc.equal(kinds, k))) for k in KINDS]
    out: Changes = []
    if commit.removed:
        assert commit.before is not None
        for path, rows in zip(commit.removed, commit.before.reader.read_many(commit.removed, workers=workers)):
            if path in commit.readded:  # the same file with a larger DV: its rows the new DV hides
                still = commit.layout.reader.read_rows(path, columns=[], positions=True).column(ROW)
                rows = rows.filter(pc.invert(pc.is_in(rows.column(ROW), value_set=still.combine_chunks())))
            out.append((DELETE, rows.drop_columns([ROW])))
    if commit.added:
        out += [(INSERT, rows) for rows in commit.layout.reader.read_many(commit.added, positions=False, workers=workers)]
    return out


def cdc_partition_values(commit: CommitChanges) -> pa.Table:
    """The partition values of the commit's change-data files, typed by the core (one row per
    file, a column per partition column)."""
    handle = commit.layout.snapshot.handle
    return _arrow.table([handle.typed_partition_values([list((c["partition_values"] or {}).items()) for c in commit.cdc])])


def _read_cdc(lay: Any, cdc: Mapping[str, Any], partition_values: pa.Table) -> pa.Table:
    """A change-data file's rows (table columns and ``_change_type``); ``partition_values``: its
    action's, typed (one row, a column per partition column)."""
    data_idx = [i for i, f in enumerate(lay.schema) if f.name not in lay.partition_columns]
    wanted = DataColumns(
        [lay.schema.field(i) for i in data_idx] + [pa.field(CHANGE_TYPE, pa.string())],
        [lay.physical.field(i) for i in data_idx] + [pa.field(CHANGE_TYPE, pa.string())],
    )
    data, n, _ = read_file(lay.storage, unquote(cdc["path"]), wanted)
    arrays = []
    for f in lay.schema:
        if f.name in lay.partition_columns:
            arrays.append(pa.repeat(partition_values.column(f.name)[0], n).cast(f.type))
        else:
            arrays.append(data[f.name])
    arrays.append(data[CHANGE_TYPE])
    return pa.Table.from_arrays(arrays, schema=lay.schema.append(pa.field(CHANGE_TYPE, pa.string())))


__all__ = ["FeedSource", "CommitChanges", "FeedPlan", "plan", "read", "cdc_partition_values"]
