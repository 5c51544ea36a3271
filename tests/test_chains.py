"""Chains of three or more transactions on a DV table with OPTIMIZE among them (issue 16's spurious
conflicts). Row-level rules say OPTIMIZE never conflicts on a DV table (concurrency.md §4 rule 5)
and DML of different rows never does (rule 1): every commit must succeed and the rows must equal
the serial model (every deleted id gone, every other id present exactly once)."""

from __future__ import annotations

import itertools

import pyarrow as pa
import pytest

import delta_occ as docc

SCHEMA = pa.schema([("id", pa.int64())])
DV = {"delta.enableDeletionVectors": "true"}


def make(tmp_path, pre_deleted=(0,)) -> docc.Table:
    t = docc.Table.create(tmp_path / "t", SCHEMA, properties=DV)
    t.append(pa.table({"id": pa.array(range(0, 10), pa.int64())}))
    t.append(pa.table({"id": pa.array(range(10, 20), pa.int64())}))
    if pre_deleted:
        t.delete(f"id IN ({', '.join(map(str, pre_deleted))})")  # a DV before the chain starts
    return t


def live_ids(t) -> list:
    return sorted(docc.Table(t.path).snapshot().to_pyarrow().column("id").to_pylist())


def expect(gone) -> list:
    return [i for i in range(20) if i not in set(gone)]


def test_dml_after_optimize_rebased_over_dml(tmp_path):
    """Pattern 1: OPTIMIZE read A with DV {0}; DELETE id=1 commits; a DELETE that read A with
    DV {0,1} stages; OPTIMIZE commits rebased over the first DELETE; the second DELETE must be
    remapped onto the compacted file, not fail."""
    t = make(tmp_path)
    opt = t.begin()
    assert opt.optimize() == 1
    t.delete("id = 1")
    d2 = t.begin()
    d2.delete("id = 2")
    opt.commit()
    d2.commit()
    assert live_ids(t) == expect([0, 1, 2])


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))), ids=lambda o: "".join(map(str, o)))
def test_three_staged_transactions_in_every_commit_order(tmp_path, order):
    t = make(tmp_path)
    txns = [t.begin(), t.begin(), t.begin()]
    txns[0].optimize()
    txns[1].delete("id = 1")
    txns[2].delete("id IN (2, 15)")
    for i in order:
        txns[i].commit()
    assert live_ids(t) == expect([0, 1, 2, 15])


def make_partitioned(tmp_path) -> docc.Table:
    t = docc.Table.create(tmp_path / "t", pa.schema([("id", pa.int64()), ("p", pa.int64())]), partition_by=["p"], properties=DV)
    for k in range(2):  # two small files in p=0, one in p=1
        t.append(pa.table({"id": pa.array(range(k * 10, k * 10 + 10), pa.int64()), "p": pa.array([0] * 10, pa.int64())}))
    t.append(pa.table({"id": pa.array(range(100, 110), pa.int64()), "p": pa.array([1] * 10, pa.int64())}))
    return t


ALL_P = sorted(list(range(20)) + list(range(100, 110)) + [200, 201])


@pytest.mark.parametrize("what", ["delete", "scan-only"])
def test_dml_against_a_compaction_of_a_compaction(tmp_path, what):
    """Pattern 2: the DML's file is compacted, and the output compacted again, before it commits."""
    t = make_partitioned(tmp_path)
    d = t.begin()
    if what == "delete":
        d.delete("id = 3")  # a row of the first p=0 file
    else:
        d.scan("p = 0")
        d.delete("id = 105")  # changes p=1 only, but read all of p=0
    assert t.optimize(where="p = 0").committed
    t.append(pa.table({"id": [200, 201], "p": [0, 0]}))
    assert t.optimize(where="p = 0").committed  # compacts the first compaction's output again
    d.commit()
    gone = [3] if what == "delete" else [105]
    assert live_ids(t) == [i for i in ALL_P if i not in gone]


