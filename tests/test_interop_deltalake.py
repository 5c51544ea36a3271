"""Scenarios of concurrency.md §8 with the winner written by deltalake (delta-rs 1.6) and the txn
by delta-occ: deltalake's commits (appends without isBlindAppend, DELETE, UPDATE, OPTIMIZE,
property and protocol changes, app transactions) must be understood, not assumed. Tables the
txn commits to stay readable by deltalake (same rows as delta-occ reads)."""

from __future__ import annotations

import pyarrow as pa
import pytest

deltalake = pytest.importorskip("deltalake")
from deltalake import CommitProperties, DeltaTable, write_deltalake  # noqa: E402
from deltalake import Transaction as DlTxn  # noqa: E402

import delta_occ as docc  # noqa: E402
from delta_occ import exceptions as ex  # noqa: E402

from datafiles import add, rows  # noqa: E402

S, WS = "Serializable", "WriteSerializable"
P1 = {"p": "1"}


def data(ids, p, x=None):
    ids = list(ids)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "p": pa.array([p] * len(ids), pa.int32()),
        "x": pa.array(x if x is not None else [i % 10 for i in ids], pa.int64()),
    })


class Env:
    """A table created and seeded by deltalake; `a` and `b` are the two files of p=1."""

    def __init__(self, path, level):
        self.path = path
        write_deltalake(path, data(range(0, 5), 0), partition_by=["p"], mode="append",
                        configuration={"delta.isolationLevel": level})
        write_deltalake(path, data(range(5, 10), 1), partition_by=["p"], mode="append")
        write_deltalake(path, data(range(10, 15), 1), partition_by=["p"], mode="append")
        write_deltalake(path, data(range(15, 20), 2), partition_by=["p"], mode="append")
        self.table = docc.Table(path)
        files = self.table.snapshot().files().to_pylist()
        p1 = sorted(f["path"] for f in files if f["partition_values"] == [("p", "1")])
        self.a, self.b = p1

    def begin(self, **kw):
        return self.table.begin(**kw)

    def dl(self):
        return DeltaTable(self.path)

    def append(self, p, ids=(100,), x=None, app=None):
        props = CommitProperties(app_transactions=[DlTxn(app, 1)]) if app else None
        write_deltalake(self.path, data(ids, p, x), partition_by=["p"], mode="append", commit_properties=props)


def reads_p1_appends_p1(env):
    txn = env.begin()
    txn.scan("p = 1")
    add(txn, env.path, rows([500]), {"p": 1})
    return txn


def compaction(env, names):
    txn = env.begin()
    txn.scan("p = 1")
    for n in names:
        txn.remove_file(n, data_change=False)
    add(txn, env.path, rows(range(5, 15)), {"p": 1}, data_change=False)
    return txn


def c01(env):
    txn = env.begin()
    add(txn, env.path, rows([500]), {"p": 1})
    env.append(1)
    return txn


def c02(env):
    txn = reads_p1_appends_p1(env)
    env.append(1)
    return txn


def c03(env):
    txn = reads_p1_appends_p1(env)
    env.dl().update(updates={"x": "99"}, predicate="p = 1 AND id = 5")
    return txn


def c04(env):
    txn = reads_p1_appends_p1(env)
    env.append(2)
    return txn


def c06(env):
    txn = env.begin()
    txn.scan("p = 1")
    add(txn, env.path, rows([500]), {"p": 3})
    env.dl().delete("p = 1")
    return txn


def c07(env):
    txn = env.begin()
    txn.remove_file(env.a)
    env.dl().delete("p = 1")
    return txn


def c08(env):
    txn = env.begin()
    txn.read_whole_table()
    add(txn, env.path, rows([500]), {"p": 3})
    env.dl().delete("p = 2")
    return txn


def c10(env):
    txn = env.begin()
    add(txn, env.path, rows([500]), {"p": 1})
    env.dl().alter.set_table_properties({"delta.logRetentionDuration": "interval 2 days"})
    return txn


