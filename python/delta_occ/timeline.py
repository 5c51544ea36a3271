"""A table's commits drawn as a timeline: which writers overlapped, who was checked against whom,
where concurrent commits touched the same data (``delta-occ timeline``, ``Table.timeline``).

Each commit is a span from its read to its commit, in the lane of its writer:

* delta-occ's commits record in ``commitInfo.deltaOcc`` when the snapshot was read, the writer
  (engine, host, process, thread: ``delta_occ.commit_note``), the commit loop's attempts, a
  re-run operation's executions, and the winners it was checked against with the rules that let
  it pass (the first 100; the rest are counted and drawn as a range);
* other writers' commits show what their ``commitInfo`` has: ``readVersion`` (the span starts
  at that version's commit time, the earliest the read can have been), ``engineInfo`` or
  ``clientVersion``, and Databricks' cluster, job, notebook and user when present. Their
  concurrent commits (after the read version) are drawn as a range: they recorded no checks.

Failed attempts are not in the Delta log; a caller that logged them (``delta-occ stress``) hands
them in as ``failed`` (see :func:`build`). The rule texts are `explain`'s (``delta_occ.explain``).

The page is one self-contained HTML file: inline CSS, SVG drawn by inline JavaScript from the
embedded data, no network. Past ``DETAIL_MAX`` commits in view it draws lanes as density and
zooms (drag, wheel, or a ``#v123`` link) down to single commits.
"""

from __future__ import annotations

import html
import json
import pathlib
from collections import Counter
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

import pyarrow as pa

from . import commit_note, explain, time_travel
from ._args import version_arg
from .exceptions import InvalidArgumentError, VersionNotFoundError, rule_text

#: The newest commits drawn when no range is given.
DEFAULT_COMMITS = 10_000
#: Commits of other writers: at most this many concurrent commits are compared for the heat map.
HEAT_WINDOW = 500
#: Rows of each heat table.
HEAT_ROWS = 25
#: Keys of a Databricks commitInfo that say which job wrote it (a lane's name when present).
_OTHER_WRITER_KEYS = ("clusterId", "userName", "jobId", "notebookId", "job", "notebook")

_HERE = pathlib.Path(__file__).resolve().parent

#: Operation → colour class of its span (the legend's order).
OP_CLASSES = ("append", "write", "delete", "update", "merge", "optimize", "metadata", "create", "other", "failed")


def op_class(operation: Optional[str], blind_append: Optional[bool] = None) -> str:
    """The colour class of an operation (Delta's commitInfo ``operation`` names)."""
    o = (operation or "").upper()
    if o in ("WRITE", "STREAMING UPDATE", "APPEND", "APP_APPEND", "CONVERT"):
        return "append" if blind_append or o in ("APPEND", "APP_APPEND") else "write"
    for word, cls in (("CREATE", "create"), ("REPLACE", "create"), ("MERGE", "merge"), ("DELETE", "delete"), ("TRUNCATE", "delete"),
                      ("UPDATE", "update"), ("OPTIMIZE", "optimize"), ("REORG", "optimize"), ("COMPACT", "optimize")):
        if word in o:
            return cls
    if any(w in o for w in ("TBLPROPERTIES", "COLUMN", "CONSTRAINT", "FEATURE", "CLUSTER", "PROPS", "SET ", "UPGRADE", "IDENTITY")):
        return "metadata"
    return "other"


def row_level(rule_id: str) -> bool:
    """Whether a pass rule is one of row-level concurrency: the core words it as concurrency.md
    §4, the section of row-level rules."""
    return (rule_text(rule_id) or "").startswith("§4")


def engine_of(info: Mapping[str, Any]) -> Optional[str]:
    """The engine a commit names: ``engineInfo`` (delta-spark, delta-occ), else ``clientVersion``
    (deltalake)."""
    return info.get("engineInfo") or info.get("clientVersion")


def writer_of(info: Mapping[str, Any]) -> Tuple[str, str]:
    """A commit's lane: its writer's name, and a coarser group (engine and host) used when there
    are too many lanes to draw one each."""
    occ = info.get("deltaOcc") or {}
    engine_info = engine_of(info)
    if any(k in occ for k in commit_note.WRITER_KEYS):
        return note_lane(occ, str(engine_info or "delta-occ"))
    extra = []
    for k in _OTHER_WRITER_KEYS:
        v = info.get(k)
        if isinstance(v, dict):
            v = next(iter(v.values()), None)
        if v:
            extra.append(f"{k} {v}")
    query = (info.get("operationParameters") or {}).get("queryId")
    if query:
        extra.append(f"query {str(query).strip(chr(34))}")
    if engine_info:
        return " · ".join([str(engine_info), *extra]), str(engine_info)
    name = f"{info.get('operation') or 'commit'} (writer not recorded)"
    return " · ".join([name, *extra]), name


