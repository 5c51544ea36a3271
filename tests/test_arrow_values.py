"""Canonical partition strings and SQL literals from Arrow values, computed once in the core for
every engine (issue 15). Expected spellings: protocol-notes.md §10 (plain decimal numbers,
``yyyy-mm-dd`` dates, ``yyyy-mm-dd HH:MM:SS.ffffff`` timestamps, ``true``/``false``) and Spark's
``NaN``/``Infinity``; the literals must parse back to the same value (checked through
``Snapshot.to_pyarrow(where=)`` on a table holding exactly those values)."""

from __future__ import annotations

import datetime
import decimal

import pyarrow as pa
import pytest

import delta_occ as docc
from delta_occ import _core
from delta_occ.exceptions import DeltaOccError

UTC = datetime.timezone.utc

CASES = [
    (pa.array([1, -7, None], pa.int32()), ["1", "-7", None]),
    (pa.array([2**62], pa.int64()), [str(2**62)]),
    (pa.array([1.5, 1e16, float("nan"), float("inf"), float("-inf")]), ["1.5", "10000000000000000.0", "NaN", "Infinity", "-Infinity"]),
    (pa.array([0.1], pa.float32()), ["0.1"]),
    (pa.array([True, False]), ["true", "false"]),
    (pa.array([datetime.date(2024, 2, 29)]), ["2024-02-29"]),
    (pa.array([datetime.datetime(2024, 1, 1, 5, 0, 0, 35, tzinfo=UTC)], pa.timestamp("us", tz="UTC")), ["2024-01-01 05:00:00.000035"]),
    # an instant in New York is recorded in UTC
    (pa.array([datetime.datetime(2024, 1, 1, 0, 0, tzinfo=UTC)], pa.timestamp("us", tz="America/New_York")), ["2024-01-01 00:00:00.000000"]),
    (pa.array([datetime.datetime(2024, 1, 1, 0, 0)], pa.timestamp("ns")), ["2024-01-01 00:00:00.000000"]),
    (pa.array([decimal.Decimal("-0.05"), decimal.Decimal("1.50")], pa.decimal128(5, 2)), ["-0.05", "1.50"]),
    # An empty string is recorded as null: delta-spark writes '' partitions as null, and reads a
    # recorded "" back as '' where the protocol and deltalake read null (tests/test_interop_deltaspark.py).
    (pa.array(["a b", "é ü", "", None]), ["a b", "é ü", None, None]),
    (pa.array([b"ab"], pa.binary()), ["ab"]),
]


@pytest.mark.parametrize("values, expected", CASES, ids=[str(v.type) for v, _ in CASES])
def test_partition_strings(values, expected):
    assert _core.partition_strings(values.__arrow_c_array__()) == expected


def test_unsupported_type_is_a_typed_error():
    with pytest.raises(DeltaOccError, match="Arrow type List.*cannot be partition values"):
        _core.partition_strings(pa.array([[1]]).__arrow_c_array__())


@pytest.mark.parametrize(
    "values",
    [
        pa.array([3, -1, 7], pa.int64()),
        pa.array([1.5, -0.25, float("nan"), float("inf")]),
        pa.array(["o'k", "a b", "x"]),
        pa.array([datetime.date(2024, 1, 1), datetime.date(1999, 12, 31)]),
        pa.array([datetime.datetime(2024, 1, 1, 5, 0, 0, 35, tzinfo=UTC), datetime.datetime(2020, 1, 1, tzinfo=UTC)], pa.timestamp("us", tz="UTC")),
        pa.array([decimal.Decimal("1.50"), decimal.Decimal("-3.25")], pa.decimal128(5, 2)),
        pa.array([True, False]),
    ],
    ids=lambda v: str(v.type),
)
def test_sql_literals_select_the_same_value(tmp_path, values):
    t = docc.Table.create(tmp_path / "t", pa.schema([("i", pa.int64()), ("v", values.type)]))
    t.append(pa.table({"i": pa.array(range(len(values)), pa.int64()), "v": values}))
    snap = t.snapshot()
    for i, lit in enumerate(_core.sql_literals(values.__arrow_c_array__())):
        got = snap.to_pyarrow(where=f"v = {lit}").column("i").to_pylist()
        assert got == [i], (lit, got)


@pytest.mark.parametrize(
    "keys, target_only, expected",
    [
        ([("id", "values", pa.array([3, 1, None, 2], pa.int64()))], [], "`id` IN (1, 2, 3)"),
        ([("id", "values", pa.array([None], pa.int64()))], ["x > 1"], "FALSE"),
        ([("id", "range", pa.array([1, 9], pa.int64()))], ["x > 1"], "(x > 1) AND `id` BETWEEN 1 AND 9"),
        ([("p", "values", pa.array(["b", "a"])), ("x", "values", pa.array([float("nan"), 2.0]))], [], "`p` IN ('a', 'b') AND `x` IN (2.0, 'NaN')"),
        ([], [], None),
    ],
)
def test_merge_read_predicate(keys, target_only, expected):
    got = _core.merge_read_predicate([(c, kind, arr.__arrow_c_array__()) for c, kind, arr in keys], target_only)
    assert got == expected


def test_merge_read_predicate_refuses_a_bad_summary():
    with pytest.raises(ValueError, match="values' or 'range'"):
        _core.merge_read_predicate([("id", "some", pa.array([1]).__arrow_c_array__())], [])
    with pytest.raises(DeltaOccError, match="two non-null values"):
        _core.merge_read_predicate([("id", "range", pa.array([1]).__arrow_c_array__())], [])
