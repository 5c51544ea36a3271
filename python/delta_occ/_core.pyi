"""Type stubs for the Rust extension module ``delta_occ._core`` (thin layer over delta-occ-core)."""

from typing import Any, Dict, List, Optional, Tuple, final

__version__: str
#: Whether this build carries the test hooks (cargo feature ``test-hooks``): never in a wheel.
TEST_HOOKS: bool
#: Delta truncates string statistics to this many characters (a min is cut, a longer max dropped).
STATS_STRING_PREFIX: int
#: The row-id rule (core ``row_tracking``), as row expressions over BIGINT ``materialized_row_id``,
#: ``base_row_id``, ``row_position``, ``materialized_row_commit_version`` and
#: ``default_row_commit_version``: every engine evaluates these, so all follow rows by the same ids.
ROW_ID_RULE: str
ROW_COMMIT_VERSION_RULE: str

__all__ = [
    "__version__",
    "TEST_HOOKS",
    "at_exit",
    "rule_ids",
    "rule_description",
    "TableHandle",
    "SnapshotHandle",
    "DeletionVector",
    "TransactionHandle",
    "StorageHandle",
    "RowGroupFilter",
    "parse_isolation_level",
    "parse_commit",
    "RowExpr",
    "conjuncts",
    "unqualified",
    "history_report",
    "zorder_permutation",
    "resolve_now",
    "referenced_columns",
    "spark_file_keys",
    "file_column_indexes",
    "read_parquet_columns",
    "parquet_footer_stats",
    "parquet_footer_stats_of",
    "rows_stats",
    "written_file_stats",
    "STATS_STRING_PREFIX",
    "ROW_ID_RULE",
    "ROW_COMMIT_VERSION_RULE",
    "logical_arrow_schema",
    "physical_arrow_schema",
    "spark_physical_schema_json",
    "delta_schema_json",
    "delta_type_json",
    "delta_type_of_data",
    "partition_strings",
    "type_writable_as",
    "merged_for_write",
    "sql_literals",
    "merge_read_predicate",
    "read_deletion_vector",
    "write_deletion_vectors",
    "serialize_bitmap",
    "deserialize_bitmap",
    "z85_encode",
    "z85_decode",
]

@final
class TableHandle:
    """An open table: the latest known snapshot plus incremental refresh."""

    @staticmethod
    def open(location: str, storage_options: Optional[Dict[str, str]] = None) -> "TableHandle":
        """Replay the log of the table at ``location`` (a local path, a file:// URI or an
        object-store URI with ``storage_options``). GIL released."""
    @staticmethod
    def create(
        location: str,
        schema_json: str,
        partition_by: List[str],
        properties: Dict[str, str],
        name: Optional[str] = None,
        storage_options: Optional[Dict[str, str]] = None,
        cluster_by: Optional[List[str]] = None,
    ) -> "TableHandle":
        """Commit version 0 with put-if-absent; TableAlreadyExistsError if a table is there."""
    @staticmethod
    def convert_to_delta(
        location: str,
        partition_by: List[Tuple[str, Optional[str]]],
        properties: Dict[str, str],
        storage_options: Optional[Dict[str, str]] = None,
    ) -> "TableHandle":
        """CONVERT TO DELTA: version 0 lists the parquet files under ``location``."""
    @property
    def root(self) -> str: ...
    @property
    def storage(self) -> "StorageHandle":
        """The table's storage (the engines' data files go through it)."""
    @property
    def version(self) -> int:
        """Latest version known to this handle."""
    def refresh(self) -> int:
        """Apply only commits newer than ``version``; returns the new latest version."""
    def snapshot(self, version: Optional[int] = None) -> "SnapshotHandle":
        """Latest known snapshot, or the one at ``version`` (VersionNotFoundError if gone)."""
    def snapshots(self, versions: List[int]) -> List["SnapshotHandle"]:
        """The snapshots at ``versions`` (ascending, no repeats), made in one walk."""
    def version_at(self, ts_ms: int) -> int: ...
    def history(self, limit: Optional[int] = None) -> List[Tuple[int, Optional[str]]]:
        """``(version, commitInfo JSON text or None)``, newest first, stopping at a gap."""
    def adopt_commit(self, txn: "TransactionHandle") -> None:
        """Keep the commit ``txn`` (committed, of this table) wrote for the next refresh, which
        then does not read it back."""
    def begin(
        self,
        isolation_level: Optional[str] = None,
        row_level: bool = True,
        data_skipping: bool = True,
        read_version: Optional[int] = None,
    ) -> "TransactionHandle":
        """Refresh, then pin the latest snapshot (or ``read_version``) in a new transaction."""
    @staticmethod
    def begin_create(
        location: str,
        schema_json: str,
        partition_by: List[str],
        properties: Dict[str, str],
        name: Optional[str] = None,
        storage_options: Optional[Dict[str, str]] = None,
        description: Optional[str] = None,
    ) -> "TransactionHandle":
        """The transaction that creates the table (read version -1)."""
    def commit_summary(self, version: int) -> Optional[Dict[str, Any]]:
        """One commit's operation, commitInfo text, added/removed/cdc files, metadata/protocol flags."""
    def commit_summaries(self, versions: List[int]) -> List[Optional[Dict[str, Any]]]:
        """`commit_summary` of each version, in order; the commits are fetched concurrently."""

