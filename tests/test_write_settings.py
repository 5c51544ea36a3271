"""How the embedded engine lays out the parquet files it writes (settings chosen for speed; the
readers' side is covered by the interop and differential tests)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from delta_occ import _core
from delta_occ._write import _write_parquet, dictionary_columns


def _dictionary_encoded(path: str) -> dict:
    md = pq.ParquetFile(path).metadata
    return {md.row_group(0).column(i).path_in_schema: md.row_group(0).column(i).has_dictionary_page for i in range(md.num_columns)}


def test_only_columns_with_repeated_values_get_a_dictionary(tmp_path):
    n = 10_000
    table = pa.table({
        "unique": pa.array(range(n), pa.int64()),
        "few": pa.array([f"c{i % 7}" for i in range(n)]),
        "mostly-null": pa.array([None] * (n - 1) + [1.5], pa.float64()),
        "unique-text": pa.array([f"row-{i}" for i in range(n)]),
    })
    assert dictionary_columns(table) == ["few", "mostly-null"]
    _write_parquet(_core.StorageHandle(str(tmp_path)), "f.parquet", table)
    assert _dictionary_encoded(str(tmp_path / "f.parquet")) == {"unique": False, "few": True, "mostly-null": True, "unique-text": False}
    assert pq.read_table(tmp_path / "f.parquet").equals(table)


def test_nested_columns_and_all_repeating_tables_keep_pyarrow_default():
    assert dictionary_columns(pa.table({"s": pa.array([{"a": 1}, {"a": 2}]), "k": [1, 2]})) is True
    assert dictionary_columns(pa.table({"k": [1, 1, 1, 2]})) is True
    assert dictionary_columns(pa.table({"k": pa.array([], pa.int64())})) is True


def test_each_keeps_order_starts_nothing_after_an_error_and_raises_the_earliest():
    import threading
    import time

    import pytest

    from delta_occ.workers import each

    assert each(list(range(50)), lambda x: x * x) == [x * x for x in range(50)]
    threads = set()

    def slow(x):
        threads.add(threading.get_ident())
        time.sleep(0.002)
        return x

    assert each(list(range(20)), slow) == list(range(20)) and len(threads) > 1  # the caller works too
    started = []

    def failing(x):
        started.append(x)
        if x == 0:
            time.sleep(0.05)
            raise KeyError(x)
        if x == 1:
            raise ValueError(x)
        time.sleep(0.01)
        return x

    with pytest.raises(KeyError):  # item 0 failed after item 1, but comes first
        each(list(range(100)), failing)
    assert len(started) < 100
