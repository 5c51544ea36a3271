"""Every code block of the README and the guide runs, and every row of the README's command table
runs on a scratch table (issue 47), so a doc that drifts from the code fails CI.

How a block runs is said next to it, in an HTML comment on the line before its fence:

- ``<!-- doc-test: setup=NAME -->``: a fresh directory and scope, prepared by ``SETUPS[NAME]``
  below (what the prose around the block assumes: a table ``t`` with the columns it names, ...);
- ``<!-- doc-test: raises=ExceptionName -->``: the block ends in the error its comment documents;
- ``<!-- doc-test: no-run=REASON -->``: not run, for the reason given (counted and reported);
- no comment: the block continues the previous one (same directory and scope), as a reader
  follows the document from its first block, which starts in an empty directory.

Blocks are ``python`` (executed), ``sh`` / ``bash`` (each command run by the shell, ``delta-occ``
from this environment) or ``text`` (program output and diagrams: not code). A fence without a
language fails the test. Expected values: the exit codes the README's command-line section
documents (0 success, 4 ``check`` predicts a conflict) and the exceptions the blocks' comments
name.
"""

from __future__ import annotations

import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ["README.md", "docs/guide.md"]
FENCE = re.compile(r"^```(\S*)\n(.*?)^```\n", re.S | re.M)
MARKER = re.compile(r"<!-- doc-test: (.*?) -->\s*\Z", re.S)


@dataclass
class Block:
    doc: str
    line: int
    lang: str
    code: str
    marks: Dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.doc}:{self.line}"


def blocks(doc: str) -> List[Block]:
    text = (ROOT / doc).read_text()
    out = []
    for m in FENCE.finditer(text):
        before = text[: m.start()].rstrip("\n")
        marks: Dict[str, str] = {}
        last = before.rsplit("\n", 1)[-1]
        mm = MARKER.search(last)
        if mm and mm.group(1).startswith("no-run="):
            marks["no-run"] = mm.group(1)[len("no-run="):].strip()  # the rest is the reason
        elif mm:
            for part in mm.group(1).split(";"):
                key, _, value = part.strip().partition("=")
                marks[key.strip()] = value.strip()
        out.append(Block(doc, text.count("\n", 0, m.start()) + 1, m.group(1), m.group(2), marks))
    return out


# --- set-ups: what the prose around a block assumes -------------------------------------------

def _days(scope: dict, request) -> None:
    """A DV table ``events`` (``t``, also ``table``) with ``day``, ``user_id``, ``score``."""
    import datetime

    import pyarrow as pa

    import delta_occ as docc

    schema = pa.schema([("day", pa.date32()), ("user_id", pa.int64()), ("score", pa.int64())])
    t = docc.Table.create("events", schema, properties={"delta.enableDeletionVectors": "true"})
    days = [datetime.date(2023, 12, 31), datetime.date(2024, 5, 1)]
    t.append(pa.table({"day": days * 4, "user_id": [7, 7, 8, 8, 9, 9, 10, 10], "score": list(range(8))}, schema=schema))
    scope.update(docc=docc, pa=pa, t=t, table=t)


def _dates(scope: dict, request) -> None:
    """A table ``events`` with ``date`` (text) and ``value``, as the ``check`` example reads it."""
    import pyarrow as pa

    import delta_occ as docc

    t = docc.Table.create("events", pa.schema([("date", pa.string()), ("value", pa.float64())]))
    t.append(pa.table({"date": ["2009-12-31", "2011-01-01"], "value": [1.0, 2.0]}))


def _path(scope: dict, request) -> None:
    """A path for a new table (``path``), a schema with ``x`` and ``y`` (``schema``), the names
    ``pa``, ``Table``, ``docc``, ``datetime``."""
    import datetime

    import pyarrow as pa

    import delta_occ as docc

    scope.update(pa=pa, docc=docc, Table=docc.Table, datetime=datetime.datetime, path=str(pathlib.Path("new-table").resolve()),
                 schema=pa.schema([("x", pa.int64()), ("y", pa.int64())]))


def _amounts(scope: dict, request) -> None:
    """A table ``t`` with ``id`` and ``amount``, and the names the constraint block uses."""
    import pyarrow as pa

    import delta_occ as docc

    t = docc.Table.create("amounts", pa.schema([("id", pa.int64()), ("amount", pa.float64())]))
    t.append(pa.table({"id": [1], "amount": [5.0]}))
    scope.update(pa=pa, docc=docc, t=t)


def _xy(scope: dict, request) -> None:
    """``_path`` plus a table ``t`` of ``x`` and ``y`` with two files and a removed file."""
    import pyarrow as pa

    _path(scope, request)
    t = scope["docc"].Table.create("xy", scope["schema"])
    for i in range(2):
        t.append(pa.table({"x": [i, 9 - i], "y": [5 - i, i]}, schema=scope["schema"]))
    t.delete("x = 0")
    scope["t"] = t


