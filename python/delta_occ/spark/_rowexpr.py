"""The core's compiled row expression as a Spark Column: Spark selects (and computes SET values)
from the very tree the embedded engine and the conflict checker evaluate (``_core.RowExpr``),
so both engines select the same rows. Spark never parses the condition's text.

The tree (``RowExpr.tree_json``; its format is documented in the core's
``rust/core/src/rowexpr/export.rs``) is typed at every node and makes every implicit conversion
an explicit ``cast`` node, so each node is built here in exactly the core's types:

- literals are built from their typed values, never re-parsed (no session time zone, no ANSI
  cast of a literal);
- every node's result is cast to the tree's type where Spark's own result type could differ
  (functions, arithmetic), so the next node computes in the core's type;
- conversions that involve a time zone in Spark (timestamp to date, string or timestamp_ntz and
  back) are computed in UTC from microseconds, as the core does, whatever the session zone;
- arithmetic, casts and division are Spark's ANSI ones (an overflow, a bad cast and a zero
  divisor are errors, as in the core): Spark's ANSI mode is on by default, and the operations
  turn it on while they build and run their jobs (``ansi``).

A node this module does not know is a ``PredicateError`` naming it, never a guess.
"""

from __future__ import annotations

import contextlib
import datetime
import decimal
import json
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Union

import pyarrow as pa
from pyspark.errors import PySparkException
from pyspark.sql import Column

from .. import _core, _rows
from ..exceptions import InvalidArgumentError, PredicateError
from ._columns import col
from ._session import F, Session, session_conf

#: A column of the compile schema (by its name there) as a Spark Column of the rows at hand.
Resolver = Callable[[str], Column]

_ANSI = "spark.sql.ansi.enabled"
_EPOCH = datetime.date(1970, 1, 1)
#: Spark's error conditions for what the core reports as an evaluation error.
_EVALUATION_ERRORS = (
    "DIVIDE_BY_ZERO", "REMAINDER_BY_ZERO", "INTERVAL_DIVIDED_BY_ZERO", "ARITHMETIC_OVERFLOW", "BINARY_ARITHMETIC_OVERFLOW",
    "CAST_INVALID_INPUT", "CAST_OVERFLOW", "CAST_OVERFLOW_IN_TABLE_INSERT", "NUMERIC_VALUE_OUT_OF_RANGE", "DATETIME_OVERFLOW",
)
_MICROS_PER_DAY = 86_400_000_000
_COMPARISONS = ("=", "!=", "<", "<=", ">", ">=", "<=>")
_ARITHMETIC = ("+", "-", "*", "/", "%")
#: A timestamp text that ends in a zone offset (``Z``, ``+05:00``, ``-0800``).
_ZONED = r"\d:\d{2}(:\d{2}(\.\d*)?)?\s*([zZ]|[+-]\d{2}(:?\d{2})?)\s*$"


def _refuse(what: str) -> PredicateError:
    return PredicateError(f"{what} cannot be evaluated on Spark by delta-occ", reason="not evaluable on Spark", problem="invalid")


@contextlib.contextmanager
def ansi(spark: Session) -> Iterator[None]:
    """Spark's ANSI mode for the block (the core's arithmetic, casts and division are ANSI):
    a session that turned it off gets it back off afterwards."""
    if str(spark.conf.get(_ANSI, "true")).lower() == "true":
        yield
        return
    with session_conf(spark, **{_ANSI: "true"}):
        yield


@contextlib.contextmanager
def evaluating(what: str) -> Iterator[None]:
    """Spark's evaluation errors (zero divisor, overflow, bad cast) as the ``PredicateError`` the
    core raises for them."""
    try:
        yield
    except PySparkException as e:
        condition = e.getCondition() if hasattr(e, "getCondition") else e.getErrorClass()
        if condition not in _EVALUATION_ERRORS:
            raise
        message = str(e).split("\n")[0]
        raise PredicateError(f"cannot evaluate {what} on the rows: {message}", reason="evaluation failed", problem="evaluation") from e


