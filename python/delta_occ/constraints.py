"""A table's CHECK constraints and column invariants: which the table has, compiled once by the
core's row evaluator (``_core.RowExpr``, the one every engine evaluates), and the rows that break
them. A row keeps a rule only when the rule is TRUE on it; FALSE and NULL both break it (the
Delta protocol, "invariants"; deltalake refuses a NULL row alike).

The rule texts live in the table: ``delta.constraints.<name>`` properties (``checkConstraints``)
and ``delta.invariants`` column metadata (``invariants``). The engines enforce them on every new
or changed row (``Layout.write_many``, ``spark._write.write``); ``Table.add_constraint`` checks
the existing rows first."""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from . import _core, _rows
from .exceptions import ConstraintViolationError, InvalidArgumentError, PredicateError
from .generated import generation_expressions, rule_expression

PREFIX = "delta.constraints."
#: Names as delta-spark and Databricks accept them (letters, digits, underscores), which also
#: keeps a name a plain property key.
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class Rule(NamedTuple):
    """One rule: a CHECK constraint (``name``) or a column invariant (``name`` = the column)."""

    kind: str  # "CHECK constraint" or "invariant on column"
    name: str
    expression: str

    def describe(self) -> str:
        return f"{self.kind} {self.name} ({self.expression})"


def check_name(name: Any) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise InvalidArgumentError(f"a constraint name is letters, digits and underscores, not starting with a digit; got {name!r}")
    return name


def is_constraint_key(key: str) -> bool:
    """Whether a table property holds a CHECK constraint (``delta.constraints.<name>``)."""
    return key.lower().startswith(PREFIX)


def constraint_key(props: Mapping[str, str], name: str) -> Optional[str]:
    """The property key of constraint ``name`` (names compare case-insensitively, as in Spark)."""
    want = (PREFIX + name).lower()
    return next((k for k in props if k.lower() == want), None)


def rules_of(props: Mapping[str, str], fields: Sequence[Dict[str, Any]]) -> List[Rule]:
    """The table's rules, CHECK constraints first (by name), then generated columns and
    invariants in schema order."""
    rules = sorted(
        (Rule("CHECK constraint", k[len(PREFIX):], v) for k, v in props.items() if is_constraint_key(k)),
        key=lambda r: r.name.lower(),
    )
    rules += [Rule("generated column", c, rule_expression(c, e)) for c, e in generation_expressions(fields).items()]
    for f in fields:
        raw = (f.get("metadata") or {}).get("delta.invariants")
        if raw is None:
            continue
        try:
            text = json.loads(raw)["expression"]["expression"]
        except (ValueError, TypeError, KeyError):
            text = None
        rules.append(Rule("invariant on column", f["name"], text if isinstance(text, str) else str(raw)))
    return rules


class Compiled(NamedTuple):
    rule: Rule
    expr: Any  # _core.RowExpr


class Rules:
    """A table's rules compiled against its schema. ``unenforceable``: the rules the core cannot
    compile (a function it lacks), with the reason; rows cannot be written while there are any."""

    def __init__(self, props: Mapping[str, str], fields: Sequence[Dict[str, Any]], schema: pa.Schema) -> None:
        self.compiled: List[Compiled] = []
        self.unenforceable: List[str] = []
        for rule in rules_of(props, fields):
            try:
                self.compiled.append(Compiled(rule, compile_rule(rule, schema)))
            except PredicateError as e:
                self.unenforceable.append(f"{rule.describe()}: {e.reason or e}")

    def __bool__(self) -> bool:
        return bool(self.compiled)

    def check(self, data: pa.Table, root: str) -> None:
        """Raise ConstraintViolationError for the first rule a row of ``data`` (rows about to be
        written to the table at ``root``) breaks."""
        for c in self.compiled:
            first_broken(c, data, root, f"the rows written to {root}")


def compile_rule(rule: Rule, schema: pa.Schema) -> Any:
    if isinstance(rule.expression, str) and _core.resolve_now(rule.expression, 0) != rule.expression:
        # Delta's constraints are deterministic: a row that passed must keep passing
        raise PredicateError(
            f"{rule.describe()} is not deterministic (current_date() / current_timestamp())",
            reason="not deterministic", text=rule.expression, problem="invalid",
        )
    expr = _rows.compile(rule.expression, schema)
    if json.loads(expr.tree_json).get("type") != "boolean":
        raise PredicateError(f"{rule.describe()} is not a boolean expression", reason="not a boolean expression", text=rule.expression, problem="invalid")
    return expr


def first_broken(c: Compiled, data: pa.Table, root: str, what: str) -> None:
    """Raise ConstraintViolationError naming the first row of ``data`` (``what``: whose rows,
    for the message) the rule is not TRUE on."""
    holds = _rows.mask(data, c.expr, c.rule.describe())
    if pc.all(holds).as_py() in (True, None):
        return
    broken = pc.invert(holds)
    count = pc.sum(broken).as_py()
    index = pc.index(broken, True).as_py()
    row = data.select(list(c.expr.columns)).slice(index, 1).to_pylist()[0]
    raise ConstraintViolationError(
        f"{c.rule.describe()} is not true for {count} row(s) of {what}; the first: {row}",
        table=root,
        constraint=c.rule.name,
        expression=c.rule.expression,
        row=row,
        rows=count,
    )


__all__ = ["PREFIX", "Rule", "Rules", "Compiled", "check_name", "is_constraint_key", "constraint_key", "rules_of", "compile_rule", "first_broken"]
