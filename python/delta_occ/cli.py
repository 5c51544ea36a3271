"""The delta-occ command line: `demo` is the embedded-engine smoke job; `history` and `snapshot`
inspect a table. Exit codes: 0 success, 1 a delta-occ error (message on stderr), 2 bad usage."""

from __future__ import annotations

import argparse
import datetime
import json
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
