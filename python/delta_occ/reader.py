"""Reading the live rows of a snapshot's data files: the one reader behind every caller that reads
data (``Snapshot.to_pyarrow`` / ``to_batches``, DELETE / UPDATE / MERGE, OPTIMIZE, the change
feed, constraint checks), with DVs applied, column mapping resolved and partition columns filled.

Several files are fetched at a time (``concurrency``): on an object store each file costs a round
trip or two, and one file after another made a 100-file read at 30 ms a request take 100 times
that. Rows always come back in the order the files were asked for. Streamed reads hold a bounded
number of files (and bytes of files) at once (``memory_budget``)."""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

import pyarrow as pa
import pyarrow.compute as pc

from . import _rows
from ._read import DataColumns, keep_mask, read_file
from ._schema import delta_schema_to_arrow, physical_schema
from .exceptions import InvalidArgumentError
from .operations import row_tracking
from .scan_plan import scan_plan
from .workers import CPU_WORKERS, chunks, each, ordered

if TYPE_CHECKING:
    from .snapshot import Snapshot

#: Physical position of a row in its file (uint64), on rows read with ``positions``.
ROW = "__delta_occ_row"

#: Files read at once from an object store, unless ``DELTA_OCC_READ_CONCURRENCY`` says otherwise:
#: requests wait on the network, not a core (deltalake's default is 10 concurrent requests; 16
#: keeps a 30 ms round trip from dominating a 100-file read on two cores). A file with a DV has
#: its DV's request in flight with its own, so up to twice as many requests.
OBJECT_STORE_CONCURRENCY = 16
#: Bytes of data files (their size in the log) a streamed read holds at once, unless
#: ``DELTA_OCC_READ_MEMORY`` (bytes) says otherwise; always at least one file.
MEMORY_BUDGET = 32 << 20


def _setting(name: str, default: int) -> int:
    text = os.environ.get(name)
    if text is None or text == "":
        return default
    try:
        value = int(text)
    except ValueError:
        raise InvalidArgumentError(f"{name} must be a positive whole number, got {text!r}") from None
    if value < 1:
        raise InvalidArgumentError(f"{name} must be a positive whole number, got {text!r}")
    return value


def concurrency(local: bool) -> int:
    """Files read at once: ``$DELTA_OCC_READ_CONCURRENCY``, else 16 on an object store and the
    cores + 1 on a local disk."""
    return _setting("DELTA_OCC_READ_CONCURRENCY", CPU_WORKERS if local else OBJECT_STORE_CONCURRENCY)


def memory_budget() -> int:
    """Bytes of data files a streamed read holds at once: ``$DELTA_OCC_READ_MEMORY``, else 32 MiB."""
    return _setting("DELTA_OCC_READ_MEMORY", MEMORY_BUDGET)


class Planned(NamedTuple):
    """A file's scan-plan entry, as reading it needs it."""

    abs_path: str
    size: int
    has_dv: bool
    partition_values: Dict[str, Any]
    base_row_id: Optional[int]
    default_row_commit_version: Optional[int]


class Selection(NamedTuple):
    """What reading a selection of columns needs (computed once per selection)."""

    #: The table fields returned, in table order.
    fields: List[pa.Field]
    #: Their data columns (partition columns are not in the files), with the row-id columns.
    wanted: DataColumns
    #: The schema of the rows returned.
    schema: pa.Schema


