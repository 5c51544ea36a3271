"""Child process of tests/test_read_memory.py: reads a table and prints, as JSON, per data file
(the ``file_no`` column) its row count and an order-independent hash of its rows, and with
``ours`` the peak RSS growth of the streamed read.

``ours LOCATION OPTIONS_JSON``: ``Snapshot.to_batches()`` consumed batch by batch; the peak is
``VmHWM`` after resetting it (``/proc/self/clear_refs``) once the snapshot is open, minus the RSS
then. ``kernel URI``: delta-kernel-rs reads the table (in this separate process, all at once)."""

from __future__ import annotations

import json
import sys
from typing import Dict, List

import numpy as np
import pyarrow as pa

MASK = np.uint64(0xFFFFFFFFFFFFFFFF)


def row_hashes(batch: pa.RecordBatch) -> "tuple[np.ndarray, np.ndarray]":
    """(file_no, a 64-bit mix of each row's id and x bits): splitmix64's finaliser."""
    ids = batch.column(batch.schema.get_field_index("id")).to_numpy(zero_copy_only=False).astype(np.uint64)
    xs = batch.column(batch.schema.get_field_index("x")).to_numpy(zero_copy_only=False).view(np.uint64)
    z = ids * np.uint64(0x9E3779B97F4A7C15) ^ xs
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    files = batch.column(batch.schema.get_field_index("file_no")).to_numpy(zero_copy_only=False).astype(np.int64)
    return files, z


class PerFile:
    def __init__(self) -> None:
        self.count: Dict[int, int] = {}
        self.total: Dict[int, int] = {}

    def add(self, batch: pa.RecordBatch) -> None:
        if not batch.num_rows:
            return
        files, z = row_hashes(batch)
        n = int(files.max()) + 1
        sums = np.zeros(n, dtype=np.uint64)
        np.add.at(sums, files, z)  # wraps modulo 2**64: an exact, order-free sum
        counts = np.bincount(files, minlength=n)
        for f in np.nonzero(counts)[0].tolist():
            self.count[f] = self.count.get(f, 0) + int(counts[f])
            self.total[f] = (self.total.get(f, 0) + int(sums[f])) & 0xFFFFFFFFFFFFFFFF

    def result(self) -> Dict[str, List[int]]:
        return {str(f): [self.count[f], self.total[f]] for f in sorted(self.count)}


def _rss(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(field)


def ours(location: str, options_json: str) -> dict:
    import delta_occ as docc

    options = json.loads(options_json) or None
    snap = docc.Table(location, storage_options=options).snapshot()
    per_file = PerFile()
    reader = snap.to_batches(columns=["id", "file_no", "x"], batch_size=262_144)  # small hashing temporaries
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # VmHWM := current RSS
    before = _rss("VmRSS")
    for batch in reader:
        per_file.add(batch)
    return {"files": per_file.result(), "peak_growth": _rss("VmHWM") - before}


def kernel(uri: str) -> dict:
    import delta_kernel_rust_sharing_wrapper as dk

    iface = dk.PythonInterface(uri)
    result = dk.ScanBuilder(dk.Table(uri).snapshot(iface)).build().execute(iface)
    per_file = PerFile()
    batches = result.to_batches() if isinstance(result, pa.Table) else result
    for batch in batches:
        per_file.add(batch)
    return {"files": per_file.result()}


if __name__ == "__main__":
    mode = sys.argv[1]
    out = ours(sys.argv[2], sys.argv[3]) if mode == "ours" else kernel(sys.argv[2])
    print(json.dumps(out))
