"""convert_to_delta (issue 44, item 3 and must-show 4): a parquet directory adopted in place.

Oracles: pyarrow's dataset of the directory (hive partitioning) for the rows; delta-kernel-rs
(on S3: a byte-for-byte local copy of the bucket's files) for the Delta reading of them; the parquet footers (pyarrow) for the statistics; PySpark's parquet reader for a
directory Spark wrote."""

from __future__ import annotations

import datetime as dt
import json
import pathlib

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import delta_occ as docc
from delta_occ import _core
from delta_occ import exceptions as exc

from helpers import kernel_rows

# Partition values that need care: a space and a slash (percent-escaped in the directory names),
# a null (Hive's __HIVE_DEFAULT_PARTITION__), integers.
ROWS = pa.table({
    "id": list(range(60)),
    "v": [None if i % 7 == 0 else f"s{i}" for i in range(60)],
    "ts": [dt.datetime(2024, 1, 1) + dt.timedelta(hours=i) for i in range(60)],
    "p": [i % 3 for i in range(60)],
    "q": [None if i % 5 == 0 else ("a b" if i % 2 else "x/y") for i in range(60)],
})


def _write_directory(root: pathlib.Path) -> None:
    ds.write_dataset(ROWS, root, format="parquet", partitioning=["p", "q"], partitioning_flavor="hive",
                     max_rows_per_file=7, max_rows_per_group=7)
    (root / "_SUCCESS").write_bytes(b"")
    (root / ".part-0.parquet.crc").write_bytes(b"not parquet: hidden, never listed")


def _upload(local: pathlib.Path, location: str, options) -> None:
    storage = _core.StorageHandle(location, options)
    for f in local.rglob("*"):
        if f.is_file():
            storage.write(f.relative_to(local).as_posix(), f.read_bytes())


def _by_id(table: pa.Table, columns) -> list:
    return sorted(table.select(columns).to_pylist(), key=lambda r: r["id"])


def test_convert_a_partitioned_directory(where, tmp_path):
    """Must-show 4: local disk and S3; delta-kernel-rs reads what pyarrow's dataset reads."""
    local = tmp_path / "dir"
    _write_directory(local)
    location = where("t")
    if where.kind != "local":
        _upload(local, location, where.options)
    else:
        location = str(local)
    t = docc.convert_to_delta(location, partition_by=["p", "q"], storage_options=where.options)
    assert t.version == 0
    expected = ds.dataset(local, format="parquet", partitioning="hive").to_table()
    columns = ["id", "v", "ts", "p", "q"]
    assert t.snapshot().schema.names == columns
    # pyarrow's hive discovery: p int32, q string; the same types are inferred for the table.
    assert t.snapshot().schema.field("p").type == pa.int32()
    ours = t.snapshot().to_pyarrow()
    assert _by_id(ours, columns) == _by_id(expected, columns)
    assert _by_id(kernel_rows(t), columns) == _by_id(expected, columns)
    # The statistics are the footers' (pyarrow reads them): rows per file, and the filter on
    # a data column reads only what a min/max allows.
    files = t.snapshot().files()
    assert len(files) == len(list(local.rglob("*.parquet")))
    for f in files.to_pylist():
        stats = json.loads(f["stats"])
        assert stats["numRecords"] == pq.ParquetFile(local / _rel_on_disk(f["path"])).metadata.num_rows
    assert _by_id(t.snapshot().to_pyarrow(where="q = 'a b' AND id < 20"), ["id"]) == [
        {"id": i} for i in range(20) if i % 5 and i % 2
    ]
    # The table keeps taking writes.
    t.append(pa.table({"id": [100], "v": ["new"], "ts": [dt.datetime(2025, 1, 1)], "p": pa.array([9], pa.int32()), "q": ["z"]}))
    t.delete("q IS NULL")
    assert t.snapshot().to_pyarrow().num_rows == 60 - 12 + 1  # 12 ids are multiples of 5 below 60


def _rel_on_disk(log_path: str) -> str:
    import urllib.parse

    return urllib.parse.unquote(log_path)


def test_explicit_partition_types(tmp_path):
    local = tmp_path / "dir"
    _write_directory(local)
    t = docc.convert_to_delta(local, partition_by=pa.schema([("p", pa.int64()), ("q", pa.string())]))
    assert t.snapshot().schema.field("p").type == pa.int64()
    assert sorted(set(t.snapshot().to_pyarrow().column("p").to_pylist())) == [0, 1, 2]


def _parquet(path: pathlib.Path, table: pa.Table) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)


