"""The reliability workload and its history checker (issue 16), behind ``delta-occ stress``.

Writers (processes started with fork and with spawn, and threads sharing one ``Table``) run random
transactions on one table: appends of rows with globally unique ids, DELETE / UPDATE by ids, id
ranges, partitions and long strings (longer than the 32-character statistics prefix), MERGE
upserts, OPTIMIZE, property changes and idempotent application-id writes. A deterministic
scheduler then stages K >= 3 long-lived transactions at a time in one process and commits them in
random orders: that is where chains of OPTIMIZE and DML live. Every attempt is logged (operation,
arguments, read version, outcome, committed version or exception class).

The checker then replays the table version by version and judges the history:

* versions are contiguous; every acknowledged commit is present exactly once, at its version; no
  failed attempt is visible; an attempt whose writer was killed is present at most once;
* each version's rows equal its logged operation evaluated on the previous version by a small
  model (under WriteSerializable, rows of blind appends that committed after the operation's read
  version are outside its predicate, as Delta allows), so no row is lost, duplicated or
  resurrected; properties change only by the operation's own key; an application version is
  applied at most once;
* the final table equals an independent reader's (delta-kernel-rs for DV tables, deltalake
  otherwise) when one is installed;
* every conflict is re-derived from the two commits: on a DV table with row-level concurrency,
  a conflict involving OPTIMIZE, or one between DML that touched provably disjoint rows, is
  reported as spurious.
"""

from __future__ import annotations

import dataclasses
import json
import multiprocessing as mp
import os
import random
import signal
import threading
import time
from collections import Counter
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import pyarrow as pa

from . import _core
from . import exceptions as ex
from .table import Table

ATTEMPT_KEY = "stress.attempt"
LONG = "stress-row-with-a-shared-prefix-longer-than-32-characters-"
PARTS = ["a", "b c", "k=v"]
SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("s", pa.string()), ("x", pa.int64())])
SHARED_APP = "stress-shared-app"
_FIXED = ("MetadataChangedException", "ProtocolChangedException", "ConcurrentTransactionException")
_DML = ("delete", "update", "merge")

Row = Tuple[str, str, int]  # p, s, x
Rows = Dict[int, Row]


@dataclasses.dataclass
class Config:
    """One workload. ``transactions`` per writer; ``rounds`` of the scheduler, ``k`` staged
    transactions each; ``kill_every`` seconds a random process writer gets SIGKILL (and is
    restarted); ``faults`` is ``DELTA_OCC_FAULTS`` for the writers, honoured only by a test build
    of the extension (``_core.TEST_HOOKS``): the published wheel has no fault injection."""

    writers: int = 4
    transactions: int = 20
    modes: Sequence[str] = ("fork", "spawn", "thread")
    dvs: bool = True
    partitioned: bool = False
    levels: Sequence[str] = ("Serializable", "WriteSerializable")
    rounds: int = 10
    k: int = 3
    kill_every: Optional[float] = None
    faults: str = ""
    seed: int = 0


@dataclasses.dataclass(frozen=True)
class Target:
    """Where a workload runs: the table (a local directory or an object-store URI, with its
    storage options) and the local directory of the attempt logs (the table's ``_stress/`` for a
    local table)."""

    location: str
    storage_options: Optional[Dict[str, str]] = dataclasses.field(default=None, repr=False)  # credentials
    log_dir: str = ""

    def table(self) -> Table:
        return Table(self.location, storage_options=self.storage_options)

    def log(self, name: str) -> "_Log":
        return _Log(os.path.join(self.log_dir, name))


def target(where: Union[str, Target], storage_options: Optional[Mapping[str, str]] = None, log_dir: Optional[str] = None) -> Target:
    """``where`` as a :class:`Target`: a local path logs into its ``_stress/``; a URI into
    ``log_dir`` (default: a new temporary directory)."""
    if isinstance(where, Target):
        return where
    opts = dict(storage_options) if storage_options else None
    if "://" in where:
        import tempfile

        return Target(where, opts, log_dir or tempfile.mkdtemp(prefix="delta-occ-stress-"))
    path = os.path.abspath(os.path.expanduser(where))
    return Target(path, opts, log_dir or os.path.join(path, "_stress"))


