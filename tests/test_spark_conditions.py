"""The conditions of issue 29 that Spark used to refuse ("cannot be evaluated on rows"): DML on
Spark now selects and computes with the core's compiled row expression. Each case runs on two
identical tables, one by the embedded engine and one by Spark; both results must equal PySpark's
own evaluation of the same SQL text on the same rows (``F.expr``: Spark parsing and evaluating the
text itself, an independent oracle)."""

from __future__ import annotations

import datetime

import pyarrow as pa
import pytest

import delta_occ as docc

spark_mod = pytest.importorskip("delta_occ.spark", reason="pyspark is not installed")
from pyspark.sql import functions as F  # noqa: E402

SCHEMA = pa.schema([
    ("id", pa.int64()), ("status", pa.string()), ("amount", pa.float64()), ("qty", pa.int32()), ("note", pa.string()),
    ("day", pa.date32()),
])
STATUSES = ["x", "X", "open", "Done", None, "x ", "ẞ"]
ROWS = pa.table({
    "id": list(range(40)),
    "status": [STATUSES[i % len(STATUSES)] for i in range(40)],
    "amount": [None if i % 11 == 4 else float("nan") if i == 17 else i * 4.5 - 20 for i in range(40)],
    "qty": [None if i % 9 == 2 else (i * 7) % 23 - 5 for i in range(40)],
    "note": [None if i % 3 == 0 else f"n{i}" for i in range(40)],
    "day": [datetime.date(2024, 1, 1) + datetime.timedelta(days=i * 17) for i in range(40)],
}, schema=SCHEMA)

# (operation, where, SET values): the examples and their neighbours.
CASES = [
    ("delete", "id % 10 = 3", None),
    ("update", "lower(status) = 'x'", {"status": "'done'"}),
    ("delete", "amount * 1.1 > 100", None),
    ("update", "coalesce(note, 'none') = 'none'", {"note": "concat('was ', coalesce(note, 'none'), '-', CAST(id AS STRING))"}),
    ("delete", "CAST(qty AS DOUBLE) / 4 < 1.5", None),
    ("update", "abs(qty) % 4 = 1 AND upper(status) <> 'OPEN'", {"amount": "round(amount * 2, 1)", "qty": "qty + 1"}),
    ("delete", "length(coalesce(status, '')) > 2 OR amount IS NULL", None),
    ("update", "CASE WHEN qty > 5 THEN 'big' ELSE 'small' END = 'big'", {"note": "upper(coalesce(note, status, 'none'))"}),
    ("delete", "day > DATE '2024-06-01' AND CAST(id * 1.5 AS BIGINT) % 3 = 0", None),
    # Retention jobs' conditions (dates only: PySpark's own evaluation of a timestamp would use
    # the session zone, America/New_York, where the core's is UTC).
    ("delete", "day < date_sub(DATE '2025-06-01', 200)", None),
    ("delete", "datediff(DATE '2025-01-01', day) BETWEEN 0 AND 100", None),
    ("update", "year(day) = 2024 AND month(day) IN (1, 2, 3)", {"note": "substring(coalesce(note, 'none'), 1, 2)"}),
    ("delete", "add_months(day, 6) < DATE '2025-01-01' OR day(day) = 1", None),
    ("delete", "day - INTERVAL 30 DAYS > DATE '2025-03-01'", None),
    ("delete", "status RLIKE '^[xX]$'", None),
]


def _expected(spark, op, where, set_):
    """PySpark evaluating the text itself on the same rows."""
    df = spark.createDataFrame(ROWS)
    hit = F.coalesce(F.expr(where), F.lit(False))
    if op == "delete":
        out = df.filter(~hit)
    else:
        out = df.select(*[(F.when(hit, F.expr(set_[c]).cast(df.schema[c].dataType)).otherwise(F.col(c)) if c in set_ else F.col(c)).alias(c) for c in SCHEMA.names])
    return _canon(out.toArrow())


def _canon(t: pa.Table) -> list:
    def key(v):
        return ("nan",) if isinstance(v, float) and v != v else v

    return sorted(tuple(key(r[c]) for c in SCHEMA.names) for r in t.select(SCHEMA.names).to_pylist())


@pytest.mark.parametrize("op, where, set_", CASES, ids=[c[1] for c in CASES])
def test_spark_dml_selects_as_the_embedded_engine_and_pyspark(spark, tmp_path, op, where, set_):
    embedded = docc.Table.create(tmp_path / "embedded", SCHEMA)
    embedded.append(ROWS)
    docc.Table.create(tmp_path / "spark", SCHEMA).append(ROWS)
    on_spark = spark_mod.SparkTable(spark, tmp_path / "spark")
    args = (where,) if op == "delete" else (where, set_)
    r_embedded = getattr(embedded, op)(*args)
    r_spark = getattr(on_spark, op)(*args)
    want = _expected(spark, op, where, set_)
    assert _canon(embedded.snapshot().to_pyarrow()) == want, "the embedded engine differs from PySpark's evaluation"
    assert _canon(docc.Table(tmp_path / "spark").snapshot().to_pyarrow()) == want, "Spark differs from PySpark's evaluation"
    metric = "numDeletedRows" if op == "delete" else "numUpdatedRows"
    assert int(r_spark.metrics[metric]) == int(r_embedded.metrics[metric]) > 0


