"""The timeline (issue 46): what our writers add to ``commitInfo.deltaOcc`` for it, its table
(``Timeline.to_pyarrow``), the command line, and the page itself rendered by headless Chromium
for a stress run (failed attempts included) and for a delta-spark + delta-occ race.

Oracles: the commit files' JSON read here with ``json`` (not through delta-occ), the stress
attempt logs, what each test staged, and `explain` for the rule texts (the page must use the same
words: ``explain.commit(...)["checked"][i]["rule"]``). The rule a row-level rebase passes by is
concurrency.md §4 rules 1-3 (``pass_disjoint_rows``): two deletes of different rows of one file.

Chromium is Debian's ``chromium`` package (``servers/chromium.py`` installs it with apt-get when
missing; ``DELTA_OCC_NO_CHROMIUM=1`` skips the page tests), driven by its command line on
``file://`` pages. The delta-spark test runs delta-spark in its own venv (tests/deltaspark.py);
``DELTA_OCC_NO_DELTASPARK=1`` or no Java skips it.
"""

from __future__ import annotations

import datetime
import json
import os
import pathlib
import socket
import threading
from typing import Any, Dict, List

import pyarrow as pa
import pytest

import delta_occ as docc
from delta_occ import cli, explain, stress
from delta_occ.transaction import Transaction

from servers import chromium

DV = {"delta.enableDeletionVectors": "true"}
SCHEMA = pa.schema([("id", pa.int64()), ("side", pa.string())])
W = "WriteSerializable"


def rows(ids: List[int], side: str = "a") -> pa.Table:
    return pa.table({"id": ids, "side": [side] * len(ids)}, schema=SCHEMA)


def log_infos(path: Any) -> Dict[int, Dict[str, Any]]:
    """Each version's commitInfo, read from the commit files."""
    out = {}
    for f in sorted(pathlib.Path(path, "_delta_log").glob("*.json")):
        for line in f.read_text().splitlines():
            action = json.loads(line)
            if "commitInfo" in action:
                out[int(f.stem)] = action["commitInfo"]
    return out


@pytest.fixture(scope="module")
def browser():
    if os.environ.get("DELTA_OCC_NO_CHROMIUM"):
        pytest.skip("DELTA_OCC_NO_CHROMIUM is set: the timeline page is not rendered")
    chromium.ensure_installed()


def page(timeline: docc.Timeline, where: pathlib.Path, url_tail: str = "") -> chromium.Node:
    html = pathlib.Path(timeline.write_html(where))
    return chromium.parse(chromium.dump_dom(html.resolve().as_uri() + url_tail))


def links_of(dom: chromium.Node, version: int) -> List[int]:
    return sorted(int(a.attrs["data-winner"]) for a in dom.find_all("a", cls="winner-link", data_version=str(version)))


# ============================================================================ what commits record


def test_commits_record_their_read_time_writer_and_commit_start(tmp_path):
    t = docc.Table.create(str(tmp_path / "t"), SCHEMA, properties=DV)
    t.append(rows(list(range(10))))
    before = docc.Table(t.path).history(1)[0]["timestamp"]
    a = t.begin()
    a.delete("id = 1")
    seen: Dict[str, Any] = {}

    def other() -> None:
        seen["thread"] = threading.current_thread().name
        docc.Table(t.path).delete("id = 2")

    th = threading.Thread(target=other, name="the-winner")
    th.start()
    th.join()
    r = a.commit()
    infos = log_infos(t.path)
    mine, theirs = infos[r.version]["deltaOcc"], infos[r.version - 1]["deltaOcc"]
    assert (r.attempts, r.rebased_over) == (2, [r.version - 1])
    assert (mine["host"], mine["pid"], mine["thread"], mine["engine"]) == (socket.gethostname(), os.getpid(), threading.current_thread().name, "pyarrow")
    assert (theirs["pid"], theirs["thread"]) == (os.getpid(), "the-winner")
    # a read before the winner's commit, a commit started after it, then the commit itself
    assert before <= mine["readTime"] <= infos[r.version - 1]["timestamp"] <= mine["commitStartTime"] <= infos[r.version]["timestamp"]
    assert mine["attempt"] == 2 and [w["version"] for w in mine["checkedWinners"]] == [r.version - 1]


