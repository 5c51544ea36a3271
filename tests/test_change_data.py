"""The change data feed (issue 30, "Change data feed"; "What it must show" 4): every DML kind,
on both engines, with and without deletion vectors, partitioned and not, records exactly the rows
a small reference model (kept by the test, below) says it changed, by ``_change_type``; and the
feed over a range nets out to the difference of the two snapshots. deltalake 1.6 is the second
oracle where it reads the table (no DVs): its ``load_cdf`` of our tables, and our feed of tables
it wrote with its own DELETE/UPDATE/MERGE."""

from __future__ import annotations

import collections
import os
from typing import Callable, Dict, List, Tuple

import pyarrow as pa
import pytest

import delta_occ as docc
from delta_occ import exceptions as exc

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("p", pa.string())])
Row = Tuple[int, str, str]


def row(i: int, v: str) -> Row:
    return (i, v, "x" if i % 2 else "y")


def rows_table(rows: List[Row]) -> pa.Table:
    return pa.table({"id": [r[0] for r in rows], "v": [r[1] for r in rows], "p": [r[2] for r in rows]}, schema=SCHEMA)


class Model:
    """The table as a list of rows and, per operation, the changes it makes by kind."""

    def __init__(self) -> None:
        self.rows: List[Row] = []

    def append(self, new: List[Row]) -> Dict[str, List[Row]]:
        self.rows += new
        return {"insert": list(new)}

    def delete(self, pred: Callable[[Row], bool]) -> Dict[str, List[Row]]:
        gone = [r for r in self.rows if pred(r)]
        self.rows = [r for r in self.rows if not pred(r)]
        return {"delete": gone}

    def update(self, pred: Callable[[Row], bool], v: str) -> Dict[str, List[Row]]:
        pre = [r for r in self.rows if pred(r)]
        post = [(r[0], v, r[2]) for r in pre]
        self.rows = [r for r in self.rows if not pred(r)] + post
        return {"update_preimage": pre, "update_postimage": post}

    def merge(self, source: List[Row], delete_if: Callable[[Row], bool]) -> Dict[str, List[Row]]:
        """MERGE ON id: matched rows deleted where ``delete_if``, else v := source v; the
        unmatched source rows inserted."""
        by_id = {r[0]: r for r in source}
        matched = [r for r in self.rows if r[0] in by_id]
        gone = [r for r in matched if delete_if(r)]
        pre = [r for r in matched if not delete_if(r)]
        post = [(r[0], by_id[r[0]][1], r[2]) for r in pre]
        ins = [r for r in source if r[0] not in {m[0] for m in matched}]
        self.rows = [r for r in self.rows if r[0] not in by_id] + post + ins
        return {"delete": gone, "update_preimage": pre, "update_postimage": post, "insert": ins}

    def overwrite(self, new: List[Row], pred: Callable[[Row], bool] = lambda r: True) -> Dict[str, List[Row]]:
        gone = [r for r in self.rows if pred(r)]
        self.rows = [r for r in self.rows if not pred(r)] + new
        return {"delete": gone, "insert": list(new)}


#: The operations, each as (embedded-engine call, Spark call, model call). The conditions are
#: written twice: as SQL for the engines and as Python for the model.
OPS = [
    ("append", lambda t, d: t.append(d([row(i, f"a{i}") for i in range(30)])), lambda m: m.append([row(i, f"a{i}") for i in range(30)])),
    ("delete", lambda t, d: t.delete("id % 5 = 0"), lambda m: m.delete(lambda r: r[0] % 5 == 0)),
    ("update", lambda t, d: t.update("id % 3 = 1", {"v": "'u'"}), lambda m: m.update(lambda r: r[0] % 3 == 1, "u")),
    (
        "merge",
        lambda t, d: t.merge(
            d([row(i, f"m{i}") for i in range(24, 34)]), on="t.id = s.id", when_matched_update={"v": "s.v"},
            when_matched_delete="t.id % 4 = 0", when_not_matched_insert=True,
        ),
        lambda m: m.merge([row(i, f"m{i}") for i in range(24, 34)], lambda r: r[0] % 4 == 0),
    ),
    ("replace_where", lambda t, d: t.overwrite(d([row(i, f"w{i}") for i in (101, 103)]), replace_where="p = 'x'"),
     lambda m: m.overwrite([row(i, f"w{i}") for i in (101, 103)], lambda r: r[2] == "x")),
    ("delete_rest", lambda t, d: t.delete("v LIKE 'a%'"), lambda m: m.delete(lambda r: r[1].startswith("a"))),
    ("overwrite", lambda t, d: t.overwrite(d([row(i, f"o{i}") for i in (200, 201, 202)])), lambda m: m.overwrite([row(i, f"o{i}") for i in (200, 201, 202)])),
    ("delete_all", lambda t, d: t.delete(), lambda m: m.delete(lambda r: True)),
]


