"""The row-expression translator (``delta_occ.spark._rowexpr``) on hand-written trees in the
format of the core's ``RowExpr.tree_json`` (rust/core/src/rowexpr/export.rs): each tree evaluated
by Spark on one known row, all in one job. Expected values are hand facts or Python computations,
written next to each case; the session's time zone is America/New_York (tests/conftest.py), so a
translation that leaned on it would be off by hours."""

from __future__ import annotations

import datetime
import decimal
import math

import pytest

pyspark = pytest.importorskip("pyspark")

from pyspark.sql import functions as F  # noqa: E402

from delta_occ.exceptions import PredicateError  # noqa: E402
from delta_occ.spark import _rowexpr  # noqa: E402

#: 2024-01-01T03:00:00Z in µs (Python: datetime(2024,1,1,3,tzinfo=utc).timestamp() * 1e6); in New
#: York it is still 2023-12-31.
TS = 1_704_078_000_000_000
#: 2024-03-10 02:30 UTC: a wall clock inside New York's DST gap.
GAP = 1_710_037_800_000_000


def c(name, typ):
    return {"col": name, "type": typ}


def lit(v, kind, typ):
    return {"lit": v, "kind": kind, "type": typ}


def op(o, typ="boolean", **kw):
    return {"op": o, "type": typ, **kw}


