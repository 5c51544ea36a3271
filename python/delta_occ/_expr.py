"""SQL value expressions on rows: the JSON tree the Rust core parses (with sqlparser) turned into
a pyarrow compute expression. Columns are resolved by a caller-supplied function, so MERGE can
reference the target and the source by alias."""

from __future__ import annotations

import datetime
import decimal
import json
from typing import Any, Callable, Dict, Optional

import pyarrow as pa
import pyarrow.compute as pc

from . import _core
from ._predicate import compare, is_float_type
from .exceptions import PredicateError

#: (column path parts) -> (field name in the evaluated table, its arrow type)
Resolver = Callable[[list], "tuple[str, pa.DataType]"]

_CAST_TYPES = {
    "bigint": pa.int64(), "long": pa.int64(), "int": pa.int32(), "integer": pa.int32(), "smallint": pa.int16(),
    "tinyint": pa.int8(), "double": pa.float64(), "float": pa.float32(), "real": pa.float32(),
    "string": pa.string(), "varchar": pa.string(), "text": pa.string(), "boolean": pa.bool_(),
    "date": pa.date32(), "timestamp": pa.timestamp("us", tz="UTC"), "timestamp_ntz": pa.timestamp("us"),
}

_FUNCTIONS: Dict[str, Callable[..., Any]] = {
    "upper": pc.utf8_upper, "lower": pc.utf8_lower, "abs": pc.abs, "length": pc.utf8_length,
    "trim": pc.utf8_trim_whitespace, "round": pc.round, "floor": pc.floor, "ceil": pc.ceil,
    "coalesce": pc.coalesce, "concat": lambda *a: pc.binary_join_element_wise(*a, ""),
}


def parse(text: str) -> dict:
    if not isinstance(text, str):
        raise PredicateError(f"expected SQL text, got {type(text).__name__}", reason="not text")
    return json.loads(_core.expression_json(text))


def columns_of(tree: Any) -> list:
    """Every column reference (list of name parts) in a tree."""
    out: list = []

    def walk(n: Any) -> None:
        if isinstance(n, dict):
            if "col" in n:
                out.append(n["col"])
            for v in n.values():
                walk(v)
        elif isinstance(n, list):
            for v in n:
                walk(v)

    walk(tree)
    return out


