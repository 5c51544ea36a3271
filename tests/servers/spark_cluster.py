"""A Spark standalone cluster (one master, one worker) on loopback, started with pyspark's launcher.

Unlike ``local[N]``, executors here are separate JVMs (children of the worker) with their own
Python workers, so code that runs on executors (writing parquet, Hadoop filesystems, classpath)
is exercised as on a real cluster, with the driver in this Python process.

    from servers.jars import s3a_jars, hadoop_s3a_conf
    from servers.spark_cluster import SparkCluster

    with SparkCluster() as cluster:                     # 8-25 s: master + worker registered
        spark = cluster.session("app", hadoop_s3a_conf(endpoint, "k", "s"), jars=s3a_jars())
        spark.range(3).write.parquet("s3a://bucket/out")
    # the session, the worker (and its executors, Python workers) and the master are gone

Everything runs from ``<pyspark>/bin/spark-class`` with SPARK_HOME = pyspark's directory, an empty
SPARK_CONF_DIR, SPARK_LOCAL_IP=127.0.0.1, free ports picked at start, logs and the worker's work
dir in one temp dir (``cluster.log_dir``; kept and printed when start-up fails). Each daemon runs in
its own process group; ``stop()`` SIGTERMs then SIGKILLs the groups (executors and their Python
workers are in the worker's group) and deletes the temp dir.

Python workers are impossible on this cluster: PYSPARK_PYTHON (the daemons' environment, which
executors inherit, and the driver's, read by its SparkContext), ``spark.pyspark.python`` and
``spark.executorEnv.PYSPARK_PYTHON`` point at ``no_python_workers()``, a program that prints
``SENTINEL_MESSAGE`` and exits 1. An RDD lambda or a Python UDF fails its task with that message;
delta_occ never needs Python on executors, so its jobs pass. The driver is this Python process.

One JVM per Python process: pyspark starts its driver JVM (the py4j gateway) with the conf of the
*first* SparkContext of the process and reuses it afterwards. ``spark.jars`` given later is still
shipped to executors, but the driver's classpath is fixed, so a later s3a:// session in a process
whose first session lacked the JARs fails on the driver with "ClassNotFoundException: Class
org.apache.hadoop.fs.s3a.S3AFileSystem not found". ``session()`` therefore shuts that gateway
down and starts a fresh driver JVM (``restart_driver_jvm()``) when JARs are asked for that the
running driver JVM was not started with; ``new_jvm=True/False`` forces the choice.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from typing import Dict, Iterable, List, Optional

from ._process import die_with_parent, free_port

START_TIMEOUT = 90.0
#: What the sentinel prints (stderr) before exiting 1: tests look for it in task failures.
SENTINEL_MESSAGE = "delta-occ test sentinel: no Python worker may start on a Spark executor"


def no_python_workers(directory: "os.PathLike[str] | str") -> str:
    """Write the sentinel program into ``directory`` and return its path: a shell script that
    prints ``SENTINEL_MESSAGE`` and exits 1, whatever it is asked to run (a Python worker's
    ``-m pyspark.daemon`` included)."""
    path = pathlib.Path(directory) / "no-python-workers"
    path.write_text(f"#!/bin/sh\necho '{SENTINEL_MESSAGE}' >&2\nexit 1\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(path)


def pyspark_home() -> pathlib.Path:
    import pyspark

    return pathlib.Path(pyspark.__file__).resolve().parent


def _tail(path: pathlib.Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


class SparkCluster:
    def __init__(
        self,
        worker_cores: int = 1,
        worker_memory: str = "1g",
        daemon_memory: str = "256m",
        keep_logs: bool = False,
        start_timeout: float = START_TIMEOUT,
    ) -> None:
        self.worker_cores = worker_cores
        self.worker_memory = worker_memory
        self.daemon_memory = daemon_memory
        self.keep_logs = keep_logs
        self.start_timeout = start_timeout
        self.host = "127.0.0.1"
        self.tmp: Optional[pathlib.Path] = None
        self.master_port = self.master_ui_port = self.worker_ui_port = 0
        self._procs: Dict[str, subprocess.Popen] = {}
        self._logs: Dict[str, object] = {}
        self._sessions: List[object] = []
        self.start_seconds = 0.0
        #: The program every Python worker of this cluster would run (``no_python_workers``).
        self.sentinel = ""
        self._saved_env: Dict[str, Optional[str]] = {}

    # ------------------------------------------------------------------ lifecycle

    @property
    def master_url(self) -> str:
        return f"spark://{self.host}:{self.master_port}"

    @property
    def master_ui(self) -> str:
        return f"http://{self.host}:{self.master_ui_port}"

    @property
    def log_dir(self) -> Optional[pathlib.Path]:
        return self.tmp / "logs" if self.tmp else None

    def _env(self) -> Dict[str, str]:
        env = dict(os.environ)
        home = pyspark_home()
        env.update(
            SPARK_HOME=str(home),
            SPARK_CONF_DIR=str(self.tmp / "conf"),
            SPARK_LOG_DIR=str(self.tmp / "logs"),
            SPARK_WORKER_DIR=str(self.tmp / "work"),
            SPARK_LOCAL_DIRS=str(self.tmp / "local"),
            SPARK_LOCAL_IP=self.host,
            SPARK_LOCAL_HOSTNAME=self.host,
            SPARK_DAEMON_MEMORY=self.daemon_memory,
            SPARK_DAEMON_JAVA_OPTS="-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
            PYSPARK_PYTHON=self.sentinel,
            PYSPARK_DRIVER_PYTHON=sys.executable,
        )
        env.pop("SPARK_MASTER_HOST", None)
        env.pop("SPARK_WORKER_OPTS", None)
        return env

    def _spawn(self, name: str, args: List[str]) -> None:
        log = open(self.tmp / "logs" / f"{name}.log", "wb")
        self._logs[name] = log
        self._procs[name] = subprocess.Popen(
            [str(pyspark_home() / "bin" / "spark-class"), *args],
            env=self._env(),
            cwd=self.tmp,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # own process group: stop() kills the JVM and its children
            preexec_fn=die_with_parent,  # and a killed test process takes the cluster with it
        )

    def _master_json(self) -> Optional[dict]:
        try:
            with urllib.request.urlopen(self.master_ui + "/json/", timeout=2) as resp:
                return json.loads(resp.read())
        except (urllib.error.URLError, OSError, ValueError):
            return None

    def start(self) -> "SparkCluster":
        t0 = time.monotonic()
        self.tmp = pathlib.Path(tempfile.mkdtemp(prefix="spark-cluster-"))
        for sub in ("conf", "logs", "work", "local"):
            (self.tmp / sub).mkdir()
        self.sentinel = no_python_workers(self.tmp)
        self.master_port, self.master_ui_port, self.worker_ui_port = free_port(), free_port(), free_port()
        try:
            self._spawn(
                "master",
                ["org.apache.spark.deploy.master.Master", "--host", self.host, "--port", str(self.master_port), "--webui-port", str(self.master_ui_port)],
            )
            self._spawn(
                "worker",
                [
                    "org.apache.spark.deploy.worker.Worker",
                    self.master_url,
                    "--host",
                    self.host,
                    "--port",
                    str(free_port()),
                    "--webui-port",
                    str(self.worker_ui_port),
                    "--cores",
                    str(self.worker_cores),
                    "--memory",
                    self.worker_memory,
                    "--work-dir",
                    str(self.tmp / "work"),
                ],
            )
            deadline = time.monotonic() + self.start_timeout
            while True:
                for name, proc in self._procs.items():
                    if proc.poll() is not None:
                        raise RuntimeError(f"spark {name} exited with {proc.returncode} during start-up; log:\n" + _tail(self.tmp / "logs" / f"{name}.log"))
                state = self._master_json()
                if state and state.get("aliveworkers", 0) >= 1:
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"no worker registered with {self.master_url} in {self.start_timeout:.0f}s; "
                        f"master log:\n{_tail(self.tmp / 'logs' / 'master.log')}\n"
                        f"worker log:\n{_tail(self.tmp / 'logs' / 'worker.log')}"
                    )
                time.sleep(0.2)
        except BaseException:
            self.keep_logs = True
            self.stop()
            raise
        self.start_seconds = time.monotonic() - t0
        return self

    def stop(self) -> None:
        for spark in self._sessions:
            try:
                spark.stop()
            except Exception:  # the gateway may already be gone
                pass
        self._sessions.clear()
        # the worker first (its shutdown hook kills executors), then the master
        for name in ("worker", "master"):
            proc = self._procs.pop(name, None)
            if proc is None:
                continue
            for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    proc.wait(timeout=wait)
                    # the JVM is gone; a straggler in its group (an executor) still gets SIGKILL
                    try:
                        os.killpg(proc.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    break
                except subprocess.TimeoutExpired:
                    continue
        for log in self._logs.values():
            log.close()
        self._logs.clear()
        for key, value in self._saved_env.items():  # the driver's environment as session() found it
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self._saved_env.clear()
        if self.tmp is not None:
            if self.keep_logs:
                print(f"spark cluster logs kept in {self.tmp / 'logs'}", file=sys.stderr)
            else:
                shutil.rmtree(self.tmp, ignore_errors=True)
                self.tmp = None

    def __enter__(self) -> "SparkCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # ------------------------------------------------------------------ driver

    def session(
        self,
        app_name: str = "delta-occ-cluster",
        conf: Optional[Dict[str, str]] = None,
        jars: Iterable[str] = (),
        executor_memory: str = "512m",
        driver_memory: str = "1g",
        ship_jars: bool = True,
        new_jvm: Optional[bool] = None,
    ):
        """A SparkSession whose executors run on this cluster; conf entries override the defaults.

        jars: with ship_jars (the default, as on a real cluster) they go to spark.jars: on the
        driver's classpath at JVM start, and every executor fetches a copy from the driver (the
        686 MB AWS SDK bundle included) into its work dir. ship_jars=False puts the local paths on
        spark.driver.extraClassPath and spark.executor.extraClassPath instead: no copies, valid
        only because the executors run on this machine.
        new_jvm: restart pyspark's driver JVM first. Default: when jars are given and the driver
        JVM already running was not started by session() with them (its classpath cannot change).

        No other SparkContext may be active in this process (stop e.g. a local[N] session first):
        getOrCreate() would return it instead of a session on this cluster."""
        from pyspark import SparkContext
        from pyspark.sql import SparkSession

        jars = [str(j) for j in jars]
        active = SparkContext._active_spark_context
        if active is not None:
            raise RuntimeError(f"a SparkContext ({active.master}) is still active in this process; stop it first (getOrCreate would silently return it instead of a session on this cluster)")
        if new_jvm is None:
            new_jvm = SparkContext._gateway is not None and not _driver_has(jars)
        if new_jvm:
            restart_driver_jvm()
        launching = SparkContext._gateway is None

        for key in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_LOCAL_IP"):
            self._saved_env.setdefault(key, os.environ.get(key))
        os.environ["PYSPARK_PYTHON"] = self.sentinel  # read by SparkContext for pythonExec
        os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
        os.environ.setdefault("SPARK_LOCAL_IP", self.host)  # for a driver JVM started now
        settings = {
            "spark.driver.host": self.host,
            "spark.driver.bindAddress": self.host,
            "spark.driver.memory": driver_memory,
            "spark.driver.extraJavaOptions": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
            "spark.executor.memory": executor_memory,
            "spark.executor.cores": str(self.worker_cores),
            "spark.cores.max": str(self.worker_cores),
            "spark.executor.extraJavaOptions": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
            "spark.pyspark.python": self.sentinel,
            "spark.pyspark.driver.python": sys.executable,
            "spark.executorEnv.PYSPARK_PYTHON": self.sentinel,
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": "2",
        }
        if jars and ship_jars:
            settings["spark.jars"] = ",".join(jars)
        elif jars:
            settings["spark.driver.extraClassPath"] = os.pathsep.join(jars)
            settings["spark.executor.extraClassPath"] = os.pathsep.join(jars)
        settings.update(conf or {})
        builder = SparkSession.builder.master(self.master_url).appName(app_name)
        for key, value in settings.items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
        if launching:
            _DRIVER_JARS.update(gateway=SparkContext._gateway, jars=frozenset(jars))
        self._sessions.append(spark)
        return spark


# The py4j gateway (driver JVM) that session() launched, and the JARs on its classpath.
_DRIVER_JARS: Dict[str, object] = {"gateway": None, "jars": frozenset()}


def _driver_has(jars: List[str]) -> bool:
    """Whether the running driver JVM was started by session() with (at least) these JARs."""
    from pyspark import SparkContext

    if not jars:
        return True
    return SparkContext._gateway is _DRIVER_JARS["gateway"] and set(jars) <= _DRIVER_JARS["jars"]  # type: ignore[operator]


def restart_driver_jvm() -> None:
    """Shut down pyspark's driver JVM (py4j gateway) so the next SparkContext launches a new one
    with its own spark.jars / driver classpath. No SparkContext may be active."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    if gateway is None:
        return
    proc = getattr(gateway, "proc", None)
    try:
        gateway.shutdown()
    except Exception:
        pass
    if proc is not None:
        try:
            proc.stdin.close()  # the JVM exits when its stdin closes (PYSPARK_GATEWAY_SECRET mode)
        except Exception:
            pass
        try:
            proc.wait(timeout=10)
        except Exception:
            proc.kill()
            proc.wait(timeout=10)
    SparkContext._gateway = None
    SparkContext._jvm = None
