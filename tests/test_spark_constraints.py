"""CHECK constraints on the Spark engine (issue 30, "Constraints"): Spark's writes enforce the
table's constraints from the core's compiled condition (the rows the embedded engine refuses,
the same ConstraintViolationError), on a classic and a Connect session, with nothing written.
The expected outcomes are the Delta protocol's (FALSE and NULL break a constraint) and agree
with tests/test_constraints.py, whose oracle is deltalake."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

import delta_occ as docc
from delta_occ import exceptions as exc

from conftest import BOTH_SESSIONS

spark_mod = pytest.importorskip("delta_occ.spark", reason="pyspark is not installed")
SparkTable = spark_mod.SparkTable

SCHEMA = pa.schema([("id", pa.int64()), ("amount", pa.float64()), ("p", pa.string())])


def frame(spark, ids, amounts, p="a"):
    return spark.createDataFrame(pa.table({"id": ids, "amount": amounts, "p": [p] * len(ids)}, schema=SCHEMA))


def data_files(path) -> list:
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs if f.endswith(".parquet"))


WRITES = [
    # (what, the call, breaks the constraint?)
    ("append", lambda st, s: st.append(frame(s, [9], [-1.0])), True),
    ("append NULL", lambda st, s: st.append(frame(s, [9], [None])), True),
    ("append", lambda st, s: st.append(frame(s, [9], [1.0])), False),
    ("overwrite", lambda st, s: st.overwrite(frame(s, [9, 10], [1.0, -2.0])), True),
    ("update", lambda st, s: st.update("id = 2", {"amount": "amount - 100"}), True),
    ("update", lambda st, s: st.update("id = 2", {"amount": "amount + 100"}), False),
    ("merge insert", lambda st, s: st.merge(frame(s, [7], [-7.0]), on="t.id = s.id", when_not_matched_insert=True), True),
    ("delete", lambda st, s: st.delete("id = 1"), False),
]


@pytest.mark.parametrize("partitioned", [False, True], ids=["flat", "partitioned"])
@pytest.mark.parametrize("what,write,breaks", WRITES, ids=[f"{w[0]}-{'breaks' if w[2] else 'keeps'}" for w in WRITES])
def test_spark_writes_are_checked(spark_classic, tmp_path, what, write, breaks, partitioned):
    st = SparkTable.create(spark_classic, tmp_path / "t", SCHEMA, partition_by=["p"] if partitioned else [])
    st.append(frame(spark_classic, [1, 2], [10.0, 20.0]))
    st.add_constraint("positive", "amount > 0")
    before, files = st.table.refresh(), data_files(tmp_path / "t")
    if breaks:
        with pytest.raises(exc.ConstraintViolationError) as e:
            write(st, spark_classic)
        assert e.value.constraint == "positive" and e.value.expression == "amount > 0"
        assert set(e.value.row) == {"amount"} and (e.value.row["amount"] is None or e.value.row["amount"] <= 0)
        assert st.table.refresh() == before and data_files(tmp_path / "t") == files, "nothing written"
    else:
        write(st, spark_classic)
        assert st.table.refresh() == before + 1
    amounts = docc.Table(str(tmp_path / "t")).snapshot().to_pyarrow().column("amount").to_pylist()
    assert all(a is not None and a > 0 for a in amounts)


@pytest.mark.parametrize("spark", BOTH_SESSIONS, indirect=True)
def test_both_sessions_refuse_a_breaking_row(spark, tmp_path):
    st = SparkTable.create(spark, tmp_path / "t", SCHEMA)
    st.append(frame(spark, [1], [1.0]))
    st.add_constraint("small_ids", "id < 100 AND p IN ('a', 'b')")
    with pytest.raises(exc.ConstraintViolationError) as e:
        st.append(frame(spark, [1, 200], [1.0, 2.0]))
    assert e.value.row == {"id": 200, "p": "a"}
    st.append(frame(spark, [2], [2.0], p="b"))
    assert st.table.refresh() == 3
    st.drop_constraint("small_ids")
    st.append(frame(spark, [300], [3.0], p="c"))
    assert sorted(docc.Table(str(tmp_path / "t")).snapshot().to_pyarrow().column("id").to_pylist()) == [1, 2, 300]


@pytest.mark.parametrize("spark", BOTH_SESSIONS, indirect=True)
def test_a_null_in_a_not_null_column_is_the_embedded_engines_error(spark, tmp_path):
    """NOT NULL, the other constraint: the embedded engine raises SchemaMismatchError naming the
    column (tests/test_policies.py); Spark fails its job at the NULL and raises the same."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("amount", pa.float64())])
    st = SparkTable.create(spark, tmp_path / "nn", schema)
    data = pa.table({"id": pa.array([1, None], pa.int64()), "amount": [1.0, 2.0]})
    with pytest.raises(exc.SchemaMismatchError) as e:
        st.append(spark.createDataFrame(data))
    assert e.value.column == "id"
    assert st.table.refresh() == 0 and data_files(tmp_path / "nn") == []
    with pytest.raises(exc.SchemaMismatchError):
        docc.Table(str(tmp_path / "nn")).append(data)
