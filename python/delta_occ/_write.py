"""Data files for the embedded engine: rows conformed to the table schema, split by partition,
written as parquet under physical column names, with Delta's per-file statistics; and rows of
existing files read back with their physical row positions (for DVs)."""

from __future__ import annotations

import json
import math
import uuid
from typing import Any, Dict, List, Optional, Sequence, Tuple

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from . import _arrow, _core, change_data, data_input
from ._schema import arrow_widens, type_mismatch, type_name
from .constraints import Rules
from .exceptions import SchemaMismatchError
from .generated import Generation
from .identity import IdentityColumn, identity_columns
from .operations import row_tracking
from .operations.conform import check_writable, data_columns
from .operations.protocols import Staging
from .reader import ROW, Reader
from .snapshot import Snapshot
from .workers import each

_MERGE_HINT = 'pass schema_mode="merge" to add them, or change the schema first'


class Layout:
    """What writing and reading data files of one snapshot needs."""

    def __init__(self, snapshot: Snapshot, schema_json: Optional[str] = None) -> None:
        """``schema_json``: the schema to write with when it is not the snapshot's (a
        transaction that changes the schema)."""
        h = snapshot.handle
        self.snapshot = snapshot
        self.root = h.root
        #: Where the data files are read and written: the table's storage (a local directory or an
        #: object store), through the core.
        self.storage = h.storage
        schema_json = schema_json or h.schema_json
        #: The schema written with (Delta JSON): the snapshot's, or the one staged in the transaction.
        self.schema_json: str = schema_json
        #: Reads the snapshot's files (under the schema written with).
        self.reader = Reader(snapshot, schema_json)
        #: The schema and, field by field, as the data files hold it (physical names, field ids):
        #: the reader's.
        self.schema: pa.Schema = self.reader.schema
        self.physical: pa.Schema = self.reader.physical
        self.delta_fields = json.loads(schema_json)["fields"]
        self.mode: str = h.column_mapping_mode
        self.partition_columns: List[str] = self.reader.partition_columns
        props = snapshot.properties
        self.dv_enabled = snapshot.deletion_vectors_enabled
        #: The change data feed is on: every operation that changes rows records them
        #: (``write_changes``).
        self.cdf = change_data.enabled(props)
        #: The physical materialized row-id and row-commit-version columns, when rows keep ids.
        self.row_id_columns = self.reader.row_id_columns
        #: CHECK constraints and invariants, enforced on every new or changed row; a rule the core
        #: cannot compile cannot be enforced, so it refuses writing rows as the unenforced do.
        self.rules = Rules(props, self.delta_fields, self.schema)
        self.unenforced = self.rules.unenforceable
        #: Generated columns and column defaults: filled in on new rows (``conform``).
        self.generation = Generation(self.delta_fields, self.schema)
        #: Identity columns, by name (their high-water marks as read: the transaction's current
        #: marks are ``delta_occ.identity.reserve``'s).
        self.identity: Dict[str, IdentityColumn] = identity_columns(schema_json)

    @property
    def omittable(self) -> List[str]:
        """Columns new rows may leave out even when NOT NULL: identity, generated and defaulted
        columns get their values from the table."""
        return list(self.identity) + self.generation.omittable

    @property
    def data_columns(self) -> List[str]:
        return [f.name for f in self.schema if f.name not in self.partition_columns]

    # -- writing ------------------------------------------------------------------------------

    def conform(self, data: Any) -> pa.Table:
        """Rows in the table schema, as Delta's schema enforcement allows (docs/guide.md
        "Policies"): columns by name (case-insensitive); each of the column's type or a widening
        of it; a missing nullable column filled with NULLs. Anything else is a
        SchemaMismatchError."""
        data = as_table(data)
        sources = data_columns([(f.name, f.nullable) for f in self.schema], data.column_names, _MERGE_HINT, ignore=[ROW], generated=self.omittable)
        arrays = []
        for f, name in zip(self.schema, sources):
            if name is None:
                default = self.generation.default_values(f, data.num_rows)
                arrays.append(pa.nulls(data.num_rows, f.type) if default is None else default)
                continue
            arrays.append(widened(f, data.column(name)))
        rows = self.generation.fill(pa.Table.from_arrays(arrays, schema=self.schema))
        for f, col, name in zip(self.schema, rows.columns, sources):
            if not f.nullable and col.null_count and (name is not None or f.name not in self.identity):
                raise SchemaMismatchError(f"column {f.name!r} is NOT NULL but the data holds {col.null_count} null(s)", column=f.name)
        return rows

    def write(
        self, txn: Staging, data: pa.Table, *, data_change: bool = True, tags: Optional[Dict[str, str]] = None, rewrite: bool = False
    ) -> List[str]:
        """Write rows (already conformed) as one file per partition and stage the adds. `rewrite`:
        the rows are existing rows copied unchanged (a DELETE without deletion vectors)."""
        return self.write_many(txn, [data], data_change=data_change, tags=tags, rewrite=rewrite)

    def write_many(
        self, txn: Staging, tables: Sequence[pa.Table], *, data_change: bool = True, tags: Optional[Dict[str, str]] = None, rewrite: bool = False
    ) -> List[str]:
        """`write` for several tables, each its own file(s): encoded on a few threads (pyarrow
        releases the GIL), the adds staged in order."""
        tables = [t.drop_columns([ROW]) if ROW in t.column_names else t for t in tables if t.num_rows]
        if not tables:
            return []
        if data_change and not rewrite:
            check_writable(self.root, self.unenforced)
            for t in tables:
                self.rules.check(t, self.root)
        pieces = [piece for t in tables for piece in self._by_partition(t)]
        return self.stage(txn, each(pieces, lambda piece: self._encode(txn, *piece)), data_change=data_change, tags=tags)

    def encode(self, txn: Staging, data: pa.Table) -> List[Tuple[str, Dict[str, Optional[str]], int, str]]:
        """Write existing rows copied unchanged (a rewrite: no data rule to check) as one file
        per partition, on the calling thread; the adds are left to `stage`."""
        data = data.drop_columns([ROW]) if ROW in data.column_names else data
        return [self._encode(txn, *piece) for piece in self._by_partition(data)] if data.num_rows else []

    def stage(
        self, txn: Staging, written: Sequence[Tuple[str, Dict[str, Optional[str]], int, str]], *, data_change: bool = True, tags: Optional[Dict[str, str]] = None
    ) -> List[str]:
        """Stage the adds of written files, in order; their log paths."""
        for rel, partition, size, stats in written:
            txn.add_file(rel, partition, size, stats, data_change=data_change, tags=tags)
        return [w[0] for w in written]

    def write_changes(self, txn: Staging, changes: change_data.Changes) -> int:
        """Write an operation's changed rows (kind, rows of the table schema) as change-data
        files, one per partition, and stage their ``cdc`` actions; how many files."""
        tables = [change_data.with_kind(rows.drop_columns([ROW]) if ROW in rows.column_names else rows, kind) for kind, rows in changes if rows.num_rows]
        if not tables:
            return 0
        data = pa.concat_tables([t.select(self.schema.names + [change_data.CHANGE_TYPE]) for t in tables])
        written = each(self._by_partition(data), lambda piece: self._encode(txn, piece[0], piece[1], changes=True))
        for rel, partition, size, _ in written:
            txn.add_cdc_file(rel, partition, size)
        return len(written)

    def _by_partition(self, data: pa.Table) -> List[Tuple[pa.Table, Dict[str, Optional[str]]]]:
        if not self.partition_columns:
            return [(data, {})]
        keys = data.select(self.partition_columns)
        groups = keys.group_by(self.partition_columns, use_threads=False).aggregate([])
        strings = partition_strings(groups, self.partition_columns)
        out = []
        for row, values in zip(groups.to_pylist(), strings):
            m = None
            for c in self.partition_columns:
                v = row[c]
                col = data.column(c)
                if v is None:
                    cond = pc.is_null(col)
                elif isinstance(v, float) and math.isnan(v):  # NaN never equals itself in pyarrow
                    cond = pc.fill_null(pc.is_nan(col), False)
                else:
                    cond = pc.fill_null(pc.equal(col, pa.scalar(v, col.type)), False)
                m = cond if m is None else pc.and_(m, cond)
            out.append((data.filter(m), values))
        return out

    def _encode(
        self, txn: Staging, data: pa.Table, partition: Dict[str, Optional[str]], changes: bool = False
    ) -> Tuple[str, Dict[str, Optional[str]], int, str]:
        """Write one data file (with ``changes``, a change-data file: its rows keep their
        ``_change_type``, no stats); its log path, partition values, size and stats (not staged)."""
        cols, out_fields = [], []
        for name in self.data_columns:
            field = self.physical.field(self.schema.get_field_index(name)).with_nullable(True)
            col = data.column(name)
            if col.type != field.type:  # nested fields renamed to their physical names
                col = pa.chunked_array([c.view(field.type) for c in col.chunks], type=field.type)
            cols.append(col)
            out_fields.append(field)
        if changes:
            cols.append(data.column(change_data.CHANGE_TYPE))
            out_fields.append(pa.field(change_data.CHANGE_TYPE, pa.string()))
        elif self.row_id_columns and row_tracking.ROW_ID in data.column_names:
            # Copied rows keep their ids and commit versions in the materialized columns.
            for kept, name in zip((row_tracking.ROW_ID, row_tracking.ROW_COMMIT_VERSION), self.row_id_columns):
                cols.append(data.column(kept))
                out_fields.append(pa.field(name, pa.int64()))
        physical = pa.Table.from_arrays(cols, schema=pa.schema(out_fields))
        if self.mode == "none":
            sub = "/".join(f"{k}={_escape(v)}" for k, v in partition.items())
        else:
            sub = uuid.uuid4().hex[:2]  # column mapping: no partition directories (Delta's layout)
        if changes:
            rel = f"{change_data.DIRECTORY}/" + (sub + "/" if sub else "") + f"cdc-00000-{uuid.uuid4()}.c000.snappy.parquet"
        else:
            rel = (sub + "/" if sub else "") + f"part-00000-{uuid.uuid4()}.c000.snappy.parquet"
        txn.bookkeeping.own_file(rel)  # before writing: a failure elsewhere still cleans this file up
        data_bytes = _write_parquet(self.storage, rel, physical)
        return rel, partition, len(data_bytes), "" if changes else file_stats(physical, data_bytes)