@final
class TransactionHandle:
    """One optimistic transaction: read set, staged actions, commit loop (GIL released)."""

    @property
    def read_version(self) -> int: ...
    @property
    def storage(self) -> "StorageHandle":
        """The table's storage (the engines' data files go through it)."""
    @property
    def isolation_level(self) -> str: ...
    @property
    def row_level(self) -> bool: ...
    @property
    def data_skipping(self) -> bool: ...
    @property
    def state(self) -> str:
        """"open", "committed" or "aborted"."""
    @property
    def schema_json(self) -> str:
        """The schema this transaction commits: the staged one, else the read snapshot's."""
    @property
    def snapshot(self) -> Optional["SnapshotHandle"]: ...
    def scan(self, predicate: Optional[str] = None, columns: Optional[List[str]] = None) -> List[Tuple[object, object]]:
        """Record the read; Arrow capsules of the matching live files (``files()`` layout, only
        the named columns when given)."""
    def explain_predicate(self, text: str) -> Dict[str, Any]:
        """Columns and partition/data split of a predicate, or PredicateError."""
    def record_files_read(self, paths: List[str]) -> None:
        """Record reading exactly these live files (no predicate): a compaction's inputs."""
    def read_whole_table(self) -> None: ...
    def app_version(self, app_id: str) -> int: ...
    def add_file(
        self,
        path: str,
        partition_values: List[Tuple[str, Optional[str]]],
        size: int,
        stats: Optional[str] = None,
        data_change: bool = True,
        tags: Optional[Dict[str, Optional[str]]] = None,
        modification_time: Optional[int] = None,
    ) -> None: ...
    def add_cdc_file(self, path: str, partition_values: List[Tuple[str, Optional[str]]], size: int) -> None:
        """Stage a ``cdc`` action for a change-data file written under ``_change_data/``."""
    def remove_file(self, path: str, data_change: bool = True) -> None: ...
    def delete_rows(self, path: str, positions: List[int]) -> None: ...
    def delete_rows_arrow(self, paths: List[str], batch: Tuple[object, object]) -> None:
        """DV deletes of many files from Arrow capsules of a struct (``file`` int32 index into
        ``paths``, ``row`` int64/uint64), imported without copying."""
    def delete_row_bits(self, path: str, runs: Tuple[object, object]) -> None:
        """DV deletes of one file from Arrow capsules of a struct (``first`` int64/uint64: a
        run's first position, ``bits`` binary, least-significant bit first)."""
    def set_app_version(self, app_id: str, version: int) -> None: ...
    def set_domain_metadata(self, domain: str, configuration: str, removed: bool = False) -> None: ...
    def set_properties(self, props: Dict[str, str]) -> None: ...
    def unset_properties(self, keys: List[str]) -> None: ...
    def set_schema(self, schema_json: str, allow_drop: bool = False) -> None: ...
    def replace_schema(self, schema_json: str) -> None: ...
    def rename_column(self, path: str, new_name: str) -> None: ...
    def drop_columns(self, paths: List[str]) -> None: ...
    def widen_column(self, path: str, to_json: str) -> None: ...
    def add_columns(self, fields_json: str) -> None: ...
    def set_column_comment(self, path: str, comment: str) -> None: ...
    def set_nullable(self, path: str, nullable: bool) -> None: ...
    def set_protocol(
        self,
        min_reader_version: int,
        min_writer_version: int,
        reader_features: Optional[List[str]] = None,
        writer_features: Optional[List[str]] = None,
    ) -> None: ...
    def restore(self, target: SnapshotHandle) -> Dict[str, str]: ...
    def drop_feature(self, feature: str, now_ms: Optional[int] = None) -> None: ...
    def set_clustering(self, columns: List[str]) -> None: ...
    def mark_clustered(self, clustered: bool) -> None: ...
    def set_operation_metrics(self, metrics: Dict[str, str]) -> None:
        """Metrics the writing engine knows, merged into commitInfo.operationMetrics."""
    def set_commit_note(self, note_json: str) -> None:
        """Facts for commitInfo.deltaOcc (a JSON object) that only the writer knows."""
    def num_staged(self) -> int: ...
    def commit(
        self,
        operation: str,
        parameters: Dict[str, str],
        max_attempts: Optional[int] = None,
        time_budget: Optional[float] = None,
        row_level_budget: Optional[float] = None,
    ) -> Dict[str, Any]:
        """Run the commit loop; the CommitResult fields as a dict, or a conflict exception.
        ``row_level_budget`` (seconds) bounds row-level resolution per attempt."""
    def validate(self, through: Optional[int] = None) -> Dict[str, Any]:
        """Check against newer commits without committing (winners, actions, timings, checks)."""
    def abort(self) -> None: ...

