"""The workload of ``delta-occ stress``: where it runs, its configuration, the random operations
writers choose (appends of rows with globally unique ids, DELETE / UPDATE by ids, id ranges,
partitions and long strings, MERGE upserts, OPTIMIZE, property changes and idempotent
application-id writes), each staged on a transaction, and the attempt log every writer keeps."""

from __future__ import annotations

import dataclasses
import json
import os
import random
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

import pyarrow as pa

from ..table import Table
from .model import LONG, PARTS, make_row

#: The commit parameter naming the logged attempt a commit belongs to.
ATTEMPT_KEY = "stress.attempt"
SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("s", pa.string()), ("x", pa.int64())])
SHARED_APP = "stress-shared-app"


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
    #: A table with row tracking: half the OPTIMIZEs are Z-orders, then the row-id checks.
    row_tracking: bool = False


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

    def log(self, name: str) -> "AttemptLog":
        return AttemptLog(os.path.join(self.log_dir, name))


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


class AttemptLog:
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
        op: Dict[str, Any] = {"op": kind, "pred": random_pred(rng, known)}
        if kind == "update":
            op["inc"] = rng.randint(1, 9)
        return op
    if kind == "merge":
        src = [(i, rng.randint(100, 999)) for i in sorted(set(rng.sample(known, min(len(known), rng.randint(1, 3)))))]
        src += [(next_id(), rng.randint(100, 999)) for _ in range(rng.randint(0, 2))]
        return {"op": "merge", "src": src}
    if kind == "optimize":
        op = {"op": "optimize", "where": f"p = '{rng.choice(PARTS)}'" if cfg.partitioned and rng.random() < 0.5 else None}
        if cfg.row_tracking and rng.random() < 0.5:
            # A Z-order records no provenance: DML that loses to it follows its rows by id.
            op["zorder"] = True
        return op
    return {"op": "props"}


def random_pred(rng: random.Random, known: List[int]) -> List[Any]:
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


def stage(t: Table, op: Dict[str, Any], level: str, attempt: str) -> Any:
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
        txn.optimize(where=op["where"], zorder_by=["id"] if op.get("zorder") else None)
    elif kind == "props":
        op["key"] = f"stress.p{attempt}"
        txn.set_properties({op["key"]: "1"})
        txn.stage_operation("SET TBLPROPERTIES", {})
    return txn
