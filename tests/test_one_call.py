"""One-call operations on the embedded engine: exactly-once application versions (``app_id=`` /
``app_version=``) and re-execution on conflict (``rerun_on_conflict=``), api.md and
``delta_occ.one_call``.

Oracles: table contents and recorded app versions are read back with deltalake (tables here have
no DVs); expected rows come from a serial model written in the test (plain Python on the ids), the
conflict classes from concurrency.md §3 (checks 1, 4, 5, 6)."""

from __future__ import annotations

import threading
from typing import Callable, Dict, List

import deltalake
import pyarrow as pa
import pytest

from delta_occ import Table
from delta_occ.exceptions import (
    ConcurrentAppendException,
    ConcurrentTransactionException,
    InvalidArgumentError,
    MetadataChangedException,
)
from delta_occ.transaction import Transaction

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64())])


def rows(ids, v=0) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array([v] * len(ids), pa.int64())})


def make(tmp_path, ids=range(10), **props) -> Table:
    t = Table.create(str(tmp_path / "t"), SCHEMA, properties=props or None)
    t.append(rows(ids))
    return t


def oracle(t: Table) -> Dict[int, int]:
    """id -> v as deltalake reads the table."""
    got = deltalake.DeltaTable(t.path).to_pyarrow_table().to_pydict()
    assert len(got["id"]) == len(set(got["id"])), "duplicate ids"
    return dict(zip(got["id"], got["v"]))


def oracle_app_version(t: Table, app_id: str):
    return deltalake.DeltaTable(t.path).transaction_version(app_id)


# -- exactly once --------------------------------------------------------------------------------


def test_an_app_version_is_written_once(tmp_path):
    t = Table.create(str(tmp_path / "t"), SCHEMA)
    first = t.append(rows([1]), app_id="stream-a", app_version=0)
    assert first.committed and first.reason is None
    again = t.append(rows([1]), app_id="stream-a", app_version=0)  # Spark re-running batch 0
    assert (again.committed, again.version, again.attempts) == (False, first.version, 0)
    assert "already committed version 0" in again.reason
    older = t.append(rows([2]), app_id="stream-a", app_version=0)
    assert not older.committed
    nxt = t.append(rows([3]), app_id="stream-a", app_version=5)  # gaps are allowed, as in Delta
    assert nxt.committed
    assert not t.append(rows([4]), app_id="stream-a", app_version=3).committed  # below the recorded 5
    other = t.append(rows([5]), app_id="stream-b", app_version=0)  # app ids are independent
    assert other.committed
    assert oracle(t) == {1: 0, 3: 0, 5: 0}
    assert (oracle_app_version(t, "stream-a"), oracle_app_version(t, "stream-b")) == (5, 0)
    assert t.version == 3  # create, three writes; the skipped ones wrote no commit


@pytest.mark.parametrize(
    "op",
    [
        lambda t, **kw: t.overwrite(rows([7, 8]), **kw),
        lambda t, **kw: t.merge(rows([1, 7]), "t.id = s.id", when_not_matched_insert=True, **kw),
    ],
    ids=["overwrite", "merge"],
)
def test_overwrite_and_merge_take_app_versions(tmp_path, op):
    t = make(tmp_path, ids=[1, 2])
    assert op(t, app_id="job", app_version=1).committed
    before = oracle(t)
    assert not op(t, app_id="job", app_version=1).committed
    assert oracle(t) == before
    assert oracle_app_version(t, "job") == 1


def test_two_writers_of_one_app_id_never_both_commit(tmp_path):
    # Neither asked for the app's version first: set_app_version records that read itself.
    t = make(tmp_path, ids=[])
    a, b = t.begin(), t.begin()
    for txn, ids in ((a, [1]), (b, [2])):
        txn.append(rows(ids))
        txn.set_app_version("stream", 1)
    a.commit()
    with pytest.raises(ConcurrentTransactionException) as e:
        b.commit()
    assert e.value.rule is not None
    assert oracle(t) == {1: 0}