# -- the model --------------------------------------------------------------------------------------


def make_row(i: int) -> Row:
    return (PARTS[i % len(PARTS)], f"{LONG}{i:012d}", 0)


def pred_sql(p: List[Any]) -> str:
    kind = p[0]
    if kind == "ids":
        return f"id IN ({', '.join(map(str, p[1]))})"
    if kind == "range":
        return f"id BETWEEN {p[1]} AND {p[2]}"
    if kind == "part":
        return "p = '" + p[1].replace("'", "''") + "'"
    if kind == "str":
        return f"s = '{p[1]}'"
    return f"s >= '{p[1]}'"


def pred_match(p: List[Any], i: int, row: Row) -> bool:
    kind = p[0]
    if kind == "ids":
        return i in p[1]
    if kind == "range":
        return p[1] <= i <= p[2]
    if kind == "part":
        return row[0] == p[1]
    if kind == "str":
        return row[1] == p[1]
    return row[1] >= p[1]


def apply(op: Dict[str, Any], rows: Rows, outside: frozenset = frozenset()) -> Tuple[Rows, List[str]]:
    """``op`` evaluated on ``rows`` (ids in ``outside`` are beyond its predicates): the new rows and
    the anomalies the operation itself implies (an id inserted twice)."""
    out, bad = dict(rows), []
    kind = op["op"]

    def insert(i: int, row: Row) -> None:
        if i in out:
            bad.append(f"id {i} inserted while present")
        out[i] = row

    if kind in ("append", "app_append"):
        for i in op["ids"]:
            insert(i, make_row(i))
    elif kind == "delete":
        for i, r in rows.items():
            if i not in outside and pred_match(op["pred"], i, r):
                del out[i]
    elif kind == "update":
        for i, r in rows.items():
            if i not in outside and pred_match(op["pred"], i, r):
                out[i] = (r[0], r[1], r[2] + op["inc"])
    elif kind == "merge":
        for key, x in op["src"]:
            if key in rows and key not in outside:
                r = rows[key]
                out[key] = (r[0], r[1], x)
            else:
                p, s, _ = make_row(key)
                insert(key, (p, s, x))
    return out, bad


def touched(op: Dict[str, Any], rows: Rows) -> set:
    """Ids of ``rows`` an operation reads to change (its predicate's matches)."""
    if op["op"] in ("delete", "update"):
        return {i for i, r in rows.items() if pred_match(op["pred"], i, r)}
    if op["op"] == "merge":
        return {k for k, _ in op["src"] if k in rows}
    return set()


# -- the workload -----------------------------------------------------------------------------------


def create(where: Union[str, Target], cfg: Config) -> Table:
    tg = target(where)
    props = {"delta.enableDeletionVectors": "true"} if cfg.dvs else {}
    t = Table.create(tg.location, SCHEMA, partition_by=["p"] if cfg.partitioned else None, properties=props, storage_options=tg.storage_options)
    log = tg.log("setup.jsonl")
    for n in range(3):
        op = {"op": "append", "ids": list(range(n * 20, n * 20 + 20))}
        _attempt(t, log, f"setup.{n}", "setup", "Serializable", op)
    return t


def rows_table(ids: Sequence[int], xs: Optional[Sequence[int]] = None) -> pa.Table:
    made = [make_row(i) for i in ids]
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "p": [r[0] for r in made],
            "s": [r[1] for r in made],
            "x": pa.array(list(xs) if xs is not None else [r[2] for r in made], pa.int64()),
        },
        schema=SCHEMA,
    )


class _Log:
    """Attempt records of one writer, one JSON line each, flushed at once (a killed writer's
    last ``start`` line without an end is an attempt of unknown outcome)."""

    def __init__(self, path: str) -> None:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self.f = open(path, "a", buffering=1)

    def write(self, rec: Dict[str, Any]) -> None:
        self.f.write(json.dumps(rec) + "\n")
        self.f.flush()


