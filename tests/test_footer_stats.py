"""Delta stats from a parquet footer (the core's `parquet_footer_stats`, used for files Spark
writes) against the embedded writer's stats computed from the rows (`_write.stats_json`): two
independent implementations of the same rules must agree on files without NaN (pyarrow leaves NaN
out of footers; the NaN rule for parquet-mr footers is tested with Spark in test_spark_engine)."""

from __future__ import annotations

import datetime
import decimal
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_occ import _core
from delta_occ._write import _write_parquet, file_stats, stats_json

T0 = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
COLUMNS = [
    ("long", pa.array([5, None, -3, 2**40], pa.int64())),
    ("int", pa.array([1, 2, None, -7], pa.int32())),
    ("short", pa.array([1, -2, 3, 4], pa.int16())),
    ("double", pa.array([1.5, float("inf"), -2.0, None], pa.float64())),
    ("neg-inf", pa.array([float("-inf"), 3.0, 1.0, 2.0], pa.float64())),
    ("float", pa.array([0.5, -1.25, None, 8.0], pa.float32())),
    ("string", pa.array(["b", "é", None, "a"], pa.string())),
    ("long-max", pa.array(["a", "z" * 40, "m", None], pa.string())),
    ("long-min", pa.array(["y" * 40, "z", "zz", "zzz"], pa.string())),
    ("date", pa.array([datetime.date(2024, 1, 1), datetime.date(1969, 12, 31), None, datetime.date(2000, 2, 29)], pa.date32())),
    ("ts", pa.array([T0, T0 + datetime.timedelta(microseconds=1999), None, T0 - datetime.timedelta(microseconds=1)], pa.timestamp("us", tz="UTC"))),
    ("ts-ntz", pa.array([datetime.datetime(2024, 5, 5, 1, 2, 3, 456789), None, datetime.datetime(1900, 1, 1), datetime.datetime(2024, 5, 5)], pa.timestamp("us"))),
    ("bool", pa.array([True, False, None, True], pa.bool_())),
    ("binary", pa.array([b"a", b"b", None, b"c"], pa.binary())),
    ("decimal", pa.array([decimal.Decimal("1.50"), None, decimal.Decimal("-2.25"), decimal.Decimal("0.00")], pa.decimal128(10, 2))),
    ("all-null", pa.array([None, None, None, None], pa.int64())),
]


@pytest.mark.parametrize("row_group_size", [1, 3, 100])
@pytest.mark.parametrize("name,array", COLUMNS, ids=[c[0] for c in COLUMNS])
def test_footer_stats_equal_row_stats(tmp_path, name, array, row_group_size):
    table = pa.table({"c": array, "k": pa.array(range(len(array)), pa.int64())})
    path = tmp_path / "f.parquet"
    pq.write_table(table, path, row_group_size=row_group_size)
    text, rows = _core.parquet_footer_stats(str(path))
    assert rows == table.num_rows
    assert json.loads(text) == json.loads(stats_json(table))


def test_nested_columns_are_left_out(tmp_path):
    table = pa.table({"s": pa.array([{"a": 1}, None]), "l": pa.array([[1], [2, 3]]), "k": [1, 2]})
    pq.write_table(table, tmp_path / "f.parquet")
    stats = json.loads(_core.parquet_footer_stats(str(tmp_path / "f.parquet"))[0])
    assert set(stats["nullCount"]) == {"k"} and stats["minValues"] == {"k": 1}


def test_not_a_parquet_file_is_a_typed_error(tmp_path):
    (tmp_path / "x.parquet").write_bytes(b"nope")
    with pytest.raises(Exception) as info:
        _core.parquet_footer_stats(str(tmp_path / "x.parquet"))
    assert "not a readable parquet footer" in str(info.value) and "x.parquet" in str(info.value)


EXTRA = [
    ("nan", pa.array([1.0, float("nan"), None, -2.0], pa.float64())),
    ("all-nan", pa.array([float("nan"), float("nan")], pa.float32())),
    ("nan-inf", pa.array([float("inf"), float("nan"), 3.0], pa.float64())),
    ("both-inf", pa.array([float("inf"), float("-inf"), None], pa.float64())),
    ("zeros", pa.array([0.0, -0.0, 1.0], pa.float64())),
    ("huge-string", pa.array(["b" * 5000, "a", None], pa.string())),
    ("huge-min", pa.array(["a" * 5000, "b"], pa.string())),
]


@pytest.mark.parametrize("name,array", COLUMNS + EXTRA, ids=[c[0] for c in COLUMNS + EXTRA])
def test_written_file_stats_equal_row_stats(tmp_path, name, array):
    """The engine's stats of a file it wrote (`file_stats`: the footer, corrected for what only
    the rows tell) are `stats_json`'s, NaN and values above pyarrow's 4 KiB statistics limit
    included."""
    table = pa.table({"c": array, "k": pa.array(range(len(array)), pa.int64())})
    written = _write_parquet(_core.StorageHandle(str(tmp_path)), "f.parquet", table)
    assert (tmp_path / "f.parquet").read_bytes() == written
    assert json.loads(file_stats(table, written)) == json.loads(stats_json(table))