def note_lane(note: Mapping[str, Any], engine_info: str = "delta-occ") -> Tuple[str, str]:
    """The lane of a delta-occ writer from its commit note (see ``delta_occ.commit_note``)."""
    engine = note.get(commit_note.ENGINE)
    head = f"{engine_info.split('/')[0]} {engine}" if engine else engine_info
    parts = [head, str(note.get(commit_note.HOST) or "?")]
    if note.get(commit_note.PID) is not None:
        parts.append(f"pid {note[commit_note.PID]}")
    if note.get(commit_note.THREAD):
        parts.append(str(note[commit_note.THREAD]))
    return " · ".join(parts), f"{head} · {parts[1]}"


def _partition_key(pv: Optional[Mapping[str, Any]]) -> Optional[str]:
    if not pv:
        return None
    return ", ".join(f"{k}={'null' if v is None else v}" for k, v in pv.items())


class Commit:
    """One commit as the timeline draws it, read from its commit file
    (``TableHandle.commit_summary``): its commitInfo, lane, files and partitions, and each
    recorded winner with `explain`'s rule texts."""

    __slots__ = ("version", "info", "occ", "operation", "time", "read_version", "lane", "group", "files", "partitions", "checks")

    def __init__(self, version: int, summary: Mapping[str, Any]) -> None:
        raw = summary.get("commit_info")
        info = json.loads(raw) if isinstance(raw, str) else (raw or {})
        self.version = version
        self.info: Dict[str, Any] = info
        self.occ: Dict[str, Any] = info.get("deltaOcc") or {}
        self.operation: str = str(summary.get("operation") or info.get("operation") or "?")
        t = info.get("inCommitTimestamp", info.get("timestamp"))
        self.time: Optional[int] = int(t) if isinstance(t, (int, float)) else None
        rv = info.get("readVersion")
        self.read_version: Optional[int] = int(rv) if isinstance(rv, int) else None
        self.lane, self.group = writer_of(info)
        touched = list(summary.get("added") or []) + list(summary.get("removed") or [])
        self.files: Set[str] = {f["path"] for f in touched}
        self.partitions: Set[str] = {k for k in (_partition_key(f.get("partition_values")) for f in touched) if k}
        #: Each recorded winner: version, operation, rule ids, rule texts (explain's), outcome.
        self.checks: List[Dict[str, Any]] = []
        for rec in self.occ.get("checkedWinners", []):
            ids, texts = explain.record_rules(rec)
            self.checks.append({"version": rec["version"], "operation": rec.get("operation"), "rule_ids": ids, "rules": texts,
                                "rule": texts[0], "outcome": rec.get("outcome", ""), "row_level": any(row_level(i) for i in ids)})

    def summary(self) -> str:
        """`explain`'s sentence for this commit."""
        return explain.summary_sentence(self.version, self.read_version, self.occ, self.checks)


