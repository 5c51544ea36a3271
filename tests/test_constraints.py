"""CHECK constraints and column invariants (issue 30, "Constraints"). Expected behaviour comes
from the Delta protocol ("invariants" / "checkConstraints": a write fails when a row makes the
expression FALSE or NULL; a constraint binds writers only when the protocol names its feature)
and from deltalake 1.6, the oracle: it refuses ``add_constraint`` over a NULL row, enforces our
constraints on its own appends, and its constraints bind our writes. delta-kernel-rs reads what we
write."""

from __future__ import annotations

import json
import os
import threading
from typing import Any, Dict, List

import pyarrow as pa
import pytest

import delta_occ as docc
from delta_occ import exceptions as exc

from helpers import kernel_rows

SCHEMA = pa.schema([("id", pa.int64()), ("amount", pa.float64()), ("status", pa.string()), ("d", pa.date32())])


def rows(ids: List[Any], amounts: List[Any], status: Any = "ok") -> pa.Table:
    return pa.table({"id": ids, "amount": amounts, "status": [status] * len(ids), "d": pa.nulls(len(ids), pa.date32())}, schema=SCHEMA)


@pytest.fixture
def table(tmp_path):
    t = docc.Table.create(str(tmp_path / "t"), SCHEMA)
    t.append(rows([1, 2, 3], [10.0, 20.0, None]))
    return t


def data_files(t: docc.Table) -> List[str]:
    return sorted(f for _, _, fs in os.walk(t.path) for f in fs if f.endswith(".parquet"))


def log(t: docc.Table, version: int) -> List[Dict[str, Any]]:
    with open(os.path.join(t.path, "_delta_log", f"{version:020}.json")) as f:
        return [json.loads(line) for line in f]


# -- adding a constraint checks the existing rows ---------------------------------------------

ADD_CASES = [
    # (expression, refused?, the first breaking row's columns the rule reads): the fixture's
    # ids 1, 2, 3 with amounts 10, 20, NULL
    ("id > 0", False, None),
    ("id > 1", True, {"id": 1}),
    ("amount >= 10", True, {"amount": None}),  # NULL breaks it, as deltalake refuses it (below)
    ("amount IS NULL OR amount >= 10", False, None),
    ("coalesce(amount, 0) < 15", True, {"amount": 20.0}),
    ("status IN ('ok', 'late') AND length(status) = 2", False, None),
]


@pytest.mark.parametrize("expr,refused,first", ADD_CASES)
def test_add_constraint_checks_every_live_row(table, expr, refused, first):
    before = table.version
    if refused:
        with pytest.raises(exc.ConstraintViolationError) as e:
            table.add_constraint("c", expr)
        assert e.value.constraint == "c" and e.value.expression == expr
        assert e.value.row == first
        assert table.refresh() == before, "nothing committed"
        assert "delta.constraints.c" not in table.snapshot().properties
    else:
        result = table.add_constraint("c", expr)
        assert result.version == before + 1
        assert table.snapshot().properties["delta.constraints.c"] == expr
        info = log(table, result.version)
        commit = next(a["commitInfo"] for a in info if "commitInfo" in a)
        assert commit["operation"] == "ADD CONSTRAINT"
        assert commit["operationParameters"] == {"constraintName": "c", "expr": expr}
        assert commit["isolationLevel"] == "Serializable"
        # the protocol names the feature (legacy 1/2 upgraded to 1/7, keeping writer 2's features)
        protocol = table.snapshot().protocol
        assert "checkConstraints" in protocol["writer_features"]


def test_add_constraint_ignores_deleted_rows(tmp_path):
    t = docc.Table.create(str(tmp_path / "dv"), SCHEMA, properties={"delta.enableDeletionVectors": "true"})
    t.append(rows([1, 2, 3], [10.0, -5.0, 30.0]))
    t.delete("id = 2")  # a DV: the file still holds the row
    t.add_constraint("positive", "amount > 0")
    with pytest.raises(exc.ConstraintViolationError):
        t.append(rows([4], [-1.0]))