class Compiled:
    """SQL text compiled by the core (``_rows.compile``: the embedded engine's compile, with its
    errors), with its tree for Spark."""

    def __init__(self, text: str, schema: pa.Schema, scopes: Optional[Sequence[_rows.Scope]] = None) -> None:
        self.expr: _core.RowExpr = _rows.compile(text, schema, scopes)
        self.text = text
        self._schema = schema
        self.tree: Dict[str, Any] = json.loads(self.expr.tree_json)

    @property
    def columns(self) -> List[str]:
        """The compile schema's columns it reads."""
        return list(self.expr.columns)

    def value_type(self) -> pa.DataType:
        """The Arrow type of its values (the embedded engine's)."""
        return _rows.value_type(self.expr, self._schema)

    def value(self, resolve: Resolver = col) -> Column:
        return to_column(self.tree, resolve)

    def condition(self, resolve: Resolver = col) -> Column:
        """TRUE where it holds, FALSE elsewhere (for negating it or keeping it as a value)."""
        return condition(self.tree, resolve)

    def filter(self, resolve: Resolver = col) -> Column:
        """For ``DataFrame.filter`` (NULL drops the row as FALSE does; no wrapper that would
        keep a plain comparison from being pushed down)."""
        return to_column(self.tree, resolve)


def compile_where(where: Optional[str], schema: pa.Schema) -> Optional[Compiled]:
    """A table condition (None: every row), compiled on the table schema as the embedded engine does."""
    if where is None:
        return None
    if not isinstance(where, str):
        raise InvalidArgumentError(f"where must be SQL text, got {type(where).__name__}")
    return Compiled(where, schema)


def to_column(node: Dict[str, Any], resolve: Resolver) -> Column:
    """The tree as a Spark Column; columns come from ``resolve``."""
    return _Builder(resolve).build(node)


def condition(node: Dict[str, Any], resolve: Resolver) -> Column:
    """A condition's tree as a Column that is TRUE where it holds and FALSE elsewhere (NULL does
    not hold: SQL's WHERE)."""
    return F.coalesce(to_column(node, resolve), F.lit(False))


# -- time zones: computed from microseconds and wall clocks, never the session's zone ------------

_DAY_UNITS = {"YEAR", "QUARTER", "MONTH", "WEEK"}
_MICRO_UNITS = {"DAY": _MICROS_PER_DAY, "HOUR": 3_600_000_000, "MINUTE": 60_000_000, "SECOND": 1_000_000, "MILLISECOND": 1_000, "MICROSECOND": 1}


def _ntz_epoch() -> Column:
    return F.lit("1970-01-01 00:00:00").cast("timestamp_ntz")  # no zone in a TIMESTAMP_NTZ cast


def _wall_from_micros(micros: Column) -> Column:
    """µs since 1970-01-01 00:00 of a wall clock as TIMESTAMP_NTZ."""
    return F.timestamp_add("MICROSECOND", micros, _ntz_epoch())


def _wall_micros(ntz: Column) -> Column:
    """A wall clock's µs since 1970-01-01 00:00, from its fields, which a TIMESTAMP_NTZ has
    without a zone (Spark's timestamp_diff and unix_micros go through the session zone, which
    shifts wall clocks in a DST gap)."""
    return (
        F.unix_date(ntz.cast("date")).cast("bigint") * F.lit(_MICROS_PER_DAY)
        + F.hour(ntz).cast("bigint") * F.lit(3_600_000_000)
        + F.minute(ntz).cast("bigint") * F.lit(60_000_000)
        + (F.date_part(F.lit("SECOND"), ntz) * F.lit(1_000_000)).cast("bigint")
    )


def _is_utc(zone: Optional[str]) -> bool:
    return zone is None or zone.upper() in ("UTC", "Z", "+00:00", "ETC/UTC")


def _utc_wall(ts: Column) -> Column:
    """An instant as its UTC wall clock (TIMESTAMP_NTZ)."""
    return _wall_from_micros(F.unix_micros(ts))


def _instant(ntz: Column) -> Column:
    """A UTC wall clock (TIMESTAMP_NTZ) as its instant."""
    return F.timestamp_micros(_wall_micros(ntz))


