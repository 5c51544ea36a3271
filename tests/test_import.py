"""``import delta_occ`` loads nothing heavy (issue 45, item 4): pyarrow, numpy, pandas and polars
are imported on first use of a name that needs them, never by the import itself. Checked in fresh
processes (``sys.modules``); the time it takes is measured in BENCHMARKS.md, not asserted here."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import delta_occ

HEAVY = ("pyarrow", "numpy", "pandas", "polars")


def _modules_after(code: str) -> list:
    probe = f"{code}\nimport sys, json\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))))"
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "code, loaded",
    [
        ("import delta_occ", []),
        ("import delta_occ; delta_occ.IsolationLevel.parse('serializable'); delta_occ.__version__", []),
        ("from delta_occ import exceptions; exceptions.ConcurrentAppendException", []),
        ("import delta_occ; delta_occ.Table", []),
        ("import delta_occ; delta_occ.Snapshot", ["numpy", "pyarrow"]),
    ],
    ids=["import", "isolation-level", "exceptions", "table", "snapshot"],
)
def test_import_loads_heavy_modules_only_when_used(code, loaded):
    assert _modules_after(code) == loaded


def test_every_public_name_resolves_and_unknown_names_raise():
    for name in delta_occ.__all__:
        assert getattr(delta_occ, name) is not None
        assert name in dir(delta_occ)
    from delta_occ import Snapshot, Table

    assert Table.__module__ == "delta_occ.table" and Snapshot.__module__ == "delta_occ.snapshot"
    with pytest.raises(AttributeError, match="no attribute 'Tabel'"):
        delta_occ.Tabel  # noqa: B018


# Imported by reads, writes and operations, never by opening a table and listing its files (what a
# fresh process's open + file list pays for them is in BENCHMARKS.md, issue 45).
NOT_FOR_FILES = ("pyarrow.compute", "pyarrow.parquet", "pyarrow.dataset", "delta_occ.reader", "delta_occ.engine",
                 "delta_occ.transaction", "delta_occ.change_feed", "delta_occ.timeline")


def test_open_and_file_list_import_only_what_they_use(golden):
    table = golden / "delta" / "basic-dv-no-checkpoint"
    code = (f"import delta_occ, sys, json; f = delta_occ.Table({str(table)!r}).snapshot().files(); "
            f"print(json.dumps([f.num_rows, sorted(m for m in sys.modules if m in {NOT_FOR_FILES!r})]))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    rows, loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert rows >= 1 and loaded == []


def test_import_registers_the_exit_hook_that_skips_freeing_live_files():
    # the hook (``_core.at_exit``) makes the core leak its live-file sets as the interpreter exits;
    # the leak itself is checked by rust/core/tests/process_exit.rs
    code = "import atexit; n = atexit._ncallbacks(); import delta_occ; print(atexit._ncallbacks() - n)"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert int(out.stdout.strip()) == 1