BAD_ADDS = [
    ("1bad", "id > 0", exc.InvalidArgumentError),  # a name Delta would not accept
    ("c", "id +", exc.PredicateError),  # not SQL
    ("c", "nope > 1", exc.PredicateError),  # unknown column
    ("c", "id + 1", exc.PredicateError),  # not a condition
    ("c", 5, exc.InvalidArgumentError),
    ("c", "d < current_date()", exc.PredicateError),  # not deterministic (Delta refuses those)
    ("c", "rand() < 2", exc.PredicateError),  # a function the core lacks: it could never be enforced
    ("c", "id IN (SELECT 1)", exc.PredicateError),
]


@pytest.mark.parametrize("name,expr,error", BAD_ADDS)
def test_bad_constraints_are_typed_errors(table, name, expr, error):
    before = table.version
    with pytest.raises(error):
        table.add_constraint(name, expr)
    assert table.refresh() == before


def test_a_name_is_added_once_and_dropped_once(table):
    table.add_constraint("c", "id > 0")
    with pytest.raises(exc.InvalidArgumentError, match="already exists"):
        table.add_constraint("C", "id > 5")  # names compare case-insensitively, as in Spark
    dropped = table.drop_constraint("c")
    commit = next(a["commitInfo"] for a in log(table, dropped.version) if "commitInfo" in a)
    assert commit["operation"] == "DROP CONSTRAINT"
    assert commit["operationParameters"] == {"constraintName": "c", "expr": "id > 0"}
    assert not any(k.startswith("delta.constraints.") for k in table.snapshot().properties)
    with pytest.raises(exc.InvalidArgumentError, match="no constraint c"):
        table.drop_constraint("c")
    assert table.drop_constraint("c", if_exists=True).committed is False
    table.append(rows([-1], [1.0]))  # no longer enforced


# -- every write is checked, nothing written when a row breaks a rule ---------------------------

WRITES = [
    # (what, the call, breaks it?)
    ("append", lambda t: t.append(rows([9], [-1.0])), True),
    ("append", lambda t: t.append(rows([9], [1.0])), False),
    ("append NULL", lambda t: t.append(rows([9], [None])), True),
    ("overwrite", lambda t: t.overwrite(rows([9, 10], [1.0, -2.0])), True),
    ("replace_where", lambda t: t.overwrite(rows([1], [-1.0]), replace_where="id = 1"), True),
    ("update", lambda t: t.update("id = 2", {"amount": "amount - 100"}), True),
    ("update", lambda t: t.update("id = 2", {"amount": "amount + 100"}), False),
    ("merge insert", lambda t: t.merge(rows([7], [-7.0]), on="t.id = s.id", when_not_matched_insert=True), True),
    ("merge update", lambda t: t.merge(rows([1], [-7.0]), on="t.id = s.id", when_matched_update={"amount": "s.amount"}), True),
    ("merge", lambda t: t.merge(rows([1, 8], [7.0, 8.0]), on="t.id = s.id", when_matched_update={"amount": "s.amount"},
                                when_not_matched_insert=True), False),
    ("delete", lambda t: t.delete("id = 1"), False),
]


@pytest.mark.parametrize("what,write,breaks", WRITES, ids=[f"{w[0]}-{'breaks' if w[2] else 'keeps'}" for w in WRITES])
def test_every_write_is_checked(tmp_path, what, write, breaks):
    t = docc.Table.create(str(tmp_path / "t"), SCHEMA)
    t.append(rows([1, 2], [10.0, 20.0]))
    t.add_constraint("positive", "amount > 0")
    before, files = t.version, data_files(t)
    if breaks:
        with pytest.raises(exc.ConstraintViolationError) as e:
            write(t)
        assert e.value.constraint == "positive" and e.value.rows >= 1
        assert t.refresh() == before and data_files(t) == files, "nothing written"
    else:
        write(t)
        assert t.refresh() == before + 1
    amounts = t.snapshot().to_pyarrow().column("amount").to_pylist()
    assert all(a is not None and a > 0 for a in amounts)