def as_table(data: Any) -> pa.Table:
    """Data to write as a pyarrow Table (whatever ``delta_occ.data_input`` accepts)."""
    return data_input.as_table(data)


def widened(f: pa.Field, col: Any) -> Any:
    """A data column as the table column's type, when its type is that type or widens to it."""
    if col.type == f.type:
        return col
    if not arrow_widens(col.type, f.type):
        raise type_mismatch(f.name, type_name(f.type), type_name(col.type))
    try:
        return col.cast(f.type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise SchemaMismatchError(
            f"column {f.name!r}: cannot cast {col.type} to the table type {f.type}: {e}",
            column=f.name, table_type=type_name(f.type), data_type=type_name(col.type),
        ) from e


#: Values of a column looked at to decide whether to dictionary-encode it.
_DICTIONARY_SAMPLE = 1024
#: A column whose sample is at least this share of distinct values is written without a dictionary.
_DICTIONARY_MAX_DISTINCT = 0.9


def dictionary_columns(table: pa.Table) -> Any:
    """``use_dictionary`` for ``pq.write_table``: the columns worth a dictionary, judged on a
    sample of their first 1,024 values (as parquet-mr falls back to plain encoding when the dictionary
    does not pay off, but decided before encoding). pyarrow hashes every value into the
    dictionary until it exceeds 1 MiB (131,072 distinct int64s), then falls back: for a column of
    mostly distinct values that is wasted work (writing 100,000 rows of three such columns took
    17 ms with dictionaries, 7 ms without) and a larger file. Nested columns (whose dictionaries
    are set per leaf path) keep pyarrow's default."""
    if any(pa.types.is_nested(f.type) for f in table.schema):
        return True
    keep = []
    for name in table.column_names:
        sample = table.column(name).slice(0, _DICTIONARY_SAMPLE)
        valid = len(sample) - sample.null_count
        if valid < 2 or len(pc.unique(sample)) - (sample.null_count > 0) < _DICTIONARY_MAX_DISTINCT * valid:
            keep.append(name)
    return keep if len(keep) < table.num_columns else True


def _write_parquet(storage: Any, rel: str, table: pa.Table) -> bytes:
    """Encode ``table`` as parquet in memory and store it at ``rel`` in the table's storage, whole
    (a full disk, a permission problem or a refused upload is a DeltaIOError naming the file and
    leaves no partial file behind). Returns the file's bytes."""
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="snappy", use_dictionary=dictionary_columns(table))
    data = sink.getvalue().to_pybytes()
    storage.write(rel, data)
    return data