def feed_by_kind(feed: pa.Table) -> Dict[str, collections.Counter]:
    out: Dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for r in feed.select(["id", "v", "p", "_change_type"]).to_pylist():
        out[r["_change_type"]][(r["id"], r["v"], r["p"])] += 1
    return {k: v for k, v in out.items() if v}


def expected_by_kind(changes: Dict[str, List[Row]]) -> Dict[str, collections.Counter]:
    return {k: collections.Counter(v) for k, v in changes.items() if v}


def snapshot_rows(table: docc.Table, version: int) -> collections.Counter:
    t = table.snapshot(version).to_pyarrow()
    return collections.Counter(zip(t["id"].to_pylist(), t["v"].to_pylist(), t["p"].to_pylist()))


def check_feed(table: docc.Table, model_changes: List[Dict[str, List[Row]]], first: int) -> None:
    """Per commit: the feed equals the model's changes; over the range: the net of the feed is
    the difference of the two snapshots."""
    for k, changes in enumerate(model_changes):
        v = first + k
        feed = table.read_change_feed(v, v)
        assert set(feed["_commit_version"].to_pylist()) <= {v}
        assert feed_by_kind(feed) == expected_by_kind(changes), (v, OPS[k][0])
    last = first + len(model_changes) - 1
    whole = table.read_change_feed(first, last)
    net = collections.Counter()
    for r in whole.to_pylist():
        key = (r["id"], r["v"], r["p"])
        net[key] += 1 if r["_change_type"] in ("insert", "update_postimage") else -1
    diff = snapshot_rows(table, last)
    diff.subtract(snapshot_rows(table, first - 1))
    assert +net == +diff and -net == -diff
    assert whole["_commit_version"].to_pylist() == sorted(whole["_commit_version"].to_pylist())


PROPS = {"delta.enableChangeDataFeed": "true"}


@pytest.mark.parametrize("dv", [False, True], ids=["rewrite", "dv"])
@pytest.mark.parametrize("partitioned", [False, True], ids=["flat", "partitioned"])
def test_embedded_feed_matches_the_model(tmp_path, dv, partitioned):
    props = dict(PROPS, **({"delta.enableDeletionVectors": "true"} if dv else {}))
    t = docc.Table.create(str(tmp_path / "t"), SCHEMA, partition_by=["p"] if partitioned else [], properties=props)
    model = Model()
    changes = []
    for _, run, expect in OPS:
        run(t, rows_table)
        changes.append(expect(model))
        assert snapshot_rows(t, t.version) == collections.Counter(model.rows)
    check_feed(t, changes, 1)
    # cdc actions land in the log, files under _change_data/ (the protocol's place for them)
    cdc_dirs = [d for d, _, fs in os.walk(tmp_path / "t" / "_change_data") if fs]
    assert cdc_dirs
    if not dv:
        deltalake = pytest.importorskip("deltalake")
        theirs = deltalake.DeltaTable(str(tmp_path / "t")).load_cdf(starting_version=1, ending_version=t.version).read_all()
        ours = t.read_change_feed(1)
        key = lambda tb: collections.Counter(zip(*(tb[c].to_pylist() for c in ("id", "v", "p", "_change_type", "_commit_version"))))  # noqa: E731
        assert key(theirs) == key(ours)


