"""DML and the row-level conflict checker select the same rows (concurrency.md §4 rule 2).

On a table with deletion vectors, a transaction that read with predicate P conflicts with a winner
that deleted row r of a file it read exactly when r matches P. The checker evaluates P on the
file's rows; `delete(where=P)` selects rows with P too. Black box, row by row, on one data file
of 12 rows (NULLs, NaN, -0.0, +-infinity, letter case, non-ASCII, `%` and `_`):

- DML selection: on a fresh copy, `delete(where=P)`; the ids gone are the selection S.
- Checker selection: for each id i, on a fresh copy, transaction A scans with P and stages a
  blind append; a winner deletes exactly row i (a DV) and commits; A's commit must raise
  ConcurrentDeleteReadException exactly when i is in S.
- Reader selection, for good measure: `to_pyarrow(where=P)` returns exactly S.

For tables without column mapping, with column mapping in name and id mode, and with a data file
whose columns are named differently from the table's physical names (found only by parquet field
id). Arithmetic and functions included: §4 rule 6 falls back to file level only for
non-deterministic predicates, nested values and subqueries, so a fallback here is a failure."""

from __future__ import annotations

import datetime
import json
import math
import os
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import delta_occ as docc
from delta_occ import exceptions as ex

D = datetime.date
SCHEMA = pa.schema([("id", pa.int64()), ("x", pa.int64()), ("f", pa.float64()), ("s", pa.string()), ("d", pa.date32())])
ROWS = pa.table({
    "id": list(range(12)),
    "x": [1, 5, -3, None, 7, 0, 100, 5, -7, 2**62, 3, 9],
    "f": [1.5, math.nan, -0.0, 0.0, None, math.inf, -math.inf, 2.5, math.nan, 3.0, -1.0, 5.0],
    "s": ["a", "A", "b", "B", None, "", "abc", "ABC", "é", "É", "a%b", "a_b"],
    "d": [D(2024, 1, 1), D(2024, 2, 1), None, D(2023, 12, 31), D(2024, 6, 30), D(2024, 7, 1), D(2024, 3, 3), D(1970, 1, 1),
          D(2024, 1, 1), None, D(2030, 1, 1), D(2024, 5, 5)],
}, schema=SCHEMA)
IDS = ROWS.column("id").to_pylist()

PREDICATES = [
    "x > 4",
    "x IN (1, 5, NULL)",
    "x NOT IN (1, NULL)",  # never TRUE: NULL or FALSE on every row
    "NOT (x > 4)",  # NULL x stays out
    "s LIKE 'a%'",
    "s ILIKE 'a%'",
    "s LIKE 'a\\%b'",  # escaped %: only 'a%b'
    "s < 'a'",  # byte order: upper case and '' before 'a', 'é' after
    "s IS NULL",
    "f = CAST('NaN' AS DOUBLE)",  # NaN = NaN (CAST of a literal is a literal: no reason to fall back)
    "f = 'NaN'",
    "NOT (f < 2.0E0)",  # NaN < 2 is FALSE, so NaN rows are selected; NULL is not
    "f <=> NULL",
    "f > 2.0E0",  # NaN is above everything, +infinity too
    "f = 0.0E0",  # -0.0 = 0.0
    "x < 0 OR s = 'B'",
    "d BETWEEN DATE '2024-01-01' AND DATE '2024-06-30' AND f IS NOT NULL",
    "x + 1 > 5",
    "x % 3 = 2",  # -7 % 3 is -1 in Spark (2 with a floor modulo)
    "upper(s) = 'A'",
]
MODES = ["no column mapping", "name", "id", "field id only"]
PROPS = {"delta.enableDeletionVectors": "true"}


