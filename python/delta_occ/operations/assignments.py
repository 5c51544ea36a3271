"""SET and INSERT values (UPDATE's ``set``, MERGE's clauses): checked before any row is read, the
errors worded as a bad value for a column, not as a predicate."""

from __future__ import annotations

from typing import Any, Callable, Dict, Mapping, Sequence, TypeVar

import pyarrow as pa

from .._schema import arrow_type_to_delta
from ..exceptions import InvalidArgumentError, PredicateError
from ..identity import IdentityColumn, check_given, check_not_set

Expr = TypeVar("Expr")

SET = "SET expression"
INSERT = "INSERT value"


def resolve(
    schema: pa.Schema,
    set_: Any,
    argument: str,
    check: Callable[[str], Expr],
    what: str = SET,
    identity: Mapping[str, IdentityColumn] = {},
    generated: Sequence[str] = (),
) -> Dict[str, Expr]:
    """``{table column: check(text)}`` for ``set_`` (``argument``: its parameter name): unknown
    columns and expressions ``check`` refuses fail here, and so do identity columns no SET may
    change and no INSERT may give (``identity``: the table's identity columns). A SET that does
    not name a generated column (``generated``) sets it to NULL: the write computes it again
    from the changed row (``delta_occ.generated``)."""
    if not isinstance(set_, Mapping) or not set_:
        raise InvalidArgumentError(f"{argument} must be a non-empty mapping of column name to SQL expression text")
    lower = {f.name.lower(): f.name for f in schema}
    out: Dict[str, Expr] = {}
    for col, text in set_.items():
        name = lower.get(str(col).lower())
        if name is None:
            raise InvalidArgumentError(f"cannot set unknown column {col!r} (columns: {schema.names})")
        try:
            out[name] = check(text)
        except PredicateError as e:
            raise assignment_error(what, name, text, e) from e
    if what == SET:
        check_not_set(identity, out)
        for column in generated:
            if column not in out:
                delta_type = arrow_type_to_delta(schema.field(column).type)
                out[column] = check(f"CAST(NULL AS {delta_type})" if isinstance(delta_type, str) else "NULL")
    else:
        check_given(identity, out, f"{argument}")
    return out


def assignment_error(what: str, column: str, text: Any, e: PredicateError) -> PredicateError:
    """A bad SET / INSERT value, worded as such (not as a predicate): ``invalid SET expression
    for column x: 'x ** 2' at position 4: ...``."""
    position, reason = e.position, e.reason
    if e.problem == "unknown_column":
        position = None  # about a name, not a place in the text
    detail = f"{text!r} at position {position}: {reason}" if position is not None else f"{text!r}: {reason or e}"
    return PredicateError(f"invalid {what} for column {column}: {detail}", position=position, reason=reason, column=column, problem=e.problem)


__all__ = ["resolve", "assignment_error", "SET", "INSERT"]