def test_feed_of_a_table_deltalake_wrote(tmp_path):
    """deltalake's own DELETE, UPDATE and MERGE on a CDF table: our feed equals its load_cdf."""
    deltalake = pytest.importorskip("deltalake")
    path = str(tmp_path / "t")
    deltalake.write_deltalake(path, rows_table([row(i, f"a{i}") for i in range(12)]), configuration=PROPS)
    dt = deltalake.DeltaTable(path)
    dt.delete("id < 3")
    dt.update(predicate="id = 5", updates={"v": "'u'"})
    (
        dt.merge(rows_table([row(i, f"m{i}") for i in (10, 11, 12)]), "t.id = s.id", source_alias="s", target_alias="t")
        .when_matched_update({"v": "s.v"})
        .when_not_matched_insert_all()
        .execute()
    )
    deltalake.write_deltalake(path, rows_table([row(50, "z")]), mode="append")
    dt = deltalake.DeltaTable(path)
    theirs = dt.load_cdf(starting_version=0, ending_version=dt.version()).read_all()
    ours = docc.Table(path).read_change_feed(0)
    key = lambda tb: collections.Counter(zip(*(tb[c].to_pylist() for c in ("id", "v", "p", "_change_type", "_commit_version"))))  # noqa: E731
    assert key(ours) == key(theirs)
    # and our writes continue the feed deltalake reads
    t = docc.Table(path)
    t.delete("id = 4")
    again = pa.table(deltalake.DeltaTable(path).load_cdf(starting_version=t.version, ending_version=t.version).read_all())
    assert again.select(["id", "v", "p", "_change_type"]).to_pylist() == [{"id": 4, "v": "a4", "p": "y", "_change_type": "delete"}]


def test_feed_errors(tmp_path):
    t = docc.Table.create(str(tmp_path / "plain"), SCHEMA)
    t.append(rows_table([row(1, "a")]))
    with pytest.raises(exc.InvalidArgumentError, match="change data feed .* is not on at version 1"):
        t.read_change_feed(1)
    c = docc.Table.create(str(tmp_path / "c"), SCHEMA, properties=PROPS)
    c.append(rows_table([row(1, "a")]))
    with pytest.raises(exc.VersionNotFoundError):
        c.read_change_feed(0, 5)
    with pytest.raises(exc.InvalidArgumentError, match="after ending_version"):
        c.read_change_feed(1, 0)
    with pytest.raises(exc.InvalidArgumentError):
        c.read_change_feed(-1)
    # The feed turned on later: versions before it are refused, versions after read.
    t.set_properties(PROPS)
    t.delete("id = 1")
    assert feed_by_kind(t.read_change_feed(t.version)) == {"delete": collections.Counter([row(1, "a")])}


def test_dv_delete_without_cdc_is_refused(tmp_path):
    """A low-level transaction that deletes rows through a DV on a CDF table without recording
    them: the change feed could not show them, so the commit is refused and nothing lands."""
    t = docc.Table.create(str(tmp_path / "t"), SCHEMA, properties=dict(PROPS, **{"delta.enableDeletionVectors": "true"}))
    t.append(rows_table([row(i, "a") for i in range(4)]))
    path = t.snapshot().files(["path"])["path"][0].as_py()
    txn = t.begin()
    txn.delete_rows(path, [0])
    with pytest.raises(exc.InvalidArgumentError, match="must record them in cdc files"):
        txn.commit()
    assert t.refresh() == 1


def test_cdc_path_must_be_under_change_data(tmp_path):
    t = docc.Table.create(str(tmp_path / "t"), SCHEMA, properties=PROPS)
    txn = t.begin()
    with pytest.raises(exc.InvalidArgumentError, match="_change_data/"):
        txn.add_cdc_file("elsewhere/cdc-1.parquet", {}, 10)
    txn.abort()


@pytest.mark.parametrize("dv,partitioned", [(True, True), (False, False)], ids=["dv-partitioned", "rewrite-flat"])
def test_spark_feed_matches_the_model(spark, tmp_path, dv, partitioned):
    """The same operations through a SparkTable: the feed the model says, the same as the
    embedded engine records."""
    spark_mod = pytest.importorskip("delta_occ.spark", reason="pyspark is not installed")
    props = dict(PROPS, **({"delta.enableDeletionVectors": "true"} if dv else {}))
    st = spark_mod.SparkTable.create(spark, tmp_path / "t", SCHEMA, partition_by=["p"] if partitioned else [], properties=props)

    def frame(rows: List[Row]):
        return spark.createDataFrame(rows, "id long, v string, p string").repartition(2)

    model = Model()
    changes = []
    for _, run, expect in OPS:
        run(st, frame)
        changes.append(expect(model))
    t = docc.Table(str(tmp_path / "t"))
    assert snapshot_rows(t, t.version) == collections.Counter(model.rows)
    check_feed(t, changes, 1)
    df = st.read_change_feed(2, 3)
    assert sorted(r["_change_type"] for r in df.collect()) == sorted(
        k for c in changes[1:3] for k, rows in c.items() for _ in rows
    )
    # The whole feed read by the executors equals the embedded reader's (checked against the
    # model above), commit by commit.
    def key(r):
        return (r["id"], r["v"], r["p"], r["_change_type"], r["_commit_version"])
    assert collections.Counter(key(r) for r in st.read_change_feed(1).collect()) == collections.Counter(key(r) for r in t.read_change_feed(1).to_pylist())
    assert st.read_change_feed(1, columns=["id"]).columns == ["id", "_change_type", "_commit_version", "_commit_timestamp"]


