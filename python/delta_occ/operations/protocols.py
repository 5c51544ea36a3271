"""What every operation needs from a transaction and from an engine, as typed protocols (each
operation's module adds its own engine protocol). The embedded engine (``delta_occ.engine``, rows
as pyarrow Tables) and Spark (``delta_occ.spark``, rows as DataFrames) implement them; both stage
on a :class:`delta_occ.Transaction`, which implements :class:`Staging`."""

from __future__ import annotations

from typing import Any, List, Mapping, NamedTuple, Optional, Protocol, Sequence

import pyarrow as pa

from ..identity import IdentityColumn
from ..snapshot import Snapshot
from .bookkeeping import Bookkeeping
from .commit_info import OperationRecord


class Staging(Protocol):
    """The open transaction an operation stages on (:class:`delta_occ.Transaction`)."""

    bookkeeping: Bookkeeping

    @property
    def snapshot(self) -> Snapshot: ...

    @property
    def schema_json(self) -> str: ...

    def scan(self, where: Optional[str] = None, columns: Optional[Sequence[str]] = None) -> pa.Table: ...

    def record_files_read(self, paths: Sequence[str]) -> None: ...

    def add_file(
        self, path: str, partition_values: Optional[Mapping[str, Optional[str]]], size: int, stats: Optional[str], data_change: bool = True,
        tags: Optional[Mapping[str, Optional[str]]] = None,
    ) -> None: ...

    def add_cdc_file(self, path: str, partition_values: Optional[Mapping[str, Optional[str]]], size: int) -> None: ...

    def remove_file(self, path: str, data_change: bool = True) -> None: ...

    def delete_rows(self, path: str, positions: Any) -> None: ...

    def delete_rows_batch(self, paths: Sequence[str], files: Any, rows: Any) -> None: ...

    def delete_row_bits(self, path: str, firsts: Any, bits: Any) -> None: ...

    def set_schema(self, schema: pa.Schema, allow_drop: bool = False) -> None: ...

    def replace_schema(self, schema: pa.Schema) -> None: ...

    def set_column_metadata(self, column: str, metadata: Mapping[str, Any]) -> None: ...

    def mark_clustered(self, clustered: bool = True) -> None: ...

    def stage_operation(self, operation: str, parameters: Mapping[str, Any], metrics: Optional[Mapping[str, int]] = None) -> None: ...

    def record_operation(self, record: OperationRecord) -> None: ...


class Written(NamedTuple):
    rows: int
    files: int


class Engine(Protocol):
    """What every operation needs: the table's columns, and where the operation's commitInfo
    goes (the embedded engine allows one operation per transaction, Spark several)."""

    @property
    def schema(self) -> pa.Schema: ...

    @property
    def partition_columns(self) -> List[str]: ...

    @property
    def identity(self) -> Mapping[str, IdentityColumn]:
        """The table's identity columns (``delta_occ.identity``)."""
        ...

    @property
    def generated(self) -> Sequence[str]:
        """The table's generated columns (``delta_occ.generated``)."""
        ...

    @property
    def txn(self) -> Staging:
        """The transaction the operation stages on."""
        ...

    def record(self, record: OperationRecord) -> None: ...


__all__ = ["Staging", "Engine", "Written"]