def _escape(v: Optional[str]) -> str:
    if v is None:
        return "__HIVE_DEFAULT_PARTITION__"
    return "".join(c if c.isalnum() or c in "-_. " else "%{:02X}".format(ord(c)) for c in v)


def partition_strings(rows: pa.Table, columns: List[str]) -> List[Dict[str, Optional[str]]]:
    """Per row of ``rows``, the ``partitionValues`` of ``columns`` as the core spells them."""
    per_column = {c: _core.partition_strings(_arrow.array_capsules(rows.column(c))) for c in columns}
    return [{c: per_column[c][i] for c in columns} for i in range(rows.num_rows)]


def stats_json(data: pa.Table) -> str:
    """Delta stats of rows: numRecords, minValues, maxValues, nullCount (flat columns); the
    core's rules (``_core.rows_stats``)."""
    return _core.rows_stats(data)


def file_stats(data: pa.Table, written: bytes) -> str:
    """`stats_json(data)` for the file just encoded from `data` (its bytes), read from its footer
    and corrected by what only the rows tell (``_core.written_file_stats``)."""
    return _core.written_file_stats(written, data)


def concat(tables: Sequence[pa.Table], schema: pa.Schema) -> pa.Table:
    tables = [t for t in tables if t.num_rows]
    if not tables:
        return schema.empty_table()
    if any(row_tracking.ROW_ID in t.column_names for t in tables):
        # rows without ids (new rows) take NULLs there: the new file's fresh ids
        return pa.concat_tables(tables, promote_options="default")
    return pa.concat_tables(tables)