def _to_wall(ts: Column, zone: Optional[str]) -> Column:
    """An instant as the wall clock of ``zone`` (None: UTC)."""
    wall = _utc_wall(ts)
    return wall if _is_utc(zone) else F.convert_timezone(F.lit("UTC"), F.lit(zone), wall)


def _from_wall(ntz: Column, zone: Optional[str]) -> Column:
    """A wall clock of ``zone`` as its instant (java.time's rules in a gap or an overlap, as the
    core's)."""
    return _instant(ntz if _is_utc(zone) else F.convert_timezone(F.lit(zone), F.lit("UTC"), ntz))


def _cast(arg: Column, src: str, to: str, zone: Optional[str] = None) -> Column:
    """An ANSI cast in the core's terms: a zoned conversion in ``zone`` (the node's
    ``time_zone``; UTC without one), never the session's."""
    if src == to:
        return arg
    if src == "timestamp":
        if to in ("date", "string", "timestamp_ntz"):
            wall = _to_wall(arg, zone)
            return wall if to == "timestamp_ntz" else wall.cast(to)
        return arg.cast(to)
    if to == "timestamp":
        if src == "timestamp_ntz":
            return _from_wall(arg, zone)
        if src == "date":
            return _from_wall(arg.cast("timestamp_ntz"), zone)
        if src == "string":
            # A text with a zone offset names its instant; one without is a wall clock.
            zoned = arg.rlike(_ZONED)
            return F.when(zoned, arg.cast("timestamp")).otherwise(_from_wall(arg.cast("timestamp_ntz"), zone))
        if src == "void":
            return arg.cast(to)
        raise _refuse(f"CAST({src} AS timestamp)")
    return arg.cast(to)


def _date_trunc(unit: str, arg: Column, src: str, zone: Optional[str]) -> Column:
    """``date_trunc`` on the wall clock of ``zone`` (a TIMESTAMP) or on the wall clock itself."""
    wall = _to_wall(arg, zone) if src == "timestamp" else arg
    if unit in _DAY_UNITS:
        out = F.trunc(wall.cast("date"), unit).cast("timestamp_ntz")
    elif unit in _MICRO_UNITS:
        step = F.lit(_MICRO_UNITS[unit])
        m = _wall_micros(wall)
        out = _wall_from_micros(m - F.pmod(m, step))
    else:
        raise _refuse(f"date_trunc to {unit!r}")
    return _from_wall(out, zone) if src == "timestamp" else out


def _literal(kind: str, v: Any, scale: Optional[int], typ: str) -> Column:
    """A literal from its typed value (the tree's encoding), never from SQL text."""
    if kind == "boolean":
        return F.lit(bool(v))
    if kind == "date":
        return F.lit(_EPOCH + datetime.timedelta(days=int(v)))
    if kind == "timestamp":
        return F.timestamp_micros(F.lit(int(v)))  # an instant: no session time zone involved
    if kind == "timestamp_ntz":
        return F.timestamp_add("MICROSECOND", F.lit(int(v)), _ntz_epoch())
    if kind == "decimal":
        return F.lit(decimal.Decimal(v).scaleb(-int(scale or 0))).cast(typ)
    if kind == "binary":
        return F.lit(bytearray(v.encode()))
    if kind == "double":
        return F.lit(float(v)).cast(typ)  # NaN and infinities arrive as strings
    if kind == "long":
        return F.lit(int(v)).cast(typ)
    return F.lit(str(v))


# -- the tree ----------------------------------------------------------------------------------

