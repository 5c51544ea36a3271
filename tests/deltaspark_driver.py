"""The delta-spark side of the interop tier; runs in its own venv (pyspark 4.2.0), never imports
delta_occ. Started by tests/deltaspark.py as ``python deltaspark_driver.py JARS_JSON``; reads one
JSON job per line on stdin, answers one JSON line per job on stdout (prefixed ``@@`` so Spark's
own noise on stdout cannot be mistaken for an answer). One SparkSession for the whole process.

Jobs (``{"op": ..., ...}``):

* ``sql``: run statements (``sqls``: list) in order; answer ``{"ok": true}`` or the error.
* ``rows``: ``SELECT * FROM delta.`path```, optionally ``version`` and reader ``options`` (such
  as ``readChangeFeed``); rows as lists in ``columns``
  order, sorted by the driver (the caller compares sets).
* ``start``: run ``sqls`` in a background thread named ``name``; a statement may call the Python
  UDF ``docc_block(token, value)`` (returns true) which, on its first call for ``token``, touches
  ``<gate>/<token>.reached`` and waits until ``<gate>/<token>.go`` exists. Answer at once.
* ``wait``: join thread ``name``; answer its outcome (ok, or the exception's class name, Delta's
  error class and message).
* ``race``: a loop, in a thread, of appends and deletes for ``seconds`` (see _race); ``wait`` it.
"""

from __future__ import annotations

import json
import os
import pathlib
import random
import sys
import threading
import time
import traceback
from typing import Any, Dict, List


def _session(jars: List[str]) -> Any:
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master("local[2]")
        .appName("delta-occ-deltaspark")
        .config("spark.jars", ",".join(jars))
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        .config("spark.sql.shuffle.partitions", "1")
        # Delta's state reconstruction shuffles into 50 partitions by default: 1 for tiny tables
        .config("spark.databricks.delta.snapshotPartitions", "1")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "1g")
        .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC")
        # no auto-compaction / optimize-write surprises: every commit is the one the test asked for
        .config("spark.databricks.delta.autoCompact.enabled", "false")
        .config("spark.databricks.delta.optimizeWrite.enabled", "false")
        .config("spark.sql.execution.arrow.pyspark.enabled", "false")
    )
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


GATE = pathlib.Path(os.environ.get("DELTA_OCC_GATE", "/tmp"))


def docc_block(token: str, value: Any) -> bool:
    """Blocks the first call per token (per process: executors are Python worker processes, so
    the marker files are the shared state) until the test says go."""
    reached = GATE / f"{token}.reached"
    go = GATE / f"{token}.go"
    if not go.exists():
        reached.touch()
        deadline = time.monotonic() + 120
        while not go.exists():
            if time.monotonic() > deadline:
                raise TimeoutError(f"gate {token} never opened")
            time.sleep(0.02)
    return True


def _error(e: BaseException) -> Dict[str, Any]:
    cls = type(e).__name__
    error_class = None
    java_class = None
    try:
        error_class = e.getCondition()  # type: ignore[attr-defined]
    except Exception:
        pass
    text = str(e)
    origin = getattr(e, "_origin", None)  # pyspark's captured JVM exception
    if origin is not None:
        try:
            java_class = origin.getClass().getName()
        except Exception:
            java_class = None
    # py4j / Spark's Python wrappers keep the JVM exception's class name in the message text
    for line in ([] if java_class else text.splitlines()):
        line = line.strip()
        if line.startswith(("io.delta.exceptions.", "org.apache.spark.sql.delta.")) and ":" in line:
            java_class = line.split(":", 1)[0]
            break
    if java_class is None:  # noqa: SIM102
        for token in text.replace("(", " ").replace(")", " ").split():
            if token.startswith("io.delta.exceptions."):
                java_class = token.rstrip(":")
                break
    return {"ok": False, "python_class": cls, "error_class": error_class, "java_class": java_class,
            "message": text[:4000]}