def _literal(n: dict, target: Optional[pa.DataType]) -> Any:
    kind, v = n["kind"], n["lit"]
    if kind == "null":
        return pa.scalar(None, type=target or pa.null())
    if kind == "boolean":
        return pa.scalar(bool(v))
    if kind == "number":
        if target is not None and (pa.types.is_decimal(target) or pa.types.is_floating(target) or pa.types.is_integer(target)):
            try:
                if pa.types.is_decimal(target):
                    return pa.scalar(decimal.Decimal(v)).cast(target)
                return pa.scalar(float(v) if pa.types.is_floating(target) else int(v)).cast(target)
            except (ValueError, pa.ArrowInvalid, decimal.InvalidOperation):
                pass
        if any(c in v for c in ".eE"):
            return pa.scalar(float(v))
        return pa.scalar(int(v), type=pa.int64())
    if kind == "date":
        return pa.scalar(datetime.date.fromisoformat(v))
    if kind in ("timestamp", "timestamp_ntz"):
        typ = pa.timestamp("us", tz="UTC" if kind == "timestamp" else None)
        try:
            return _timestamp(v, typ)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise PredicateError(f"literal {v!r} cannot be read as {typ}: {e}", reason="bad literal") from e
    # string
    if target is not None and not (pa.types.is_string(target) or pa.types.is_large_string(target)):
        try:
            if pa.types.is_timestamp(target):
                return _timestamp(v, target)
            return pa.scalar(v).cast(target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise PredicateError(f"literal {v!r} cannot be read as {target}: {e}", reason="bad literal") from e
    return pa.scalar(v)


def _timestamp(text: str, typ: pa.DataType) -> pa.Scalar:
    """A timestamp literal; one without a zone offset is read as UTC for a zoned type, as the
    core reads it for file skipping and `to_pyarrow(where=...)`."""
    try:
        return pa.scalar(text).cast(typ)
    except pa.ArrowInvalid:
        if typ.tz is None:
            raise
        return pa.scalar(text).cast(pa.timestamp(typ.unit)).cast(typ)


def as_expression(x: Any) -> pc.Expression:
    if isinstance(x, pc.Expression):
        return x
    return pc.scalar(x)


def _cast(x: Any, t: pa.DataType) -> pc.Expression:
    return as_expression(x).cast(t)


def to_expression(tree: dict, resolve: Resolver) -> pc.Expression:
    """Build the expression. SQL semantics: NULL propagates; AND/OR are Kleene."""

    def typ(n: dict) -> Optional[pa.DataType]:
        if "col" in n:
            return resolve(n["col"])[1]
        if n.get("op") == "cast":
            return _CAST_TYPES.get(n["type"])
        return None

    def val(n: dict, other: Optional[dict] = None) -> Any:
        if "col" in n:
            return pc.field(resolve(n["col"])[0])
        if "lit" in n:
            return _literal(n, typ(other) if other is not None else None)
        return build(n)

    def floating(n: dict, built: Any) -> bool:
        """Whether a value is floating point (so comparisons use Spark's NaN order)."""
        if isinstance(built, pa.Scalar):
            return is_float_type(built.type)
        if "lit" in n:
            return n["kind"] == "number" and any(c in n["lit"] for c in ".eE")
        if "col" in n or n.get("op") == "cast":
            return is_float_type(typ(n))
        op = n.get("op")
        if op == "/":
            return True
        if op in ("+", "-", "*", "%", "neg") or (op == "fn" and n.get("name") in ("abs", "round", "floor", "ceil", "coalesce")):
            return any(floating(a, None) for a in n.get("args", []))
        if op == "case":
            results = [res for _, res in n["when"]] + ([n["else"]] if n.get("else") is not None else [])
            return any(floating(r, None) for r in results)
        return False

    def cmp(op: str, a: dict, b: dict) -> Any:
        for c, lit in ((a, b), (b, a)):  # as the core refuses it in a where text
            if "col" in c and lit.get("kind") == "number" and pa.types.is_string(typ(c)):
                name = ".".join(c["col"])
                raise PredicateError(f"cannot compare column {name} of type string with the number {lit['lit']}", reason="type mismatch")
        left, right = val(a, b), val(b, a)
        return compare(op, left, right, floating(a, left), floating(b, right))

    def build(n: dict) -> Any:
        if "col" in n or "lit" in n:
            return val(n)
        op, args = n["op"], n.get("args", [])
        if op in ("and", "or"):
            a, b = build(args[0]), build(args[1])
            return pc.and_kleene(a, b) if op == "and" else pc.or_kleene(a, b)
        if op == "not":
            return pc.invert(build(args[0]))
        if op == "neg":
            return pc.negate(val(args[0]))
        if op in ("=", "!=", "<", "<=", ">", ">=", "<=>"):
            if op == "<=>":
                left, right = val(args[0], args[1]), val(args[1], args[0])
                both = pc.and_kleene(pc.is_null(left), pc.is_null(right))
                return pc.if_else(both, pa.scalar(True), pc.coalesce(cmp("=", args[0], args[1]), pa.scalar(False)))
            return cmp(op, args[0], args[1])
        if op in ("+", "-", "*", "/", "%"):
            left, right = val(args[0], args[1]), val(args[1], args[0])
            if op == "/":
                return pc.divide(_cast(left, pa.float64()), _cast(right, pa.float64()))
            if op == "%":
                return pc.subtract(left, pc.multiply(pc.floor(pc.divide(_cast(left, pa.float64()), _cast(right, pa.float64()))), right))
            return {"+": pc.add_checked, "-": pc.subtract_checked, "*": pc.multiply_checked}[op](left, right)
        if op == "||":
            return pc.binary_join_element_wise(_cast(val(args[0]), pa.string()), _cast(val(args[1]), pa.string()), "")
        if op == "is_null":
            return pc.is_null(val(args[0]))
        if op == "is_not_null":
            return pc.is_valid(val(args[0]))
        if op == "in":
            hits = [cmp("=", args[0], a) for a in args[1:]]
            out = hits[0]
            for h in hits[1:]:
                out = pc.or_kleene(out, h)
            return pc.invert(out) if n.get("negated") else out
        if op == "between":
            out = pc.and_kleene(cmp(">=", args[0], args[1]), cmp("<=", args[0], args[2]))
            return pc.invert(out) if n.get("negated") else out
        if op == "like":
            pattern = args[1]
            if "lit" not in pattern or pattern["kind"] != "string":
                raise PredicateError("LIKE needs a string literal pattern", reason="unsupported")
            hit = pc.match_like(val(args[0]), pattern["lit"], ignore_case=bool(n.get("case_insensitive")))
            return pc.invert(hit) if n.get("negated") else hit
        if op == "case":
            result = val(n["else"]) if n.get("else") is not None else pa.scalar(None)
            for cond, res in reversed(n["when"]):
                c = build(cond) if n.get("operand") is None else cmp("=", n["operand"], cond)
                result = pc.if_else(pc.coalesce(c, pa.scalar(False)), val(res), result)
            return result
        if op == "cast":
            target = _CAST_TYPES.get(n["type"])
            if target is None and n["type"].startswith("decimal"):
                p, s = (int(x) for x in n["type"][n["type"].index("(") + 1 : -1].split(","))
                target = pa.decimal128(p, s)
            if target is None:
                raise PredicateError(f"CAST to {n['type']} is not supported", reason="unsupported")
            return _cast(val(args[0]), target)
        if op == "fn":
            fn = _FUNCTIONS.get(n["name"])
            if fn is None:
                raise PredicateError(
                    f"function {n['name']}() is not supported by the embedded engine (supported: {', '.join(sorted(_FUNCTIONS))})",
                    reason="unsupported function",
                )
            return fn(*[val(a) for a in args])
        raise PredicateError(f"unsupported expression node {op!r}", reason="unsupported")

    return as_expression(build(tree))


def evaluate(table: pa.Table, exprs: Dict[str, Any], what: Optional[str] = None) -> pa.Table:
    """Evaluate named expressions over a table (one row per input row). Evaluation errors become
    PredicateError naming `what` (default: the expressions' names)."""
    if table.num_rows == 0:
        return pa.table({k: pa.array([], pa.null()) for k in exprs})
    # Imported here: pyarrow.dataset pulls in pandas, 0.3 s of `import delta_occ` otherwise.
    import pyarrow.dataset as ds

    try:
        return ds.dataset(table).to_table(columns=exprs)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
        # Overflow in checked arithmetic, a string that is not a number, an unsupported cast...
        what = what or "the value of " + ", ".join(map(repr, exprs))
        raise PredicateError(f"cannot evaluate {what} on the rows: {e}", reason="evaluation failed") from e


def mask(table: pa.Table, tree: Optional[dict], resolve: Resolver) -> pa.Array:
    """Boolean mask: TRUE where the condition holds (NULL counts as not holding)."""
    if tree is None:
        return pa.repeat(True, table.num_rows)
    if table.num_rows == 0:
        return pa.array([], pa.bool_())
    out = evaluate(table, {"m": to_expression(tree, resolve)}, "the condition").column("m")
    if not pa.types.is_boolean(out.type):
        raise PredicateError("the condition is not a boolean expression", reason="not boolean")
    return pc.fill_null(out.combine_chunks(), False)


def table_resolver(schema: pa.Schema, aliases: tuple = ()) -> Resolver:
    """Resolve `col` or `<alias>.col` against one table's schema (case-insensitive fallback)."""
    names = {f.name.lower(): f for f in schema}

    def resolve(parts: list) -> "tuple[str, pa.DataType]":
        if len(parts) == 2 and parts[0] in aliases:
            parts = parts[1:]
        if len(parts) != 1:
            raise PredicateError(f"unknown column {'.'.join(parts)!r}", reason="unknown column")
        f = schema.field(parts[0]) if parts[0] in schema.names else names.get(parts[0].lower())
        if f is None:
            raise PredicateError(f"unknown column {parts[0]!r} (columns: {', '.join(schema.names)})", reason="unknown column")
        return f.name, f.type

    return resolve
