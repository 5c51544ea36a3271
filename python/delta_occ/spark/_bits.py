"""Which rows of which files an operation hits, summed up on the executors: per file the number of
hit rows and, where a deletion vector will carry them, their positions as Spark bitmaps
(``bitmap_construct_agg``: 4,096 bytes for each run of 32,768 positions holding a hit). What
reaches the driver is per file: a count, and at most one bit per row of the position ranges a hit
falls in; never a value per row. The core builds each file's DV straight from its bits (Spark's
bit layout: bit ``p`` of a bitmap is bit ``p % 8`` of byte ``p // 8``)."""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Mapping, Optional, Sequence, Set, Tuple

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame

from ..operations.protocols import Staging
from ..operations.removal import Removal, choose
from ._scan import FILE, ROW
from ._session import F

#: log2 of the positions one Spark bitmap covers (``bitmap_construct_agg`` makes 32,768 bits).
BUCKET_SHIFT = 15
_BUCKET = "__delta_occ_bucket"
_COUNT = "__delta_occ_count"
_BITS = "__delta_occ_bits"
_TOTAL = "__delta_occ_total_"
_TAGS = "__delta_occ_tags"


@dataclasses.dataclass
class FileHits:
    """The hit rows of one plan file: how many, and (when asked for) their positions as runs of
    bits: ``firsts[k]`` is the first position of the bitmap ``bits[k]``."""

    count: int
    firsts: List[int] = dataclasses.field(default_factory=list)
    #: Rows of ``bits`` (the collected bitmaps of every file) that belong to this file.
    runs: List[int] = dataclasses.field(default_factory=list)
    bits: Optional[pa.ChunkedArray] = None
    #: The distinct values of ``summarise``'s ``tag`` on the file's hit rows.
    tags: Set[int] = dataclasses.field(default_factory=set)

    def delete_from(self, txn: Staging, path: str) -> None:
        """Stage these hits as deletion-vector deletes of ``path``: the core builds the DV from
        the bits (no value per row)."""
        assert self.bits is not None, "summarise(..., with_positions=True) collects the bits"
        txn.delete_row_bits(path, pa.array(self.firsts, pa.int64()), self.bits.take(pa.array(self.runs, pa.int64())))


def hits_per_file(rows: DataFrame, with_positions: bool) -> Dict[int, FileHits]:
    """Per plan file (``FILE``) of ``rows`` (hit rows carrying ``FILE`` and ``ROW``), its hits.
    ``with_positions``: also the positions' bitmaps, one row per (file, run of 32,768 positions)
    with a hit; else one row per file."""
    return summarise(rows, with_positions)[0]


def summarise(
    rows: DataFrame, with_positions: bool, hit: Optional[Column] = None, totals: Optional[Mapping[str, Column]] = None,
    tag: Optional[Column] = None,
) -> Tuple[Dict[int, FileHits], Dict[str, int]]:
    """``hits_per_file`` of the rows where ``hit`` holds (all rows without it), and in the same
    Spark job the sums of the integer columns ``totals`` over all ``rows`` (files without a hit
    count there too) and, per file, the distinct values of the integer column ``tag`` on its hit
    rows (a few per file: MERGE's clause numbers)."""
    totals = dict(totals or {})
    hit_col = F.lit(True) if hit is None else F.coalesce(hit, F.lit(False))
    aggs = [F.sum(F.when(hit_col, 1).otherwise(0)).alias(_COUNT)] + [F.sum(c).alias(f"{_TOTAL}{k}") for k, c in enumerate(totals.values())]
    keys = [F.col(FILE)]
    if with_positions:
        keys.append(F.shiftright(F.col(ROW), BUCKET_SHIFT).alias(_BUCKET))
        offset = F.col(ROW).bitwiseAND(F.lit((1 << BUCKET_SHIFT) - 1))
        aggs.append(F.bitmap_construct_agg(F.when(hit_col, offset)).alias(_BITS))  # NULL: no bit
    if tag is not None:
        aggs.append(F.collect_set(F.when(hit_col, tag)).alias(_TAGS))  # NULL: not collected
    runs = rows.groupBy(*keys).agg(*aggs).toArrow()
    sums = {name: int(pc.sum(runs.column(f"{_TOTAL}{k}")).as_py() or 0) for k, name in enumerate(totals)}
    out: Dict[int, FileHits] = {}
    counts = runs.column(_COUNT).to_pylist()
    bitmaps = runs.column(_BITS) if with_positions else None
    buckets = runs.column(_BUCKET).to_pylist() if with_positions else None
    tags = runs.column(_TAGS).to_pylist() if tag is not None else None
    for k, f in enumerate(runs.column(FILE).to_pylist()):
        if not counts[k]:
            continue
        hits = out.setdefault(int(f), FileHits(0))
        hits.count += int(counts[k])
        if tags is not None:
            hits.tags.update(int(t) for t in tags[k])
        if bitmaps is not None and buckets is not None:
            hits.bits = bitmaps
            hits.firsts.append(int(buckets[k]) << BUCKET_SHIFT)
            hits.runs.append(k)
    return out, sums


def stage(txn: Staging, paths: Sequence[str], live: Sequence[int], hits: Dict[int, FileHits], dv_enabled: bool) -> Tuple[List[int], List[str]]:
    """Stage the removal of the hit rows of each plan file (``paths``, ``live`` rows each) as
    ``removal.choose`` says: a DV built from the file's bits, one file at a time, or the file
    removed. Returns the plan numbers of removed files whose other rows must be written again, and
    the paths touched."""
    rewrite: List[int] = []
    touched: List[str] = []
    for i in sorted(hits):
        how = choose(hits[i].count, live[i], dv_enabled)
        touched.append(paths[i])
        if how is Removal.DELETION_VECTOR:
            hits[i].delete_from(txn, paths[i])
            continue
        txn.remove_file(paths[i], data_change=True)
        if how is Removal.REWRITE:
            rewrite.append(i)
    return rewrite, touched


__all__ = ["BUCKET_SHIFT", "FileHits", "hits_per_file", "stage", "summarise"]