def test_optimize_that_dropped_a_bin_against_dml(tmp_path):
    """Pattern 3: an OPTIMIZE loses its p=0 bin to an overlapping OPTIMIZE, then meets DML of p=0
    rows: the dropped bin's read set must not make it conflict."""
    t = make_partitioned(tmp_path)
    t.append(pa.table({"id": pa.array(range(110, 120), pa.int64()), "p": pa.array([1] * 10, pa.int64())}))
    mine = t.begin()
    assert mine.optimize() == 2  # bins in p=0 and p=1
    assert t.optimize(where="p = 0").committed  # overlaps the p=0 bin
    t.delete("id = 4")  # DML on the other compaction's p=0 output
    mine.commit()
    assert live_ids(t) == [i for i in sorted(list(range(20)) + list(range(100, 120))) if i != 4]


def test_optimize_that_scanned_a_file_compacted_twice(tmp_path):
    """Pattern 4: an OPTIMIZE scanned p=0 (nothing to compact there for it) while p=0 was compacted
    twice; it must still commit its p=1 bin."""
    t = make_partitioned(tmp_path)
    t.append(pa.table({"id": pa.array(range(110, 120), pa.int64()), "p": pa.array([1] * 10, pa.int64())}))
    assert t.optimize(where="p = 0").committed  # p=0 is one file now
    mine = t.begin()
    mine.scan("p = 0")
    assert mine.optimize(where="p = 1") == 1
    t.append(pa.table({"id": [200], "p": [0]}))
    assert t.optimize(where="p = 0").committed
    t.append(pa.table({"id": [201], "p": [0]}))
    assert t.optimize(where="p = 0").committed
    mine.commit()
    assert live_ids(t) == sorted(list(range(20)) + list(range(100, 120)) + [200, 201])


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))), ids=lambda o: "".join(map(str, o)))
def test_two_overlapping_optimizes_and_a_delete_in_every_order(tmp_path, order):
    """Patterns 3 and 4 as a family: OPTIMIZE of everything, OPTIMIZE of p=0, and a DELETE of a
    p=0 row, staged on one version and committed in every order."""
    t = make_partitioned(tmp_path)
    t.append(pa.table({"id": pa.array(range(110, 120), pa.int64()), "p": pa.array([1] * 10, pa.int64())}))
    txns = [t.begin(), t.begin(), t.begin()]
    txns[0].optimize()
    txns[1].optimize(where="p = 0")
    txns[2].delete("id = 4")
    for i in order:
        txns[i].commit()
    assert live_ids(t) == [i for i in sorted(list(range(20)) + list(range(100, 120))) if i != 4]


@pytest.mark.parametrize("dml", ["delete", "update", "merge"])
@pytest.mark.parametrize("first", ["dml", "optimize"])
def test_optimize_that_only_read_a_file_ignores_dml_of_it(tmp_path, dml, first):
    """Found by the stress checker (a MERGE beat an OPTIMIZE with ConcurrentDeleteRead): a file
    OPTIMIZE read but left alone (the only file of its partition) is not its business, so DML of
    that file must not fail the compaction (concurrency.md §4 rule 5), in either commit order."""
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    t = docc.Table.create(tmp_path / "t", schema, partition_by=["p"], properties=DV)
    for lo, p in ((0, "a"), (10, "a"), (20, "b")):
        t.append(pa.table({"id": pa.array(range(lo, lo + 10), pa.int64()), "p": [p] * 10}))
    opt = t.begin()
    assert opt.optimize() == 1  # one bin: the two files of p=a; p=b's single file stays
    d = t.begin()
    if dml == "delete":
        d.delete("id = 25")
    elif dml == "update":
        d.update("id = 25", {"id": "125"})
    else:
        d.merge(pa.table({"id": pa.array([25], pa.int64()), "p": ["b"]}), "t.id = s.id", when_matched_delete=True)
    for txn in ((d, opt) if first == "dml" else (opt, d)):
        txn.commit()
    got = live_ids(t)
    expected = sorted([i for i in range(30) if i != 25] + ([125] if dml == "update" else []))
    assert got == expected