@final
class DeletionVector:
    """The rows one live file's DV deletes, read once (``SnapshotHandle.deletion_vector``)."""

    @property
    def path(self) -> str: ...
    def keep_mask(self, num_rows: int) -> bytes:
        """``SnapshotHandle.keep_mask`` of this file, without reading its DV again."""

@final
class SnapshotHandle:
    """An immutable replayed state at one version."""

    @property
    def clustering_columns(self) -> Optional[List[str]]: ...
    @property
    def version(self) -> int: ...
    @property
    def root(self) -> str: ...
    @property
    def storage(self) -> "StorageHandle":
        """The table's storage (the engines' data files go through it)."""
    @property
    def schema_json(self) -> str:
        """metaData.schemaString (physical names live in the field metadata)."""
    @property
    def partition_columns(self) -> List[str]: ...
    @property
    def properties(self) -> Dict[str, str]: ...
    @property
    def deletion_vectors_enabled(self) -> bool:
        """The ``deletionVectors`` writer feature and ``delta.enableDeletionVectors=true``."""
    @property
    def column_mapping_mode(self) -> str:
        """``"none"``, ``"name"`` or ``"id"``."""
    @property
    def isolation_level(self) -> str:
        """The table level; WriteSerializable when the property is absent."""
    @property
    def protocol(self) -> Dict[str, object]: ...
    @property
    def metadata(self) -> Dict[str, object]: ...
    @property
    def commit_info(self) -> Optional[str]:
        """commitInfo JSON of this version (None if it came from a checkpoint)."""
    @property
    def checkpoint_version(self) -> Optional[int]: ...
    def num_files(self) -> int: ...
    def files(self, columns: Optional[List[str]] = None) -> List[Tuple[object, object]]:
        """Arrow PyCapsules (schema, array) per batch, one row per live file (at least one batch);
        only the named columns when given."""
    @property
    def table_features(self) -> List[str]:
        """Every feature the protocol supports, sorted (legacy versions' implied ones too)."""
    def commit_timestamp(self) -> Optional[int]:
        """When this version was committed (epoch ms: in-commit timestamp or commit file time), or None."""
    def create_checkpoint(self) -> None:
        """Write this version's checkpoint and point _last_checkpoint at it."""
    def vacuum(
        self, retention_ms: Optional[int] = None, enforce_retention: bool = True, dry_run: bool = False, now_ms: Optional[int] = None,
    ) -> Dict[str, object]:
        """VACUUM the table of this snapshot: ``version``, ``retention_ms``, ``cutoff_ms``,
        ``bytes``, ``files`` (``[(path relative to the root, size)]``), ``kept_referenced``,
        ``kept_recent``, ``dry_run``. GIL released."""
    def cleanup_log(self, now_ms: Optional[int] = None) -> Dict[str, Optional[int]]:
        """Log cleanup as a commit runs it after a checkpoint, ages judged at ``now_ms`` (default
        now): ``boundary`` (oldest version kept reconstructable, None when nothing expired),
        ``deleted``, ``sidecars_deleted``, ``probes_deleted`` (stale conditional-write probes).
        GIL released."""
    def compaction_bins(self, indices: Optional[List[int]], target: int) -> List[List[int]]:
        """OPTIMIZE's bins, as indices into ``files()``, among the files at ``indices`` (all when
        None): per partition in order of first appearance, the files below ``target`` bytes and
        those with a deletion vector, packed in order into bins that close at ``target`` bytes;
        a bin of one file without a DV is left out. GIL released."""
    def partition_values(self, indices: Optional[List[int]] = None) -> Tuple[object, object]:
        """Arrow PyCapsules of the typed partition values of the live files at ``indices``
        (positions in ``files()``, in that order; all files when None). An index out of range
        raises InvalidArgumentError."""
    def data_files(self, indices: Optional[List[int]] = None) -> List[Tuple[str, str, bool]]:
        """``(absolute data path, log path, has_dv)`` of the live files at ``indices`` (as for
        ``partition_values``)."""
    def typed_partition_values(self, rows: List[List[Tuple[str, Optional[str]]]]) -> Tuple[object, object]:
        """Typed partition values of actions that are not live files (cdc files), one row each."""
    def scan_plan(self, paths: List[str]) -> Tuple[object, object]:
        """Arrow capsules: per live file ``file`` (plan number), ``path``, ``abs_path``, ``key``
        (Spark's ``_metadata.file_path``), ``size``, ``num_records``, ``dv_cardinality`` and the
        typed partition columns."""
    def dv_positions(self, paths: List[str]) -> Tuple[object, object]:
        """Arrow capsules of every DV-deleted row of ``paths``: ``file`` (index), ``row``."""
    def dv_bitmaps(self, paths: List[str], max_words: int) -> Optional[Tuple[object, object]]:
        """Arrow capsules of the DVs of ``paths`` as dense bitmaps: ``file`` (index) and ``words``
        (list of int64; bit ``r % 64`` of word ``r // 64`` set when row ``r`` is deleted), or None
        when they would need more than ``max_words`` words."""
    def deleted_rows(self, path: str) -> bytes:
        """Deleted row positions of a live file as little-endian u64 bytes."""
    def keep_mask(self, path: str, num_rows: int) -> bytes:
        """Packed LSB-first bits, 1 = row kept; DeletionVectorError if the DV exceeds num_rows."""
    def deletion_vector(self, path: str) -> "DeletionVector":
        """The DV of a live file, read now (empty for a file without one)."""
    def row_group_filter(self, predicate: str) -> "RowGroupFilter":
        """``predicate`` compiled for skipping row groups whose footer statistics rule it out."""
    def prune(self, predicate: str) -> Tuple[List[int], str]:
        """Indices of files that may match (partition values and statistics), and the resolved
        predicate as JSON text (for the Spark integration)."""
    def app_transactions(self) -> Dict[str, int]: ...
    def domain_metadata(self) -> Dict[str, str]: ...
    def tombstones(self) -> List[Tuple[str, Optional[str], Optional[int]]]: ...

