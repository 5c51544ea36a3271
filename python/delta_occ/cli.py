"""The delta-occ command line: `demo` is the embedded-engine smoke job; `history` and `snapshot`
inspect a table; `stress` runs concurrent writers on a scratch table and checks the history.
Exit codes: 0 success, 1 a delta-occ error (message on stderr), 2 bad usage, 3 `stress` found
an anomaly, a lost or duplicated commit, or a spurious conflict."""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from typing import List, Optional

import pyarrow as pa

from ._core import __version__
from .exceptions import DeltaOccError, TableAlreadyExistsError
from .table import Table


def _row_count(snapshot, files: pa.Table) -> int:
    """Rows after DVs from the log's stats; the data is read only when a file lacks numRecords."""
    num_records = files.column("num_records").to_pylist()
    if None in num_records:
        return snapshot.to_pyarrow().num_rows
    return sum(num_records) - sum(files.column("dv_cardinality").to_pylist())


def _snapshot_summary(t: Table, version: Optional[int] = None) -> dict:
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


def _print(obj, as_json: bool) -> None:
    if as_json:
        print(json.dumps(obj, indent=2, default=str))
        return
    if isinstance(obj, list):
        for entry in obj:
            ts = entry.get("inCommitTimestamp", entry.get("timestamp"))
            when = datetime.datetime.fromtimestamp(ts / 1000, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S") if isinstance(ts, int) else "?"
            print(f"v{entry['version']:>4}  {when}  {entry.get('operation', '?'):<14} {json.dumps(entry.get('operationParameters', {}))}")
        return
    for k, v in obj.items():
        print(f"{k:>17}: {v}")


def cmd_demo(args) -> int:
    steps: List[str] = []
    say = steps.append if args.json else print
    schema = pa.schema([("id", pa.int64()), ("date", pa.string()), ("value", pa.float64())])
    try:
        t = Table.create(args.path, schema, partition_by=["date"], properties={"delta.enableDeletionVectors": "true"},
                         name="delta_occ_demo")
        say(f"created {t.path} at version {t.version}")
    except TableAlreadyExistsError:
        t = Table(args.path)
        say(f"opened existing table {t.path} at version {t.version}")
    base = (t.snapshot().to_pyarrow(columns=["id"]).column("id").to_pylist() or [0])
    start = max(base) + 1
    ids = list(range(start, start + 8))
    t.append(pa.table({"id": ids, "date": ["2024-01-01"] * 4 + ["2024-01-02"] * 4, "value": [float(i) for i in ids]}))
    # Two writers delete different rows of the same file concurrently: the second is rebased at
    # row level (its DV merged with the winner's) instead of failing.
    first = t.begin()
    first.delete(f"id = {ids[0]}")
    t.delete(f"id = {ids[1]}")
    r = first.commit()
    say(f"concurrent deletes of one file: committed v{r.version} after {r.attempts} attempt(s), "
          f"rows_resolved={r.rows_resolved}; {r.checks[0]['outcome'] if r.checks else ''}")
    t.update(f"id = {ids[2]}", {"value": "value * 10"})
    t.merge(pa.table({"id": [ids[3], start + 100], "date": ["2024-01-01", "2024-01-03"], "value": [-1.0, 1.0]}),
            "t.id = s.id", when_matched_update={"value": "s.value"}, when_not_matched_insert=True)
    r = t.optimize()
    say(f"optimize: v{r.version} at {r.isolation_level.value}, {r.metrics.get('numRemovedFiles')} files compacted")
    if args.json:  # one JSON document, nothing else on stdout
        _print({"steps": steps, "snapshot": _snapshot_summary(t), "history": t.history()}, True)
        return 0
    print("snapshot:")
    _print(_snapshot_summary(t), False)
    print("history:")
    _print(t.history(), False)
    return 0


def cmd_history(args) -> int:
    _print(Table(args.path).history(args.limit), args.json)
    return 0


def cmd_snapshot(args) -> int:
    _print(_snapshot_summary(Table(args.path), args.at_version), args.json)
    return 0


def cmd_stress(args) -> int:
    from . import stress

    if os.path.exists(os.path.join(args.path, "_delta_log")):
        raise TableAlreadyExistsError(f"{args.path} already holds a table; stress needs a new directory")
    levels = ["Serializable", "WriteSerializable"] if args.level == "both" else [args.level]
    cfg = stress.Config(
        writers=args.writers, transactions=args.transactions, modes=args.modes.split(","), dvs=not args.no_dvs,
        partitioned=args.partitioned, levels=levels, rounds=args.rounds, k=args.k, kill_every=args.kill_every,
        faults=args.faults, seed=args.seed,
    )
    progress = None if args.json else (lambda msg: print(f"\r{msg}", end="", file=sys.stderr, flush=True))
    summary = stress.run(args.path, cfg, progress)
    if args.json:
        print(json.dumps(summary))
    else:
        print(file=sys.stderr)
        for key in ("attempted", "committed", "unknown", "kills", "conflicts", "errors", "versions", "rows", "lost", "duplicated", "spurious", "oracle", "seconds"):
            print(f"{key:>11}: {summary[key]}")
        print(f"{'anomalies':>11}: {len(summary['anomalies'])}")
        for line in summary["anomalies"][:20] + summary["spurious_conflicts"]:
            print(f"  - {line}")
    bad = summary["anomalies"] or summary["lost"] or summary["duplicated"] or summary["spurious"]
    return 3 if bad else 0


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="delta-occ", description=__doc__)
    parser.add_argument("--version", action="version", version=f"delta-occ {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("demo", help="create (or open) a small local table and print its snapshot and history")
    p.add_argument("path")
    p.set_defaults(func=cmd_demo)
    p = sub.add_parser("history", help="print a table's commit history, newest first")
    p.add_argument("path")
    p.add_argument("--limit", type=int, default=None, help="show only the newest LIMIT commits")
    p.set_defaults(func=cmd_history)
    p = sub.add_parser("snapshot", help="print a summary of the latest snapshot (or of --version N)")
    p.add_argument("path")
    p.add_argument("--version", type=int, dest="at_version", default=None, metavar="N", help="time travel to version N")
    p.set_defaults(func=cmd_snapshot)
    p = sub.add_parser("stress", help="run concurrent writers on a new scratch table and check the history")
    p.add_argument("path", help="a new directory for the scratch table (its _stress/ holds the attempt logs)")
    p.add_argument("--writers", type=int, default=4, help="concurrent writers (default 4)")
    p.add_argument("--transactions", type=int, default=25, help="transactions per writer (default 25)")
    p.add_argument("--modes", default="fork,spawn,thread", help="how writers run, in turn: fork, spawn, thread (default all three)")
    p.add_argument("--rounds", type=int, default=10, help="rounds of the interleaving scheduler afterwards (default 10)")
    p.add_argument("--k", type=int, default=3, help="transactions staged per scheduler round (default 3)")
    p.add_argument("--no-dvs", action="store_true", help="a table without deletion vectors (file-level rules)")
    p.add_argument("--partitioned", action="store_true", help="partition the table by p")
    p.add_argument("--level", choices=["Serializable", "WriteSerializable", "both"], default="both", help="isolation levels used (default both)")
    p.add_argument("--kill-every", type=float, default=None, metavar="SECONDS", help="SIGKILL a random process writer this often (it is restarted)")
    p.add_argument("--faults", default="", help="DELTA_OCC_FAULTS for the writer processes, e.g. ack_lost or pause_ms=5")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=cmd_stress)
    for p in sub.choices.values():
        p.add_argument("--json", action="store_true", help="machine-readable output")
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except DeltaOccError as e:
        print(f"delta-occ: {type(e).__name__}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