def choose(rng: random.Random, known: List[int], next_id: Callable[[], int], cfg: Config, shared_app: bool = False) -> Dict[str, Any]:
    kinds = ["append", "delete", "update", "merge", "optimize", "props", "app_append"]
    weights = [4, 3, 3, 2, 2, 0.2, 1]
    kind = rng.choices(kinds, weights)[0]
    if kind in ("delete", "update", "merge") and not known:
        kind = "append"
    if kind == "append":
        return {"op": "append", "ids": [next_id() for _ in range(rng.randint(1, 5))]}
    if kind == "app_append":
        return {"op": "app_append", "app": SHARED_APP if shared_app else None, "ids": [next_id() for _ in range(2)]}
    if kind in ("delete", "update"):
        op: Dict[str, Any] = {"op": kind, "pred": _pred(rng, known)}
        if kind == "update":
            op["inc"] = rng.randint(1, 9)
        return op
    if kind == "merge":
        src = [(i, rng.randint(100, 999)) for i in sorted(set(rng.sample(known, min(len(known), rng.randint(1, 3)))))]
        src += [(next_id(), rng.randint(100, 999)) for _ in range(rng.randint(0, 2))]
        return {"op": "merge", "src": src}
    if kind == "optimize":
        return {"op": "optimize", "where": f"p = '{rng.choice(PARTS)}'" if cfg.partitioned and rng.random() < 0.5 else None}
    return {"op": "props"}


def _pred(rng: random.Random, known: List[int]) -> List[Any]:
    kind = rng.choices(["ids", "range", "part", "str", "str_ge"], [5, 3, 1, 2, 0.3])[0]
    a = rng.choice(known)
    if kind == "ids":
        return ["ids", sorted(set(rng.sample(known, min(len(known), rng.randint(1, 3)))))]
    if kind == "range":
        return ["range", a, a + rng.choice([0, 3, 40])]
    if kind == "part":
        return ["part", rng.choice(PARTS)]
    if kind == "str":
        return ["str", f"{LONG}{a:012d}"]
    return ["str_ge", f"{LONG}{max(known) - 2:012d}"]


def _stage(t: Table, op: Dict[str, Any], level: str, attempt: str) -> Any:
    txn = t.begin(isolation_level=level, max_attempts=1000, time_budget=120)
    kind = op["op"]
    if kind == "append":
        txn.append(rows_table(op["ids"]))
    elif kind == "app_append":
        app = op["app"] or f"stress-{attempt.split('.')[0]}"
        op["app"] = app
        op["app_version"] = txn.app_version(app) + 1
        txn.set_app_version(app, op["app_version"])
        txn.append(rows_table(op["ids"]))
    elif kind == "delete":
        txn.delete(pred_sql(op["pred"]))
    elif kind == "update":
        txn.update(pred_sql(op["pred"]), {"x": f"x + {op['inc']}"})
    elif kind == "merge":
        ids = [k for k, _ in op["src"]]
        txn.merge(rows_table(ids, [x for _, x in op["src"]]), "t.id = s.id", when_matched_update={"x": "s.x"}, when_not_matched_insert=True)
    elif kind == "optimize":
        txn.optimize(where=op["where"])
    elif kind == "props":
        op["key"] = f"stress.p{attempt}"
        txn.set_properties({op["key"]: "1"})
        txn.stage_operation("SET TBLPROPERTIES", {})
    return txn


def _commit(txn: Any, rec: Dict[str, Any], log: _Log) -> None:
    params = txn.staged_parameters
    params[ATTEMPT_KEY] = rec["attempt"]
    try:
        r = txn.commit(txn.staged_operation or "WRITE", params)
        # An operation that changed nothing writes no commit (docs/guide.md "Policies").
        rec.update(outcome="committed" if r.committed else "nothing", version=r.version)
    except ex.DeltaConcurrentModificationException as e:
        rec.update(outcome="conflict", error=type(e).__name__, winning_version=e.winning_version, message=str(e)[:400])
    except ex.DeltaOccError as e:
        rec.update(outcome="error", error=type(e).__name__, message=str(e)[:400])
    log.write(rec)


