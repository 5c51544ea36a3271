"""Delta schema JSON (Spark's format) <-> pyarrow schemas: the core's type map and column mapping
(``_core.logical_arrow_schema`` / ``physical_arrow_schema`` / ``delta_schema_json``), and the
schema enforcement rules built on them."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from . import _arrow, _core
from .exceptions import InvalidArgumentError, SchemaMismatchError

#: The field metadata key of a parquet field id in pyarrow (and arrow-rs) schemas.
FIELD_ID_KEY = b"PARQUET:field_id"


def delta_schema_to_arrow(schema_json: str) -> pa.Schema:
    """The table schema with logical names (UnsupportedFeatureError for a type delta-occ does
    not read)."""
    return _arrow.schema(_core.logical_arrow_schema(schema_json))


def physical_schema(schema_json: str, mode: str) -> pa.Schema:
    """The table schema as data files hold it under column mapping ``mode``: physical names at
    every level, parquet field ids (``FIELD_ID_KEY``) in id mode."""
    return _arrow.schema(_core.physical_arrow_schema(schema_json, mode))


def field_id(field: pa.Field) -> "int | None":
    """The parquet field id a (physical) field carries, if any."""
    v = field.metadata.get(FIELD_ID_KEY) if field.metadata else None
    return int(v) if v is not None else None


def arrow_type_to_delta(t: pa.DataType) -> Any:
    """The Delta type (JSON value) of an Arrow type; InvalidArgumentError where Delta has none."""
    return json.loads(_core.delta_type_json(t.__arrow_c_schema__()))


def arrow_schema_to_delta(schema: pa.Schema) -> str:
    if not isinstance(schema, pa.Schema):
        raise InvalidArgumentError(f"schema must be a pyarrow.Schema, got {type(schema).__name__}")
    return _core.delta_schema_json(schema.__arrow_c_schema__())


def delta_type_json(t: Any) -> str:
    """A column type as Delta JSON: a pyarrow type, or a Delta type name (``"long"``,
    ``"decimal(12,2)"``) passed as it is."""
    if isinstance(t, str):
        return json.dumps(t)
    if not isinstance(t, pa.DataType):
        raise InvalidArgumentError(f"a column type must be a pyarrow DataType or a Delta type name, got {t!r}")
    return _core.delta_type_json(t.__arrow_c_schema__())


# -- schema enforcement (docs/guide.md "Policies") ------------------------------------------------


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
    for types Delta cannot hold): the core's rule."""
    d = _core.delta_type_of_data(t.__arrow_c_schema__())
    return None if d is None else json.loads(d)


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


def check_stored(value: pa.DataType, column: pa.Field, what: str) -> None:
    """Refuse a ``what`` (an UPDATE / MERGE SET value, an INSERT value) of type ``value`` that may
    not be stored in ``column`` (``assignable``): the one rule both engines apply."""
    if value != column.type and not assignable(value, column.type):
        raise SchemaMismatchError(
            f"invalid {what} for column {column.name}: its value is {type_name(value)} but the column is "
            f"{type_name(column.type)} (convert it explicitly with CAST)",
            column=column.name, table_type=type_name(column.type), data_type=type_name(value),
        )


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
