"""The command line: row counts in `delta-occ snapshot` come from stats when every file has them
(minus DV cardinalities) and from the data otherwise; expected rows are INDEX.md facts."""

from __future__ import annotations

import json

import pytest

from delta_occ.cli import main

from conftest import GOLDEN


@pytest.mark.parametrize("table, rows, version", [
    ("delta/dv-partitioned-with-checkpoint", 35, 15),  # stats on every file, DVs subtracted
    ("delta/basic-dv-with-checkpoint", 454, 46),
    ("delta-rs/simple_table", 3, 4),                   # no numRecords: rows read from the data
    ("delta/snapshot-data0", 10, 0),
])
def test_snapshot_rows(golden, capsys, table, rows, version):
    assert main(["snapshot", str(GOLDEN / table), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["rows"], out["version"]) == (rows, version)


def test_history_and_errors(golden, capsys, tmp_path):
    assert main(["history", str(GOLDEN / "delta-rs/checkpoints_vacuumed"), "--limit", "2", "--json"]) == 0
    assert [e["version"] for e in json.loads(capsys.readouterr().out)] == [12, 11]
    assert main(["snapshot", str(tmp_path / "missing")]) == 1
    assert "TableNotFoundError" in capsys.readouterr().err


def test_demo_twice(tmp_path, capsys):
    assert main(["demo", str(tmp_path / "t")]) == 0
    assert "created" in capsys.readouterr().out
    assert main(["demo", str(tmp_path / "t")]) == 0
    assert "opened existing table" in capsys.readouterr().out


def test_version_flag(capsys):
    import delta_occ

    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"delta-occ {delta_occ.__version__}"


def test_demo_json_is_one_json_document(tmp_path, capsys):
    assert main(["demo", "--json", str(tmp_path / "t")]) == 0
    doc = json.loads(capsys.readouterr().out)  # fails on any text line around the JSON
    assert doc["snapshot"]["version"] == doc["history"][0]["version"] and doc["steps"][0].startswith("created")


def test_snapshot_time_travel_and_history_timestamps(tmp_path, capsys):
    import re

    assert main(["demo", str(tmp_path / "t")]) == 0
    capsys.readouterr()
    assert main(["snapshot", "--json", "--version", "1", str(tmp_path / "t")]) == 0
    assert json.loads(capsys.readouterr().out)["version"] == 1
    assert main(["history", "--limit", "2", str(tmp_path / "t")]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2 and all(re.match(r"v +\d+  \d{4}-\d\d-\d\d \d\d:\d\d:\d\d  ", line) for line in lines)


def test_missing_table_and_bad_version_exit_1(tmp_path, capsys):
    assert main(["snapshot", str(tmp_path / "nope")]) == 1
    assert "TableNotFoundError" in capsys.readouterr().err
    assert main(["demo", str(tmp_path / "t")]) == 0
    capsys.readouterr()
    assert main(["snapshot", "--version", "999", str(tmp_path / "t")]) == 1
    assert "999" in capsys.readouterr().err
