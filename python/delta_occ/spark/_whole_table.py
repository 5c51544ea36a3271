"""Reads of every live row a transaction must make, done by Spark's executors
(``delta_occ.engine.WholeTable``): a new CHECK constraint is one aggregation per rule (how many
rows break it, and the first of them in scan order), SYNC IDENTITY one min / max. One row per
question reaches the driver, whatever the table's size."""

from __future__ import annotations

import json
from typing import Any, Sequence, Tuple

from ..constraints import Compiled, Rule, compile_rule
from ..exceptions import ConstraintViolationError
from ._columns import col
from ._rowexpr import ansi, condition, evaluating
from ._scan import FILE, ROW, ScanPlan, read_plan
from ._session import F, Session, using


class SparkWholeTable:
    def __init__(self, spark: Session, txn: Any) -> None:
        self.spark = spark
        self.txn = txn

    def _plan(self) -> ScanPlan:
        snap = self.txn.snapshot
        return ScanPlan(snap.handle, snap.files().column("path").to_pylist())

    def check_rules(self, rules: Sequence[Rule]) -> None:
        txn = self.txn
        txn.read_whole_table()
        snap = txn.snapshot
        compiled = [Compiled(r, compile_rule(r, snap.schema)) for r in rules]
        columns = sorted({c for x in compiled for c in x.expr.columns}) or [snap.schema.names[0]]
        where = f"{snap.handle.root} at version {txn.read_version}"
        with using(self.spark), ansi(self.spark), evaluating("the constraint on the table's rows"):
            rows = read_plan(self.spark, self._plan(), columns, positions=True)
            for c in compiled:
                holds = condition(json.loads(c.expr.tree_json), col)
                row = F.to_json(F.struct(*[col(n) for n in c.expr.columns]), {"ignoreNullFields": "false"})
                found = rows.filter(~holds).agg(F.count(F.lit(1)).alias("n"), F.min_by(row, F.struct(F.col(FILE), F.col(ROW))).alias("first")).collect()[0]
                if found["n"]:
                    first = json.loads(found["first"])
                    raise ConstraintViolationError(
                        f"{c.rule.describe()} is not true for {found['n']} row(s) of {where}; the first: {first}",
                        table=snap.handle.root, constraint=c.rule.name, expression=c.rule.expression, row=first, rows=found["n"],
                    )

    def bounds(self, column: str) -> Tuple[Any, Any]:
        with using(self.spark), ansi(self.spark):
            got = read_plan(self.spark, self._plan(), [column]).agg(F.min(col(column)).alias("lo"), F.max(col(column)).alias("hi")).collect()[0]
        return got["lo"], got["hi"]


__all__ = ["SparkWholeTable"]
