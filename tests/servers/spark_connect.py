"""A Spark Connect server on loopback, started with pyspark's own launcher, and the sentinel that
makes Python workers impossible.

    from servers.spark_connect import SparkConnectServer

    with SparkConnectServer() as server:               # 10-30 s: the gRPC port answers
        spark = server.session()                        # a pyspark.sql.connect SparkSession
        spark.range(3).toArrow()
    # the client is closed, the server JVM (its executors are threads: local[2]) is gone

``<pyspark>/bin/spark-submit --class org.apache.spark.sql.connect.service.SparkConnectServer``
(the class and its jar ship with pyspark, in ``jars/spark-connect_2.13-<version>.jar``) with
``--master local[2]``, gRPC bound to 127.0.0.1 on a free port, SPARK_HOME = pyspark's directory,
an empty SPARK_CONF_DIR, logs in a temp dir (kept and printed when start-up fails). The server
runs in its own process group with ``die_with_parent``; ``stop()`` kills that group.

Python workers are impossible on this server: PYSPARK_PYTHON and ``spark.pyspark.python`` point at
``no_python_workers()`` (tests/servers/spark_cluster.py), a program that prints
``SENTINEL_MESSAGE`` and exits 1. Any Python UDF, ``mapInArrow`` or
RDD lambda then fails its task, so a delta_occ operation that passes here runs no Python on
executors. The standalone cluster (tests/servers/spark_cluster.py) has the same sentinel.

The client is ``pyspark.sql.connect.session.SparkSession.builder.remote(...)``: unlike
``pyspark.sql.SparkSession.builder.remote(...)`` it neither refuses to start next to the test
run's classic local session nor switches this process into Connect mode (``pyspark.sql.functions``
keeps building classic columns for the classic session).
"""

from __future__ import annotations

import atexit
import os
import pathlib
import socket
import subprocess
import sys
from typing import Any, Dict, List, Optional

from ._process import LoopbackServer, die_with_parent
from .spark_cluster import SENTINEL_MESSAGE, no_python_workers, pyspark_home

START_TIMEOUT = 120.0


class SparkConnectServer(LoopbackServer):
    name = "Spark Connect server"

    def __init__(self, master: str = "local[2]", driver_memory: str = "1g", conf: Optional[Dict[str, str]] = None, start_timeout: float = START_TIMEOUT) -> None:
        super().__init__(start_timeout)
        self.master = master
        self.driver_memory = driver_memory
        self.conf = dict(conf or {})
        self.sentinel: Optional[str] = None
        self._sessions: List[Any] = []

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def _where(self) -> str:
        return self.url

    def start(self) -> "SparkConnectServer":
        self._launch("spark-connect-")
        return self

    def _start_process(self, args: List[str]) -> None:
        # As LoopbackServer's, with spark-submit's environment: pyspark's SPARK_HOME, an empty
        # conf dir, loopback, the sentinel as every Python.
        assert self._dir is not None and self._log is not None
        with open(self._log, "ab") as log:
            self._proc = subprocess.Popen(
                args, cwd=self._dir, env={**os.environ, **self._env()}, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True, preexec_fn=die_with_parent,
            )
        atexit.register(self.stop)

    def _env(self) -> Dict[str, str]:
        assert self._dir is not None
        d = pathlib.Path(self._dir)
        for sub in ("conf", "local"):
            (d / sub).mkdir(exist_ok=True)
        return {
            "SPARK_HOME": str(pyspark_home()),
            "SPARK_CONF_DIR": str(d / "conf"),
            "SPARK_LOCAL_DIRS": str(d / "local"),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_LOCAL_HOSTNAME": "127.0.0.1",
            "PYSPARK_PYTHON": self.sentinel or "",
            "PYSPARK_DRIVER_PYTHON": self.sentinel or "",
        }

    def _command(self, port: int) -> List[str]:
        assert self._dir is not None
        self.sentinel = no_python_workers(self._dir)
        settings = {
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": str(port),
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.driver.memory": self.driver_memory,
            "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": "2",
            # The server's sessions start in a non-UTC time zone, as the classic test session.
            "spark.sql.session.timeZone": "America/New_York",
            "spark.pyspark.python": self.sentinel,
            "spark.pyspark.driver.python": self.sentinel,
            "spark.executorEnv.PYSPARK_PYTHON": self.sentinel,
            **self.conf,
        }
        args = [str(pyspark_home() / "bin" / "spark-submit"), "--class", "org.apache.spark.sql.connect.service.SparkConnectServer", "--master", self.master, "--name", "delta-occ-connect"]
        for k, v in settings.items():
            args += ["--conf", f"{k}={v}"]
        return args

    def _ready(self) -> bool:
        assert self.port is not None
        with socket.create_connection(("127.0.0.1", self.port), timeout=1):
            return True

    def session(self) -> Any:
        """A new Connect session on this server (its own server-side session)."""
        from pyspark.sql.connect.session import SparkSession as ConnectSession

        spark = ConnectSession.builder.remote(self.url).create()
        self._sessions.append(spark)
        return spark

    def stop(self) -> None:
        for spark in self._sessions:
            try:
                spark.stop()
            except Exception:  # noqa: BLE001 - the server may already be gone
                pass
        self._sessions.clear()
        super().stop()


if __name__ == "__main__":  # pragma: no cover - manual check: start, run one query, stop
    with SparkConnectServer() as srv:
        print(srv.url, srv.session().range(3).toArrow().num_rows, file=sys.stderr)


__all__ = ["SENTINEL_MESSAGE", "SparkConnectServer", "no_python_workers"]