def _jsonable(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if v == v else "NaN"
    if isinstance(v, (bytes, bytearray)):
        return v.hex()
    if hasattr(v, "asDict"):
        return {k: _jsonable(x) for k, x in v.asDict().items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    return str(v)


class Driver:
    def __init__(self, jars: List[str]) -> None:
        self.spark = _session(jars)
        from pyspark.sql.types import BooleanType

        self.spark.udf.register("docc_block", docc_block, BooleanType())
        self.threads: Dict[str, threading.Thread] = {}
        self.results: Dict[str, Any] = {}

    def run_sqls(self, sqls: List[str]) -> Dict[str, Any]:
        try:
            out = None
            for s in sqls:
                out = self.spark.sql(s).collect()
            return {"ok": True, "last": [_jsonable(list(r)) for r in out or []]}
        except Exception as e:  # noqa: BLE001 - reported to the test
            return _error(e)

    def job(self, job: Dict[str, Any]) -> Dict[str, Any]:
        op = job["op"]
        if op == "sql":
            return self.run_sqls(job["sqls"])
        if op == "rows":
            reader = self.spark.read.format("delta")
            if job.get("version") is not None:
                reader = reader.option("versionAsOf", job["version"])
            for key, value in (job.get("options") or {}).items():
                reader = reader.option(key, str(value))
            df = reader.load(job["path"])
            cols = job.get("columns") or df.columns
            rows = [_jsonable([r[c] for c in cols]) for r in df.select(*cols).collect()]
            rows.sort(key=lambda r: json.dumps(r))
            return {"ok": True, "columns": cols, "rows": rows}
        if op == "start":
            name = job["name"]

            def target(sqls: List[str] = job["sqls"]) -> None:
                self.results[name] = self.run_sqls(sqls)

            t = threading.Thread(target=target, name=name, daemon=True)
            self.threads[name] = t
            t.start()
            return {"ok": True}
        if op == "race":
            name = job["name"]

            def race_target(j: Dict[str, Any] = job) -> None:
                try:
                    self.results[name] = _race(self, j)
                except Exception as e:  # noqa: BLE001
                    self.results[name] = _error(e)

            t = threading.Thread(target=race_target, name=name, daemon=True)
            self.threads[name] = t
            t.start()
            return {"ok": True}
        if op == "wait":
            t = self.threads[job["name"]]
            t.join(job.get("timeout", 300))
            if t.is_alive():
                return {"ok": False, "running": True, "python_class": "Timeout", "message": "thread still running"}
            del self.threads[job["name"]]
            return self.results.pop(job["name"])
        if op == "versions":
            return {"ok": True, "spark": self.spark.version}
        raise ValueError(f"unknown op {op!r}")


def _race(d: Driver, job: Dict[str, Any]) -> Dict[str, Any]:
    """Append batches of fresh ids (ids = base + k, k counting up) and delete single ids that the
    caller listed as deletable, all in partition side = 'spark' of a table (id, who, side), in a loop for `seconds` (and until each kind committed `min_each`
    times: a JVM on a busy machine may need most of the time to warm up); each statement retried on a Delta
    concurrency error until it commits. The log: every committed append's ids, every committed
    delete's id, and how many conflicts were retried."""
    path = job["path"]
    base = job["base"]
    deletable = list(job["deletable"])
    rng = random.Random(job.get("seed", 1))
    end = time.monotonic() + job["seconds"]
    appended: List[List[int]] = []
    deleted: List[int] = []
    conflicts: Dict[str, int] = {}
    k = 0
    least = job.get("min_each", 3)
    give_up = time.monotonic() + job.get("give_up", max(10 * job["seconds"], 300))
    last_error = ""
    while time.monotonic() < end or len(appended) < least or len(deleted) < least:
        if time.monotonic() > give_up:
            raise RuntimeError(f"race: only {len(appended)} appends and {len(deleted)} deletes committed; "
                               f"conflicts retried: {conflicts}; last: {last_error}")
        if deletable and (rng.random() < 0.4 or len(deleted) < least <= len(appended)):
            ident = deletable.pop(rng.randrange(len(deletable)))
            sql = f"DELETE FROM delta.`{path}` WHERE side = 'spark' AND id = {ident}"
            entry: Any = ident
            log: List[Any] = deleted
        else:
            ids = [base + k + i for i in range(3)]
            k += 3
            values = ", ".join(f"({i}, 'spark', 'spark')" for i in ids)
            sql = f"INSERT INTO delta.`{path}` (id, who, side) VALUES {values}"
            entry, log = ids, appended
        for _attempt in range(50):
            began = time.monotonic()
            try:
                d.spark.sql(sql).collect()
                log.append(entry)
                break
            except Exception as e:  # noqa: BLE001
                err = _error(e)
                name = err["java_class"] or err["error_class"] or err["python_class"]
                if "Concurrent" not in str(name) and "CONCURRENT" not in str(err["error_class"]):
                    raise
                conflicts[str(name)] = conflicts.get(str(name), 0) + 1
                last_error = f"after {time.monotonic() - began:.1f} s: " + err["message"][:1500]
                time.sleep(rng.random() * 0.05)
        else:
            raise RuntimeError(f"{sql}: still conflicting after 50 attempts; conflicts retried: {conflicts}; "
                               f"last: {last_error}")
    return {"ok": True, "appended": appended, "deleted": deleted, "conflicts": conflicts}


def main() -> None:
    jars = json.loads(sys.argv[1])
    out = sys.stdout
    # Spark / py4j may print on stdout; our answers are the lines starting with @@
    driver = Driver(jars)
    out.write("@@" + json.dumps({"ok": True, "ready": True, "spark": driver.spark.version}) + "\n")
    out.flush()
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            answer = driver.job(json.loads(line))
        except Exception as e:  # noqa: BLE001
            answer = _error(e)
            answer["traceback"] = traceback.format_exc()[-3000:]
        out.write("@@" + json.dumps(answer) + "\n")
        out.flush()
    driver.spark.stop()


if __name__ == "__main__":
    main()