def test_spark_append_then_change_in_one_transaction_is_refused(spark, tmp_path):
    """A commit with change-data files is read from them alone: an append recorded nowhere would
    vanish from the feed, so the Spark transaction refuses the mix; a change first, then an
    append, records the append's rows as inserts."""
    spark_mod = pytest.importorskip("delta_occ.spark", reason="pyspark is not installed")
    st = spark_mod.SparkTable.create(spark, tmp_path / "t", SCHEMA, properties=PROPS)
    st.append(spark.createDataFrame([row(i, "a") for i in range(4)], "id long, v string, p string"))
    with pytest.raises(exc.InvalidArgumentError, match="commit the append first"):
        with st.begin() as tx:
            tx.append(spark.createDataFrame([row(9, "b")], "id long, v string, p string"))
            tx.delete("id = 1")
    with st.begin() as tx:
        tx.delete("id = 1")
        tx.append(spark.createDataFrame([row(9, "b")], "id long, v string, p string"))
    t = docc.Table(str(tmp_path / "t"))
    assert feed_by_kind(t.read_change_feed(t.version)) == {"delete": collections.Counter([row(1, "a")]), "insert": collections.Counter([row(9, "b")])}


# -- golden tables (expected values from ../shared/testdata/golden/INDEX.md) ------------------------


def test_golden_feed_across_cdc_files_and_dvs():
    """INDEX appendix "expected CDF of delta-rs/cdf-table-with-cdc-and-dvs": 43 change rows from
    version 0 (UPDATE/DELETE/MERGE with DVs written by Databricks), timestamps included."""
    from conftest import GOLDEN
    from golden_index import appendix_table

    expected = appendix_table("Appendix: expected CDF of delta-rs/cdf-table-with-cdc-and-dvs")
    assert len(expected) == 43
    feed = docc.Table(str(GOLDEN / "delta-rs/cdf-table-with-cdc-and-dvs")).read_change_feed(0)
    got = collections.Counter(
        (r["id"], r["comment"] or None, r["_change_type"], r["_commit_version"], r["_commit_timestamp"].strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3])
        for r in feed.to_pylist()
    )
    want = collections.Counter(
        (int(e["id"]), e["comment"] or None, e["_change_type"], int(e["_commit_version"]), e["_commit_timestamp"]) for e in expected
    )
    assert got == want


def test_golden_feed_takes_in_commit_timestamps():
    """INDEX delta-rs/cdc_ict_table: v2 deletes (Dan,14) and (Dave,22) of 1995 at ICT
    2026-07-12T16:36:52.175; v3 updates Kate 36->37 and Steve 40->41 at 16:36:53.881."""
    from conftest import GOLDEN

    feed = docc.Table(str(GOLDEN / "delta-rs/cdc_ict_table")).read_change_feed(2, 3)
    rows = sorted((r["_commit_version"], r["_change_type"], r["name"], r["age"], r["_commit_timestamp"].strftime("%H:%M:%S.%f")[:-3]) for r in feed.to_pylist())
    assert rows == [
        (2, "delete", "Dan", 14, "16:36:52.175"), (2, "delete", "Dave", 22, "16:36:52.175"),
        (3, "update_postimage", "Kate", 37, "16:36:53.881"), (3, "update_postimage", "Steve", 41, "16:36:53.881"),
        (3, "update_preimage", "Kate", 36, "16:36:53.881"), (3, "update_preimage", "Steve", 40, "16:36:53.881"),
    ]


