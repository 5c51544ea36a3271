"""What delta-occ's writers add to ``commitInfo.deltaOcc`` about how a commit was made, next to
the core's record of its conflict checks (``attempt``, ``checkedWinners``, ``winnersNotRecorded``)
and of when its snapshot was read (``readTime``, ms since the epoch): who wrote it (host,
process, thread, engine), when its commit began, and for an operation re-run on a conflict which
execution this is, when the first one read and the winners that forced the re-runs.
``delta_occ.timeline`` draws them; this module owns the key names for both sides.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from typing import Any, Dict, List

#: Written by the core (``Transaction::began_ms``): when the transaction pinned its snapshot.
READ_TIME = "readTime"
ENGINE = "engine"
HOST = "host"
PID = "pid"
THREAD = "thread"
#: When ``commit()`` was called (ms): the commit loop's time, rebases included, runs from here.
COMMIT_START = "commitStartTime"
#: Which execution of a one-call operation committed (1: it was never re-run).
EXECUTION = "execution"
#: When the first execution of a re-run operation read (ms).
FIRST_READ = "firstReadTime"
#: The winning versions whose conflicts forced each re-run.
RERUN_OVER = "rerunOver"

#: The writer's identity, in the order a lane names it.
WRITER_KEYS = (ENGINE, HOST, PID, THREAD)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def writer(engine: str = "pyarrow") -> Dict[str, Any]:
    """Who is writing: the engine, this host, process and thread."""
    return {ENGINE: engine, HOST: socket.gethostname(), PID: os.getpid(), THREAD: threading.current_thread().name}


def execution(number: int, first_read_ms: int, rerun_over: List[int]) -> Dict[str, Any]:
    """The note of execution ``number`` of a one-call operation (only re-runs say anything)."""
    if number <= 1:
        return {}
    return {EXECUTION: number, FIRST_READ: first_read_ms, RERUN_OVER: list(rerun_over)}
