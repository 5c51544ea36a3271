"""Row tracking (issue 30, "Row tracking"; the protocol's rules as protocol-notes §6 gives them):
every add of a table with the ``rowTracking`` feature gets ``baseRowId`` (the first file of a
table takes 0, each next one starts one above the ``delta.rowTracking`` high-water mark, which
moves by the file's physical rows) and ``defaultRowCommitVersion`` (the version it lands at); a
file re-committed with a larger DV keeps both; a commit that lost a race takes ids above the
winner's mark. The expected ids are worked out from those rules by hand in each test;
delta-kernel-rs reads the rows back. OPTIMIZE (bin-packing, Z-order, clustering) and DV purges
copy rows with their ids and commit versions materialized (read back here by a reader written from
the protocol: the materialized column, else baseRowId + position), and DML that loses to a
compaction without provenance follows its rows there by id. The other operations that copy rows
(UPDATE, MERGE's update) are typed errors with nothing written."""

from __future__ import annotations

import json
import os
import threading
from typing import Dict, List, Tuple

import pyarrow as pa
import pytest

import delta_occ as docc
from delta_occ import exceptions as exc

from helpers import kernel_rows

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
RT = {"delta.enableRowTracking": "true"}
RT_DV = {**RT, "delta.enableDeletionVectors": "true"}


def rows(ids: List[int]) -> pa.Table:
    return pa.table({"id": ids, "v": [f"v{i}" for i in ids]}, schema=SCHEMA)


def log_actions(path) -> Dict[int, List[dict]]:
    log = os.path.join(str(path), "_delta_log")
    out = {}
    for name in sorted(os.listdir(log)):
        if name.endswith(".json"):
            out[int(name.split(".")[0])] = [json.loads(line) for line in open(os.path.join(log, name))]
    return out


def live_ids(t: docc.Table) -> Dict[str, Tuple[int, int, int]]:
    """path -> (baseRowId, defaultRowCommitVersion, numRecords), from the log's adds."""
    live: Dict[str, Tuple[int, int, int]] = {}
    for _, actions in sorted(log_actions(t.path).items()):
        for a in actions:
            if "remove" in a:
                live.pop(a["remove"]["path"], None)
            if "add" in a:
                add = a["add"]
                live[add["path"]] = (add.get("baseRowId"), add.get("defaultRowCommitVersion"), json.loads(add["stats"])["numRecords"])
    return live


def mark(t: docc.Table) -> int:
    found = -1
    for _, actions in sorted(log_actions(t.path).items()):
        for a in actions:
            d = a.get("domainMetadata")
            if d and d["domain"] == "delta.rowTracking":
                found = json.loads(d["configuration"])["rowIdHighWaterMark"]
    return found


def test_fresh_ids_follow_the_mark(tmp_path):
    t = docc.Table.create(str(tmp_path / "t"), SCHEMA, properties=RT_DV)
    proto = t.snapshot().protocol
    assert {"rowTracking", "domainMetadata"} <= set(proto["writer_features"])
    assert "rowTracking" not in (proto.get("reader_features") or [])  # a writer-only feature
    t.append(rows([0, 1, 2]))  # v1: ids 0..2
    t.append(rows([3, 4, 5, 6]))  # v2: ids 3..6
    ids = sorted(live_ids(t).values())
    assert ids == [(0, 1, 3), (3, 2, 4)]
    assert mark(t) == 6
    # A DV DELETE re-commits the file with its own ids; no id is handed out, the mark stays.
    t.delete("id = 4")
    assert sorted(live_ids(t).values()) == [(0, 1, 3), (3, 2, 4)]
    assert mark(t) == 6
    assert not any("domainMetadata" in a for a in log_actions(t.path)[3])
    t.append(rows([7]))  # v4: id 7
    assert sorted(live_ids(t).values()) == [(0, 1, 3), (3, 2, 4), (7, 4, 1)]
    assert mark(t) == 7
    assert sorted(kernel_rows(t).column("id").to_pylist()) == [0, 1, 2, 3, 5, 6, 7]


