"""Tables and snapshots (api.md "Tables and snapshots")."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from . import _core, time_travel
from ._args import LevelLike, int_arg, level_name, version_arg
from .exceptions import DeltaIOError, FeatureDropPendingError, InvalidArgumentError, MetadataChangedException, VersionNotFoundError
from .isolation import IsolationLevel
from .time_travel import Instant

# Opening a table and listing its files needs none of what follows, so each is imported where it is
# used: a short job that only lists files does not pay for the engine's imports (BENCHMARKS.md).
if TYPE_CHECKING:
    import pyarrow as pa

    from . import engine, one_call
    from .operations.merge import ClauseSpec
    from .snapshot import Snapshot
    from .timeline import Timeline
    from .transaction import CommitResult, Transaction
    from .vacuum import VacuumResult

PathLike = Union[str, "os.PathLike[str]"]


def table_location(path: PathLike) -> str:
    """A table location as the core reads it (a local path, made absolute with `~` expanded, or an
    object-store URI). An empty path is refused rather than taken for the current directory."""
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str):
        raise InvalidArgumentError(f"table path must be a str or os.PathLike, got {type(path).__name__}")
    if not path.strip():
        raise InvalidArgumentError("table path must not be empty (use '.' for the current directory)")
    return path


def partition_by_arg(partition_by: Optional[Union[str, Sequence[str]]]) -> List[str]:
    """``partition_by`` as the core takes it: None for none, one name or a sequence of names."""
    if partition_by is None:
        return []
    if isinstance(partition_by, str):
        return [partition_by]
    return list(partition_by)


def storage_options_arg(options: Optional[Mapping[str, Any]]) -> Optional[Dict[str, str]]:
    """``storage_options`` as the core takes them: str keys, values as strings (``True`` is
    ``"true"``). The core checks the keys (deltalake's names, any letter case)."""
    if options is None:
        return None
    if not isinstance(options, Mapping):
        raise InvalidArgumentError(f"storage_options must be a mapping of option names to values, got {type(options).__name__}")
    out = {}
    for k, v in options.items():
        if not isinstance(k, str):
            raise InvalidArgumentError(f"storage option names must be strings, got {k!r}")
        out[k] = ("true" if v else "false") if isinstance(v, bool) else str(v)
    return out


def history_report(path: PathLike, storage_options: Optional[Mapping[str, str]] = None, limit: Optional[int] = None) -> List[Dict[str, Any]]:
    """The commits of the log at ``path``, newest first (as ``Table.history``), read without
    loading a snapshot: a commit that cannot be read (a corrupt one, say) is ``{"version": v,
    "unreadable": message}`` in its place instead of an error for the whole history."""
    if limit is not None:
        limit = int_arg("limit", limit, 0)
    out: List[Dict[str, Any]] = []
    for version, info, problem in _core.history_report(table_location(path), storage_options_arg(storage_options), limit):
        out.append({"version": version, "unreadable": problem} if problem is not None else history_entry(version, info))
    return out


def history_entry(version: int, info: Optional[str]) -> Dict[str, Any]:
    """One commit of a history: its commitInfo (JSON text, or None) with ``version`` added."""
    entry = json.loads(info) if info is not None else {}
    entry["version"] = version
    return entry


def create_handle(
    path: PathLike,
    schema_json: str,
    partition_by: Optional[Union[str, Sequence[str]]],
    properties: Optional[Mapping[str, str]],
    name: Optional[str],
    storage_options: Optional[Mapping[str, str]],
    cluster_by: Optional[Sequence[str]] = None,
) -> "_core.TableHandle":
    """Commit version 0 of a table whose schema is Delta's JSON: the one `create` of both engines."""
    if cluster_by is not None and (isinstance(cluster_by, str) or not all(isinstance(c, str) for c in cluster_by)):
        raise InvalidArgumentError(f"cluster_by must be a list of column names, got {cluster_by!r}")
    props = new_table_properties(schema_json, properties)
    return _core.TableHandle.create(
        table_location(path), schema_json, partition_by_arg(partition_by), props, name, storage_options_arg(storage_options), list(cluster_by or [])
    )


def new_table_properties(schema_json: str, properties: Optional[Mapping[str, str]]) -> Dict[str, str]:
    """The properties of a new table as the core takes them (strings), once its schema passed the
    check every create makes: a generation expression or default no engine could apply is refused
    now, never dropped."""
    from . import generated
    from ._schema import delta_schema_to_arrow

    generated.check_declared(json.loads(schema_json)["fields"], delta_schema_to_arrow(schema_json))
    return {str(k): str(v) for k, v in (properties or {}).items()}


def convert_to_delta(
    path: PathLike,
    partition_by: Optional[Union[str, Sequence[str], pa.Schema]] = None,
    storage_options: Optional[Mapping[str, str]] = None,
    properties: Optional[Mapping[str, str]] = None,
) -> "Table":
    """CONVERT TO DELTA: adopt the parquet directory at ``path`` as a Delta table in place, as
    delta-spark's ``CONVERT TO DELTA`` and deltalake's ``convert_to_deltalake`` do. Version 0
    lists every visible file (paths with a ``_`` or ``.`` segment are skipped, as readers skip
    them) with statistics from its footer; no data is read or rewritten. The schema is the union
    of the files' columns (a column two files give different types is refused) followed by the
    partition columns.

    ``partition_by``: the partition columns in directory order (``p=1/q=x/part.parquet``), as
    names (types inferred from the directory names: ``integer`` / ``long`` when every value is an
    integer, else ``string``) or a ``pa.Schema`` giving their types. A file outside that layout is
    refused, and so are ``k=v`` directories when ``partition_by`` is not given. A location that
    already holds a Delta table raises TableAlreadyExistsError."""
    import pyarrow as pa

    from ._schema import delta_type_json

    columns: List[Tuple[str, Optional[str]]]
    if isinstance(partition_by, pa.Schema):
        columns = [(f.name, delta_type_json(f.type)) for f in partition_by]
    else:
        columns = [(n, None) for n in partition_by_arg(partition_by)]
    props = {str(k): str(v) for k, v in (properties or {}).items()}
    return Table.from_handle(_core.TableHandle.convert_to_delta(table_location(path), columns, props, storage_options_arg(storage_options)))


def embedded_whole_table(txn: Transaction) -> "engine.WholeTable":
    """Who reads every live row for a table's transactions where they must (a new CHECK
    constraint, SYNC IDENTITY): the embedded engine (imported on first use), unless the table's
    ``whole_table`` was set to another (a ``SparkTable`` sets Spark's)."""
    from .engine import ArrowWholeTable

    return ArrowWholeTable(txn)


class Table:
    """A Delta table: a local directory or an object-store location (``s3://``, ``s3a://``,
    ``abfss://``, ``az://``, ``gs://``) reached with ``storage_options`` (deltalake's key names;
    the standard environment variables fill in what they leave out)."""

    #: Set by a commit through this table: the handle reads its own commit on next use, not inside
    #: ``commit()`` (at 1M files that replay is 0.04-0.4 s, and a process that only commits never
    #: needs it; a failure to read it is not the commit's failure).
    _behind = False
    #: See :func:`embedded_whole_table`.
    whole_table: Callable[[Transaction], "engine.WholeTable"] = staticmethod(embedded_whole_table)

    def __init__(self, path: PathLike, storage_options: Optional[Mapping[str, str]] = None) -> None:
        self._h = _core.TableHandle.open(table_location(path), storage_options_arg(storage_options))

    @classmethod
    def from_handle(cls, handle: "_core.TableHandle") -> "Table":
        """A Table on a handle the core opened or created (for the engines' ``create``)."""
        t = cls.__new__(cls)
        t._h = handle
        return t

    @classmethod
    def create(
        cls,
        path: PathLike,
        schema: pa.Schema,
        partition_by: Optional[Sequence[str]] = (),
        properties: Optional[Mapping[str, str]] = None,
        name: Optional[str] = None,
        storage_options: Optional[Mapping[str, str]] = None,
        cluster_by: Optional[Sequence[str]] = None,
    ) -> "Table":
        """Commit version 0 (protocol, metadata, commitInfo). The protocol follows the
        properties: ``delta.enableDeletionVectors=true`` gives reader 3 / writer 7 with the
        ``deletionVectors`` feature, and so on. ``path`` and ``storage_options`` as in
        :class:`Table`. ``cluster_by``: liquid clustering by those columns (not with
        ``partition_by``); OPTIMIZE then clusters."""
        from ._schema import arrow_schema_to_delta

        return cls.from_handle(create_handle(path, arrow_schema_to_delta(schema), partition_by, properties, name, storage_options, cluster_by))

    def __repr__(self) -> str:
        return f"Table({self._h.root!r}, version={self.version})"

    @property
    def handle(self) -> "_core.TableHandle":
        """The core's table, for the modules that read commits and storage through it."""
        return self._h

    @property
    def path(self) -> str:
        return self._h.root

    @property
    def version(self) -> int:
        """Latest version known to this handle (see :meth:`refresh`), its own commits included."""
        return self._latest().version

    def refresh(self) -> int:
        """Read only commits newer than the latest known one; return the latest version."""
        # Cleared before reading: a commit landing meanwhile marks the table behind again. A
        # failed read leaves it as it was (a table that was current stays usable at its version).
        was_behind, self._behind = self._behind, False
        try:
            return self._h.refresh()
        except BaseException:
            self._behind = self._behind or was_behind
            raise

    def note_committed(self, txn: Optional["_core.TransactionHandle"] = None) -> None:
        """A transaction of this table committed: read its commit on next use (see ``_behind``).
        Given the transaction, the refresh takes that commit from the bytes it wrote instead of
        reading it back (on an object store, one request fewer per transaction)."""
        if txn is not None:
            self._h.adopt_commit(txn)
        self._behind = True

    def _latest(self) -> "_core.TableHandle":
        """The handle, having read this table's own last commit if it has not yet."""
        if self._behind:
            self.refresh()
        return self._h

    def snapshot(self, version: Optional[int] = None, timestamp: Optional[Instant] = None) -> Snapshot:
        """The latest known snapshot, or time travel to ``version`` or to ``timestamp`` (the
        newest version committed at or before it; see ``delta_occ.time_travel``)."""
        time_travel.one_of(version, timestamp, "snapshot")
        if timestamp is not None:
            version = self.version_at(timestamp)
        if version is not None and (not isinstance(version, int) or isinstance(version, bool)):
            raise InvalidArgumentError(f"version must be an int, got {version!r}")
        if version is not None and version < 0:
            raise InvalidArgumentError(f"version must be >= 0, got {version} (the latest version of {self.path} is {self.version})")
        from .snapshot import Snapshot

        return Snapshot(self._latest().snapshot(version))

    def version_at(self, timestamp: Instant) -> int:
        """The version current at ``timestamp``: the newest committed at or before it (the latest
        known one for any later instant). InvalidArgumentError before the table existed,
        VersionNotFoundError when log cleanup removed the versions of that time."""
        return int(self._latest().version_at(time_travel.epoch_ms(timestamp)))

    def newest_snapshot(self) -> Snapshot:
        """The newest snapshot in storage (refreshes first)."""
        self.refresh()
        return self.snapshot()

    def history(self, limit: Optional[int] = None) -> List[Dict[str, Any]]:
        """commitInfo of each commit, newest first, with ``version`` added."""
        if limit is not None:
            limit = int_arg("limit", limit, 0)
        return [history_entry(version, info) for version, info in self._h.history(limit)]

    def detail(self) -> Dict[str, Any]:
        """DESCRIBE DETAIL of the newest version (refreshes first): ``format``, ``id``,
        ``name``, ``description``, ``location``, ``createdAt``, ``lastModified``,
        ``partitionColumns``, ``clusteringColumns``, ``numFiles``, ``sizeInBytes``,
        ``properties``, ``minReaderVersion``, ``minWriterVersion``, ``tableFeatures`` (see
        ``delta_occ.detail``)."""
        from .detail import describe

        return describe(self.newest_snapshot(), self.path)

    def create_checkpoint(self) -> int:
        """Write a checkpoint of the newest version (refreshes first) and point
        ``_delta_log/_last_checkpoint`` at it, as a commit does every
        ``delta.checkpointInterval`` versions; returns its version. Readers then load the table
        from it instead of replaying the commits before it. Refused (UnsupportedFeatureError) on
        a table delta-occ cannot write."""
        snap = self.newest_snapshot()
        snap.handle.create_checkpoint()
        return snap.version

    def cleanup_metadata(self) -> Dict[str, Any]:
        """Log cleanup (deltalake's ``cleanup_metadata``): delete the commits, checkpoints and
        checksum files older than ``delta.logRetentionDuration`` (default 30 days) that no
        version inside that window needs, as commits do after each checkpoint (nothing when
        ``delta.enableExpiredLogCleanup=false``). The log keeps the newest checkpoint at or
        before the oldest version still in the window, so without a checkpoint nothing goes
        (:meth:`create_checkpoint` first). Returns ``deleted`` (log files), ``sidecars_deleted``
        and ``oldest_version`` (the version the log now starts at, or None when nothing
        expired); time travel before that version fails afterwards. ``probes_deleted``: the
        conditional-write probes (``_delta_log/.delta-occ-probe-*``) left by killed writers and
        older than an hour, removed too."""
        c = self.newest_snapshot().handle.cleanup_log()
        return {"deleted": c["deleted"], "sidecars_deleted": c["sidecars_deleted"], "oldest_version": c["boundary"], "probes_deleted": c["probes_deleted"]}

    def timeline(self, from_version: Optional[int] = None, to_version: Optional[int] = None, since: Optional[Instant] = None) -> Timeline:
        """The commits from ``from_version`` (or the first at or after ``since``; default the
        newest 10,000) to ``to_version`` (default the latest) as a
        :class:`~delta_occ.timeline.Timeline`: one lane per writer, each commit a span from its
        read to its commit, the winners it was checked against and the rules that passed it."""
        from .timeline import build

        return build(self, from_version, to_version, since)

    # -- transactions --------------------------------------------------------------------------

    def begin(
        self,
        isolation_level: LevelLike = None,
        row_level: bool = True,
        data_skipping: bool = True,
        max_attempts: Optional[int] = None,
        time_budget: Optional[float] = None,
        read_version: Optional[int] = None,
        row_level_budget: Optional[float] = None,
    ) -> Transaction:
        """Refresh and pin the latest snapshot (or ``read_version``, for work that read an
        older version) in a new transaction.

        ``isolation_level`` may only be stronger than the table's (Serializable over
        WriteSerializable). ``data_skipping`` enables conflict-time data skipping with file
        statistics (concurrency.md §3.5; on by default). ``time_budget`` (seconds, default 120)
        bounds the commit loop; ``max_attempts`` caps its attempts only when given (by default
        a commit whose checks keep passing retries until the budget runs out, whoever wins). ``row_level`` (default
        True) resolves conflicts on row positions on tables with deletion vectors
        (concurrency.md §4); ``row_level_budget`` (seconds, default 5) bounds that work per
        commit attempt before it falls back to file level.
        """
        # The core's begin refreshes (this table's own last commit included), so it is not read
        # first here too: that was one more listing per transaction on an object store.
        was_behind, self._behind = self._behind, False
        try:
            handle = self._h.begin(level_name(isolation_level), bool(row_level), bool(data_skipping), read_version)
        except BaseException:
            self._behind = self._behind or was_behind
            raise
        from .transaction import Transaction

        return Transaction(
            handle,
            max_attempts,
            time_budget,
            table=self,
            row_level_budget=row_level_budget,
        )

    # -- one-call operations (embedded engine) ---------------------------------------------------

    def _run(
        self,
        stage: Any,
        isolation_level: LevelLike,
        row_level: bool,
        max_attempts: Optional[int],
        operation: Optional[str] = None,
        params: Optional[Dict[str, Any]] = None,
        *,
        name: str = "WRITE",
        app: one_call.AppVersion = None,
        rerun_on_conflict: Any = 0,
    ) -> CommitResult:
        """Begin, let ``stage`` stage the actions (aborting if it fails), commit; exactly-once app
        versions and re-runs as ``delta_occ.one_call`` says (``name``: the operation, for a
        result that wrote nothing)."""
        from . import one_call

        def execute(txn: Transaction) -> CommitResult:
            try:
                stage(txn)
            except BaseException:
                txn.abort()
                raise
            return txn.commit(operation, params)

        return one_call.run(
            lambda: self.begin(isolation_level=isolation_level, row_level=row_level, max_attempts=max_attempts),
            execute,
            core=lambda txn: txn,
            latest=self.newest_snapshot,
            operation=operation or name,
            app=app,
            rerun_on_conflict=one_call.rerun_arg(rerun_on_conflict),
        )

    def append(
        self,
        data: Any,
        *,
        schema_mode: Optional[str] = None,
        isolation_level: LevelLike = None,
        row_level: bool = True,
        max_attempts: Optional[int] = None,
        app_id: Optional[str] = None,
        app_version: Optional[int] = None,
        rerun_on_conflict: int = 0,
    ) -> CommitResult:
        """Blind append of a pyarrow Table / RecordBatchReader (never conflicts with other
        appends). Columns must have the table's types or widen to them; ``schema_mode="merge"``
        adds the columns the table lacks in the same commit (docs/guide.md "Policies").
        ``app_id`` / ``app_version``: write exactly once per application version (a version at
        or below the recorded one is not written: ``committed=False``); ``rerun_on_conflict``:
        see ``delta_occ.one_call``."""
        from . import one_call

        app = one_call.app_args(app_id, app_version)
        one_call.rereadable(data, rerun_on_conflict)
        return self._run(
            lambda t: t.append(data, schema_mode=schema_mode), isolation_level, row_level, max_attempts, name="WRITE", app=app, rerun_on_conflict=rerun_on_conflict
        )

    def overwrite(
        self,
        data: Any,
        replace_where: Optional[str] = None,
        *,
        dynamic_partitions: bool = False,
        schema_mode: Optional[str] = None,
        isolation_level: LevelLike = None,
        row_level: bool = True,
        max_attempts: Optional[int] = None,
        app_id: Optional[str] = None,
        app_version: Optional[int] = None,
        rerun_on_conflict: int = 0,
    ) -> CommitResult:
        """Replace all rows, the rows matching ``replace_where`` (new rows must match it), or
        with ``dynamic_partitions=True`` the partitions present in ``data``. ``schema_mode``,
        ``app_id`` / ``app_version`` and ``rerun_on_conflict`` as in :meth:`append`."""
        from . import one_call

        app = one_call.app_args(app_id, app_version)
        one_call.rereadable(data, rerun_on_conflict)
        return self._run(
            lambda t: t.overwrite(data, replace_where, dynamic_partitions=dynamic_partitions, schema_mode=schema_mode),
            isolation_level,
            row_level,
            max_attempts,
            name="WRITE",
            app=app,
            rerun_on_conflict=rerun_on_conflict,
        )

    def delete(
        self,
        where: Optional[str] = None,
        *,
        isolation_level: LevelLike = None,
        row_level: bool = True,
        max_attempts: Optional[int] = None,
        rerun_on_conflict: int = 0,
    ) -> CommitResult:
        """Delete the rows matching ``where`` (all rows when None); DVs when enabled.
        ``rerun_on_conflict`` as in :meth:`append`."""
        return self._run(lambda t: t.delete(where), isolation_level, row_level, max_attempts, name="DELETE", rerun_on_conflict=rerun_on_conflict)

    def update(
        self,
        where: Optional[str],
        set: Mapping[str, str],  # noqa: A002 - api.md name
        *,
        isolation_level: LevelLike = None,
        row_level: bool = True,
        max_attempts: Optional[int] = None,
        rerun_on_conflict: int = 0,
    ) -> CommitResult:
        """Update the rows matching ``where``; ``set`` maps columns to SQL expressions.
        ``rerun_on_conflict`` as in :meth:`append`."""
        return self._run(lambda t: t.update(where, set), isolation_level, row_level, max_attempts, name="UPDATE", rerun_on_conflict=rerun_on_conflict)

    def merge(
        self,
        source: Any,
        on: str,
        *,
        source_alias: str = "s",
        target_alias: str = "t",
        when_matched_update: Optional[Mapping[str, str]] = None,
        when_matched_delete: Union[bool, str] = False,
        when_not_matched_insert: Union[bool, Mapping[str, str]] = False,
        schema_mode: Optional[str] = None,
        isolation_level: LevelLike = None,
        row_level: bool = True,
        max_attempts: Optional[int] = None,
        app_id: Optional[str] = None,
        app_version: Optional[int] = None,
        rerun_on_conflict: int = 0,
    ) -> Any:
        """MERGE INTO this table USING ``source`` ON ``on`` (see ``delta_occ.operations.merge``).
        Without clause keywords: a :class:`~delta_occ.merge_builder.MergeBuilder` for any clauses,
        run by its ``execute(...)`` (which takes the options below). ``schema_mode="merge"`` adds
        the source columns the table lacks; ``app_id`` / ``app_version`` and ``rerun_on_conflict``
        as in :meth:`append`. Returns the ``CommitResult`` (the keyword form)."""
        options: Dict[str, Any] = dict(isolation_level=isolation_level, row_level=row_level, max_attempts=max_attempts, app_id=app_id, app_version=app_version,
                       rerun_on_conflict=rerun_on_conflict)
        aliases = dict(source_alias=source_alias, target_alias=target_alias)
        if not (when_matched_update or when_matched_delete or when_not_matched_insert):
            from .merge_builder import MergeBuilder

            def run(clauses: List[ClauseSpec], mode: Optional[str], given: Dict[str, Any]) -> CommitResult:
                return self._merge(source, on, dict(aliases, clauses=clauses, schema_mode=mode or schema_mode), **dict(options, **given))

            return MergeBuilder(run)
        clauses = dict(aliases, when_matched_update=when_matched_update, when_matched_delete=when_matched_delete,
                       when_not_matched_insert=when_not_matched_insert, schema_mode=schema_mode)
        return self._merge(source, on, clauses, **options)

    def _merge(
        self, source: Any, on: str, clauses: Dict[str, Any], *, isolation_level: LevelLike = None, row_level: bool = True,
        max_attempts: Optional[int] = None, app_id: Optional[str] = None, app_version: Optional[int] = None, rerun_on_conflict: int = 0,
    ) -> CommitResult:
        from . import one_call

        app = one_call.app_args(app_id, app_version)
        one_call.rereadable(source, rerun_on_conflict)
        return self._run(lambda t: t.merge(source, on, **clauses), isolation_level, row_level, max_attempts, name="MERGE", app=app, rerun_on_conflict=rerun_on_conflict)

    def optimize(
        self,
        target_file_size: Optional[int] = None,
        where: Optional[str] = None,
        zorder_by: Optional[Sequence[str]] = None,
        *,
        full: bool = False,
        isolation_level: LevelLike = None,
        row_level: bool = True,
        max_attempts: Optional[int] = None,
        rerun_on_conflict: int = 0,
    ) -> CommitResult:
        """Compact small files (dataChange=false; SnapshotIsolation). With nothing to compact no
        commit is written, as delta-spark's OPTIMIZE does: the result has ``committed=False``.
        ``zorder_by``: rewrite every file of each partition with its rows in the Z-order of those
        data columns (OPTIMIZE ... ZORDER BY; the rewritten files carry no row provenance, so DML
        racing it conflicts at file level, unless row tracking lets it follow rows by id). On a clustered table OPTIMIZE clusters the files not
        clustered yet (and files with deletion vectors); ``full=True`` reclusters every file (after
        ``set_clustering`` changed the columns: OPTIMIZE FULL). ``rerun_on_conflict`` as in
        :meth:`append`."""
        return self._run(lambda t: t.optimize(target_file_size, where, zorder_by, full=full), isolation_level, row_level, max_attempts, name="OPTIMIZE", rerun_on_conflict=rerun_on_conflict)

    @classmethod
    def begin_create(
        cls,
        path: PathLike,
        schema: pa.Schema,
        partition_by: Optional[Sequence[str]] = (),
        properties: Optional[Mapping[str, str]] = None,
        name: Optional[str] = None,
        storage_options: Optional[Mapping[str, str]] = None,
        description: Optional[str] = None,
    ) -> Transaction:
        """A transaction that creates the table (read version -1): what it stages (an
        ``append``, say) is in version 0 with the table. Committing it after another writer
        created the table raises ProtocolChangedException with the empty-directory hint."""
        from ._schema import arrow_schema_to_delta
        from .transaction import Transaction

        schema_json = arrow_schema_to_delta(schema)
        props = new_table_properties(schema_json, properties)
        return Transaction(
            _core.TableHandle.begin_create(
                table_location(path), schema_json, partition_by_arg(partition_by), props, name, storage_options_arg(storage_options), description
            )
        )

    def _metadata_commit(self, operation: str, params: Dict[str, Any], stage: Any, isolation_level: LevelLike, max_attempts: Optional[int]) -> CommitResult:
        return self._run(stage, isolation_level, True, max_attempts, operation, params)

    def set_properties(self, props: Mapping[str, str], *, isolation_level: LevelLike = None, max_attempts: Optional[int] = None) -> CommitResult:
        """Merge table properties in one metadata commit (fails every concurrent writer). A new
        CHECK constraint among them is checked as :meth:`add_constraint` does (Serializable
        unless ``isolation_level`` says otherwise, which it then refuses)."""
        from . import constraints

        props = {str(k): str(v) for k, v in props.items()}
        if isolation_level is None and any(constraints.is_constraint_key(k) for k in props):
            isolation_level = IsolationLevel.SERIALIZABLE
        return self._metadata_commit(
            "SET TBLPROPERTIES", {"properties": props}, lambda t: t.set_properties(props), isolation_level, max_attempts
        )

    def unset_properties(self, keys: Union[str, Sequence[str]], *, if_exists: bool = False, max_attempts: Optional[int] = None) -> CommitResult:
        """ALTER TABLE UNSET TBLPROPERTIES in one metadata commit (fails every concurrent
        writer). A key the table does not have raises InvalidArgumentError, as in Delta, unless
        ``if_exists`` (UNSET TBLPROPERTIES IF EXISTS): then it is skipped, and when no key is
        set nothing is committed (``committed=False``)."""
        names = [keys] if isinstance(keys, str) else [str(k) for k in keys]

        def stage(txn: Transaction) -> None:
            current = txn.snapshot.properties
            missing = [k for k in names if k not in current]
            if missing and not if_exists:
                raise InvalidArgumentError(
                    f"UNSET TBLPROPERTIES on {self.path} (version {txn.read_version}): the table has no property "
                    f"{', '.join(map(repr, missing))} (if_exists=True skips absent keys)",
                    table=self.path, version=txn.read_version,
                )
            present = [k for k in names if k in current]
            if present:
                txn.unset_properties(present)

        return self._metadata_commit("UNSET TBLPROPERTIES", {"properties": names, "ifExists": if_exists}, stage, None, max_attempts)

    def add_constraint(self, name: str, expr: str, *, max_attempts: Optional[int] = None) -> CommitResult:
        """Add a CHECK constraint (``ALTER TABLE ADD CONSTRAINT``): ConstraintViolationError,
        with nothing committed, when a live row does not make ``expr`` TRUE (FALSE and NULL both
        break it); afterwards every write of new or changed rows is checked, by both engines.
        The check reads the whole table in a Serializable transaction, so rows a concurrent
        writer adds meanwhile make it conflict instead of slipping past."""
        return self._run(
            lambda t: t.add_constraint(name, expr), IsolationLevel.SERIALIZABLE, True, max_attempts, name="ADD CONSTRAINT"
        )

    def drop_constraint(self, name: str, *, if_exists: bool = False, max_attempts: Optional[int] = None) -> CommitResult:
        """Drop a CHECK constraint (InvalidArgumentError when there is none of that name, unless
        ``if_exists``: then nothing is committed)."""
        return self._run(lambda t: t.drop_constraint(name, if_exists=if_exists), None, True, max_attempts, name="DROP CONSTRAINT")

    def set_clustering(self, columns: Optional[Sequence[str]], *, max_attempts: Optional[int] = None) -> CommitResult:
        """ALTER TABLE CLUSTER BY ``columns`` (None or ``[]``: CLUSTER BY NONE) in one commit;
        files already written stay as they are until the next OPTIMIZE clusters them. A
        concurrent change of the clustering conflicts (the same system domain)."""
        cols = list(columns or [])
        old = self.newest_snapshot().clustering_columns or []
        params = {"oldClusteringColumns": ",".join(old), "newClusteringColumns": ",".join(cols)}
        return self._run(lambda t: t.set_clustering(cols), None, True, max_attempts, "CLUSTER BY", params, name="CLUSTER BY")

    def sync_identity(self, column: str, *, max_attempts: Optional[int] = None) -> CommitResult:
        """ALTER TABLE ... ALTER COLUMN ``column`` SYNC IDENTITY: after rows were given explicit
        values (GENERATED BY DEFAULT), move the column's high-water mark so that generated values
        start beyond all of them. A metadata commit (concurrent writers fail); nothing is
        committed when the mark already covers every value."""
        return self._metadata_commit("SYNC IDENTITY", {"column": column}, lambda t: t.sync_identity(column), None, max_attempts)

    def set_isolation_level(self, level: Union[str, IsolationLevel], *, max_attempts: Optional[int] = None) -> CommitResult:
        """Set ``delta.isolationLevel`` (Serializable or WriteSerializable) in a metadata commit."""
        lvl = IsolationLevel.parse(level)
        return self._metadata_commit(
            "SET TBLPROPERTIES",
            {"properties": {"delta.isolationLevel": lvl.value}},
            lambda t: t.set_isolation_level(lvl),
            None,
            max_attempts,
        )

    def set_schema(self, schema: pa.Schema, *, allow_drop: bool = False, max_attempts: Optional[int] = None) -> CommitResult:
        """Replace the table schema in a metadata commit. Partition columns must remain; with
        column mapping, existing fields keep their ids and physical names. A column the new
        schema lacks raises SchemaMismatchError unless ``allow_drop=True`` (a rename written
        this way would read back NULL: use :meth:`rename_column`)."""
        return self._metadata_commit(
            "REPLACE COLUMNS", {"columns": str(schema)}, lambda t: t.set_schema(schema, allow_drop), None, max_attempts
        )

    def rename_column(self, old: str, new: str, *, max_attempts: Optional[int] = None) -> CommitResult:
        """ALTER TABLE RENAME COLUMN in one metadata commit: the column keeps its data (column
        mapping: its id and physical name stay). ``old`` is dotted for a nested field. Needs
        column mapping (UnsupportedFeatureError otherwise); a column a constraint, a generated
        column or the clustering names is refused."""
        return self._metadata_commit(
            "RENAME COLUMN", {"oldColumnPath": old, "newColumnPath": new}, lambda t: t.rename_column(old, new), None, max_attempts
        )

    def drop_columns(self, names: Sequence[str], *, max_attempts: Optional[int] = None) -> CommitResult:
        """ALTER TABLE DROP COLUMNS in one metadata commit (no data rewritten: readers stop
        seeing the values). Needs column mapping; partition, clustering and referenced columns
        are refused."""
        return self._metadata_commit(
            "DROP COLUMNS", {"columns": list(names) if not isinstance(names, str) else names}, lambda t: t.drop_columns(names), None, max_attempts
        )

    def set_column_comment(self, name: str, comment: str, *, max_attempts: Optional[int] = None) -> CommitResult:
        """ALTER TABLE ALTER COLUMN ``name`` COMMENT ``comment`` in one metadata commit."""
        return self._metadata_commit(
            "CHANGE COLUMN", {"column": name, "comment": comment}, lambda t: t.set_column_comment(name, comment), None, max_attempts
        )

    def set_nullable(self, name: str, nullable: bool, *, max_attempts: Optional[int] = None) -> CommitResult:
        """ALTER TABLE ALTER COLUMN ``name`` DROP NOT NULL in one metadata commit
        (``nullable=True``). ``False`` raises InvalidArgumentError, as in Delta: rows already in
        the table may hold nulls (a CHECK constraint ``name IS NOT NULL`` checks them instead)."""
        return self._metadata_commit(
            "CHANGE COLUMN", {"column": name, "nullable": nullable}, lambda t: t.set_nullable(name, nullable), None, max_attempts
        )

    def widen_column(self, name: str, to: Union[pa.DataType, str], *, max_attempts: Optional[int] = None) -> CommitResult:
        """ALTER TABLE ALTER COLUMN ``name`` TYPE ``to`` in one metadata commit, as a type
        widening (:meth:`Transaction.widen_column`): the typeWidening feature and
        ``delta.enableTypeWidening`` are added, ``delta.typeChanges`` records the change, no data
        is rewritten and every reader reads old files in the new type."""
        return self._metadata_commit(
            "CHANGE COLUMN", {"column": name, "newType": str(to)}, lambda t: t.widen_column(name, to), None, max_attempts
        )

    def add_columns(self, fields: Sequence[pa.Field], *, max_attempts: Optional[int] = None) -> CommitResult:
        """ALTER TABLE ADD COLUMNS in one metadata commit: nullable fields, appended;
        ``pa.field("a.b", ...)`` adds ``b`` to the struct column ``a``."""
        import pyarrow as pa

        return self._metadata_commit(
            "ADD COLUMNS", {"columns": [str(f) for f in fields] if not isinstance(fields, pa.Field) else str(fields)},
            lambda t: t.add_columns(fields), None, max_attempts
        )

    def vacuum(self, retention_hours: Optional[float] = None, dry_run: bool = False, enforce_retention_duration: bool = True) -> VacuumResult:
        """Delete the data and deletion-vector files that no version inside the retention window
        (default the table's ``delta.deletedFileRetentionDuration``, one week) can read, and
        files no version references once they are older than the window (a writer may still be
        about to commit a newer one). A shorter retention than the table's is refused unless
        ``enforce_retention_duration=False``. ``dry_run`` lists exactly what would be deleted.
        Writes no commit; versions older than the window may no longer read afterwards."""
        from .vacuum import vacuum

        return vacuum(self.newest_snapshot().handle, retention_hours, dry_run, enforce_retention_duration)

    def restore(
        self, version: Optional[int] = None, timestamp: Optional[Instant] = None, *, isolation_level: LevelLike = None, max_attempts: Optional[int] = None
    ) -> CommitResult:
        """RESTORE the table to ``version`` or to the version current at ``timestamp``: one
        commit that removes the files added since and re-adds the files removed since (deletion
        vectors included), and puts back that version's schema and properties (identity
        high-water marks and in-commit-timestamp settings never go back). It reads the whole
        table, so a concurrent change to the data conflicts like any writer's; VersionNotFoundError
        when a file it needs was vacuumed. Restoring the current state commits nothing."""
        time_travel.one_of(version, timestamp, "restore")
        if version is None and timestamp is None:
            raise InvalidArgumentError("restore needs a version or a timestamp")
        self.refresh()
        target = self.snapshot(version, timestamp)
        params: Dict[str, Any] = {"version": target.version}
        if timestamp is not None:
            params["timestamp"] = str(timestamp)

        def stage(txn: Transaction) -> None:
            txn.restore(target)

        return self._run(stage, isolation_level, False, max_attempts, "RESTORE", params, name="RESTORE")

    def drop_feature(self, name: str, *, max_attempts: Optional[int] = None, cleanup: Optional[Callable[[], Any]] = None) -> CommitResult:
        """DROP FEATURE (only ``deletionVectors`` so far), the protocol's three steps:

        1. when the feature is in use: one commit that sets ``delta.enableDeletionVectors=false``
           and rewrites every file with a deletion vector without its deleted rows;
        2. FeatureDropPendingError (``ready_at_ms`` says when to run again) until the newest
           version that used deletion vectors is older than
           ``delta.dropFeatureTruncateHistory.retentionDuration`` (default 24 hours);
        3. then a commit without the feature in the protocol, which checkpoints itself and deletes
           the log before it (time travel to older versions ends there).

        Every step is a transaction: a concurrent writer conflicts as with any metadata or
        protocol change. ``cleanup`` commits step 1 another way (SparkTable: with Spark jobs)."""
        if not isinstance(name, str) or not name:
            raise InvalidArgumentError(f"feature name must be a non-empty str, got {name!r}")

        def downgrade() -> CommitResult:
            r = self._run(lambda t: t.drop_feature(name), None, False, max_attempts, "DROP FEATURE", {"featureName": name}, name="DROP FEATURE")
            if r.checkpoint_error:
                # The downgrade committed, but versions that used the feature are still in the log.
                raise DeltaIOError(
                    f"DROP FEATURE {name} of {self.path} committed version {r.version}, but truncating the log before it failed: "
                    f"{r.checkpoint_error}. Versions that use {name} stay readable by time travel until the log before version "
                    f"{r.version} is removed (log cleanup removes it once it expires)",
                    table=self.path,
                    version=r.version,
                )
            return r

        try:
            return downgrade()
        except FeatureDropPendingError as e:
            if e.ready_at_ms is not None:
                raise
        if cleanup is not None:
            cleanup()
        else:
            from .transaction import stop_using

            self._run(stop_using(name), None, False, max_attempts, name="REORG")
        return downgrade()

    def read_change_feed(
        self, starting_version: Optional[int] = None, ending_version: Optional[int] = None, columns: Optional[Sequence[str]] = None, *,
        starting_timestamp: Optional[Instant] = None, ending_timestamp: Optional[Instant] = None,
    ) -> pa.Table:
        """The change data feed of versions ``starting_version`` .. ``ending_version`` (the latest
        when None): the rows each commit inserted, deleted or updated, with ``_change_type``
        (``insert``, ``delete``, ``update_preimage``, ``update_postimage``), ``_commit_version``
        and ``_commit_timestamp``, in version order. Instead of versions, ``starting_timestamp``
        starts at the first version committed at or after it and ``ending_timestamp`` ends at the
        version current at it (the commit times time travel uses). Needs
        ``delta.enableChangeDataFeed=true`` at every version of the range (InvalidArgumentError
        otherwise); see ``delta_occ.change_feed``."""
        start, end = self.feed_range(starting_version, ending_version, starting_timestamp=starting_timestamp, ending_timestamp=ending_timestamp)
        from . import change_feed

        return change_feed.read(self, start, end, columns)

    def feed_range(
        self, starting_version: Optional[int] = None, ending_version: Optional[int] = None, *,
        starting_timestamp: Optional[Instant] = None, ending_timestamp: Optional[Instant] = None,
    ) -> Tuple[int, Optional[int]]:
        """The versions a change-feed read covers (``read_change_feed``'s arguments; the end None
        for the latest)."""
        time_travel.one_of(starting_version, starting_timestamp, "read_change_feed (start)")
        time_travel.one_of(ending_version, ending_timestamp, "read_change_feed (end)")
        if starting_timestamp is not None:
            starting_version = time_travel.version_from(self._latest(), starting_timestamp)
        elif starting_version is None:
            raise InvalidArgumentError("read_change_feed: give starting_version or starting_timestamp")
        if ending_timestamp is not None:
            ending_version = self.version_at(ending_timestamp)
        return starting_version, ending_version

    def changes(self, from_version: int) -> Iterator[Dict[str, Any]]:
        """Follow the log from ``from_version`` to the latest version known at each step: one
        dict per commit (version, operation, commit_info, added, removed, app_transactions).
        Stops with MetadataChangedException at a commit after ``from_version`` that changes
        metadata, as Delta streaming reads do (concurrency.md §7); restarting from that commit's
        version yields it and goes on."""
        version = version_arg("from_version", from_version)
        latest = self.refresh()
        if from_version > latest:
            raise VersionNotFoundError(
                f"version {from_version} of {self.path} does not exist yet (latest is {latest})",
                table=self.path,
                version=from_version,
            )
        while True:
            if version > latest:
                latest = self.refresh()
                if version > latest:
                    return
            summary = self._h.commit_summary(version)
            if summary is None:
                raise VersionNotFoundError(
                    f"commit {version} of {self.path} is not in the log (cleaned up?)", table=self.path, version=version
                )
            info = json.loads(summary["commit_info"]) if summary["commit_info"] else None
            summary["commit_info"] = info
            if summary["metadata_changed"] and version > from_version:
                raise MetadataChangedException(
                    f"[DELTA_METADATA_CHANGED] The metadata of table {self.path} was changed at version {version} "
                    f"by {summary['operation']}. A change reader stops here; restart it deliberately from "
                    f"version {version} after checking the new schema and properties.",
                    winning_version=version,
                    winning_operation=summary["operation"],
                    table=self.path,
                    winning_commit_info=info,
                    rule="metadata_changed",
                )
            yield summary
            version += 1