def test_invariants_are_enforced(tmp_path):
    """Column metadata ``delta.invariants`` (the protocol's "invariants", legacy writer 2, as old
    delta-spark versions wrote it): the schema of version 0 edited by hand to carry one, the
    JSON form the protocol gives."""
    schema = pa.schema([("id", pa.int64()), ("amount", pa.float64())])
    t = docc.Table.create(str(tmp_path / "inv"), schema)
    first = os.path.join(t.path, "_delta_log", f"{0:020}.json")
    actions = log(t, 0)
    for a in actions:
        if "metaData" in a:
            fields = json.loads(a["metaData"]["schemaString"])
            fields["fields"][0]["metadata"] = {"delta.invariants": json.dumps({"expression": {"expression": "id < 100"}})}
            a["metaData"]["schemaString"] = json.dumps(fields)
    with open(first, "w") as f:
        f.write("\n".join(json.dumps(a) for a in actions) + "\n")
    t = docc.Table(t.path)
    assert t.snapshot().protocol["min_writer_version"] >= 2  # writer 2 carries invariants
    t.append(pa.table({"id": [1], "amount": [1.0]}, schema=schema))
    with pytest.raises(exc.ConstraintViolationError) as e:
        t.append(pa.table({"id": [100], "amount": [1.0]}, schema=schema))
    assert e.value.constraint == "id" and e.value.expression == "id < 100"
    assert t.refresh() == 1


def test_invariants_declared_through_arrow_field_metadata(tmp_path):
    """``Table.create`` carries ``delta.invariants`` (and ``comment``) from Arrow field metadata
    into the table schema; a table-features protocol then lists ``invariants`` (the protocol's
    rule), and deltalake, the oracle, refuses the breaking row as we do."""
    deltalake = pytest.importorskip("deltalake")
    rule = json.dumps({"expression": {"expression": "id < 100"}})
    schema = pa.schema([pa.field("id", pa.int64(), metadata={"delta.invariants": rule, "comment": "the key"}), ("amount", pa.float64())])
    t = docc.Table.create(str(tmp_path / "inv"), schema, properties={"delta.enableDeletionVectors": "true"})
    assert "invariants" in t.snapshot().protocol["writer_features"]
    meta = next(a["metaData"] for a in log(t, 0) if "metaData" in a)
    assert json.loads(meta["schemaString"])["fields"][0]["metadata"] == {"delta.invariants": rule, "comment": "the key"}
    plain = pa.schema([("id", pa.int64()), ("amount", pa.float64())])
    t.append(pa.table({"id": [1], "amount": [1.0]}, schema=plain))
    with pytest.raises(exc.ConstraintViolationError):
        t.append(pa.table({"id": [100], "amount": [1.0]}, schema=plain))
    with pytest.raises(Exception, match="rows failed validation"):
        deltalake.write_deltalake(t.path, pa.table({"id": [100], "amount": [1.0]}, schema=plain), mode="append")
    with pytest.raises(exc.InvalidArgumentError, match="delta.invariants must be"):
        docc.Table.create(str(tmp_path / "bad"), pa.schema([pa.field("id", pa.int64(), metadata={"delta.invariants": "id < 100"})]))


def test_set_properties_checks_a_constraint_too(table):
    with pytest.raises(exc.ConstraintViolationError):
        table.set_properties({"delta.constraints.c": "amount > 15"})
    with pytest.raises(exc.InvalidArgumentError, match="Serializable"):
        table.set_properties({"delta.constraints.c": "id > 0"}, isolation_level="WriteSerializable")
    table.set_properties({"delta.constraints.c": "id > 0"})
    assert "checkConstraints" in table.snapshot().protocol["writer_features"]


# -- concurrency: rows a concurrent writer adds cannot slip past the check -------------------


def test_a_concurrent_append_makes_add_constraint_conflict(table):
    txn = table.begin(isolation_level="Serializable")
    txn.add_constraint("positive", "amount IS NULL OR amount > 0")  # holds on the rows it read
    table.append(rows([4], [-4.0]))  # a blind append that breaks it commits first
    with pytest.raises(exc.ConcurrentAppendException):
        txn.commit()
    assert "delta.constraints.positive" not in table.snapshot().properties