def c11(env):
    txn = env.begin()
    add(txn, env.path, rows([500]), {"p": 1})
    env.dl().alter.add_feature(deltalake.TableFeatures.DeletionVectors, allow_protocol_versions_increase=True)
    return txn


def c13(env, app):
    txn = env.begin()
    assert txn.app_version("t1") == -1
    txn.set_app_version("t1", 1)
    add(txn, env.path, rows([500]), {"p": 1})
    env.append(3, app=app)
    return txn


def c14(env):
    txn = compaction(env, [env.a, env.b])
    env.append(1)
    return txn


def c15(env):
    txn = compaction(env, [env.a, env.b])
    env.dl().delete("p = 1 AND id < 10")
    return txn


def c16(env):
    txn = compaction(env, [env.a])
    env.dl().optimize.compact(partition_filters=[("p", "=", "1")])
    return txn


def c18(env, p):
    txn = env.begin()
    txn.scan("p >= 2")
    add(txn, env.path, rows([500]), {"p": 2})
    env.append(p)
    return txn


def c19(env, xs):
    txn = env.begin()
    txn.scan("p = 1 OR x > 5")
    add(txn, env.path, rows([500], x=[0]), {"p": 1})
    env.append(2, ids=range(600, 600 + len(xs)), x=xs)
    return txn


def c20(env):
    txn = env.begin()
    txn.scan("p = 1 AND x > 100")
    add(txn, env.path, rows([500], x=[500]), {"p": 1})
    env.append(1, ids=range(600, 611), x=list(range(11)))
    return txn


def c22(env, p):
    txn = env.begin()
    txn.scan("p = 0")
    for f in txn.snapshot.files().to_pylist():
        if f["partition_values"] == [("p", "0")]:
            txn.remove_file(f["path"])
    add(txn, env.path, rows([300]), {"p": 0})
    env.append(p)
    return txn


CASES = [
    ("01", c01, S, None, None, None),
    ("01", c01, WS, None, None, None),
    ("02", c02, S, ex.ConcurrentAppendException, "WRITE", P1),
    ("02", c02, WS, None, None, None),
    ("03", c03, S, ex.ConcurrentAppendException, "UPDATE", P1),
    ("03", c03, WS, ex.ConcurrentAppendException, "UPDATE", P1),
    ("04", c04, S, None, None, None),
    ("06", c06, S, ex.ConcurrentDeleteReadException, "DELETE", P1),
    ("06", c06, WS, ex.ConcurrentDeleteReadException, "DELETE", P1),
    ("07", c07, WS, ex.ConcurrentDeleteDeleteException, "DELETE", P1),
    ("08", c08, WS, ex.ConcurrentDeleteReadException, "DELETE", None),
    ("10", c10, WS, ex.MetadataChangedException, None, None),
    ("11", c11, WS, ex.ProtocolChangedException, None, None),
    ("13-t1", lambda e: c13(e, "t1"), WS, ex.ConcurrentTransactionException, "WRITE", None),
    ("13-t2", lambda e: c13(e, "t2"), WS, None, None, None),
    ("14", c14, S, None, None, None),
    ("15", c15, WS, ex.ConcurrentDeleteReadException, "DELETE", P1),
    ("16", c16, WS, ex.ConcurrentDeleteReadException, "OPTIMIZE", P1),
    ("18-p1", lambda e: c18(e, 1), S, None, None, None),
    ("18-p3", lambda e: c18(e, 3), S, ex.ConcurrentAppendException, "WRITE", {"p": "3"}),
    ("19-x9", lambda e: c19(e, [9]), S, ex.ConcurrentAppendException, "WRITE", {"p": "2"}),
    ("19-x5", lambda e: c19(e, [1, 5]), S, None, None, None),
    ("20", c20, S, None, None, None),
    ("22-p0", lambda e: c22(e, 0), S, ex.ConcurrentAppendException, "WRITE", {"p": "0"}),
    ("22-p1", lambda e: c22(e, 1), S, None, None, None),
]