def test_racing_appends_take_disjoint_ids_at_their_versions(tmp_path):
    """Six threads append 5 batches each: the id ranges of all files are disjoint and cover
    0..mark exactly, each file's defaultRowCommitVersion is the version whose commit added it."""
    t = docc.Table.create(str(tmp_path / "t"), SCHEMA, properties=RT)
    errors: List[BaseException] = []

    def worker(k: int) -> None:
        tbl = docc.Table(str(tmp_path / "t"))
        try:
            for b in range(5):
                tbl.append(rows([k * 100 + b * 10 + j for j in range(k + 1)]))
        except BaseException as e:  # noqa: BLE001 - reported by the test
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    added_at = {a["add"]["path"]: v for v, acts in log_actions(t.path).items() for a in acts if "add" in a}
    ranges = []
    for path, (base, version, n) in live_ids(t).items():
        assert version == added_at[path], path
        ranges.append((base, base + n - 1))
    ranges.sort()
    assert ranges[0][0] == 0
    for (_, hi), (lo, _) in zip(ranges, ranges[1:]):
        assert lo == hi + 1  # no overlap, no gap: every id handed out once
    assert ranges[-1][1] == mark(t) == 5 * sum(k + 1 for k in range(6)) - 1
    rebased = [json.loads(json.dumps(a["commitInfo"])) for acts in log_actions(t.path).values() for a in acts if "commitInfo" in a]
    assert any(c.get("deltaOcc", {}).get("attempt", 1) > 1 for c in rebased), "no commit retried: the race was not exercised"


COPIES = [
    # UPDATE at v3: row 1 keeps id 1 and takes commit version 3
    ("update", RT_DV, lambda t, src: t.update("id = 1", {"v": "'x'"}), {0: (0, 1), 1: (1, 3), 2: (2, 1), 3: (3, 2)}),
    # MERGE at v3: row 1 updated as above, row 9 inserted with a fresh id (above the mark 3)
    ("merge", RT_DV, lambda t, src: t.merge(src([1, 9]), on="t.id = s.id", when_matched_update={"v": "s.v"}, when_not_matched_insert=True),
     {0: (0, 1), 1: (1, 3), 2: (2, 1), 3: (3, 2), 9: ("fresh", 3)}),
    # without DVs a DELETE rewrites the file's other rows: they keep ids and commit versions
    ("rewrite-delete", RT, lambda t, src: t.delete("id = 0"), {1: (1, 1), 2: (2, 1), 3: (3, 2)}),
    # likewise an UPDATE without DVs: the copied rows keep both, the updated row keeps its id
    ("rewrite-update", RT, lambda t, src: t.update("id = 2", {"v": "'y'"}), {0: (0, 1), 1: (1, 1), 2: (2, 3), 3: (3, 2)}),
    ("rewrite-merge", RT, lambda t, src: t.merge(src([1, 9]), on="t.id = s.id", when_matched_update={"v": "s.v"}, when_not_matched_insert=True),
     {0: (0, 1), 1: (1, 3), 2: (2, 1), 3: (3, 2), 9: ("fresh", 3)}),
    ("replace-where", RT, lambda t, src: t.overwrite(src([7]), replace_where="id IN (1, 7)"), {0: (0, 1), 2: (2, 1), 3: (3, 2), 7: ("fresh", 3)}),
    # compactions keep both (OPTIMIZE at v3)
    ("optimize", RT_DV, lambda t, src: t.optimize(), {0: (0, 1), 1: (1, 1), 2: (2, 1), 3: (3, 2)}),
    ("zorder", RT_DV, lambda t, src: t.optimize(zorder_by=["v"]), {0: (0, 1), 1: (1, 1), 2: (2, 1), 3: (3, 2)}),
]


CONNECT = ("merge", "rewrite-update", "zorder")  # Spark Connect: one case per read path


