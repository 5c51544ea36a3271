"""Differential test of the row evaluator (the SQL expressions DML, reads and the row-level
conflict checker evaluate on rows) against an independent pure-Python model of Spark SQL
semantics, Spark 4 with ANSI mode on (tests/sqlref.py, where each rule cites its source).

Hypothesis draws a table of 1-20 rows (bigint, double, string, date, timestamp, decimal and
boolean columns with NULLs and edge values: +-2^62, +-2^63, NaN, +-infinity, -0.0, empty and
non-ASCII strings, `%` and `_`) and an expression over it (comparisons of a column, or of
arithmetic on columns, with a literal or a column of the same family; AND/OR/NOT; IS [NOT] NULL;
IN lists with NULLs; BETWEEN; LIKE/ILIKE; or an arithmetic value). The evaluator must give, per
row, the model's value and select exactly the rows where the model says TRUE, and fail
(PredicateError) exactly when Spark would fail (overflow, division by zero). Where Spark may
either fail or not (an error next to an operand that already decides the result, see [ORDER] in
sqlref.py), either answer is accepted, but values must still agree.

The evaluator is reached through two adapters, `core_eval` and `core_mask`, so that the same
test runs against whichever evaluator they call."""

from __future__ import annotations

import datetime
import math
import os
from decimal import Decimal
from typing import Any, Callable, Dict, List, Sequence

import pyarrow as pa
import pytest
import sqlref as m
from hypothesis import HealthCheck, currently_in_test_context, given, note, settings
from hypothesis import strategies as st
from sqlref import LONG_MAX, LONG_MIN

from delta_occ.exceptions import PredicateError


def core_eval(table: pa.Table, text: str) -> list:
    """Values of the SQL expression `text` on each row of `table` (as Python objects)."""
    from delta_occ import _rows
    return _rows.values(table, _rows.compile(text, table.schema)).to_pylist()


def core_mask(table: pa.Table, text: str) -> List[bool]:
    """Rows selected by the condition `text` (TRUE only; NULL is not selected)."""
    from delta_occ import _rows
    return _rows.mask(table, _rows.compile(text, table.schema)).to_pylist()


EXAMPLES = int(os.environ.get("DELTA_OCC_EVAL_EXAMPLES", "300"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None, report_multiple_bugs=False,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

UTC = datetime.timezone.utc
COLUMNS = {
    "i1": "bigint", "i2": "bigint", "f1": "double", "f2": "double", "s1": "string", "s2": "string",
    "d1": "date", "d2": "date", "t1": "timestamp", "t2": "timestamp", "c1": "decimal", "c2": "decimal",
    "b1": "boolean", "b2": "boolean",
}
ARROW = {
    "bigint": pa.int64(), "double": pa.float64(), "string": pa.string(), "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"), "decimal": pa.decimal128(10, 2), "boolean": pa.bool_(),
}

# -- values -----------------------------------------------------------------------------------------

ALPHABET = "aAbBzZ%_ 'éÉßΣσς中😀\n"
VALUES = {
    "bigint": st.one_of(
        st.sampled_from([0, 1, -1, 2, -2, 3, -3, 7, -7, 2**31, 2**62, -(2**62), LONG_MAX, LONG_MIN]),
        st.integers(-1000, 1000), st.integers(LONG_MIN, LONG_MAX)),
    "double": st.one_of(
        st.sampled_from([math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -1.0, 1.5, -2.5, 3.0, 7.0, -7.0, 1e300, -1e300, 5e-324, 2.0**62]),
        st.floats(-1e6, 1e6), st.integers(-100, 100).map(float)),
    "string": st.one_of(
        st.sampled_from(["", "a", "A", "Z", "z", "ab", "a%b", "a_b", "é", "É", "ß", "Σ", "中", "😀", "aΣ"]),
        st.text(alphabet=ALPHABET, max_size=6)),
    "date": st.one_of(
        st.sampled_from([datetime.date(1970, 1, 1), datetime.date(2024, 1, 2), datetime.date(2024, 2, 29),
                         datetime.date(1, 1, 1), datetime.date(9999, 12, 31)]),
        st.dates(datetime.date(1900, 1, 1), datetime.date(2100, 12, 31))),
    "timestamp": st.one_of(
        st.sampled_from([datetime.datetime(1970, 1, 1, tzinfo=UTC), datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC),
                         datetime.datetime(2024, 1, 2, 3, 4, 5, 1, tzinfo=UTC), datetime.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)]),
        st.datetimes(datetime.datetime(1900, 1, 1), datetime.datetime(2100, 1, 1)).map(lambda d: d.replace(tzinfo=UTC))),
    "decimal": st.one_of(
        st.sampled_from([Decimal("0.00"), Decimal("1.00"), Decimal("-1.00"), Decimal("12.34"), Decimal("12.30"), Decimal("99999999.99")]),
        st.integers(-(10**10) + 1, 10**10 - 1).map(lambda n: Decimal(n).scaleb(-2))),
    "boolean": st.booleans(),
}
# Literals: anything the column holds, decimals of any scale (compared exactly), no -2^63 (whose
# literal would be a decimal in Spark, see sqlref.render_literal).
LITERALS = dict(VALUES)
LITERALS["bigint"] = VALUES["bigint"].filter(lambda v: v != LONG_MIN)
LITERALS["decimal"] = st.one_of(VALUES["decimal"], st.builds(lambda n, s: Decimal(n).scaleb(-s), st.integers(-(10**12), 10**12), st.integers(0, 4)))