class Reader:
    """Reads live rows of the data files of one snapshot, under the table schema (the snapshot's,
    or ``schema_json``: the one a transaction that changes the schema writes with, so existing
    files read with its new columns as NULLs)."""

    def __init__(self, snapshot: "Snapshot", schema_json: Optional[str] = None) -> None:
        h = snapshot.handle
        self.handle = h
        self.root: str = h.root
        #: Where the data files are: a local directory or an object store, through the core.
        self.storage = h.storage
        # The snapshot's schema is converted once per snapshot (its cached `schema`).
        self.schema: pa.Schema = snapshot.schema if schema_json in (None, h.schema_json) else delta_schema_to_arrow(schema_json)
        schema_json = schema_json or h.schema_json
        #: The schema as the data files hold it (physical names, field ids), field by field.
        self.physical: pa.Schema = physical_schema(schema_json, h.column_mapping_mode)
        self.partition_columns: List[str] = list(h.partition_columns)
        #: The physical materialized row-id and row-commit-version columns, when rows keep ids.
        self.row_id_columns = row_tracking.materialized(snapshot.properties)
        #: Files read at once.
        self.concurrency = concurrency(self.storage.is_local)
        # Per file looked up so far: its scan-plan entry; looked up in the core for the files read
        # only, so a DML costs what it touches, not the table's file count.
        self._plan: Dict[str, Planned] = {}
        self._selections: Dict[Tuple[Optional[Tuple[str, ...]], bool, bool], Selection] = {}

    def prefetch(self, paths: Sequence[str]) -> None:
        """Look up the files about to be read in one call to the core (a call per file cost
        about 0.1 ms each, a tenth of reading a 1,000-row file)."""
        missing = [p for p in dict.fromkeys(paths) if p not in self._plan]
        if not missing:
            return
        plan, partition_values = scan_plan(self.handle, missing, self.partition_columns)
        columns = [plan.column(c).to_pylist() for c in ("abs_path", "size", "dv_cardinality", "base_row_id", "default_row_commit_version")]
        values = partition_values.columns
        for i, path in enumerate(missing):
            abs_path, size, dv, base, version = (c[i] for c in columns)
            parts = {c: values[k][i] for k, c in enumerate(self.partition_columns)}
            self._plan[path] = Planned(abs_path, size, dv > 0, parts, base, version)

    def entry(self, path: str) -> Planned:
        """The file's scan-plan entry (the core says "not a live file of version N" for any
        other path)."""
        if path not in self._plan:
            self.prefetch([path])
        return self._plan[path]

    def selection(self, columns: Optional[Sequence[str]], positions: bool, ids: bool = False) -> Selection:
        """Per selection of columns (computed once): the table fields read, their data columns
        (with ``ids``, the materialized row-id columns too), and the schema of the rows returned."""
        key = (None if columns is None else tuple(columns), positions, ids)
        got = self._selections.get(key)
        if got is None:
            fields = [f for f in self.schema if columns is None or f.name in columns]
            data = [i for i, f in enumerate(self.schema) if (columns is None or f.name in columns) and f.name not in self.partition_columns]
            wanted = DataColumns([self.schema.field(i) for i in data], [self.physical.field(i) for i in data])
            schema = pa.schema(fields)
            if positions:
                schema = schema.append(pa.field(ROW, pa.uint64()))
            if ids and self.row_id_columns:
                kept = [pa.field(row_tracking.ROW_ID, pa.int64()), pa.field(row_tracking.ROW_COMMIT_VERSION, pa.int64())]
                wanted = DataColumns(wanted.logical + kept, wanted.physical + [pa.field(n, pa.int64()) for n in self.row_id_columns])
                schema = pa.schema(list(schema) + kept)
            got = self._selections[key] = Selection(fields, wanted, schema)
        return got

    def read_rows(
        self, path: str, columns: Optional[Sequence[str]] = None, positions: bool = True, ids: bool = False, filter: Any = None
    ) -> pa.Table:
        """Live rows of a file of the snapshot, plus ROW (physical position) unless `positions`
        is False: every column, or only `columns` (table column names) when given, in table
        order. ``ids``, on a table whose rows keep their ids: the rows also carry their ids and
        commit versions (``row_tracking.ROW_ID`` and ``ROW_COMMIT_VERSION``), for the copies to
        keep them. ``filter`` (a ``_core.RowGroupFilter``): the row groups whose footer
        statistics rule it out are skipped (their rows are not returned)."""
        entry = self.entry(path)
        with_ids = ids and self.row_id_columns is not None
        fields, wanted, schema = self.selection(columns, positions, with_ids)
        fetching = self.fetch_deletion_vector(path)
        data, n, kept = read_file(self.storage, entry.abs_path, wanted, filter)
        dv = fetching() if fetching is not None else None
        m = n if kept is None else sum(rows for _, rows in kept)
        # Physical positions only where something uses them (a plain read returns none).
        need_positions = positions or with_ids or (entry.has_dv and kept is not None)
        at = (arange(n) if kept is None else _positions(kept)) if need_positions else None
        arrays = []
        for f in fields:
            if f.name in self.partition_columns:
                arrays.append(pa.repeat(entry.partition_values[f.name], m).cast(f.type))
            else:
                arrays.append(data[f.name])
        if positions:
            arrays.append(at)
        if with_ids:
            arrays += row_tracking.ids_of(
                data[row_tracking.ROW_ID], data[row_tracking.ROW_COMMIT_VERSION], at, entry.base_row_id, entry.default_row_commit_version, self.root, path
            )
        table = pa.Table.from_arrays(arrays, schema=schema)
        if entry.has_dv:
            keep = keep_mask(self.handle, path, n, dv)
            table = table.filter(keep if kept is None else keep.take(at))
        return table

    def read_many(
        self, paths: Sequence[str], columns: Optional[Sequence[str]] = None, positions: bool = True, ids: bool = False, workers: Optional[int] = None
    ) -> List[pa.Table]:
        """`read_rows` of each file, in order, ``concurrency`` files at a time (``workers``, when
        given: a caller reading several such groups at once shares the concurrency out)."""
        self.prefetch(paths)
        return each(paths, lambda path: self.read_rows(path, columns, positions, ids), workers or self.concurrency)

    def each(self, paths: Sequence[str], fn: Any) -> Iterator[Any]:
        """``fn(path)`` of each file (which reads it), in order: ``concurrency`` files at a time, a
        slice of ``4 * concurrency`` files held at once."""
        for chunk in chunks(paths, 4 * self.concurrency):
            self.prefetch(chunk)
            yield from each(chunk, fn, self.concurrency)

    def stream(self, paths: Sequence[str], read: Any) -> Iterator[Any]:
        """``read(path)`` of each file, yielded in order, ``concurrency`` files at a time and at
        most ``memory_budget()`` bytes of files (their size in the log) held at once."""
        self.prefetch(paths)
        return ordered(paths, read, self.concurrency, weight=lambda p: self._plan[p].size, budget=memory_budget())

    def fetch_deletion_vector(self, path: str) -> Optional[Callable[[], Any]]:
        """On an object store, start fetching the deletion vector of a file about to be read (it
        has one), on a thread of its own: the file's data and its DV are then in flight together,
        one round trip for the file rather than two, one after the other. Returns what waits for
        it and gives the ``_core.DeletionVector``, or None when it failed (the keep mask then
        reads it again and reports the error); None instead on a local disk or without a DV."""
        if self.storage.is_local or not self.entry(path).has_dv:
            return None
        got: List[Any] = []

        def fetch() -> None:
            try:
                got.append(self.handle.deletion_vector(path))
            except Exception:  # noqa: BLE001 - read again by the keep mask, which reports it
                pass

        thread = threading.Thread(target=fetch, daemon=True)
        thread.start()

        def wait() -> Any:
            thread.join()
            return got[0] if got else None

        return wait


