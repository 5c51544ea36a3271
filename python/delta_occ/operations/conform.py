"""Data against the table before any engine writes it: columns by name as Delta's schema
enforcement allows (docs/guide.md "Policies"), and the refusal to write new rows under data rules
that cannot be enforced (the rules are delta_occ.constraints and delta_occ.generated)."""

from __future__ import annotations

from typing import Collection, List, Optional, Sequence, Tuple

import pyarrow as pa

from .. import _core
from .._schema import arrow_schema_to_delta, delta_schema_to_arrow
from ..exceptions import InvalidArgumentError, SchemaMismatchError, UnsupportedFeatureError
from .protocols import Staging


def find_column(names: Sequence[str], name: str) -> Optional[str]:
    """The table column ``name`` denotes: the same name, else the same in any letter case."""
    if name in names:
        return name
    lower = name.lower()
    return next((n for n in names if n.lower() == lower), None)


def data_columns(
    fields: Sequence[Tuple[str, bool]], data: Sequence[str], hint: str, ignore: Sequence[str] = (), generated: Collection[str] = (),
) -> List[Optional[str]]:
    """Per table column (``(name, nullable)``, in table order) the data column that fills it
    (case-insensitive), or None for a nullable column the data lacks (filled with NULLs). A data
    column the table lacks, or a NOT NULL column the data lacks, is a SchemaMismatchError;
    ``hint`` says how to add columns; ``ignore``: engine columns that are not data;
    ``generated``: columns the engine fills after this (identity columns), which the data may
    leave out even when NOT NULL."""
    lower = {n.lower(): n for n in data}
    known = {name.lower() for name, _ in fields}
    extra = [n for n in data if n.lower() not in known and n not in ignore]
    if extra:
        raise SchemaMismatchError(f"column(s) {extra} are not in the table schema {[n for n, _ in fields]} ({hint})", column=extra[0])
    out = []
    for name, nullable in fields:
        source = lower.get(name.lower())
        if source is None and not nullable and name not in generated:
            raise SchemaMismatchError(f"column {name!r} is NOT NULL and missing from the data", column=name)
        out.append(source)
    return out


def evolve(txn: Staging, data: pa.Schema, schema_mode: Optional[str]) -> bool:
    """Stage the schema change a write of data with schema ``data`` asks for; whether it staged
    one (the engine then writes with the new layout). ``schema_mode="merge"``: the data's columns
    the table lacks, at any depth, are added (nullable; the core's ``merged_for_write``), as
    delta-spark's ``mergeSchema``; existing column types never change. ``"overwrite"`` (a
    whole-table overwrite only: the operation checks, and the core again at commit): the data's
    schema replaces the table's, as delta-spark's ``overwriteSchema``."""
    if schema_mode is None:
        return False
    if schema_mode == "merge":
        merged = _core.merged_for_write(txn.schema_json, arrow_schema_to_delta(data))
        if merged is None:
            return False
        txn.set_schema(delta_schema_to_arrow(merged))
    elif schema_mode == "overwrite":
        txn.replace_schema(data)
    else:
        raise InvalidArgumentError(f"schema_mode must be None, 'merge' or 'overwrite', got {schema_mode!r}")
    return True


def check_writable(root: str, unenforced: Sequence[str]) -> None:
    """New or changed rows would have to be checked against these rules (ones the core cannot
    compile); rows copied unchanged (a rewrite) still obey them, so only new rows are refused."""
    if unenforced:
        raise UnsupportedFeatureError(
            f"delta-occ cannot write rows to {root}: it does not enforce "
            f"{'; '.join(unenforced)} (deleting rows works; other writers can write)",
            what="data rules",
        )


__all__ = ["find_column", "data_columns", "evolve", "check_writable"]
