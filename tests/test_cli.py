"""The command line: every command's JSON output and exit codes (0 ok, 1 delta-occ error, 2 usage,
3 a finding, 4 `check` predicts a conflict), on a missing table and a corrupt log too. Expected
row counts are golden INDEX.md facts; expected conflicts come from concurrency.md (section or
scenario named at each case)."""

from __future__ import annotations

import json
import pathlib

import pyarrow as pa
import pytest

import delta_occ as docc
from delta_occ.cli import main

from conftest import GOLDEN


def run(capsys, *argv: str) -> "tuple[int, str, str]":
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def run_json(capsys, *argv: str) -> "tuple[int, object]":
    rc, out, _ = run(capsys, *argv, "--json")
    return rc, json.loads(out)  # fails on any text around the one JSON document


SCHEMA = pa.schema([("id", pa.int64()), ("date", pa.string()), ("value", pa.float64())])


def events(path: pathlib.Path, partitioned: bool, dvs: bool = False) -> docc.Table:
    props = {"delta.enableDeletionVectors": "true"} if dvs else {}
    t = docc.Table.create(str(path), SCHEMA, partition_by=["date"] if partitioned else [], properties=props)
    t.append(pa.table({"id": [1, 2, 3, 4], "date": ["2009-01-01", "2009-06-01", "2011-01-01", "2012-01-01"],
                       "value": [1.0, 2.0, 3.0, 4.0]}, schema=SCHEMA))
    return t


@pytest.fixture
def corrupt(tmp_path) -> pathlib.Path:
    t = events(tmp_path / "corrupt", partitioned=False)
    t.append(pa.table({"id": [5], "date": ["2013-01-01"], "value": [5.0]}, schema=SCHEMA))
    (tmp_path / "corrupt" / "_delta_log" / "00000000000000000001.json").write_text('{"add": {"path": \n')
    return tmp_path / "corrupt"


@pytest.mark.parametrize("table, rows, version", [
    ("delta/dv-partitioned-with-checkpoint", 35, 15),  # stats on every file, DVs subtracted
    ("delta/basic-dv-with-checkpoint", 454, 46),
    ("delta-rs/simple_table", 3, 4),                   # no numRecords: rows read from the data
    ("delta/snapshot-data0", 10, 0),
])
def test_snapshot_rows(golden, capsys, table, rows, version):
    rc, out = run_json(capsys, "snapshot", str(GOLDEN / table))
    assert rc == 0 and (out["rows"], out["version"]) == (rows, version)


def test_history_json_golden(golden, capsys):
    rc, out = run_json(capsys, "history", str(GOLDEN / "delta-rs/checkpoints_vacuumed"), "--limit", "2")
    assert rc == 0 and [e["version"] for e in out] == [12, 11]


def test_history_prints_what_it_can_read_and_names_the_corrupt_commit(corrupt, capsys):
    """Issue 47 item 6: the fixture's commits are 0 (create), 1 (cut short: corrupt) and 2 (an
    append); history shows 2 and 0 and names version 1, exit code 1."""
    rc, out, err = run(capsys, "history", str(corrupt))
    assert rc == 1 and "CorruptLogError" in err and "version 1 cannot be read" in err, err
    assert "cannot be read" in out and "WRITE" in out
    rc, doc = run_json(capsys, "history", str(corrupt))
    assert rc == 1 and [e["version"] for e in doc] == [2, 1, 0]
    assert "unreadable" in doc[1] and doc[0]["operation"] == "WRITE" and doc[2]["operation"] in ("CREATE TABLE", "WRITE")
    with pytest.raises(docc.exceptions.CorruptLogError):  # the Python API opens the table: it still refuses
        docc.Table(corrupt)


@pytest.mark.parametrize("argv", [
    ["snapshot", "{missing}"],
    ["history", "{missing}"],
    ["explain", "{missing}", "0"],
    ["check", "{missing}", "--first", "DELETE", "--second", "DELETE"],
    ["snapshot", "{corrupt}"],
    ["explain", "{corrupt}", "1"],
    ["check", "{corrupt}", "--first", "DELETE", "--second", "OPTIMIZE"],
])
def test_missing_table_and_corrupt_log_exit_1(tmp_path, capsys, corrupt, argv):
    argv = [a.format(missing=tmp_path / "nope", corrupt=corrupt) for a in argv]
    want = "TableNotFoundError" if "nope" in argv[1] else "CorruptLogError"
    rc, out, err = run(capsys, *argv)
    assert rc == 1 and want in err and not out
    rc, doc = run_json(capsys, *argv)
    assert rc == 1 and doc["error"]["type"] == want and doc["error"]["message"]


