"""Rows through the core's one evaluator (``_core.RowExpr``): SQL text compiled against a
schema, evaluated on pyarrow tables a batch at a time (Arrow PyCapsule interface, no copy).
Reads, DML conditions, SET values, MERGE and the row-level conflict checker all evaluate here, so
they select the same rows."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import pyarrow as pa

from . import _arrow, _core
from .exceptions import PredicateError

#: (alias, column name prefix, readable): see ``_core.RowExpr``.
Scope = Tuple[Optional[str], str, bool]


def compile(text: Any, schema: pa.Schema, scopes: Optional[Sequence[Scope]] = None) -> _core.RowExpr:  # noqa: A001
    if not isinstance(text, str):
        raise PredicateError(f"expected SQL text, got {type(text).__name__}", reason="not text", problem="invalid")
    return _core.RowExpr(text, schema, list(scopes) if scopes else None)


def parse(text: Any) -> None:
    """Check that `text` parses (the errors the embedded engine would give), without a schema."""
    if not isinstance(text, str):
        raise PredicateError(f"expected SQL text, got {type(text).__name__}", reason="not text", problem="invalid")
    _core.conjuncts(text)


def _batches(table: pa.Table, columns: List[str]) -> List[pa.RecordBatch]:
    t = table.select(columns)
    batches = t.to_batches()
    if batches:
        return batches
    return [pa.record_batch([pa.array([], f.type) for f in t.schema], schema=t.schema)]


def _reworded(e: PredicateError, what: str) -> PredicateError:
    reason = e.reason or str(e)
    return PredicateError(f"cannot evaluate {what} on the rows: {reason}", reason="evaluation failed", text=e.text, problem=e.problem)


def values(table: pa.Table, expr: _core.RowExpr, what: Optional[str] = None) -> pa.ChunkedArray:
    """The expression's value on every row."""
    try:
        chunks = [_arrow.array(expr.evaluate(b)) for b in _batches(table, expr.columns)]
    except PredicateError as e:
        raise _reworded(e, what or repr(expr.text)) from e
    return pa.chunked_array(chunks, type=chunks[0].type)


def value_type(expr: _core.RowExpr, schema: pa.Schema) -> pa.DataType:
    """The type of ``expr``'s values (compiled against ``schema``), from evaluating it on no rows."""
    empty = pa.RecordBatch.from_pylist([], schema=pa.schema([schema.field(c) for c in expr.columns]))
    return _arrow.array(expr.evaluate(empty)).type


def evaluate(table: pa.Table, exprs: Dict[str, _core.RowExpr], what: Optional[str] = None) -> Dict[str, pa.ChunkedArray]:
    """Named expressions' values (evaluation errors name `what`, default their texts)."""
    what = what or "the value of " + ", ".join(repr(e.text) for e in exprs.values())
    return {name: values(table, e, what) for name, e in exprs.items()}


def mask(table: pa.Table, expr: Optional[_core.RowExpr], what: str = "the condition") -> pa.Array:
    """TRUE where the condition holds (NULL counts as not holding); every row without one."""
    if expr is None:
        return pa.repeat(True, table.num_rows)
    try:
        chunks = [_arrow.array(expr.mask(b)) for b in _batches(table, expr.columns)]
    except PredicateError as e:
        raise _reworded(e, what) from e
    return chunks[0] if len(chunks) == 1 else pa.concat_arrays(chunks)
