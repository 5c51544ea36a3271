"""The history checker of ``delta-occ stress``: it replays the table version by version and judges
the logged attempts against it.

* versions are contiguous; every acknowledged commit is present exactly once, at its version; no
  failed attempt is visible; an attempt whose writer was killed is present at most once;
* each version's rows equal its logged operation evaluated on the previous version by the model
  (``model``: under WriteSerializable, rows of blind appends that committed after the operation's
  read version are outside its predicate, as Delta allows), so no row is lost, duplicated or
  resurrected; properties change only by the operation's own key; an application version is
  applied at most once;
* the final table equals an independent reader's (delta-kernel-rs for DV tables, deltalake
  otherwise) when one is installed;
* every conflict is re-derived from the two commits: on a DV table with row-level concurrency,
  a conflict involving OPTIMIZE, or one between DML that touched provably disjoint rows, is
  reported as spurious.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from typing import Any, Dict, List, Optional, Tuple, Union

from ..table import Table
from ..timeline import Timeline
from ..timeline import build as build_timeline
from . import row_ids
from .model import Rows, apply, pred_match, touched, unseen_blind_appends
from .workload import ATTEMPT_KEY, Target, target

_FIXED = ("MetadataChangedException", "ProtocolChangedException", "ConcurrentTransactionException")
_DML = ("delete", "update", "merge")


def read_attempts(where: Union[str, Target]) -> Dict[str, Dict[str, Any]]:
    """Every attempt by id, its last record winning (``started`` alone: outcome unknown)."""
    out: Dict[str, Dict[str, Any]] = {}
    d = target(where).log_dir
    for name in sorted(os.listdir(d)):
        with open(os.path.join(d, name)) as f:
            for line in f:
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a writer killed mid-line
                out[rec["attempt"]] = rec
    return out


def failed_attempts(where: Union[str, Target]) -> List[Dict[str, Any]]:
    """The logged attempts that did not commit (a conflict or an error at commit), as
    ``delta_occ.timeline.build(failed=...)`` takes them: they are not in the Delta log."""
    out = []
    for a, rec in read_attempts(where).items():
        if rec["outcome"] not in ("conflict", "error") or "started_at" not in rec:
            continue  # an error while staging has no read version nor writer
        out.append({"id": a, "writer": rec.get("writer") or rec["worker"], "operation": rec["op"]["op"].upper(), "read_version": rec.get("read_version"),
                    "started_at": rec["started_at"], "ended_at": rec.get("ended_at"), "error": rec.get("error"),
                    "winning_version": rec.get("winning_version"), "rule": rec.get("rule"), "message": rec.get("message")})
    return out


def timeline(where: Union[str, Target]) -> Timeline:
    """The run's timeline: every version of the table, and the failed attempts."""
    tg = target(where)
    return build_timeline(tg.table(), from_version=0, failed=failed_attempts(tg))


def _state_at(t: Table, v: int) -> Tuple[Rows, Dict[str, str]]:
    """The rows and the table properties at version `v` (one snapshot)."""
    snap = t.snapshot(v)
    data = snap.to_pyarrow(columns=["id", "p", "s", "x"])
    rows: Rows = {}
    for i, p, s, x in zip(*(data.column(c).to_pylist() for c in ("id", "p", "s", "x"))):
        if i in rows:
            rows[i] = ("<duplicate>", "", -1)
        else:
            rows[i] = (p, s, x)
    return rows, dict(snap.properties)


