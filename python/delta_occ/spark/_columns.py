"""Schemas and row conditions for Spark: the Delta schema as Spark types (logical and physical
names), and the core's resolved predicate as a Spark Column that selects exactly the rows the
embedded engine selects.

The predicate arrives as the JSON tree the core produces (the same tree the embedded reader
evaluates). Spark SQL already has the semantics Delta is defined by: three-valued logic, NaN equal
to NaN and above every other value, binary string order. What needs care is the literals: they are
built from the tree's typed values, never re-parsed by Spark, so a timestamp does not depend on the
session time zone and ANSI mode never casts a literal.
"""

from __future__ import annotations

import datetime
import decimal
import json
from typing import Any, Dict, List, Optional

from pyspark.sql import Column
from pyspark.sql.types import DataType, DoubleType, FloatType, StructField, StructType

from .. import _core
from ..exceptions import PredicateError
from ._session import F

_EPOCH = datetime.date(1970, 1, 1)


def quote(name: str) -> str:
    """A column name for ``F.col`` / SQL text: backticks, so dots and spaces are literal."""
    return "`" + name.replace("`", "``") + "`"


def col(name: str) -> Column:
    return F.col(quote(name))


# -- schemas -----------------------------------------------------------------------------------


def logical_schema(schema_json: str) -> StructType:
    """The table schema as Spark types with logical names (Delta's schema JSON is Spark's)."""
    return StructType.fromJson(_strip(json.loads(schema_json)))


def physical_schema(schema_json: str, mode: str) -> StructType:
    """The schema the data files hold: physical names at every level under column mapping, and
    the field id (id mode) as `parquet.field.id` metadata, which Spark's parquet writer puts into
    the file (the core's rule, ``_core.spark_physical_schema_json``)."""
    return StructType.fromJson(json.loads(_core.spark_physical_schema_json(schema_json, mode)))


def _strip(t: Any) -> Any:
    """Drop Delta's field metadata (column mapping keys) from a schema tree."""
    if isinstance(t, dict):
        out = {k: _strip(v) for k, v in t.items() if k != "metadata"}
        if "name" in t and "type" in t:
            out["metadata"] = {}
        return out
    if isinstance(t, list):
        return [_strip(v) for v in t]
    return t


def field(schema: StructType, name: str) -> StructField:
    for f in schema.fields:
        if f.name == name:
            return f
    raise KeyError(name)


# -- predicates --------------------------------------------------------------------------------


def _literal(node: Dict[str, Any], other_type: Optional[DataType]) -> Column:
    kind, v = node["kind"], node["lit"]
    if kind == "null":
        return F.lit(None).cast(other_type) if other_type is not None else F.lit(None)
    if kind == "boolean":
        return F.lit(bool(v))
    if kind == "date":
        return F.lit(_EPOCH + datetime.timedelta(days=v))
    if kind == "timestamp":
        return F.timestamp_micros(F.lit(int(v)))  # an instant: no session time zone involved
    if kind == "timestamp_ntz":
        wall = datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=int(v))
        return F.expr(f"TIMESTAMP_NTZ '{wall.isoformat(sep=' ')}'")
    if kind == "decimal":
        return F.lit(decimal.Decimal(v).scaleb(-node["scale"]))
    if kind == "binary":
        return F.lit(bytearray(v.encode()))
    if kind == "double":
        return F.lit(float(v)).cast("double")  # NaN and infinities arrive as strings
    if kind == "long":
        return F.lit(int(v)).cast("bigint")
    if kind == "string":
        return F.lit(str(v))
    raise PredicateError(f"literal of kind {kind!r} is not supported on Spark", reason="internal", problem="invalid")


def to_column(node: Dict[str, Any], schema: StructType) -> Column:
    """The resolved predicate as a Spark Column over logical column names."""

    def typ(n: Dict[str, Any]) -> Optional[DataType]:
        return field(schema, n["col"]).dataType if "col" in n else None

    def operand(n: Dict[str, Any], other: Optional[Dict[str, Any]] = None) -> Column:
        if "col" in n:
            c = col(n["col"])
            if isinstance(typ(n), (FloatType, DoubleType)):
                # Keep float comparisons away from parquet filter pushdown: parquet writers other
                # than parquet-mr leave NaN out of their statistics, so a pushed-down `x > 1`
                # would drop row groups whose NaN rows Spark's order selects.
                c = c + F.lit(0.0)
            return c
        if "lit" in n:
            return _literal(n, typ(other) if other else None)
        return build(n)

    def build(n: Dict[str, Any]) -> Column:
        if "lit" in n:
            return F.lit(n["lit"] is True) if n["kind"] == "boolean" else F.lit(False)
        op = n.get("op")
        if op in ("and", "or"):
            out = build(n["args"][0])
            for a in n["args"][1:]:
                out = (out & build(a)) if op == "and" else (out | build(a))
            return out
        if op in ("=", "!=", "<", "<=", ">", ">=", "<=>"):
            left, right = operand(n["left"], n["right"]), operand(n["right"], n["left"])
            if op == "<=>":
                return left.eqNullSafe(right)
            return {
                "=": left == right,
                "!=": left != right,
                "<": left < right,
                "<=": left <= right,
                ">": left > right,
                ">=": left >= right,
            }[op]
        if op == "is_null":
            return operand(n["arg"]).isNull()
        if op == "is_not_null":
            return operand(n["arg"]).isNotNull()
        if op == "in":
            arg = operand(n["arg"])
            values: List[Column] = [_literal(v, typ(n["arg"])) for v in n["values"]]
            hit = arg.isin(*values)
            return ~hit if n["negated"] else hit
        if op == "like":
            arg = operand(n["arg"])
            hit = arg.ilike(n["pattern"]) if n["case_insensitive"] else arg.like(n["pattern"])
            return ~hit if n["negated"] else hit
        if op == "opaque":
            raise PredicateError(
                f"`{n['sql']}` cannot be evaluated on rows by delta-occ (functions, arithmetic and nested "
                "fields are only used for file skipping)",
                reason="not evaluable on rows",
                problem="invalid",
            )
        raise PredicateError(f"unknown predicate node {n!r}", reason="internal", problem="invalid")

    return build(node)


def selected(cond: Optional[Column]) -> Column:
    """TRUE where the condition holds; NULL counts as not holding (SQL's WHERE)."""
    return F.lit(True) if cond is None else F.coalesce(cond, F.lit(False))
