"""PySpark integration (api.md "PySpark"): Spark executors read and write parquet, the Python
driver runs the Delta transaction through the same Rust core and conflict checker as the embedded
engine. No delta-spark JARs, no Python UDFs (nothing starts a Python worker on executors), no
JVM internals: a classic SparkSession and a Spark Connect one are both taken (``_session``).

``pip install 'delta-occ[spark]'`` installs pyspark; ``import delta_occ`` works without it.
"""

from __future__ import annotations

try:
    import pyspark  # noqa: F401
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError("delta_occ.spark needs pyspark: pip install 'delta-occ[spark]'") from e

import contextlib
import functools
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Set, Union

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.types import StructType

from .. import change_feed, commit_note, one_call
from .._args import LevelLike
from .._schema import arrow_schema_to_delta
from .._write import Layout
from ..exceptions import InvalidArgumentError
from ..instant import Now
from ..isolation import IsolationLevel
from ..merge_builder import MergeBuilder
from ..operations.bookkeeping import Lifecycle
from ..operations.merge import ClauseSpec
from ..snapshot import Snapshot
from ..table import PathLike, Table, create_handle
from ..time_travel import Instant
from ..transaction import CommitResult, Transaction, stop_using
from ..vacuum import VacuumResult
from . import _dml
from ._change_feed import read_feed
from ._columns import logical_schema
from ._rowexpr import ansi, compile_where, evaluating
from ._scan import ScanPlan, check_columns, files_for, read_plan
from ._session import Session, check_frame, check_session, using

if TYPE_CHECKING:
    # `Session` names the Connect class as a forward reference (importing it costs half a
    # second); tools that resolve this module's annotations (pdoc) find it here.
    from pyspark.sql.connect.session import SparkSession as ConnectSession  # noqa: F401
from ._whole_table import SparkWholeTable
from ._write import Job


def _read(spark: Session, snap: Snapshot, where: Optional[str], columns: Optional[Sequence[str]], paths: Optional[List[str]] = None) -> DataFrame:
    """Rows of ``snap`` matching ``where`` with DVs applied (``paths``: the files to read, when
    a transaction's scan already chose them). The core chooses the files; the rows are those
    where the core's compiled row expression holds, as on the embedded engine."""
    with using(spark):
        return _read_rows(spark, snap, Now().text(where), columns, paths)


def _read_rows(spark: Session, snap: Snapshot, where: Optional[str], columns: Optional[Sequence[str]], paths: Optional[List[str]]) -> DataFrame:
    h = snap.handle
    selected_files = files_for(h, where)
    cond = compile_where(where, snap.schema)
    if paths is None:
        all_paths = snap.files().column("path")
        paths = all_paths.to_pylist() if selected_files is None else all_paths.take(pa.array(selected_files, pa.int64())).to_pylist()
    plan = ScanPlan(h, paths)
    wanted = check_columns(plan.logical, columns)
    names = wanted if wanted is not None else [f.name for f in plan.logical.fields]
    needed = names + [c for c in (cond.columns if cond else []) if c not in names]
    df = read_plan(spark, plan, needed)
    if cond is not None:
        with ansi(spark):
            df = df.filter(cond.filter())
    return df.select(*[df[c] for c in names]) if needed != names else df


