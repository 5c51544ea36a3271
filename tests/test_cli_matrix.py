"""`delta-occ matrix` (issue 18): its JSON agrees with the two documented matrices of
concurrency.md §5 cell by cell. The expected values below are transcribed from §5 here, not taken
from delta_occ.matrix; a disabled conflict rule (the test switch) must show up as differences."""

from __future__ import annotations

import json

import pytest

from delta_occ.cli import main

DML = {"UPDATE", "DELETE", "MERGE", "INSERT-READ"}  # §5: an INSERT that reads behaves like MERGE
REWRITES = {"UPDATE", "DELETE", "MERGE"}  # winners that rewrite (remove) existing files


def group(kind: str) -> str:
    return "DML" if kind in DML else kind


def section5(cell: dict) -> bool:
    """True when §5 says the second operation conflicts in this cell."""
    second, first, level = group(cell["second"]), cell["first"], cell["level"]
    touches_same = cell["variant"] == "same"
    if second == "INSERT":
        return False  # row INSERT: "no conflict" in both tables
    if cell["mode"] == "row-level":
        # With row-level concurrency (DVs enabled).
        if second == "OPTIMIZE" or first == "OPTIMIZE":
            return False
        if first == "INSERT":
            return level == "Serializable" and touches_same  # "only if the inserted rows match its predicate"
        return touches_same  # "only when both touch the same row (or the winner changed a row it read)"
    # Without row-level concurrency; "(no conflict with DVs enabled)" where §5 says so.
    dvs = cell["mode"] == "file-level-dv"
    same_files = touches_same or not cell["partitioned"]  # one file per partition holds the rows
    if second == "OPTIMIZE":
        return first in REWRITES | {"OPTIMIZE"} and not dvs  # "conflicts on the same files"
    if first == "OPTIMIZE":
        return not dvs  # "conflicts if they touch the same files": OPTIMIZE rewrites every file
    if first == "INSERT":
        return level == "Serializable" and same_files  # "files were added in a partition it read"
    return same_files  # "read or rewrite the same files / partitions"


@pytest.fixture(scope="module")
def result():
    """One full run (capsys is function-scoped, so stdout is captured by hand)."""
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["matrix", "--json", "--rerun"])
    return rc, json.loads(buf.getvalue())


def test_every_cell_agrees_with_section_5(result):
    rc, doc = result
    mismatches = [c for c in doc["cells"] if (c["observed"] == "conflict") != section5(c)]
    assert not mismatches, mismatches[:5]
    assert rc == 0 and doc["differences"] == 0


def test_the_run_covers_every_configuration(result):
    _, doc = result
    kinds = ["INSERT", "INSERT-READ", "UPDATE", "DELETE", "MERGE", "OPTIMIZE"]
    seen = {(c["mode"], c["partitioned"], c["level"], c["second"], c["first"], c["variant"]) for c in doc["cells"]}
    assert len(seen) == len(doc["cells"]) == doc["checked"]
    for mode in ("row-level", "file-level", "file-level-dv"):
        for part in (False, True):
            for level in ("Serializable", "WriteSerializable"):
                for second in kinds:
                    for first in kinds:
                        assert (mode, part, level, second, first, "same") in seen
                        if second in DML and first != "OPTIMIZE":
                            assert (mode, part, level, second, first, "other") in seen
    # Conflicts carry the named exception (§6), and never for a blind INSERT (§5 row INSERT).
    for c in doc["cells"]:
        assert (c["exception"] is None) == (c["observed"] == "no conflict")
        if c["second"] == "INSERT":
            assert c["exception"] is None


def test_re_running_resolves_every_data_conflict(result):
    """``--rerun``: each cell again with the second as a one-call operation, rerun_on_conflict=1.
    No matrix operation changes metadata, protocol or app versions, so every §5 conflict is one a
    fresh read resolves (api.md "Re-running") — except INSERT-READ, a transaction whose reads the
    caller made, which is never re-run. Cells without a conflict never re-run."""
    _, doc = result
    for c in doc["cells"]:
        if not section5(c):
            want = "no conflict"
        elif c["second"] == "INSERT-READ":
            want = "conflict"
        else:
            want = "re-run"
        assert c["with_rerun"] == want, c
    conflicts = sum(section5(c) for c in doc["cells"])
    assert doc["conflicts"] == conflicts
    assert doc["rerun_resolved"] == sum(section5(c) and c["second"] != "INSERT-READ" for c in doc["cells"])
    print(f"re-running resolves {doc['rerun_resolved']} of {conflicts} conflicts")


@pytest.mark.test_hooks
def test_a_disabled_rule_shows_as_differences(monkeypatch, capsys):
    """Mutation check: with row-level DeleteDelete disabled, the same-row DML cells differ."""
    monkeypatch.setenv("DELTA_OCC_TEST_DISABLE_RULE", "ConcurrentDeleteDeleteException")
    rc = main(["matrix", "--json", "--mode", "row-level", "--partitioned", "no", "--level", "WriteSerializable"])
    doc = json.loads(capsys.readouterr().out)
    diffs = {(c["second"], c["first"]) for c in doc["cells"] if not c["agrees"]}
    assert rc == 3 and doc["differences"] == len([c for c in doc["cells"] if not c["agrees"]]) > 0
    assert ("DELETE", "DELETE") in diffs and all(s in DML and f in DML for s, f in diffs)


@pytest.mark.test_hooks
def test_text_output_marks_differences(monkeypatch, capsys):
    rc = main(["matrix", "--mode", "file-level", "--partitioned", "yes", "--level", "Serializable"])
    out = capsys.readouterr().out
    assert rc == 0 and "file-level, partitioned, Serializable" in out and "0 difference(s)" in out and "difference:" not in out
    monkeypatch.setenv("DELTA_OCC_TEST_DISABLE_RULE", "ConcurrentAppendException")
    rc = main(["matrix", "--mode", "file-level", "--partitioned", "yes", "--level", "Serializable"])
    out = capsys.readouterr().out
    assert rc == 3 and "- != same" in out and "difference: file-level, partitioned, Serializable" in out