def _history(scope: dict, request) -> None:
    """``_path`` plus a table ``t`` with versions 0-5, its commits dated in the night of
    2026-11-28 (UTC) as the time-travel block's instants assume: version v at 01:00 + v hours."""
    import calendar

    _xy(scope, request)
    t = scope["t"]
    t.append(scope["pa"].table({"x": [1], "y": [1]}, schema=scope["schema"]))
    t.append(scope["pa"].table({"x": [2], "y": [2]}, schema=scope["schema"]))
    base = calendar.timegm((2026, 11, 28, 1, 0, 0))
    for v in range(6):
        log = pathlib.Path("xy/_delta_log") / f"{v:020d}.json"
        os.utime(log, (base + 3600 * v, base + 3600 * v))
    scope["t"] = scope["docc"].Table("xy")


def _dvs(scope: dict, request) -> None:
    """A DV table ``t`` with one deletion vector, so dropping the feature has work to wait for."""
    import pyarrow as pa

    import delta_occ as docc

    t = docc.Table.create("dvs", pa.schema([("id", pa.int64())]), properties={"delta.enableDeletionVectors": "true"})
    t.append(pa.table({"id": [1, 2, 3]}))
    t.delete("id = 2")
    scope.update(t=t)


def _spark(scope: dict, request) -> None:
    """The test session's local Spark, so the block's ``getOrCreate()`` returns it."""
    request.getfixturevalue("spark_classic")


def _s3(scope: dict, request) -> None:
    """The test S3 server in the environment (the blocks name only the region); the README's
    ``delta-occ/readme/events`` emptied, and the guide's ``my-bucket/warehouse/events`` made with a
    ``user_id`` column."""
    import pyarrow as pa

    import delta_occ as docc

    s3 = request.getfixturevalue("s3_server")
    mp = request.getfixturevalue("monkeypatch")
    for k, v in s3.storage_options().items():
        if k != "AWS_REGION":
            mp.setenv(k, v)
    from pyarrow import fs

    o = s3.storage_options()
    s3fs = fs.S3FileSystem(access_key=o["AWS_ACCESS_KEY_ID"], secret_key=o["AWS_SECRET_ACCESS_KEY"], region=o["AWS_REGION"],
                           endpoint_override=o["AWS_ENDPOINT_URL"], scheme="http")
    s3.create_bucket("my-bucket")
    for prefix in ["delta-occ/readme/events", "my-bucket/warehouse/events"]:
        if s3fs.get_file_info(prefix).type != fs.FileType.NotFound:
            s3fs.delete_dir(prefix)
    t = docc.Table.create("s3://my-bucket/warehouse/events", pa.schema([("user_id", pa.int64())]), storage_options={"AWS_REGION": "eu-west-1"})
    t.append(pa.table({"user_id": [6, 7, 8]}))


SETUPS: Dict[str, Callable[[dict, object], None]] = {
    "days": _days, "dates": _dates, "path": _path, "amounts": _amounts, "xy": _xy, "history": _history, "dvs": _dvs,
    "spark": _spark, "s3": _s3,
}


def _exception(name: str) -> type:
    from delta_occ import exceptions

    return getattr(exceptions, name)


def _run_shell(code: str, env: dict) -> None:
    for command in re.sub(r"\\\n\s*", " ", code).strip().splitlines():
        argv = shlex.split(command)
        assert argv[0] == "delta-occ", f"a shell block runs delta-occ commands only: {command}"
        r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
        # README "Command line": exit code 0 success, 4 `check` predicts a conflict.
        allowed = {0, 4} if argv[1] == "check" else {0}
        assert r.returncode in allowed, f"{command}\nexit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"


def _run(b: Block, scope: dict, env: dict) -> None:
    if b.lang == "python":
        exec(compile(b.code, b.name, "exec"), scope)
    else:
        _run_shell(b.code, env)


@pytest.mark.parametrize("doc", DOCS)
def test_every_code_block_runs(doc, tmp_path, monkeypatch, request, capsys):
    bin_dir = pathlib.Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    assert shutil.which("delta-occ", path=env["PATH"]), "the delta-occ command is not installed"
    found = blocks(doc)
    ran, skipped, text = [], [], []
    scope: dict = {}
    where: Optional[pathlib.Path] = None

    def fresh() -> pathlib.Path:
        d = tmp_path / f"dir-{len(list(tmp_path.iterdir()))}"
        d.mkdir()
        monkeypatch.chdir(d)
        return d

    where = fresh()
    for b in found:
        assert b.lang in ("python", "sh", "bash", "text"), f"{b.name}: a fence needs a language (python, sh, bash or text), found {b.lang!r}"
        unknown = set(b.marks) - {"setup", "raises", "no-run"}
        assert not unknown, f"{b.name}: unknown doc-test keys {unknown}"
        if "no-run" in b.marks:
            assert len(b.marks["no-run"]) > 10, f"{b.name}: no-run needs its reason"
            skipped.append(b.name)
            continue
        if b.lang == "text":
            assert not b.marks, f"{b.name}: a text block is not run, it takes no doc-test marks"
            text.append(b.name)
            continue
        if "setup" in b.marks:
            assert b.marks["setup"] in SETUPS, f"{b.name}: no set-up {b.marks['setup']!r} in {__file__}"
            where, scope = fresh(), {}
            SETUPS[b.marks["setup"]](scope, request)
        env["PWD"] = str(where)
        if "raises" in b.marks:
            with pytest.raises(_exception(b.marks["raises"])):
                _run(b, scope, env)
        else:
            _run(b, scope, env)
        ran.append(b.name)
    capsys.readouterr()
    with capsys.disabled():
        print(f"\n{doc}: {len(ran)} code blocks ran, {len(skipped)} skipped (no-run: {', '.join(skipped) or 'none'}), {len(text)} text blocks")
    assert ran, f"{doc}: no code block ran"
    # Every skip is a marked one; count them so that a new no-run is a visible change.
    assert len(skipped) <= {"README.md": 2, "docs/guide.md": 4}[doc], skipped