class SparkTransaction(Lifecycle):
    """A driver-side transaction over several Spark steps: ``read`` records what it reads,
    ``append`` / ``overwrite`` / ``delete`` / ``update`` / ``merge`` / ``optimize`` run their Spark
    jobs now and stage the result; ``commit`` checks and rebases in the core without running a
    job again. Operations in one transaction must touch different existing files (a second
    operation does not see the first one's uncommitted changes). Work that does not commit
    leaves no file referenced and deletes its output directories."""

    def __init__(self, table: "SparkTable", txn: Transaction) -> None:
        self.spark = table.spark
        self.table = table
        self.txn = txn
        txn.note[commit_note.ENGINE] = "spark"
        self.snap_handle = txn.snapshot.handle
        self.lay = Layout(txn.snapshot)
        #: The table schema as Spark types with logical names.
        self.logical = logical_schema(self.snap_handle.schema_json)
        #: Its output directories are the transaction's: removed with it when it does not commit.
        self.job = Job(txn.bookkeeping)
        self.touched: Set[str] = set()
        #: On a table with the change data feed: whether an operation appended rows without
        #: recording them, and whether one recorded changes (a commit with change-data files is
        #: read from them alone, so the two cannot share a commit; see ``_dml.SparkEngine``).
        self.appended_unrecorded = False
        self.changes_recorded = False
        self.result: Optional[CommitResult] = None
        #: Seconds spent in Spark jobs that find rows ("spark") and on the driver staging and
        #: committing ("driver"); for benchmarks and for users sizing their jobs.
        self.timings: Dict[str, float] = {"spark": 0.0, "driver": 0.0}

    def relayout(self) -> None:
        """Write with the schema staged in the transaction (a write's ``schema_mode``)."""
        self.lay = Layout(self.txn.snapshot, self.txn.schema_json)
        self.logical = logical_schema(self.txn.schema_json)

    def __repr__(self) -> str:
        return f"SparkTransaction(read_version={self.read_version}, state={self.state!r}, operations={self.txn.bookkeeping.operations})"

    @property
    def read_version(self) -> int:
        """As ``Transaction.read_version``: this is the driver's transaction."""
        return self.txn.read_version

    @property
    def state(self) -> str:
        """As ``Transaction.state``."""
        return self.txn.state

    @property
    def isolation_level(self) -> IsolationLevel:
        """As ``Transaction.isolation_level``."""
        return self.txn.isolation_level

    # -- bookkeeping used by the operations ----------------------------------------------------

    @contextlib.contextmanager
    def timed(self, what: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.timings[what] += time.perf_counter() - start

    def check_untouched(self, paths: Sequence[str]) -> None:
        both = self.touched.intersection(paths)
        if both:
            raise InvalidArgumentError(
                f"an earlier operation of this transaction already changes {sorted(both)[:3]}; operations in one "
                "transaction must touch different files (commit and begin a new transaction)"
            )

    def _run(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            # Spark's jobs evaluate in ANSI mode, as the core does; its evaluation errors are
            # the core's PredicateError.
            with using(self.spark), ansi(self.spark), evaluating("the operation's conditions and values"):
                return fn(self, *args, **kwargs)
        except BaseException:
            self.abort()
            raise

    # -- reads and operations ------------------------------------------------------------------

    def read(self, where: Optional[str] = None, columns: Optional[Sequence[str]] = None) -> DataFrame:
        """Record a read of the rows matching ``where`` (as ``Transaction.scan``) and return them."""
        where = self.txn.now.text(where)  # the instant the scan records is the one the rows use
        paths = self.txn.scan(where, ["path"]).column("path").to_pylist()
        return _read(self.spark, self.txn.snapshot, where, columns, paths)

    def append(self, df: DataFrame, *, schema_mode: Optional[str] = None) -> None:
        """Stage an append of ``df`` (written by the executors); ``schema_mode`` as in
        ``Transaction.append``."""
        self._run(_dml.append, check_frame(self.spark, df), schema_mode)

    def overwrite(
        self, df: DataFrame, replace_where: Optional[str] = None, *, dynamic_partitions: bool = False, schema_mode: Optional[str] = None
    ) -> None:
        """Stage an overwrite with ``df``: of the whole table, of the rows ``replace_where`` selects, or (``dynamic_partitions``) of the partitions ``df`` writes;
        ``schema_mode`` as in ``Transaction.overwrite`` (``"overwrite"``: the whole table only)."""
        self._run(_dml.overwrite, check_frame(self.spark, df), replace_where, bool(dynamic_partitions), schema_mode)

    def delete(self, where: Optional[str] = None) -> None:
        """Stage a DELETE of the rows ``where`` selects (every row when None)."""
        self._run(_dml.delete, where)

    def update(self, where: Optional[str], set: Mapping[str, str]) -> None:  # noqa: A002 - api.md name
        """Stage an UPDATE: ``set`` maps columns to SQL expressions, for the rows ``where`` selects."""
        self._run(_dml.update, where, set)

    def merge(self, source: DataFrame, on: str, **clauses: Any) -> Any:
        """Stage a MERGE (the keywords of ``Table.merge``); without clause keywords, a
        :class:`~delta_occ.merge_builder.MergeBuilder` whose ``execute()`` stages it."""
        source = check_frame(self.spark, source, "source")
        if clauses.get("clauses") is None and not any(clauses.get(k) for k in ("when_matched_update", "when_matched_delete", "when_not_matched_insert")):
            def run(specs: List[ClauseSpec], mode: Optional[str], _options: Dict[str, Any]) -> None:
                self._run(_dml.merge, source, on, **dict(clauses, clauses=specs, schema_mode=mode))

            return MergeBuilder(run, options=False)
        self._run(_dml.merge, source, on, **clauses)
        return None

    def optimize(
        self, target_file_size: Optional[int] = None, where: Optional[str] = None, zorder_by: Optional[Sequence[str]] = None, *, full: bool = False
    ) -> int:
        """Stage an OPTIMIZE (compaction, or Z-order with ``zorder_by``); returns the number of bins staged (0: nothing to compact)."""
        return int(self._run(_dml.optimize, target_file_size, where, zorder_by, full))

    def purge_deletion_vectors(self) -> int:
        return int(self._run(_dml.purge))

    @property
    def snapshot(self) -> Snapshot:
        """The read snapshot (as ``Transaction.snapshot``)."""
        return self.txn.snapshot

    def set_properties(self, props: Mapping[str, str]) -> None:
        """Stage table properties in this commit (as ``Transaction.set_properties``)."""
        self.txn.set_properties(props)

    def set_schema(self, schema: pa.Schema, allow_drop: bool = False) -> None:
        """Stage a new schema (as ``Transaction.set_schema``)."""
        self.txn.set_schema(schema, allow_drop)

    def rename_column(self, old: str, new: str) -> None:
        """Stage RENAME COLUMN (as ``Transaction.rename_column``)."""
        self.txn.rename_column(old, new)

    def drop_columns(self, names: Sequence[str]) -> None:
        """Stage DROP COLUMNS (as ``Transaction.drop_columns``)."""
        self.txn.drop_columns(names)

    def set_column_comment(self, name: str, comment: str) -> None:
        """Stage a column comment (as ``Transaction.set_column_comment``)."""
        self.txn.set_column_comment(name, comment)

    def set_nullable(self, name: str, nullable: bool) -> None:
        """Stage DROP NOT NULL (as ``Transaction.set_nullable``)."""
        self.txn.set_nullable(name, nullable)

    def widen_column(self, name: str, to: Any) -> None:
        """Stage a type widening (as ``Transaction.widen_column``)."""
        self.txn.widen_column(name, to)

    def add_columns(self, fields: Sequence[Any]) -> None:
        """Stage ADD COLUMNS (as ``Transaction.add_columns``; pyarrow fields)."""
        self.txn.add_columns(fields)

    # -- end -----------------------------------------------------------------------------------

    def commit(self) -> CommitResult:
        """Check against concurrent commits, rebase where the rules allow, commit: the operations
        as one commit (``WRITE`` listing them when there are several). A conflict raises the
        typed exception after removing this transaction's output."""
        with self.timed("driver"), self.txn.bookkeeping.committing(self.lay.storage):
            self.result = self.txn.commit()
        self.table.table.refresh()
        return self.result

    def abort(self) -> None:
        """Drop the staged actions and delete the files this transaction wrote."""
        if self.txn.state == "open":
            self.txn.abort()



class SparkTable:
    """A Delta table read and written through a SparkSession, committed by delta-occ."""

    def __init__(self, spark: Session, path: PathLike, storage_options: Optional[Mapping[str, str]] = None) -> None:
        """``spark``: a classic SparkSession or a Spark Connect one (``SparkSession.builder.remote``).
        ``path``: the table's location as the driver reaches it (a local path or an
        object-store URI, ``s3a://`` = ``s3://``) with ``storage_options`` (deltalake's key
        names). The executors reach the same location through the session's Hadoop settings
        (``spark.hadoop.fs.s3a.*``, ...: docs/guide.md "Tables on S3, ADLS and GCS"); with Spark
        Connect, the server's executors, and this process too (it reads the log and footers)."""
        self.spark = check_session(spark)
        self.table = Table(path, storage_options)
        self.table.whole_table = functools.partial(SparkWholeTable, self.spark)
        #: As given (the location's credentials: kept for :meth:`foreach_batch_sink`).
        self.storage_options: Optional[Mapping[str, str]] = storage_options

    @classmethod
    def create(
        cls,
        spark: Session,
        path: PathLike,
        schema: Union[StructType, pa.Schema],
        partition_by: Optional[Sequence[str]] = (),
        properties: Optional[Mapping[str, str]] = None,
        name: Optional[str] = None,
        storage_options: Optional[Mapping[str, str]] = None,
        cluster_by: Optional[Sequence[str]] = None,
    ) -> "SparkTable":
        """Create the table (version 0). ``schema`` is a Spark StructType or a pyarrow Schema;
        ``path`` and ``storage_options`` as in :class:`SparkTable`."""
        spark = check_session(spark)  # before anything is created
        if isinstance(schema, StructType):
            schema_json = schema.json()
        else:
            schema_json = arrow_schema_to_delta(schema)
        st = cls.__new__(cls)
        st.spark = spark
        st.table = Table.from_handle(create_handle(path, schema_json, partition_by, properties, name, storage_options, cluster_by))
        st.table.whole_table = functools.partial(SparkWholeTable, st.spark)
        st.storage_options = storage_options
        return st

    def __repr__(self) -> str:
        return f"SparkTable({self.path!r}, version={self.version})"

    @property
    def path(self) -> str:
        return self.table.path

    @property
    def version(self) -> int:
        return self.table.version

    def refresh(self) -> int:
        """Load the newest version (as :meth:`delta_occ.Table.refresh`); returns it."""
        return self.table.refresh()

    def snapshot(self, version: Optional[int] = None, timestamp: Optional[Instant] = None) -> Snapshot:
        """The table at its latest known version, at ``version`` or at ``timestamp`` (as :meth:`delta_occ.Table.snapshot`)."""
        return self.table.snapshot(version, timestamp)

    def restore(self, version: Optional[int] = None, timestamp: Optional[Instant] = None, *, max_attempts: Optional[int] = None) -> CommitResult:
        """:meth:`delta_occ.Table.restore` of this table (a log-only commit made on the driver)."""
        return self.table.restore(version, timestamp, max_attempts=max_attempts)

    def history(self, limit: Optional[int] = None) -> List[Dict[str, Any]]:
        """The commits, newest first (as :meth:`delta_occ.Table.history`)."""
        return self.table.history(limit)

    def detail(self) -> Dict[str, Any]:
        """DESCRIBE DETAIL (as :meth:`delta_occ.Table.detail`)."""
        return self.table.detail()

    def create_checkpoint(self) -> int:
        """:meth:`delta_occ.Table.create_checkpoint` of this table (written by the driver)."""
        return self.table.create_checkpoint()

    def cleanup_metadata(self) -> Dict[str, Any]:
        """:meth:`delta_occ.Table.cleanup_metadata` of this table (run by the driver)."""
        return self.table.cleanup_metadata()

    # -- the table's definition: log-only commits made on the driver (as on Table) --------------

    def set_properties(self, props: Mapping[str, str], *, max_attempts: Optional[int] = None) -> CommitResult:
        """:meth:`delta_occ.Table.set_properties` of this table."""
        return self.table.set_properties(props, max_attempts=max_attempts)

    def unset_properties(self, keys: Union[str, Sequence[str]], *, if_exists: bool = False, max_attempts: Optional[int] = None) -> CommitResult:
        """:meth:`delta_occ.Table.unset_properties` of this table."""
        return self.table.unset_properties(keys, if_exists=if_exists, max_attempts=max_attempts)

    def set_schema(self, schema: pa.Schema, *, allow_drop: bool = False, max_attempts: Optional[int] = None) -> CommitResult:
        """:meth:`delta_occ.Table.set_schema` of this table (a pyarrow schema)."""
        return self.table.set_schema(schema, allow_drop=allow_drop, max_attempts=max_attempts)

    def rename_column(self, old: str, new: str, *, max_attempts: Optional[int] = None) -> CommitResult:
        """:meth:`delta_occ.Table.rename_column` of this table."""
        return self.table.rename_column(old, new, max_attempts=max_attempts)

    def drop_columns(self, names: Sequence[str], *, max_attempts: Optional[int] = None) -> CommitResult:
        """:meth:`delta_occ.Table.drop_columns` of this table."""
        return self.table.drop_columns(names, max_attempts=max_attempts)

    def set_column_comment(self, name: str, comment: str, *, max_attempts: Optional[int] = None) -> CommitResult:
        """:meth:`delta_occ.Table.set_column_comment` of this table."""
        return self.table.set_column_comment(name, comment, max_attempts=max_attempts)

    def set_nullable(self, name: str, nullable: bool, *, max_attempts: Optional[int] = None) -> CommitResult:
        """:meth:`delta_occ.Table.set_nullable` of this table."""
        return self.table.set_nullable(name, nullable, max_attempts=max_attempts)

    def widen_column(self, name: str, to: Any, *, max_attempts: Optional[int] = None) -> CommitResult:
        """:meth:`delta_occ.Table.widen_column` of this table (a pyarrow type or Delta type name)."""
        return self.table.widen_column(name, to, max_attempts=max_attempts)

    def add_columns(self, fields: Sequence[Any], *, max_attempts: Optional[int] = None) -> CommitResult:
        """:meth:`delta_occ.Table.add_columns` of this table (pyarrow fields)."""
        return self.table.add_columns(fields, max_attempts=max_attempts)

    def to_df(self, version: Optional[int] = None, where: Optional[str] = None, columns: Optional[Sequence[str]] = None) -> DataFrame:
        """The rows of the table's newest version in storage (looked up now, as a delta-spark
        DataFrame is: commits made since, by this handle or anyone, are seen), or of ``version``,
        as a DataFrame: only files that may match ``where`` are read, DVs are applied, partition
        columns filled, logical names; the rows are exactly those ``Snapshot.to_pyarrow(where=...)``
        returns."""
        snap = self.table.newest_snapshot() if version is None else self.table.snapshot(version)
        return _read(self.spark, snap, where, columns)

    def read_change_feed(
        self, starting_version: Optional[int] = None, ending_version: Optional[int] = None, columns: Optional[Sequence[str]] = None, *,
        starting_timestamp: Optional[Instant] = None, ending_timestamp: Optional[Instant] = None,
    ) -> DataFrame:
        """:meth:`delta_occ.Table.read_change_feed` as a DataFrame: the driver plans which
        commits and files hold the feed (``delta_occ.change_feed.plan``), the executors read
        their rows."""
        start, end = self.table.feed_range(starting_version, ending_version, starting_timestamp=starting_timestamp, ending_timestamp=ending_timestamp)
        with using(self.spark):
            return read_feed(self.spark, change_feed.plan(self.table, start, end, columns))

    def begin(
        self,
        isolation_level: LevelLike = None,
        row_level: bool = True,
        max_attempts: Optional[int] = None,
        **options: Any,
    ) -> SparkTransaction:
        """A driver-side transaction on the latest snapshot (options as ``Table.begin``)."""
        return SparkTransaction(self, self.table.begin(isolation_level=isolation_level, row_level=row_level, max_attempts=max_attempts, **options))

    def _one(
        self,
        op: str,
        args: tuple,
        kwargs: Dict[str, Any],
        isolation_level: LevelLike,
        row_level: bool,
        max_attempts: Optional[int],
        *,
        name: str,
        app: one_call.AppVersion = None,
        rerun_on_conflict: Any = 0,
    ) -> CommitResult:
        """One operation in its own transaction; exactly-once app versions and re-runs as
        ``delta_occ.one_call`` says (a skipped app version runs no Spark job)."""

        def execute(txn: SparkTransaction) -> CommitResult:
            with txn:
                getattr(txn, op)(*args, **kwargs)  # a failure aborts: the Spark job's output is removed
                return txn.commit()

        return one_call.run(
            lambda: self.begin(isolation_level=isolation_level, row_level=row_level, max_attempts=max_attempts),
            execute,
            core=lambda txn: txn.txn,
            latest=self.table.newest_snapshot,
            operation=name,
            app=app,
            rerun_on_conflict=one_call.rerun_arg(rerun_on_conflict),
        )

    def append(
        self,
        df: DataFrame,
        *,
        isolation_level: LevelLike = None,
        row_level: bool = True,
        max_attempts: Optional[int] = None,
        app_id: Optional[str] = None,
        app_version: Optional[int] = None,
        rerun_on_conflict: int = 0,
        schema_mode: Optional[str] = None,
    ) -> CommitResult:
        """Blind append of a DataFrame (never conflicts with other appends). ``app_id`` /
        ``app_version``, ``rerun_on_conflict`` and ``schema_mode`` as in ``Table.append``."""
        app = one_call.app_args(app_id, app_version)
        return self._one(
            "append", (df,), {"schema_mode": schema_mode}, isolation_level, row_level, max_attempts, name="WRITE", app=app, rerun_on_conflict=rerun_on_conflict
        )

    def foreach_batch_sink(self, app_id: str, **options: Any) -> Callable[[DataFrame, int], None]:
        """The function to pass to ``df.writeStream.foreachBatch``: each micro-batch is appended
        with ``app_id`` and its batch id as the app version, so a batch Spark runs again after a
        failure (same id) is written once. Two queries sharing one ``app_id`` that write the
        same batch concurrently get ``ConcurrentTransactionException``. ``options``: the other
        keywords of :meth:`append`. The function keeps only the table's location, not this
        session: it uses the session of each batch (on Spark Connect it runs on the server)."""
        app = one_call.app_args(app_id, 0)
        assert app is not None
        path, storage_options = self.path, self.storage_options

        def sink(df: DataFrame, batch_id: int) -> None:
            SparkTable(df.sparkSession, path, storage_options).append(df, app_id=app[0], app_version=int(batch_id), **options)

        return sink

    def overwrite(
        self,
        df: DataFrame,
        replace_where: Optional[str] = None,
        *,
        dynamic_partitions: bool = False,
        isolation_level: LevelLike = None,
        row_level: bool = True,
        max_attempts: Optional[int] = None,
        app_id: Optional[str] = None,
        app_version: Optional[int] = None,
        rerun_on_conflict: int = 0,
        schema_mode: Optional[str] = None,
    ) -> CommitResult:
        """As ``Table.overwrite``: all rows, those matching ``replace_where``, or the partitions in ``df``."""
        app = one_call.app_args(app_id, app_version)
        return self._one(
            "overwrite",
            (df, replace_where),
            {"dynamic_partitions": dynamic_partitions, "schema_mode": schema_mode},
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
        """DELETE the rows ``where`` selects (every row when None) in one commit, run by the executors; with DVs the rows are marked deleted, else their files are rewritten."""
        return self._one("delete", (where,), {}, isolation_level, row_level, max_attempts, name="DELETE", rerun_on_conflict=rerun_on_conflict)

    def update(
        self,
        where: Optional[str],
        set: Mapping[str, str],  # noqa: A002
        *,
        isolation_level: LevelLike = None,
        row_level: bool = True,
        max_attempts: Optional[int] = None,
        rerun_on_conflict: int = 0,
    ) -> CommitResult:
        """UPDATE the rows ``where`` selects: ``set`` maps columns to Spark SQL expressions; one commit, run by the executors."""
        return self._one("update", (where, set), {}, isolation_level, row_level, max_attempts, name="UPDATE", rerun_on_conflict=rerun_on_conflict)

    def merge(
        self,
        source: DataFrame,
        on: str,
        *,
        source_alias: str = "s",
        target_alias: str = "t",
        when_matched_update: Optional[Mapping[str, str]] = None,
        when_matched_delete: Union[bool, str] = False,
        when_not_matched_insert: Union[bool, Mapping[str, str]] = False,
        isolation_level: LevelLike = None,
        row_level: bool = True,
        max_attempts: Optional[int] = None,
        app_id: Optional[str] = None,
        app_version: Optional[int] = None,
        rerun_on_conflict: int = 0,
    ) -> Any:
        """MERGE INTO this table USING ``source`` ON ``on`` (the keywords of ``Table.merge``);
        without clause keywords, a :class:`~delta_occ.merge_builder.MergeBuilder` whose
        ``execute(...)`` takes the options and returns the ``CommitResult``."""
        options: Dict[str, Any] = dict(isolation_level=isolation_level, row_level=row_level, max_attempts=max_attempts, app_id=app_id,
                                       app_version=app_version, rerun_on_conflict=rerun_on_conflict)
        aliases = dict(source_alias=source_alias, target_alias=target_alias)
        if not (when_matched_update or when_matched_delete or when_not_matched_insert):
            def run(specs: List[ClauseSpec], mode: Optional[str], given: Dict[str, Any]) -> CommitResult:
                return self._merge(source, on, dict(aliases, clauses=specs, schema_mode=mode), **dict(options, **given))

            return MergeBuilder(run)
        clauses = dict(aliases, when_matched_update=when_matched_update, when_matched_delete=when_matched_delete,
                       when_not_matched_insert=when_not_matched_insert)
        return self._merge(source, on, clauses, **options)

    def _merge(
        self, source: DataFrame, on: str, clauses: Dict[str, Any], *, isolation_level: LevelLike = None, row_level: bool = True,
        max_attempts: Optional[int] = None, app_id: Optional[str] = None, app_version: Optional[int] = None, rerun_on_conflict: int = 0,
    ) -> CommitResult:
        app = one_call.app_args(app_id, app_version)
        return self._one("merge", (source, on), clauses, isolation_level, row_level, max_attempts, name="MERGE", app=app, rerun_on_conflict=rerun_on_conflict)

    def vacuum(self, retention_hours: Optional[float] = None, dry_run: bool = False, enforce_retention_duration: bool = True) -> VacuumResult:
        """:meth:`delta_occ.Table.vacuum` of this table (run on the driver through the core)."""
        return self.table.vacuum(retention_hours, dry_run, enforce_retention_duration)

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
        """Compact small files, or Z-order them (``zorder_by``), as ``Table.optimize`` (``full``
        too); no commit when there is nothing to do."""
        return self._one("optimize", (target_file_size, where, zorder_by), {"full": full}, isolation_level, row_level, max_attempts, name="OPTIMIZE", rerun_on_conflict=rerun_on_conflict)

    def set_clustering(self, columns: Optional[Sequence[str]], *, max_attempts: Optional[int] = None) -> CommitResult:
        """``Table.set_clustering`` (a log-only commit made on the driver)."""
        return self.table.set_clustering(columns, max_attempts=max_attempts)

    def sync_identity(self, column: str, *, max_attempts: Optional[int] = None) -> CommitResult:
        """``Table.sync_identity``: the column's extreme is found by Spark's executors (one row to
        the driver)."""
        return self.table.sync_identity(column, max_attempts=max_attempts)

    def drop_feature(self, name: str, *, max_attempts: Optional[int] = None) -> CommitResult:
        """``Table.drop_feature``, its deletion vectors purged by Spark jobs."""

        def cleanup() -> CommitResult:
            txn = self.begin(max_attempts=max_attempts)
            with txn:
                stop_using(name)(txn)
                return txn.commit()

        return self.table.drop_feature(name, max_attempts=max_attempts, cleanup=cleanup)

    def add_constraint(self, name: str, expr: str, *, max_attempts: Optional[int] = None) -> CommitResult:
        """``Table.add_constraint``: the existing rows are checked by Spark's executors (one
        aggregation: how many rows break it and the first in scan order); Spark's writes enforce
        it afterwards."""
        return self.table.add_constraint(name, expr, max_attempts=max_attempts)

    def drop_constraint(self, name: str, *, if_exists: bool = False, max_attempts: Optional[int] = None) -> CommitResult:
        """:meth:`delta_occ.Table.drop_constraint` of this table (a metadata commit made on the driver)."""
        return self.table.drop_constraint(name, if_exists=if_exists, max_attempts=max_attempts)


__all__ = ["SparkTable", "SparkTransaction"]
