"""The delta-occ command line."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
from typing import Any, Callable, Dict, List, Optional

import pyarrow as pa
from rich.console import Console
from rich.table import Table as Grid

from . import explain, matrix, predict, time_travel
from ._core import __version__
from .exceptions import DeltaOccError
from .table import Table, history_report

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_FINDING, EXIT_CONFLICT = 0, 1, 2, 3, 4

DESCRIPTION = """\
Optimistic concurrency control for Delta Lake writers: run the documented conflict matrices,
explain commits, predict conflicts, inspect tables, stress-test concurrent writers.

exit codes:
  0  success
  1  a delta-occ error (missing table, corrupt log, bad argument...): message on stderr, or
     {"error": {"type": ..., "message": ...}} on stdout with --json
  2  bad usage (unknown command or option)
  3  `matrix` observed a cell that differs from concurrency.md section 5, or `stress` found an
     anomaly, a lost or duplicated commit, or a spurious conflict
  4  `check` predicts a conflict in at least one commit order
"""

# Piped output is not cut to 80 columns.
_out = Console(highlight=False, width=None if sys.stdout.isatty() else 200)
_err = Console(stderr=True, highlight=False, soft_wrap=True)


def _when(ms: Any) -> str:
    return time_travel.utc_text(ms) if isinstance(ms, int) else "?"


def _row_count(snapshot: Any, files: pa.Table) -> int:
    """Rows after DVs from the log's stats; the data is read only when a file lacks numRecords."""
    num_records = files.column("num_records").to_pylist()
    if None in num_records:
        return snapshot.to_pyarrow().num_rows
    return sum(num_records) - sum(files.column("dv_cardinality").to_pylist())


def _snapshot_summary(t: Table, version: Optional[int] = None) -> Dict[str, Any]:
    s = t.snapshot(version)
    files = s.files()
    return {
        "path": t.path,
        "version": s.version,
        "schema": [f"{f.name}: {f.type}" for f in s.schema],
        "partition_columns": s.partition_columns,
        "properties": s.properties,
        "isolation_level": s.isolation_level.value,
        "protocol": s.protocol,
        "live_files": files.num_rows,
        "rows": _row_count(s, files),
    }


def _history(t: Table, limit: Optional[int]) -> List[Dict[str, Any]]:
    return [explain.commit_fields(e, e["version"]) for e in t.history(limit)]


