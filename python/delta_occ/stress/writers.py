"""The writers of ``delta-occ stress``: processes started with fork and with spawn (one killed
now and then, and restarted) and threads sharing one ``Table``, each running random transactions
and logging every attempt; a deterministic scheduler that stages K transactions at a time and
commits them in random orders; and :func:`run`, which runs them all and hands the table to the
history checker."""

from __future__ import annotations

import dataclasses
import json
import multiprocessing as mp
import os
import random
import signal
import threading
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from .. import _core, commit_note
from .. import exceptions as ex
from ..table import Table
from .history import check
from .workload import ATTEMPT_KEY, SCHEMA, AttemptLog, Config, Target, choose, random_pred, stage, target


def create(where: Union[str, Target], cfg: Config) -> Table:
    tg = target(where)
    props = {"delta.enableDeletionVectors": "true"} if cfg.dvs else {}
    if cfg.row_tracking:
        props["delta.enableRowTracking"] = "true"
    t = Table.create(tg.location, SCHEMA, partition_by=["p"] if cfg.partitioned else None, properties=props, storage_options=tg.storage_options)
    log = tg.log("setup.jsonl")
    for n in range(3):
        op = {"op": "append", "ids": list(range(n * 20, n * 20 + 20))}
        attempt(t, log, f"setup.{n}", "setup", "Serializable", op)
    return t


def commit(txn: Any, rec: Dict[str, Any], log: AttemptLog) -> None:
    params = txn.staged_parameters
    params[ATTEMPT_KEY] = rec["attempt"]
    try:
        r = txn.commit(txn.staged_operation or "WRITE", params)
        # An operation that changed nothing writes no commit (docs/guide.md "Policies").
        rec.update(outcome="committed" if r.committed else "nothing", version=r.version, attempts=r.attempts)
    except ex.DeltaConcurrentModificationException as e:
        rec.update(outcome="conflict", error=type(e).__name__, winning_version=e.winning_version, rule=e.rule, message=str(e)[:400])
    except ex.DeltaOccError as e:
        rec.update(outcome="error", error=type(e).__name__, message=str(e)[:400])
    rec["ended_at"] = commit_note.now_ms()
    log.write(rec)


def begin(t: Table, log: AttemptLog, attempt: str, worker: str, level: str, op: Dict[str, Any]) -> Optional[Tuple[Any, Dict[str, Any]]]:
    """Stage ``op`` and log the start; None (logged as an error) when staging itself fails."""
    started = commit_note.now_ms()
    try:
        txn = stage(t, op, level, attempt)
    except ex.DeltaOccError as e:
        log.write({"attempt": attempt, "worker": worker, "level": level, "op": op, "outcome": "error", "error": type(e).__name__, "message": str(e)[:400]})
        return None
    rec = {"attempt": attempt, "worker": worker, "level": level, "op": op, "read_version": txn.read_version, **_when_who(txn, started)}
    log.write({**rec, "outcome": "started"})
    return txn, rec


def _when_who(txn: Any, started: int) -> Dict[str, Any]:
    """When an attempt began and who made it (the writer note its commit carries), so that a
    failed attempt can be drawn in its writer's lane (``delta-occ stress --timeline``)."""
    return {"started_at": started, "writer": txn.note}


def attempt(t: Table, log: AttemptLog, attempt: str, worker: str, level: str, op: Dict[str, Any]) -> None:
    staged = begin(t, log, attempt, worker, level, op)
    if staged is not None:
        commit(*staged, log)


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
        attempt(t, log, f"{worker}.{gen}.{a}", f"w{worker}", cfg.levels[(worker + a) % len(cfg.levels)], op)


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
                op = {"op": "optimize", "where": None} if rng.random() < 0.5 or not known else {"op": "delete", "pred": random_pred(rng, known)}
            one = begin(t, log, f"s.{r}.{j}", "schedule", cfg.levels[(r + j) % len(cfg.levels)], op)
            if one is not None:
                staged.append(one)
        rng.shuffle(staged)
        for txn, rec in staged:
            commit(txn, rec, log)


def interleave(where: Union[str, Target], ops: Sequence[Tuple[Dict[str, Any], str]], order: Sequence[int], tag: str = "i") -> List[Dict[str, Any]]:
    """Stage ``(op, isolation level)`` each in its own transaction on one snapshot, then commit
    them in ``order``: one deterministic interleaving, logged like any other attempt."""
    tg = target(where)
    t = tg.table()
    log = tg.log(f"{tag}.jsonl")
    staged = []
    for j, (op, level) in enumerate(ops):
        op = json.loads(json.dumps(op))  # staging records what it chose (app version, property key)
        started = commit_note.now_ms()
        txn = stage(t, op, level, f"{tag}.{j}")  # a staging error is the caller's
        staged.append((txn, {"attempt": f"{tag}.{j}", "worker": tag, "level": level, "op": op, "read_version": txn.read_version, **_when_who(txn, started)}))
        log.write({**staged[-1][1], "outcome": "started"})
    for j in order:
        commit(*staged[j], log)
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
    summary = check(tg, dv_table=cfg.dvs, row_tracking=cfg.row_tracking)
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