def _has_float(t: pa.DataType) -> bool:
    """Whether a column of type ``t`` holds floating-point values at any depth."""
    if pa.types.is_floating(t):
        return True
    if pa.types.is_struct(t):
        return any(_has_float(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _has_float(t.value_type)
    if pa.types.is_map(t):
        return _has_float(t.key_type) or _has_float(t.item_type)
    return False


def _positions(kept: Sequence[Tuple[int, int]]) -> pa.Array:
    """The physical positions (uint64) of the rows of the row groups read: ``(first row, rows)``
    each."""
    if not kept:
        return pa.array([], pa.uint64())
    return pa.concat_arrays([pc.add(arange(count), pa.scalar(first, pa.uint64())) for first, count in kept])


def arange(n: int, type: Optional[pa.DataType] = None) -> pa.Array:
    """0 .. n-1 built in Arrow (no Python list of n ints): the positions of a repeat of True
    (uint64 unless `type` says otherwise)."""
    return pc.indices_nonzero(pa.repeat(True, n)).cast(type or pa.uint64())


class SnapshotRead:
    """A read of a snapshot's rows: the files a ``where`` may match (pruned by the log's
    partition values and statistics), the columns asked for, and the filter applied per file."""

    def __init__(self, snapshot: "Snapshot", columns: Optional[Sequence[str]] = None, where: Optional[str] = None) -> None:
        schema = snapshot.schema
        names = schema.names
        if columns is None:
            columns = list(names)
        else:
            if isinstance(columns, str):
                raise InvalidArgumentError(f"columns must be a list of column names, got the string {columns!r}")
            columns = list(columns)
            if not columns:
                raise InvalidArgumentError("columns must name at least one column (or be None for all)")
            unknown = [c for c in columns if c not in names]
            if unknown:
                raise InvalidArgumentError(f"unknown column(s) {unknown}; the table has {names}")
        #: The schema of the rows returned: the columns in the order asked for.
        self.schema = pa.schema([schema.field(c) for c in columns])
        self._columns = columns
        self._expression = None
        self._filter = None
        selected = None
        read = list(columns)
        if where is not None:
            selected, _ = snapshot.handle.prune(where)
            self._expression = _rows.compile(where, schema)
            # Row groups too: a group whose footer statistics rule the condition out is skipped.
            # Not by a floating-point column: writers leave NaN out of a footer's bounds without
            # always counting it, and NaN is the largest value in Spark SQL (`x >= 'NaN'`).
            if not any(_has_float(schema.field(c).type) for c in self._expression.columns if c in names):
                self._filter = snapshot.handle.row_group_filter(where)
            read += [c for c in self._expression.columns if c not in read]
        self._read = read
        self.reader = Reader(snapshot)
        #: The files read, in table order.
        self.paths: List[str] = [log_path for _, log_path, _ in snapshot.handle.data_files(selected)]

    def _file(self, path: str) -> pa.Table:
        rows = self.reader.read_rows(path, self._read, positions=False, filter=self._filter)
        if self._expression is not None:
            rows = rows.filter(_rows.mask(rows, self._expression))
        return rows.select(self._columns)

    def tables(self) -> Iterator[pa.Table]:
        """The rows of each file (after the filter), in table order, bounded in memory."""
        return self.reader.stream(self.paths, self._file)

    def table(self) -> pa.Table:
        tables = [t for t in self.tables() if t.num_rows]
        return pa.concat_tables(tables) if tables else self.schema.empty_table()

    def batches(self, batch_size: Optional[int] = None) -> pa.RecordBatchReader:
        if batch_size is not None and (not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1):
            raise InvalidArgumentError(f"batch_size must be a positive whole number of rows, got {batch_size!r}")

        def batches() -> Iterator[pa.RecordBatch]:
            pool = pa.default_memory_pool()
            for t in self.tables():
                yield from t.to_batches(max_chunksize=batch_size)
                del t
                # pyarrow's allocator keeps freed pages for reuse; a stream would hold about a
                # file's worth more per file read (peak RSS growth streaming 650 MB: 244 MB
                # without this, 141 MB with).
                pool.release_unused()

        return pa.RecordBatchReader.from_batches(self.schema, batches())


__all__ = ["ROW", "Reader", "Planned", "Selection", "SnapshotRead", "arange", "concurrency", "memory_budget"]