@pytest.mark.parametrize("winner", ["delete", "update"])
def test_dml_after_a_compaction_of_a_file_it_only_read(tmp_path, winner):
    """Found by the stress checker: DML read a file of another partition (its stats could hold the
    id); OPTIMIZE compacted that file, then DML removed the compaction's output entirely. The
    output is not in the first DML's read snapshot, yet none of its rows were read: commit."""
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    t = docc.Table.create(tmp_path / "t", schema, partition_by=["p"], properties=DV)
    for lo in (0, 20, 40):
        ids = list(range(lo, lo + 20))
        t.append(pa.table({"id": pa.array(ids, pa.int64()), "p": ["a" if i % 2 == 0 else "b" for i in ids]}))
    loser = t.begin()
    loser.delete("id = 40")  # reads the 40-59 files of both partitions
    t.optimize(where="p = 'b'")
    if winner == "delete":
        t.delete("p = 'b'")
    else:
        t.update("p = 'b'", {"id": "id + 1000"})
    loser.commit()
    got = live_ids(t)
    bs = [i + 1000 for i in range(60) if i % 2] if winner == "update" else []
    assert got == sorted([i for i in range(60) if i % 2 == 0 and i != 40] + bs)


def test_dml_against_optimize_dropping_fully_deleted_files(tmp_path):
    """Found by the long stress run: after a DELETE of a whole partition (DVs covering every row),
    OPTIMIZE drops those files without writing an output, so without provenance. DML that read
    them (their stats could hold its id) removed none of their rows: it must commit."""
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    t = docc.Table.create(tmp_path / "t", schema, partition_by=["p"], properties=DV)
    for lo in (0, 20):
        ids = list(range(lo, lo + 20))
        t.append(pa.table({"id": pa.array(ids, pa.int64()), "p": ["a" if i % 2 == 0 else "b" for i in ids]}))
    txn = t.begin()  # DVs covering every row of p=a's files (a DELETE of whole partitions can leave such)
    for path in txn.scan("p = 'a'").column("path").to_pylist():
        txn.delete_rows(path, range(10))
    txn.commit()
    loser = t.begin()
    loser.delete("id = 21")  # reads the 20-39 files of both partitions
    assert t.optimize().version > 0
    loser.commit()
    got = live_ids(t)
    assert got == [i for i in range(40) if i % 2 and i != 21]


def test_compaction_without_provenance_conflicts_instead_of_resurrecting(tmp_path):
    """A compaction written through the transaction API without the provenance tag (remove F
    with dataChange=false, add G holding F's rows) against a winner that deleted a row of F: the
    row cannot be carried over, so §4 rule 6 falls back to file level and the compaction
    conflicts. The previous build committed it, leaving F and G both live (every row twice, the
    deleted row back)."""
    import os

    import pyarrow.parquet as pq

    schema = pa.schema([("id", pa.int64())])
    t = docc.Table.create(tmp_path / "t", schema, properties=DV)
    t.append(pa.table({"id": list(range(10))}, schema=schema))
    f = t.snapshot().files().column("path")[0].as_py()
    compaction = t.begin()
    compaction.scan()
    pq.write_table(t.snapshot().to_pyarrow(), tmp_path / "t" / "g.parquet")
    compaction.remove_file(f, data_change=False)
    compaction.add_file("g.parquet", {}, os.path.getsize(tmp_path / "t" / "g.parquet"), stats={"numRecords": 10}, data_change=False)
    t.delete("id = 3")
    with pytest.raises(docc.exceptions.ConcurrentDeleteReadException):
        compaction.commit()
    assert live_ids(t) == [i for i in range(10) if i != 3]
