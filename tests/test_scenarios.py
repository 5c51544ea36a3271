"""concurrency.md §8 scenarios 1–22 (file level), built with the public transaction API: the txn
begins, the winner commits, then the txn commits. Expected outcomes are the scenario text; where
it gives no level, both levels are run and the §2 table decides (a blind-append winner is ignored
under WriteSerializable, so such cases also run with a winner that read the table)."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

import delta_occ as docc
from delta_occ import exceptions as ex

from conftest import EVERY_STORE, where_of
from datafiles import add, rows

S, WS = "Serializable", "WriteSerializable"
ANY = object()  # partition hint not asserted

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.int32()), ("x", pa.int64())])


@pytest.fixture(params=EVERY_STORE)
def where(request, tmp_path):
    """These scenarios run on a local disk, S3 and the Azure and GCS emulators."""
    return where_of(request.param, request, tmp_path)


class Env:
    def __init__(self, path: str, partition_by=("p",), schema=SCHEMA, level=S, props=None, seed=True, storage_options=None):
        self.path = path
        properties = {"delta.isolationLevel": level}
        properties.update(props or {})
        self.table = docc.Table.create(path, schema, partition_by=list(partition_by), properties=properties, storage_options=storage_options)
        self.files = {}
        if seed and list(partition_by) == ["p"]:
            txn = self.table.begin()
            self.files["f0"] = add(txn, path, rows(range(0, 5)), {"p": 0})
            self.files["a"] = add(txn, path, rows(range(5, 10)), {"p": 1})
            self.files["b"] = add(txn, path, rows(range(10, 15)), {"p": 1})
            self.files["c"] = add(txn, path, rows(range(15, 20)), {"p": 2})
            txn.commit("WRITE")

    def begin(self, **kw):
        return self.table.begin(**kw)

    def winner(self, operation, build, **kw):
        txn = self.table.begin(**kw)
        build(txn)
        return txn.commit(operation)


def outcome(txn):
    try:
        return txn.commit("WRITE"), None
    except ex.DeltaConcurrentModificationException as e:
        return None, e


# Each scenario returns (txn, winner CommitResult, expected winner operation).

def s01(env, blind_winner=True):
    txn = env.begin()
    add(txn, env.path, rows([100]), {"p": 1})
    w = env.winner("WRITE", lambda t: add(t, env.path, rows([101]), {"p": 1}))
    return txn, w


def s02(env):
    txn = env.begin()
    txn.scan("p = 1")
    add(txn, env.path, rows([100]), {"p": 1})
    w = env.winner("WRITE", lambda t: add(t, env.path, rows([101]), {"p": 1}))
    return txn, w


def s03(env):
    txn = env.begin()
    txn.scan("p = 1")
    add(txn, env.path, rows([100]), {"p": 1})

    def update(t):
        t.scan("p = 1 AND id = 5")
        t.remove_file(env.files["a"])
        add(t, env.path, rows(range(5, 10), x=[99] * 5), {"p": 1})

    return txn, env.winner("UPDATE", update)


def s04(env):
    txn = env.begin()
    txn.scan("p = 1")
    add(txn, env.path, rows([100]), {"p": 1})
    return txn, env.winner("WRITE", lambda t: add(t, env.path, rows([101]), {"p": 2}))


def s05(env):
    txn = env.begin()
    txn.scan("p = 1")
    txn.scan("p = 2")
    add(txn, env.path, rows([100]), {"p": 1})

    def non_blind_append(t):
        t.scan("p = 7")  # the winner read the table, so it is not a blind append
        add(t, env.path, rows([101]), {"p": 1})

    return txn, env.winner("WRITE", non_blind_append)


def s06(env):
    txn = env.begin()
    txn.scan("p = 1")
    add(txn, env.path, rows([100]), {"p": 3})

    def delete(t):
        t.scan("p = 1 AND id < 10")
        t.remove_file(env.files["a"])

    return txn, env.winner("DELETE", delete)


def s07(env):
    txn = env.begin()
    txn.remove_file(env.files["a"])

    def delete(t):
        t.remove_file(env.files["a"])

    return txn, env.winner("DELETE", delete)


def s08(env):
    txn = env.begin()
    txn.read_whole_table()
    add(txn, env.path, rows([100]), {"p": 3})

    def delete(t):
        t.remove_file(env.files["c"])

    return txn, env.winner("DELETE", delete)


def s09(env):
    txn = env.begin()
    txn.scan()
    add(txn, env.path, rows([100]))

    def non_blind_append(t):
        t.scan("id = 1")
        add(t, env.path, rows([101]))

    return txn, env.winner("MERGE", non_blind_append)


def s10(env):
    txn = env.begin()
    add(txn, env.path, rows([100]), {"p": 1})
    return txn, env.winner("SET TBLPROPERTIES", lambda t: t.set_properties({"delta.appendOnly": "false", "owner": "x"}))


def s11(env):
    txn = env.begin()
    add(txn, env.path, rows([100]), {"p": 1})
    return txn, env.winner(
        "UPGRADE PROTOCOL", lambda t: t.set_protocol(1, 7, None, ["appendOnly", "invariants", "domainMetadata"])
    )


def s13(env, app="t1"):
    txn = env.begin()
    assert txn.app_version("t1") == -1
    txn.set_app_version("t1", 1)
    add(txn, env.path, rows([100]), {"p": 1})

    def stream(t):
        t.set_app_version(app, 1)
        add(t, env.path, rows([101]), {"p": 3})

    return txn, env.winner("STREAMING UPDATE", stream)


def s13b(env):
    return s13(env, app="t2")


def compaction(env, txn, names):
    txn.scan("p = 1")
    for n in names:
        txn.remove_file(env.files[n], data_change=False)
    add(txn, env.path, rows(range(5, 15)), {"p": 1}, data_change=False)


def s14(env):
    txn = env.begin()
    compaction(env, txn, ["a", "b"])
    return txn, env.winner("WRITE", lambda t: add(t, env.path, rows([101]), {"p": 1}))


def s15(env):
    txn = env.begin()
    compaction(env, txn, ["a", "b"])
    return txn, env.winner("DELETE", lambda t: t.remove_file(env.files["a"]))


def s16(env):
    txn = env.begin()
    compaction(env, txn, ["a"])
    return txn, env.winner("OPTIMIZE", lambda t: compaction(env, t, ["a"]))


def s18(env, p):
    txn = env.begin()
    txn.scan("p >= 2")
    add(txn, env.path, rows([100]), {"p": 2})
    return txn, env.winner("WRITE", lambda t: add(t, env.path, rows([101]), {"p": p}))


def s19(env, xs):
    txn = env.begin()
    txn.scan("p = 1 OR x > 5")
    add(txn, env.path, rows([100], x=[0]), {"p": 1})
    return txn, env.winner("WRITE", lambda t: add(t, env.path, rows(range(200, 200 + len(xs)), x=xs), {"p": 2}))


def s20(env):
    txn = env.begin()
    txn.scan("p = 1 AND x > 100")
    add(txn, env.path, rows([100], x=[500]), {"p": 1})
    return txn, env.winner("WRITE", lambda t: add(t, env.path, rows(range(200, 211), x=list(range(11))), {"p": 1}))


def s21(env, with_commit_info=True):
    txn = env.begin()
    txn.scan("p = 1")
    add(txn, env.path, rows([100]), {"p": 1})
    # A third-party writer whose commitInfo has no isBlindAppend (or no commitInfo at all).
    from datafiles import write_file

    storage = env.table.handle.storage
    kw = write_file(storage, rows([101]), {"p": 1})
    version = env.table.refresh() + 1
    lines = []
    if with_commit_info:
        lines.append({"commitInfo": {"timestamp": 1, "operation": "STREAMING UPDATE", "operationParameters": {}}})
    lines.append({"add": {"path": kw["path"], "partitionValues": {"p": "1"}, "size": kw["size"],
                          "modificationTime": 1, "dataChange": True, "stats": kw["stats"]}})
    storage.write(f"_delta_log/{version:020}.json", ("\n".join(json.dumps(l) for l in lines) + "\n").encode())
    return txn, type("W", (), {"version": version, "operation": "STREAMING UPDATE" if with_commit_info else "TRANSACTION"})()


def s22(env, p, blind=True):
    txn = env.begin()
    txn.scan("p = 0")  # dynamic partition overwrite of p=0: read it, replace its files
    txn.remove_file(env.files["f0"])
    add(txn, env.path, rows([300, 301]), {"p": 0})

    def append(t):
        if not blind:
            t.scan("p = 9")
        add(t, env.path, rows([101]), {"p": p})

    return txn, env.winner("WRITE", append)


P1 = {"p": "1"}
CASES = [
    # id, scenario, level, expected class (None = success), expected partition hint
    ("01", s01, S, None, None),
    ("01", s01, WS, None, None),
    ("02", s02, S, ex.ConcurrentAppendException, P1),
    ("02", s02, WS, None, None),
    ("03", s03, S, ex.ConcurrentAppendException, P1),
    ("03", s03, WS, ex.ConcurrentAppendException, P1),
    ("04", s04, S, None, None),
    ("04", s04, WS, None, None),
    ("05", s05, S, ex.ConcurrentAppendException, P1),
    ("05", s05, WS, ex.ConcurrentAppendException, P1),
    ("06", s06, S, ex.ConcurrentDeleteReadException, P1),
    ("06", s06, WS, ex.ConcurrentDeleteReadException, P1),
    ("07", s07, S, ex.ConcurrentDeleteDeleteException, P1),
    ("07", s07, WS, ex.ConcurrentDeleteDeleteException, P1),
    ("08", s08, S, ex.ConcurrentDeleteReadException, None),
    ("08", s08, WS, ex.ConcurrentDeleteReadException, None),
    ("10", s10, S, ex.MetadataChangedException, None),
    ("10", s10, WS, ex.MetadataChangedException, None),
    ("11", s11, S, ex.ProtocolChangedException, None),
    ("11", s11, WS, ex.ProtocolChangedException, None),
    ("13-t1", s13, S, ex.ConcurrentTransactionException, None),
    ("13-t1", s13, WS, ex.ConcurrentTransactionException, None),
    ("13-t2", s13b, S, None, None),
    ("13-t2", s13b, WS, None, None),
    ("14", s14, S, None, None),
    ("14", s14, WS, None, None),
    ("15", s15, S, ex.ConcurrentDeleteReadException, P1),
    ("15", s15, WS, ex.ConcurrentDeleteReadException, P1),
    ("16", s16, S, ex.ConcurrentDeleteReadException, P1),
    ("16", s16, WS, ex.ConcurrentDeleteReadException, P1),
    ("18-p1", lambda e: s18(e, 1), S, None, None),
    ("18-p3", lambda e: s18(e, 3), S, ex.ConcurrentAppendException, {"p": "3"}),
    ("18-p3", lambda e: s18(e, 3), WS, None, None),
    ("19-x9", lambda e: s19(e, [9]), S, ex.ConcurrentAppendException, {"p": "2"}),
    ("19-x5", lambda e: s19(e, [1, 5]), S, None, None),
    ("20", s20, S, None, None),
    ("21", s21, WS, ex.ConcurrentAppendException, P1),
    ("21-no-commitinfo", lambda e: s21(e, False), WS, ex.ConcurrentAppendException, P1),
    ("22-p0", lambda e: s22(e, 0), S, ex.ConcurrentAppendException, {"p": "0"}),
    ("22-p0", lambda e: s22(e, 0), WS, None, None),
    ("22-p0-nonblind", lambda e: s22(e, 0, blind=False), WS, ex.ConcurrentAppendException, {"p": "0"}),
    ("22-p1", lambda e: s22(e, 1), S, None, None),
    ("22-p1", lambda e: s22(e, 1), WS, None, None),
]


@pytest.mark.parametrize("scenario,level,expected,hint", [pytest.param(*c[1:], id=f"s{c[0]}-{c[2]}") for c in CASES])
def test_scenario(where, scenario, level, expected, hint):
    """Each scenario on a local disk and on S3: the same outcome."""
    env = Env(where("t"), level=level, storage_options=where.options)
    txn, winner = scenario(env)
    result, err = outcome(txn)
    if expected is None:
        assert err is None, f"expected success, got {type(err).__name__}: {err}"
        assert result.version == winner.version + 1
        assert result.rebased_over == [winner.version]
        assert result.attempts == 2
        assert all(c["outcome"].startswith("no conflict") for c in result.checks)
        logged = env.table.history(1)[0]
        assert logged["deltaOcc"]["checkedWinners"][0]["version"] == winner.version
    else:
        assert type(err) is expected, f"expected {expected.__name__}, got {type(err).__name__ if err else 'success'}: {err}"
        assert err.winning_version == winner.version
        assert err.winning_operation == winner.operation
        assert err.isolation_level in (level, "SnapshotIsolation")
        if hint is not ANY:
            assert err.partition_hint == hint
        assert str(winner.version) in str(err) and err.table == env.table.path
        assert txn.state == "aborted"
        assert env.table.refresh() == winner.version, "a conflicting transaction must not commit"


def test_s09_unpartitioned_scan_without_predicate(tmp_path):
    for level in (S, WS):
        env = Env(str(tmp_path / level), partition_by=(), schema=pa.schema([("id", pa.int64()), ("x", pa.int64())]), level=level)
        txn, winner = s09(env)
        _, err = outcome(txn)
        assert type(err) is ex.ConcurrentAppendException and err.partition_hint is None, err
        assert err.winning_version == winner.version and err.winning_operation == "MERGE"


def test_s12_both_create_the_table(where):
    path, opts = where("t"), where.options
    first = docc.Table.begin_create(path, SCHEMA, ["p"], storage_options=opts)
    second = docc.Table.begin_create(path, SCHEMA, ["p"], storage_options=opts)
    assert first.commit("CREATE TABLE").version == 0
    with pytest.raises(ex.ProtocolChangedException) as info:
        second.commit("CREATE TABLE")
    assert info.value.winning_version == 0 and info.value.winning_operation == "CREATE TABLE"
    assert "multiple writers are writing to an empty directory" in str(info.value)
    assert "Creating the table ahead of time will avoid this conflict" in str(info.value)
    with pytest.raises(ex.TableAlreadyExistsError):
        docc.Table.begin_create(path, SCHEMA, ["p"], storage_options=opts)


def test_s14_compaction_runs_at_snapshot_isolation(tmp_path):
    env = Env(str(tmp_path / "t"), level=S)
    txn, winner = s14(env)
    result, err = outcome(txn)
    assert err is None and result.isolation_level is docc.IsolationLevel.SNAPSHOT_ISOLATION
    assert env.table.history(1)[0]["isolationLevel"] == "SnapshotIsolation"
    assert "SnapshotIsolation" in result.checks[0]["outcome"]


@pytest.mark.parametrize("level", [S, WS])
def test_s17_nested_partitions(tmp_path, level):
    schema = pa.schema([("id", pa.int64()), ("a", pa.int32()), ("b", pa.int32()), ("x", pa.int64())])
    env = Env(str(tmp_path / "t"), partition_by=("a", "b"), schema=schema, level=level)
    for b, expected in ((2, None), (1, ex.ConcurrentAppendException)):
        txn = env.begin()
        txn.scan("a = 1 AND b = 1")
        add(txn, env.path, rows([1]), {"a": 1, "b": 1})

        def non_blind(t, b=b):
            t.scan("a = 5")
            add(t, env.path, rows([2]), {"a": 1, "b": b})

        w = env.winner("WRITE", non_blind)
        result, err = outcome(txn)
        if expected is None:
            assert err is None, err
        else:
            assert type(err) is expected and err.partition_hint == {"a": "1", "b": "1"}
            assert err.winning_version == w.version


@pytest.mark.parametrize("data_skipping,expected", [(True, None), (False, ex.ConcurrentAppendException)])
def test_s19_s20_data_skipping_switch(tmp_path, data_skipping, expected):
    """Scenario 19 (x <= 5 only) and 20: success with conflict-time data skipping, Append without."""
    for name, build in (("s19", lambda e: s19(e, [1, 5])), ("s20", s20)):
        env = Env(str(tmp_path / name), level=S)
        real_begin = env.begin
        env.begin = lambda real_begin=real_begin, **kw: real_begin(data_skipping=data_skipping, **kw)
        txn, winner = build(env)
        result, err = outcome(txn)
        if expected is None:
            assert err is None, f"{name}: {err}"
        else:
            assert type(err) is expected, f"{name}: {err}"


def test_winner_without_commit_info_names_transaction(tmp_path):
    env = Env(str(tmp_path / "t"), level=WS)
    txn, winner = s21(env, with_commit_info=False)
    _, err = outcome(txn)
    assert err.winning_operation == "TRANSACTION" and err.winning_commit_info is None


def test_conflict_attributes_and_hierarchy(tmp_path):
    env = Env(str(tmp_path / "t"), level=S)
    txn, winner = s02(env)
    _, err = outcome(txn)
    assert isinstance(err, ex.DeltaConcurrentModificationException) and isinstance(err, ex.DeltaOccError)
    assert err.conflicting_file.startswith("p=1/")
    assert err.winning_commit_info["operation"] == "WRITE"
    assert err.winning_commit_info["txnId"] == winner.txn_id
    assert str(err).startswith("[DELTA_CONCURRENT_APPEND.WITH_PARTITION_HINT] Transaction conflict detected.")
    assert "partition [p=1]" in str(err)