@pytest.mark.parametrize("layout, partition_by, error, match", [
    ({"p=1/a.parquet": pa.table({"id": [1]})}, None, exc.InvalidArgumentError, r"pass partition_by=\[\"p\"\]"),
    ({"a.parquet": pa.table({"id": [1]})}, ["p"], exc.InvalidArgumentError, "not under the partition directories p=<value>"),
    ({"a.parquet": pa.table({"id": [1]}), "b.parquet": pa.table({"id": ["x"]})}, None, exc.InvalidArgumentError,
     "column \"id\" is \"long\" in .* but \"string\""),
    ({"p=1/a.parquet": pa.table({"id": [1], "p": [1]})}, ["p"], exc.InvalidArgumentError, "holds partition column \"p\" as data"),
    ({"notes.txt": None}, None, exc.InvalidArgumentError, "not a readable parquet footer"),
    ({"_SUCCESS": None}, None, exc.InvalidArgumentError, "holds no data files"),
])
def test_convert_refuses_what_it_cannot_adopt_faithfully(tmp_path, layout, partition_by, error, match):
    root = tmp_path / "dir"
    root.mkdir()
    for rel, table in layout.items():
        if table is None:
            (root / rel).write_text("hello")
        else:
            _parquet(root / rel, table)
    with pytest.raises(error, match=match):
        docc.convert_to_delta(root, partition_by=partition_by)
    assert not (root / "_delta_log").exists() or not any((root / "_delta_log").iterdir())


def test_convert_refuses_an_existing_table_and_files_missing_columns_read_null(tmp_path):
    root = tmp_path / "dir"
    _parquet(root / "a.parquet", pa.table({"id": [1], "x": ["a"]}))
    _parquet(root / "b.parquet", pa.table({"id": [2], "y": [2.5]}))
    t = docc.convert_to_delta(root)
    assert _by_id(t.snapshot().to_pyarrow(), ["id", "x", "y"]) == [
        {"id": 1, "x": "a", "y": None}, {"id": 2, "x": None, "y": 2.5}
    ]
    with pytest.raises(exc.TableAlreadyExistsError, match="Delta table at version 0"):
        docc.convert_to_delta(root)
    # deltalake reads the converted table too (no DVs, no features).
    deltalake = pytest.importorskip("deltalake")
    assert _by_id(deltalake.DeltaTable(str(root)).to_pyarrow_table(), ["id", "x", "y"]) == _by_id(t.snapshot().to_pyarrow(), ["id", "x", "y"])


def test_convert_a_directory_spark_wrote(spark, tmp_path):
    """Spark's own parquet (INT96 timestamps, its _SUCCESS and .crc files): the converted table
    reads what spark.read.parquet reads."""
    spark_mod = pytest.importorskip("delta_occ.spark", reason="pyspark is not installed")
    root = tmp_path / "sparkdir"
    df = spark.createDataFrame(ROWS.drop_columns(["q"]).to_pandas())
    df.write.partitionBy("p").parquet(str(root))
    expected = sorted(tuple(r) for r in spark.read.parquet(str(root)).select("id", "v", "ts", "p").collect())
    t = docc.convert_to_delta(root, partition_by=["p"])
    assert t.snapshot().schema.field("ts").type == pa.timestamp("us", tz="UTC")
    st = spark_mod.SparkTable(spark, root)
    assert sorted(tuple(r) for r in st.to_df().select("id", "v", "ts", "p").collect()) == expected


def test_convert_with_column_mapping_reads_the_files_by_their_names(tmp_path):
    """The physical names are the names the files hold (a fresh col-<uuid> would read NULLs); the
    statistics stay keyed by them. delta-kernel-rs reads the values written."""
    root = tmp_path / "dir"
    _parquet(root / "p=1/a.parquet", pa.table({"id": [1, 2], "v": ["x", "y"]}))
    t = docc.convert_to_delta(root, partition_by=["p"], properties={"delta.columnMapping.mode": "name"})
    want = [{"id": 1, "v": "x", "p": 1}, {"id": 2, "v": "y", "p": 1}]
    assert _by_id(t.snapshot().to_pyarrow(), ["id", "v", "p"]) == want
    assert _by_id(kernel_rows(t), ["id", "v", "p"]) == want
    assert _by_id(t.snapshot().to_pyarrow(where="id > 1"), ["id"]) == [{"id": 2}]
    t.rename_column("v", "w")
    assert _by_id(t.snapshot().to_pyarrow(), ["id", "w"]) == [{"id": 1, "w": "x"}, {"id": 2, "w": "y"}]


def test_convert_adopts_no_rule_from_the_files_schema(tmp_path):
    """A generation expression in a file's field metadata was never checked on its rows: the
    converted column is a plain one (its value 100 stays, and a new row's value is the given one)."""
    root = tmp_path / "dir"
    field = pa.field("g", pa.int64(), metadata={"delta.generationExpression": "a + 1", "comment": "kept"})
    _parquet(root / "a.parquet", pa.table({"a": [5], "g": [100]}, schema=pa.schema([("a", pa.int64()), field])))
    t = docc.convert_to_delta(root)
    commit = (root / "_delta_log" / f"{0:020d}.json").read_text().splitlines()
    schema = json.loads(next(json.loads(line)["metaData"]["schemaString"] for line in commit if '"metaData"' in line))
    assert schema["fields"][1]["metadata"] == {"comment": "kept"}
    t.append(pa.table({"a": [6], "g": [7]}))
    assert sorted(t.snapshot().to_pyarrow().column("g").to_pylist()) == [7, 100]