# --- the README's command table ----------------------------------------------------------------

def _scratch_table(tmp_path: pathlib.Path) -> str:
    """A DV table with four versions: create, two appends (the second rebased over the first, so
    `explain 2` has a winner), a delete that leaves a removed file for `vacuum` to find."""
    import pyarrow as pa

    import delta_occ as docc

    path = str(tmp_path / "scratch")
    t = docc.Table.create(path, pa.schema([("id", pa.int64()), ("date", pa.string()), ("value", pa.float64())]),
                          properties={"delta.enableDeletionVectors": "true"})
    a, b = t.begin(), t.begin()
    a.append(pa.table({"id": [1, 2], "date": ["2009-01-01", "2011-01-01"], "value": [1.0, 2.0]}))
    b.append(pa.table({"id": [3], "date": ["2012-01-01"], "value": [3.0]}))
    a.commit()
    b.commit()
    t.refresh()
    t.delete("id = 3")
    return path


# One concrete run per command, using every flag the table's row names. `{path}` is the scratch
# table, `{new}` a directory that does not exist yet.
RUNS: Dict[str, List[str]] = {
    "matrix": ["matrix --mode row-level --level Serializable --partitioned no"],
    "demo": ["demo {new}"],
    "history": ["history {path}", "history {path} --limit 2"],
    "snapshot": ["snapshot {path}", "snapshot {path} --at-version 1", "snapshot {path} --version 1"],
    "explain": ["explain {path} 2"],
    "check": ["check {path} --first \"DELETE WHERE date < '2010-01-01'\" --second \"UPDATE SET value = value * 2 WHERE date > '2010-01-01'\""],
    "stress": ["stress {new} --writers 2 --transactions 3 --modes thread --rounds 2 --timeline {new}.html"],
    "timeline": ["timeline {path} -o {new}.html", "timeline {path} --from-version 1 --to-version 2 -o {new}.html",
                 "timeline {path} --since 2020-01-01 -o {new}.html"],
    "vacuum": ["vacuum {path} --dry-run", "vacuum {path} --retention-hours 0 --no-enforce-retention --dry-run",
               "vacuum {path} --retention-hours 0 --no-enforce-retention"],
}


def test_every_command_table_row_runs(tmp_path, capsys):
    from delta_occ.cli import _parser, main

    section = (ROOT / "README.md").read_text().split("### Command line", 1)[1].split("\n### ", 1)[0]
    rows = re.findall(r"^\| `delta-occ ([a-z]+)([^`]*)` \|", section, re.M)
    commands = [name for name, _ in rows]
    sub = next(a for a in _parser()._actions if a.dest == "command")
    # The table lists every command the program has, once (issue 47: `vacuum` was missing).
    assert sorted(commands) == sorted(sub.choices), (commands, sorted(sub.choices))
    path = _scratch_table(tmp_path)
    ran = 0
    for name, synopsis in rows:
        runs = RUNS[name]
        for flag in re.findall(r"--[a-z-]+", synopsis):
            assert any(flag in r for r in runs), f"`delta-occ {name}`: the row names {flag}, which no run here uses"
        for i, r in enumerate(runs):
            new = tmp_path / f"{name}-{i}"
            argv = shlex.split(r.format(path=path, new=new))
            code = main(argv)
            out = capsys.readouterr()
            # README "Command line": 0 success, 4 `check` predicts a conflict.
            assert code in ({0, 4} if name == "check" else {0}), (r, code, out.err[-2000:])
            assert out.out.strip(), f"{r}: printed nothing"
            ran += 1
    # The runs did what their rows say, read back through the library (not the CLI's own output).
    import delta_occ as docc

    assert (tmp_path / "demo-0" / "_delta_log").is_dir()
    assert (tmp_path / "stress-0" / "_delta_log").is_dir()
    assert "id=\"timeline-data\"" in (tmp_path / "stress-0.html").read_text()
    assert all((tmp_path / f"timeline-{i}.html").read_text().startswith("<!DOCTYPE html>") for i in range(3))
    removed = [p for p in pathlib.Path(path).glob("*.parquet") if p.name not in {f for f in docc.Table(path).snapshot().files()["path"].to_pylist()}]
    assert removed == [], f"vacuum --retention-hours 0 left {removed}"
    with capsys.disabled():
        print(f"\nREADME command table: {len(rows)} rows, {ran} runs")
