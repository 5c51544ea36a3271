"""Schemas and column names for Spark: the Delta schema as Spark types (logical and physical
names). Row conditions are ``_rowexpr``'s."""

from __future__ import annotations

import json
from typing import Any

from pyspark.sql import Column
from pyspark.sql.types import StructField, StructType

from .. import _core
from ._session import F


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
