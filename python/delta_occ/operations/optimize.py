"""OPTIMIZE: bin-packing compaction (dataChange=false). Per partition, small files (and files with
deletion vectors) are rewritten into files of about the target size; each output records its
inputs in order (``add.tags``), so concurrent DML on DV tables is remapped instead of conflicting
(concurrency.md §4 rule 5)."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Protocol, Sequence, Tuple

import pyarrow as pa

from .. import _arrow, _core
from .._args import int_arg
from ..exceptions import InvalidArgumentError
from ..instant import Now
from . import commit_info
from .protocols import Engine, Staging

#: Compaction provenance tag (see concurrency.md §4 rule 5).
PROVENANCE_TAG = "delta-occ.compactedFrom"
DEFAULT_TARGET_FILE_SIZE = 128 * 1024 * 1024

#: One input file of a bin: ``path``, ``partition_values``, ``size``, ``deletion_vector``,
#: ``dv_cardinality`` (as ``Snapshot.files()`` gives them).
BinFile = Dict[str, Any]


class Compacted(NamedTuple):
    rows: int
    #: Files written per bin, in bin order.
    files_per_bin: List[int]


class Compactor(Engine, Protocol):
    def zorder(self, bins: List[List[BinFile]], columns: Sequence[str], rows_per_file: Sequence[int]) -> Compacted:
        """Write each bin's live rows in the Z-order of ``columns`` (the core's curve), as files
        of about ``rows_per_file[i]`` rows, untagged (their rows come from many inputs)."""
        ...

    def compact(self, bins: List[List[BinFile]]) -> Compacted:
        """Write each bin's live rows as one file, in input order, tagged ``PROVENANCE_TAG``
        with ``provenance_tag``."""
        ...

    def remove_files(self, paths: Sequence[str]) -> None:
        """Stage the removal of the compacted inputs (dataChange=false)."""
        ...


def optimize(engine: Compactor, target_file_size: Optional[int] = None, where: Optional[str] = None, *, full: bool = False) -> int:
    """Returns the number of bins staged (0: nothing to compact, and no commit). ``full``: on a
    clustered table, recluster every file, not only those not clustered yet."""
    clustering = engine.txn.snapshot.clustering_columns
    if clustering:
        # OPTIMIZE of a clustered table clusters: the Z-order of its clustering columns.
        return zorder(engine, clustering, target_file_size, where, clustered=True, full=full)
    where = Now().text(where)
    target = target_size(engine.txn.snapshot.properties, target_file_size)
    bins = compaction_bins(engine.txn, where, target)
    compacted = engine.compact(bins) if bins else Compacted(0, [])
    check_one_file_per_bin(compacted.files_per_bin)
    engine.remove_files([f["path"] for b in bins for f in b])
    engine.record(commit_info.optimize(where, target, bins, compacted.rows))
    return len(bins)


def zorder(
    engine: Compactor, columns: Sequence[str], target_file_size: Optional[int] = None, where: Optional[str] = None, *, clustered: bool = False,
    full: bool = False,
) -> int:
    """OPTIMIZE ... ZORDER BY: per partition (of those ``where`` selects), every live file is
    rewritten, the rows in the Z-order of ``columns``, into files of about the target size
    (dataChange=false). Returns the number of partitions rewritten (0: nothing, no commit). A
    partition of a single file without a deletion vector is left as it is. ``clustered``: the
    OPTIMIZE of a clustered table (its files get ``clusteringProvider``; ZORDER BY is refused
    there, as delta-spark does). Clustering is incremental, as Delta's liquid clustering is: files
    an earlier clustering wrote (``clusteringProvider`` set) stay unless they have a deletion
    vector or ``full`` asks for all; a partition left with one such file without a DV stays as
    it is. So an OPTIMIZE after appends reads and rewrites the new files, not the table."""
    where = Now().text(where)
    snap = engine.txn.snapshot
    if not clustered and snap.clustering_columns:
        raise InvalidArgumentError(f"zorder_by: the table is clustered by {snap.clustering_columns}; OPTIMIZE (without zorder_by) clusters it")
    target = target_size(snap.properties, target_file_size)
    cols = zorder_columns(snap, columns)
    if clustered:
        engine.txn.mark_clustered()
    # One bin per partition: a target no partition reaches.
    keep = None if not clustered or full else _not_yet_clustered
    bins = compaction_bins(engine.txn, where, 1 << 62, keep)
    per_file = [rows_per_file(b, target) for b in bins]
    compacted = engine.zorder(bins, cols, per_file) if bins else Compacted(0, [])
    engine.remove_files([f["path"] for b in bins for f in b])
    if clustered:
        engine.record(commit_info.optimize(where, target, bins, compacted.rows, cluster_by=cols))
    else:
        engine.record(commit_info.optimize(where, target, bins, compacted.rows, zorder_by=cols))
    return len(bins)


def zorder_order(rows: pa.Table, columns: Sequence[str]) -> pa.Array:
    """Row indices of ``rows`` in the core's Z-order of ``columns`` (both engines order by it)."""
    return _arrow.array(_core.zorder_permutation(rows.select(list(columns)).combine_chunks().to_batches()[0]))