# (case id, tree, expected value, where the expectation comes from)
CASES = [
    ("int remainder", op("%", "int", left=c("i", "int"), right=lit(3, "long", "int")), 1, "Python 7 % 3"),
    ("remainder keeps the dividend's sign", op("%", "bigint", left=c("l", "bigint"), right=lit(3, "long", "bigint")), -1, "math.fmod(-7, 3)"),
    (
        "division in doubles",
        op("/", "double", left=op("cast", "double", arg=c("l", "bigint"), to="double"), right=lit(2.0, "double", "double")),
        -3.5, "Python -7 / 2",
    ),
    ("product", op("*", "bigint", left=op("cast", "bigint", arg=c("i", "int"), to="bigint"), right=c("l", "bigint")), -49, "Python 7 * -7"),
    ("negation", op("neg", "int", arg=c("i", "int")), -7, "hand"),
    (
        "lower() then LIKE",
        op("like", arg=op("fn", "string", name="lower", args=[c("s", "string")]), pattern="àb%", case_insensitive=False, negated=False),
        True, "Python 'ÀbC'.lower() == 'àbc'",
    ),
    ("ILIKE", op("like", arg=c("s", "string"), pattern="àB_", case_insensitive=True, negated=False), True, "hand: case-insensitive match of ÀbC"),
    ("length() counts characters", op("fn", "int", name="length", args=[c("s", "string")]), 3, "Python len('ÀbC')"),
    ("coalesce()", op("fn", "string", name="coalesce", args=[c("n", "string"), lit("x", "string", "string")]), "x", "hand: n is NULL"),
    (
        "CASE",
        op("case", "string", whens=[[op(">", left=c("i", "int"), right=lit(5, "long", "int")), lit("big", "string", "string")]], **{"else": lit("small", "string", "string")}),
        "big", "hand: 7 > 5",
    ),
    ("timestamp to date in UTC", op("cast", "date", arg=c("ts", "timestamp"), to="date"), datetime.date(2024, 1, 1), "hand: 03:00Z is Jan 1 in UTC"),
    ("timestamp to string in UTC", op("cast", "string", arg=c("ts", "timestamp"), to="string"), "2024-01-01 03:00:00", "hand"),
    (
        "timestamp to timestamp_ntz: the UTC wall clock",
        op("cast", "timestamp_ntz", arg=c("gap", "timestamp"), to="timestamp_ntz"),
        datetime.datetime(2024, 3, 10, 2, 30), "hand: 2024-03-10T02:30Z",
    ),
    (
        "and back, through New York's DST gap",
        op("=", left=op("cast", "timestamp", arg=op("cast", "timestamp_ntz", arg=c("gap", "timestamp"), to="timestamp_ntz"), to="timestamp"), right=lit(GAP, "timestamp", "timestamp")),
        True, "hand: the same instant",
    ),
    (
        "date to timestamp: UTC midnight",
        op("=", left=op("cast", "timestamp", arg=lit(19723, "date", "date"), to="timestamp"), right=lit(19723 * 86_400_000_000, "timestamp", "timestamp")),
        True, "Python (date(2024,1,1) - date(1970,1,1)).days == 19723",
    ),
    (
        "string without a zone to timestamp: UTC",
        op("=", left=op("cast", "timestamp", arg=c("ws", "string"), to="timestamp"), right=lit(TS, "timestamp", "timestamp")),
        True, "hand: '2024-01-01 03:00:00' read in UTC",
    ),
    ("string with a zone to timestamp", op("=", left=op("cast", "timestamp", arg=c("zs", "string"), to="timestamp"), right=lit(TS, "timestamp", "timestamp")), True, "hand: 05:00+02:00 is 03:00Z"),
    ("timestamp literal", op("=", left=c("ts", "timestamp"), right=lit(TS, "timestamp", "timestamp")), True, "hand"),
    ("timestamp_ntz literal", op("fn", "int", name="hour", args=[lit(3_600_000_000 * 5, "timestamp_ntz", "timestamp_ntz")]), 5, "hand: 05:00 wall clock"),
    ("decimal literal", lit("12345", "decimal", "decimal(10,2)") | {"scale": 2}, decimal.Decimal("123.45"), "hand: unscaled 12345, scale 2"),
    ("typed NULL <=> NULL", op("<=>", left=lit(None, "null", "int"), right=op("cast", "int", arg=lit(None, "null", "void"), to="int")), True, "SQL: NULL <=> NULL"),
    ("NaN = NaN", op("=", left=c("d", "double"), right=lit("NaN", "double", "double")), True, "Spark's order: NaN equals itself"),
    ("NaN above infinity", op(">", left=c("d", "double"), right=lit("inf", "double", "double")), True, "Spark's order: NaN above every value"),
    ("-0.0 = 0.0", op("=", left=c("z", "double"), right=lit(0.0, "double", "double")), True, "Spark: -0.0 = 0.0"),
    ("float literal", op("=", left=c("f", "float"), right=lit(0.1, "double", "float")), True, "hand: float 0.1 equals float 0.1"),
    ("int literal typed int", lit(5, "long", "int"), 5, "hand"),
    ("struct field", {"op": "field", "type": "string", "arg": c("st", "struct<country:string>"), "name": "country"}, "NZ", "hand"),
    ("AND with NULL", op("and", args=[lit(True, "boolean", "boolean"), op("=", left=c("n", "string"), right=lit("a", "string", "string"))]), None, "SQL: TRUE AND NULL is NULL"),
    ("OR with NULL", op("or", args=[lit(True, "boolean", "boolean"), op("=", left=c("n", "string"), right=lit("a", "string", "string"))]), True, "SQL: TRUE OR NULL is TRUE"),
    ("NOT", op("not", arg=op("is_null", arg=c("n", "string"))), False, "hand: n is NULL"),
    (
        "zoned cast to a wall clock",
        op("cast", "timestamp_ntz", arg=c("ts", "timestamp"), to="timestamp_ntz", time_zone="Asia/Kolkata"),
        datetime.datetime(2024, 1, 1, 8, 30), "hand: 03:00Z is 08:30 at +05:30",
    ),
    (
        "zoned wall clock in a DST gap to an instant",
        op("=", left=op("cast", "timestamp", arg=lit(GAP, "timestamp_ntz", "timestamp_ntz"), to="timestamp", time_zone="America/New_York"),
           right=lit(GAP + 5 * 3_600_000_000, "timestamp", "timestamp")),
        True, "java.time: 02:30 does not exist on 2024-03-10 in New York; it moves on by the gap to 03:30 EDT = 07:30Z",
    ),
    (
        "date_trunc to the hour in a half-hour zone",
        op("=", left=op("fn", "timestamp", name="date_trunc", args=[lit("HOUR", "string", "string"), c("ts17", "timestamp")], time_zone="Asia/Kolkata"),
           right=lit(TS - 30 * 60_000_000, "timestamp", "timestamp")),
        True, "hand: 03:17:05Z is 08:47:05 at +05:30, truncated 08:00 = 02:30Z",
    ),
    (
        "date_trunc to the month in UTC",
        op("=", left=op("fn", "timestamp", name="date_trunc", args=[lit("MONTH", "string", "string"), c("ts17", "timestamp")], time_zone="UTC"),
           right=lit(TS - 3 * 3_600_000_000, "timestamp", "timestamp")),
        True, "hand: 2024-01-01 00:00Z",
    ),
    (
        "timestampadd of microseconds",
        op("=", left=op("fn", "timestamp", name="timestampadd", args=[lit("MICROSECOND", "string", "string"), lit(86_400_000_000, "long", "bigint"), c("ts", "timestamp")]),
           right=lit(TS + 86_400_000_000, "timestamp", "timestamp")),
        True, "hand: one day later",
    ),
    ("date_sub", op("fn", "date", name="date_sub", args=[lit(19723, "date", "date"), lit(30, "long", "int")]), datetime.date(2023, 12, 2), "Python date(2024,1,1) - timedelta(30)"),
    ("substring", op("fn", "string", name="substring", args=[c("s", "string"), lit(2, "long", "int"), lit(2, "long", "int")]), "bC", "Python 'ÀbC'[1:3]"),
    ("rlike", op("fn", "boolean", name="rlike", args=[c("s", "string"), lit("^À.C$", "string", "string")]), True, "hand"),
]


