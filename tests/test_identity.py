"""Identity columns (issue 30, "Identity columns"). Expected values come from the Delta protocol's
definition ("Identity Columns": values ``start + k * step``, unique, beyond the column's
``delta.identity.highWaterMark``, which the writer moves; GENERATED ALWAYS refuses given values)
worked out by hand per case, from a small reference model (``Model``) for the property test, and
from concurrency.md §3 (check 2: a metadata change fails every concurrent writer; check 8:
identity tables refuse two concurrent writers that both add data). delta-kernel-rs and deltalake
read what we write; delta-spark as a peer is in test_interop_deltaspark.py."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import delta_occ as docc
from delta_occ import exceptions as exc

from helpers import kernel_rows


def ident(name: str = "id", start: Optional[int] = None, step: Optional[int] = None, by_default: bool = False) -> pa.Field:
    meta = {"delta.identity.allowExplicitInsert": "true" if by_default else "false"}
    if start is not None:
        meta["delta.identity.start"] = str(start)
    if step is not None:
        meta["delta.identity.step"] = str(step)
    return pa.field(name, pa.int64(), metadata=meta)


def make(tmp_path, start=10, step=5, by_default=False, **kw: Any) -> docc.Table:
    schema = pa.schema([ident(start=start, step=step, by_default=by_default), pa.field("v", pa.string())])
    return docc.Table.create(str(tmp_path / "t"), schema, **kw)


def vs(*values: str) -> pa.Table:
    return pa.table({"v": list(values)})


def ids(t: docc.Table) -> Dict[str, int]:
    got = t.snapshot().to_pyarrow()
    return dict(zip(got["v"].to_pylist(), got["id"].to_pylist()))


def commit(t: docc.Table, version: int) -> List[Dict[str, Any]]:
    with open(os.path.join(t.path, "_delta_log", f"{version:020}.json")) as f:
        return [json.loads(line) for line in f]


def id_metadata(t: docc.Table, version: Optional[int] = None) -> Dict[str, Any]:
    """The id column's Delta metadata as the log holds it at ``version`` (latest by default)."""
    version = t.version if version is None else version
    for v in range(version, -1, -1):
        for a in commit(t, v):
            if "metaData" in a:
                return json.loads(a["metaData"]["schemaString"])["fields"][0]["metadata"]
    raise AssertionError("no metaData")


# -- creating -------------------------------------------------------------------------------


def test_create_declares_the_column_and_the_protocol_feature(tmp_path):
    t = make(tmp_path, start=10, step=5)
    # As delta-spark stores them: numbers and a boolean; no mark before the first value.
    assert id_metadata(t) == {"delta.identity.start": 10, "delta.identity.step": 5, "delta.identity.allowExplicitInsert": False}
    p = t.snapshot().protocol
    assert p["min_writer_version"] == 7 and "identityColumns" in p["writer_features"]


@pytest.mark.parametrize(
    "meta,type_,match",
    [
        ({"delta.identity.step": "0"}, pa.int64(), "must not be 0"),
        ({"delta.identity.start": "ten"}, pa.int64(), "long integer"),
        ({"delta.identity.start": "1"}, pa.int32(), "must be long"),
        ({"delta.identity.highWaterMark": "5"}, pa.int64(), "kept by the writers"),
    ],
)
def test_bad_declarations_are_typed_errors(tmp_path, meta, type_, match):
    with pytest.raises(exc.InvalidArgumentError, match=match):
        docc.Table.create(str(tmp_path / "t"), pa.schema([pa.field("id", type_, metadata=meta)]))
    assert not os.path.exists(tmp_path / "t" / "_delta_log")


def test_an_existing_table_cannot_gain_an_identity_column(tmp_path):
    """Its rows have no generated values (delta-spark refuses adding one too)."""
    t = docc.Table.create(str(tmp_path / "t"), pa.schema([("v", pa.string())]))
    t.append(vs("a"))
    with pytest.raises(exc.InvalidArgumentError, match="cannot become an identity column"):
        with t.begin() as txn:
            txn.set_schema(pa.schema([("v", pa.string()), ident("n", start=1, step=1)]))
    assert t.version == 1


# -- generating -----------------------------------------------------------------------------


