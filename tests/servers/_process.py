"""Process plumbing shared by the servers that tests start on loopback.

``free_port()`` picks a port, ``die_with_parent`` (a ``preexec_fn``) ties a server's life to the
process that started it, ``tail()`` reads the end of a log, and ``LoopbackServer`` runs one server
process with start-up retries, readiness polling and clean-up (Azurite and fake-gcs-server use it).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import List, Optional, TypeVar, Union

# Lower-cased log text of a server that lost the race for its port: start-up then tries another.
PORT_TAKEN = ("eaddrinuse", "address already in use")
ATTEMPTS = 3

S = TypeVar("S", bound="LoopbackServer")


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` right now (another process may still take it before the server binds it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: SIGKILL the server if the process that started it dies (a crashed or killed pytest)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def tail(path: "Union[str, os.PathLike[str], None]", n: int = 40) -> str:
    """The last ``n`` lines of the text file at ``path``; "" if there is none or it cannot be read."""
    if path is None:
        return ""
    try:
        return "\n".join(pathlib.Path(path).read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return ""


class LoopbackServer:
    """One server process on 127.0.0.1 and a free port.

    The process runs in its own session (so ``stop()`` kills its whole process group) with
    ``die_with_parent``, its working directory a fresh temporary directory that also holds its output
    (``server.log``) and that ``stop()`` removes; ``stop()`` also runs at interpreter exit.

    A subclass sets ``name`` (for messages), defines ``_command(port)`` (the command line; it also
    points the subclass's endpoint attributes at ``port``) and ``_ready()`` (one probe, true once the
    server answers; ``OSError`` counts as not yet), and its ``start()`` calls ``_launch(prefix)``.
    """

    name = "server"

    def __init__(self, start_timeout: float) -> None:
        self.start_timeout = start_timeout
        self.port: Optional[int] = None
        self._proc: Optional["subprocess.Popen[bytes]"] = None
        self._dir: Optional[str] = None
        self._log: Optional[pathlib.Path] = None

    # -- for subclasses -----------------------------------------------------------------------
    def start(self: S) -> S:
        raise NotImplementedError

    def _command(self, port: int) -> List[str]:
        raise NotImplementedError

    def _ready(self) -> bool:
        raise NotImplementedError

    def _where(self) -> str:
        """Where the server answers, for messages."""
        return f"http://127.0.0.1:{self.port}"

    # -- life cycle ---------------------------------------------------------------------------
    def _launch(self, prefix: str) -> None:
        """Start the server in a new temporary directory (``prefix``) and wait until it answers."""
        self._dir = tempfile.mkdtemp(prefix=prefix)
        self._log = pathlib.Path(self._dir) / "server.log"
        last_error = ""
        for _attempt in range(ATTEMPTS):  # the port is free when chosen; retry if another process takes it first
            self.port = free_port()
            self._start_process(self._command(self.port))
            try:
                self._wait()
                return
            except RuntimeError as e:
                last_error = str(e)
                alive = self._proc is not None and self._proc.poll() is None
                self._kill()
                if alive or not any(m in self._tail().lower() for m in PORT_TAKEN):
                    break
        self.stop()
        raise RuntimeError(last_error)

    def _start_process(self, args: List[str]) -> None:
        assert self._dir is not None and self._log is not None
        with open(self._log, "ab") as log:
            self._proc = subprocess.Popen(args, cwd=self._dir, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=die_with_parent)
        atexit.register(self.stop)

    def _tail(self, n: int = 40) -> str:
        return tail(self._log, n)

    def _wait(self) -> None:
        """Poll ``_ready()`` until it is true; RuntimeError (with the log's tail) if the process exits or time runs out."""
        assert self._proc is not None
        deadline = time.monotonic() + self.start_timeout
        while True:
            if self._proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self._proc.returncode} before answering on {self._where()}; output:\n{self._tail()}")
            with contextlib.suppress(OSError):
                if self._ready():
                    return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} did not answer on {self._where()} within {self.start_timeout:g}s; output:\n{self._tail()}")
            time.sleep(0.05)

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)

    def stop(self) -> None:
        atexit.unregister(self.stop)
        self._kill()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self: S) -> S:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
