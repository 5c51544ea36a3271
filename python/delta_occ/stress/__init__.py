"""The reliability workload and its history checker (issue 16), behind ``delta-occ stress``.

Writers (``writers``: processes started with fork and with spawn, and threads sharing one
``Table``) run random transactions (``workload``) on one table; a deterministic scheduler then
stages K >= 3 long-lived transactions at a time in one process and commits them in random orders:
that is where chains of OPTIMIZE and DML live. Every attempt is logged (operation, arguments, read
version, outcome, committed version or exception class, when and by whom). The checker (``history``) then replays
the table version by version and judges the history against the model (``model``).
"""

from __future__ import annotations

from .history import check, failed_attempts, read_attempts, timeline
from .model import apply
from .workload import ATTEMPT_KEY, AttemptLog, Config, Target, stage, target
from .writers import commit, create, interleave, run, run_schedule, run_writer

__all__ = [
    "Config",
    "Target",
    "target",
    "run",
    "check",
    "create",
    "interleave",
    "run_schedule",
    "run_writer",
    "read_attempts",
    "failed_attempts",
    "timeline",
    "stage",
    "commit",
    "AttemptLog",
    "apply",
    "ATTEMPT_KEY",
]