@pytest.mark.parametrize(
    "engine,name,properties,op,want",
    [pytest.param(e, *c, id=f"{c[0]}-{e}") for c in COPIES for e in ("embedded", "spark", "connect") if e != "connect" or c[0] in CONNECT],
)
def test_operations_that_copy_rows_keep_their_ids(request, tmp_path, engine, name, properties, op, want):
    """Appends of ids 0-2 (v1) and 3 (v2) take row ids 0-2 and 3 at versions 1 and 2 (by hand);
    every row an operation copies keeps its id; a changed row takes the operation's version; a
    new row takes a fresh id above the mark (protocol "Row Tracking": materialized columns). Both
    engines give the same ids."""
    path = str(tmp_path / "t")
    t = docc.Table.create(path, SCHEMA, properties=properties)
    t.append(rows([0, 1, 2]))
    t.append(rows([3]))
    if engine != "embedded":
        spark = request.getfixturevalue("spark_classic" if engine == "spark" else "spark_connect")
        from delta_occ.spark import SparkTable

        op(SparkTable(spark, path), lambda ids: spark.createDataFrame([(i, f"v{i}") for i in ids], "id long, v string"))
    else:
        op(t, rows)
    assert t.refresh() == 3
    got = row_ids_by_protocol(t)
    for key, (rid, version) in want.items():
        if rid == "fresh":
            assert 3 < got[key][0] <= mark(t) and got[key][1] == version, (key, got)
            want[key] = got[key]
    assert got == want
    assert len({rid for rid, _ in got.values()}) == len(got)
    assert sorted(kernel_rows(t).column("id").to_pylist()) == sorted(want)


@pytest.mark.parametrize("dvs", [True, False], ids=["dvs", "no-dvs"])
def test_enabling_on_a_table_with_files_backfills_in_the_same_commit(tmp_path, dvs):
    """Enabling row tracking on a table with files is one commit (v4): the protocol gains
    rowTracking, every live file is committed again as it is (dataChange=false, its DV kept) and
    takes ids like a new file, in snapshot order from 0, at version 4; readers never see the table
    enabled with a file lacking ids. Ids by hand: files of 2 and 1 physical rows -> 0-1 and 2."""
    props = {"delta.enableDeletionVectors": "true"} if dvs else {}
    t = docc.Table.create(str(tmp_path / "t"), SCHEMA, properties=props)
    t.append(rows([0, 1]))  # v1
    t.append(rows([2]))  # v2
    t.delete("id = 1")  # v3: a DV (or, without DVs, a rewrite of id 0 alone)
    before = sorted(kernel_rows(t).column("id").to_pylist())
    t.set_properties(RT)  # v4
    assert t.refresh() == 4
    assert "rowTracking" in t.snapshot().protocol["writer_features"]
    adds = [a["add"] for a in log_actions(t.path)[4] if "add" in a]
    # the live files, added again (as delta-spark's backfill does: adds only)
    assert len(adds) == 2 and not any(a["dataChange"] for a in adds)
    assert not [a for a in log_actions(t.path)[4] if "remove" in a]
    assert sorted(a["path"] for a in adds) == sorted(live_ids(t))
    assert sorted(t.snapshot().to_pyarrow().column("id").to_pylist()) == [0, 2]
    got = sorted(live_ids(t).values())
    assert [v for _, v, _ in got] == [4, 4]
    n = [rows_ for _, _, rows_ in got]
    assert [b for b, _, _ in got] == [0, n[0]] and mark(t) == sum(n) - 1
    assert sorted(kernel_rows(t).column("id").to_pylist()) == before == [0, 2]
    # rows keep those ids from now on: an UPDATE copies row 0 with its id
    want = row_ids_by_protocol(t)
    t.update("id = 0", {"v": "'z'"})
    assert row_ids_by_protocol(t)[0] == (want[0][0], 5)
    t.append(rows([9]))
    assert row_ids_by_protocol(t)[9] == (mark(t), 6)


