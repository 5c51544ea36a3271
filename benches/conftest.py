"""pytest glue for the benchmarks: collect ``bench_*.py`` and hand out the generated tables.

Table generation lives in ``_tables.py`` (see its docstring for the shapes and the cache).
"""

from __future__ import annotations

import os
import pathlib
import sys
from typing import Callable, Dict, Iterator

import pytest

# pytest's default "prepend" import mode already puts this directory on sys.path; keep the
# helpers importable under --import-mode=importlib too.
_HERE = str(pathlib.Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from _tables import ADDS, BENCH_DIR, ROUNDS, BenchTable, ensure_table  # noqa: E402 - needs the sys.path line above


def pytest_collect_file(file_path, parent):
    # The default python_files pattern is test_*.py; also collect bench_*.py here when
    # ``benches`` (the directory) is given, without duplicating a file named explicitly.
    if file_path.suffix == ".py" and file_path.name.startswith("bench_") and not parent.session.isinitpath(file_path):
        return pytest.Module.from_parent(parent, path=file_path)
    return None


@pytest.fixture(scope="session")
def bench_table() -> Callable[[str], BenchTable]:
    """``bench_table(shape)`` -> the generated (cached) table of that shape."""
    cache: Dict[str, BenchTable] = {}

    def get(shape: str) -> BenchTable:
        if shape not in cache:
            cache[shape] = ensure_table(shape)
            gen = cache[shape].generation_seconds
            if gen is not None:
                print(f"\n[bench] generated {shape} ({ADDS} adds) in {gen:.1f}s -> {cache[shape].path}")
        return cache[shape]

    return get


@pytest.fixture(scope="session")
def ceph_s3() -> Iterator[object]:
    """One Ceph S3 gateway on loopback for every object-store benchmark (each makes its bucket)."""
    if os.environ.get("DELTA_OCC_NO_OBJECT_STORES"):
        pytest.skip("DELTA_OCC_NO_OBJECT_STORES is set")
    tests = str(pathlib.Path(__file__).resolve().parent.parent / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    from servers import ceph

    ceph.ensure_installed()
    with ceph.CephS3() as server:
        yield server


@pytest.fixture(scope="session")
def rounds() -> int:
    return ROUNDS


def pytest_report_header(config):
    lines = []
    for name in ("delta_occ", "deltalake"):
        try:
            mod = __import__(name)
            lines.append(f"{name} {getattr(mod, '__version__', '?')} from {mod.__file__}")
        except Exception as e:  # noqa: BLE001 - a header must not break collection
            lines.append(f"{name}: not importable ({e})")
    lines.append(f"bench: {ADDS} adds per table, {ROUNDS} rounds, tables under {BENCH_DIR}")
    return lines
