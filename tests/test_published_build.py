"""The installed extension is the published build: no test hooks (issue 28). Environment variables
that a test build reads to inject faults (`DELTA_OCC_FAULTS`) or to switch conflict rules off
(`DELTA_OCC_TEST_DISABLE_RULE`) must change nothing here. Expected outcomes: a plain append that
commits, and for two DELETEs rewriting the same file of a table without deletion vectors the
conflict of concurrency.md §3 check 5, which comes before checks 6 and 7 (the winner's rewrite
added a file that may hold rows the loser read: ConcurrentAppendException, as the mutation table
of tests/test_stress.py has it)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from delta_occ import _core, stress
from delta_occ import exceptions as exc

EVERY_CONFLICT = ",".join([
    "ConcurrentWriteException", "MetadataChangedException", "ProtocolChangedException", "ConcurrentAppendException",
    "ConcurrentDeleteReadException", "ConcurrentDeleteDeleteException", "ConcurrentTransactionException",
])

SCRIPT = """
import pyarrow as pa
import delta_occ as docc
from delta_occ import exceptions as exc
schema = pa.schema([("id", pa.int64())])
t = docc.Table.create({path!r}, schema)
t.append(pa.table({{"id": [1, 2, 3]}}, schema=schema))   # a fault would fail or retry this
a = t.begin(row_level=False)
a.delete("id = 1")
t.delete("id = 2")                                       # the winner removes the same file
try:
    a.commit()
    print("committed", t.refresh())
except exc.DeltaConcurrentModificationException as e:
    print(type(e).__name__, t.refresh())
"""


def test_the_installed_extension_has_no_test_hooks():
    assert _core.TEST_HOOKS is False


@pytest.mark.parametrize("faults", ["publish_error=eacces", "publish_error=eio", "ack_lost"])
def test_fault_and_rule_switches_are_ignored(tmp_path, faults):
    env = {"DELTA_OCC_FAULTS": faults, "DELTA_OCC_TEST_DISABLE_RULE": EVERY_CONFLICT}
    out = subprocess.run([sys.executable, "-c", SCRIPT.format(path=str(tmp_path / "t"))], capture_output=True, text=True, timeout=120,
                         env={**os.environ, **env})
    # create (0), append (1), the winner's delete (2); the loser conflicts as without the variables.
    assert out.stdout.split() == ["ConcurrentAppendException", "2"], out.stderr[-2000:]


def test_the_library_holds_no_switch_names():
    """Compiled out, not merely unread: the variable names are not in the library at all."""
    data = pathlib.Path(_core.__file__).read_bytes()
    for name in (b"DELTA_OCC_FAULTS", b"DELTA_OCC_TEST_DISABLE_RULE", b"DELTA_OCC_TEST_REWORD"):
        assert name not in data, name


def test_stress_faults_need_a_test_build(tmp_path):
    with pytest.raises(exc.InvalidArgumentError, match="test build"):
        stress.run(str(tmp_path / "t"), stress.Config(writers=1, transactions=1, faults="ack_lost"))
    assert not (tmp_path / "t").exists()