@pytest.mark.parametrize("first", [True, False], ids=["protocol-upgrade", "second-constraint"])
def test_an_append_that_began_before_the_constraint_conflicts(table, first):
    """The first constraint also upgrades the protocol, which fails concurrent writers with
    ProtocolChangedException (checked before metadata, as Delta does); a later one is a metadata
    change only."""
    if not first:
        table.add_constraint("ids", "id > 0")
    txn = table.begin()
    txn.append(rows([4], [-4.0]))
    table.add_constraint("positive", "amount IS NULL OR amount > 0")
    with pytest.raises(exc.ProtocolChangedException if first else exc.MetadataChangedException):
        txn.commit()


def test_a_writeserializable_transaction_cannot_add_one(table):
    txn = table.begin(isolation_level="WriteSerializable")
    with pytest.raises(exc.InvalidArgumentError, match="Serializable"):
        txn.add_constraint("c", "id > 0")
    txn.abort()


# -- the oracles -------------------------------------------------------------------------------


def test_deltalake_enforces_our_constraint_and_we_enforce_its(table, tmp_path):
    deltalake = pytest.importorskip("deltalake")
    table.add_constraint("positive", "amount IS NULL OR amount > 0")
    with pytest.raises(Exception, match="rows failed validation"):
        deltalake.write_deltalake(table.path, rows([5], [-5.0]), mode="append")
    deltalake.write_deltalake(table.path, rows([5], [5.0]), mode="append")
    # delta-kernel-rs reads every row (the protocol only gained a writer feature)
    assert sorted(kernel_rows(table).column("id").to_pylist()) == [1, 2, 3, 5]

    other = str(tmp_path / "theirs")
    deltalake.write_deltalake(other, rows([1], [1.0]))
    deltalake.DeltaTable(other).alter.add_constraint({"small": "id < 10"})
    ours = docc.Table(other)
    with pytest.raises(exc.ConstraintViolationError) as e:
        ours.append(rows([10], [1.0]))
    assert e.value.constraint == "small"
    ours.append(rows([9], [1.0]))


def test_deltalake_refuses_the_null_row_as_we_do(tmp_path):
    """The NULL rule's oracle: deltalake's add_constraint over a NULL row fails."""
    deltalake = pytest.importorskip("deltalake")
    path = str(tmp_path / "n")
    deltalake.write_deltalake(path, rows([1], [None]))
    with pytest.raises(Exception, match="1 rows failed"):
        deltalake.DeltaTable(path).alter.add_constraint({"c": "amount > 0"})
    with pytest.raises(exc.ConstraintViolationError):
        docc.Table(path).add_constraint("c", "amount > 0")


def test_writers_on_threads_never_commit_a_breaking_row(table):
    """Threads race: two add the constraint (retrying their conflicts until they commit or find a
    breaking row), four append one breaking row each. Either the constraint is in the table and
    no live row breaks it, or every adder found a breaking row; never both absent."""
    outcomes: List[str] = []
    errors: List[BaseException] = []

    def add() -> None:
        try:
            for _ in range(100):
                try:
                    docc.Table(table.path).add_constraint("positive", "amount IS NULL OR amount > 0")
                    outcomes.append("added")
                    return
                except exc.DeltaConcurrentModificationException:
                    continue
                except exc.InvalidArgumentError as e:  # the other adder won ("already exists"), or a row breaks it
                    outcomes.append("broken" if isinstance(e, exc.ConstraintViolationError) else "exists")
                    return
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    def append(i: int) -> None:
        try:
            docc.Table(table.path).append(rows([100 + i], [-1.0]), max_attempts=50)
        except (exc.ConstraintViolationError, exc.DeltaConcurrentModificationException):
            pass
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=add) for _ in range(2)] + [threading.Thread(target=append, args=(i,)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    snap = docc.Table(table.path).snapshot()
    amounts = snap.to_pyarrow().column("amount").to_pylist()
    if "delta.constraints.positive" in snap.properties:
        assert outcomes.count("added") == 1
        assert all(a is None or a > 0 for a in amounts)
    else:
        assert outcomes == ["broken", "broken"] and any(a is not None and a <= 0 for a in amounts)
