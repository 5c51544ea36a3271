"""Import time (issue 45): ``import delta_occ`` against ``import deltalake``, each in fresh
processes, alternating (one process of each per round; ``$DELTA_OCC_BENCH_IMPORT_ROUNDS``,
default 15, 1 in the smoke pass without ``--benchmark-enable``).

Two figures per library and round:

* ``-X importtime``: the cumulative microseconds CPython reports for the top-level package
  (``python -X importtime -c "import delta_occ"``, the line of the package itself), i.e. the
  import alone, without the interpreter's start-up;
* wall: the whole ``python -c "import X"`` process, timed by the parent, minus the median of
  ``python -c "pass"`` in the same run (start-up and ``site``).

Also, what each import loads: the number of modules in ``sys.modules`` after it and whether
pyarrow is among them. Medians (and minima) are printed and kept in ``import.json``; nothing about
speed is asserted. What is asserted: ``import delta_occ`` does not import pyarrow."""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import time
from typing import Dict, List

import pytest

from _tables import BENCH_DIR

LIBRARIES = ("delta_occ", "deltalake")


def _importtime_us(module: str) -> int:
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    # "import time: self [us] | cumulative | imported package": the package's own line.
    for line in proc.stderr.splitlines():
        m = re.match(r"import time:\s*\d+\s*\|\s*(\d+)\s*\|\s(\S+)$", line)
        if m and m.group(2) == module:
            return int(m.group(1))
    raise AssertionError(f"no importtime line for {module}:\n{proc.stderr[-2000:]}")


def _wall(code: str) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    wall = time.perf_counter() - t0
    assert proc.returncode == 0, proc.stderr[-2000:]
    return wall


def _loaded(module: str) -> Dict[str, object]:
    code = f"import sys, json; import {module}; print(json.dumps({{'modules': len(sys.modules), 'pyarrow': 'pyarrow' in sys.modules}}))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_import_time(request):
    cfg = request.config
    smoke = cfg.getoption("benchmark_disable", False) and not cfg.getoption("benchmark_enable", False)
    rounds = 1 if smoke else int(os.environ.get("DELTA_OCC_BENCH_IMPORT_ROUNDS", "15"))
    for lib in LIBRARIES:
        pytest.importorskip(lib)
        _wall(f"import {lib}")  # warm the page cache
    importtime: Dict[str, List[int]] = {lib: [] for lib in LIBRARIES}
    walls: Dict[str, List[float]] = {lib: [] for lib in LIBRARIES + ("(start-up)",)}
    for _ in range(rounds):
        walls["(start-up)"].append(_wall("pass"))
        for lib in LIBRARIES:
            importtime[lib].append(_importtime_us(lib))
            walls[lib].append(_wall(f"import {lib}"))
    startup = statistics.median(walls["(start-up)"])
    out: Dict[str, object] = {"rounds": rounds, "startup_s": startup}
    for lib in LIBRARIES:
        out[lib] = {
            "importtime_ms_median": statistics.median(importtime[lib]) / 1000,
            "importtime_ms_min": min(importtime[lib]) / 1000,
            "wall_minus_startup_ms_median": (statistics.median(walls[lib]) - startup) * 1000,
            **_loaded(lib),
        }
    a, b = out["delta_occ"], out["deltalake"]
    assert isinstance(a, dict) and isinstance(b, dict)
    out["ratio_importtime"] = b["importtime_ms_median"] / a["importtime_ms_median"]
    print(f"\n[bench] import, {rounds} rounds: delta_occ {a['importtime_ms_median']:.1f} ms (min {a['importtime_ms_min']:.1f}), "
          f"{a['modules']} modules; deltalake {b['importtime_ms_median']:.1f} ms (min {b['importtime_ms_min']:.1f}), {b['modules']} modules; "
          f"wall minus start-up {a['wall_minus_startup_ms_median']:.0f} / {b['wall_minus_startup_ms_median']:.0f} ms; "
          f"ratio deltalake / delta_occ {out['ratio_importtime']:.2f}")
    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    (BENCH_DIR / "import.json").write_text(json.dumps(out, indent=1))
    assert a["pyarrow"] is False, "import delta_occ imported pyarrow"