@pytest.mark.parametrize("argv", [[], ["nope"], ["history"], ["explain", "x"], ["explain", "x", "one"], ["check", "x", "--first", "DELETE"],
                                  ["matrix", "--mode", "cell-level"]])
def test_bad_usage_exit_2(capsys, argv):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2 and "usage:" in capsys.readouterr().err


def test_version_flag_and_help(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"delta-occ {docc.__version__}"
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    assert "exit codes:" in text and "``" not in text and all(c in text for c in ("matrix", "explain", "check", "stress"))


def test_demo_json_then_refuses_an_existing_table(tmp_path, capsys):
    rc, doc = run_json(capsys, "demo", str(tmp_path / "t"))
    assert rc == 0 and doc["steps"][0].startswith("created") and doc["snapshot"]["version"] == doc["history"][0]["version"]
    # The demo's rows: ids 1..8, 1 and 2 deleted, MERGE inserts 100 (cli.cmd_demo).
    ids = sorted(docc.Table(str(tmp_path / "t")).snapshot().to_pyarrow(columns=["id"]).column("id").to_pylist())
    assert ids == [3, 4, 5, 6, 7, 8, 100] and doc["snapshot"]["rows"] == 7
    assert doc["history"][3]["rebased_over"] == [2]  # the concurrent delete, rebased at row level
    version = docc.Table(str(tmp_path / "t")).version
    rc, doc = run_json(capsys, "demo", str(tmp_path / "t"))
    assert rc == 1 and doc["error"]["type"] == "TableAlreadyExistsError"
    assert docc.Table(str(tmp_path / "t")).version == version  # untouched


def test_demo_without_path_uses_a_new_directory(capsys):
    rc, out, _ = run(capsys, "demo")
    assert rc == 0 and "created" in out and "history" in out


def test_snapshot_time_travel_and_history_columns(tmp_path, capsys):
    assert main(["demo", str(tmp_path / "t")]) == 0
    capsys.readouterr()
    rc, doc = run_json(capsys, "snapshot", "--version", "1", str(tmp_path / "t"))
    assert rc == 0 and doc["version"] == 1 and doc["rows"] == 8
    rc, doc = run_json(capsys, "history", "--limit", "3", str(tmp_path / "t"))
    assert [e["version"] for e in doc] == [6, 5, 4]
    assert doc[0]["operation"] == "OPTIMIZE" and doc[0]["isolation_level"] == "SnapshotIsolation"  # §2
    assert all(isinstance(e["timestamp"], int) and e["read_version"] == e["version"] - 1 for e in doc)
    rc, out, _ = run(capsys, "history", str(tmp_path / "t"))
    assert rc == 0 and "OPTIMIZE" in out and "SnapshotIsolation" in out and "v2" in out  # v3 rebased over v2
    rc, out, err = run(capsys, "snapshot", "--version", "999", str(tmp_path / "t"))
    assert rc == 1 and "999" in err
    # --at-version is the flag's name (--version above is its alias): the same snapshot.
    rc, at = run_json(capsys, "snapshot", "--at-version", "1", str(tmp_path / "t"))
    assert rc == 0 and (at["version"], at["rows"]) == (1, 8)


def test_cli_errors_name_flags_not_python_keywords(tmp_path, capsys):
    """Issue 47 item 4: the retention refusal tells a command-line user the flag to pass."""
    assert main(["demo", str(tmp_path / "t")]) == 0
    capsys.readouterr()
    rc, out, err = run(capsys, "vacuum", str(tmp_path / "t"), "--retention-hours", "0")
    assert rc == 1 and "--no-enforce-retention" in err and "enforce_retention_duration" not in err, err
    rc, doc = run_json(capsys, "vacuum", str(tmp_path / "t"), "--retention-hours", "0")
    assert rc == 1 and "--no-enforce-retention" in doc["error"]["message"]


def test_explain_a_row_level_rebase(tmp_path, capsys):
    """Scenario 23: two DELETEs of different rows of one file both commit; the second is rebased
    at row level (§4 rule 3). explain names the winner, the rule, the file and the partition."""
    t = events(tmp_path / "t", partitioned=True, dvs=True)
    t.append(pa.table({"id": [10, 11], "date": ["2011-01-01"] * 2, "value": [0.0, 0.0]}, schema=SCHEMA))
    first = t.begin()
    first.delete("id = 10")
    winner = t.delete("id = 11")
    r = first.commit()
    rc, doc = run_json(capsys, "explain", str(tmp_path / "t"), str(r.version))
    assert rc == 0 and doc["read_version"] == 2 and doc["attempts"] == 2
    [c] = doc["checked"]
    assert c["version"] == winner.version and c["operation"] == "DELETE"
    assert c["rule"].startswith("§4 rules 1-3")
    assert len(c["shared_files"]) == 1 and c["shared_files"][0].startswith("date=2011-01-01/")
    assert c["shared_partitions"] == [{"date": "2011-01-01"}]
    rc, out, _ = run(capsys, "explain", str(tmp_path / "t"), str(r.version))
    assert rc == 0 and f"against v{winner.version} (DELETE)" in out and "§4 rules 1-3" in out


def test_explain_file_level_rebase_and_plain_commit(tmp_path, capsys):
    """Scenario 4: reads p=1 and writes p=1 while the winner appends elsewhere → success, by §3
    check 5 on partition values."""
    t = events(tmp_path / "t", partitioned=True)
    txn = t.begin(isolation_level="Serializable", data_skipping=False)
    txn.scan("date = '2011-01-01'")
    txn.append(pa.table({"id": [20], "date": ["2011-01-01"], "value": [0.0]}, schema=SCHEMA))
    t.append(pa.table({"id": [21], "date": ["2012-01-01"], "value": [0.0]}, schema=SCHEMA))
    r = txn.commit()
    rc, doc = run_json(capsys, "explain", str(tmp_path / "t"), str(r.version))
    [c] = doc["checked"]
    assert rc == 0 and c["rule"] == "§3 check 5: no added file is in a partition this transaction read"
    assert c["shared_partitions"] == [] and doc["isolation_level"] == "Serializable"
    rc, doc = run_json(capsys, "explain", str(tmp_path / "t"), "1")
    assert rc == 0 and doc["checked"] == [] and "no concurrent commit" in doc["summary"]


def test_explain_golden_commit_without_records(golden, capsys):
    """A commit delta-spark wrote has no deltaOcc record: explain says so instead of guessing."""
    rc, doc = run_json(capsys, "explain", str(GOLDEN / "delta/dv-partitioned-with-checkpoint"), "15")
    assert rc == 0 and doc["checked"] == [] and doc["version"] == 15


def test_explain_a_failed_transaction(tmp_path):
    """Scenario 2 [S]: the conflict's explanation names the winning version, §3 check 5, the
    file and the partition."""
    t = events(tmp_path / "t", partitioned=True)
    txn = t.begin(isolation_level="Serializable")
    txn.scan("date = '2011-01-01'")
    txn.append(pa.table({"id": [20], "date": ["2011-01-01"], "value": [0.0]}, schema=SCHEMA))
    w = t.append(pa.table({"id": [21], "date": ["2011-01-01"], "value": [0.0]}, schema=SCHEMA))
    with pytest.raises(docc.exceptions.ConcurrentAppendException) as e:
        txn.commit()
    doc = e.value.explain()
    assert doc["winning_version"] == w.version and doc["rule"].startswith("§3 check 5")
    assert doc["partition"] == {"date": "2011-01-01"} and doc["file"].startswith("date=2011-01-01/")


def test_explain_a_row_level_conflict(tmp_path):
    """Scenario 24: two DELETEs of the same row → DeleteDelete by §4 rule 1, one overlapping row."""
    t = events(tmp_path / "t", partitioned=False, dvs=True)
    txn = t.begin()
    txn.delete("id = 2")
    w = t.delete("id = 2")
    with pytest.raises(docc.exceptions.ConcurrentDeleteDeleteException) as e:
        txn.commit()
    doc = e.value.explain()
    assert (doc["winning_version"], doc["overlapping_rows"]) == (w.version, 1) and doc["rule"].startswith("§4 rule 1")
    assert doc["file"] and doc["partition"] is None


# The classic example of concurrency.md §5: UPDATE date > '2010-01-01' vs DELETE date < '2010-01-01'
# conflict unless the table is partitioned by date.
CLASSIC = ("DELETE WHERE date < '2010-01-01'", "UPDATE SET value = value * 2 WHERE date > '2010-01-01'")


@pytest.mark.parametrize("partitioned, rc_want", [(False, 4), (True, 0)])
def test_check_the_classic_example(tmp_path, capsys, partitioned, rc_want):
    t = events(tmp_path / "t", partitioned)
    version = t.version
    before = sorted(str(p.relative_to(tmp_path)) for p in (tmp_path / "t").rglob("*"))
    rc, doc = run_json(capsys, "check", str(tmp_path / "t"), "--first", CLASSIC[0], "--second", CLASSIC[1])
    assert rc == rc_want and doc["conflicts"] == (rc_want == 4) and len(doc["orders"]) == 2
    for o in doc["orders"]:
        assert (o["outcome"] == "no conflict") == partitioned
    assert docc.Table(str(tmp_path / "t")).version == version  # the table itself is untouched
    assert sorted(str(p.relative_to(tmp_path)) for p in (tmp_path / "t").rglob("*")) == before
    rc, out, _ = run(capsys, "check", str(tmp_path / "t"), "--first", CLASSIC[0], "--second", CLASSIC[1])
    assert rc == rc_want and ("ConcurrentAppendException" in out) != partitioned


def test_check_insert_against_delete_by_level(tmp_path, capsys):
    """Scenario 2 shape: a blind INSERT into the partition a DELETE reads conflicts under
    Serializable only, and only when the INSERT commits first (§2)."""
    events(tmp_path / "t", partitioned=True)
    ops = ["--first", 'INSERT {"id": 9, "date": "2011-01-01"}', "--second", "DELETE WHERE date = '2011-01-01'"]
    rc, doc = run_json(capsys, "check", str(tmp_path / "t"), *ops, "--isolation-level", "Serializable")
    assert rc == 4 and [o["outcome"] for o in doc["orders"]] == ["ConcurrentAppendException", "no conflict"]
    assert doc["orders"][0]["explanation"]["partition"] == {"date": "2011-01-01"}
    rc, doc = run_json(capsys, "check", str(tmp_path / "t"), *ops, "--isolation-level", "WriteSerializable")
    assert rc == 0 and doc["orders"][0]["rule"].startswith("§2: WriteSerializable ignores")


def test_check_row_level_same_file(tmp_path, capsys):
    """Scenario 23 vs 24 through `check`: different rows of one file never conflict, the same row does."""
    events(tmp_path / "t", partitioned=False, dvs=True)
    rc, doc = run_json(capsys, "check", str(tmp_path / "t"), "--first", "DELETE WHERE id = 1", "--second", "UPDATE SET value = 0 WHERE id = 2")
    assert rc == 0 and doc["row_level"] and all(o["rule"].startswith("§4 rules 1-3") for o in doc["orders"])
    rc, doc = run_json(capsys, "check", str(tmp_path / "t"), "--first", "DELETE WHERE id = 1", "--second", "UPDATE SET value = 0 WHERE id = 1")
    # DELETE first: the UPDATE changes the deleted row (§4 rule 1). UPDATE first: its new row
    # matches the DELETE's predicate, and appends are checked first (§3, last paragraph).
    assert rc == 4 and [o["outcome"] for o in doc["orders"]] == ["ConcurrentDeleteDeleteException", "ConcurrentAppendException"]
    rc, doc = run_json(capsys, "check", str(tmp_path / "t"), "--first", "DELETE WHERE id = 1", "--second", "UPDATE SET value = 0 WHERE id = 2", "--file-level")
    assert rc == 4 and not doc["row_level"]


@pytest.mark.parametrize("op, message", [
    ("FOO", "must start with one of"),
    ("UPDATE value = 1", "expected UPDATE SET"),
    ("UPDATE SET value WHERE id = 1", "SET needs <col> = <expr>"),
    ("INSERT id=1", "expected JSON rows"),
    ("INSERT []", "non-empty list"),
    ('INSERT {"nope": 1}', "not in the table schema"),
    ('MERGE {"id": 1}', "expected ON"),
    ("DELETE id = 1", "expected WHERE"),
    ("DELETE WHERE id ===", "predicate"),
])
def test_check_bad_operation_text_exit_1(tmp_path, capsys, op, message):
    events(tmp_path / "t", partitioned=False)
    rc, doc = run_json(capsys, "check", str(tmp_path / "t"), "--first", op, "--second", "OPTIMIZE")
    assert rc == 1 and message in doc["error"]["message"], doc


@pytest.mark.parametrize("argv, code", [(["--version"], 0), (["snapshot", "/nonexistent-delta-occ"], 1), (["nope"], 2)])
def test_the_console_entry_point_keeps_exit_codes(argv, code):
    """`python -m delta_occ` goes through cli.run, which ends the process itself after flushing:
    the exit code and the output must survive that."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "delta_occ", *argv], capture_output=True, text=True, timeout=120)
    assert out.returncode == code
    assert (out.stdout + out.stderr).strip()


@pytest.mark.parametrize("text, set_, where", [
    ("UPDATE SET s = 'x WHERE y' WHERE id = 1", {"s": "'x WHERE y'"}, "id = 1"),
    ("UPDATE SET a = 1, b = coalesce(a, 2)", {"a": "1", "b": "coalesce(a, 2)"}, None),
    ("update set a = 1 where (b = 1)", {"a": "1"}, "(b = 1)"),
])
def test_check_update_text_splits_outside_quotes(text, set_, where):
    from delta_occ.predict import parse

    p = parse(text)
    assert (p.set, p.where) == (set_, where)