def test_enabling_row_tracking_refusals_and_races(tmp_path):
    """The backfill re-commits every file: with other file changes in the transaction it is an
    InvalidArgumentError; an append racing it conflicts (a metadata change checks concurrent
    appends, §2); an empty table and a create need no backfill."""
    t = docc.Table.create(str(tmp_path / "t"), SCHEMA)
    t.append(rows([0]))
    txn = t.begin()
    txn.append(rows([1]))
    with pytest.raises(exc.InvalidArgumentError, match="transaction of its own"):
        txn.set_properties(RT)
    txn = docc.Table(t.path).begin()
    txn.set_properties(RT)
    t.append(rows([2]))
    with pytest.raises(exc.ConcurrentAppendException):
        txn.commit()
    assert not row_tracking_on(t)
    empty = docc.Table.create(str(tmp_path / "e"), SCHEMA)
    empty.set_properties(RT)
    empty.append(rows([5, 6]))
    assert list(live_ids(empty).values()) == [(0, 2, 2)]
    with pytest.raises(exc.InvalidArgumentError):
        docc.Table.create(str(tmp_path / "s"), SCHEMA, properties={**RT, "delta.rowTrackingSuspended": "true"})


def row_tracking_on(t: docc.Table) -> bool:
    return t.snapshot().properties.get("delta.enableRowTracking") == "true"


def test_golden_row_tracking_tables_read():
    """INDEX delta-rs/table_with_liquid_clustering: 10 rows, baseRowId 0..9 (read; its writer
    feature `liquid` is Databricks' pre-release name, which delta-occ does not write)."""
    from conftest import GOLDEN

    t = docc.Table(str(GOLDEN / "delta-rs/table_with_liquid_clustering"))
    assert t.snapshot().to_pyarrow().num_rows == 10
    with pytest.raises(exc.UnsupportedFeatureError, match="liquid"):
        t.append(t.snapshot().to_pyarrow().slice(0, 1))


def test_spark_writes_take_ids(spark, tmp_path):
    """Through a SparkTable: an append of several files takes consecutive, disjoint ranges; a DV
    DELETE keeps them."""
    spark_mod = pytest.importorskip("delta_occ.spark", reason="pyspark is not installed")
    st = spark_mod.SparkTable.create(spark, tmp_path / "t", SCHEMA, properties=RT_DV)
    st.append(spark.createDataFrame([(i, f"v{i}") for i in range(10)], "id long, v string").repartition(3))  # v1
    t = docc.Table(str(tmp_path / "t"))
    files = sorted(live_ids(t).values())
    assert len(files) == 3 and all(v == 1 for _, v, _ in files)
    at = 0
    for base, _, n in files:
        assert base == at
        at += n
    assert mark(t) == 9
    st.delete("id = 3")
    assert sorted(live_ids(t).values()) == files



def test_deltalake_reads_our_row_tracking_table(tmp_path):
    """deltalake 1.6 reads a row-tracking table we wrote (no DVs: its reads of DV tables are not an
    oracle here) with our rows, also after a rewrite that materialized row ids (files with columns
    outside the schema); it does not write such tables ("Unsupported table features required:
    [DomainMetadata, RowTracking]"), which the test records so a change shows."""
    deltalake = pytest.importorskip("deltalake")
    t = docc.Table.create(str(tmp_path / "t"), SCHEMA, properties=RT)
    t.append(rows([1, 2, 3]))
    t.append(rows([4]))
    theirs = pa.table(deltalake.DeltaTable(str(tmp_path / "t")).to_pyarrow_table())
    assert sorted(theirs.column("id").to_pylist()) == [1, 2, 3, 4]
    t.update("id = 2", {"v": "'x'"})  # rewrites the first file: materialized ids
    theirs = pa.table(deltalake.DeltaTable(str(tmp_path / "t")).to_pyarrow_table())
    assert theirs.column_names == ["id", "v"]
    assert sorted(zip(theirs.column("id").to_pylist(), theirs.column("v").to_pylist())) == [(1, "v1"), (2, "x"), (3, "v3"), (4, "v4")]
    with pytest.raises(Exception, match="RowTracking"):
        deltalake.write_deltalake(str(tmp_path / "t"), rows([9]), mode="append")