@pytest.mark.parametrize(
    "build,level,expected,operation,hint", [pytest.param(*c[1:], id=f"s{c[0]}-{c[2]}") for c in CASES]
)
def test_scenario_with_deltalake_winner(tmp_path, build, level, expected, operation, hint):
    env = Env(str(tmp_path / "t"), level)
    txn = build(env)
    winner_version = env.dl().version()
    if expected is None:
        result = txn.commit("WRITE")
        assert result.version == winner_version + 1 and result.rebased_over == [winner_version]
        ours = env.table.snapshot(result.version).to_pyarrow().sort_by("id")
        theirs = DeltaTable(env.path).to_pyarrow_table().select(ours.column_names).sort_by("id")
        assert ours.equals(theirs.cast(ours.schema))
    else:
        with pytest.raises(expected) as info:
            txn.commit("WRITE")
        e = info.value
        assert type(e) is expected
        assert e.winning_version == winner_version
        if operation is not None:
            assert e.winning_operation == operation
        assert e.partition_hint == hint


def test_s12_deltalake_created_the_table_first(tmp_path):
    path = str(tmp_path / "t")
    schema = pa.schema([("id", pa.int64()), ("p", pa.int32()), ("x", pa.int64())])
    ours = docc.Table.begin_create(path, schema, ["p"])
    write_deltalake(path, data([1], 1), partition_by=["p"])
    with pytest.raises(ex.ProtocolChangedException) as info:
        ours.commit("CREATE TABLE")
    assert info.value.winning_version == 0 and "empty directory" in str(info.value)


def test_deltalake_reads_our_checkpoint(tmp_path):
    """Our classic checkpoint (every delta.checkpointInterval commits) is what deltalake loads."""
    path = str(tmp_path / "t")
    write_deltalake(path, data(range(3), 0), partition_by=["p"], configuration={"delta.checkpointInterval": "4"})
    t = docc.Table(path)
    for i in range(1, 6):
        txn = t.begin()
        add(txn, path, rows(range(i * 10, i * 10 + 3)), {"p": i % 2})
        r = txn.commit("WRITE")
        assert r.checkpoint_written == (r.version % 4 == 0) and r.checkpoint_error is None
    theirs = DeltaTable(path).to_pyarrow_table().sort_by("id")
    ours = t.snapshot().to_pyarrow().sort_by("id")
    assert theirs.num_rows == ours.num_rows == 18
    assert theirs.column("id").to_pylist() == ours.column("id").to_pylist()
    assert (tmp_path / "t" / "_delta_log" / "00000000000000000004.checkpoint.parquet").exists()


def test_tables_with_check_constraints_are_not_written_with_unchecked_rows(tmp_path):
    """A CHECK constraint added by deltalake (writer version 3) binds the embedded engine: rows
    that break it are refused with ConstraintViolationError, nothing written (issue 30; before,
    such writes were refused outright, and before that both committed rows that violate it).
    Rows that keep it are written, and DELETE works. Reference: deltalake refuses the same append."""
    import deltalake

    p = str(tmp_path / "t")
    deltalake.write_deltalake(p, pa.table({"id": [1, 2]}))
    deltalake.DeltaTable(p).alter.add_constraint({"id_pos": "id > 0"})
    with pytest.raises(Exception):  # noqa: B017 - deltalake's own error class, whatever it is
        deltalake.write_deltalake(p, pa.table({"id": [-1]}), mode="append")
    t = docc.Table(p)
    version = t.version
    for write in (lambda: t.append(pa.table({"id": [-1]})), lambda: t.update("id = 1", {"id": "-5"})):
        with pytest.raises(docc.exceptions.ConstraintViolationError, match="CHECK constraint id_pos"):
            write()
    assert t.refresh() == version
    t.append(pa.table({"id": [3]}))
    t.delete("id >= 2")
    assert deltalake.DeltaTable(p).to_pyarrow_table().column("id").to_pylist() == [1]