def nullable(s: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(s, s, s, st.none())  # about one value in four is NULL


class Columns:
    """The table's columns, each drawn when an expression first references it (drawing all
    fourteen for every example would make generation, not evaluation, the cost of the test)."""

    def __init__(self, draw, n: int) -> None:
        self.draw, self.n, self.data = draw, n, {}

    def column(self, name: str) -> list:
        if name not in self.data:
            self.data[name] = self.draw(st.lists(nullable(VALUES[COLUMNS[name]]), min_size=self.n, max_size=self.n))
        return self.data[name]

    def values(self, typ: str) -> list:
        """Non-NULL values already in columns of the type."""
        return [v for c, vs in self.data.items() if COLUMNS[c] == typ for v in vs if v is not None]


def arrow_table(cols: Dict[str, list]) -> pa.Table:
    return pa.table({c: pa.array(v, ARROW[COLUMNS[c]]) for c, v in cols.items()})


def rows_of(cols: Dict[str, list]) -> List[Dict[str, Any]]:
    n = len(next(iter(cols.values())))
    return [{c: v[i] for c, v in cols.items()} for i in range(n)]


# -- expressions ------------------------------------------------------------------------------------

OPS = ["=", "!=", "<", "<=", ">", ">=", "<=>"]
# Comparable families (left, right): the same type, bigint with double (as double), bigint with
# decimal (exact). A number against a string column is a type error, never generated.
PAIRS = [("bigint", "bigint"), ("double", "double"), ("bigint", "double"), ("double", "bigint"), ("bigint", "decimal"),
         ("decimal", "bigint"), ("decimal", "decimal"), ("string", "string"), ("date", "date"), ("timestamp", "timestamp"),
         ("boolean", "boolean")]


def columns_of_type(typ: str) -> List[str]:
    return [c for c, t in COLUMNS.items() if t == typ]


@st.composite
def literal(draw, typ: str, cols: Columns, null: bool = True) -> m.Lit:
    """A literal of the family, often one of the table's values (so `=` and IN find matches)."""
    pool = [v for v in cols.values(typ) if v != LONG_MIN]
    k = draw(st.integers(0, 9))
    if null and k == 0:
        return m.Lit("null", None)
    if pool and k <= 5:
        return m.Lit(typ, draw(st.sampled_from(pool)))
    return m.Lit(typ, draw(LITERALS[typ]))


@st.composite
def numeric(draw, typ: str, cols: Columns, depth: int, need_col: bool = True) -> m.Node:
    """A bigint or double value: a column, a literal (only where a column is not needed: no
    arithmetic on literals alone, which Spark would type as INT and fold), or arithmetic. A double
    may be built from bigint parts (promoted, or `/`)."""
    kinds = ["col"] + ([] if need_col else ["lit", "lit"]) + (["arith", "arith", "neg"] if depth > 0 else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "col":
        return _col(draw, cols, typ, promoted=typ == "double")
    if kind == "lit":
        return draw(literal(typ, cols))
    if kind == "neg":
        return m.Neg(draw(numeric(typ, cols, depth - 1, True)))
    op = draw(st.sampled_from(["+", "-", "*", "%"] + (["/", "/"] if typ == "double" else [])))
    left_typ, right_typ = typ, typ
    if typ == "double":
        left_typ, right_typ = "double", draw(st.sampled_from(["double", "bigint"]))
        if op == "/":
            left_typ = draw(st.sampled_from(["double", "bigint"]))
    left = draw(numeric(left_typ, cols, depth - 1, True))
    right = draw(numeric(right_typ, cols, depth - 1, False))
    if op in "+*" and _chain_literals(left, op) + _chain_literals(right, op) >= 2 and m.Arith(op, left, right).type == "bigint":
        # Spark folds the literals of an integral + or * chain together (its optimizer rule
        # ReorderAssociativeOperator), which moves where an overflow happens: not generated.
        right = _col(draw, cols, right_typ)
    if draw(st.booleans()):
        left, right = right, left
    return m.Arith(op, left, right)


def _chain_literals(node: m.Node, op: str) -> int:
    if isinstance(node, m.Lit):
        return 1
    if isinstance(node, m.Arith) and node.op == op and node.type == "bigint":
        return _chain_literals(node.left, op) + _chain_literals(node.right, op)
    return 0


def _col(draw, cols: Columns, typ: str, promoted: bool = False) -> m.Col:
    """A column of the type (or, `promoted`, also a bigint one where a double is wanted)."""
    name = draw(st.sampled_from(columns_of_type(typ) + (["i1"] if promoted else [])))
    cols.column(name)
    return m.Col(name, COLUMNS[name])


@st.composite
def operand(draw, typ: str, cols: Columns, depth: int, need_col: bool) -> m.Node:
    if typ in ("bigint", "double"):
        return draw(numeric(typ, cols, depth, need_col))
    if need_col or draw(st.integers(0, 2)) == 0:
        return _col(draw, cols, typ)
    return draw(literal(typ, cols))


@st.composite
def like_pattern(draw, cols: Columns, case_insensitive: bool) -> str:
    """A pattern made from a value (often one in the table): some characters become `_` or `%`,
    `%` and `_` of the value are mostly escaped (`\\%`, `\\_`)."""
    pool = cols.values("string")
    base = draw(st.sampled_from(pool)) if pool and draw(st.booleans()) else draw(VALUES["string"])
    out = []
    for ch in base:
        k = draw(st.integers(0, 5))
        if ch in "%_":
            out.append("\\" + ch if k < 4 else ch)
        else:
            out.append("_" if k == 0 else "%" if k == 1 else ch)
    if draw(st.booleans()):
        out.insert(draw(st.integers(0, len(out))), "%")
    pattern = "".join(out)
    return pattern.swapcase() if case_insensitive and draw(st.booleans()) else pattern


@st.composite
def atom(draw, cols: Columns, depth: int) -> m.Node:
    kind = draw(st.sampled_from(["cmp", "cmp", "cmp", "is_null", "in", "between", "like", "bool"]))
    if kind == "cmp":
        lt, rt = draw(st.sampled_from(PAIRS))
        left = draw(operand(lt, cols, depth, True))
        right = draw(operand(rt, cols, draw(st.integers(0, 1)) * depth, False))
        if draw(st.booleans()):
            left, right = right, left
        op = draw(st.sampled_from(OPS))
        # Spark's optimizer replaces `e <=> e` by TRUE, so a failing e would not fail.
        return m.Cmp("=" if op == "<=>" and left == right else op, left, right)
    if kind == "is_null":
        typ = draw(st.sampled_from(sorted(ARROW)))
        return m.IsNull(draw(operand(typ, cols, depth, True)), draw(st.booleans()))
    if kind == "in":
        typ = draw(st.sampled_from(sorted(ARROW)))
        arg = draw(operand(typ, cols, depth, True))
        return m.In(arg, draw(st.lists(literal(typ, cols), min_size=1, max_size=4)), draw(st.booleans()))
    if kind == "between":
        typ = draw(st.sampled_from(sorted(ARROW)))
        arg = draw(operand(typ, cols, depth, True))
        low, high = draw(literal(typ, cols, null=False)), draw(literal(typ, cols))
        return m.Between(arg, low, high, draw(st.booleans()))
    if kind == "like":
        ci = draw(st.booleans())
        return m.Like(_col(draw, cols, "string"), draw(like_pattern(cols, ci)), ci, draw(st.booleans()))
    return _col(draw, cols, "boolean")


@st.composite
def predicate(draw, cols: Columns, depth: int = 3) -> m.Node:
    if depth == 0 or draw(st.integers(0, 2)) == 0:
        return draw(atom(cols, draw(st.integers(0, 2))))
    kind = draw(st.sampled_from(["and", "or", "not"]))
    if kind == "not":
        return m.Not(draw(predicate(cols, depth - 1)))
    a, b = draw(predicate(cols, depth - 1)), draw(predicate(cols, depth - 1))
    return m.And(a, b) if kind == "and" else m.Or(a, b)


@st.composite
def table_and_predicate(draw):
    cols = Columns(draw, draw(st.integers(1, 20)))
    node = draw(predicate(cols))
    return cols.data, node


@st.composite
def table_and_value(draw):
    cols = Columns(draw, draw(st.integers(1, 20)))
    node = draw(numeric(draw(st.sampled_from(["bigint", "double"])), cols, draw(st.integers(1, 3)), True))
    return cols.data, node


# -- comparing the evaluator with the model ----------------------------------------------------------


def run(fn: Callable[[pa.Table, str], list], table: pa.Table, text: str) -> Any:
    """The evaluator's answer: the list of values, or "error" (PredicateError). Any other
    exception is a bug of its own and fails the test as it is."""
    try:
        return fn(table, text)
    except PredicateError:
        return "error"


def disagreement(want: m.Expected, got: Any, wanted_values: Sequence[Any], same: Callable[[Any, Any], bool]) -> str:
    """Empty if `got` is a correct answer, else what differs."""
    if want.error:
        return "" if got == "error" else f"expected an error (overflow / division by zero), got {got!r}"
    if got == "error":
        return "" if want.may_fail else f"expected {list(wanted_values)!r}, got an error"
    if len(got) != len(wanted_values):
        return f"expected {len(wanted_values)} values, got {len(got)}: {got!r}"
    bad = [i for i, (w, g) in enumerate(zip(wanted_values, got)) if not same(w, g)]
    return "; ".join(f"row {i}: expected {wanted_values[i]!r}, got {got[i]!r}" for i in bad)


def check(cols: Dict[str, list], node: m.Node) -> None:
    text = node.sql()
    rows = rows_of(cols)
    used = sorted(cols)
    if currently_in_test_context():
        note(f"SQL: {text}")
    table = arrow_table(cols)
    want = m.evaluate(node, rows)
    problems = []
    got = run(core_eval, table, text)
    d = disagreement(want, got, want.values or [], m.same_value)
    if d:
        problems.append(f"values: {d}")
    if node.type == "boolean":
        got_mask = run(core_mask, table, text)
        want_filter = m.evaluate_filter(node, rows)  # a mask is a filter: [INFER] applies
        d = disagreement(want_filter, got_mask, [v is True for v in want_filter.values or []], lambda w, g: g is w)
        if d:
            problems.append(f"mask: {d}")
    if problems:
        where = "\n  ".join(f"{i}: {{{', '.join(f'{c}: {r[c]!r}' for c in used)}}}" for i, r in enumerate(rows))
        raise AssertionError(f"{text}\nrows:\n  {where}\n" + "\n".join(problems))


@SETTINGS
@given(table_and_predicate())
def test_predicates_agree_with_the_model(case):
    check(*case)


@SETTINGS
@given(table_and_value())
def test_arithmetic_values_agree_with_the_model(case):
    check(*case)


# -- the rules one by one ----------------------------------------------------------------------------
# Small fixed cases, one per rule, with the answer Spark documents (see sqlref.py). The first test
# checks the model itself against those answers; the second checks the evaluator against the model,
# so a failure there names the rule it breaks.

NAN, INF = math.nan, math.inf
i1, i2, f1, f2, s1, c1, t1 = (m.Col(n, COLUMNS[n]) for n in ("i1", "i2", "f1", "f2", "s1", "c1", "t1"))


def lit(typ: str, v: Any) -> m.Lit:
    return m.Lit(typ, v)


def ints(v: int) -> m.Lit:
    return m.Lit("bigint", v)


def dbl(v: float) -> m.Lit:
    return m.Lit("double", v)


ERR = "error"
RULES = [
    # (name, columns, expression, Spark's answer per row or ERR)
    ("remainder has the sign of the dividend", {"i1": [-7, 7, -7, 7, None], "i2": [3, -3, -3, 3, 0]}, m.Arith("%", i1, i2), [-1, 1, -1, 1, None]),
    ("remainder by zero fails", {"i1": [1], "i2": [0]}, m.Arith("%", i1, i2), ERR),
    ("double remainder has the sign of the dividend", {"f1": [-7.5, 7.5, INF, NAN]}, m.Arith("%", f1, dbl(2.0)), [-1.5, 1.5, NAN, NAN]),
    ("double remainder by zero fails", {"f1": [1.0]}, m.Arith("%", f1, dbl(0.0)), ERR),
    ("remainder of a bigint beyond 2^53", {"i1": [2**62 + 1]}, m.Arith("%", i1, ints(2)), [1]),
    ("division is floating point", {"i1": [7, -7], "i2": [2, 2]}, m.Arith("/", i1, i2), [3.5, -3.5]),
    ("division of a bigint beyond 2^53", {"i1": [2**62 + 1], "i2": [2]}, m.Arith("/", i1, i2), [2.0**61]),
    ("division by zero fails", {"i1": [1], "i2": [0]}, m.Arith("/", i1, i2), ERR),
    ("double division by zero fails", {"f1": [1.0]}, m.Arith("/", f1, dbl(0.0)), ERR),
    ("double division by minus zero fails", {"f1": [NAN]}, m.Arith("/", f1, dbl(-0.0)), ERR),
    ("NULL divided by zero is NULL", {"i1": [None], "i2": [0]}, m.Arith("/", i1, i2), [None]),
    ("addition overflow fails", {"i1": [LONG_MAX]}, m.Arith("+", i1, ints(1)), ERR),
    ("subtraction overflow fails", {"i1": [LONG_MIN]}, m.Arith("-", i1, ints(1)), ERR),
    ("multiplication overflow fails", {"i1": [2**62]}, m.Arith("*", i1, ints(2)), ERR),
    ("negation overflow fails", {"i1": [LONG_MIN]}, m.Neg(i1), ERR),
    ("arithmetic is evaluated as written", {"i1": [2**62], "i2": [0]}, m.Arith("*", i1, m.Arith("*", i1, i2)), [0]),
    ("bigint with double compares as double", {"i1": [2**62 + 1, 16777217], "f1": [2.0**62, 1.5]}, m.Cmp("=", i1, f1), [True, False]),
    ("bigint against a double literal", {"i1": [16777217, 1]}, m.Cmp("<", i1, dbl(1.5)), [False, True]),
    ("a double plus a bigint", {"f1": [0.5]}, m.Arith("+", f1, ints(-(2**62))), [-(2.0**62)]),
    ("bigint with decimal compares exactly", {"i1": [2**62 + 1, 2**62]}, m.Cmp("=", i1, lit("decimal", Decimal(2**62) + Decimal("0.00"))), [False, True]),
    ("decimal against a negative integer", {"c1": [Decimal("-1.00"), Decimal("1.00")]}, m.Cmp("=", c1, ints(-1)), [True, False]),
    ("decimal against a negative decimal", {"c1": [Decimal("-604.05"), Decimal("-604.06")]}, m.Cmp("<", c1, lit("decimal", Decimal("-604.05"))), [False, True]),
    ("decimal equal to a negative decimal", {"c1": [Decimal("-604.05")]}, m.Cmp("=", c1, lit("decimal", Decimal("-604.05"))), [True]),
    ("a literal on the left of a comparison", {"i1": [5, 6, None]}, m.Cmp("=", ints(5), i1), [True, False, None]),
    ("a double literal on the left", {"f1": [2.0, NAN]}, m.Cmp("<", dbl(1.5), f1), [True, True]),
    ("NULL on the left", {"i1": [5]}, m.Cmp("=", lit("null", None), i1), [None]),
    ("a literal on the left of arithmetic", {"i1": [5, None]}, m.Arith("-", ints(10), i1), [5, None]),
    ("NaN equals NaN and is above infinity", {"f1": [NAN, NAN, INF], "f2": [NAN, INF, NAN]}, m.Cmp(">=", f1, f2), [True, True, False]),
    ("minus zero equals zero", {"f1": [-0.0]}, m.Cmp("=", f1, dbl(0.0)), [True]),
    ("IN with a NULL is NULL when nothing matches", {"i1": [1, 2, None]}, m.In(i1, [ints(1), lit("null", None)]), [True, None, None]),
    ("NOT IN with a NULL", {"i1": [1, 2]}, m.In(i1, [ints(1), lit("null", None)], negated=True), [False, None]),
    ("strings compare by UTF-8 bytes", {"s1": ["Z", "é", "a"]}, m.Cmp("<", s1, lit("string", "b")), [True, False, True]),
    ("LIKE escapes and one character per _", {"s1": ["a%", "ab", "😀"]}, m.Or(m.Like(s1, "a\\%"), m.Like(s1, "_")), [True, False, True]),
    ("ILIKE lowers both sides (final sigma)", {"s1": ["aΣ", "Σ"]}, m.Like(s1, "%Σ", case_insensitive=True), [False, True]),
    ("timestamp literals are UTC", {"t1": [datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)]}, m.Cmp("=", t1, lit("timestamp", datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC))), [True]),
    ("Kleene AND and OR", {"b1": [None, None], "b2": [False, True]}, m.Or(m.And(m.Col("b1", "boolean"), m.Col("b2", "boolean")), m.Col("b2", "boolean")), [False, True]),
    ("null-safe equality is never NULL", {"i1": [None, None, 1], "i2": [None, 1, 1]}, m.Cmp("<=>", i1, i2), [True, False, True]),
]


@pytest.mark.parametrize("name, cols, node, spark", RULES, ids=[r[0] for r in RULES])
def test_model_gives_sparks_answer(name, cols, node, spark):
    want = m.evaluate(node, rows_of(cols))
    if spark == ERR:
        assert want.error
    else:
        assert not want.error and not want.may_fail
        assert all(m.same_value(w, s) for w, s in zip(want.values, spark)), (want.values, spark)


@pytest.mark.parametrize("name, cols, node, spark", RULES, ids=[r[0] for r in RULES])
def test_evaluator_follows_rule(name, cols, node, spark):
    check(cols, node)
