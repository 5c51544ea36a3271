"""Row-level evaluation of a resolved predicate: the JSON form the Rust core produces, turned
into a pyarrow compute expression with SQL semantics (a row is kept only when TRUE)."""

from __future__ import annotations

import datetime
import decimal
import math
from typing import Any, Dict

import pyarrow as pa
import pyarrow.compute as pc

from .exceptions import PredicateError

_EPOCH = datetime.date(1970, 1, 1)


def _literal(node: Dict[str, Any], target: "pa.DataType | None") -> Any:
    kind, v = node["kind"], node["lit"]
    if kind == "null":
        return pa.scalar(None, type=target or pa.null())
    if kind == "date":
        value: Any = _EPOCH + datetime.timedelta(days=v)
        return pa.scalar(value, type=pa.date32())
    if kind in ("timestamp", "timestamp_ntz"):
        tz = "UTC" if kind == "timestamp" else None
        return pa.scalar(v, type=pa.timestamp("us", tz=tz))
    if kind == "decimal":
        d = decimal.Decimal(v).scaleb(-node["scale"])
        return pa.scalar(d, type=target if target is not None and pa.types.is_decimal(target) else None)
    if kind == "binary":
        return pa.scalar(v.encode(), type=pa.binary())
    if kind == "double":
        v = float(v)  # NaN and infinities arrive as strings
    scalar = pa.scalar(v)
    if target is not None and kind in ("long", "double") and (pa.types.is_integer(target) or pa.types.is_floating(target)):
        if kind == "long" or pa.types.is_floating(target):
            try:
                return scalar.cast(target)
            except (pa.ArrowInvalid, OverflowError):
                return scalar
    return scalar


_COMPARE = {"=": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal, ">": pc.greater, ">=": pc.greater_equal}


def compare(op: str, left: Any, right: Any, left_float: bool, right_float: bool) -> Any:
    """SQL comparison (`=`, `!=`, `<`, `<=`, `>`, `>=`) with Spark's order on floating point: NaN
    equals NaN and is above every other value (pyarrow compares IEEE-style, where every comparison
    with NaN is false). The Rust core's file skipping and negation rules assume Spark's order, so
    reading and DML must evaluate rows the same way. NULL still propagates."""
    out = _COMPARE[op](left, right)
    if not (left_float or right_float):
        return out
    ln = _is_nan(left) if left_float else pc.scalar(False)
    rn = _is_nan(right) if right_float else pc.scalar(False)
    # "NaN is above x" holds only for a non-null x: against NULL the answer stays NULL.
    lv, rv = _is_valid(left), _is_valid(right)
    if op == "=":
        return pc.or_kleene(out, pc.and_kleene(ln, rn))
    if op == "!=":
        return pc.and_kleene(out, pc.invert(pc.and_kleene(ln, rn)))
    if op == ">":
        return pc.or_kleene(out, pc.and_kleene(pc.and_kleene(ln, rv), pc.invert(rn)))
    if op == ">=":
        return pc.or_kleene(out, pc.and_kleene(ln, rv))
    if op == "<":
        return pc.or_kleene(out, pc.and_kleene(pc.and_kleene(rn, lv), pc.invert(ln)))
    return pc.or_kleene(out, pc.and_kleene(rn, lv))  # <=


def _is_valid(x: Any) -> pc.Expression:
    if isinstance(x, pc.Expression):
        return pc.is_valid(x)
    return pc.scalar(x.is_valid if isinstance(x, pa.Scalar) else x is not None)


def _is_nan(x: Any) -> pc.Expression:
    """`is_nan` as an expression, also for a literal (pyarrow would evaluate that eagerly)."""
    if isinstance(x, pc.Expression):
        return pc.is_nan(x)
    v = x.as_py() if isinstance(x, pa.Scalar) else x
    return pc.scalar(pa.scalar(None if v is None else isinstance(v, float) and math.isnan(v), type=pa.bool_()))


def is_float_type(t: "pa.DataType | None") -> bool:
    return t is not None and pa.types.is_floating(t)


def to_expression(node: Dict[str, Any], schema: pa.Schema) -> pc.Expression:
    def typ(n: Dict[str, Any]) -> "pa.DataType | None":
        return schema.field(n["col"]).type if "col" in n else None

    def operand(n: Dict[str, Any], other: "Dict[str, Any] | None" = None) -> Any:
        if "col" in n:
            return pc.field(n["col"])
        if "lit" in n:
            return _literal(n, typ(other) if other else None)
        return build(n)

    def is_float(n: Dict[str, Any], built: Any) -> bool:
        if "col" in n:
            return is_float_type(typ(n))
        return isinstance(built, pa.Scalar) and is_float_type(built.type)

    def build(n: Dict[str, Any]) -> pc.Expression:
        if "lit" in n:
            return pc.scalar(n["lit"] is True) if n["kind"] == "boolean" else pc.scalar(False)
        op = n.get("op")
        if op == "and":
            out = build(n["args"][0])
            for a in n["args"][1:]:
                out = out & build(a)
            return out
        if op == "or":
            out = build(n["args"][0])
            for a in n["args"][1:]:
                out = out | build(a)
            return out
        if op in ("=", "!=", "<", "<=", ">", ">=", "<=>"):
            left, right = operand(n["left"], n["right"]), operand(n["right"], n["left"])
            floats = is_float(n["left"], left), is_float(n["right"], right)
            if op == "<=>":
                both_null = pc.is_null(left) & pc.is_null(right)
                equal = compare("=", left, right, *floats)
                return pc.if_else(both_null, pc.scalar(True), pc.coalesce(equal, pc.scalar(False)))
            return compare(op, left, right, *floats)
        if op == "is_null":
            return pc.is_null(operand(n["arg"]))
        if op == "is_not_null":
            return pc.is_valid(operand(n["arg"]))
        if op == "in":
            arg = operand(n["arg"])
            values = [v for v in n["values"] if v["kind"] != "null"]
            has_null = len(values) != len(n["values"])
            target = typ(n["arg"])
            arr = pa.array([_literal(v, target).as_py() for v in values], type=target)
            hit = pc.is_in(arg, value_set=arr)
            if n["negated"]:
                return pc.scalar(False) if has_null else (~hit & pc.is_valid(arg))
            return hit
        if op == "like":
            hit = pc.match_like(operand(n["arg"]), n["pattern"], ignore_case=n["case_insensitive"])
            return ~hit if n["negated"] else hit
        if op == "opaque":
            raise PredicateError(
                f"`{n['sql']}` cannot be evaluated on rows by delta-occ (functions, arithmetic and nested "
                "fields are only used for file skipping)",
                reason="not evaluable on rows",
            )
        raise PredicateError(f"unknown predicate node {n!r}", reason="internal")

    return build(node)