class _Builder:
    def __init__(self, resolve: Resolver) -> None:
        self.resolve = resolve

    def build(self, n: Dict[str, Any]) -> Column:
        if "col" in n:
            c = self.resolve(n["col"])
            # In the type the core reads it as (a no-op Spark drops when the types agree).
            return c.cast(n["type"]) if n.get("type", "void") != "void" else c
        if "lit" in n:
            return self.literal(n)
        op = n.get("op")
        if op == "not":
            return ~self.build(n["arg"])
        if op in ("and", "or"):
            out = self.build(n["args"][0])
            for a in n["args"][1:]:
                out = (out & self.build(a)) if op == "and" else (out | self.build(a))
            return out
        if op in _COMPARISONS:
            return self.compare(op, n["left"], n["right"])
        if op == "is_null":
            return self.build(n["arg"]).isNull()
        if op == "is_not_null":
            return self.build(n["arg"]).isNotNull()
        if op in _ARITHMETIC:
            return self.arithmetic(op, n)
        if op == "neg":
            return -self.build(n["arg"])
        if op == "like":
            arg = self.build(n["arg"])
            hit = arg.ilike(n["pattern"]) if n.get("case_insensitive") else arg.like(n["pattern"])
            return ~hit if n.get("negated") else hit
        if op == "case":
            whens = n["whens"]
            if not whens:
                return self.build(n["else"])
            out = F.when(self.build(whens[0][0]), self.build(whens[0][1]))
            for c, v in whens[1:]:
                out = out.when(self.build(c), self.build(v))
            return out.otherwise(self.build(n["else"]))
        if op == "cast":
            return _cast(self.build(n["arg"]), n["arg"].get("type", ""), n["to"], n.get("time_zone"))
        if op == "fn":
            return self.function(n)
        if op == "field":
            return self.build(n["arg"]).getField(n["name"])
        raise _refuse(f"the row expression node {op!r}" if op else f"the row expression node {sorted(n)}")

    def function(self, n: Dict[str, Any]) -> Column:
        name, args = n["name"], n["args"]
        if not isinstance(name, str) or not name.replace("_", "").isalnum():
            raise _refuse(f"function {name!r}")
        if name == "date_trunc":
            unit = args[0].get("lit")
            if not isinstance(unit, str):
                raise _refuse("date_trunc with a unit that is not a literal")
            return _date_trunc(unit.upper(), self.build(args[1]), args[1].get("type", ""), n.get("time_zone"))
        if "time_zone" in n:
            raise _refuse(f"{name}() in a time zone")
        if name == "timestampadd":
            if args[0].get("lit") != "MICROSECOND":
                raise _refuse(f"timestampadd by {args[0].get('lit')!r}")
            count, base = self.build(args[1]).cast("bigint"), self.build(args[2])
            if args[2].get("type") == "timestamp":  # an instant plus µs: no zone involved
                return F.timestamp_micros(F.unix_micros(base) + count)
            return _wall_from_micros(_wall_micros(base) + count)
        return F.call_function(name, *[self.build(a) for a in args]).cast(n["type"])

    def literal(self, n: Dict[str, Any]) -> Column:
        kind, typ = n.get("kind"), n.get("type", "void")
        if kind == "null":
            return F.lit(None) if typ == "void" else F.lit(None).cast(typ)
        if kind not in ("boolean", "date", "timestamp", "timestamp_ntz", "decimal", "binary", "double", "long", "string"):
            raise _refuse(f"a literal of kind {kind!r} ({n.get('reason', typ)})")
        return _literal(kind, n["lit"], n.get("scale"), typ)

    def operand(self, n: Dict[str, Any]) -> Column:
        """A comparison operand. A float column compared directly goes through an identity
        product, which keeps the comparison away from parquet filter pushdown: parquet writers
        other than parquet-mr leave NaN out of their statistics, so a pushed-down `x > 1` would
        drop row groups whose NaN rows Spark's order selects."""
        c = self.build(n)
        if "col" in n and n.get("type") in ("float", "double"):
            return c * F.lit(1.0).cast(n["type"])  # keeps -0.0, NaN and infinities
        return c

    def compare(self, op: str, left: Dict[str, Any], right: Dict[str, Any]) -> Column:
        a, b = self.operand(left), self.operand(right)
        if op == "<=>":
            return a.eqNullSafe(b)
        return {"=": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]

    def arithmetic(self, op: str, n: Dict[str, Any]) -> Column:
        a, b = self.build(n["left"]), self.build(n["right"])
        out: Union[Column, Any] = {"+": a + b, "-": a - b, "*": a * b, "/": a / b, "%": a % b}[op]
        return out.cast(n["type"])


__all__ = ["Compiled", "Resolver", "ansi", "compile_where", "condition", "evaluating", "to_column"]