@final
class StorageHandle:
    """A table's storage: a local directory or an object-store prefix. Paths are relative to its
    root (plain, not URI-encoded) or absolute in the same storage. Errors are DeltaIOError /
    StorageError naming the URI, never a secret. The GIL is released during I/O."""

    def __new__(cls, location: str, storage_options: Optional[Dict[str, str]] = None) -> "StorageHandle": ...
    @property
    def uri(self) -> str: ...
    @property
    def is_local(self) -> bool: ...
    def uri_of(self, path: str) -> str: ...
    def hadoop_path(self, path: str) -> str:
        """The path Spark (Hadoop) uses for ``path``: ``file://...``, ``s3a://...``, ..."""
    def local_path(self, path: str) -> Optional[str]: ...
    def read(self, path: str) -> bytes: ...
    def write(self, path: str, data: bytes) -> None:
        """Create or replace ``path`` whole (never a partial file)."""
    def delete(self, path: str) -> None: ...
    def size(self, path: str) -> int: ...
    def list(self, path: str, recursive: bool = True) -> List[Tuple[str, int]]:
        """``(name relative to path, size)`` of the files under ``path``, in name order."""
    def read_parquet_columns(
        self, path: str, wanted: List[Tuple[str, Optional[int]]], filter: Optional["RowGroupFilter"] = None
    ) -> Optional[Tuple[List[Optional[Tuple[Any, Any]]], int, Optional[List[Tuple[int, int]]]]]:
        """The wanted columns of the row groups ``filter`` may match (all without one), the file's
        row count, and ``(first row, rows)`` of each group read when some were skipped."""
    def footer_stats(self, path: str) -> Tuple[str, int]: ...