def test_our_dml_on_the_golden_cdf_dv_table(tmp_path):
    """Our DELETE and UPDATE on a copy of the Databricks-written CDF + DV table: the feed of our
    commits holds exactly the rows changed (the INDEX's final snapshot: 5 rows), and
    delta-kernel-rs reads the table with the same rows as our snapshot."""
    from conftest import copy_golden
    from helpers import kernel_rows

    path = copy_golden("delta-rs/cdf-table-with-cdc-and-dvs", tmp_path / "t")
    t = docc.Table(str(path))
    before = t.snapshot().to_pyarrow().to_pylist()
    assert len(before) == 5
    victim = min(r["id"] for r in before)
    t.delete(f"id = {victim}")
    feed = t.read_change_feed(t.version)
    assert [(r["id"], r["_change_type"]) for r in feed.to_pylist()] == [(victim, "delete")]
    t.update("id > 0", {"comment": "'ours'"})
    feed = t.read_change_feed(t.version)
    survivors = sorted(r["id"] for r in before if r["id"] != victim)
    assert sorted(r["id"] for r in feed.to_pylist() if r["_change_type"] == "update_postimage") == [i for i in survivors if i > 0]
    assert {r["comment"] for r in feed.to_pylist() if r["_change_type"] == "update_postimage"} == {"ours"}
    ours = sorted((r["id"], r["comment"]) for r in t.snapshot().to_pyarrow().to_pylist())
    theirs = kernel_rows(t)
    assert sorted((r["id"], r["comment"]) for r in theirs.to_pylist()) == ours


@pytest.mark.parametrize("winner", ["update", "optimize", "merge"])
def test_row_level_rebase_keeps_the_feed(tmp_path, winner):
    """A DELETE that loses the race to a change of other rows of its file (row-level
    concurrency) or to a compaction of that file commits after rebasing: its change-data files
    still hold exactly the row it deleted, the winner's feed its own changes, and the feed over
    both nets out to the difference of the snapshots (model: the two operations in commit order)."""
    t = docc.Table.create(str(tmp_path / "t"), SCHEMA, properties=dict(PROPS, **{"delta.enableDeletionVectors": "true"}))
    model = Model()
    t.append(rows_table([row(i, f"a{i}") for i in range(10)]))
    model.append([row(i, f"a{i}") for i in range(10)])
    t.append(rows_table([row(i, f"a{i}") for i in range(10, 20)]))
    model.append([row(i, f"a{i}") for i in range(10, 20)])
    loser = t.begin()
    loser.delete("id = 2")
    if winner == "update":
        t.update("id = 4", {"v": "'u'"})
        won = model.update(lambda r: r[0] == 4, "u")
    elif winner == "merge":
        t.merge(rows_table([row(5, "m5"), row(30, "m30")]), on="t.id = s.id", when_matched_update={"v": "s.v"}, when_not_matched_insert=True)
        won = model.merge([row(5, "m5"), row(30, "m30")], lambda r: False)
    else:
        t.optimize()
        won = {}
        assert len(t.snapshot().files()) == 1
    result = loser.commit()
    assert result.rebased_over == [3], result
    lost = model.delete(lambda r: r[0] == 2)
    assert snapshot_rows(t, t.refresh()) == collections.Counter(model.rows)
    assert feed_by_kind(t.read_change_feed(3, 3)) == expected_by_kind(won)
    assert feed_by_kind(t.read_change_feed(4, 4)) == expected_by_kind(lost)
    net = collections.Counter()
    for r in t.read_change_feed(1).to_pylist():
        net[(r["id"], r["v"], r["p"])] += 1 if r["_change_type"] in ("insert", "update_postimage") else -1
    assert +net == collections.Counter(model.rows) and not -net