@pytest.fixture(scope="module")
def row(spark_classic):
    spark = spark_classic  # module scope: `spark` is function-scoped (classic or Connect)
    df = spark.createDataFrame(
        [(7, -7, "ÀbC", None, float("nan"), -0.0, 0.1, ("NZ",), "2024-01-01 03:00:00", "2024-01-01 05:00:00+02:00")],
        "i int, l bigint, s string, n string, d double, z double, f float, st struct<country:string>, ws string, zs string",
    )
    return df.select(
        "*", F.timestamp_micros(F.lit(TS)).alias("ts"), F.timestamp_micros(F.lit(GAP)).alias("gap"),
        F.timestamp_micros(F.lit(TS + (17 * 60 + 5) * 1_000_000)).alias("ts17"),
    )


def test_trees_evaluate_as_the_core_defines(row):
    cols = [_rowexpr.to_column(tree, lambda n, df=row: df[n]).alias(f"c{k}") for k, (_, tree, _, _) in enumerate(CASES)]
    got = row.select(*cols).collect()[0]
    wrong = []
    for k, (name, _, want, _) in enumerate(CASES):
        v = got[f"c{k}"]
        same = (v == want) or (isinstance(want, float) and isinstance(v, float) and math.isnan(want) and math.isnan(v))
        if not same or type(v) is not type(want):
            wrong.append((name, v, want))
    assert not wrong


def test_condition_is_false_where_null(row):
    tree = op("=", left=c("n", "string"), right=lit("a", "string", "string"))
    assert row.select(_rowexpr.condition(tree, lambda n: row[n]).alias("x")).collect()[0]["x"] is False


@pytest.mark.parametrize(
    "tree, named",
    [
        (op("regexp_extract_all", "string"), "regexp_extract_all"),
        ({"lit": None, "kind": "unsupported", "type": "interval", "reason": "no scalar"}, "unsupported"),
        (op("fn", "string", name="a b; drop", args=[]), "a b; drop"),
        ({"what": 1}, "what"),
    ],
)
def test_unknown_nodes_are_refused_by_name(tree, named):
    with pytest.raises(PredicateError, match=named):
        _rowexpr.to_column(tree, lambda n: F.col(n))


@pytest.mark.parametrize(
    "tree",
    [
        op("/", "double", left=op("cast", "double", arg=c("i", "int"), to="double"), right=lit(0.0, "double", "double")),
        op("%", "int", left=c("i", "int"), right=lit(0, "long", "int")),
        op("*", "int", left=c("i", "int"), right=lit(2**30, "long", "int")),
        op("cast", "int", arg=c("s", "string"), to="int"),
    ],
    ids=["division by zero", "remainder by zero", "int overflow", "bad cast"],
)
def test_errors_as_the_core_even_when_the_session_turned_ansi_off(spark, row, tree):
    """The core errors on these (ANSI); the operations build their jobs under ``ansi``, so a
    session with ANSI off does not turn them into NULLs."""
    old = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", "false")
    try:
        with _rowexpr.ansi(spark), pytest.raises(Exception, match="DIVIDE_BY_ZERO|REMAINDER_BY_ZERO|ARITHMETIC_OVERFLOW|CAST_INVALID_INPUT"):
            row.select(_rowexpr.to_column(tree, lambda n: row[n])).collect()
        assert spark.conf.get("spark.sql.ansi.enabled") == "false"
    finally:
        spark.conf.set("spark.sql.ansi.enabled", old)
