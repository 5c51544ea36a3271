"""DESCRIBE DETAIL: one dict about a table's version, with Delta's column names (``format``,
``id``, ``name``, ``description``, ``location``, ``createdAt``, ``lastModified``,
``partitionColumns``, ``clusteringColumns``, ``numFiles``, ``sizeInBytes``, ``properties``,
``minReaderVersion``, ``minWriterVersion``, ``tableFeatures``).

``createdAt`` is the metadata's creation time and ``lastModified`` the version's commit time
(its in-commit timestamp where the table has them, its commit file's time otherwise), both as
timezone-aware UTC datetimes (None when the log does not say). ``tableFeatures`` lists every
feature the protocol supports, those its legacy versions imply included. Delta's
``statistics`` column is not given."""

from __future__ import annotations

import datetime as _dt
from typing import Any, Dict, Optional

from .snapshot import Snapshot

FIELDS = (
    "format", "id", "name", "description", "location", "createdAt", "lastModified", "partitionColumns", "clusteringColumns",
    "numFiles", "sizeInBytes", "properties", "minReaderVersion", "minWriterVersion", "tableFeatures",
)


def _instant(ms: Optional[int]) -> Optional[_dt.datetime]:
    return None if ms is None else _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.timezone.utc)


def describe(snap: Snapshot, location: str) -> Dict[str, Any]:
    """The detail of ``snap`` (its table at ``location``)."""
    import pyarrow.compute as pc  # (on use: ``import delta_occ`` stays light)

    h = snap.handle
    meta = snap.metadata
    protocol = snap.protocol
    sizes = snap.files(["size"]).column("size")
    return {
        "format": "delta",
        "id": meta["id"],
        "name": meta["name"],
        "description": meta["description"],
        "location": location,
        "createdAt": _instant(meta["created_time"]),
        "lastModified": _instant(h.commit_timestamp()),
        "partitionColumns": snap.partition_columns,
        "clusteringColumns": snap.clustering_columns or [],
        "numFiles": len(sizes),
        "sizeInBytes": pc.sum(sizes).as_py() or 0,
        "properties": snap.properties,
        "minReaderVersion": protocol["min_reader_version"],
        "minWriterVersion": protocol["min_writer_version"],
        "tableFeatures": list(h.table_features),
    }


__all__ = ["FIELDS", "describe"]
