"""Delta schema JSON (Spark's format) <-> pyarrow schemas, with logical column names."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from .exceptions import InvalidArgumentError, UnsupportedFeatureError

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