def check(where: Union[str, Target], dv_table: bool = True, row_tracking: bool = False) -> Dict[str, Any]:
    """Judge the logged attempts against the table's history (see the module docstring); with
    ``row_tracking``, the row ids too (``row_ids``)."""
    path = target(where)
    t = path.table()
    attempts = read_attempts(path)
    history = {h["version"]: h for h in t.history()}
    latest = max(history)
    anomalies: List[str] = []
    if sorted(history) != list(range(latest + 1)):
        anomalies.append(f"versions are not contiguous: {sorted(history)}")
    at_version: Dict[int, str] = {}
    seen: Counter = Counter()
    for v, h in history.items():
        a = (h.get("operationParameters") or {}).get(ATTEMPT_KEY)
        if a is not None:
            a = a.strip('"')
            at_version[v] = a
            seen[a] += 1
    duplicated = sum(n - 1 for n in seen.values() if n > 1)
    lost = 0
    for a, rec in attempts.items():
        if rec["outcome"] == "committed" and at_version.get(rec["version"]) != a:
            lost += 1
            anomalies.append(f"attempt {a} was acknowledged at version {rec['version']}, which holds {at_version.get(rec['version'])}")
        if rec["outcome"] in ("conflict", "error") and seen[a]:
            anomalies.append(f"attempt {a} failed ({rec.get('error')}) but its commit is in the log")
    rows: Dict[int, Any] = {}
    props: Dict[int, Dict[str, str]] = {}
    rows[0], props[0] = _state_at(t, 0)
    apps: Counter = Counter()
    blind_ids: Dict[int, set] = {}
    for v in range(1, latest + 1):
        rows[v], props[v] = _state_at(t, v)
        added = set(rows[v]) - set(rows[v - 1])
        blind_ids[v] = added if history.get(v, {}).get("isBlindAppend") else set()
        a = at_version.get(v)
        logged = attempts.get(a) if a else None
        if logged is None:
            anomalies.append(f"version {v} has no logged attempt ({a})")
            continue
        op = logged["op"]
        unseen = unseen_blind_appends(logged["level"], logged.get("read_version"), v, blind_ids)
        outside: frozenset = frozenset().union(*[blind_ids[u] for u in unseen])
        expected, bad = apply(op, rows[v - 1], outside)
        anomalies += [f"version {v} ({a} {op['op']}): {b}" for b in bad]
        if expected != rows[v]:
            anomalies.append(f"version {v} ({a} {op['op']}): rows differ from the model: {_diff(expected, rows[v])}")
        want = dict(props[v - 1])
        if op["op"] == "props":
            want[op["key"]] = "1"
        if props[v] != want:
            anomalies.append(f"version {v} ({a} {op['op']}): properties {sorted(set(props[v].items()) ^ set(want.items()))} differ")
        if op["op"] == "app_append":
            apps[(op["app"], op["app_version"])] += 1
    anomalies += [f"application {k[0]} version {k[1]} applied {n} times" for k, n in apps.items() if n > 1]
    if row_tracking:
        anomalies += row_ids.check(t, latest)
    spurious = _spurious(attempts, at_version, rows, dv_table)
    oracle = _oracle(path, t, rows[latest], dv_table)
    if oracle.get("differs"):
        anomalies.append(f"final table differs from {oracle['reader']}: {oracle['differs']}")
    outcomes = Counter(r["outcome"] for r in attempts.values())
    return {
        "attempted": len(attempts),
        "committed": outcomes["committed"],
        "nothing": outcomes["nothing"],
        "unknown": outcomes["started"],
        "conflicts": dict(Counter(r["error"] for r in attempts.values() if r["outcome"] == "conflict")),
        "errors": dict(Counter(r["error"] for r in attempts.values() if r["outcome"] == "error")),
        "versions": latest,
        "rows": len(rows[latest]),
        "anomalies": anomalies,
        "lost": lost,
        "duplicated": duplicated,
        "spurious": len(spurious),
        "spurious_conflicts": spurious[:20],
        "oracle": oracle.get("reader"),
    }


def _diff(expected: Rows, got: Rows) -> str:
    missing = sorted(set(expected) - set(got))[:5]
    extra = sorted(set(got) - set(expected))[:5]
    changed = sorted(i for i in set(expected) & set(got) if expected[i] != got[i])[:5]
    return f"missing ids {missing}, unexpected ids {extra}, changed ids {[(i, expected[i][2], got[i][2]) for i in changed]}"


