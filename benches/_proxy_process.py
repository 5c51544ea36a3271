"""A delaying, counting proxy (``tests/servers/faultproxy.py``) in a process of its own, between the
benchmarked readers and an S3 server on loopback: each request waits ``delay`` seconds before it
is forwarded, a cloud region's round trip.

Why another process: the proxy is Python (a thread per request), and in the benchmark's process
it would take the GIL and CPU seconds from the reader being measured, more from the one that keeps
more requests in flight. The parent talks to it over stdin/stdout, one line per command:
``delay <seconds>``, ``reset`` (forget the counts), ``counts`` (a JSON line of requests by method,
and ``requests`` in all). One proxy serves a whole benchmark module: delta-occ keeps one client
per endpoint and process, so a new proxy on a port an earlier one had would meet a pooled
connection to a proxy that is gone."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
from typing import IO, Dict, Optional, cast

_TESTS = str(pathlib.Path(__file__).resolve().parent.parent / "tests")


class ProxyProcess:
    """``with ProxyProcess("http://127.0.0.1:PORT") as p: p.delay(0.03); ... p.endpoint ...``"""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.endpoint = ""
        self._proc: Optional[subprocess.Popen] = None

    def __enter__(self) -> "ProxyProcess":
        self._proc = subprocess.Popen(
            [sys.executable, __file__, self.upstream], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )
        self.endpoint = self._line()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            cast(IO[str], self._proc.stdin).close()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None

    def _line(self) -> str:
        assert self._proc is not None
        line = cast(IO[str], self._proc.stdout).readline()
        if not line:
            raise RuntimeError(f"the proxy process exited (status {self._proc.poll()})")
        return line.strip()

    def _ask(self, command: str) -> str:
        assert self._proc is not None
        stdin = cast(IO[str], self._proc.stdin)
        stdin.write(command + "\n")
        stdin.flush()
        return self._line()

    def delay(self, seconds: float) -> None:
        self._ask(f"delay {seconds}")

    def reset(self) -> None:
        self._ask("reset")

    def counts(self) -> Dict[str, int]:
        return cast(Dict[str, int], json.loads(self._ask("counts")))


def _serve(upstream: str) -> None:
    sys.path.insert(0, _TESTS)
    from servers.faultproxy import FaultProxy

    with FaultProxy(upstream) as proxy:
        print(proxy.endpoint, flush=True)
        for line in sys.stdin:
            command, _, arg = line.strip().partition(" ")
            if command == "delay":
                proxy.delay = float(arg)
                print("ok", flush=True)
            elif command == "reset":
                proxy.reset_counts()
                print("ok", flush=True)
            elif command == "counts":
                print(json.dumps({"requests": len(proxy.log), **dict(proxy.counts)}), flush=True)
            else:
                print(f"unknown command {command!r}", flush=True)


if __name__ == "__main__":
    _serve(sys.argv[1])