def test_a_reexecuted_operation_records_its_execution(tmp_path, monkeypatch):
    t = docc.Table.create(str(tmp_path / "t"), SCHEMA)
    t.append(rows(list(range(10))))
    other = docc.Table(t.path)
    real = Transaction.commit
    calls: List[int] = []

    def commit(self, *args, **kwargs):
        if not calls:  # the first execution loses to a delete rewriting the file it read
            calls.append(1)
            other.delete("id = 7")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Transaction, "commit", commit)
    r = t.delete("id < 5", rerun_on_conflict=1)
    assert r.executions == 2
    occ = log_infos(t.path)[r.version]["deltaOcc"]
    assert (occ["execution"], occ["rerunOver"]) == (2, [r.reruns[0]["winning_version"]]) == (2, [2])
    assert occ["firstReadTime"] <= log_infos(t.path)[2]["timestamp"] <= occ["readTime"]
    row = t.timeline(from_version=3).to_pyarrow().to_pylist()[0]
    assert (row["version"], row["execution"], row["attempts"]) == (3, 2, 1)


def test_timeline_table_has_one_row_per_commit_as_the_log_says(tmp_path):
    t = docc.Table.create(str(tmp_path / "t"), SCHEMA, properties=DV)
    t.append(rows(list(range(10))))
    a = t.begin()
    a.delete("id = 1")
    docc.Table(t.path).delete("id = 2")
    docc.Table(t.path).append(rows([50]))
    a.commit()
    infos = log_infos(t.path)
    got = t.timeline().to_pyarrow()
    assert got.column_names[:3] == ["version", "read_version", "operation"]
    assert got.column("version").to_pylist() == sorted(infos)
    for row in got.to_pylist():
        info = infos[row["version"]]
        occ = info.get("deltaOcc") or {}
        ms = lambda d: None if d is None else int(d.timestamp() * 1000)  # noqa: E731
        assert (row["read_version"], row["operation"], row["attempts"]) == (info.get("readVersion"), info["operation"], occ.get("attempt"))
        assert (ms(row["read_time"]), ms(row["commit_time"])) == (occ.get("readTime"), info["timestamp"])
        assert row["winners"] == [w["version"] for w in occ.get("checkedWinners", [])]
        assert row["rules"] == [c["rule"] for c in explain.commit(t, row["version"])["checked"]]
        assert row["summary"] == explain.commit(t, row["version"])["summary"]
    last = got.to_pylist()[-1]
    assert (last["winners"], last["row_level"]) == ([2, 3], [True, False])  # the delete of another row of the file; an append
    assert last["rules"][0] == docc.exceptions.rule_text("pass_disjoint_rows")
    assert t.timeline(from_version=2, to_version=3).to_pyarrow().column("version").to_pylist() == [2, 3]
    # since: time travel's rule (commit-file times on a table without in-commit timestamps)
    mtime = {v: os.stat(pathlib.Path(t.path, "_delta_log", f"{v:020}.json")).st_mtime_ns // 1_000_000 for v in infos}
    since = datetime.datetime.fromtimestamp(mtime[3] / 1000, datetime.timezone.utc)
    assert t.timeline(since=since).first_version == min(v for v, m in mtime.items() if m >= mtime[3])


# ============================================================================ the command line


def _cli_table(tmp_path: pathlib.Path) -> str:
    t = docc.Table.create(str(tmp_path / "t"), SCHEMA)
    t.append(rows([1]))
    t.append(rows([2]))
    return t.path


@pytest.mark.parametrize("args, code, error", [
    (["--from-version", "1"], 0, None),
    (["--to-version", "5"], 1, "VersionNotFoundError"),
    (["--from-version", "2", "--to-version", "1"], 1, "InvalidArgumentError"),
    (["--since", "yesterday"], 1, "InvalidArgumentError"),
    (["--from-version", "-1"], 1, "InvalidArgumentError"),
])
def test_cli_timeline(tmp_path, capsys, args, code, error):
    path = _cli_table(tmp_path)
    out = tmp_path / "out.html"
    assert cli.main(["timeline", path, "-o", str(out), "--json", *args]) == code
    doc = json.loads(capsys.readouterr().out)
    if error:
        assert doc["error"]["type"] == error and not out.exists()
    else:
        assert (doc["first_version"], doc["last_version"], doc["summary"]["commits"]) == (1, 2, 2)
        text = out.read_text()
        assert text.startswith("<!DOCTYPE html>") and "<script" in text
        assert "http://" not in text and "https://" not in text  # self-contained: nothing to fetch


# ============================================================================ the page, in Chromium


def test_stress_run_page(browser, tmp_path):
    """``delta-occ stress --timeline`` draws its run; then a staged row-level rebase and a
    conflict on the same table, and the page of it all is checked element by element."""
    path = tmp_path / "t"
    cli_page = tmp_path / "stress.html"
    assert cli.main(["stress", str(path), "--writers", "2", "--transactions", "6", "--rounds", "1", "--modes", "thread",
                     "--level", W, "--timeline", str(cli_page), "--json"]) == 0
    assert cli_page.read_text().count('id="timeline-data"') == 1
    # two deletes of different rows of one file: the second rebased at row level (§4 rules 1-3)
    rebase = stress.interleave(str(path), [({"op": "delete", "pred": ["ids", [3]]}, W), ({"op": "delete", "pred": ["ids", [4]]}, W)], [0, 1], tag="r")
    # an update and a delete of one row: the update loses (ConcurrentDeleteDeleteException)
    lose = stress.interleave(str(path), [({"op": "update", "pred": ["ids", [5]], "inc": 1}, W), ({"op": "delete", "pred": ["ids", [5]]}, W)], [1, 0], tag="c")
    assert rebase[1]["outcome"] == "committed" and (lose[0]["outcome"], lose[0]["error"]) == ("conflict", "ConcurrentDeleteDeleteException")
    rebased = rebase[1]["version"]
    t = docc.Table(str(path))
    infos = log_infos(path)
    assert infos[rebased]["deltaOcc"]["checkedWinners"][0]["rules"][0] == "pass_disjoint_rows"
    logged = [json.loads(line) for f in (path / "_stress").glob("*.jsonl") for line in f.read_text().splitlines()]
    failed = {r["attempt"]: r for r in logged if r["outcome"] in ("conflict", "error") and "started_at" in r}
    assert "c.0" in failed

    tl = stress.timeline(str(path))
    dom = page(tl, tmp_path / "page.html")
    svg = dom.find("svg", id="lanes")
    assert svg.attrs["data-mode"] == "detail"
    # lanes: one per writer (engine, host, process, thread) the log's notes name, and v0's
    writers = {tuple(i["deltaOcc"].get(k) for k in ("engine", "host", "pid", "thread")) for i in infos.values() if "host" in i.get("deltaOcc", {})}
    lanes = [g.find("title").text for g in svg.find_all("g", cls="lane")]
    assert len(lanes) == len(writers) + 1 and len(writers) >= 3  # two writer threads, the scheduler, v0
    for engine, host, pid, thread in writers:
        assert sum(all(part in name for part in (engine, host, f"pid {pid}", thread)) for name in lanes) == 1, (thread, lanes)
    # spans: every version, every failed attempt
    spans = svg.find_all("g", cls="span")
    assert sorted(int(g.attrs["data-version"]) for g in spans if "data-version" in g.attrs) == sorted(infos)
    assert {g.attrs["data-attempt"] for g in spans if "failed" in g.classes} == set(failed)
    # a link for each recorded winner, and for each failed attempt to the version it lost to
    for v, info in infos.items():
        assert links_of(svg, v) == sorted(w["version"] for w in (info.get("deltaOcc") or {}).get("checkedWinners", [])), v
    for a, rec in failed.items():
        if rec.get("winning_version") is not None:
            assert [x.attrs["data-winner"] for x in svg.find_all("a", cls="failed-link", data_attempt=a)] == [str(rec["winning_version"])]
    assert float(dom.find("html").attrs["data-render-ms"]) > 0
    # the rebased commit: explain's rule, in the details (a #v link opens on it) and on hover (the
    # span's title)
    want = explain.commit(t, rebased)["checked"]
    dom = page(tl, tmp_path / "page.html", f"#v{rebased}")
    svg = dom.find("svg", id="lanes")
    details = dom.find("section", id="details")
    assert details.attrs["data-version"] == str(rebased)
    got = [(int(li.attrs["data-winner"]), li.find("span", cls="rule").text) for li in details.find_all("li", cls="check")]
    assert got == [(c["version"], c["rule"]) for c in want]
    assert "row-level" in details.find_all("li", cls="check")[0].classes
    title = svg.find("g", cls="span", data_version=str(rebased)).child("title")
    assert title is not None and f"against v{want[0]['version']} ({want[0]['operation']}): {want[0]['rule']}" in title.text
    assert "selected" in svg.find("g", cls="span", data_version=str(rebased)).classes
    # past the detail threshold the lanes are drawn as density; a #v link zooms in to the commit
    dense = page(tl, tmp_path / "page.html", "?detail=5")
    assert dense.find("svg", id="lanes").attrs["data-mode"] == "density" and dense.find_all("rect", cls="density")
    assert not dense.find_all("g", cls="span")
    # A #v link selects the commit whatever the mode; the zoomed view is detail only when few
    # enough commits overlap the commit's window, which depends on the run's timing.
    zoomed = page(tl, tmp_path / "page.html", f"?detail=5#v{rebased}")
    assert zoomed.find(id="details").attrs["data-version"] == str(rebased)
    lanes = zoomed.find("svg", id="lanes")
    assert lanes.attrs["data-mode"] == "density" or lanes.find_all("g", cls="span", data_version=str(rebased))
    png = chromium.screenshot((tmp_path / "page.html").resolve().as_uri() + f"#v{rebased}", tmp_path / "stress.png")
    assert png.stat().st_size > 20_000


def test_winners_past_the_recorded_hundred_are_a_range(browser, tmp_path):
    t = docc.Table.create(str(tmp_path / "t"), SCHEMA)
    a = t.begin()
    a.append(rows([0]))
    other = docc.Table(t.path)
    for i in range(102):
        other.append(rows([i + 1]))
    r = a.commit()
    occ = log_infos(t.path)[r.version]["deltaOcc"]
    assert (len(occ["checkedWinners"]), occ["winnersNotRecorded"]) == (100, 2)
    svg = page(t.timeline(), tmp_path / "page.html").find("svg", id="lanes")
    assert links_of(svg, r.version) == [w["version"] for w in occ["checkedWinners"]] == list(range(1, 101))
    [band] = svg.find_all("g", cls="winner-range", data_version=str(r.version))
    assert (band.attrs["data-from"], band.attrs["data-to"]) == ("101", "102")


def test_deltaspark_and_delta_occ_race_page(browser, deltaspark, tmp_path):
    """delta-occ's DELETE is rebased at row level over delta-spark's DELETE of another row of the
    same file; delta-spark's INSERT, whose transaction read before delta-occ's commit, commits
    after it. Both writers get a lane; each commit shows what its commitInfo has. (The driver is
    the session's, shared with test_interop_deltaspark.py.)"""
    ds = deltaspark
    path = tmp_path / "race"
    t = docc.Table.create(str(path), SCHEMA, properties=DV)
    t.append(rows(list(range(10))))  # v1, one file
    a = t.begin()
    a.delete("id = 1")
    ds.sql(f"DELETE FROM delta.`{path}` WHERE id = 2")  # v2, a DV on the same file
    ds.start_blocked("timeline-ins", [f"INSERT INTO delta.`{path}` SELECT 100 AS id, 'spark' AS side FROM (SELECT 1) WHERE docc_block('timeline-ins', 1)"])
    ds.wait_reached("timeline-ins")  # delta-spark's transaction has read v2
    r = a.commit()  # v3
    ds.release("timeline-ins")
    assert ds.wait("timeline-ins")["ok"]
    infos = log_infos(path)
    assert r.version == 3 and sorted(infos) == [0, 1, 2, 3, 4]
    spark_engine = infos[2]["engineInfo"]
    assert not spark_engine.startswith("delta-occ") and infos[4]["engineInfo"] == spark_engine and infos[4]["readVersion"] == 2
    assert infos[3]["deltaOcc"]["checkedWinners"][0]["rules"][0] == "pass_disjoint_rows"

    tl = t.timeline()
    dom = page(tl, tmp_path / "race.html")
    svg = dom.find("svg", id="lanes")
    lanes = [g.find("title").text for g in svg.find_all("g", cls="lane")]
    assert sum(name.startswith(spark_engine) for name in lanes) == 1
    assert sum(f"pid {os.getpid()}" in name for name in lanes) == 1
    spark_lane = next(g.attrs["data-lane"] for g in svg.find_all("g", cls="lane") if g.find("title").text.startswith(spark_engine))
    spans = {int(g.attrs["data-version"]): g for g in svg.find_all("g", cls="span")}
    assert sorted(spans) == [0, 1, 2, 3, 4]
    assert spans[2].attrs["data-lane"] == spans[4].attrs["data-lane"] == spark_lane != spans[3].attrs["data-lane"]
    assert "read-unrecorded" in spans[4].classes and "read-unrecorded" not in spans[3].classes
    assert links_of(svg, 3) == [2] and links_of(svg, 4) == []
    # delta-spark records no checks: its commit's concurrent one (v3) is drawn as a range
    [band] = svg.find_all("g", cls="winner-range", data_version="4")
    assert (band.attrs["data-from"], band.attrs["data-to"]) == ("3", "3")
    want = explain.commit(t, 3)["checked"][0]
    rule = page(tl, tmp_path / "race.html", "#v3").find("section", id="details").find("li", cls="check", data_winner="2").find("span", cls="rule").text
    assert rule == want["rule"] == docc.exceptions.rule_text("pass_disjoint_rows")
    chromium.screenshot((tmp_path / "race.html").resolve().as_uri() + "#v3", tmp_path / "race.png")
    assert (tmp_path / "race.png").stat().st_size > 20_000