def test_appends_generate_consecutive_values_and_move_the_mark(tmp_path):
    t = make(tmp_path, start=10, step=5)
    t.append(vs("a", "b", "c"))
    assert ids(t) == {"a": 10, "b": 15, "c": 20}
    assert id_metadata(t)["delta.identity.highWaterMark"] == 20
    # the mark is a metadata change in the same commit as the data
    assert {k for a in commit(t, 1) for k in a} >= {"metaData", "add", "commitInfo"}
    t.append(vs("d", "e"))
    assert ids(t) == {"a": 10, "b": 15, "c": 20, "d": 25, "e": 30}
    assert id_metadata(t)["delta.identity.highWaterMark"] == 30
    t.overwrite(vs("f"))
    assert ids(t) == {"f": 35}  # never reused, not even after an overwrite
    # delta-kernel-rs reads the same rows
    k = kernel_rows(t)
    assert sorted(zip(k["v"].to_pylist(), k["id"].to_pylist())) == [("f", 35)]


def test_negative_step_and_a_mark_off_the_sequence(tmp_path):
    t = make(tmp_path, start=-1, step=-10)
    t.append(vs("a", "b"))
    assert ids(t) == {"a": -1, "b": -11}
    # a mark another writer left between two values (e.g. a synced identity): the next value is
    # the first of the sequence beyond it: -1 - 10k < -15 -> -21
    with t.begin() as txn:
        txn.set_column_metadata("id", {"delta.identity.highWaterMark": -15})
    t.append(vs("c"))
    assert ids(t)["c"] == -21


def test_always_refuses_given_values_and_writes_nothing(tmp_path):
    t = make(tmp_path)
    with pytest.raises(exc.SchemaMismatchError, match="GENERATED ALWAYS") as e:
        t.append(pa.table({"ID": [1], "v": ["x"]}))  # any letter case
    assert e.value.column == "id"
    assert t.version == 0
    assert not [f for _, _, fs in os.walk(t.path) for f in fs if f.endswith(".parquet")]


def test_by_default_takes_given_values_and_generates_the_rest(tmp_path):
    t = make(tmp_path, start=1, step=1, by_default=True)
    t.append(pa.table({"id": [100, 200], "v": ["x", "y"]}))
    assert ids(t) == {"x": 100, "y": 200}
    # given values do not move the mark (the protocol's mark counts generated values)
    assert "delta.identity.highWaterMark" not in id_metadata(t)
    t.append(vs("z"))
    assert ids(t)["z"] == 1
    assert id_metadata(t)["delta.identity.highWaterMark"] == 1


def test_not_null_identity_column_is_generated_not_refused(tmp_path):
    schema = pa.schema([ident(start=1, step=1).with_nullable(False), pa.field("v", pa.string())])
    t = docc.Table.create(str(tmp_path / "t"), schema)
    t.append(vs("a"))
    assert ids(t) == {"a": 1}


def test_overflow_is_a_typed_error_with_nothing_written(tmp_path):
    t = make(tmp_path, start=2**63 - 2, step=1)
    t.append(vs("a", "b"))
    with pytest.raises(exc.InvalidArgumentError, match="long range"):
        t.append(vs("c"))
    assert t.version == 1 and ids(t) == {"a": 2**63 - 2, "b": 2**63 - 1}


def test_merge_inserts_generate_and_updates_cannot_set(tmp_path):
    t = make(tmp_path, start=1, step=1)
    t.append(vs("a", "b"))
    src = pa.table({"v": ["b", "c", "d"]})
    t.merge(src, "t.v = s.v", when_not_matched_insert={"v": "s.v"})
    assert ids(t) == {"a": 1, "b": 2, "c": 3, "d": 4}
    t.merge(pa.table({"v": ["e"]}), "t.v = s.v", when_not_matched_insert=True)
    assert ids(t)["e"] == 5
    with pytest.raises(exc.SchemaMismatchError, match="GENERATED ALWAYS"):
        t.merge(pa.table({"v": ["f"], "n": [9]}), "t.v = s.v", when_not_matched_insert={"v": "s.v", "id": "s.n"})
    with pytest.raises(exc.InvalidArgumentError, match="identity column and cannot be updated"):
        t.update("v = 'a'", {"id": "id + 100"})
    with pytest.raises(exc.InvalidArgumentError, match="identity column and cannot be updated"):
        t.merge(pa.table({"v": ["a"]}), "t.v = s.v", when_matched_update={"id": "0"})
    # an UPDATE of the other columns keeps the values
    t.update("v = 'a'", {"v": "'A'"})
    assert ids(t)["A"] == 1


