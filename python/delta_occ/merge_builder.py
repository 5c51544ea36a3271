"""The MERGE builder (api.md, "One-call operations"): ``t.merge(source, on)`` without clause
keywords returns one; each ``when_...`` adds a clause, ``execute`` runs it. The same builder
serves the embedded ``Table`` and ``Transaction`` and Spark's ``SparkTable`` and
``SparkTransaction``: each hands it the function that runs the clauses (the rules live in
``delta_occ.operations.merge``)."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional

from .exceptions import InvalidArgumentError
from .operations.merge import DELETE, INSERT, MATCHED, NOT_MATCHED, NOT_MATCHED_BY_SOURCE, UPDATE, ClauseSpec

#: ``run(clauses, schema_mode, options)``: the MERGE executed (or staged) with those clauses.
Runner = Callable[[List[ClauseSpec], Optional[str], Dict[str, Any]], Any]


class MergeBuilder:
    """Clauses of one MERGE, in call order. Within each group (MATCHED, NOT MATCHED, NOT MATCHED
    BY SOURCE) the first clause whose condition holds acts, as in Spark SQL; only the last clause
    of a group may lack a condition (checked at ``execute``). Each method returns the builder."""

    def __init__(self, run: Runner, *, options: bool = True) -> None:
        self._run = run
        self._options = options
        self._clauses: List[ClauseSpec] = []
        self._schema_mode: Optional[str] = None
        self._executed = False

    def __repr__(self) -> str:
        return f"MergeBuilder({[c.describe() for c in self._clauses]})"

    def _add(self, group: str, action: str, condition: Optional[str], values: Any = None) -> "MergeBuilder":
        if self._executed:
            raise InvalidArgumentError("this MERGE was executed already: build a new one with merge(source, on)")
        if condition is not None and not isinstance(condition, str):
            raise InvalidArgumentError(f"condition must be SQL text or None, got {type(condition).__name__}")
        if action != DELETE and values != "*" and (not isinstance(values, Mapping) or not values):
            raise InvalidArgumentError(f"{group} THEN {action} needs a non-empty mapping of column name to SQL expression text")
        self._clauses.append(ClauseSpec(group, action, condition, values))
        return self

    def when_matched_update(self, set: Mapping[str, str], condition: Optional[str] = None) -> "MergeBuilder":  # noqa: A002 - api.md name
        """WHEN MATCHED [AND condition] THEN UPDATE SET ``set`` (column -> SQL over t. and s.)."""
        return self._add(MATCHED, UPDATE, condition, set)

    def when_matched_update_all(self, condition: Optional[str] = None) -> "MergeBuilder":
        """WHEN MATCHED ... THEN UPDATE SET *: every table column the source has (by name) from
        the source; the others keep their values (identity columns are never set)."""
        return self._add(MATCHED, UPDATE, condition, "*")

    def when_matched_delete(self, condition: Optional[str] = None) -> "MergeBuilder":
        return self._add(MATCHED, DELETE, condition)

    def when_not_matched_insert(self, values: Mapping[str, str], condition: Optional[str] = None) -> "MergeBuilder":
        """WHEN NOT MATCHED [AND condition] THEN INSERT ``values`` (SQL over s. only)."""
        return self._add(NOT_MATCHED, INSERT, condition, values)

    def when_not_matched_insert_all(self, condition: Optional[str] = None) -> "MergeBuilder":
        """WHEN NOT MATCHED ... THEN INSERT *: the source's columns the table has, by name (the
        rest NULL, or generated for identity columns)."""
        return self._add(NOT_MATCHED, INSERT, condition, "*")

    def when_not_matched_by_source_update(self, set: Mapping[str, str], condition: Optional[str] = None) -> "MergeBuilder":  # noqa: A002
        """WHEN NOT MATCHED BY SOURCE [AND condition] THEN UPDATE SET ``set`` (SQL over t. only)."""
        return self._add(NOT_MATCHED_BY_SOURCE, UPDATE, condition, set)

    def when_not_matched_by_source_delete(self, condition: Optional[str] = None) -> "MergeBuilder":
        return self._add(NOT_MATCHED_BY_SOURCE, DELETE, condition)

    def with_schema_evolution(self) -> "MergeBuilder":
        """Source columns the table lacks are added to it first (a metadata change in the same
        commit; the embedded engine only: Spark refuses with InvalidArgumentError)."""
        self._schema_mode = "merge"
        return self

    def execute(self, **options: Any) -> Any:
        """Run the MERGE: on a table, with the operation options (``isolation_level``,
        ``row_level``, ``max_attempts``, ``rerun_on_conflict``, ``app_id``, ``app_version``),
        returning the ``CommitResult``; on a transaction, staged in it (no options)."""
        if options and not self._options:
            raise InvalidArgumentError(f"a MERGE staged in a transaction takes no options ({sorted(options)}): give them to begin()")
        self._executed = True
        return self._run(list(self._clauses), self._schema_mode, options)


__all__ = ["MergeBuilder", "Runner"]