def row_ids_by_protocol(t: docc.Table) -> Dict[int, Tuple[int, int]]:
    """id column -> (row id, row commit version) of every live row, read as the protocol says
    (independently of delta-occ's reader): the file's materialized columns where set, else
    baseRowId + physical position and defaultRowCommitVersion; DV-deleted rows left out."""
    import pyarrow.parquet as pq

    snap = t.snapshot()
    config = snap.properties
    id_col = config.get("delta.rowTracking.materializedRowIdColumnName")
    version_col = config.get("delta.rowTracking.materializedRowCommitVersionColumnName")
    out: Dict[int, Tuple[int, int]] = {}
    for path, (base, version, n) in live_ids(t).items():
        data = pq.read_table(os.path.join(str(t.path), path))
        deleted = set(snap.deleted_rows(path).to_pylist())
        mat_ids = data.column(id_col).to_pylist() if id_col in data.column_names else [None] * n
        mat_versions = data.column(version_col).to_pylist() if version_col in data.column_names else [None] * n
        for pos, key in enumerate(data.column("id").to_pylist()):
            if pos not in deleted:
                out[key] = (base + pos if mat_ids[pos] is None else mat_ids[pos], version if mat_versions[pos] is None else mat_versions[pos])
    return out


def _purge(t: docc.Table) -> None:
    txn = t.begin()
    txn.purge_deletion_vectors()
    txn.commit()


@pytest.mark.parametrize(
    "name,op,clustered",
    [
        ("bin-packing", lambda t: t.optimize(), False),
        ("zorder", lambda t: t.optimize(zorder_by=["v"]), False),
        ("clustering", lambda t: t.optimize(), True),
        ("purge", lambda t: _purge(t), False),
    ],
    ids=lambda x: x if isinstance(x, str) else "",
)
def test_compactions_keep_row_ids_and_commit_versions(tmp_path, name, op, clustered):
    """Three appends (v1: ids 0-2, v2: 3-4, v3: 5) take row ids 0-2, 3-4, 5 and commit versions
    1, 2, 3 (the rules above, by hand); a DV DELETE of id 1 (v4) keeps them; the compaction (v5)
    rewrites the rows and every live row keeps its (row id, commit version); its outputs take
    fresh baseRowIds from 6 and defaultRowCommitVersion 5, the mark moving by their rows."""
    t = docc.Table.create(str(tmp_path / "t"), SCHEMA, properties=RT_DV, cluster_by=["v"] if clustered else None)
    t.append(rows([0, 1, 2]))
    t.append(rows([3, 4]))
    t.append(rows([5]))
    t.delete("id = 1")
    want = {0: (0, 1), 2: (2, 1), 3: (3, 2), 4: (4, 2), 5: (5, 3)}
    assert row_ids_by_protocol(t) == want
    op(t)
    assert t.refresh() == 5
    after = live_ids(t)
    new = [x for x in after.values() if x[1] == 5]
    # a purge rewrites only the file with a DV (ids 0-2); the others rewrite every file
    assert new and (len(new) == len(after) or name == "purge"), after
    assert row_ids_by_protocol(t) == want
    assert min(base for base, _, _ in new) == 6
    assert mark(t) == 6 + sum(n for _, _, n in new) - 1
    assert sorted(kernel_rows(t).column("id").to_pylist()) == sorted(want)
    # the materialized columns are no table columns: readers see the schema's columns only
    assert t.snapshot().to_pyarrow().column_names == ["id", "v"]
    # a later append still takes ids above the mark
    t.append(rows([9]))
    assert row_ids_by_protocol(t)[9] == (mark(t), 6)


