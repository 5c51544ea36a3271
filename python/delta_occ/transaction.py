"""The transaction API (api.md "The transaction API") and commit results."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

import pyarrow as pa

from . import _arrow, _core, commit_note, engine, identity
from ._args import int_arg
from ._schema import arrow_schema_to_delta, delta_type_json
from .constraints import PREFIX, Rule, check_name, constraint_key, is_constraint_key
from .exceptions import DeltaConcurrentModificationException, InvalidArgumentError
from .instant import Now
from .isolation import IsolationLevel
from .merge_builder import MergeBuilder
from .operations.bookkeeping import Bookkeeping, Lifecycle
from .operations.commit_info import OperationRecord
from .operations.merge import ClauseSpec
from .snapshot import Snapshot


def _int_array(values: Any, what: str) -> pa.Array:
    """One contiguous integer array (pyarrow, numpy, or a list) without nulls."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    elif not isinstance(values, pa.Array):
        try:
            values = pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as e:
            raise InvalidArgumentError(f"delete_rows: {what} must be integers: {e}") from e
    if not pa.types.is_integer(values.type) and values.type != pa.null():
        raise InvalidArgumentError(f"delete_rows: {what} must be integers, got {values.type}")
    if values.null_count:
        raise InvalidArgumentError(f"delete_rows: {what} must not hold nulls")
    return values


@dataclasses.dataclass(frozen=True)
class CommitResult:
    """What one commit did.

    ``attempts`` is 1 when no other writer got in the way; ``rebased_over`` lists the winning
    versions this commit was checked against and rebased onto; ``checks`` says, for each of them,
    why it did not conflict: ``rules``, the ids of the rules that let it pass (most specific
    first; ``delta_occ.exceptions.rule_text`` words them), and ``outcome``, a sentence for humans
    (both are stored in the commit's ``commitInfo.deltaOcc``).
    """

    version: int
    attempts: int
    isolation_level: IsolationLevel
    read_version: int
    rebased_over: List[int]
    rows_resolved: int
    operation: str
    metrics: Dict[str, str]
    checks: List[Dict[str, Any]] = dataclasses.field(default_factory=list)
    txn_id: str = ""
    is_blind_append: bool = False
    checkpoint_written: bool = False
    checkpoint_error: Optional[str] = None
    #: False when the transaction had no action to write (a DELETE, UPDATE or MERGE that matched
    #: no row, an empty append, a transaction that only read, an OPTIMIZE with nothing to
    #: compact): no commit was written, ``version`` is the version it read, ``attempts`` is 0 and
    #: ``isolation_level`` is SnapshotIsolation (docs/guide.md "Policies").
    committed: bool = True
    #: Why nothing was written when ``committed`` is False because of the operation's input (an
    #: application version already committed: ``app_id=`` / ``app_version=``); None otherwise.
    reason: Optional[str] = None
    #: How many times a one-call operation was planned and executed (1 = never re-run;
    #: ``rerun_on_conflict``), and per re-run the conflict that forced it: ``winning_version``,
    #: ``exception`` (class name) and ``rule``.
    executions: int = 1
    reruns: List[Dict[str, Any]] = dataclasses.field(default_factory=list)

    @classmethod
    def _from_core(cls, d: Dict[str, Any]) -> "CommitResult":
        d = dict(d)
        d["isolation_level"] = IsolationLevel(d["isolation_level"])
        return cls(**d)


def _parameters(parameters: Optional[Mapping[str, Any]]) -> Dict[str, str]:
    if parameters is None:
        return {}
    if not isinstance(parameters, Mapping):
        raise InvalidArgumentError(f"parameters must be a mapping, got {type(parameters).__name__}")
    return {str(k): v if isinstance(v, str) else json.dumps(v, default=str) for k, v in parameters.items()}


