"""Timeline benchmark (issue 46): how long a 10,000-commit timeline page takes to render in a
browser, and to build.

The table: 4 writer threads on one table with deletion vectors, each committing a blind append
of 3 rows or a DELETE of one of its own earlier rows (every writer's rows share files, so deletes
are rebased at row level over each other), until ``$DELTA_OCC_BENCH_TIMELINE_COMMITS`` commits
(default: 10,000 with the default ``DELTA_OCC_BENCH_ADDS``, ADDS / 100 otherwise, so the CI smoke
pass makes 20). Kept as ``$DELTA_OCC_BENCH_DIR/timeline-<commits>/`` and reused.

What is measured
----------------
* ``build``: ``Table.timeline(from_version=0)`` (reading every commit) and ``to_html()``, seconds;
  the page's size.
* ``render``: Debian's headless Chromium (``tests/servers/chromium.py``) opens the page from a
  ``file://`` URL with ``--dump-dom``; the page's script writes ``performance.now()`` into
  ``<html data-render-ms>`` once it has drawn the lanes and forced a layout: the time from the
  start of navigation (reading and parsing the HTML and its embedded data included) to a drawn
  page. Cases: the whole range (drawn as density), a ``#v<middle>`` link (zoomed to one commit,
  every span in view drawn), and the whole range with aggregation switched off
  (``?detail=100000``: one SVG element per commit and per link), for comparison. Also the wall
  time of the whole Chromium process, and of one opening an empty page (its start-up).

``$DELTA_OCC_BENCH_ROUNDS`` rounds each; figures go to ``$DELTA_OCC_BENCH_DIR/timeline.json`` and
BENCHMARKS.md. Nothing about speed is asserted; the page must have drawn (its render mark set).
"""

from __future__ import annotations

import json
import os
import pathlib
import random
import re
import statistics
import sys
import threading
import time
from typing import Any, Dict, List

import pyarrow as pa
import pytest

from _tables import ADDS, BENCH_DIR, ROUNDS

delta_occ = pytest.importorskip("delta_occ")

_TESTS = str(pathlib.Path(__file__).resolve().parent.parent / "tests")
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

COMMITS = int(os.environ.get("DELTA_OCC_BENCH_TIMELINE_COMMITS", "10000" if ADDS >= 1_000_000 else str(max(20, ADDS // 100))))
WRITERS = 4
SCHEMA = pa.schema([("id", pa.int64()), ("w", pa.int64())])


def _writer(path: str, w: int, n: int, stats: Dict[str, int]) -> None:
    t = delta_occ.Table(path)
    rng = random.Random(w)
    mine: List[int] = []
    k = 0
    for _ in range(n):
        while True:
            try:
                if mine and rng.random() < 0.3:
                    victim = mine.pop(rng.randrange(len(mine)))
                    t.delete(f"id = {victim}")
                else:
                    ids = [w * 10**9 + k + i for i in range(3)]
                    k += 3
                    t.append(pa.table({"id": ids, "w": [w] * 3}, schema=SCHEMA))
                    mine += ids
                break
            except delta_occ.exceptions.DeltaConcurrentModificationException:
                stats["conflicts"] = stats.get("conflicts", 0) + 1


def _table() -> pathlib.Path:
    path = BENCH_DIR / f"timeline-{COMMITS}"
    if (path / "_done").exists():
        return path
    import shutil

    shutil.rmtree(path, ignore_errors=True)
    t = delta_occ.Table.create(str(path), SCHEMA, properties={"delta.enableDeletionVectors": "true"})
    t.append(pa.table({"id": list(range(100)), "w": [-1] * 100}, schema=SCHEMA))
    stats: Dict[str, int] = {}
    t0 = time.monotonic()
    per = (COMMITS - 2) // WRITERS
    threads = [threading.Thread(target=_writer, args=(str(path), w, per + (1 if w < (COMMITS - 2) % WRITERS else 0), stats)) for w in range(WRITERS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    (path / "_done").write_text(json.dumps({"seconds": round(time.monotonic() - t0, 1), **stats}))
    return path


def _chromium_ms(chromium: Any, url: str) -> Dict[str, float]:
    t0 = time.perf_counter()
    dom = chromium.dump_dom(url)
    wall = (time.perf_counter() - t0) * 1000
    m = re.search(r'data-render-ms="([\d.]+)"', dom)
    mode = re.search(r'<svg id="lanes"[^>]*data-mode="(\w+)"', dom)
    assert m and mode, "the page did not draw"
    return {"render_ms": float(m.group(1)), "wall_ms": wall, "mode": mode.group(1), "spans": dom.count('<g class="span')}  # type: ignore[dict-item]


def test_timeline_render(tmp_path):
    if os.environ.get("DELTA_OCC_NO_CHROMIUM"):
        pytest.skip("DELTA_OCC_NO_CHROMIUM is set")
    from servers import chromium

    chromium.ensure_installed()
    path = _table()
    t = delta_occ.Table(str(path))
    t0 = time.perf_counter()
    tl = t.timeline(from_version=0)
    build_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    html = tl.to_html()
    html_s = time.perf_counter() - t0
    page = tmp_path / "timeline.html"
    page.write_text(html)
    empty = tmp_path / "empty.html"
    empty.write_text("<!DOCTYPE html><html><body></body></html>")
    url = page.resolve().as_uri()
    middle = tl.first_version + len(tl) // 2
    cases = {"whole range": url, f"#v{middle}": f"{url}#v{middle}", "whole range, no aggregation": f"{url}?detail=100000"}
    results: Dict[str, Any] = {}
    for name, u in cases.items():
        runs = [_chromium_ms(chromium, u) for _ in range(ROUNDS)]
        results[name] = {"render_ms_median": statistics.median(r["render_ms"] for r in runs), "render_ms": [r["render_ms"] for r in runs],
                         "wall_ms_median": round(statistics.median(r["wall_ms"] for r in runs)), "mode": runs[0]["mode"], "spans": runs[0]["spans"]}
    walls = []
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        chromium.dump_dom(empty.resolve().as_uri())
        walls.append((time.perf_counter() - t0) * 1000)
    out = {
        "commits": len(tl), "versions": [tl.first_version, tl.last_version], "failed_attempts": len(tl.failed),
        "generation": json.loads((path / "_done").read_text()), "timeline_build_s": round(build_s, 2), "to_html_s": round(html_s, 2),
        "page_bytes": len(html.encode()), "summary": tl.summary(), "cases": results, "empty_page_wall_ms_median": round(statistics.median(walls)),
        "rounds": ROUNDS,
    }
    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    (BENCH_DIR / "timeline.json").write_text(json.dumps(out, indent=2))
    print("\n[bench] timeline", json.dumps(out, indent=2))