@final
class RowGroupFilter:
    """A ``where`` compiled against a snapshot (``SnapshotHandle.row_group_filter``)."""

    def may_match(self, stats: str) -> bool:
        """Whether a row group with these Delta stats (JSON text) may hold a matching row."""

def parquet_footer_stats(path: str) -> Tuple[str, int]:
    """Delta stats JSON and row count of a parquet file from its footer (no data read): the
    NaN, infinity, 32-character prefix and millisecond-timestamp rules. GIL released."""

def parquet_footer_stats_of(data: bytes) -> Tuple[str, int]:
    """``parquet_footer_stats`` of a whole parquet file in memory."""

def rows_stats(table: Any) -> str:
    """Delta stats JSON of the rows of a pyarrow table (anything with ``__arrow_c_stream__``),
    computed from the rows by the same rules as ``parquet_footer_stats``."""

def written_file_stats(written: bytes, table: Any) -> str:
    """Delta stats JSON of the parquet file ``written`` (its bytes) just encoded from ``table``:
    its footer's bounds, corrected by what only the rows tell (NaN, values above 4 KiB)."""

def logical_arrow_schema(schema_json: str) -> object:
    """The table schema (Delta schema JSON) as an ``arrow_schema`` PyCapsule, logical names.
    A column type delta-occ does not read raises UnsupportedFeatureError."""

def physical_arrow_schema(schema_json: str, mode: str) -> object:
    """The schema the data files hold under column mapping ``mode`` ("none", "name", "id"), as an
    ``arrow_schema`` PyCapsule: physical names at every level, ``PARQUET:field_id`` in id mode."""

def spark_physical_schema_json(schema_json: str, mode: str) -> str:
    """The physical schema in Spark's JSON form (field ids as ``parquet.field.id`` metadata)."""