def _begin(t: Table, log: _Log, attempt: str, worker: str, level: str, op: Dict[str, Any]) -> Optional[Tuple[Any, Dict[str, Any]]]:
    """Stage ``op`` and log the start; None (logged as an error) when staging itself fails."""
    try:
        txn = _stage(t, op, level, attempt)
    except ex.DeltaOccError as e:
        log.write({"attempt": attempt, "worker": worker, "level": level, "op": op, "outcome": "error", "error": type(e).__name__, "message": str(e)[:400]})
        return None
    rec = {"attempt": attempt, "worker": worker, "level": level, "op": op, "read_version": txn.read_version}
    log.write({**rec, "outcome": "started"})
    return txn, rec


def _attempt(t: Table, log: _Log, attempt: str, worker: str, level: str, op: Dict[str, Any]) -> None:
    staged = _begin(t, log, attempt, worker, level, op)
    if staged is not None:
        _commit(*staged, log)


def _ids_now(t: Table) -> List[int]:
    return t.snapshot().to_pyarrow(columns=["id"]).column("id").to_pylist()


def run_writer(tg: Target, cfg_json: str, worker: int, gen: int, n: int, faults: str, table: Optional[Table] = None) -> None:
    """One writer: ``n`` transactions. Top level so that spawn can start it."""
    if faults:
        os.environ["DELTA_OCC_FAULTS"] = faults
    cfg = Config(**json.loads(cfg_json))
    rng = random.Random(f"{cfg.seed}-{worker}-{gen}")
    t = table if table is not None else tg.table()
    log = tg.log(f"w{worker}.g{gen}.jsonl")
    counter = iter(range(10**6))

    def next_id() -> int:
        return ((worker + 1) * 1000 + gen) * 10**6 + next(counter)

    known: List[int] = []
    for a in range(n):
        if a % 5 == 0:
            known = _ids_now(t)
        op = choose(rng, known, next_id, cfg)
        _attempt(t, log, f"{worker}.{gen}.{a}", f"w{worker}", cfg.levels[(worker + a) % len(cfg.levels)], op)


def run_schedule(where: Union[str, Target], cfg: Config) -> None:
    """Rounds of K staged transactions on one table, committed in a random order."""
    tg = target(where)
    rng = random.Random(f"{cfg.seed}-schedule")
    t = tg.table()
    log = tg.log("schedule.jsonl")
    counter = iter(range(10**6))

    def next_id() -> int:
        return 999_000 * 10**6 + next(counter)

    for r in range(cfg.rounds):
        known = _ids_now(t)
        staged = []
        for j in range(cfg.k):
            op = choose(rng, known, next_id, cfg, shared_app=True)
            if rng.random() < 0.4:  # chains of compactions and DML are the point of the schedule
                op = {"op": "optimize", "where": None} if rng.random() < 0.5 or not known else {"op": "delete", "pred": _pred(rng, known)}
            one = _begin(t, log, f"s.{r}.{j}", "schedule", cfg.levels[(r + j) % len(cfg.levels)], op)
            if one is not None:
                staged.append(one)
        rng.shuffle(staged)
        for txn, rec in staged:
            _commit(txn, rec, log)


def interleave(where: Union[str, Target], ops: Sequence[Tuple[Dict[str, Any], str]], order: Sequence[int], tag: str = "i") -> List[Dict[str, Any]]:
    """Stage ``(op, isolation level)`` each in its own transaction on one snapshot, then commit
    them in ``order``: one deterministic interleaving, logged like any other attempt."""
    tg = target(where)
    t = tg.table()
    log = tg.log(f"{tag}.jsonl")
    staged = []
    for j, (op, level) in enumerate(ops):
        op = json.loads(json.dumps(op))  # staging records what it chose (app version, property key)
        txn = _stage(t, op, level, f"{tag}.{j}")  # a staging error is the caller's
        staged.append((txn, {"attempt": f"{tag}.{j}", "worker": tag, "level": level, "op": op, "read_version": txn.read_version}))
        log.write({**staged[-1][1], "outcome": "started"})
    for j in order:
        _commit(*staged[j], log)
    return [rec for _, rec in staged]


