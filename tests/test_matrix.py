"""The two conflict matrices of concurrency.md §5, reproduced cell by cell with real engine
operations: rows = the operation that commits second, columns = the winner; both isolation
levels; with row-level concurrency (DV tables) and at file level (tables without DVs, and DV
tables with row_level=False for the "(no conflict with DVs enabled)" cells); partitioned and
unpartitioned. Every run also checks the content invariants (tests/rowmodel.py).

Operations act on rows of the seed table (id, x = id, p = id % 2 when partitioned). "same"
variants touch the same row (row level) / the same partition (file level); "other" variants a
different row of the same file (unpartitioned) or a row of the other partition."""

from __future__ import annotations

from typing import Optional

import pytest

from delta_occ import exceptions as ex

from rowmodel import Op, assert_invariants, delete, insert, make_table, merge_update_only, optimize, row, schema, update

KINDS = ["INSERT", "UPDATE", "DELETE", "MERGE", "OPTIMIZE"]
DML = {"UPDATE", "DELETE", "MERGE"}
CONFLICT = "conflict"
MERGE_NEW = 300


def dml(kind: str, ident: int, partitioned: bool) -> Op:
    """A DML touching exactly row `ident` (its predicate names the row's x, and its partition
    when partitioned, so file-level partition checks can tell partitions apart)."""
    where = f"x = {ident}" + (f" AND p = {ident % 2}" if partitioned else "")

    def pred(r):
        return r["x"] == ident and (not partitioned or r["p"] == ident % 2)

    if kind == "DELETE":
        return delete(where, pred)
    if kind == "UPDATE":
        return update(where, pred, {"x": "x + 1000"}, lambda r: r.update(x=r["x"] + 1000))
    # The source also holds a key the table does not have yet (MERGE_NEW + ident), so an INSERT
    # of that key is a row the MERGE should have read.
    source = [row(ident, partitioned, x=-ident), row(MERGE_NEW + ident, partitioned)]
    if partitioned:
        source[1]["p"] = ident % 2
    return merge_update_only(source, schema(partitioned), "t.id = s.id" + (" AND t.p = s.p" if partitioned else ""))


def op(kind: str, ident: int, partitioned: bool, new_id: int, insert_x: Optional[int] = None) -> Op:
    if kind == "INSERT":
        r = row(new_id, partitioned, x=insert_x)
        if partitioned:
            r["p"] = ident % 2
        return insert([r], schema(partitioned))
    if kind == "OPTIMIZE":
        return optimize()
    return dml(kind, ident, partitioned)


def expected(first: str, second: str, level: str, mode: str, partitioned: bool, same: bool) -> Optional[str]:
    """The §5 cell: None (no conflict) or CONFLICT."""
    if second == "INSERT":
        return None
    if mode == "row":
        if second == "OPTIMIZE" or first == "OPTIMIZE":
            return None
        if first == "INSERT":
            # WS: no conflict; S: only if the inserted rows match its predicate ("same").
            return CONFLICT if level == "Serializable" and same else None
        return CONFLICT if same else None
    dv_table = mode == "file_dv"
    if second == "OPTIMIZE":
        if first == "INSERT":
            return None
        return None if dv_table else CONFLICT  # it compacts every file, the winner's included
    if first == "OPTIMIZE":
        return None if dv_table else CONFLICT
    if first == "INSERT":
        if level == "WriteSerializable":
            return None
        # Serializable, file level, no data skipping: files added in a partition it read.
        return CONFLICT if (same or not partitioned) else None
    # DML vs DML at file level: same files / partitions.
    return CONFLICT if (same or not partitioned) else None


def cases():
    for mode in ("row", "file", "file_dv"):
        for partitioned in (False, True):
            for first in KINDS:
                for second in KINDS:
                    variants = ["same", "other"] if (second in DML and first != "OPTIMIZE") else ["same"]
                    for v in variants:
                        for level in ("Serializable", "WriteSerializable"):
                            yield pytest.param(
                                mode, partitioned, first, second, v, level,
                                id=f"{mode}-{'part' if partitioned else 'unpart'}-{second}-after-{first}-{v}-{level}",
                            )


@pytest.mark.parametrize("mode,partitioned,first,second,variant,level", list(cases()))
def test_matrix_cell(mode, partitioned, first, second, variant, level):
    t, base = make_table(dv=mode != "file", partitioned=partitioned, level=level, batches=2, per_batch=8)
    row_level = mode == "row"
    same = variant == "same"
    target = 2  # the second's row (file 0; partition 0)
    # The winner's row: the same row, or another row of the same file (unpartitioned) / the
    # other partition (partitioned).
    other = 4 if not partitioned else 3
    winner_row = target if same else other
    if first == "INSERT":
        # "same": the inserted row matches the second's predicate (x = target in its partition;
        # for MERGE the source's new key).
        new_id = MERGE_NEW + target if (same and second == "MERGE") else 100
        w = op("INSERT", winner_row if not same else target, partitioned, new_id, insert_x=target if same else 500)
    else:
        w = op(first, winner_row, partitioned, 100)
    loser = op(second, target, partitioned, 200)
    txn = t.begin(isolation_level=level, row_level=row_level, data_skipping=False)
    loser.stage(txn)
    wt = t.begin(isolation_level=level, row_level=row_level, data_skipping=False)
    w.stage(wt)
    committed = {wt.commit().version: w}
    want = expected(first, second, level, mode, partitioned, same)
    try:
        r = txn.commit()
        committed[r.version] = loser
        outcome = None
    except ex.DeltaConcurrentModificationException as e:
        outcome = CONFLICT
        if first == "INSERT":
            assert isinstance(e, ex.ConcurrentAppendException), e
        else:
            assert isinstance(e, (ex.ConcurrentAppendException, ex.ConcurrentDeleteReadException, ex.ConcurrentDeleteDeleteException)), e
    assert outcome == want, f"{second} after {first}: expected {want or 'no conflict'}, got {outcome or 'no conflict'}"
    blind = level == "WriteSerializable" and first == "INSERT"
    assert_invariants(t, base, [committed[v] for v in sorted(committed)], blind_reorder=blind)
