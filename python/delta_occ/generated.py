"""Generated columns (``delta.generationExpression``, the ``generatedColumns`` feature) and column
defaults (``CURRENT_DEFAULT``, ``allowColumnDefaults``): which columns have them, and how the
engines honour them.

- A generated column's value is its expression over the row. A write that leaves it out (or a
  SET that does not name it: ``operations.assignments`` then sets it to NULL) gets the computed
  value; a given value must equal it. The check is a rule like a CHECK constraint,
  ``<column> <=> (<expression>)`` (``delta_occ.constraints``), so both engines enforce it on
  every new or changed row with the row it breaks named.
- A column default applies where a write leaves the column out (never to a SET, never to rows
  already in the table).

Expressions are compiled by the core's row evaluator (both engines: the embedded one evaluates
it, Spark compiles its tree), so an expression it cannot evaluate, or a non-deterministic
generation expression, is refused when the table is created, never dropped."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from . import _rows
from ._schema import arrow_type_to_delta, widens
from .exceptions import PredicateError
from .instant import Now

GENERATION = "delta.generationExpression"
DEFAULT = "CURRENT_DEFAULT"


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def generation_expressions(fields: Sequence[Mapping[str, Any]]) -> Dict[str, str]:
    """``{column: generation expression}`` of the table's top-level fields (Delta JSON)."""
    return {f["name"]: str(meta[GENERATION]) for f in fields if GENERATION in (meta := f.get("metadata") or {})}


def column_defaults(fields: Sequence[Mapping[str, Any]]) -> Dict[str, str]:
    """``{column: default SQL text}`` of the table's top-level fields."""
    return {f["name"]: str(meta[DEFAULT]) for f in fields if DEFAULT in (meta := f.get("metadata") or {})}


def rule_expression(column: str, expression: str) -> str:
    """The rule a generated column's values keep: NULL-safe equality with the expression."""
    return f"{_quote(column)} <=> ({expression})"


class Generation:
    """A table's generated columns and defaults compiled against its schema (the embedded
    engine's evaluation; Spark compiles the same texts: ``spark._write``)."""

    def __init__(self, fields: Sequence[Mapping[str, Any]], schema: pa.Schema) -> None:
        self.expressions = generation_expressions(fields)
        self.defaults = column_defaults(fields)
        self._schema = schema
        self._compiled: Dict[str, Any] = {}
        self._default_values: Dict[str, pa.Scalar] = {}

    def __bool__(self) -> bool:
        return bool(self.expressions or self.defaults)

    @property
    def omittable(self) -> List[str]:
        """Columns a write may leave out even when NOT NULL: their values come from here."""
        return list(self.expressions) + [c for c in self.defaults if c not in self.expressions]

    def compiled(self, column: str) -> Any:
        if column not in self._compiled:
            self._compiled[column] = _rows.compile(self.expressions[column], self._schema)
        return self._compiled[column]

    def default_values(self, field: pa.Field, n: int) -> Optional[pa.Array]:
        """The column default of ``field`` for ``n`` new rows, None when it has none. It is
        evaluated once per table layout (one transaction's writes): ``current_date()`` /
        ``current_timestamp()`` name one instant for all of them."""
        text = self.defaults.get(field.name)
        if text is None:
            return None
        if field.name not in self._default_values:
            one = pa.table({"_": pa.nulls(1)})
            value = _rows.values(one, _rows.compile(Now().text(text), one.schema), f"the default of column {field.name}")
            self._default_values[field.name] = value.cast(field.type)[0]
        return pa.repeat(self._default_values[field.name], n)

    def fill(self, rows: pa.Table) -> pa.Table:
        """``rows`` with each generated column's NULLs replaced by its computed value (a given
        value stays, for the rule to check)."""
        for column in self.expressions:
            i = rows.schema.get_field_index(column)
            if i < 0 or not rows.num_rows or rows.column(i).null_count == 0:
                continue
            field = rows.schema.field(i)
            computed = _rows.values(rows, self.compiled(column), f"generated column {column}").cast(field.type)
            rows = rows.set_column(i, field, pc.coalesce(rows.column(i), computed))
        return rows


def check_declared(fields: Sequence[Mapping[str, Any]], schema: pa.Schema) -> None:
    """Refuse, at create, a generation expression or default the engines could not apply: text
    the core cannot compile, a non-deterministic generation expression, a value that is not of
    (or castable to) the column's type."""
    now = Now()
    for column, text in generation_expressions(fields).items():
        if now.text(text) != text:
            raise PredicateError(
                f"generated column {column}: {text!r} is not deterministic (current_date() / current_timestamp())",
                reason="not deterministic", text=text, problem="invalid",
            )
        _check_type(column, _rows.value_type(_rows.compile(text, schema), schema), schema)
    # A default reads no column: compiled against none, a column name is an unknown column.
    one = pa.table({"_": pa.nulls(1)})
    for column, text in column_defaults(fields).items():
        _check_type(column, _rows.value_type(_rows.compile(now.text(text), one.schema), one.schema), schema)


def _check_type(column: str, got: pa.DataType, schema: pa.Schema) -> None:
    """The value must be writable to the column as data is (its type or a widening of it)."""
    want = schema.field(column).type
    if not widens(arrow_type_to_delta(got), arrow_type_to_delta(want)):
        raise PredicateError(f"column {column}: the expression gives {got}, which is not {want}", reason="wrong type", problem="invalid")


__all__ = ["GENERATION", "DEFAULT", "Generation", "generation_expressions", "column_defaults", "rule_expression", "check_declared"]
