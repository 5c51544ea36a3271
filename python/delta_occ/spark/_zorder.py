"""The core's Z-order curve (``rust/core/src/zorder.rs``) computed by Spark's executors, so that
OPTIMIZE ZORDER BY on Spark brings no row to the driver and writes the files the embedded engine
writes. Per bin: each column's dense rank (NULL first), scaled onto ``0 .. 2^bits`` exactly
(integer arithmetic in two 16-bit steps, no floating point), the ranks' bits interleaved most
significant first into a key of ``bits * columns`` bits, held as up to three 62-bit longs that
sort as the key does. Ties keep the input order (file in the bin, then row position), as the
core's stable sort does.

Known difference: Spark orders -0.0 equal to 0.0, the core's Arrow order puts it first; a float
column holding both may put rows in a different (equally valid) order."""

from __future__ import annotations

from typing import List, Sequence

from pyspark.sql import Column, DataFrame

from ._columns import col
from ._session import F, window

#: As the core's KEY_BITS.
KEY_BITS = 128
_CHUNK = 62
KEYS = ["__delta_occ_key0", "__delta_occ_key1", "__delta_occ_key2"]


def integer_div(a: Column, m: Column) -> Column:
    """a div m for non-negative longs, exactly: (a - a mod m) / m is an integer below 2^53."""
    return ((a - F.pmod(a, m)) / m).cast("long")


def _scaled(d: Column, m: Column, bits: int) -> Column:
    """floor(d * 2^bits / m) for 0 <= d < m <= 2^32, bits <= 32, without overflow: two steps of at
    most 16 bits, floor(x * 2^b2 / m) of the first step's remainder added to its quotient."""
    b1 = min(bits, 16)
    b2 = bits - b1
    a = F.shiftleft(d, b1)
    q1, r1 = integer_div(a, m), F.pmod(a, m)
    if not b2:
        return q1
    return F.shiftleft(q1, b2) + integer_div(F.shiftleft(r1, b2), m)


def with_curve_keys(rows: DataFrame, columns: Sequence[str], bin_column: str) -> DataFrame:
    """``rows`` with ``KEYS`` (as many as the key needs): sorting a bin by them (then by input
    order) is the core's Z-order of ``columns``."""
    w = window()
    bits = max(1, min(32, KEY_BITS // len(columns)))
    ranks: List[str] = []
    for i, c in enumerate(columns):
        dense, rank = f"__delta_occ_dense{i}", f"__delta_occ_rank{i}"
        rows = rows.withColumn(dense, (F.dense_rank().over(w.partitionBy(F.col(bin_column)).orderBy(col(c).asc_nulls_first())) - 1).cast("long"))
        distinct = F.max(F.col(dense)).over(w.partitionBy(F.col(bin_column))) + 1
        rows = rows.withColumn(rank, _scaled(F.col(dense), distinct, bits)).drop(dense)
        ranks.append(rank)
    # The key's bits from the top: for b = bits-1 .. 0, each column's bit b in turn.
    sequence = [(r, b) for b in range(bits - 1, -1, -1) for r in ranks]
    keys = []
    for k, start in enumerate(range(0, len(sequence), _CHUNK)):
        chunk = sequence[start:start + _CHUNK]
        value: Column = F.lit(0).cast("long")
        for j, (r, b) in enumerate(chunk):
            bit = F.shiftright(F.col(r), b).bitwiseAND(F.lit(1).cast("long"))
            value = value.bitwiseOR(F.shiftleft(bit, len(chunk) - 1 - j))
        rows = rows.withColumn(KEYS[k], value)
        keys.append(KEYS[k])
    return rows.drop(*ranks)


__all__ = ["KEYS", "KEY_BITS", "integer_div", "with_curve_keys"]