def test_several_reservations_in_one_transaction_continue_from_each_other(tmp_path):
    """A Spark transaction may write several times: each write's values follow the last one's
    (the mark staged in the transaction, not the one read)."""
    from delta_occ import identity

    t = make(tmp_path, start=0, step=2)
    t.append(vs("a"))
    with t.begin() as txn:
        assert identity.reserve(txn, "id", 2) == 2  # 2, 4
        assert identity.reserve(txn, "id", 3) == 6  # 6, 8, 10
    assert id_metadata(t)["delta.identity.highWaterMark"] == 10
    t.append(vs("b"))
    assert ids(t)["b"] == 12


def test_deltalake_reads_the_rows(tmp_path):
    deltalake = pytest.importorskip("deltalake")
    t = make(tmp_path, start=7, step=3)
    t.append(vs("a", "b"))
    got = deltalake.DeltaTable(t.path).to_pyarrow_table()
    assert sorted(zip(got["v"].to_pylist(), got["id"].to_pylist())) == [("a", 7), ("b", 10)]


def test_a_table_delta_spark_wrote_continues_from_its_mark(tmp_path):
    """A table whose log carries identity metadata as delta-spark writes it (hand-written version
    0, legacy protocol 2/6) and a mark of 41: the next value is 42."""
    root = tmp_path / "t"
    (root / "_delta_log").mkdir(parents=True)
    schema = {"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {
            "delta.identity.start": 1, "delta.identity.step": 1, "delta.identity.highWaterMark": 41,
            "delta.identity.allowExplicitInsert": False}},
        {"name": "v", "type": "string", "nullable": True, "metadata": {}}]}
    actions = [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 6}},
        {"metaData": {"id": "x", "format": {"provider": "parquet", "options": {}}, "schemaString": json.dumps(schema),
                      "partitionColumns": [], "configuration": {}, "createdTime": 0}},
    ]
    (root / "_delta_log" / f"{0:020}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    t = docc.Table(str(root))
    t.append(vs("a"))
    assert ids(t) == {"a": 42}
    assert id_metadata(t)["delta.identity.highWaterMark"] == 42


# -- concurrency (concurrency.md §3) ---------------------------------------------------------


def test_concurrent_generating_appends_conflict_on_the_mark(tmp_path):
    """Both generate values: the winner's mark is a metadata change (check 2)."""
    t = make(tmp_path, start=1, step=1)
    a, b = t.begin(), t.begin()
    a.append(vs("a"))
    b.append(vs("b"))
    a.commit()
    with pytest.raises(exc.MetadataChangedException):
        b.commit()
    assert ids(docc.Table(t.path)) == {"a": 1}


def test_concurrent_appends_with_given_values_conflict_by_check_8(tmp_path):
    """BY DEFAULT with given values: no mark moves, and check 8 refuses two writers adding data."""
    t = make(tmp_path, by_default=True)
    a, b = t.begin(), t.begin()
    a.append(pa.table({"id": [1], "v": ["a"]}))
    b.append(pa.table({"id": [2], "v": ["b"]}))
    a.commit()
    with pytest.raises(exc.ConcurrentWriteException, match="identity columns"):
        b.commit()


def test_a_moved_mark_alone_is_no_read_of_the_whole_table(tmp_path):
    """The loser generates values (its commit moves the mark) and the winner gave its values:
    moving a mark is no schema change (data files read alike), so the loser is still a blind
    append and check 8 decides, not check 5 as for a schema change."""
    t = make(tmp_path, by_default=True)
    a, b = t.begin(), t.begin()
    a.append(pa.table({"id": [100], "v": ["given"]}))
    b.append(vs("generated"))
    a.commit()
    with pytest.raises(exc.ConcurrentWriteException, match="identity columns"):
        b.commit()


def test_racing_writers_that_retry_give_every_value_once(tmp_path):
    """4 threads x 6 appends of 3 rows, each append re-run after a conflict until it commits:
    the committed ids are exactly 1..72 (a loser's values are never committed, the next attempt
    takes values beyond the winner's mark), and every commit moved the mark past its rows."""
    import threading

    t = make(tmp_path, start=1, step=1)
    conflicts: List[str] = []

    def writer(w: int) -> None:
        table = docc.Table(t.path)
        for i in range(6):
            while True:
                try:
                    table.append(vs(*[f"w{w}-{i}-{j}" for j in range(3)]))
                    break
                except exc.DeltaConcurrentModificationException as e:
                    conflicts.append(type(e).__name__)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    got = ids(docc.Table(t.path))
    assert len(got) == 72 and sorted(got.values()) == list(range(1, 73))
    # each write's three rows are consecutive values
    for w in range(4):
        for i in range(6):
            mine = sorted(got[f"w{w}-{i}-{j}"] for j in range(3))
            assert mine[2] - mine[0] == 2
    assert set(conflicts) <= {"MetadataChangedException"}, conflicts
    assert id_metadata(docc.Table(t.path))["delta.identity.highWaterMark"] == 72


# -- property: every sequence of writes gives the model's values ----------------------------


class Model:
    """The protocol's rule, written out: next = start + k*step for the smallest k >= 0 beyond the
    mark; a write of n rows takes n consecutive values and sets the mark to the last."""

    def __init__(self, start: int, step: int) -> None:
        self.start, self.step, self.mark = start, step, None
        self.values: List[int] = []

    def write(self, n: int) -> None:
        k = 0
        if self.mark is not None:
            while not (self.start + k * self.step > self.mark if self.step > 0 else self.start + k * self.step < self.mark):
                k += 1
        new = [self.start + (k + i) * self.step for i in range(n)]
        self.values += new
        self.mark = new[-1]


@settings(max_examples=15, deadline=None)
@given(
    start=st.integers(-50, 50), step=st.integers(-7, 7).filter(bool),
    writes=st.lists(st.tuples(st.sampled_from(["append", "merge"]), st.integers(1, 4)), min_size=1, max_size=4),
)
def test_generated_values_follow_the_model(tmp_path_factory, start, step, writes):
    t = make(tmp_path_factory.mktemp("prop"), start=start, step=step)
    model = Model(start, step)
    n = 0
    for kind, rows in writes:
        names = [f"r{n + i}" for i in range(rows)]
        n += rows
        if kind == "append":
            t.append(vs(*names))
        else:
            t.merge(pa.table({"v": names}), "t.v = s.v", when_not_matched_insert=True)
        model.write(rows)
    got = t.snapshot().to_pyarrow()
    by_name = dict(zip(got["v"].to_pylist(), got["id"].to_pylist()))
    assert [by_name[f"r{i}"] for i in range(n)] == model.values
    assert len(set(model.values)) == n
    assert id_metadata(t)["delta.identity.highWaterMark"] == model.mark


@pytest.mark.parametrize(
    "start, step, explicit, mark_before, expected_mark, next_value",
    [
        # Delta's documented rule, worked by hand: mark = start + n*step, n the smallest >= 0
        # with start + n*step >= max (<= min for a negative step); the next value follows it.
        (1, 1, [50, 7], 2, 50, 51),
        (10, 5, [33], None, 35, 40),  # 10 + 5n >= 33 -> n = 5 -> 35
        (100, -3, [50], 97, 49, 46),  # 100 - 3n <= 50 -> n = 17 -> 49
        (1, 1, [0], 5, 5, 6),  # never lowered below the current mark
    ],
)
def test_sync_identity(tmp_path, start, step, explicit, mark_before, expected_mark, next_value):
    meta = {"delta.identity.start": str(start), "delta.identity.step": str(step), "delta.identity.allowExplicitInsert": "true"}
    schema = pa.schema([pa.field("id", pa.int64(), metadata=meta), pa.field("v", pa.string())])
    t = docc.Table.create(str(tmp_path / "t"), schema)
    if mark_before is not None:
        n = (mark_before - start) // step + 1
        t.append(pa.table({"v": [f"g{i}" for i in range(n)]}))  # generated: start .. mark_before
    t.append(pa.table({"id": explicit, "v": ["x"] * len(explicit)}, schema=schema))  # explicit values
    from delta_occ.identity import identity_columns

    r = t.sync_identity("id")
    assert r.operation == "SYNC IDENTITY" or (not r.committed and expected_mark == mark_before)
    assert identity_columns(t.snapshot().handle.schema_json)["id"].high_water_mark == expected_mark
    t.append(pa.table({"v": ["next"]}))
    rows = t.snapshot().to_pyarrow().to_pylist()
    assert [x["id"] for x in rows if x["v"] == "next"] == [next_value]
    with pytest.raises(exc.InvalidArgumentError, match="not an identity column"):
        t.sync_identity("v")