def test_a_one_call_write_loses_to_a_concurrent_writer_of_its_app_id(tmp_path, monkeypatch):
    t = make(tmp_path, ids=[])
    other = Table(t.path)
    inject_once(monkeypatch, lambda: other.append(rows([9]), app_id="stream", app_version=4))
    with pytest.raises(ConcurrentTransactionException) as e:
        t.append(rows([1]), app_id="stream", app_version=4, rerun_on_conflict=3)  # never re-run
    assert e.value.executions == 1
    assert oracle(t) == {9: 0}


@pytest.mark.parametrize(
    "kwargs",
    [
        {"app_id": "a"},
        {"app_version": 1},
        {"app_id": "", "app_version": 1},
        {"app_id": 3, "app_version": 1},
        {"app_id": "a", "app_version": -1},
        {"app_id": "a", "app_version": True},
        {"app_id": "a", "app_version": "1"},
        {"rerun_on_conflict": -1},
        {"rerun_on_conflict": 1.5},
    ],
)
def test_bad_arguments_are_typed_errors(tmp_path, kwargs):
    t = make(tmp_path, ids=[1])
    with pytest.raises(InvalidArgumentError):
        t.append(rows([2]), **kwargs)
    assert oracle(t) == {1: 0}


def test_a_reader_cannot_be_re_run(tmp_path):
    t = make(tmp_path, ids=[1])
    reader = pa.RecordBatchReader.from_batches(SCHEMA, rows([2]).to_batches())
    with pytest.raises(InvalidArgumentError, match="RecordBatchReader"):
        t.overwrite(reader, rerun_on_conflict=1)


# -- re-execution ---------------------------------------------------------------------------------


def inject_once(monkeypatch, winner: Callable[[], object], times: int = 1) -> List[int]:
    """Make ``winner`` commit between the next ``times`` transactions' reads and their commits
    (a concurrent writer, at a fixed point)."""
    calls: List[int] = []
    inside: List[int] = []
    real = Transaction.commit

    def commit(self, *args, **kwargs):
        if len(calls) < times and not inside:  # the winner's own commits are not intercepted
            calls.append(1)
            inside.append(1)
            try:
                winner()
            finally:
                inside.pop()
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Transaction, "commit", commit)
    return calls


def test_a_delete_that_lost_is_run_again_on_the_new_snapshot(tmp_path, monkeypatch):
    t = make(tmp_path)
    other = Table(t.path)
    inject_once(monkeypatch, lambda: other.delete("id = 7"))  # rewrites the one file we read
    r = t.delete("id < 5", rerun_on_conflict=2)
    assert (r.committed, r.executions) == (True, 2)
    # §3 check 5 comes first: the winner (version 2) rewrote the file, adding one that may hold rows `id < 5` matches.
    assert r.reruns == [{"winning_version": 2, "exception": "ConcurrentAppendException", "rule": r.reruns[0]["rule"]}]
    assert r.reruns[0]["rule"]
    assert oracle(t) == {i: 0 for i in (5, 6, 8, 9)}  # serial: the winner's delete, then ours


def test_without_reruns_the_conflict_is_raised(tmp_path, monkeypatch):
    t = make(tmp_path)
    other = Table(t.path)
    inject_once(monkeypatch, lambda: other.delete("id = 7"))
    with pytest.raises(ConcurrentAppendException) as e:
        t.delete("id < 5")
    assert (e.value.executions, e.value.reruns) == (1, [])
    assert oracle(t) == {i: 0 for i in range(10) if i != 7}


def test_reruns_are_bounded(tmp_path, monkeypatch):
    t = make(tmp_path)
    other = Table(t.path)
    victims = iter([9, 8, 7, 6])
    inject_once(monkeypatch, lambda: other.delete(f"id = {next(victims)}"), times=4)
    with pytest.raises(ConcurrentAppendException) as e:
        t.delete("id < 5", rerun_on_conflict=2)
    assert e.value.executions == 3
    assert [r["winning_version"] for r in e.value.reruns] == [2, 3]
    assert oracle(t) == {i: 0 for i in range(10) if i not in (9, 8, 7)}