def _history_entries(entries: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """``history_report`` entries as ``history`` prints them (an unreadable commit as it is)."""
    return [e if "unreadable" in e else explain.commit_fields(e, e["version"]) for e in entries]


def _print_pairs(obj: Dict[str, Any]) -> None:
    g = Grid(show_header=False, box=None)
    g.add_column(style="bold", justify="right")
    g.add_column()
    for k, v in obj.items():
        g.add_row(k, json.dumps(v) if isinstance(v, (dict, list)) else str(v))
    _out.print(g)


def _print_history(entries: List[Dict[str, Any]]) -> None:
    g = Grid(title="history (newest first)", title_justify="left")
    for col in ("version", "time (UTC)", "operation", "read", "isolation level", "blind", "rebased over"):
        g.add_column(col, no_wrap=True)
    g.add_column("parameters", overflow="fold")
    for e in entries:
        if "unreadable" in e:
            g.add_row(str(e["version"]), "", "[bold red]cannot be read[/bold red]", "", "", "", "", e["unreadable"])
            continue
        g.add_row(
            str(e["version"]), _when(e["timestamp"]), str(e["operation"]),
            "" if e["read_version"] is None else str(e["read_version"]), e["isolation_level"] or "",
            {True: "yes", False: "no", None: ""}[e["blind_append"]],
            ", ".join(f"v{v}" for v in e["rebased_over"]), json.dumps(e["parameters"]),
        )
    _out.print(g)


def cmd_demo(args: argparse.Namespace) -> int:
    steps: List[str] = []
    say: Callable[[str], None] = steps.append if args.json else _out.print
    schema = pa.schema([("id", pa.int64()), ("date", pa.string()), ("value", pa.float64())])
    if args.path is None:
        args.path = os.path.join(tempfile.mkdtemp(prefix="delta-occ-demo-"), "table")
    t = Table.create(
        args.path, schema, partition_by=["date"], properties={"delta.enableDeletionVectors": "true"}, name="delta_occ_demo",
        storage_options=args.storage_options,
    )
    say(f"created {t.path} at version {t.version}")
    ids = list(range(1, 9))
    t.append(pa.table({"id": ids, "date": ["2024-01-01"] * 4 + ["2024-01-02"] * 4, "value": [float(i) for i in ids]}))
    # Two writers delete different rows of the same file concurrently: the second is rebased at
    # row level (its DV merged with the winner's) instead of failing.
    first = t.begin()
    first.delete("id = 1")
    t.delete("id = 2")
    r = first.commit()
    say(f"concurrent deletes of one file: committed v{r.version} after {r.attempts} attempt(s), "
        f"rows_resolved={r.rows_resolved}; {r.checks[0]['outcome'] if r.checks else ''}")
    t.update("id = 3", {"value": "value * 10"})
    t.merge(pa.table({"id": [4, 100], "date": ["2024-01-01", "2024-01-03"], "value": [-1.0, 1.0]}),
            "t.id = s.id", when_matched_update={"value": "s.value"}, when_not_matched_insert=True)
    r = t.optimize()
    say(f"optimize: v{r.version} at {r.isolation_level.value} (SnapshotIsolation: a dataChange=false "
        f"compaction), {r.metrics.get('numRemovedFiles')} files compacted")
    if args.json:
        _emit({"steps": steps, "snapshot": _snapshot_summary(t), "history": _history(t, None)})
        return EXIT_OK
    _out.print("[bold]snapshot[/bold]")
    _print_pairs(_snapshot_summary(t))
    _print_history(_history(t, None))
    return EXIT_OK


def cmd_matrix(args: argparse.Namespace) -> int:
    modes = args.mode or list(matrix.MODES)
    levels = args.level or list(matrix.LEVELS)
    parts = {"both": (False, True), "yes": (True,), "no": (False,)}[args.partitioned]
    if args.json:
        result = matrix.run(modes, parts, levels, rerun=args.rerun)
        _emit(result)
    else:
        from rich.progress import Progress

        with Progress(console=_err, transient=True) as bar:
            task = bar.add_task("running cells", total=None)
            result = matrix.run(modes, parts, levels, lambda done, total: bar.update(task, completed=done, total=total), rerun=args.rerun)
        _print_matrix(result)
        if args.rerun:
            _out.print(
                f"with rerun_on_conflict=1: {result['rerun_resolved']} of the {result['conflicts']} conflicts disappear "
                "(the operation is executed again on the new snapshot and commits)"
            )
    return EXIT_FINDING if result["differences"] else EXIT_OK


def _print_matrix(result: Dict[str, Any]) -> None:
    for title, documented in matrix.DOCUMENTED.items():
        g = Grid(title=f"documented (concurrency.md §5), {title}", title_justify="left", width=min(_out.width, 130))
        g.add_column("second \\ first")
        for k in matrix.DOCUMENTED_COLUMNS:
            g.add_column(k)
        for label, texts in documented:
            g.add_row(label, *texts)
        _out.print(g)
    _out.print("[bold]observed[/bold] on scratch tables; INSERT-READ is an INSERT that first reads the table.")
    _out.print("Rows: the operation that commits second. Columns: the winner (commits first).\n"
               "[green]-[/green] no conflict, [yellow]same[/yellow] conflict only when the winner touched the same row "
               "(row level) or partition/files (file level), [red]X[/red] conflict; a red "
               "[red]A != B[/red] is observed A where concurrency.md §5 documents B.")
    for title, rows in matrix.grids(result):
        g = Grid(title=title, title_justify="left")
        g.add_column("second \\ first")
        for k in matrix.KINDS:
            g.add_column(k)
        for second, entries in rows:
            cells = []
            for e in entries:
                if e is None:
                    cells.append("")
                elif e[0] == e[1]:
                    cells.append({"-": "[green]-[/green]", "X": "[red]X[/red]"}.get(e[0], f"[yellow]{e[0]}[/yellow]"))
                else:
                    cells.append(f"[bold red]{e[0]} != {e[1]}[/bold red]")
            g.add_row(second, *cells)
        _out.print(g)
    for c in result["cells"]:
        if not c["agrees"]:
            _out.print(f"[red]difference[/red]: {c['mode']}, {'partitioned' if c['partitioned'] else 'unpartitioned'}, "
                       f"{c['level']}: {c['second']} after {c['first']} ({c['variant']}): observed {c['observed']} "
                       f"({c['exception'] or '-'}), documented {c['documented']}: {c['rule']}")
    _out.print(f"{result['checked']} cells in {result['seconds']} s; "
               f"{result['differences']} difference(s) from the documented matrices (concurrency.md §5).")


def _table(args: argparse.Namespace) -> Table:
    return Table(args.path, storage_options=args.storage_options)


def cmd_history(args: argparse.Namespace) -> int:
    # Read without loading a snapshot: a corrupt commit is shown in its place, the rest printed.
    entries = _history_entries(history_report(args.path, args.storage_options, args.limit))
    unreadable = [e for e in entries if "unreadable" in e]
    if args.json:
        _emit(entries)
    else:
        _print_history(entries)
        for e in unreadable:
            _err.print(f"[bold red]CorruptLogError[/bold red]: version {e['version']} cannot be read: {e['unreadable']}")
    return EXIT_ERROR if unreadable else EXIT_OK


def cmd_snapshot(args: argparse.Namespace) -> int:
    summary = _snapshot_summary(_table(args), args.at_version)
    if args.json:
        _emit(summary)
    else:
        _print_pairs(summary)
    return EXIT_OK


def cmd_explain(args: argparse.Namespace) -> int:
    result = explain.commit(_table(args), args.version)
    if args.json:
        _emit(result)
        return EXIT_OK
    _out.print(f"[bold]v{result['version']}[/bold] {result['operation']} {json.dumps(result['parameters'])} "
               f"at {_when(result['timestamp'])} UTC, {result['isolation_level'] or 'isolation level not recorded'}"
               f"{', blind append' if result['blind_append'] else ''}")
    for clause in result["clauses"]:
        _out.print(f"  {clause}")
    _out.print(result["summary"])
    for c in result["checked"]:
        _out.print(f"  against v{c['version']} ({c['operation']}): [bold]{c['rule']}[/bold]")
        _out.print(f"    {c['outcome']}")
        if c["shared_files"]:
            _out.print(f"    files both touched: {', '.join(c['shared_files'])}")
        if c["shared_partitions"]:
            _out.print(f"    partitions both touched: {', '.join(json.dumps(p) for p in c['shared_partitions'])}")
    if result["winners_not_recorded"]:
        _out.print(f"  ({result['winners_not_recorded']} more winners checked, not recorded)")
    return EXIT_OK


def cmd_check(args: argparse.Namespace) -> int:
    result = predict.check(
        args.path, args.first, args.second, isolation_level=args.isolation_level, row_level=not args.file_level,
        storage_options=args.storage_options,
    )
    if args.json:
        _emit(result)
    else:
        _out.print(f"{result['table']} at v{result['version']}, {result['isolation_level']}, "
                   f"{'row-level concurrency' if result['row_level'] else 'file level'}:")
        for o in result["orders"]:
            _out.print(f"  {o['winner']!r} commits first, then {o['loser']!r}: "
                       + ("[green]no conflict[/green]" if o["outcome"] == "no conflict" else f"[red]{o['outcome']}[/red]"))
            rule = o.get("rule") or (o.get("explanation") or {}).get("rule")
            if rule:
                _out.print(f"    {rule}")
            if o["outcome"] != "no conflict":
                ex = o["explanation"]
                where = ", ".join(x for x in (ex["file"] and f"file {ex['file']}", ex["partition"] and f"partition {json.dumps(ex['partition'])}") if x)
                if where:
                    _out.print(f"    {where}")
    return EXIT_CONFLICT if result["conflicts"] else EXIT_OK


def cmd_vacuum(args: argparse.Namespace) -> int:
    r = _table(args).vacuum(args.retention_hours, dry_run=args.dry_run, enforce_retention_duration=not args.no_enforce_retention)
    if args.json:
        _emit(dataclasses.asdict(r))
        return EXIT_OK
    verb = "would delete" if r.dry_run else "deleted"
    _out.print(f"v{r.version}, retention {r.retention_hours:g} h: {verb} {len(r.files)} file(s), {r.bytes} bytes; "
               f"kept {r.kept_referenced} referenced and {r.kept_recent} newer than the cutoff")
    for path, size in r.files[: None if args.dry_run else 20]:
        _out.print(f"  {path} ({size} bytes)", markup=False)
    return EXIT_OK


def cmd_stress(args: argparse.Namespace) -> int:
    from . import stress

    levels = ["Serializable", "WriteSerializable"] if args.level == "both" else [args.level]
    cfg = stress.Config(
        writers=args.writers, transactions=args.transactions, modes=args.modes.split(","), dvs=not args.no_dvs,
        partitioned=args.partitioned, levels=levels, rounds=args.rounds, k=args.k, kill_every=args.kill_every,
        faults=args.faults, seed=args.seed, row_tracking=args.row_tracking,
    )
    progress = None if args.json else (lambda msg: print(f"\r{msg}", end="", file=sys.stderr, flush=True))
    summary = stress.run(args.path, cfg, progress, storage_options=args.storage_options, log_dir=args.log_dir)
    if args.timeline:
        tl = stress.timeline(stress.target(args.path, args.storage_options, summary["log_dir"]))
        summary["timeline"] = tl.write_html(args.timeline)
    if args.json:
        _emit(summary)
    else:
        print(file=sys.stderr)
        _print_pairs({k: summary[k] for k in ("attempted", "committed", "unknown", "kills", "conflicts", "errors", "versions", "rows", "lost", "duplicated", "spurious", "oracle", "seconds")}
                     | {"anomalies": len(summary["anomalies"])})
        for line in summary["anomalies"][:20] + summary["spurious_conflicts"]:
            _out.print(f"  - {line}", markup=False)
        if args.timeline:
            _out.print(f"timeline: {summary['timeline']}", markup=False)
    bad = summary["anomalies"] or summary["lost"] or summary["duplicated"] or summary["spurious"]
    return EXIT_FINDING if bad else EXIT_OK


def cmd_timeline(args: argparse.Namespace) -> int:
    tl = _table(args).timeline(args.from_version, args.to_version, args.since)
    out = tl.write_html(args.output)
    if args.json:
        _emit({"output": out, "first_version": tl.first_version, "last_version": tl.last_version, "summary": tl.summary(), "missing": tl.missing})
    else:
        s = tl.summary()
        _out.print(f"{out}: v{tl.first_version}..v{tl.last_version}, {s['commits']} commits by {s['writers']} writer(s), "
                   f"{s['passed_at_row_level']} check(s) passed at row level, {s['retries']} retries", markup=False)
    return EXIT_OK


def _emit(obj: Any) -> None:
    """The command's only output on stdout: one JSON document."""
    print(json.dumps(obj, indent=2, default=str))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="delta-occ", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"delta-occ {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p = sub.add_parser("matrix", help="run the documented conflict matrices live on scratch tables and mark every difference")
    p.add_argument("--mode", action="append", choices=matrix.MODES, help="only this configuration (repeatable; default all three)")
    p.add_argument("--level", action="append", choices=matrix.LEVELS, help="only this isolation level (repeatable; default both)")
    p.add_argument("--partitioned", choices=["both", "yes", "no"], default="both", help="partitioned tables, unpartitioned, or both (default)")
    p.add_argument("--rerun", action="store_true", help="also run every cell with the second operation re-run on a conflict (rerun_on_conflict=1) and count the conflicts that disappear")
    p.set_defaults(func=cmd_matrix)
    p = sub.add_parser("demo", help="create a small local table in a new directory, run concurrent DML on it, print its snapshot and history")
    p.add_argument("path", nargs="?", default=None, help="a new directory for the demo table (default: a new temporary directory)")
    p.set_defaults(func=cmd_demo)
    p = sub.add_parser("history", help="a table's commits, newest first: time, operation, read version, isolation level, blind append, rebased over")
    p.add_argument("path")
    p.add_argument("--limit", type=int, default=None, help="show only the newest LIMIT commits")
    p.set_defaults(func=cmd_history)
    p = sub.add_parser("snapshot", help="a summary of the latest snapshot (or of --at-version N)")
    p.add_argument("path")
    # --at-version, not --version: that is the program's own flag (--version stays as an alias).
    p.add_argument("--at-version", "--version", type=int, dest="at_version", default=None, metavar="N", help="time travel to version N")
    p.set_defaults(func=cmd_snapshot)
    p = sub.add_parser("explain", help="what commit VERSION was checked against and the rule that let it pass or be rebased")
    p.add_argument("path")
    p.add_argument("version", type=int)
    p.set_defaults(func=cmd_explain)
    p = sub.add_parser("check", help="predict whether two planned operations conflict on the table as it is now (run on scratch clones)",
                       description=predict.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("path")
    p.add_argument("--first", required=True, help="the first operation, e.g. \"DELETE WHERE date < '2010-01-01'\"")
    p.add_argument("--second", required=True, help="the second operation, e.g. \"UPDATE SET value = 0 WHERE date > '2010-01-01'\"")
    p.add_argument("--isolation-level", choices=["Serializable", "WriteSerializable"], default=None, help="default: the table's level")
    p.add_argument("--file-level", action="store_true", help="opt out of row-level concurrency (the classic file-level checks)")
    p.set_defaults(func=cmd_check)
    p = sub.add_parser("vacuum", help="delete data and DV files no version inside the retention window reads (--dry-run lists them)")
    p.add_argument("path")
    p.add_argument("--retention-hours", type=float, default=None, help="the window (default: the table's delta.deletedFileRetentionDuration, one week)")
    p.add_argument("--dry-run", action="store_true", help="list what would be deleted, delete nothing")
    p.add_argument("--no-enforce-retention", action="store_true", help="allow a window shorter than the table's retention (unsafe with concurrent writers)")
    p.set_defaults(func=cmd_vacuum)
    p = sub.add_parser("stress", help="run concurrent writers on a new scratch table and check the history")
    p.add_argument("path", help="a new directory or object-store URI for the scratch table (a local table's _stress/ holds the attempt logs)")
    p.add_argument("--log-dir", default=None, help="a local directory for the attempt logs (default: the table's _stress/, or a new temporary directory for a URI)")
    p.add_argument("--writers", type=int, default=4, help="concurrent writers (default 4)")
    p.add_argument("--transactions", type=int, default=25, help="transactions per writer (default 25)")
    p.add_argument("--modes", default="fork,spawn,thread", help="how writers run, in turn: fork, spawn, thread (default all three)")
    p.add_argument("--rounds", type=int, default=10, help="rounds of the interleaving scheduler afterwards (default 10)")
    p.add_argument("--k", type=int, default=3, help="transactions staged per scheduler round (default 3)")
    p.add_argument("--no-dvs", action="store_true", help="a table without deletion vectors (file-level rules)")
    p.add_argument("--partitioned", action="store_true", help="partition the table by p")
    p.add_argument("--level", choices=["Serializable", "WriteSerializable", "both"], default="both", help="isolation levels used (default both)")
    p.add_argument("--kill-every", type=float, default=None, metavar="SECONDS", help="SIGKILL a random process writer this often (it is restarted)")
    p.add_argument("--faults", default="", help="DELTA_OCC_FAULTS for the writer processes, e.g. ack_lost or pause_ms=5 (a test build only)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--row-tracking", action="store_true", help="a table with row tracking (the full workload, OPTIMIZE also as Z-order), then row ids and row commit versions checked at every version")
    p.add_argument("--timeline", default=None, metavar="OUT.html", help="also draw the run as a timeline page (failed attempts included)")
    p.set_defaults(func=cmd_stress)
    p = sub.add_parser("timeline", help="draw a table's commits as a timeline page: one lane per writer, spans from read to commit, checked winners and rules")
    p.add_argument("path")
    p.add_argument("--from-version", type=int, default=None, metavar="V", help="the first version drawn (default: the newest 10,000 commits)")
    p.add_argument("--to-version", type=int, default=None, metavar="V", help="the last version drawn (default: the latest)")
    p.add_argument("--since", default=None, metavar="TIME", help="start at the first commit at or after TIME (ISO 8601, UTC unless it says otherwise)")
    p.add_argument("-o", "--output", default="timeline.html", help="the HTML file written (default timeline.html)")
    p.set_defaults(func=cmd_timeline)
    for name, p in sub.choices.items():
        p.add_argument("--json", action="store_true", help="print one JSON document on stdout and nothing else")
        if name != "matrix":
            p.add_argument(
                "--storage-option", action="append", default=[], metavar="KEY=VALUE", dest="storage_option",
                help="a storage option for an object-store URI (deltalake's key names, e.g. AWS_REGION=us-east-1; "
                "repeatable; the environment fills in the rest)",
            )
    return parser


def _storage_options(pairs: List[str]) -> Optional[Dict[str, str]]:
    """``KEY=VALUE`` pairs as a dict (None when there are none)."""
    out: Dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise DeltaOccError(f"--storage-option takes KEY=VALUE, got {pair.split('=')[0]!r} without '='")
        out[key.strip()] = value
    return out or None


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    try:
        args.storage_options = _storage_options(getattr(args, "storage_option", []))
        return int(args.func(args))
    except DeltaOccError as e:
        message = _as_flags(str(e))
        if args.json:
            _emit({"error": {"type": type(e).__name__, "message": message}})
        else:
            _err.print(f"delta-occ: {type(e).__name__}: {message}", markup=False)
        return EXIT_ERROR


# Advice in the library's messages names Python keywords; on the command line, the flags.
_FLAGS = {
    "enforce_retention_duration=False": "--no-enforce-retention",
}


def _as_flags(message: str) -> str:
    for keyword, flag in _FLAGS.items():
        message = message.replace(keyword, flag)
    return message


def run() -> None:
    """The console entry point: `main`, then the process ends without the interpreter's
    teardown. After the work is done and the output flushed, pyarrow's native thread pools can
    abort a process in that teardown ("terminate called without an active exception", exit 134,
    apache/arrow#34314); seen once in a `delta-occ stress` run whose results were all printed."""
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    run()
