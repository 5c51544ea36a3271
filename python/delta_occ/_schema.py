"""Delta schema JSON (Spark's format) <-> pyarrow schemas, with logical column names."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from . import _core
from .exceptions import InvalidArgumentError, SchemaMismatchError, UnsupportedFeatureError

_PRIMITIVE_TO_ARROW = {
    "string": pa.string(),
    "long": pa.int64(),
    "integer": pa.int32(),
    "short": pa.int16(),
    "byte": pa.int8(),
    "float": pa.float32(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
    "binary": pa.binary(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"),
    "void": pa.null(),
}


def delta_type_to_arrow(t: Any) -> pa.DataType:
    if isinstance(t, str):
        if t in _PRIMITIVE_TO_ARROW:
            return _PRIMITIVE_TO_ARROW[t]
        if t.startswith("decimal(") and t.endswith(")"):
            p, s = (int(x) for x in t[len("decimal(") : -1].split(","))
            return pa.decimal128(p, s)
        raise UnsupportedFeatureError(f"column type {t!r} is not supported by delta-occ's reader")
    kind = t.get("type")
    if kind == "struct":
        return pa.struct([delta_field_to_arrow(f) for f in t["fields"]])
    if kind == "array":
        return pa.list_(pa.field("element", delta_type_to_arrow(t["elementType"]), t.get("containsNull", True)))
    if kind == "map":
        return pa.map_(delta_type_to_arrow(t["keyType"]), delta_type_to_arrow(t["valueType"]))
    raise UnsupportedFeatureError(f"column type {t!r} is not supported by delta-occ's reader")


def delta_field_to_arrow(f: dict) -> pa.Field:
    return pa.field(f["name"], delta_type_to_arrow(f["type"]), f.get("nullable", True))


def delta_schema_to_arrow(schema_json: str) -> pa.Schema:
    return pa.schema([delta_field_to_arrow(f) for f in json.loads(schema_json)["fields"]])


def arrow_type_to_delta(t: pa.DataType) -> Any:
    if pa.types.is_dictionary(t):
        return arrow_type_to_delta(t.value_type)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or getattr(pa.types, "is_string_view", lambda _: False)(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return "binary"
    if pa.types.is_boolean(t):
        return "boolean"
    for check, name in (
        (pa.types.is_int64, "long"),
        (pa.types.is_int32, "integer"),
        (pa.types.is_int16, "short"),
        (pa.types.is_int8, "byte"),
        (pa.types.is_float32, "float"),
        (pa.types.is_float64, "double"),
        (pa.types.is_date, "date"),
    ):
        if check(t):
            return name
    if pa.types.is_timestamp(t):
        return "timestamp" if t.tz is not None else "timestamp_ntz"
    if pa.types.is_decimal(t):
        if t.precision > 38:
            raise InvalidArgumentError(f"decimal precision {t.precision} exceeds Delta's maximum of 38")
        return f"decimal({t.precision},{t.scale})"
    if pa.types.is_struct(t):
        return {"type": "struct", "fields": [arrow_field_to_delta(t.field(i)) for i in range(t.num_fields)]}
    if pa.types.is_map(t):
        return {
            "type": "map",
            "keyType": arrow_type_to_delta(t.key_type),
            "valueType": arrow_type_to_delta(t.item_type),
            "valueContainsNull": t.item_field.nullable,
        }
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return {
            "type": "array",
            "elementType": arrow_type_to_delta(t.value_type),
            "containsNull": t.value_field.nullable,
        }
    raise InvalidArgumentError(
        f"pyarrow type {t} has no Delta equivalent (unsigned integers, durations, times and nulls "
        "must be cast first)"
    )


def arrow_field_to_delta(f: pa.Field) -> dict:
    return {"name": f.name, "type": arrow_type_to_delta(f.type), "nullable": f.nullable, "metadata": {}}


def arrow_schema_to_delta(schema: pa.Schema) -> str:
    if not isinstance(schema, pa.Schema):
        raise InvalidArgumentError(f"schema must be a pyarrow.Schema, got {type(schema).__name__}")
    if len(schema) == 0:
        raise InvalidArgumentError("a Delta table needs at least one column")
    return json.dumps({"type": "struct", "fields": [arrow_field_to_delta(f) for f in schema]})


# -- schema enforcement (docs/guide.md "Policies") ------------------------------------------------

#: Unsigned arrow integers as the smallest Delta type that holds every value (uint64: none).
_UNSIGNED = {8: "short", 16: "integer", 32: "long"}


def widens(data: Any, table: Any) -> bool:
    """Whether values of Delta type ``data`` may be written to a column of Delta type ``table``
    unchanged: the same type, NULLs ("void"), or one of the widenings of Delta's type widening
    feature. The rule is the core's (``schema_change::writable_as``); ``None`` (a type Delta
    cannot hold) widens to nothing."""
    if data is None or table is None:
        return False
    try:
        return _core.type_writable_as(json.dumps(data), json.dumps(table))
    except InvalidArgumentError:
        return False  # a type the core does not parse (a negative decimal scale) widens to nothing


def delta_type_of(t: pa.DataType) -> Any:
    """The Delta type of arrow data (unsigned integers as the smallest type holding them; None
    for types Delta cannot hold)."""
    if pa.types.is_null(t):
        return "void"
    if pa.types.is_unsigned_integer(t):
        return _UNSIGNED.get(t.bit_width)
    try:
        return arrow_type_to_delta(t)
    except InvalidArgumentError:
        return None


def arrow_widens(data: pa.DataType, table: pa.DataType) -> bool:
    """:func:`widens` for arrow types."""
    return data == table or widens(delta_type_of(data), arrow_type_to_delta(table))


def _category(t: pa.DataType) -> str:
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "number"
    if pa.types.is_date(t) or pa.types.is_timestamp(t):
        return "datetime"
    return "string" if delta_type_of(t) == "string" else str(t)


def assignable(value: pa.DataType, column: pa.DataType) -> bool:
    """Whether an UPDATE / MERGE SET value (or INSERT value) of type ``value`` may be stored in a
    column of type ``column``: a widening, any number into a numeric column (cast with an
    overflow check, as Spark's ANSI store assignment), or a string into a date/timestamp column
    (parsed). Other changes of kind (a string into a number, a number into a string) are refused."""
    if arrow_widens(value, column):
        return True
    kinds = _category(value), _category(column)
    return kinds in (("number", "number"), ("string", "datetime"))


def type_name(t: pa.DataType) -> str:
    """A type as users see it in messages: its Delta name, else pyarrow's."""
    d = delta_type_of(t)
    return d if isinstance(d, str) and d != "void" else str(t)


def type_mismatch(column: str, table_type: str, data_type: str) -> SchemaMismatchError:
    """The error for data of a type that neither is the column's nor widens to it."""
    return SchemaMismatchError(
        f"column {column!r} is {table_type} in the table but {data_type} in the data; only widening "
        'conversions are implicit (docs/guide.md "Policies"): cast the data first',
        column=column,
        table_type=table_type,
        data_type=data_type,
    )