class Timeline:
    """The commits of a table's version range, ready to draw (:meth:`write_html`), to show in a
    notebook (``_repr_html_``) or to query (:meth:`to_pyarrow`). Made by ``Table.timeline``."""

    def __init__(self, path: str, commits: List[Commit], earlier: Mapping[int, Commit], failed: Sequence[Mapping[str, Any]],
                 first: int, last: int, missing: Sequence[int]) -> None:
        #: The table.
        self.path = path
        #: The range drawn (``build``'s ``from_version`` / ``since`` and ``to_version``).
        self.first_version = first
        self.last_version = last
        self._commits = commits
        self._earlier = dict(earlier)
        self._by_version = {c.version: c for c in commits}
        #: Versions of the range whose commit file is gone (log cleanup).
        self.missing: List[int] = list(missing)
        #: Failed attempts handed in by the caller (``build(failed=...)``).
        self.failed: List[Dict[str, Any]] = [_failed_attempt(f) for f in failed]

    def __repr__(self) -> str:
        return f"Timeline({self.path!r}, v{self.first_version}..v{self.last_version}, {len(self._commits)} commits, {len(self.failed)} failed attempts)"

    def __len__(self) -> int:
        return len(self._commits)

    # -- data ----------------------------------------------------------------------------------

    def _commit_time(self, version: Optional[int]) -> Optional[int]:
        if version is None:
            return None
        c = self._by_version.get(version) or self._earlier.get(version)
        return c.time if c is not None else None

    def to_pyarrow(self) -> pa.Table:
        """One row per commit: ``version``, ``read_version``, ``operation``, ``writer`` (its
        lane), ``engine``, ``read_time`` (recorded by delta-occ; null for other writers),
        ``commit_start_time``, ``commit_time``, ``attempts`` (of the commit loop),
        ``execution`` (of a re-run operation), ``winners`` (recorded checked winners),
        ``winners_not_recorded``, ``rules`` (explain's rule per winner), ``row_level`` (per
        winner: passed by a row-level rule of concurrency.md §4) and ``summary`` (explain's
        sentence)."""
        cs = self._commits

        def ms(key: str) -> List[Optional[int]]:
            return [c.occ.get(key) if isinstance(c.occ.get(key), int) else None for c in cs]

        ts = pa.timestamp("ms", tz="UTC")
        return pa.table({
            "version": pa.array([c.version for c in cs], pa.int64()),
            "read_version": pa.array([c.read_version for c in cs], pa.int64()),
            "operation": pa.array([c.operation for c in cs], pa.string()),
            "writer": pa.array([c.lane for c in cs], pa.string()),
            "engine": pa.array([engine_of(c.info) for c in cs], pa.string()),
            "read_time": pa.array(ms(commit_note.READ_TIME), ts),
            "commit_start_time": pa.array(ms(commit_note.COMMIT_START), ts),
            "commit_time": pa.array([c.time for c in cs], ts),
            "attempts": pa.array([c.occ.get("attempt") for c in cs], pa.int32()),
            "execution": pa.array([c.occ.get(commit_note.EXECUTION, 1) if c.occ else None for c in cs], pa.int32()),
            "winners": pa.array([[k["version"] for k in c.checks] for c in cs], pa.list_(pa.int64())),
            "winners_not_recorded": pa.array([int(c.occ.get("winnersNotRecorded", 0)) for c in cs], pa.int64()),
            "rules": pa.array([[k["rule"] for k in c.checks] for c in cs], pa.list_(pa.string())),
            "row_level": pa.array([[k["row_level"] for k in c.checks] for c in cs], pa.list_(pa.bool_())),
            "summary": pa.array([c.summary() for c in cs], pa.string()),
        })

    def summary(self) -> Dict[str, Any]:
        """The page's summary: commits, writers, checks passed at row level, retries (commit-loop
        attempts after the first, re-executions, failed attempts) and the time they cost (ms)."""
        ours = [c for c in self._commits if c.occ]
        rebased = [c for c in ours if int(c.occ.get("attempt") or 1) > 1]
        loop_ms = sum(max(0, (c.time or 0) - c.occ[commit_note.COMMIT_START]) for c in rebased if isinstance(c.occ.get(commit_note.COMMIT_START), int))
        reruns = [c for c in ours if int(c.occ.get(commit_note.EXECUTION, 1)) > 1]
        rerun_ms = sum(max(0, c.occ[commit_note.READ_TIME] - c.occ[commit_note.FIRST_READ]) for c in reruns
                       if isinstance(c.occ.get(commit_note.READ_TIME), int) and isinstance(c.occ.get(commit_note.FIRST_READ), int))
        failed_ms = sum(max(0, f["ended_at"] - f["started_at"]) for f in self.failed if f["started_at"] is not None and f["ended_at"] is not None)
        checks = [k for c in self._commits for k in c.checks]
        return {
            "commits": len(self._commits),
            "writers": len({c.lane for c in self._commits} | {f["lane"] for f in self.failed}),
            "delta_occ_commits": len(ours),
            "winners_checked": len(checks) + sum(int(c.occ.get("winnersNotRecorded", 0)) for c in ours),
            "passed_at_row_level": sum(1 for k in checks if k["row_level"]),
            "commits_passed_at_row_level": sum(1 for c in self._commits if any(k["row_level"] for k in c.checks)),
            "retries": sum(int(c.occ.get("attempt") or 1) - 1 for c in ours),
            "reexecutions": sum(int(c.occ.get(commit_note.EXECUTION, 1)) - 1 for c in ours),
            "failed_attempts": len(self.failed),
            "ms_lost_in_retries": loop_ms,
            "ms_lost_in_reexecutions": rerun_ms,
            "ms_lost_in_failed_attempts": failed_ms,
            "ms_lost": loop_ms + rerun_ms + failed_ms,
        }

    def heat(self) -> Dict[str, List[Dict[str, Any]]]:
        """Where concurrent commits touched the same data: per partition and per file, the pairs
        (a commit, a commit it was concurrent with: one after its read version) that both
        touched it, most first, with the versions of the later commits."""
        parts: Counter = Counter()
        files: Counter = Counter()
        where: Dict[Tuple[str, str], List[int]] = {}
        for c in self._commits:
            for w in self._concurrent(c):
                for kind, shared, counter in (("p", c.partitions & w.partitions, parts), ("f", c.files & w.files, files)):
                    for key in shared:
                        counter[key] += 1
                        where.setdefault((kind, key), []).append(c.version)
        def rows(kind: str, counter: Counter) -> List[Dict[str, Any]]:
            return [{"key": k, "pairs": n, "versions": sorted(set(where[(kind, k)]))} for k, n in counter.most_common(HEAT_ROWS)]

        return {"partitions": rows("p", parts), "files": rows("f", files)}

    def _concurrent(self, c: Commit) -> Iterable[Commit]:
        if c.read_version is None:
            return []
        if c.checks:
            versions: Iterable[int] = [k["version"] for k in c.checks]
        else:
            versions = range(max(c.read_version + 1, c.version - HEAT_WINDOW), c.version)
        out = []
        for v in versions:
            w = self._by_version.get(v) or self._earlier.get(v)
            if w is not None:
                out.append(w)
        return out

    # -- page ----------------------------------------------------------------------------------

    def _data(self) -> Dict[str, Any]:
        """What the page's script draws, column-wise, strings interned (10,000 commits stay a
        few MB)."""
        strings: Dict[str, int] = {}

        def s(text: Optional[str]) -> Optional[int]:
            if text is None:
                return None
            return strings.setdefault(text, len(strings))

        lanes: Dict[str, int] = {}
        groups: Dict[str, str] = {}

        def lane(name: str, group: str) -> int:
            groups.setdefault(name, group)
            return lanes.setdefault(name, len(lanes))

        cols: Dict[str, List[Any]] = {k: [] for k in ("v", "rv", "t0", "t0rec", "tcs", "t1", "lane", "op", "cls", "att", "exe", "t00", "rerun",
                                                         "chk", "more", "rl", "sum", "eng")}
        for c in self._commits:
            read = c.occ.get(commit_note.READ_TIME)
            recorded = isinstance(read, int)
            cols["v"].append(c.version)
            cols["rv"].append(c.read_version)
            cols["t0"].append(read if recorded else self._commit_time(c.read_version))
            cols["t0rec"].append(1 if recorded else 0)
            cols["tcs"].append(c.occ.get(commit_note.COMMIT_START))
            cols["t1"].append(c.time)
            cols["lane"].append(lane(c.lane, c.group))
            cols["op"].append(s(c.operation))
            cols["cls"].append(op_class(c.operation, c.info.get("isBlindAppend")))
            cols["att"].append(c.occ.get("attempt"))
            cols["exe"].append(c.occ.get(commit_note.EXECUTION, 1) if c.occ else None)
            cols["t00"].append(c.occ.get(commit_note.FIRST_READ))
            cols["rerun"].append(c.occ.get(commit_note.RERUN_OVER))
            cols["chk"].append([[k["version"], s(k["operation"]), s(k["rule"]), s(k["outcome"]), 1 if k["row_level"] else 0] for k in c.checks])
            cols["more"].append(int(c.occ.get("winnersNotRecorded", 0)))
            cols["rl"].append(1 if any(k["row_level"] for k in c.checks) else 0)
            cols["sum"].append(s(c.summary()))
            cols["eng"].append(s(engine_of(c.info)))
        failed = []
        for f in self.failed:
            failed.append({"lane": lane(f["lane"], f["group"]), "op": s(f["operation"]), "cls": op_class(f["operation"]), "rv": f["read_version"],
                           "t0": f["started_at"], "t1": f["ended_at"], "wv": f["winning_version"], "wt": self._commit_time(f["winning_version"]),
                           "err": s(f["error"]), "rule": s(f["rule"]), "msg": s(f["message"]), "id": f["id"]})
        earlier = {str(v): c.time for v, c in self._earlier.items()}
        return {
            "path": self.path, "first": self.first_version, "last": self.last_version,
            "strings": list(strings), "lanes": [{"name": n, "group": groups[n]} for n in lanes],
            "commits": cols, "failed": failed, "earlier": earlier, "classes": list(OP_CLASSES),
        }

    def to_html(self) -> str:
        """The page: one self-contained HTML document (inline CSS, SVG and JavaScript)."""
        data = json.dumps(self._data(), separators=(",", ":"), default=str)
        # Inside <script>: no "</script>" or "<!--" can end or confuse it.
        data = data.replace("<", "\\u003c")
        title = f"delta-occ timeline: {self.path} v{self.first_version}–v{self.last_version}"
        return _PAGE.format(
            title=html.escape(title), css=(_HERE / "timeline.css").read_text(), js=(_HERE / "timeline.js").read_text(),
            data=data, heading=html.escape(self.path), range=self._range_html(), summary=self._summary_html(), heat=self._heat_html(),
        )

    def write_html(self, path: "str | pathlib.Path") -> str:
        """Write the page to ``path``; returns the path written."""
        out = pathlib.Path(path)
        out.write_text(self.to_html(), encoding="utf-8")
        return str(out)

    def _repr_html_(self) -> str:
        # An iframe keeps the page's ids, styles and script apart from the notebook's.
        return f'<iframe srcdoc="{html.escape(self.to_html(), quote=True)}" style="width:100%;height:720px;border:0" title="delta-occ timeline"></iframe>'

    def _range_html(self) -> str:
        times = [c.time for c in self._commits if c.time is not None]
        span = ""
        if times:
            span = f", {time_travel.utc_text(min(times))} to {time_travel.utc_text(max(times))} UTC"
        gone = f"; {len(self.missing)} commit(s) of the range cleaned up from the log" if self.missing else ""
        return html.escape(f"versions {self.first_version} to {self.last_version}{span}{gone}")

    def _summary_html(self) -> str:
        s = self.summary()
        items = [
            ("commits", f"{s['commits']} ({s['delta_occ_commits']} by delta-occ) by {s['writers']} writer(s)"),
            ("winners checked", f"{s['winners_checked']} (concurrent commits a delta-occ commit was checked against and passed)"),
            ("conflicts avoided at row level", f"{s['passed_at_row_level']} check(s) in {s['commits_passed_at_row_level']} commit(s) passed by a rule of row-level concurrency (§4)"),
            ("retries", f"{s['retries']} commit-loop attempt(s) after the first, {s['reexecutions']} re-execution(s), {s['failed_attempts']} failed attempt(s)"),
            ("time lost waiting", f"{_seconds(s['ms_lost'])}, summed over writers: {_seconds(s['ms_lost_in_retries'])} in commit loops that rebased, "
                                  f"{_seconds(s['ms_lost_in_reexecutions'])} in executions that were re-run, {_seconds(s['ms_lost_in_failed_attempts'])} in failed attempts"),
        ]
        return "".join(f'<div class="stat" data-stat="{html.escape(k)}"><dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd></div>' for k, v in items)

    def _heat_html(self) -> str:
        heat = self.heat()
        out = []
        for kind, title, none in (("partitions", "partition", "no concurrent commits touched one partition (or the table is not partitioned)"),
                                  ("files", "file", "no concurrent commits touched one file")):
            rows = heat[kind]
            out.append(f'<div class="heat-block"><h3>per {title}</h3>')
            if not rows:
                out.append(f'<p class="empty">{html.escape(none)}</p></div>')
                continue
            top = rows[0]["pairs"]
            out.append(f'<table class="heat" data-kind="{kind}"><tr><th>{title}</th><th>concurrent pairs</th><th>later commits</th></tr>')
            for r in rows:
                vs = r["versions"]
                links = " ".join(f'<a href="#v{v}">v{v}</a>' for v in vs[:12]) + (f" … ({len(vs)})" if len(vs) > 12 else "")
                width = max(2, round(100 * r["pairs"] / top))
                out.append(f'<tr><td class="key">{html.escape(r["key"])}</td><td><span class="bar" style="width:{width}px"></span> {r["pairs"]}</td><td>{links}</td></tr>')
            out.append("</table></div>")
        return "".join(out)