def _foreign_file(t: docc.Table, root: str) -> None:
    """Add ROWS as a parquet file whose columns are named `renamed_<field id>`: only the field id
    ties a column to the table's (as in tests/test_column_resolution.py)."""
    fields = {f["name"]: f for f in json.loads(t.snapshot().handle.schema_json)["fields"]}
    file_fields = []
    for f in SCHEMA:
        fid = fields[f.name]["metadata"]["delta.columnMapping.id"]
        file_fields.append(pa.field(f"renamed_{fid}", f.type, metadata={b"PARQUET:field_id": str(fid).encode()}))
    pq.write_table(pa.table(ROWS.columns, schema=pa.schema(file_fields)), os.path.join(root, "part-foreign.parquet"))
    txn = t.begin()
    txn.add_file("part-foreign.parquet", {}, os.path.getsize(os.path.join(root, "part-foreign.parquet")), stats={"numRecords": len(IDS)})
    txn.commit()


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    """One base table per column-mapping mode, each one data file holding ROWS."""
    out = {}
    for mode in MODES:
        root = str(tmp_path_factory.mktemp("base") / "t")
        props = dict(PROPS)
        if mode != "no column mapping":
            props["delta.columnMapping.mode"] = "id" if mode == "field id only" else mode
        t = docc.Table.create(root, SCHEMA, properties=props)
        if mode == "field id only":
            _foreign_file(t, root)
        else:
            t.append(ROWS)
        assert len(t.snapshot().files()) == 1
        out[mode] = root
    return out


class Copies:
    def __init__(self, base: str, tmp) -> None:
        self.base, self.tmp, self.n = base, tmp, 0

    def fresh(self) -> docc.Table:
        self.n += 1
        path = str(self.tmp / f"c{self.n}")
        shutil.copytree(self.base, path)
        return docc.Table(path)


def ids(t: docc.Table) -> set:
    return set(t.snapshot().to_pyarrow(columns=["id"]).column("id").to_pylist())


def dml_selection(copies: Copies, where: str) -> set:
    t = copies.fresh()
    t.delete(where)
    return set(IDS) - ids(t)


def checker_conflicts(copies: Copies, where: str, i: int) -> "ex.DeltaConcurrentModificationException | None":
    """A reads with `where` and appends a row; the winner deletes row `i`; A commits."""
    t = copies.fresh()
    a = t.begin()
    a.scan(where)
    a.append(pa.table({"id": [1000 + i], "x": [None], "f": [None], "s": [None], "d": [None]}, schema=SCHEMA))
    t.delete(f"id = {i}")
    try:
        a.commit()
    except ex.DeltaConcurrentModificationException as e:
        return e
    return None


@pytest.mark.parametrize("where", PREDICATES)
@pytest.mark.parametrize("mode", MODES)
def test_checker_selects_the_rows_dml_deletes(bases, tmp_path, mode, where):
    copies = Copies(bases[mode], tmp_path)
    selected = dml_selection(copies, where)
    wrong = []
    for i in IDS:
        e = checker_conflicts(copies, where, i)
        conflict = isinstance(e, ex.ConcurrentDeleteReadException)
        # A conflict must be decided on rows: one overlapping row, no file-level fallback.
        row_level = conflict and "fell back to file level" not in str(e) and e.overlapping_rows == 1
        if conflict != (i in selected) or (e is not None and not row_level):
            got = "no conflict" if e is None else f"{type(e).__name__}: {str(e)[:300]}"
            wrong.append(f"row {i} ({ROWS.slice(i, 1).to_pylist()[0]}): DML {'deletes' if i in selected else 'keeps'} it, the checker: {got}")
    assert not wrong, f"[{mode}] `{where}`: DML selects {sorted(selected)}\n" + "\n".join(wrong)


@pytest.mark.parametrize("where", PREDICATES)
@pytest.mark.parametrize("mode", MODES)
def test_reader_selects_the_rows_dml_deletes(bases, tmp_path, mode, where):
    copies = Copies(bases[mode], tmp_path)
    read = set(copies.fresh().snapshot().to_pyarrow(where=where, columns=["id"]).column("id").to_pylist())
    assert read == dml_selection(copies, where)
