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
import json
from typing import Any, Callable, Dict, Iterator, List, Union

from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F

from ..exceptions import PredicateError
from ._columns import _literal

#: A column of the compile schema (by its name there) as a Spark Column of the rows at hand.
Resolver = Callable[[str], Column]

_ANSI = "spark.sql.ansi.enabled"
_MICROS_PER_DAY = 86_400_000_000
_COMPARISONS = ("=", "!=", "<", "<=", ">", ">=", "<=>")
_ARITHMETIC = ("+", "-", "*", "/", "%")
#: A timestamp text that ends in a zone offset (``Z``, ``+05:00``, ``-0800``).
_ZONED = r"\d:\d{2}(:\d{2}(\.\d*)?)?\s*([zZ]|[+-]\d{2}(:?\d{2})?)\s*$"


def _refuse(what: str) -> PredicateError:
    return PredicateError(f"{what} cannot be evaluated on Spark by delta-occ", reason="not evaluable on Spark", problem="invalid")


@contextlib.contextmanager
def ansi(spark: SparkSession) -> Iterator[None]:
    """Spark's ANSI mode for the block (the core's arithmetic, casts and division are ANSI):
    a session that turned it off gets it back off afterwards."""
    from ._scan import session_conf

    if str(spark.conf.get(_ANSI, "true")).lower() == "true":
        yield
        return
    with session_conf(spark, **{_ANSI: "true"}):
        yield


def tree(expr: Any) -> Dict[str, Any]:
    """A compiled ``_core.RowExpr``'s tree (parsed JSON)."""
    out: Dict[str, Any] = json.loads(expr.tree_json)
    return out


def to_column(node: Dict[str, Any], resolve: Resolver) -> Column:
    """The tree as a Spark Column; columns come from ``resolve``."""
    return _Builder(resolve).build(node)


def condition(node: Dict[str, Any], resolve: Resolver) -> Column:
    """A condition's tree as a Column that is TRUE where it holds and FALSE elsewhere (NULL does
    not hold: SQL's WHERE)."""
    return F.coalesce(to_column(node, resolve), F.lit(False))


def columns(node: Any) -> List[str]:
    """The columns a tree reads, in first-use order."""
    out: List[str] = []

    def walk(n: Any) -> None:
        if isinstance(n, dict):
            if "col" in n and n["col"] not in out:
                out.append(n["col"])
            for v in n.values():
                walk(v)
        elif isinstance(n, list):
            for v in n:
                walk(v)

    walk(node)
    return out


# -- time zones: everything in UTC, from microseconds ------------------------------------------

def _ntz_epoch() -> Column:
    return F.lit("1970-01-01 00:00:00").cast("timestamp_ntz")  # no zone in a TIMESTAMP_NTZ cast


def _utc_wall(ts: Column) -> Column:
    """An instant as its UTC wall clock (TIMESTAMP_NTZ)."""
    return F.timestamp_add("MICROSECOND", F.unix_micros(ts), _ntz_epoch())


def _instant(ntz: Column) -> Column:
    """A UTC wall clock (TIMESTAMP_NTZ) as its instant."""
    # From its fields, which a TIMESTAMP_NTZ has without a zone (Spark's timestamp_diff and
    # unix_micros go through the session zone, which shifts wall clocks in a DST gap).
    micros = (
        F.unix_date(ntz.cast("date")).cast("bigint") * F.lit(_MICROS_PER_DAY)
        + F.hour(ntz).cast("bigint") * F.lit(3_600_000_000)
        + F.minute(ntz).cast("bigint") * F.lit(60_000_000)
        + (F.date_part(F.lit("SECOND"), ntz) * F.lit(1_000_000)).cast("bigint")
    )
    return F.timestamp_micros(micros)


def _cast(arg: Column, src: str, to: str) -> Column:
    """An ANSI cast in the core's terms: time zones are UTC."""
    if src == to:
        return arg
    if src == "timestamp":
        if to in ("date", "string", "timestamp_ntz"):
            wall = _utc_wall(arg)
            return wall if to == "timestamp_ntz" else wall.cast(to)
        return arg.cast(to)
    if to == "timestamp":
        if src == "timestamp_ntz":
            return _instant(arg)
        if src == "date":
            return F.timestamp_micros(F.unix_date(arg).cast("bigint") * F.lit(_MICROS_PER_DAY))
        if src == "string":
            # A text with a zone offset names its instant; one without is a UTC wall clock.
            zoned = arg.rlike(_ZONED)
            return F.when(zoned, arg.cast("timestamp")).otherwise(_instant(arg.cast("timestamp_ntz")))
        if src == "void":
            return arg.cast(to)
        raise _refuse(f"CAST({src} AS timestamp)")
    return arg.cast(to)


# -- the tree ----------------------------------------------------------------------------------

class _Builder:
    def __init__(self, resolve: Resolver) -> None:
        self.resolve = resolve

    def build(self, n: Dict[str, Any]) -> Column:
        if "col" in n:
            return self.resolve(n["col"])
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
            return _cast(self.build(n["arg"]), n["arg"].get("type", ""), n["to"])
        if op == "fn":
            name = n["name"]
            if not isinstance(name, str) or not name.replace("_", "").isalnum():
                raise _refuse(f"function {name!r}")
            return F.call_function(name, *[self.build(a) for a in n["args"]]).cast(n["type"])
        if op == "field":
            return self.build(n["arg"]).getField(n["name"])
        raise _refuse(f"the row expression node {op!r}" if op else f"the row expression node {sorted(n)}")

    def literal(self, n: Dict[str, Any]) -> Column:
        kind, typ = n.get("kind"), n.get("type", "void")
        if kind == "null":
            return F.lit(None) if typ == "void" else F.lit(None).cast(typ)
        if kind not in ("boolean", "date", "timestamp", "timestamp_ntz", "decimal", "binary", "double", "long", "string"):
            raise _refuse(f"a literal of kind {kind!r} ({n.get('reason', typ)})")
        c = _literal(n, None)
        return c if kind in ("boolean", "date", "timestamp", "timestamp_ntz", "binary", "string") else c.cast(typ)

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


__all__ = ["Resolver", "ansi", "columns", "condition", "to_column", "tree"]
