"""One column resolver (issue 17): the reader, DML and the row-level conflict checker find a
table column in a data file the same way (parquet field id in id mapping mode, the physical
name, then the name in any letter case). Files here are written by hand with pyarrow so that
the column's name in the file differs from the table's: upper case, or a foreign name that only
the field id ties to the column. The expected rows follow from the data written; the expected
conflict is §4 rule 2 (the winner deleted a row the loser's read predicate matches)."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import delta_occ as docc
from delta_occ import _core
from delta_occ import exceptions as ex

DV = {"delta.enableDeletionVectors": "true"}
SCHEMA = pa.schema([("id", pa.int64()), ("x", pa.int64())])


def _file_field(name: str, field: dict, how: str) -> pa.Field:
    if how == "field id":
        fid = field["metadata"]["delta.columnMapping.id"]
        return pa.field(f"renamed_{fid}", pa.int64(), metadata={b"PARQUET:field_id": str(fid).encode()})
    physical = field.get("metadata", {}).get("delta.columnMapping.physicalName", name)
    return pa.field(physical.upper() if how == "upper case" else physical, pa.int64())


def table_with_foreign_file(tmp_path, how: str) -> docc.Table:
    props = dict(DV)
    if how == "field id":
        props["delta.columnMapping.mode"] = "id"
    t = docc.Table.create(str(tmp_path / "t"), SCHEMA, properties=props)
    fields = {f["name"]: f for f in json.loads(t.snapshot().handle.schema_json)["fields"]}
    schema = pa.schema([_file_field(n, fields[n], how) for n in ("id", "x")])
    data = pa.table([pa.array(range(10), pa.int64()), pa.array(range(100, 110), pa.int64())], schema=schema)
    pq.write_table(data, tmp_path / "t" / "part-0.parquet")
    txn = t.begin()
    txn.add_file("part-0.parquet", {}, os.path.getsize(tmp_path / "t" / "part-0.parquet"), stats={"numRecords": 10})
    txn.commit()
    return t


HOWS = ["upper case", "field id"]


@pytest.mark.parametrize("how", HOWS)
def test_reader_and_dml_find_the_column(tmp_path, how):
    t = table_with_foreign_file(tmp_path, how)
    assert t.snapshot().to_pyarrow(where="x = 105").column("id").to_pylist() == [5]
    r = t.delete("x = 105")
    assert r.metrics["numDeletedRows"] == "1"
    assert sorted(t.snapshot().to_pyarrow().column("x").to_pylist()) == [100 + i for i in range(10) if i != 5]


@pytest.mark.parametrize("how", HOWS)
def test_checker_reads_the_column_the_reader_reads(tmp_path, how):
    """The loser read `x = 105` and deletes another row; the winner deleted that row. Only by
    reading column x from the file can the checker see the overlap (a missed column would be
    NULL to it, and the conflict would be missed)."""
    t = table_with_foreign_file(tmp_path, how)
    loser = t.begin()
    loser.scan("x = 105")
    loser.delete("x = 107")
    t.delete("x = 105")
    with pytest.raises(ex.ConcurrentDeleteReadException) as e:
        loser.commit()
    assert e.value.overlapping_rows == 1


@pytest.mark.parametrize("fields, physical, field_id, want", [
    ([("a", None), ("b", None)], "b", None, 1),
    ([("A", None), ("b", None)], "a", None, 0),          # any letter case, last
    ([("a", None), ("A", None)], "A", None, 1),          # the exact name before a case-folded one
    ([("x", 3), ("y", 4)], "zzz", 4, 1),                 # field id first
    ([("x", 3), ("y", 4)], "x", 9, 0),                   # unknown id: the name
    ([("x", None)], "q", None, None),
])
def test_resolver_order(fields, physical, field_id, want):
    assert _core.file_column_indexes(fields, [(physical, field_id)]) == [want]