def test_an_update_re_run_sees_the_rows_a_winner_appended(tmp_path, monkeypatch):
    # Serializable: the winner's blind append of a matching row conflicts (§3 check 5).
    t = make(tmp_path, ids=range(5), **{"delta.isolationLevel": "Serializable"})
    other = Table(t.path)
    inject_once(monkeypatch, lambda: other.append(rows([1, 100])))
    r = t.update("id < 50", {"v": "v + 1"}, rerun_on_conflict=1)
    assert r.executions == 2 and r.reruns[0]["exception"] == ConcurrentAppendException.__name__
    # Serial model: the append (id 1 again, id 100), then the update of every id < 50.
    got = deltalake.DeltaTable(t.path).to_pyarrow_table().sort_by([("id", "ascending"), ("v", "ascending")]).to_pydict()
    assert list(zip(got["id"], got["v"])) == [(0, 1), (1, 1), (1, 1), (2, 1), (3, 1), (4, 1), (100, 0)]


def test_no_re_run_after_a_metadata_change(tmp_path, monkeypatch):
    t = make(tmp_path)
    other = Table(t.path)
    inject_once(monkeypatch, lambda: other.set_properties({"delta.appendOnly": "false"}))
    with pytest.raises(MetadataChangedException) as e:
        t.delete("id < 5", rerun_on_conflict=5)
    assert e.value.executions == 1


def test_no_re_run_when_the_table_changed_shape_after_the_conflict(tmp_path, monkeypatch):
    t = make(tmp_path)
    other = Table(t.path)

    def two_winners():
        other.delete("id = 7")  # the data conflict the checker meets first
        other.set_properties({"x.note": "changed"})  # then a metadata change

    inject_once(monkeypatch, two_winners)
    with pytest.raises(ConcurrentAppendException) as e:
        t.delete("id < 5", rerun_on_conflict=5)
    assert e.value.executions == 1
    assert oracle(t) == {i: 0 for i in range(10) if i != 7}


def test_a_transaction_the_caller_began_is_never_re_run(tmp_path):
    t = make(tmp_path)
    txn = t.begin()
    txn.delete("id < 5")
    Table(t.path).delete("id = 7")
    with pytest.raises(ConcurrentAppendException):
        txn.commit()
    assert not hasattr(txn, "rerun_on_conflict")


def test_concurrent_jobs_with_reruns_all_finish_and_equal_a_serial_run(tmp_path):
    """N threads run non-commuting DELETE / UPDATE / MERGE on one file (every pair overlaps);
    with rerun_on_conflict all finish, and the table equals the ops applied serially in commit
    order (the model below)."""
    t = make(tmp_path, ids=range(40))
    ops = []
    for k in range(8):
        if k % 3 == 0:
            ops.append(("update", f"id % 4 = {k % 4}", k))
        elif k % 3 == 1:
            ops.append(("delete", f"id = {k * 5}", k))
        else:
            ops.append(("merge", f"id in ({k}, {k + 40})", k))
    results: Dict[int, object] = {}
    errors: List[BaseException] = []
    start = threading.Barrier(4)

    def worker(mine):
        table = Table(t.path)
        start.wait()
        for i in mine:
            kind, cond, k = ops[i]
            try:
                if kind == "update":
                    results[i] = table.update(cond, {"v": f"v * 2 + {k}"}, rerun_on_conflict=20)
                elif kind == "delete":
                    results[i] = table.delete(cond, rerun_on_conflict=20)
                else:
                    src = rows([k, k + 40], v=k)
                    results[i] = table.merge(src, "t.id = s.id", when_matched_update={"v": "t.v * 3 + s.v"}, when_not_matched_insert=True, rerun_on_conflict=20)
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

    threads = [threading.Thread(target=worker, args=(list(range(w, len(ops), 4)),)) for w in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    assert len(results) == len(ops)
    model = {i: 0 for i in range(40)}
    for i in sorted(results, key=lambda i: results[i].version):
        kind, cond, k = ops[i]
        if kind == "update":
            model = {j: (v * 2 + k if j % 4 == k % 4 else v) for j, v in model.items()}
        elif kind == "delete":
            model.pop(k * 5, None)
        else:
            for j in (k, k + 40):
                model[j] = model[j] * 3 + k if j in model else k
    assert oracle(t) == model
    executions = [results[i].executions for i in results]
    assert all(r.committed for r in results.values())
    assert sum(executions) >= len(ops)
    print("executions per job:", executions)