def zorder_columns(snap: Any, columns: Any) -> List[str]:
    """The Z-order columns as the schema names them: data columns, each once (a partition
    column is refused, as delta-spark does: files never mix partitions)."""
    if isinstance(columns, str) or not isinstance(columns, Sequence) or not columns or not all(isinstance(c, str) for c in columns):
        raise InvalidArgumentError(f"zorder_by must be a non-empty list of column names, got {columns!r}")
    names = {n.lower(): n for n in snap.schema.names}
    out: List[str] = []
    for c in columns:
        name = names.get(c.lower())
        if name is None:
            raise InvalidArgumentError(f"zorder_by: no column {c!r} in the table (columns: {snap.schema.names})")
        if name in snap.partition_columns:
            raise InvalidArgumentError(f"zorder_by: {name!r} is a partition column; Z-order the data columns")
        if name in out:
            raise InvalidArgumentError(f"zorder_by: {name!r} given twice")
        typ = snap.schema.field(name).type
        if pa.types.is_nested(typ):
            # delta-spark too: no statistics are kept for such columns, and their values have no order.
            raise InvalidArgumentError(f"zorder_by: {name!r} is a {typ} column; Z-order needs columns of primitive values")
        out.append(name)
    return out


def rows_per_file(files: Sequence[BinFile], target: int) -> int:
    """Rows per output file so that files come out near ``target`` bytes, estimated from the
    inputs' size per live row."""
    rows = sum(int(f.get("num_records") or 0) - int(f.get("dv_cardinality") or 0) for f in files)
    size = sum(int(f["size"]) for f in files)
    if rows <= 0 or size <= 0:
        return 1 << 40
    return max(1, int(target * rows / size))


def purge(engine: Compactor) -> int:
    """REORG TABLE ... APPLY (PURGE): every live file with a deletion vector rewritten alone
    without its deleted rows (dataChange=false, provenance-tagged like any compaction). Returns
    the number of files rewritten (0: none had a deletion vector, and no commit)."""
    bins = purge_bins(engine.txn)
    compacted = engine.compact(bins) if bins else Compacted(0, [])
    check_one_file_per_bin(compacted.files_per_bin)
    engine.remove_files([f["path"] for b in bins for f in b])
    engine.record(commit_info.purge(bins, compacted.rows))
    return len(bins)


def purge_bins(txn: Staging) -> List[List[BinFile]]:
    """One bin per live file with a deletion vector descriptor, an empty one (cardinality 0)
    included: DROP FEATURE counts every descriptor as a trace."""
    snap = txn.snapshot
    files = snap.files(["path", "partition_values", "size", "num_records", "deletion_vector", "dv_cardinality"])
    with_dv = [i for i, d in enumerate(files.column("deletion_vector").to_pylist()) if d]
    bins = [[r] for r in files.take(pa.array(with_dv, pa.int64())).to_pylist()]
    txn.record_files_read([f["path"] for b in bins for f in b])
    return bins


