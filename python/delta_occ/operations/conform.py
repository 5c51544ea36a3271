"""Data against the table before any engine writes it: columns by name as Delta's schema
enforcement allows (docs/guide.md "Policies"), and the refusal to write new rows under data rules
that cannot be enforced (the rules are delta_occ.constraints and delta_occ.generated)."""

from __future__ import annotations

from typing import Collection, List, Optional, Sequence, Tuple

from ..exceptions import SchemaMismatchError, UnsupportedFeatureError


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


def check_writable(root: str, unenforced: Sequence[str]) -> None:
    """New or changed rows would have to be checked against these rules (ones the core cannot
    compile); rows copied unchanged (a rewrite) still obey them, so only new rows are refused."""
    if unenforced:
        raise UnsupportedFeatureError(
            f"delta-occ cannot write rows to {root}: it does not enforce "
            f"{'; '.join(unenforced)} (deleting rows works; other writers can write)",
            what="data rules",
        )


__all__ = ["find_column", "data_columns", "check_writable"]