def _spurious(attempts: Dict[str, Dict[str, Any]], at_version: Dict[int, str], rows: Dict[int, Rows], dv_table: bool) -> List[str]:
    """Conflicts the row-level rules say could not happen (DV tables only: without DVs Delta's
    rules are per file, so a conflict between different rows of one file is expected)."""
    out: List[str] = []
    if not dv_table:
        return out
    for a, rec in attempts.items():
        if rec["outcome"] != "conflict" or rec["error"] in _FIXED:
            continue
        wv = rec.get("winning_version")
        winner = attempts.get(at_version.get(wv, "")) if isinstance(wv, int) else None
        if winner is None or wv is None or wv not in rows or rec["read_version"] not in rows:
            continue
        mine, theirs = rec["op"]["op"], winner["op"]["op"]
        why = None
        if "optimize" in (mine, theirs):
            why = "a conflict involving OPTIMIZE on a DV table"
        elif mine in _DML and theirs in _DML:
            before, after = rows[wv - 1], rows[wv]
            changed = {i for i in before if after.get(i) != before[i]}
            inserted = {i: r for i, r in after.items() if i not in before}
            # §4 rule 2 judges the winner's changed rows by this transaction's predicate, also
            # rows it never saw (appended after its read and changed by the winner).
            read = touched(rec["op"], rows[rec["read_version"]]) | touched(rec["op"], {i: before[i] for i in changed})
            hit = (mine != "merge" and any(pred_match(rec["op"]["pred"], i, r) for i, r in inserted.items())) or (
                mine == "merge" and any(k in inserted for k, _ in rec["op"]["src"])
            )
            if not (read & changed) and not hit:
                why = f"disjoint rows: this {mine} touched {sorted(read)[:5]}, the winning {theirs} changed {sorted(changed)[:5]}"
        if why:
            out.append(f"{a} ({mine}, {rec['level']}) lost to version {wv} ({theirs}) with {rec['error']}: {why}")
    return out


def _oracle(tg: Target, t: Table, final: Rows, dv_table: bool) -> Dict[str, Any]:
    """The final table read by another Delta reader, when one is installed (delta-kernel-rs
    reads a local copy of an object-store table: its Python wrapper takes no credentials)."""
    try:
        if dv_table:
            path = tg.location if "://" not in tg.location else _local_copy(t)
            from delta_kernel_rust_sharing_wrapper import PythonInterface, ScanBuilder
            from delta_kernel_rust_sharing_wrapper import Table as KTable

            uri = "file://" + os.path.abspath(path).rstrip("/") + "/"
            iface = PythonInterface(uri)
            data = ScanBuilder(KTable(uri).snapshot(iface)).build().execute(iface)
            data = data.read_all() if hasattr(data, "read_all") else data
            reader = "delta-kernel-rs"
        else:
            import deltalake

            data = _deltalake_read(deltalake, tg.location, tg.storage_options)
            reader = "deltalake"
    except ImportError:
        return {"reader": None}
    got = {i: (p, s, x) for i, p, s, x in zip(*(data.column(c).to_pylist() for c in ("id", "p", "s", "x")))}
    return {"reader": reader, "differs": None if got == final and data.num_rows == len(final) else _diff(final, got)}


def _local_copy(t: Table) -> str:
    """A local copy of a table's files (the log and the data files), made through its storage."""
    import tempfile

    storage = t.handle.storage
    dest = tempfile.mkdtemp(prefix="delta-occ-oracle-")
    for name, _ in storage.list(""):
        out = os.path.join(dest, name)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "wb") as f:
            f.write(storage.read(name))
    return dest


def _deltalake_read(deltalake: Any, path: str, storage_options: Optional[Dict[str, str]] = None) -> Any:
    """deltalake's read through a pyarrow dataset scanner, which is destroyed here: a scanner
    whose native threads outlive it into the interpreter's teardown can abort the process
    (exit 134 in 2 of 19 runs without DVs, after the summary was printed)."""
    import gc

    dt = deltalake.DeltaTable(path, storage_options=storage_options)
    data = dt.to_pyarrow_table()
    del dt
    gc.collect()
    return data