def _race(tmp_path, dml, winners):
    """A DV table with row tracking, ids 0-9 in files of 0-4 and 5-9 (row ids = ids, by the rules
    above); ``dml`` staged on one handle, ``winners`` committed on another, then the DML commits."""
    t = docc.Table.create(str(tmp_path / "t"), SCHEMA, properties=RT_DV)
    t.append(rows([0, 1, 2, 3, 4]))
    t.append(rows([5, 6, 7, 8, 9]))
    txn = docc.Table(str(tmp_path / "t")).begin()
    dml(txn)
    for w in winners:
        w(t)
    return t, txn


@pytest.mark.parametrize(
    "dml,gone",
    [
        (lambda txn: txn.delete("id = 3"), {3}),  # a DV on one file
        (lambda txn: txn.delete("id >= 5"), {5, 6, 7, 8, 9}),  # a whole file removed
        (lambda txn: txn.delete("id IN (1, 8)"), {1, 8}),  # rows of both files
    ],
    ids=["dv", "whole-file", "two-files"],
)
def test_dml_losing_to_a_zorder_follows_its_rows_by_id(tmp_path, dml, gone):
    """A Z-order records no provenance; on a row-tracking table the DELETE's rows are found in
    its outputs by row id (concurrency.md §4 rule 5) and the DELETE commits: the rows equal the
    serial model (the Z-order, then the DELETE), every row keeps its id, and the commit names the
    rule. Without row tracking the same race conflicts (test_zorder)."""
    t, txn = _race(tmp_path, dml, [lambda t: t.optimize(zorder_by=["v"])])
    result = txn.commit()
    assert result.version == 4
    rules = [r for c in result.checks for r in c["rules"]]
    assert "pass_followed_by_row_id" in rules, result.checks
    want = {k: (k, 1 if k < 5 else 2) for k in range(10) if k not in gone}
    assert row_ids_by_protocol(t) == want
    assert sorted(kernel_rows(t).column("id").to_pylist()) == sorted(want)
    assert all(a["add"]["dataChange"] is False for a in log_actions(t.path)[3] if "add" in a)


def test_the_same_row_deleted_after_a_zorder_still_conflicts(tmp_path):
    """Followed onto the Z-order's output, the DELETE of id 3 meets a second winner that deleted
    id 3 there: §4 rule 1, ConcurrentDeleteDeleteException naming one overlapping row."""
    t, txn = _race(tmp_path, lambda txn: txn.delete("id = 3"), [lambda t: t.optimize(zorder_by=["v"]), lambda t: t.delete("id = 3")])
    with pytest.raises(exc.ConcurrentDeleteDeleteException) as e:
        txn.commit()
    assert e.value.overlapping_rows == 1
    assert sorted(k for k in row_ids_by_protocol(t)) == [0, 1, 2, 4, 5, 6, 7, 8, 9]


def test_rows_missing_from_a_foreign_compaction_fall_back_to_file_level(tmp_path):
    """A "compaction" (dataChange=false) whose output lost a row the DELETE changes cannot be
    followed: file-level conflict (§4 rule 6, fallback_no_provenance), nothing committed."""
    import shutil

    t = docc.Table.create(str(tmp_path / "t"), SCHEMA, properties=RT_DV)
    t.append(rows([0, 1]))
    t.append(rows([2]))
    txn = docc.Table(str(tmp_path / "t")).begin()
    txn.delete("id = 2")
    t.optimize(zorder_by=["v"])
    # Drop the last row of the Z-order's output behind delta-occ's back: the row id of id 2 is gone.
    (out,) = [p for p in live_ids(t)]
    import pyarrow.parquet as pq

    data = pq.read_table(os.path.join(str(t.path), out))
    keep = data.filter(pa.compute.not_equal(data.column("id"), 2))
    pq.write_table(keep, os.path.join(str(tmp_path), "x.parquet"))
    shutil.move(os.path.join(str(tmp_path), "x.parquet"), os.path.join(str(t.path), out))
    with pytest.raises(exc.ConcurrentDeleteDeleteException) as e:
        txn.commit()
    assert e.value.fallback == "fallback_no_provenance"
    assert "not found by row id" in str(e.value)
    assert t.refresh() == 3
