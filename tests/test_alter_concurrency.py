"""Issue 44 must-show 3: every ALTER kind against a concurrent append, DELETE, MERGE and OPTIMIZE,
on the embedded engine and on Spark, in both orders.

The rules are concurrency.md §3: a winner with a `metaData` action fails every concurrent
transaction (check 2, MetadataChangedException). The other way round, a schema change counts as
a read of the whole table (files written under the old schema must not slip in unchecked), so a
concurrent data commit fails it (by the row-level rules on this DV table; a compaction's
dataChange=false files do not); a property change reads nothing and commits after it. Either way the one-call form
re-runs on a fresh snapshot and succeeds. Expected rows come from a small model of each
operation (below), not from the code under test; nothing is lost either way."""

from __future__ import annotations

import pyarrow as pa
import pytest

import delta_occ as docc
from delta_occ import exceptions as exc

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("n", pa.int32()), ("v", pa.string())])
PROPS = {"delta.columnMapping.mode": "name", "delta.enableDeletionVectors": "true"}
START = [{"id": i, "n": i * 10, "v": f"r{i}"} for i in range(8)]  # four files of two rows

# ALTER kind -> (the call on a table or transaction, the model of what it does to a row and to
# the column names). widen_column also adds the typeWidening feature: its commit changes the
# protocol, which check 1 finds before check 2 (ProtocolChangedException).
ALTERS = {
    "add_columns": (lambda x: x.add_columns([pa.field("extra", pa.int64())]), lambda r: dict(r, extra=None)),
    "rename_column": (lambda x: x.rename_column("v", "w"), lambda r: {"id": r["id"], "n": r["n"], "w": r["v"]}),
    "drop_columns": (lambda x: x.drop_columns(["v"]), lambda r: {"id": r["id"], "n": r["n"]}),
    "widen_column": (lambda x: x.widen_column("n", "long"), lambda r: r),
    "set_column_comment": (lambda x: x.set_column_comment("v", "a comment"), lambda r: r),
    "set_nullable": (lambda x: x.set_nullable("id", True), lambda r: r),
    "set_schema": (lambda x: x.set_schema(SCHEMA.append(pa.field("z", pa.float64()))), lambda r: dict(r, z=None)),
    "set_properties": (lambda x: x.set_properties({"owner": "team-a"}), lambda r: r),
}

NEW = [{"id": 100, "n": 1000, "v": "new"}]
SOURCE = [{"id": 1, "n": -1, "v": "s1"}, {"id": 50, "n": 500, "v": "s50"}]


def _merge_model(rows):
    by_id = {r["id"]: dict(r) for r in rows}
    for s in SOURCE:
        if s["id"] in by_id:
            by_id[s["id"]]["n"] = s["n"]
        else:
            by_id[s["id"]] = dict(s)
    return list(by_id.values())


# Data operation -> (the staged call, given a function that turns rows into the engine's input;
# the model of its effect on the rows).
DATA = {
    "append": (lambda x, data: x.append(data(NEW)), lambda rows: rows + NEW),
    "delete": (lambda x, data: x.delete("id < 3"), lambda rows: [r for r in rows if r["id"] >= 3]),
    "merge": (
        lambda x, data: x.merge(data(SOURCE), "t.id = s.id").when_matched_update({"n": "s.n"}).when_not_matched_insert_all().execute(),
        _merge_model,
    ),
    "optimize": (lambda x, data: x.optimize(), lambda rows: rows),
}


def _table(path) -> docc.Table:
    t = docc.Table.create(path, SCHEMA, properties=PROPS)
    for i in range(0, 8, 2):
        t.append(pa.Table.from_pylist(START[i:i + 2], schema=SCHEMA))
    return t


def _rows(t: docc.Table) -> list:
    return sorted(t.snapshot().to_pyarrow().to_pylist(), key=lambda r: r["id"])


def _expect(rows, alter_model) -> list:
    return sorted((alter_model(r) for r in rows), key=lambda r: r["id"])


class Embedded:
    def __init__(self, root):
        self.t = _table(root)

    def begin(self):
        return self.t.begin()

    def data(self, rows):
        return pa.Table.from_pylist(rows, schema=SCHEMA)


