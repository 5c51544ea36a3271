"""Tests that need the extension's test hooks (fault injection, disabled conflict rules,
reworded messages: rust/core/src/test_hooks.rs) run on a build made for them.

The published wheel has no hooks (``_core.TEST_HOOKS`` is False), so in the ordinary run every
test marked ``test_hooks`` (and every test under ``tests/test_build/``) is replaced by an item that
reports the outcome of that same test in one child pytest, started once per session on a build
with the cargo feature ``test-hooks`` (its own cargo profile, so it never replaces the wheel's
library). A test that fails, errors or skips there fails here with the child's report; one the
child never ran fails too. The child starts when collection ends and runs alongside the other
tests. In the child (``TEST_HOOKS`` True) the tests run as written.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import threading
from typing import Dict, List, Optional

import pytest

from delta_occ import _core

REPO = pathlib.Path(__file__).resolve().parents[1]
REPORT_ENV = "DELTA_OCC_HOOKED_REPORT"
MARKER = "test_hooks"


class TestBuildFailure(Exception):
    """The test failed (or did not run) on the test build; the message is the child's report."""


def is_hooked(item: pytest.Item) -> bool:
    return item.get_closest_marker(MARKER) is not None or "test_build" in item.path.parts


class OnTestBuild(pytest.Item):
    """Stands for a hooked test in a run on the published build: its outcome on the test build."""

    def __init__(self, *, original: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.original = original

    def runtest(self) -> None:
        results = _child_results(self.session)
        r = results.get(self.original)
        if r is None:
            raise TestBuildFailure(f"{self.original} did not run on the test build.\n{results.get('', {}).get('longrepr', '')}")
        if r["outcome"] != "passed":
            raise TestBuildFailure(f"on the test build ({r['outcome']}):\n{r['longrepr']}")

    def repr_failure(self, excinfo, style=None):  # type: ignore[override]
        if isinstance(excinfo.value, TestBuildFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):  # type: ignore[override]
        return self.path, None, f"{self.name} (on the test build)"


def swap_in(items: List[pytest.Item]) -> None:
    """On the published build, put an `OnTestBuild` in place of each hooked test."""
    if _core.TEST_HOOKS:
        return
    for i, item in enumerate(items):
        if is_hooked(item):
            assert item.parent is not None
            stand_in = OnTestBuild.from_parent(item.parent, name=item.name, original=item.nodeid)
            stand_in.add_marker(MARKER)  # `-m "not test_hooks"` still deselects it (and skips the build)
            items[i] = stand_in


_RESULTS: Optional[Dict[str, dict]] = None
_CHILD: Optional[threading.Thread] = None
_PROC: Optional[subprocess.Popen] = None


def start(session: pytest.Session) -> None:
    """Once collection is final: build the test extension and run every hooked test of this
    session on it, in the background while the other tests run (the stand-ins wait for it). The
    hooked tests use local tables only, so the two runs share nothing but the machine."""
    global _CHILD
    ids = [it.original for it in session.items if isinstance(it, OnTestBuild)]
    if ids and _CHILD is None and not session.config.option.collectonly:
        _CHILD = threading.Thread(target=_run_child, args=(ids, session.config.rootpath), name="delta-occ-test-build", daemon=True)
        _CHILD.start()


def stop() -> None:
    """At the end of the session: a child still running (the run was cut short) is stopped."""
    if _PROC is not None and _PROC.poll() is None:
        _PROC.kill()


def _child_results(session: pytest.Session) -> Dict[str, dict]:
    if _CHILD is None:
        start(session)
    assert _CHILD is not None
    _CHILD.join()
    return _RESULTS or {"": {"outcome": "failed", "longrepr": "the test build's run ended without results"}}


def _run_child(ids: List[str], rootpath: pathlib.Path) -> None:
    global _RESULTS, _PROC
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="delta-occ-test-build-"))
    try:
        try:
            package_root = build_package(scratch / "pkg")
        except TestBuildFailure as e:
            _RESULTS = {"": {"outcome": "failed", "longrepr": f"the test build could not be made: {e}"}}
            return
        report = scratch / "report.json"
        env = {**os.environ, REPORT_ENV: str(report)}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(package_root), env.get("PYTHONPATH", "")) if p)
        _PROC = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *ids],
            cwd=rootpath, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        out, err = _PROC.communicate()
        results = json.loads(report.read_text()) if report.exists() else {}
        results[""] = {"outcome": "failed", "longrepr": f"child pytest exit {_PROC.returncode}:\n{out[-6000:]}\n{err[-3000:]}"}
        _RESULTS = results
    except Exception as e:  # noqa: BLE001 - reported by every stand-in
        _RESULTS = {"": {"outcome": "failed", "longrepr": f"the test build's run failed: {type(e).__name__}: {e}"}}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def build_package(dest: pathlib.Path) -> pathlib.Path:
    """`delta_occ` from this checkout with the extension built with the test hooks, under `dest`
    (the directory to put first on PYTHONPATH)."""
    cargo = shutil.which("cargo")
    if cargo is None:
        raise TestBuildFailure("cargo is not on PATH (the test build needs the Rust toolchain that built the wheel)")
    cmd = [cargo, "build", "--profile", "test-hooks", "-p", "delta-occ-py", "--features", "test-hooks",
           "--message-format=json-render-diagnostics"]
    env = {**os.environ, "PYO3_PYTHON": sys.executable}
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise TestBuildFailure(f"{' '.join(cmd)} failed:\n{proc.stderr[-4000:]}")
    library = None
    for line in proc.stdout.splitlines():
        msg = json.loads(line) if line.startswith("{") else {}
        if msg.get("reason") == "compiler-artifact" and msg["target"]["name"] == "_core":
            library = next(f for f in msg["filenames"] if f.endswith((".so", ".dylib", ".pyd")))
    if library is None:
        raise TestBuildFailure(f"cargo built no _core library:\n{proc.stdout[-2000:]}")
    shutil.copytree(REPO / "python" / "delta_occ", dest / "delta_occ", ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"))
    shutil.copy(library, dest / "delta_occ" / "_core.abi3.so")
    return dest


class Reporter:
    """In the child: each hooked test's outcome (failure text included), written for the parent."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.results: Dict[str, dict] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        r = self.results.setdefault(report.nodeid, {"outcome": "passed", "longrepr": ""})
        if report.outcome != "passed" and r["outcome"] == "passed":
            r["outcome"] = "skipped" if report.outcome == "skipped" else f"{report.outcome} in {report.when}"
            r["longrepr"] = report.longreprtext

    def pytest_sessionfinish(self) -> None:
        with open(self.path, "w") as f:
            json.dump(self.results, f)


def configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}: needs the extension's test hooks; runs on a test build (tests/hooked.py)")
    path = os.environ.get(REPORT_ENV)
    if path and _core.TEST_HOOKS:
        config.pluginmanager.register(Reporter(path), "delta-occ-hooked-reporter")