def target_size(properties: Mapping[str, str], target_file_size: Optional[int]) -> int:
    if target_file_size is None:
        return int(properties.get("delta.targetFileSize", DEFAULT_TARGET_FILE_SIZE))
    return int_arg("target_file_size (bytes)", target_file_size, 1)


def _not_yet_clustered(f: BinFile) -> bool:
    """A file an incremental clustering rewrites: not clustered yet, or with deleted rows."""
    return f["clustering_provider"] is None or (f["dv_cardinality"] or 0) > 0


def compaction_bins(txn: Staging, where: Optional[str], target: int, keep: Optional[Any] = None) -> List[List[BinFile]]:
    """OPTIMIZE's bins among the live files ``where`` selects (with ``keep``, only the files it
    keeps; a bin left with one file without a DV is dropped). Only the inputs it compacts are
    recorded as read (§4 rule 5; §8 scenario 15): files it looked at and left alone, or an
    OPTIMIZE that found nothing to do, must not make it conflict."""
    snap = txn.snapshot
    selected = None
    if where is not None:
        if not isinstance(where, str):
            raise InvalidArgumentError(f"where must be SQL text, got {type(where).__name__}")
        selected, _ = snap.handle.prune(where)
    # The core packs the bins (no stats needed); only the files in them come to Python.
    by_bin = snap.handle.compaction_bins(selected, target)
    chosen = [i for b in by_bin for i in b]
    files = snap.files(["path", "partition_values", "size", "num_records", "deletion_vector", "dv_cardinality", "clustering_provider"])
    rows = iter(files.take(pa.array(chosen, pa.int64())).to_pylist())
    bins = [[next(rows) for _ in b] for b in by_bin]
    if keep is not None:
        bins = [b for b in ([f for f in b if keep(f)] for b in bins) if len(b) > 1 or (b and (b[0]["dv_cardinality"] or 0) > 0)]
    txn.record_files_read([f["path"] for b in bins for f in b])
    return bins


def provenance_tag(inputs: Sequence[Tuple[BinFile, int]]) -> str:
    """The compaction provenance (concurrency.md §4 rule 5): per input in output order its path,
    the live rows written from it, and the DV it was read with (Delta's descriptor, or null), so
    that a later transaction can map rows exactly even after the input's DV has grown."""
    out = []
    for f, rows in inputs:
        d = f.get("deletion_vector")
        dv = None if not d else {
            "storageType": d["storage_type"],
            "pathOrInlineDv": d["path_or_inline_dv"],
            "offset": d["offset"],
            "sizeInBytes": d["size_in_bytes"],
            "cardinality": d["cardinality"],
        }
        out.append([f["path"], rows, dv])
    return json.dumps(out)


def check_one_file_per_bin(files_per_bin: Sequence[int]) -> None:
    """A bin's provenance tag names all its inputs: a bin written as several files (a bin across
    partitions, an engine splitting its output) would tag wrong rows. Bins with no live row write
    nothing. A typed error, not an assert: ``python -O`` must not let a wrong tag through."""
    split = {i: n for i, n in enumerate(files_per_bin) if n > 1}
    if split:
        raise InvalidArgumentError(f"OPTIMIZE: bin(s) written as several files, not one file each ({split}); provenance would be wrong")


__all__ = [
    "PROVENANCE_TAG", "DEFAULT_TARGET_FILE_SIZE", "Compacted", "Compactor", "optimize", "target_size", "compaction_bins",
    "zorder", "zorder_order", "zorder_columns", "rows_per_file", "purge", "purge_bins", "provenance_tag", "check_one_file_per_bin",
]