class OnSpark:
    def __init__(self, root, spark):
        from delta_occ.spark import SparkTable

        _table(root)
        self.spark, self.st = spark, SparkTable(spark, root)
        self.t = self.st.table

    def begin(self):
        return self.st.begin()

    def data(self, rows):
        return self.spark.createDataFrame(pa.Table.from_pylist(rows, schema=SCHEMA).to_pandas())


def _engine(kind, tmp_path, request):
    if kind == "embedded":
        return Embedded(tmp_path / "t")
    pytest.importorskip("delta_occ.spark", reason="pyspark is not installed")
    return OnSpark(tmp_path / "t", request.getfixturevalue("spark"))


CASES = [(a, d) for a in ALTERS for d in DATA]


@pytest.mark.parametrize("engine", ["embedded", "spark"])
@pytest.mark.parametrize("alter, op", CASES)
def test_alter_wins_and_the_data_transaction_fails(engine, alter, op, tmp_path, request):
    """The ALTER commits first: the concurrent data transaction raises MetadataChangedException
    (§3 check 2, which its explanation names; ProtocolChangedException by check 1 for a widening), and the table holds the start rows under the new
    definition: the loser wrote nothing."""
    e = _engine(engine, tmp_path, request)
    call, alter_model = ALTERS[alter]
    stage, _ = DATA[op]
    txn = e.begin()
    stage(txn, e.data)
    winner = call(e.t)
    error, rule = (exc.ProtocolChangedException, "§3 check 1") if alter == "widen_column" else (exc.MetadataChangedException, "§3 check 2")
    with pytest.raises(error) as err:
        txn.commit()
    doc = err.value.explain()
    assert doc["winning_version"] == winner.version and doc["rule"].startswith(rule), doc
    assert _rows(e.t) == _expect(START, alter_model)


# What a data commit that wins does to a staged schema change: the exception and the rule
# explain names (None: it commits). The table has DVs, so the row-level rules of concurrency.md
# §4 decide: the rows the winner added match the whole-table read (rule 4), the rows it deleted
# were read (rule 2).
DATA_WINS = {
    "append": (exc.ConcurrentAppendException, "§4 rule 4"),
    "delete": (exc.ConcurrentDeleteReadException, "§4 rule 2"),
    "merge": (exc.ConcurrentAppendException, "§4 rule 4"),
    "optimize": None,
}


@pytest.mark.parametrize("engine", ["embedded", "spark"])
@pytest.mark.parametrize("alter, op", CASES)
def test_data_wins_and_the_alter_is_checked_against_it(engine, alter, op, tmp_path, request):
    """The data commit wins: the staged ALTER is checked against it, never merged blindly; a
    schema change conflicts with data changes (and explain names the rule), a property change
    commits after it; the one-call ALTER then commits. The table holds the data operation's rows
    under the new definition."""
    e = _engine(engine, tmp_path, request)
    call, alter_model = ALTERS[alter]
    stage, data_model = DATA[op]
    alter_txn = e.t.begin()
    call(alter_txn)
    data_txn = e.begin()
    stage(data_txn, e.data)
    won = data_txn.commit()
    outcome = None if alter == "set_properties" else DATA_WINS[op]
    if outcome is None:
        assert alter_txn.commit().version == won.version + 1
    else:
        error, rule = outcome
        with pytest.raises(error) as err:
            alter_txn.commit()
        doc = err.value.explain()
        assert doc["winning_version"] == won.version and doc["rule"].startswith(rule), doc
        assert call(e.t).version == won.version + 1
    assert _rows(e.t) == _expect(data_model(START), alter_model)


@pytest.mark.parametrize("alter", list(ALTERS))
def test_change_readers_stop_at_every_alter(alter, tmp_path):
    """concurrency.md §7: a change reader stops with MetadataChangedException at the commit that
    changes the definition, after yielding the commits before it."""
    t = _table(tmp_path / "t")
    start = t.version
    t.append(pa.Table.from_pylist(NEW, schema=SCHEMA))
    winner = ALTERS[alter][0](t)
    seen = []
    with pytest.raises(exc.MetadataChangedException, match=f"version {winner.version}"):
        for change in t.changes(start):
            seen.append(change["version"])
    assert seen == [start, start + 1]  # changes(v) yields commit v first