def _seconds(ms: int) -> str:
    return f"{ms} ms" if ms < 10_000 else f"{ms / 1000:.1f} s"


def _failed_attempt(f: Mapping[str, Any]) -> Dict[str, Any]:
    """A failed attempt as the page draws it; ``writer`` is the attempt's commit note (a dict, as
    ``Transaction.note``) or a lane name."""
    who = f.get("writer")
    lane, group = note_lane(who) if isinstance(who, Mapping) else (str(who or "unknown writer"), str(who or "unknown writer"))
    rule = f.get("rule")
    return {
        "id": str(f.get("id") or ""),
        "lane": lane,
        "group": group,
        "operation": str(f.get("operation") or "?"),
        "read_version": f.get("read_version"),
        "started_at": f.get("started_at"),
        "ended_at": f.get("ended_at"),
        "winning_version": f.get("winning_version"),
        "error": str(f.get("error") or "failed"),
        "rule": rule_text(rule) if rule else None,
        "message": str(f.get("message") or ""),
    }


def build(
    table: Any,
    from_version: Optional[int] = None,
    to_version: Optional[int] = None,
    since: Optional[time_travel.Instant] = None,
    failed: Sequence[Mapping[str, Any]] = (),
) -> Timeline:
    """The timeline of ``table`` (a ``delta_occ.Table``) from ``from_version`` (or the first
    commit at or after ``since``; the later of the two when both are given; default: the newest
    ``DEFAULT_COMMITS``) to ``to_version`` (default: the latest). ``failed``: attempts that did not
    commit, each a mapping with ``writer`` (a commit note, as ``Transaction.note``, or a name),
    ``operation``, ``read_version``, ``started_at`` and ``ended_at`` (ms since the epoch),
    ``error``, ``winning_version``, ``rule`` (a rule id) and ``message``."""
    latest = table.refresh()
    for name, v in (("from_version", from_version), ("to_version", to_version)):
        if v is not None:
            version_arg(f"timeline: {name}", v)
    last = latest if to_version is None else to_version
    if last > latest:
        raise VersionNotFoundError(f"timeline of {table.path}: to_version {last} is past the latest version {latest}", table=table.path, version=last)
    first = max(0, last - DEFAULT_COMMITS + 1) if from_version is None and since is None else 0
    if from_version is not None:
        first = from_version
    if since is not None:
        first = max(first, time_travel.version_from(table.handle, since))
    if first > last:
        raise InvalidArgumentError(f"timeline of {table.path}: the range v{first}..v{last} is empty (from_version / since after to_version)")
    commits, missing = [], []
    for v, s in explain.summaries(table, range(first, last + 1)):
        if s is None:
            missing.append(v)
        else:
            commits.append(Commit(v, s))
    earlier: Dict[int, Commit] = {}
    # Winners before the range: their commit times and data, for the links and the heat map.
    wanted = {k["version"] for c in commits for k in c.checks if k["version"] < first}
    wanted |= {c.read_version for c in commits if c.read_version is not None and c.read_version < first}
    wanted |= {f.get("winning_version") for f in failed if isinstance(f.get("winning_version"), int) and f["winning_version"] < first}
    for v, s in explain.summaries(table, sorted(x for x in wanted if isinstance(x, int) and x >= 0)):
        if s is not None:
            earlier[v] = Commit(v, s)
    return Timeline(table.path, commits, earlier, failed, first, last, missing)


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<meta name="generator" content="delta-occ timeline">
<title>{title}</title>
<style>{css}</style></head>
<body>
<header><h1>Commits of <code>{heading}</code></h1><p class="range">{range}</p></header>
<section id="summary"><h2>Summary</h2><dl>{summary}</dl></section>
<section id="chart"><h2>Writers</h2>
<div id="controls"><span class="group">x axis: <button type="button" data-mode="time" class="on">time</button><button type="button" data-mode="version">version</button></span>
<span class="group"><button type="button" id="zoom-in">zoom in</button><button type="button" id="zoom-out">zoom out</button><button type="button" id="zoom-reset">whole range</button></span>
<span id="view-note"></span></div>
<svg id="overview" role="img" aria-label="commits over the whole range; drag to choose what the lanes show"></svg>
<div id="lanes-box"><svg id="lanes" role="img" aria-label="one lane per writer; each commit a span from its read to its commit"></svg></div>
<div id="legend"></div>
</section>
<section id="details" aria-live="polite"><h2>Commit</h2><p class="hint">Click a span (or a <code>#v12</code> link) for the commit's checks, in <code>delta-occ explain</code>'s words.</p></section>
<section id="heat"><h2>Where concurrent commits touched the same data</h2>{heat}</section>
<script type="application/json" id="timeline-data">{data}</script>
<script>{js}</script>
</body></html>
"""
