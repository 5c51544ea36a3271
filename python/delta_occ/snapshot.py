"""A snapshot: the table at one version (files, rows, metadata), read-only."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence

import pyarrow as pa

from . import _arrow, _core
from ._schema import delta_schema_to_arrow
from .exceptions import InvalidArgumentError
from .instant import Now
from .isolation import IsolationLevel

if TYPE_CHECKING:  # the reader (pyarrow.compute, pyarrow.parquet) is imported by the first read
    from .reader import SnapshotRead


class Snapshot:
    """An immutable view of the table at one version."""

    def __init__(self, handle: "_core.SnapshotHandle") -> None:
        self._h = handle
        self._schema: Optional[pa.Schema] = None

    def __repr__(self) -> str:
        return f"Snapshot(root={self._h.root!r}, version={self.version}, files={self._h.num_files()})"

    @property
    def handle(self) -> "_core.SnapshotHandle":
        """The core's snapshot, for the engines that read and plan files through it."""
        return self._h

    @property
    def version(self) -> int:
        return self._h.version

    @property
    def schema(self) -> pa.Schema:
        """The table schema with logical column names (even with column mapping)."""
        if self._schema is None:
            self._schema = delta_schema_to_arrow(self._h.schema_json)
        return self._schema

    @property
    def partition_columns(self) -> List[str]:
        return list(self._h.partition_columns)

    @property
    def properties(self) -> Dict[str, str]:
        return dict(self._h.properties)

    @property
    def clustering_columns(self) -> Optional[List[str]]:
        """The liquid-clustering columns (``[]`` after ``set_clustering([])``), None when the
        table is not clustered."""
        cols = self._h.clustering_columns
        return None if cols is None else list(cols)

    @property
    def isolation_level(self) -> IsolationLevel:
        return IsolationLevel(self._h.isolation_level)

    @property
    def protocol(self) -> Dict[str, Any]:
        return dict(self._h.protocol)

    @property
    def deletion_vectors_enabled(self) -> bool:
        """Whether writers put deletion vectors here (and so row-level concurrency applies): the
        property ``delta.enableDeletionVectors=true`` and the ``deletionVectors`` writer feature."""
        return self._h.deletion_vectors_enabled

    @property
    def metadata(self) -> Dict[str, Any]:
        """Table id, name, description, created time and format."""
        return dict(self._h.metadata)

    @property
    def commit_info(self) -> Optional[Dict[str, Any]]:
        """commitInfo of this version (None when it was reconstructed from a checkpoint alone)."""
        text = self._h.commit_info
        return json.loads(text) if text is not None else None

    def files(self, columns: Optional[Sequence[str]] = None) -> pa.Table:
        """One row per live file: path, partition_values, size, modification_time, data_change,
        stats, num_records, tags, deletion_vector, dv_cardinality, base_row_id,
        default_row_commit_version, clustering_provider; ``columns`` builds only those (``["path"]`` is
        cheap)."""
        if isinstance(columns, str):
            raise InvalidArgumentError(f"columns must be a list of column names, got the string {columns!r}")
        return _arrow.table(self._h.files(None if columns is None else list(columns)))

    def deleted_rows(self, path: str) -> pa.Array:
        """Row positions (uint64, ascending) deleted by the file's DV; empty if it has none."""
        data = self._h.deleted_rows(path)
        return pa.Array.from_buffers(pa.uint64(), len(data) // 8, [None, pa.py_buffer(data)])

    def to_pyarrow(self, where: Optional[str] = None, columns: Optional[Sequence[str]] = None) -> pa.Table:
        """The table's rows with DVs applied, logical column names, partition columns filled, in
        table order; ``where`` (SQL text) keeps the rows it is TRUE on, ``columns`` picks columns.
        Files are fetched several at a time (``delta_occ.reader.concurrency``)."""
        return self._read(where, columns).table()

    def to_batches(self, where: Optional[str] = None, columns: Optional[Sequence[str]] = None, batch_size: Optional[int] = None) -> pa.RecordBatchReader:
        """`to_pyarrow` as a stream of record batches (of at most ``batch_size`` rows), read as it
        is consumed: memory holds the files in flight (``delta_occ.reader.memory_budget``), not
        the table. The files to read are fixed when it is called."""
        return self._read(where, columns).batches(batch_size)

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """The rows as an Arrow C stream (the Arrow PyCapsule interface): DuckDB, polars and
        ``pa.table()`` read a snapshot directly, DVs applied, in bounded memory."""
        return self.to_batches().__arrow_c_stream__(requested_schema)

    def to_pandas(self, where: Optional[str] = None, columns: Optional[Sequence[str]] = None) -> Any:
        """`to_pyarrow` as a pandas DataFrame (pandas must be installed)."""
        return self.to_pyarrow(where, columns).to_pandas()

    def to_pyarrow_dataset(self) -> Any:
        """The live files as a ``pyarrow.dataset.Dataset`` (partition columns as constants per
        file), for engines that plan their own scans. Only where a plain parquet reader sees the
        rows Delta means: a table with deletion vectors on live files, column mapping or a widened
        column type is refused (UnsupportedFeatureError naming it) — read those with
        `to_batches`, which applies them."""
        from .dataset import snapshot_dataset

        return snapshot_dataset(self)

    def _read(self, where: Optional[str], columns: Optional[Sequence[str]]) -> SnapshotRead:
        if where is not None and not isinstance(where, str):
            raise InvalidArgumentError(f"where must be SQL text, got {type(where).__name__}")
        from .reader import SnapshotRead

        return SnapshotRead(self, columns, Now().text(where))

    def app_version(self, app_id: str) -> int:
        """The latest version recorded for an application id, or -1."""
        return self._h.app_transactions().get(app_id, -1)

    @property
    def app_transactions(self) -> Dict[str, int]:
        return dict(self._h.app_transactions())

    @property
    def domain_metadata(self) -> Dict[str, str]:
        return dict(self._h.domain_metadata())

    def tombstones(self) -> List[Dict[str, Any]]:
        return [
            {"path": p, "dv_unique_id": d, "deletion_timestamp": t} for p, d, t in self._h.tombstones()
        ]
