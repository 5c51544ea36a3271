"""A small pure-Python reference model of Spark SQL row evaluation (Spark 4, ANSI mode on), for
the differential test of the row evaluator (tests/test_evaluator.py). It evaluates its own
expression tree (the node classes below), which also renders itself as SQL text: nothing here
uses delta_occ, so the model cannot inherit the evaluator's mistakes.

Every rule cites where Spark documents it:

[NULL]  NULL semantics, https://spark.apache.org/docs/latest/sql-ref-null-semantics.html:
        comparisons with a NULL operand are NULL, `<=>` is never NULL, AND/OR/NOT follow the
        three-valued truth tables, `x IN (a, b)` is `x = a OR x = b` (so a NULL in the list
        makes a non-match NULL), IS [NOT] NULL.
[NaN]   NaN semantics, https://spark.apache.org/docs/latest/sql-ref-datatypes.html#nan-semantics:
        NaN = NaN is true and NaN is larger than any other numeric value (so also +infinity).
        -0.0 = 0.0 holds because Spark compares doubles with Java's `==` before falling back
        to the total order (IEEE 754: the two zeros are equal).
[ANSI]  ANSI compliance, https://spark.apache.org/docs/latest/sql-ref-ansi-compliance.html:
        integer overflow in + - * and unary minus raises ARITHMETIC_OVERFLOW; division by zero
        raises DIVIDE_BY_ZERO (for `/` and `%`, also on doubles: Spark checks the divisor for
        zero before dividing); type promotion uses the least common type (bigint with double
        -> double; bigint with decimal -> decimal, compared exactly).
[OPS]   Built-in operators, https://spark.apache.org/docs/latest/api/sql/index.html:
        `expr1 / expr2` "always performs floating point division"; `expr1 % expr2` is the
        remainder of the division. Spark computes it with Java's `%`, whose result has the sign
        of the dividend (Java Language Specification §15.17.3): -7 % 3 = -1, 7 % -3 = 1.
[LIKE]  LIKE predicate, https://spark.apache.org/docs/latest/sql-ref-syntax-qry-select-like.html:
        `_` matches one character, `%` zero or more, `\\` escapes them (the default escape);
        ILIKE matches case-insensitively (Spark rewrites it as lower(str) LIKE lower(pattern)).
        In a string literal `\\%` and `\\_` keep their backslash, so the pattern sees it.
[STR]   Collations, https://spark.apache.org/docs/latest/sql-ref-collation.html: the default
        collation UTF8_BINARY compares strings byte by byte in UTF-8 ('Z' < 'a', non-ASCII after
        ASCII).
[LIT]   Literals, https://spark.apache.org/docs/latest/sql-ref-literals.html: DATE 'yyyy-mm-dd',
        TIMESTAMP 'yyyy-mm-dd hh:mm:ss[.us]' (read here as UTC, against a UTC timestamp column),
        `1.5E0` is a DOUBLE, `12.34` a DECIMAL, `12` an INT (promoted to BIGINT next to a bigint).
[INFER] In a filter, Spark's optimizer adds `IS NOT NULL` of every column that a top-level conjunct
        reaches through null-intolerant operators only (catalyst's InferFiltersFromConstraints
        with the NullIntolerant trait: comparisons other than `<=>`, arithmetic, unary minus,
        NOT, LIKE, casts; BETWEEN is parsed as two comparisons joined by AND), and applies it
        first: such a row cannot be selected, and the condition is never evaluated on it, so it
        raises no error there (`evaluate_filter`).
[ORDER] Scalar UDFs, "Evaluation order and null checking",
        https://spark.apache.org/docs/latest/sql-ref-functions-udf-scalar.html: Spark does not
        guarantee the order of evaluation of subexpressions, and AND/OR do not short-circuit
        left to right. So when an operand that fails is next to one that already decides the
        result (FALSE for AND, TRUE for OR, NULL for a null-propagating operator), both the
        error and the decided value are correct answers. The model marks such a row "soft".

Values: None is NULL, ERROR an evaluation error. Types: bigint, double, decimal, string, date,
timestamp, boolean, null."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import math
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


class _Error:
    def __repr__(self) -> str:
        return "ERROR"


ERROR = _Error()

#: (value or None or ERROR, soft): soft = an error is also a correct outcome for this row [ORDER]
Out = Tuple[Any, bool]
Row = Dict[str, Any]


# -- the expression tree -------------------------------------------------------------------------


class Node:
    """An expression; `type` is its SQL type."""

    def sql(self) -> str:
        raise NotImplementedError

    def ev(self, row: Row) -> Out:
        raise NotImplementedError


class Bool(Node):
    """A boolean expression."""

    type = "boolean"


@dataclasses.dataclass
class Col(Node):
    name: str
    type: str

    def sql(self) -> str:
        return self.name

    def ev(self, row: Row) -> Out:
        return row[self.name], False


@dataclasses.dataclass
class Lit(Node):
    type: str
    value: Any

    def sql(self) -> str:
        return render_literal(self.type, self.value)

    def ev(self, row: Row) -> Out:
        return self.value, False


@dataclasses.dataclass
class Arith(Node):
    op: str  # + - * / %
    left: Node
    right: Node

    @property
    def type(self) -> str:
        if self.op == "/" or "double" in (self.left.type, self.right.type):
            return "double"  # [OPS] `/` is floating point; [ANSI] bigint with double -> double
        return "bigint"

    def sql(self) -> str:
        return f"({self.left.sql()}) {self.op} ({self.right.sql()})"

    def ev(self, row: Row) -> Out:
        return strict(self.left.ev(row), self.right.ev(row), lambda a, b: arith(self.op, self.type, a, b))


@dataclasses.dataclass
class Neg(Node):
    arg: Node

    @property
    def type(self) -> str:
        return self.arg.type

    def sql(self) -> str:
        return f"-({self.arg.sql()})"

    def ev(self, row: Row) -> Out:
        v, soft = self.arg.ev(row)
        if v is ERROR or v is None:
            return v, soft
        if self.type == "bigint":
            return checked(-v), soft  # [ANSI] -(-2^63) overflows
        return -v, soft


@dataclasses.dataclass
class Cmp(Bool):
    op: str  # = != < <= > >= <=>
    left: Node
    right: Node

    def sql(self) -> str:
        return f"({self.left.sql()}) {self.op} ({self.right.sql()})"

    def ev(self, row: Row) -> Out:
        typ = common_type(self.left.type, self.right.type)
        if self.op == "<=>":  # [NULL] null-safe equality: both operands are always evaluated
            (a, sa), (b, sb) = self.left.ev(row), self.right.ev(row)
            if a is ERROR or b is ERROR:
                return ERROR, sa or sb
            if a is None or b is None:
                return a is None and b is None, sa or sb
            return compare(typ, a, b) == 0, sa or sb
        return strict(self.left.ev(row), self.right.ev(row), lambda a, b: holds(self.op, compare(typ, a, b)))


@dataclasses.dataclass
class And(Bool):
    left: Node
    right: Node

    def sql(self) -> str:
        return f"({self.left.sql()}) AND ({self.right.sql()})"

    def ev(self, row: Row) -> Out:
        return kleene(self.left.ev(row), self.right.ev(row), decides=False)


@dataclasses.dataclass
class Or(Bool):
    left: Node
    right: Node

    def sql(self) -> str:
        return f"({self.left.sql()}) OR ({self.right.sql()})"

    def ev(self, row: Row) -> Out:
        return kleene(self.left.ev(row), self.right.ev(row), decides=True)


@dataclasses.dataclass
class Not(Bool):
    arg: Node

    def sql(self) -> str:
        return f"NOT ({self.arg.sql()})"

    def ev(self, row: Row) -> Out:
        v, soft = self.arg.ev(row)
        return (v if v is ERROR or v is None else not v), soft  # [NULL] NOT NULL is NULL


@dataclasses.dataclass
class IsNull(Bool):
    arg: Node
    negated: bool = False

    def sql(self) -> str:
        return f"({self.arg.sql()}) IS {'NOT ' if self.negated else ''}NULL"

    def ev(self, row: Row) -> Out:
        v, soft = self.arg.ev(row)
        if v is ERROR:
            return ERROR, soft
        return (v is not None) if self.negated else (v is None), soft


@dataclasses.dataclass
class In(Bool):
    arg: Node
    items: List[Node]
    negated: bool = False

    def sql(self) -> str:
        items = ", ".join(i.sql() for i in self.items)
        return f"({self.arg.sql()}) {'NOT ' if self.negated else ''}IN ({items})"

    def ev(self, row: Row) -> Out:
        # [NULL] x IN (a, b, ...) is x = a OR x = b OR ...; NOT IN is its negation.
        out: Node = Cmp("=", self.arg, self.items[0])
        for item in self.items[1:]:
            out = Or(out, Cmp("=", self.arg, item))
        return (Not(out) if self.negated else out).ev(row)


@dataclasses.dataclass
class Between(Bool):
    arg: Node
    low: Node
    high: Node
    negated: bool = False

    def sql(self) -> str:
        return f"({self.arg.sql()}) {'NOT ' if self.negated else ''}BETWEEN ({self.low.sql()}) AND ({self.high.sql()})"

    def ev(self, row: Row) -> Out:
        # x BETWEEN a AND b is x >= a AND x <= b (Spark's `between` function documentation).
        out: Node = And(Cmp(">=", self.arg, self.low), Cmp("<=", self.arg, self.high))
        return (Not(out) if self.negated else out).ev(row)


@dataclasses.dataclass
class Like(Bool):
    arg: Node
    pattern: str
    case_insensitive: bool = False
    negated: bool = False

    def sql(self) -> str:
        op = ("NOT " if self.negated else "") + ("ILIKE" if self.case_insensitive else "LIKE")
        return f"({self.arg.sql()}) {op} {render_literal('string', self.pattern)}"

    def ev(self, row: Row) -> Out:
        v, soft = self.arg.ev(row)
        if v is ERROR or v is None:
            return v, soft
        hit = like(v, self.pattern, self.case_insensitive)
        return (not hit) if self.negated else hit, soft


# -- the rules -----------------------------------------------------------------------------------


def strict(x: Out, y: Out, f: Any) -> Out:
    """A null-propagating binary operator: NULL if either operand is NULL [NULL]. One failing
    operand fails it, unless the other is NULL: Spark may then skip the failing one [ORDER]."""
    (a, sa), (b, sb) = x, y
    soft = sa or sb
    if a is ERROR and b is ERROR:
        return ERROR, soft
    if a is ERROR or b is ERROR:
        other = b if a is ERROR else a
        return (None, True) if other is None else (ERROR, soft)
    if a is None or b is None:
        return None, soft
    return f(a, b), soft


def kleene(x: Out, y: Out, decides: bool) -> Out:
    """AND (decides=False) / OR (decides=True) in three-valued logic [NULL]: the deciding value
    on either side decides; otherwise NULL if either is NULL. An error next to the deciding value
    may or may not be raised [ORDER]."""
    (a, sa), (b, sb) = x, y
    soft = sa or sb
    if a is ERROR or b is ERROR:
        other = b if a is ERROR else a
        return (decides, True) if other is decides else (ERROR, soft)
    if a is decides or b is decides:
        return decides, soft
    if a is None or b is None:
        return None, soft
    return (not decides), soft


def checked(v: int) -> Any:
    """A bigint result, or ERROR when it does not fit in 64 bits [ANSI]."""
    return v if LONG_MIN <= v <= LONG_MAX else ERROR


def arith(op: str, typ: str, a: Any, b: Any) -> Any:
    if typ == "bigint":
        if op == "+":
            return checked(a + b)
        if op == "-":
            return checked(a - b)
        if op == "*":
            return checked(a * b)
        if op == "%":  # [ANSI] divide by zero; [OPS] sign of the dividend (truncated division)
            if b == 0:
                return ERROR
            r = abs(a) % abs(b)
            return -r if a < 0 else r
        raise ValueError(op)
    a, b = float(a), float(b)  # [ANSI] bigint operands are promoted to double
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        return ERROR if b == 0.0 else a / b  # [ANSI] DIVIDE_BY_ZERO also for 0.0 and -0.0
    if op == "%":
        if b == 0.0:
            return ERROR
        # Java's double remainder (JLS §15.17.3): NaN if either is NaN or the dividend is
        # infinite; the dividend if the divisor is infinite; else fmod (sign of the dividend).
        if math.isnan(a) or math.isnan(b) or math.isinf(a):
            return math.nan
        if math.isinf(b):
            return a
        return math.fmod(a, b)
    raise ValueError(op)


def common_type(a: str, b: str) -> str:
    """The type both operands of a comparison are brought to [ANSI]."""
    if a == b or b == "null":
        return a
    if a == "null":
        return b
    pair = {a, b}
    if pair == {"bigint", "double"} or pair == {"decimal", "double"}:
        return "double"
    if pair == {"bigint", "decimal"}:
        return "decimal"
    raise TypeError(f"the model does not compare {a} with {b}")


def compare(typ: str, a: Any, b: Any) -> int:
    """-1, 0 or 1 for two non-NULL values of `typ`."""
    if typ == "double":
        a, b = float(a), float(b)
        if math.isnan(a) or math.isnan(b):  # [NaN] NaN = NaN, NaN above everything else
            return int(math.isnan(a)) - int(math.isnan(b))
        # [NaN] -0.0 == 0.0 in Python as in Java's ==
    elif typ == "decimal":
        a, b = decimal.Decimal(a), decimal.Decimal(b)  # exact, also for bigint operands
    elif typ == "string":
        a, b = a.encode("utf-8"), b.encode("utf-8")  # [STR] byte order
    return (a > b) - (a < b)


def holds(op: str, c: int) -> bool:
    return {"=": c == 0, "!=": c != 0, "<": c < 0, "<=": c <= 0, ">": c > 0, ">=": c >= 0}[op]


def like(value: str, pattern: str, case_insensitive: bool) -> bool:
    """[LIKE] as a regular expression over characters (code points); `.` also matches a newline."""
    if case_insensitive:
        value, pattern = value.lower(), pattern.lower()
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            if i + 1 >= len(pattern) or pattern[i + 1] not in "\\%_":
                raise ValueError(f"the model has no rule for this escape in {pattern!r}")  # an error in Spark
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if c == "%" else "." if c == "_" else re.escape(c))
        i += 1
    return re.fullmatch("".join(out), value, re.DOTALL) is not None


# -- rendering literals as SQL text [LIT] ----------------------------------------------------------


def render_literal(typ: str, v: Any) -> str:
    if v is None:
        return "NULL"
    if typ == "bigint":
        assert v != LONG_MIN, "-2^63 has no bigint literal (it would be a decimal)"
        return str(v)
    if typ == "double":
        if math.isnan(v):
            return "CAST('NaN' AS DOUBLE)"
        if math.isinf(v):
            return "CAST('Infinity' AS DOUBLE)" if v > 0 else "CAST('-Infinity' AS DOUBLE)"
        text = repr(abs(v)).upper()  # '1.5' -> '1.5E0', '1E+300' stays; always a DOUBLE literal
        if "E" not in text:
            text += "E0"
        return ("-" if math.copysign(1.0, v) < 0 else "") + text
    if typ == "decimal":
        return format(v, "f")
    if typ == "string":
        assert "\\" not in v.replace("\\%", "").replace("\\_", ""), "a backslash would be an escape in Spark's string literal"
        return "'" + v.replace("'", "''") + "'"
    if typ == "date":
        return f"DATE '{v.isoformat()}'"
    if typ == "timestamp":
        return f"TIMESTAMP '{v.astimezone(datetime.timezone.utc).replace(tzinfo=None).isoformat(sep=' ')}'"
    if typ == "boolean":
        return "TRUE" if v else "FALSE"
    raise TypeError(typ)


# -- whole tables ----------------------------------------------------------------------------------


@dataclasses.dataclass
class Expected:
    """What Spark may answer for an expression on a table: an error (`error`), or the values per
    row, where `may_fail` says an error is also a correct answer [ORDER]."""

    error: bool
    values: Optional[List[Any]] = None
    may_fail: bool = False


def evaluate(node: Node, rows: Sequence[Row]) -> Expected:
    """Spark evaluates every row of a projection or a filter, so one failing row fails the query."""
    outs = [node.ev(r) for r in rows]
    if any(v is ERROR for v, _ in outs):
        return Expected(error=True)
    return Expected(error=False, values=[v for v, _ in outs], may_fail=any(s for _, s in outs))


def guard_columns(node: Node) -> List[str]:
    """[INFER] The columns a filter on ``node`` requires to be non-NULL before evaluating it."""
    if isinstance(node, And):
        return guard_columns(node.left) + guard_columns(node.right)
    if isinstance(node, Between) and not node.negated:
        return _null_intolerant(Cmp(">=", node.arg, node.low)) + _null_intolerant(Cmp("<=", node.arg, node.high))
    return _null_intolerant(node)


def _null_intolerant(node: Node) -> List[str]:
    if isinstance(node, Col):
        return [node.name]
    if isinstance(node, (Not, Neg, Like)):
        return _null_intolerant(node.arg)
    if isinstance(node, Cmp) and node.op != "<=>" or isinstance(node, Arith):
        return _null_intolerant(node.left) + _null_intolerant(node.right)  # type: ignore[attr-defined]
    return []


def evaluate_filter(node: Node, rows: Sequence[Row]) -> Expected:
    """A filter on ``node``: rows [INFER] drops first are not selected (None) and raise nothing;
    the others as ``evaluate``."""
    guard = guard_columns(node)
    passes = [all(r[c] is not None for c in guard) for r in rows]
    inner = evaluate(node, [r for r, p in zip(rows, passes) if p])
    if inner.error:
        return inner
    values = iter(inner.values or [])
    return Expected(error=False, values=[next(values) if p else None for p in passes], may_fail=inner.may_fail)


def same_value(want: Any, got: Any) -> bool:
    """Equal values of the same kind (bool, int, float, ...); NaN equals NaN."""
    if want is None or got is None:
        return want is None and got is None
    if isinstance(want, bool) or isinstance(got, bool):
        return isinstance(want, bool) and isinstance(got, bool) and want == got
    if isinstance(want, float):
        return isinstance(got, float) and (got == want or (math.isnan(got) and math.isnan(want)))
    if isinstance(want, int):
        return type(got) is int and got == want
    return type(got) is type(want) and got == want