def run(
    path: str,
    cfg: Config,
    progress: Optional[Callable[[str], None]] = None,
    *,
    storage_options: Optional[Mapping[str, str]] = None,
    log_dir: Optional[str] = None,
) -> Dict[str, Any]:
    """Create the table at ``path`` (a new directory, or a new object-store location with
    ``storage_options``), run the writers, the killer and the scheduler, then check the history.
    Returns the checker's summary (``log_dir``: where the attempt logs went)."""
    if cfg.faults and not _core.TEST_HOOKS:
        raise ex.InvalidArgumentError(f"faults={cfg.faults!r} needs a test build of delta_occ (cargo feature test-hooks); this build injects no faults")
    t0 = time.monotonic()
    tg = target(path, storage_options, log_dir)
    create(tg, cfg)
    cfg_json = json.dumps(dataclasses.asdict(cfg))
    shared = tg.table()
    procs: Dict[int, Tuple[Any, int]] = {}
    threads = []
    done = {w: 0 for w in range(cfg.writers)}
    for w in range(cfg.writers):
        mode = cfg.modes[w % len(cfg.modes)]
        if mode == "thread":
            th = threading.Thread(target=run_writer, args=(tg, cfg_json, w, 0, cfg.transactions, "", shared))
            th.start()
            threads.append(th)
        else:
            p = mp.get_context(mode).Process(target=run_writer, args=(tg, cfg_json, w, 0, cfg.transactions, cfg.faults))  # type: ignore[attr-defined]
            p.start()
            procs[w] = (p, 0)
    rng = random.Random(f"{cfg.seed}-killer")
    kills = 0
    while procs:
        time.sleep(cfg.kill_every or 0.2)
        for w, (p, gen) in list(procs.items()):
            if not p.is_alive():
                done[w] += _ended(tg, w, gen)
                del procs[w]
        if cfg.kill_every and procs:
            w = rng.choice(sorted(procs))
            p, gen = procs[w]
            if p.is_alive():
                os.kill(p.pid, signal.SIGKILL)
                p.join()
                kills += 1
                done[w] += _ended(tg, w, gen) + 1
                left = cfg.transactions - done[w]
                if left > 0:
                    mode = cfg.modes[w % len(cfg.modes)]
                    q = mp.get_context(mode).Process(target=run_writer, args=(tg, cfg_json, w, gen + 1, left, cfg.faults))  # type: ignore[attr-defined]
                    q.start()
                    procs[w] = (q, gen + 1)
                else:
                    del procs[w]
        if progress:
            progress(f"writers running: {len(procs) + sum(th.is_alive() for th in threads)}")
    for th in threads:
        th.join()
    if cfg.rounds:
        run_schedule(tg, cfg)
    summary = check(tg, dv_table=cfg.dvs)
    summary["log_dir"] = tg.log_dir
    summary["kills"] = kills
    summary["seconds"] = round(time.monotonic() - t0, 2)
    summary["config"] = dataclasses.asdict(cfg)
    return summary


def _ended(tg: Target, w: int, gen: int) -> int:
    try:
        with open(os.path.join(tg.log_dir, f"w{w}.g{gen}.jsonl")) as f:
            return sum(1 for line in f if '"outcome": "started"' not in line)
    except FileNotFoundError:
        return 0


# -- the checker ------------------------------------------------------------------------------------


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


def check(where: Union[str, Target], dv_table: bool = True) -> Dict[str, Any]:
    """Judge the logged attempts against the table's history (see the module docstring)."""
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
        outside: frozenset = frozenset()
        if logged["level"] == "WriteSerializable" and "read_version" in logged:
            outside = frozenset().union(*[blind_ids.get(u, set()) for u in range(logged["read_version"] + 1, v)])
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

    storage = t._h.storage
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


__all__ = ["Config", "Target", "target", "run", "check", "run_schedule", "apply", "ATTEMPT_KEY"]