def delta_schema_json(schema: object) -> str:
    """The Delta schema JSON of an Arrow schema (an ``arrow_schema`` PyCapsule); a type Delta
    cannot hold (unsigned integers, nulls, ...) raises InvalidArgumentError."""

def delta_type_json(data_type: object) -> str:
    """The Delta type JSON of an Arrow type (an ``arrow_schema`` PyCapsule)."""

def delta_type_of_data(data_type: object) -> Optional[str]:
    """The Delta type JSON Arrow data of this type counts as when written (unsigned integers as
    the smallest Delta integer holding them, NULLs as ``"void"``); None where Delta has none."""

def merged_for_write(table: str, data: str) -> Optional[str]:
    """The table schema a ``schema_mode="merge"`` write of ``data`` evolves ``table`` to
    (schema JSON), or None when the data adds no column."""
def type_writable_as(data: str, table: str) -> bool:
    """Whether values of Delta type ``data`` may be written to a column of Delta type ``table``
    (both as schema JSON): the same type, NULLs (``"void"``), or one of Delta's type widenings;
    nested types need the same field names in the same order. Bad JSON raises
    InvalidArgumentError."""
def zorder_permutation(batch: Any) -> Tuple[Any, Any]: ...
def partition_strings(array: Tuple[object, object]) -> List[Optional[str]]:
    """The canonical Delta partition string (None for null) of every value of an Arrow array
    given as ``__arrow_c_array__()`` capsules: ``NaN``/``Infinity``, timestamps as UTC
    ``yyyy-mm-dd HH:MM:SS.ffffff``, dates ``yyyy-mm-dd``, decimals with their scale."""

def sql_literals(array: Tuple[object, object]) -> List[str]:
    """Every value of an Arrow array (capsules) as a SQL literal the core's parser reads back as
    the same value (``NULL``, ``'NaN'``, ``TIMESTAMP '...'``, quotes doubled)."""

def merge_read_predicate(keys: List[Tuple[str, str, Tuple[object, object]]], target_only: List[str]) -> Optional[str]:
    """MERGE's read predicate from ``(target column, "values" | "range", Arrow array capsules)``
    per key (distinct values, or the two bounds) and the target-only conjuncts; ``FALSE`` when a
    key has no value; None when there is nothing to narrow by."""

def file_column_indexes(fields: List[Tuple[str, Optional[int]]], wanted: List[Tuple[str, Optional[int]]]) -> List[Optional[int]]:
    """For each wanted (physical name, field id), the index of the file field (name, parquet
    field id) holding it: by field id, else the physical name, else any letter case (the
    row-level checker's rule); None when the file lacks the column."""

def read_parquet_columns(
    path: str, wanted: List[Tuple[str, Optional[int]]]
) -> Optional[Tuple[List[Optional[Tuple[Any, Any]]], int]]:
    """The wanted (physical name, field id) columns of one parquet data file, found as
    ``file_column_indexes`` finds them, as Arrow (schema, array) capsule pairs (None for a
    column the file lacks), and the file's row count. INT96 timestamps come back at
    microseconds. None when the core does not decode the file (an INT96 nested in a struct, list
    or map: read it with pyarrow). Releases the GIL."""

def spark_file_keys(paths: List[str]) -> List[str]:
    """The key Spark reports as ``_metadata.file_path`` for each absolute local path."""

def parse_isolation_level(text: str) -> str:
    """Canonical name of an isolation level given in any letter case."""

def at_exit() -> None:
    """Called by ``atexit`` (registered when the module loads): the core then leaks its live-file
    sets instead of freeing them file by file as the interpreter tears down."""

def rule_ids() -> List[str]:
    """Every rule id of the core: conflict rules, pass rules (``pass_...``) and row-level
    fallbacks (``fallback_...``)."""

def rule_description(id: str) -> Optional[str]:
    """The text ``explain`` gives for a rule or fallback id; None for an unknown id."""

