"""delta-spark as a peer: its own venv, its JARs, and one long-lived driver process per test module.

PyPI's delta-spark 4.4.1 pins ``pyspark<=4.2.0`` while the main venv has pyspark 4.3, so the
delta-spark side runs in a separate venv, ``~/.cache/delta-occ/deltaspark-venv`` (override with
``$DELTA_OCC_DELTASPARK_VENV``), made on first use with pyspark==4.2.0 only (the delta-spark Python
package is not needed: every operation is Spark SQL through Delta's session extension). Maven
Central has no 4.4.1 JARs, so the JARs are io.delta:delta-spark_4.2_2.13:4.4.0 and its closure
(servers/jars.py, cached in ~/.cache/delta-occ/jars, SHA-1 checked). The venv is built under a
file lock into a temporary directory and renamed into place only when complete.

    with DeltaSpark.start(tmp_path / "gate") as ds:
        ds.sql(f"CREATE TABLE delta.`{path}` (id BIGINT) USING delta")
        ds.rows(path)   # {"columns": [...], "rows": [...]}

delta_occ is never imported over there: what crosses is paths, SQL text and JSON rows.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pathlib
import shutil
import subprocess
import sys
import threading
import time
from typing import Any, Dict, Iterator, List, Optional

from servers.jars import delta_spark_jars

PYSPARK = "pyspark==4.2.0"
HERE = pathlib.Path(__file__).resolve().parent
DRIVER = HERE / "deltaspark_driver.py"


def venv_dir() -> pathlib.Path:
    env = os.environ.get("DELTA_OCC_DELTASPARK_VENV")
    return pathlib.Path(env) if env else pathlib.Path.home() / ".cache" / "delta-occ" / "deltaspark-venv"


def venv_python() -> pathlib.Path:
    """The delta-spark venv's interpreter, creating the venv on first use (about 1-2 minutes: the
    pyspark 4.2.0 wheel is ~430 MB)."""
    target = venv_dir()
    python = target / "bin" / "python"
    if (target / ".complete").is_file():
        return python
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / ".deltaspark-venv.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / ".complete").is_file():
            return python
        part = target.with_name(target.name + ".part")
        shutil.rmtree(part, ignore_errors=True)
        shutil.rmtree(target, ignore_errors=True)
        # the venv is created at its final path's sibling and renamed: only bin/python is used
        # (by path), so the scripts' stale shebangs do not matter
        base = getattr(sys, "_base_executable", sys.executable)
        subprocess.run([base, "-m", "venv", str(part)], check=True)
        subprocess.run([str(part / "bin" / "python"), "-m", "pip", "install", "--quiet", PYSPARK],
                       check=True)
        os.replace(part, target)
        (target / ".complete").write_text(PYSPARK + "\n")
    return python


class DeltaSparkError(RuntimeError):
    pass


class DeltaSpark:
    """A client of one deltaspark_driver.py process (one SparkSession with delta-spark)."""

    def __init__(self, proc: subprocess.Popen, gate: pathlib.Path, info: Dict[str, Any]) -> None:
        self.proc = proc
        self.gate = gate
        self.info = info
        self._lock = threading.Lock()

    @classmethod
    @contextlib.contextmanager
    def start(cls, gate: pathlib.Path) -> Iterator["DeltaSpark"]:
        python = venv_python()
        jars = delta_spark_jars()
        gate.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)
        env.pop("PYSPARK_PYTHON", None)
        env.pop("PYSPARK_DRIVER_PYTHON", None)
        env.pop("SPARK_HOME", None)
        env["DELTA_OCC_GATE"] = str(gate)
        env["PYSPARK_PYTHON"] = str(python)
        env.pop("PYSPARK_SUBMIT_ARGS", None)
        log = open(gate / "driver.stderr", "w")
        proc = subprocess.Popen([str(python), str(DRIVER), json.dumps(jars)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=log, text=True, env=env, cwd=str(gate))
        try:
            info = cls._read(proc, gate)
            if not info.get("ok"):
                raise DeltaSparkError(f"delta-spark driver did not start: {info}")
            yield cls(proc, gate, info)
        finally:
            if proc.stdin:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log.close()

    @staticmethod
    def _read(proc: subprocess.Popen, gate: pathlib.Path) -> Dict[str, Any]:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("@@"):
                return json.loads(line[2:])
        tail = (gate / "driver.stderr").read_text()[-3000:]
        raise DeltaSparkError(f"delta-spark driver exited (rc={proc.wait()}): {tail}")

    def call(self, job: Dict[str, Any]) -> Dict[str, Any]:
        with self._lock:
            assert self.proc.stdin is not None
            self.proc.stdin.write(json.dumps(job) + "\n")
            self.proc.stdin.flush()
            return self._read(self.proc, self.gate)

    def sql(self, *sqls: str) -> Dict[str, Any]:
        """Run statements; raise DeltaSparkError when one fails."""
        out = self.call({"op": "sql", "sqls": list(sqls)})
        if not out["ok"]:
            raise DeltaSparkError(json.dumps(out)[:3000])
        return out

    def try_sql(self, *sqls: str) -> Dict[str, Any]:
        return self.call({"op": "sql", "sqls": list(sqls)})

    def rows(
        self, path: str, columns: Optional[List[str]] = None, version: Optional[int] = None, options: Optional[Dict[str, Any]] = None
    ) -> List[List[Any]]:
        out = self.call({"op": "rows", "path": str(path), "columns": columns, "version": version, "options": options})
        if not out["ok"]:
            raise DeltaSparkError(json.dumps(out)[:3000])
        return out["rows"]

    # ------------------------------------------------------------------ staged operations

    def start_blocked(self, name: str, sqls: List[str]) -> None:
        """Run sqls in a driver thread; one of them is expected to call docc_block('<name>', ...)."""
        out = self.call({"op": "start", "name": name, "sqls": sqls})
        assert out["ok"], out

    def wait_reached(self, name: str, timeout: float = 120.0) -> None:
        reached = self.gate / f"{name}.reached"
        deadline = time.monotonic() + timeout
        while not reached.exists():
            if time.monotonic() > deadline:
                raise DeltaSparkError(f"delta-spark job {name} never reached its gate")
            time.sleep(0.02)

    def release(self, name: str) -> None:
        (self.gate / f"{name}.go").touch()

    def wait(self, name: str, timeout: float = 300.0) -> Dict[str, Any]:
        return self.call({"op": "wait", "name": name, "timeout": timeout})
