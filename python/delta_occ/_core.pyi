"""Type stubs for the Rust extension module ``delta_occ._core`` (thin layer over delta-occ-core)."""

from typing import Dict, List, Optional, Tuple

__version__: str

class TableHandle:
    """An open table: the latest known snapshot plus incremental refresh."""

    @staticmethod
    def open(location: str) -> "TableHandle":
        """Replay the log of the table at ``location`` (path or file:// URI). GIL released."""
    @staticmethod
    def create(
        location: str,
        schema_json: str,
        partition_by: List[str],
        properties: Dict[str, str],
        name: Optional[str] = None,
    ) -> "TableHandle":
        """Commit version 0 with put-if-absent; TableAlreadyExistsError if a table is there."""
    @property
    def root(self) -> str: ...
    @property
    def version(self) -> int:
        """Latest version known to this handle."""
    def refresh(self) -> int:
        """Apply only commits newer than ``version``; returns the new latest version."""
    def snapshot(self, version: Optional[int] = None) -> "SnapshotHandle":
        """Latest known snapshot, or the one at ``version`` (VersionNotFoundError if gone)."""
    def history(self, limit: Optional[int] = None) -> List[Tuple[int, Optional[str]]]:
        """``(version, commitInfo JSON text or None)``, newest first, stopping at a gap."""

class SnapshotHandle:
    """An immutable replayed state at one version."""

    @property
    def version(self) -> int: ...
    @property
    def root(self) -> str: ...
    @property
    def schema_json(self) -> str:
        """metaData.schemaString (physical names live in the field metadata)."""
    @property
    def partition_columns(self) -> List[str]: ...
    @property
    def properties(self) -> Dict[str, str]: ...
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
    def files(self) -> Tuple[object, object]:
        """Arrow PyCapsules (schema, array) of one row per live file."""
    def partition_values(self) -> Tuple[object, object]:
        """Arrow PyCapsules of the typed partition values, in ``files()`` order."""
    def data_files(self) -> List[Tuple[str, str, bool]]:
        """``(absolute data path, log path, has_dv)`` in ``files()`` order."""
    def deleted_rows(self, path: str) -> bytes:
        """Deleted row positions of a live file as little-endian u64 bytes."""
    def keep_mask(self, path: str, num_rows: int) -> bytes:
        """Packed LSB-first bits, 1 = row kept; DeletionVectorError if the DV exceeds num_rows."""
    def app_transactions(self) -> Dict[str, int]: ...
    def domain_metadata(self) -> Dict[str, str]: ...
    def tombstones(self) -> List[Tuple[str, Optional[str], Optional[int]]]: ...

def parse_isolation_level(text: str) -> str:
    """Canonical name of an isolation level given in any letter case."""

def parse_commit(data: bytes) -> int:
    """Parse commit-file bytes and return the number of actions (CorruptLogError otherwise)."""

def read_deletion_vector(table_root: str, descriptor_json: str) -> bytes:
    """Positions (LE u64) of the DV a descriptor points at, after size/CRC/cardinality checks."""

def write_deletion_vectors(table_root: str, bitmaps: List[List[int]], prefix: str = "") -> List[str]:
    """Write the bitmaps into one new DV file; one descriptor JSON text per bitmap."""

def serialize_bitmap(positions: List[int]) -> bytes:
    """Delta's portable RoaringBitmapArray bytes (with magic number)."""

def deserialize_bitmap(data: bytes) -> bytes:
    """Positions (LE u64) of portable or native RoaringBitmapArray bytes."""

def z85_encode(data: bytes) -> str: ...
def z85_decode(text: str) -> bytes: ...