def test_merge_conditions_and_values_come_from_the_core(spark, tmp_path):
    """MERGE's ON, clause condition and values with functions and arithmetic: Spark's result
    equals the embedded engine's and PySpark's own SQL MERGE semantics written out by hand."""
    source_rows = pa.table({"id": [3, 5, 7, 100, 101], "status": ["X", "open", "x", "new", "NEW"], "amount": [1.0, 2.0, 3.0, 4.0, 5.0]})
    clauses = dict(
        when_matched_update={"amount": "coalesce(t.amount, 0) + s.amount * 2", "status": "lower(s.status)"},
        when_matched_delete="upper(s.status) = 'OPEN'",
        when_not_matched_insert={"id": "s.id", "status": "upper(s.status)", "amount": "s.amount / 2"},
    )
    on = "t.id = s.id AND lower(coalesce(t.status, '')) <> 'done'"
    embedded = docc.Table.create(tmp_path / "embedded", SCHEMA)
    embedded.append(ROWS)
    embedded.merge(source_rows, on, **clauses)
    docc.Table.create(tmp_path / "spark", SCHEMA).append(ROWS)
    spark_mod.SparkTable(spark, tmp_path / "spark").merge(spark.createDataFrame(source_rows), on, **clauses)
    got_embedded = _canon(embedded.snapshot().to_pyarrow())
    assert _canon(docc.Table(tmp_path / "spark").snapshot().to_pyarrow()) == got_embedded

    # PySpark's own evaluation: the join, the delete clause, the update and insert values.
    t, s = spark.createDataFrame(ROWS).alias("t"), spark.createDataFrame(source_rows).alias("s")
    joined = t.join(s, F.expr(on), "left")
    matched = F.col("s.id").isNotNull()
    deleted = matched & F.coalesce(F.expr(clauses["when_matched_delete"]), F.lit(False))
    kept = joined.filter(~deleted).select(
        *[(F.when(matched, F.expr(clauses["when_matched_update"][c]).cast(t.schema[c].dataType))
           .otherwise(F.col(f"t.{c}")) if c in clauses["when_matched_update"] else F.col(f"t.{c}")).alias(c) for c in SCHEMA.names]
    )
    inserted = s.join(t, F.expr(on), "left_anti").select(
        *[(F.expr(clauses["when_not_matched_insert"][c]).cast(t.schema[c].dataType) if c in clauses["when_not_matched_insert"] else F.lit(None).cast(t.schema[c].dataType)).alias(c)
          for c in SCHEMA.names]
    )
    assert _canon(kept.unionByName(inserted).toArrow()) == got_embedded


@pytest.mark.parametrize(
    "where",
    ["CAST(amount AS BIGINT) = 1", "id / (id - 5) > 0", "qty * 2000000000 > 0"],
    ids=["NaN cast to BIGINT", "division by zero", "INT overflow"],
)
def test_evaluation_errors_are_the_same_predicate_error(spark, tmp_path, where):
    """The core refuses these rows (ANSI: a bad cast, a zero divisor, an overflow; hand facts
    about ROWS: amount is NaN at id 17, id - 5 is 0 at id 5, qty reaches 17): both engines raise
    PredicateError(problem="evaluation") and commit nothing."""
    embedded = docc.Table.create(tmp_path / "embedded", SCHEMA)
    embedded.append(ROWS)
    docc.Table.create(tmp_path / "spark", SCHEMA).append(ROWS)
    on_spark = spark_mod.SparkTable(spark, tmp_path / "spark")
    for engine in (embedded, on_spark):
        with pytest.raises(docc.exceptions.PredicateError) as e:
            engine.delete(where)
        assert e.value.problem == "evaluation"
        assert engine.version == 1


def test_to_df_and_transaction_reads_fix_current_date(spark, tmp_path):
    """``current_date()`` in ``to_df(where=)`` and in a transaction's ``read``: resolved once
    (delta_occ.instant), the same rows PySpark selects with its own current_date() in UTC."""
    today = datetime.datetime.now(datetime.timezone.utc).date()
    days = [today - datetime.timedelta(days=n) for n in (40, 10, 1, 0, -3)]
    rows = pa.table({"id": list(range(len(days))), "day": days}, schema=pa.schema([("id", pa.int64()), ("day", pa.date32())]))
    st = spark_mod.SparkTable.create(spark, str(tmp_path / "t"), rows.schema)
    st.append(spark.createDataFrame(rows))
    where = "day >= date_sub(current_date(), 30) AND day < current_date()"
    want = [1, 2]  # 10 and 1 days ago (Python's date arithmetic above)
    assert sorted(r.id for r in st.to_df(where=where).collect()) == want
    with st.begin() as txn:  # read() records the scan with the transaction's resolved text
        assert sorted(r.id for r in txn.read(where).collect()) == want