def parse_commit(data: bytes) -> int:
    """Parse commit-file bytes and return the number of actions (CorruptLogError otherwise)."""

@final
class RowExpr:
    """SQL text compiled against an Arrow schema by the core's one row evaluator (Spark SQL
    semantics, ANSI mode), evaluated on record batches. ``scopes`` lists (alias, column name
    prefix, readable): ``alias.col`` reads the schema field ``prefix + col``, a bare name must be
    found in exactly one scope; without scopes, the schema's columns by name. PredicateError on
    bad text, unknown or ambiguous columns and type errors."""

    def __new__(
        cls, text: str, schema: Any, scopes: Optional[List[Tuple[Optional[str], str, bool]]] = None, time_zone: Optional[str] = None
    ) -> "RowExpr": ...
    @property
    def text(self) -> str: ...
    @property
    def time_zone(self) -> str:
        """The SQL session time zone (default UTC): zone-less timestamp texts are its wall clocks;
        casts between timestamp and date/string/timestamp_ntz and date functions use it."""
    @property
    def columns(self) -> List[str]:
        """Names (as in the compile schema) of the columns the expression reads."""
    @property
    def tree_json(self) -> str:
        """The compiled tree as JSON: typed nodes, implicit casts explicit, literals encoded as the
        file-skipping predicate's (format: rust/core/src/rowexpr/export.rs)."""
    def evaluate(self, batch: Any) -> Tuple[Any, Any]:
        """The value on every row of a record batch (``__arrow_c_array__``), as array capsules.
        PredicateError on an evaluation error (overflow, division by zero, bad cast). GIL released."""
    def mask(self, batch: Any) -> Tuple[Any, Any]:
        """TRUE rows as a boolean array without nulls, as array capsules. GIL released."""

def referenced_columns(text: str, schema: Any, scopes: Optional[List[Tuple[Optional[str], str, bool]]] = None) -> Tuple[List[str], Optional[Tuple[str, str]]]:
    """A condition's columns, resolved like ``RowExpr`` but not type-checked: (schema names in
    first-use order, the two names when ``text`` is exactly ``column = column``)."""

def resolve_now(text: str, now_micros: int, time_zone: Optional[str] = None) -> str:
    """``text`` with current_date() / current_timestamp() replaced by literals of ``now_micros``
    (µs since the epoch; the date in ``time_zone``, default UTC); unchanged when it has none."""

def history_report(
    location: str, storage_options: Optional[Dict[str, str]] = None, limit: Optional[int] = None
) -> List[Tuple[int, Optional[str], Optional[str]]]:
    """The log's history without loading a snapshot; a commit that cannot be read is
    ``(version, None, message)`` (TableNotFoundError without any commit)."""
    ...

def unqualified(text: str, alias: str) -> str:
    """``text`` with the columns qualified by ``alias`` named without it (PredicateError on bad text)."""
    ...

def conjuncts(text: str) -> List[str]:
    """The top-level AND conjuncts of a SQL condition as SQL texts (PredicateError on bad text)."""

def read_deletion_vector(table_root: str, descriptor_json: str, storage_options: Optional[Dict[str, str]] = None) -> bytes:
    """Positions (LE u64) of the DV a descriptor points at, after size/CRC/cardinality checks."""

def write_deletion_vectors(
    table_root: str, bitmaps: List[List[int]], prefix: str = ..., storage_options: Optional[Dict[str, str]] = None
) -> List[str]:
    """Write the bitmaps into one new DV file; one descriptor JSON text per bitmap."""

def serialize_bitmap(positions: List[int]) -> bytes:
    """Delta's portable RoaringBitmapArray bytes (with magic number)."""

def deserialize_bitmap(data: bytes) -> bytes:
    """Positions (LE u64) of portable or native RoaringBitmapArray bytes."""

def z85_encode(data: bytes) -> str: ...
def z85_decode(text: str) -> bytes: ...