def test_racing_writers_each_commit_feed_is_its_snapshot_difference(tmp_path):
    """Four threads (append, DV DELETE, UPDATE, MERGE, OPTIMIZE) race on one CDF + DV table for
    a few seconds, retrying on conflicts: for every version, the feed of that one commit nets out
    to snapshot(v) - snapshot(v-1) (multisets of rows), whatever rebases the commits went through."""
    import random
    import threading
    import time

    t = docc.Table.create(str(tmp_path / "t"), SCHEMA, properties=dict(PROPS, **{"delta.enableDeletionVectors": "true"}))
    t.append(rows_table([row(i, f"a{i}") for i in range(40)]))
    stop = time.monotonic() + 4
    errors: List[BaseException] = []
    next_id = iter(range(1000, 100000, 10))
    lock = threading.Lock()

    def worker(seed: int) -> None:
        rnd = random.Random(seed)
        tbl = docc.Table(str(tmp_path / "t"))
        while time.monotonic() < stop:
            kind = rnd.choice(["append", "delete", "update", "merge", "optimize"])
            k = rnd.randrange(40)
            try:
                if kind == "append":
                    with lock:
                        base = next(next_id)
                    tbl.append(rows_table([row(base + j, f"n{base + j}") for j in range(3)]))
                elif kind == "delete":
                    tbl.delete(f"id = {k}")
                elif kind == "update":
                    tbl.update(f"id % 7 = {k % 7}", {"v": f"'u{seed}-{k}'"})
                elif kind == "merge":
                    tbl.merge(rows_table([row(k, f"m{k}"), row(500 + k, "mi")]), on="t.id = s.id", when_matched_update={"v": "s.v"})
                else:
                    tbl.optimize()
            except exc.DeltaConcurrentModificationException:
                pass  # a lost race: nothing of it landed, which the per-version check below sees
            except BaseException as e:  # noqa: BLE001 - reported by the test
                errors.append(e)
                return

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    last = t.refresh()
    assert last >= 10, last
    previous = snapshot_rows(t, 1)
    for v in range(2, last + 1):
        current = snapshot_rows(t, v)
        net = collections.Counter()
        for r in t.read_change_feed(v, v).to_pylist():
            net[(r["id"], r["v"], r["p"])] += 1 if r["_change_type"] in ("insert", "update_postimage") else -1
        diff = collections.Counter(current)
        diff.subtract(previous)
        assert {k: n for k, n in net.items() if n} == {k: n for k, n in diff.items() if n}, v
        previous = current


def test_feed_by_timestamps(tmp_path):
    """With in-commit timestamps (so each commit's time is in its commitInfo): a start timestamp
    begins at the first version committed at or after it, an end timestamp ends at the version
    current at it; both from the log's inCommitTimestamp values, not from delta-occ's answer."""
    import datetime
    import time

    t = docc.Table.create(str(tmp_path / "t"), SCHEMA, properties=dict(PROPS, **{"delta.enableInCommitTimestamps": "true"}))
    for i in range(4):
        time.sleep(0.01)
        t.append(rows_table([row(i, f"a{i}")]))  # v1..v4
    ict = {h["version"]: h["inCommitTimestamp"] for h in t.history()}

    def at(ms: int) -> datetime.datetime:
        return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)

    feed = t.read_change_feed(starting_timestamp=at(ict[2]), ending_timestamp=at(ict[3]))
    assert sorted(set(feed["_commit_version"].to_pylist())) == [2, 3]
    feed = t.read_change_feed(starting_timestamp=at(ict[2] - 1), ending_timestamp=at(ict[4] - 1))
    assert sorted(set(feed["_commit_version"].to_pylist())) == [2, 3]
    feed = t.read_change_feed(starting_timestamp="2000-01-01")  # before the table: from version 0
    assert sorted(set(feed["_commit_version"].to_pylist())) == [1, 2, 3, 4]
    with pytest.raises(exc.InvalidArgumentError, match="not both"):
        t.read_change_feed(1, starting_timestamp="2000-01-01")
    with pytest.raises(exc.InvalidArgumentError, match="starting_version or starting_timestamp"):
        t.read_change_feed()


def test_feed_types_partition_values_as_the_core_does(tmp_path):
    """Partition values of cdc files come back typed by the core's rule for the log's spelling
    (a timestamp partition is `2024-01-02 03:04:05.000006`, which pyarrow's own cast refuses):
    the feed shows the values that were written."""
    import datetime

    schema = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us", "UTC")), ("d", pa.date32())])
    ts = [datetime.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=datetime.timezone.utc), datetime.datetime(2024, 5, 6, tzinfo=datetime.timezone.utc)]
    days = [datetime.date(2024, 1, 2), datetime.date(2024, 5, 6)]
    t = docc.Table.create(str(tmp_path / "t"), schema, partition_by=["ts", "d"], properties=PROPS)
    t.append(pa.table({"id": [1, 2], "ts": ts, "d": days}, schema=schema))
    t.delete("id = 1")
    feed = t.read_change_feed(t.version).to_pylist()
    assert [(r["id"], r["ts"], r["d"], r["_change_type"]) for r in feed] == [(1, ts[0], days[0], "delete")]