class Transaction(Lifecycle):
    """One optimistic transaction: pin a snapshot, record reads, stage actions, commit.

    ``with table.begin() as txn: ...`` commits on normal exit and aborts on an exception.
    """

    def __init__(
        self,
        handle: "_core.TransactionHandle",
        max_attempts: Optional[int] = None,
        time_budget: Optional[float] = None,
        table: Any = None,
        row_level_budget: Optional[float] = None,
    ) -> None:
        self._h = handle
        self._table = table
        self._max_attempts = max_attempts
        self._time_budget = time_budget
        self._row_level_budget = row_level_budget
        self.result: Optional[CommitResult] = None
        #: The transaction's instant: current_date() / current_timestamp() in what it scans.
        self.now = Now()
        #: The operations engines staged here and the files they wrote for it (removed again when
        #: it does not commit).
        self.bookkeeping = Bookkeeping()
        #: Who reads every live row where this transaction must (a new CHECK constraint, SYNC
        #: IDENTITY): the embedded engine, or Spark's executors on a Spark transaction.
        self.whole_table: engine.WholeTable = table.whole_table(self) if table is not None else engine.ArrowWholeTable(self)
        #: What ``commit()`` adds to ``commitInfo.deltaOcc`` about who wrote the commit and how
        #: (``delta_occ.commit_note``): an engine or a re-running operation adds its part.
        self.note: Dict[str, Any] = commit_note.writer()

    def __repr__(self) -> str:
        return f"Transaction(read_version={self.read_version}, state={self.state!r}, isolation_level={self.isolation_level.value})"

    @property
    def read_version(self) -> int:
        """The version this transaction read (-1 when it creates the table)."""
        return self._h.read_version

    @property
    def snapshot(self) -> "Snapshot":
        """The snapshot this transaction read; for one that creates the table, the table as its
        version 0 will define it (version -1, no files), which the rows it writes are laid out by."""
        h = self._h.snapshot
        if h is None:
            raise InvalidArgumentError("this transaction creates the table; there is no snapshot to read yet")
        return Snapshot(h)

    @property
    def isolation_level(self) -> IsolationLevel:
        """The level asked for (or the table's). A commit of only dataChange=false actions runs
        at SnapshotIsolation; ``CommitResult.isolation_level`` says which level was used."""
        return IsolationLevel(self._h.isolation_level)

    @property
    def state(self) -> str:
        """``"open"``, ``"committed"`` or ``"aborted"``."""
        return self._h.state

    # -- reads -------------------------------------------------------------------------------

    def scan(self, where: Optional[str] = None, columns: Optional[Sequence[str]] = None) -> pa.Table:
        """Record a read of the rows matching ``where`` (all rows when None) and return the live
        files that may hold them (partition pruning and statistics), as in ``Snapshot.files()``
        (only ``columns`` when given)."""
        if where is not None and not isinstance(where, str):
            raise InvalidArgumentError(f"where must be SQL text, got {type(where).__name__}")
        if isinstance(columns, str):
            raise InvalidArgumentError(f"columns must be a list of column names, got the string {columns!r}")
        return _arrow.table(self._h.scan(self.now.text(where), None if columns is None else list(columns)))

    def record_files_read(self, paths: Sequence[str]) -> None:
        """Record these live files as read without a predicate (an engine that chose its inputs
        itself, such as OPTIMIZE's bins): a concurrent change to them conflicts."""
        self._h.record_files_read([str(p) for p in paths])

    @property
    def storage(self) -> "_core.StorageHandle":
        """Where the table's files are read and written (for an engine that writes its own
        files: ``add_file`` then names them)."""
        return self._h.storage

    @property
    def schema_json(self) -> str:
        """The Delta schema (JSON) this transaction writes with, after any ``set_schema``."""
        return str(self._h.schema_json)

    def read_whole_table(self) -> None:
        """Record that the transaction depends on the entire table."""
        self._h.read_whole_table()

    def app_version(self, app_id: str) -> int:
        """The application's last committed version (-1 if never set); records the dependency."""
        return self._h.app_version(app_id)

    # -- writes ------------------------------------------------------------------------------

    def add_file(
        self,
        path: str,
        partition_values: Optional[Mapping[str, Optional[str]]] = None,
        size: int = 0,
        stats: Union[str, Mapping[str, Any], None] = None,
        data_change: bool = True,
        tags: Optional[Mapping[str, Optional[str]]] = None,
        modification_time: Optional[int] = None,
    ) -> None:
        """Stage an ``add`` of a data file already written under the table directory. ``path``
        is relative to the table root (or absolute inside it); ``partition_values`` use logical
        column names and string values (None for null)."""
        if not isinstance(path, str) or not path:
            raise InvalidArgumentError(f"add_file: path must be a non-empty string, got {path!r}")
        size = int_arg("add_file: size", size, 0)
        if modification_time is not None:
            modification_time = int_arg("add_file: modification_time", modification_time, 0)
        if isinstance(stats, Mapping):
            stats = json.dumps(stats)
        elif stats is not None and not isinstance(stats, str):
            raise InvalidArgumentError(f"add_file({path!r}): stats must be a JSON string or a mapping, got {type(stats).__name__}")
        pv = [(str(k), None if v is None else str(v)) for k, v in (partition_values or {}).items()]
        t = None if tags is None else {str(k): None if v is None else str(v) for k, v in tags.items()}
        self._h.add_file(path, pv, size, stats, bool(data_change), t, modification_time)

    def add_cdc_file(self, path: str, partition_values: Optional[Mapping[str, Optional[str]]] = None, size: int = 0) -> None:
        """Stage a ``cdc`` action for a change-data file already written under the table's
        ``_change_data/`` (rows of the data columns plus ``_change_type``; see
        ``delta_occ.change_data``). Readers of the change feed then read this commit's changes
        from its cdc files alone."""
        if not isinstance(path, str) or not path:
            raise InvalidArgumentError(f"add_cdc_file: path must be a non-empty string, got {path!r}")
        size = int_arg("add_cdc_file: size", size, 0)
        pv = [(str(k), None if v is None else str(v)) for k, v in (partition_values or {}).items()]
        self._h.add_cdc_file(path, pv, size)

    def remove_file(self, path: str, data_change: bool = True) -> None:
        """Stage a ``remove`` of a live file. This does not record a read; ``scan`` does."""
        self._h.remove_file(str(path), bool(data_change))

    def delete_rows(self, path: str, positions: Union[Iterable[int], pa.Array, Any]) -> None:
        """Delete rows (0-based physical positions) of a live file through its deletion vector;
        the new DV is the union with the current one. Needs ``delta.enableDeletionVectors``.
        ``positions`` may be a pyarrow or numpy integer array: it then goes to the core without
        a Python int per position."""
        if isinstance(positions, (pa.Array, pa.ChunkedArray)) or hasattr(positions, "__array__"):
            rows = pa.chunked_array([positions]) if not isinstance(positions, pa.ChunkedArray) else positions
            self.delete_rows_batch([str(path)], pa.repeat(pa.scalar(0, pa.int32()), len(rows)), rows)
            return
        values = [int_arg("delete_rows: row position", p, 0, 2**64 - 1) for p in positions]
        self._h.delete_rows(str(path), values)

    def delete_rows_batch(self, paths: Sequence[str], files: Any, rows: Any) -> None:
        """Delete rows of many files at once: row ``rows[k]`` of ``paths[files[k]]``. ``files``
        (int32 indices) and ``rows`` (int64 or uint64 positions) are pyarrow or numpy arrays of
        equal length, handed to the core zero-copy."""
        files, rows = _int_array(files, "files"), _int_array(rows, "rows")
        if len(files) != len(rows):
            raise InvalidArgumentError(f"delete_rows_batch: {len(files)} file indices but {len(rows)} row positions")
        if not pa.types.is_int32(files.type):
            files = files.cast(pa.int32())
        if not (pa.types.is_int64(rows.type) or pa.types.is_uint64(rows.type)):
            if not pa.types.is_integer(rows.type):
                raise InvalidArgumentError(f"delete_rows: row positions must be integers, got {rows.type}")
            rows = rows.cast(pa.int64())
        batch = pa.StructArray.from_arrays([files, rows], names=["file", "row"])
        self._h.delete_rows_arrow([str(p) for p in paths], batch.__arrow_c_array__())

    def delete_row_bits(self, path: str, firsts: Any, bits: Any) -> None:
        """Delete rows of a live file given as runs of bits: run ``k`` covers positions from
        ``firsts[k]``, and bit ``b % 8`` of byte ``b // 8`` of ``bits[k]`` set deletes row
        ``firsts[k] + b`` (least-significant bit first: Arrow's and Spark's
        ``bitmap_construct_agg`` layout). ``bits`` is a pyarrow binary array; the core builds the
        deletion vector from the bits, with no value per row. Otherwise as ``delete_rows``."""
        firsts = _int_array(firsts, "firsts")
        if not isinstance(bits, (pa.Array, pa.ChunkedArray)) or not (pa.types.is_binary(bits.type) or pa.types.is_large_binary(bits.type)):
            raise InvalidArgumentError(f"delete_row_bits: bits must be a pyarrow binary array, got {type(bits).__name__}")
        if isinstance(bits, pa.ChunkedArray):
            bits = bits.combine_chunks()
        if len(firsts) != len(bits):
            raise InvalidArgumentError(f"delete_row_bits: {len(firsts)} first positions but {len(bits)} runs of bits")
        runs = pa.StructArray.from_arrays([firsts.cast(pa.int64()), bits], names=["first", "bits"])
        self._h.delete_row_bits(str(path), runs.__arrow_c_array__())

    def restore(self, target: "Snapshot") -> Dict[str, int]:
        """Stage a RESTORE of ``target``, an earlier snapshot of this table (the core computes
        the files to remove and re-add; see ``Table.restore``). Returns its operation metrics."""
        return {k: int(v) for k, v in self._h.restore(target.handle).items()}

    def set_app_version(self, app_id: str, version: int) -> None:
        """Record that ``app_id`` has committed up to ``version`` (a ``txn`` action, idempotent writes)."""
        if not isinstance(app_id, str) or not app_id:
            raise InvalidArgumentError(f"set_app_version: app_id must be a non-empty string, got {app_id!r}")
        self._h.set_app_version(app_id, int_arg("set_app_version: version", version, 0))

    def set_domain_metadata(self, domain: str, configuration: str, removed: bool = False) -> None:
        """Stage a user domain (names starting with ``delta.`` are reserved)."""
        self._h.set_domain_metadata(domain, configuration, removed)

    def set_properties(self, props: Mapping[str, str]) -> None:
        """Merge table properties (a metadata change). A new or changed CHECK constraint
        (``delta.constraints.<name>``) is checked against every live row first, which this
        transaction then reads (so it must be Serializable: a concurrent blind append would
        otherwise slip rows past the check); ConstraintViolationError names a row that breaks it."""
        props = {str(k): str(v) for k, v in props.items()}
        current = self.snapshot.properties if self.read_version >= 0 else {}
        rules = [
            Rule("CHECK constraint", k[len(PREFIX):], v)
            for k, v in props.items()
            if is_constraint_key(k) and current.get(constraint_key(current, k[len(PREFIX):]) or "") != v
        ]
        if rules:
            for r in rules:
                check_name(r.name)
            if self.isolation_level is not IsolationLevel.SERIALIZABLE and self.read_version >= 0:
                raise InvalidArgumentError(
                    f"adding {rules[0].describe()} checks the existing rows, which needs a Serializable transaction "
                    f"(this one is {self.isolation_level.value}): begin(isolation_level='Serializable')"
                )
            self.whole_table.check_rules(rules)
        self._h.set_properties(props)

    def add_constraint(self, name: str, expr: str) -> None:
        """Stage a new CHECK constraint (``ALTER TABLE ADD CONSTRAINT``): every live row must
        make ``expr`` TRUE (see :meth:`set_properties`), and every row written afterwards, by
        any engine that honours the protocol's ``checkConstraints``; the protocol is upgraded
        to carry that feature."""
        name = check_name(name)
        if not isinstance(expr, str):
            raise InvalidArgumentError(f"a constraint is SQL text, got {type(expr).__name__}")
        props = self.snapshot.properties if self.read_version >= 0 else {}
        key = constraint_key(props, name)
        if key is not None:
            raise InvalidArgumentError(f"constraint {name} already exists on {self.snapshot.handle.root}: {props[key]}")
        self.set_properties({PREFIX + name: expr})
        self.stage_operation("ADD CONSTRAINT", {"constraintName": name, "expr": expr})

    def drop_constraint(self, name: str, *, if_exists: bool = False) -> None:
        """Stage dropping a CHECK constraint; InvalidArgumentError when the table has none of
        that name (unless ``if_exists``: then nothing is staged)."""
        props = self.snapshot.properties
        key = constraint_key(props, check_name(name))
        if key is None:
            if if_exists:
                return
            raise InvalidArgumentError(f"{self.snapshot.handle.root} has no constraint {name} (it has {sorted(k[len(PREFIX):] for k in props if is_constraint_key(k))})")
        self._h.unset_properties([key])
        self.stage_operation("DROP CONSTRAINT", {"constraintName": name, "expr": props[key]})

    def unset_properties(self, keys: Sequence[str]) -> None:
        """Remove these table properties in this commit (a metadata change); absent keys are ignored."""
        self._h.unset_properties([str(k) for k in keys])

    def set_isolation_level(self, level: Union[str, IsolationLevel]) -> None:
        """Set the table's ``delta.isolationLevel`` (Serializable or WriteSerializable) in this commit."""
        lvl = IsolationLevel.parse(level)
        if lvl is IsolationLevel.SNAPSHOT_ISOLATION:
            raise InvalidArgumentError("SnapshotIsolation is not a table level: use Serializable or WriteSerializable")
        self.set_properties({"delta.isolationLevel": lvl.value})

    def set_schema(self, schema: pa.Schema, allow_drop: bool = False) -> None:
        """Replace the schema (a metadata change; partition columns must remain). A column the
        new schema lacks raises SchemaMismatchError unless ``allow_drop``: a rename written as a
        new schema would read back NULL (use ``rename_column``)."""
        self._h.set_schema(arrow_schema_to_delta(schema), bool(allow_drop))

    def replace_schema(self, schema: pa.Schema) -> None:
        """Stage ``schema`` in place of the table's, for an overwrite of the whole table
        (``overwrite(..., schema_mode="overwrite")``): columns may go or change type, since the
        commit must remove every live file (InvalidArgumentError at commit otherwise). Partition
        columns stay; with column mapping every field gets a new id and physical name."""
        self._h.replace_schema(arrow_schema_to_delta(schema))

    def rename_column(self, old: str, new: str) -> None:
        """Stage RENAME COLUMN (``old`` dotted for a nested field): the data stays. Needs column
        mapping; a column a constraint, a generated column or the clustering names is refused."""
        self._h.rename_column(str(old), str(new))

    def drop_columns(self, names: Sequence[str]) -> None:
        """Stage DROP COLUMNS (dotted names for nested fields). Needs column mapping; partition,
        clustering and referenced columns are refused."""
        if isinstance(names, str):
            raise InvalidArgumentError(f"drop_columns takes a list of column names, got {names!r}")
        self._h.drop_columns([str(n) for n in names])

    def set_column_comment(self, name: str, comment: str) -> None:
        """Stage ALTER COLUMN ``name`` COMMENT ``comment`` (dotted for a nested field)."""
        self._h.set_column_comment(str(name), str(comment))

    def set_nullable(self, name: str, nullable: bool) -> None:
        """Stage ALTER COLUMN ``name`` DROP NOT NULL (``nullable=True``); ``False`` is refused,
        as in Delta: existing rows may hold nulls."""
        self._h.set_nullable(str(name), bool(nullable))

    def widen_column(self, name: str, to: Union[pa.DataType, str]) -> None:
        """Stage ALTER COLUMN ``name`` TYPE ``to`` as a type widening (the typeWidening feature,
        ``delta.enableTypeWidening`` set): a pyarrow type, or a Delta type name such as
        ``"long"`` or ``"decimal(12,2)"``. No data is rewritten; old files read widened. Only
        Delta's widenings are allowed (byte→short→int→long, int→double, float→double,
        date→timestamp_ntz, integer→decimal and decimal to a wider precision and scale); a
        partition column is refused."""
        self._h.widen_column(str(name), delta_type_json(to))

    def add_columns(self, fields: Sequence[pa.Field]) -> None:
        """Stage ADD COLUMNS: each field (nullable; ``pa.field("a.b", ...)`` adds ``b`` to the
        struct column ``a``) is appended where it belongs."""
        if isinstance(fields, pa.Field) or not all(isinstance(f, pa.Field) for f in fields):
            raise InvalidArgumentError(f"add_columns takes a list of pyarrow fields, got {fields!r}")
        delta = json.loads(arrow_schema_to_delta(pa.schema(list(fields))))
        self._h.add_columns(json.dumps(delta["fields"]))

    def set_clustering(self, columns: Sequence[str]) -> None:
        """Stage ALTER TABLE CLUSTER BY ``columns`` (``[]``: CLUSTER BY NONE): the
        ``delta.clustering`` domain and the ``clustering`` / ``domainMetadata`` writer features."""
        if isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
            raise InvalidArgumentError(f"cluster_by must be a list of column names, got {columns!r}")
        self._h.set_clustering(list(columns))

    def mark_clustered(self, clustered: bool = True) -> None:
        """Mark the adds staged from now on as clustered (the core's ``clusteringProvider``;
        OPTIMIZE of a clustered table)."""
        self._h.mark_clustered(clustered)

    def sync_identity(self, column: str) -> Optional[int]:
        """Stage ALTER TABLE ... ALTER COLUMN ``column`` SYNC IDENTITY: the column's high-water
        mark moves to cover every value the rows hold (``identity.synced_mark``); the whole table
        is recorded as read. Returns the new mark (None: the column has no value and no mark)."""
        columns = identity.identity_columns(self.schema_json)
        if column not in columns:
            raise InvalidArgumentError(f"sync_identity: {column!r} is not an identity column (identity columns: {sorted(columns)})")
        c = columns[column]
        self.read_whole_table()
        low, high = self.whole_table.bounds(column)
        mark = identity.synced_mark(c, high if c.step > 0 else low)
        if mark is not None and mark != c.high_water_mark:
            self.set_column_metadata(column, {identity.HIGH_WATER_MARK: mark})
        return mark

    def set_column_metadata(self, column: str, metadata: Mapping[str, Any]) -> None:
        """Set Delta metadata keys of a top-level column (a metadata change; the other keys
        stay): e.g. an identity column's ``delta.identity.highWaterMark``, which the writers that
        generate identity values move themselves (``delta_occ.identity``)."""
        schema = json.loads(self.schema_json)
        field = next((f for f in schema["fields"] if f["name"] == column), None)
        if field is None:
            where = self.snapshot.handle.root if self.read_version >= 0 else "the new table"
            raise InvalidArgumentError(f"set_column_metadata: no column {column!r} in {where} (columns: {[f['name'] for f in schema['fields']]})")
        if not isinstance(metadata, Mapping):
            raise InvalidArgumentError("set_column_metadata: metadata must be a mapping of key to JSON value")
        field.setdefault("metadata", {}).update({str(k): v for k, v in metadata.items()})
        self._h.set_schema(json.dumps(schema))

    def set_protocol(
        self,
        min_reader_version: int,
        min_writer_version: int,
        reader_features: Optional[Sequence[str]] = None,
        writer_features: Optional[Sequence[str]] = None,
    ) -> None:
        """Stage a protocol upgrade (never a downgrade)."""
        self._h.set_protocol(
            int(min_reader_version),
            int(min_writer_version),
            None if reader_features is None else list(reader_features),
            None if writer_features is None else list(writer_features),
        )

    # -- embedded engine operations (one per transaction; see delta_occ.engine) ---------------

    def append(self, data: Any, *, schema_mode: Optional[str] = None) -> None:
        """Stage a blind append of ``data`` (written as parquet with statistics). Data columns
        must have the table's types or widen to them; ``schema_mode="merge"`` adds columns the
        table lacks (a schema change in the same commit)."""
        engine.append(self, data, schema_mode)

    def overwrite(
        self, data: Any, replace_where: Optional[str] = None, *, dynamic_partitions: bool = False, schema_mode: Optional[str] = None
    ) -> None:
        """Stage an overwrite: all rows, those matching ``replace_where``, or the partitions
        present in ``data`` (``dynamic_partitions``). ``schema_mode`` as in :meth:`append`."""
        engine.overwrite(self, data, replace_where, dynamic_partitions=dynamic_partitions, schema_mode=schema_mode)

    def delete(self, where: Optional[str] = None) -> None:
        """Stage a DELETE of the rows matching ``where`` (all rows when None)."""
        engine.delete(self, where)

    def update(self, where: Optional[str], set: Mapping[str, str]) -> None:  # noqa: A002 - api.md name
        """Stage an UPDATE: ``set`` maps columns to SQL expressions over the row."""
        engine.update(self, where, set)

    def merge(self, source: Any, on: str, **clauses: Any) -> Any:
        """Stage a MERGE (same keywords as ``Table.merge``); without clause keywords, a
        :class:`~delta_occ.merge_builder.MergeBuilder` whose ``execute()`` stages it."""
        if clauses.get("clauses") is None and not any(clauses.get(k) for k in ("when_matched_update", "when_matched_delete", "when_not_matched_insert")):
            def run(specs: List[ClauseSpec], mode: Optional[str], _options: Dict[str, Any]) -> None:
                engine.merge(self, source, on, **dict(clauses, clauses=specs, schema_mode=mode or clauses.get("schema_mode")))

            return MergeBuilder(run, options=False)
        engine.merge(self, source, on, **clauses)
        return None

    def optimize(
        self, target_file_size: Optional[int] = None, where: Optional[str] = None, zorder_by: Optional[Sequence[str]] = None, *, full: bool = False
    ) -> int:
        """Stage a bin-packing compaction (dataChange=false), or with ``zorder_by`` a rewrite of
        each partition's files in the Z-order of those columns; returns the number of bins, 0
        when there is nothing to do (committing then writes no commit)."""
        return engine.optimize(self, target_file_size, where, zorder_by, full=full)

    def purge_deletion_vectors(self) -> int:
        """Stage REORG ... APPLY (PURGE): each file with a deletion vector rewritten without its
        deleted rows; returns how many (0: nothing to stage)."""
        return engine.purge(self)

    def drop_feature(self, name: str) -> None:
        """Stage DROP FEATURE's downgrade (FeatureDropPendingError while it cannot be done yet;
        see ``Table.drop_feature``)."""
        self._h.drop_feature(name)

    # -- end ---------------------------------------------------------------------------------

    def stage_operation(self, operation: str, parameters: Mapping[str, Any], metrics: Optional[Mapping[str, int]] = None) -> None:
        """Name the one operation an engine staged on this transaction: the commitInfo
        ``operation``, ``operationParameters`` and ``operationMetrics`` that ``commit()`` writes
        unless given others. InvalidArgumentError if an operation is staged already."""
        self.bookkeeping.record(OperationRecord(str(operation), dict(parameters), dict(metrics or {})), alone=True)
        if metrics is not None:
            self.set_operation_metrics(metrics)

    def record_operation(self, record: OperationRecord) -> None:
        """Stage one of several operations on this transaction (as Spark's transactions do):
        ``commit()`` writes them as one ``WRITE`` listing them, their metrics summed."""
        self.bookkeeping.record(record, alone=False)
        self.set_operation_metrics(self.bookkeeping.combined().metrics)

    @property
    def staged_operation(self) -> Optional[str]:
        """The operation staged with :meth:`stage_operation` (None before)."""
        return self.bookkeeping.combined().operation if self.bookkeeping.staged else None

    @property
    def staged_parameters(self) -> Dict[str, Any]:
        return dict(self.bookkeeping.combined().parameters)

    def set_operation_metrics(self, metrics: Mapping[str, int]) -> None:
        """The commitInfo ``operationMetrics`` (counts; written as strings, as Delta does)."""
        self._h.set_operation_metrics({str(k): str(v) for k, v in metrics.items()})

    def commit(self, operation: Optional[str] = None, parameters: Optional[Mapping[str, Any]] = None) -> CommitResult:
        """Validate against concurrent winners and commit. Raises a
        ``DeltaConcurrentModificationException`` subclass on a conflict (the transaction is then
        finished: start a new one to retry) and ``CommitRetriesExceededError`` when other
        writers kept winning past ``max_attempts`` / ``time_budget``. ``operation`` defaults to
        the staged engine operation, else ``WRITE``. A transaction with no action to write
        commits nothing and cannot conflict: the result has ``committed=False``."""
        if operation is None:
            staged = self.bookkeeping.combined()
            operation = staged.operation
            if parameters is None and self.bookkeeping.staged:
                parameters = staged.parameters
        self._h.set_commit_note(json.dumps({**self.note, commit_note.COMMIT_START: commit_note.now_ms()}, default=str))
        try:
            with self.bookkeeping.committing(self._h.storage):
                d = self._h.commit(str(operation), _parameters(parameters), self._max_attempts, self._time_budget, self._row_level_budget)
        except DeltaConcurrentModificationException as e:
            e.clauses = self.bookkeeping.behind(e, self._snapshot_at)
            raise
        self.result = CommitResult._from_core(d)
        if self._table is not None:
            self._table.note_committed(self._h)
        return self.result

    def _snapshot_at(self, version: Optional[int]) -> Optional[Snapshot]:
        """The read snapshot (None), or the table at ``version`` (None when this transaction was
        begun without a table)."""
        if version is None:
            return self.snapshot
        return self._table.snapshot(version) if self._table is not None else None

    def validate(self, through: Optional[int] = None) -> Dict[str, Any]:
        """Check this transaction against the commits that landed after its read version (up to
        ``through``) without committing. Raises the conflict a commit would hit; otherwise
        returns ``winners``, ``actions`` checked, ``read_seconds``, ``check_seconds`` and the
        per-winner ``checks`` explanations."""
        return self._h.validate(through)

    def abort(self) -> None:
        """Drop the staged actions and remove the data files the engines wrote for them (files
        added through ``add_file`` by other writers are theirs to clean up)."""
        was_open = self.state == "open"
        self._h.abort()
        if was_open:
            self.bookkeeping.remove_outputs(self._h.storage)


def stop_using(feature: str) -> Any:
    """DROP FEATURE's first step for ``feature``, to stage on any engine's transaction (one
    with ``snapshot``, ``set_properties`` and ``purge_deletion_vectors``): the feature switched off and its
    traces removed. The core decides whether the step is needed and when the drop can finish."""
    if feature != "deletionVectors":
        # the core refuses other features before this step is reached
        raise InvalidArgumentError(f"delta-occ drops only deletionVectors, not {feature!r}")

    def stage(txn: Any) -> None:
        if str(txn.snapshot.properties.get("delta.enableDeletionVectors", "")).lower() == "true":
            txn.set_properties({"delta.enableDeletionVectors": "false"})
        txn.purge_deletion_vectors()

    return stage
