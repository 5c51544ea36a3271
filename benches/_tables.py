"""Generated Delta logs for the snapshot-load benchmarks, cached on disk.

Tables are written under ``$DELTA_OCC_BENCH_DIR`` (default ``/tmp/delta-occ-bench``) as
``<shape>-<adds>/`` and reused by later runs.  A table directory only appears once it is
complete (it is generated under a temporary name and renamed at the end), so an interrupted
generation never leaves a half-written table behind that later runs would trust.

``$DELTA_OCC_BENCH_ADDS`` (default 1,000,000) is the number of add actions per table.  The
three shapes (see ``SHAPES``):

* ``single_commit`` -- unpartitioned.  Version 0 holds commitInfo, protocol, metaData and all
  ``adds`` add actions.  Expected: version 0, ``adds`` live files.
* ``many_commits`` -- partitioned by ``date``.  ``N = max(1, min(1000, adds // 100))`` JSON
  commits (versions 0..N-1) of ``adds / N`` adds each (the remainder goes to the first
  commits); version 0 also holds protocol and metaData, every commit has a commitInfo and
  writes one ``date=`` partition (a daily append job).  1,000,000 adds -> 1,000 commits of
  1,000; 2,000 adds -> 20 commits of 100.  Expected: version N-1, ``adds`` live files.
* ``checkpoint`` -- partitioned by ``date``.  Commits 0..10 spread the ``adds`` add actions
  over 11 JSON commits; deltalake then writes the classic single-file checkpoint
  ``_delta_log/00000000000000000010.checkpoint.parquet`` (+ ``_last_checkpoint``) with
  ``DeltaTable.create_checkpoint()``; commits 11 and 12 follow as JSON with 5 adds each, and
  commit 12 also removes 2 files that live in the checkpoint.  Expected: version 12,
  ``adds + 10 - 2`` live files.

Add actions look like what Spark / delta-rs write: ``[date=YYYY-MM-DD/]part-00000-<uuid4>-c000.snappy.parquet``,
a size, a modificationTime, ``dataChange: true`` and a JSON stats string with numRecords,
min/max values and null counts.  The data files themselves do not exist: neither reader
opens them when it loads a snapshot.  Table schema: ``id long, value double, date string``.
Generation is streaming: add lines are formatted in chunks and appended to the commit file,
so memory stays flat whatever ``adds`` is (except for deltalake's own checkpoint writer).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import os
import pathlib
import random
import shutil
import time
import uuid
from typing import Callable, Dict, Iterator, List, Optional

BENCH_DIR = pathlib.Path(os.environ.get("DELTA_OCC_BENCH_DIR", "/tmp/delta-occ-bench"))
ADDS = int(os.environ.get("DELTA_OCC_BENCH_ADDS", "1000000"))
ROUNDS = int(os.environ.get("DELTA_OCC_BENCH_ROUNDS", "3"))  # pedantic rounds per benchmark

SHAPES = ("single_commit", "many_commits", "checkpoint")

CHECKPOINT_VERSION = 10
CHECKPOINT_TAIL_ADDS = 5  # adds in each of commits 11 and 12
CHECKPOINT_TAIL_REMOVES = 2  # files from the checkpoint removed by commit 12

_CHUNK = 20_000  # add lines formatted per write()
_BASE_TS_MS = 1_704_067_200_000  # 2024-01-01T00:00:00Z
_BASE_DATE = _dt.date(2024, 1, 1)

_SCHEMA_STRING = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "value", "type": "double", "nullable": True, "metadata": {}},
            {"name": "date", "type": "string", "nullable": True, "metadata": {}},
        ],
    },
    separators=(",", ":"),
)


@dataclasses.dataclass(frozen=True)
class BenchTable:
    shape: str
    path: str
    version: int  # latest version
    num_files: int  # live add actions at that version
    partitioned: bool
    generation_seconds: Optional[float]  # None when it came from the cache


def many_commits_count(adds: int) -> int:
    """Number of commits of the ``many_commits`` shape."""
    return max(1, min(1000, adds // 100))


def _split(total: int, parts: int) -> List[int]:
    q, r = divmod(total, parts)
    return [q + (1 if i < r else 0) for i in range(parts)]


def _j(obj) -> str:
    return json.dumps(obj, separators=(",", ":"))


# ---------------------------------------------------------------------------------------
# action lines


def _commit_info(version: int, ts: int, op: str, mode: Optional[str], num_adds: int, num_removes: int = 0,
                 partition_by: Optional[List[str]] = None) -> str:
    params: Dict[str, str] = {"mode": mode} if mode is not None else {"predicate": "[\"(id = 0)\"]"}
    if partition_by is not None:
        params["partitionBy"] = _j(partition_by)
    info = {
        "timestamp": ts,
        "operation": op,
        "operationParameters": params,
        "readVersion": version - 1 if version > 0 else None,
        "isolationLevel": "Serializable",
        "isBlindAppend": num_removes == 0,
        "operationMetrics": {
            "numFiles": str(num_adds),
            "numOutputRows": str(num_adds * 100),
            "numRemovedFiles": str(num_removes),
        },
        "engineInfo": "delta-occ-bench",
        "txnId": str(uuid.uuid4()),
    }
    if version == 0:
        del info["readVersion"]
    return _j({"commitInfo": info})


def _protocol() -> str:
    return _j({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}})


def _metadata(partition_by: List[str], ts: int) -> str:
    return _j(
        {
            "metaData": {
                "id": "6f0a1c2e-5b7d-4e8f-9a10-b1c2d3e4f506",
                "name": None,
                "description": None,
                "format": {"provider": "parquet", "options": {}},
                "schemaString": _SCHEMA_STRING,
                "partitionColumns": partition_by,
                "configuration": {},
                "createdTime": ts,
            }
        }
    )


class _AddWriter:
    """Formats realistic add actions; ``seq`` numbers files table-wide (ids are seq*100..)."""

    def __init__(self, seed: int, partitioned: bool) -> None:
        self.rng = random.Random(seed)
        self.partitioned = partitioned
        self.seq = 0

    def _file_name(self) -> str:
        u = uuid.UUID(int=self.rng.getrandbits(128), version=4)
        return f"part-00000-{u}-c000.snappy.parquet"

    def lines(self, count: int, ts: int, date: Optional[_dt.date] = None) -> Iterator[str]:
        """``count`` add lines.  Partitioned: every file goes to ``date`` (or, when None, the
        dates cycle over a year).  Unpartitioned: ``date`` is a data column with stats."""
        rng = self.rng
        for _ in range(count):
            s = self.seq
            self.seq += 1
            lo = s * 100
            vmin = round(rng.random() * 10, 3)
            vmax = round(vmin + rng.random() * 90, 3)
            size = rng.randint(1 << 20, 128 << 20)
            mtime = ts - rng.randint(0, 60_000)
            d = (date or (_BASE_DATE + _dt.timedelta(days=s % 365))).isoformat()
            name = self._file_name()
            if self.partitioned:
                path = f"date={d}/{name}"
                pv = f'{{"date":"{d}"}}'
                stats = (
                    f'{{\\"numRecords\\":100,\\"minValues\\":{{\\"id\\":{lo},\\"value\\":{vmin}}},'
                    f'\\"maxValues\\":{{\\"id\\":{lo + 99},\\"value\\":{vmax}}},'
                    f'\\"nullCount\\":{{\\"id\\":0,\\"value\\":0}}}}'
                )
            else:
                path = name
                pv = "{}"
                stats = (
                    f'{{\\"numRecords\\":100,\\"minValues\\":{{\\"id\\":{lo},\\"value\\":{vmin},\\"date\\":\\"{d}\\"}},'
                    f'\\"maxValues\\":{{\\"id\\":{lo + 99},\\"value\\":{vmax},\\"date\\":\\"{d}\\"}},'
                    f'\\"nullCount\\":{{\\"id\\":0,\\"value\\":0,\\"date\\":0}}}}'
                )
            yield (
                f'{{"add":{{"path":"{path}","partitionValues":{pv},"size":{size},'
                f'"modificationTime":{mtime},"dataChange":true,"stats":"{stats}"}}}}'
            )


def _write_commit(log: pathlib.Path, version: int, head: List[str], adds: Optional[Iterator[str]] = None,
                  tail: Optional[List[str]] = None) -> None:
    """Write one commit file; add lines are streamed in chunks."""
    target = log / f"{version:020d}.json"
    with open(target, "w", encoding="utf-8") as f:
        for line in head:
            f.write(line)
            f.write("\n")
        if adds is not None:
            buf: List[str] = []
            for line in adds:
                buf.append(line)
                if len(buf) >= _CHUNK:
                    f.write("\n".join(buf))
                    f.write("\n")
                    buf.clear()
            if buf:
                f.write("\n".join(buf))
                f.write("\n")
        for line in tail or []:
            f.write(line)
            f.write("\n")


# ---------------------------------------------------------------------------------------
# shapes


def _gen_single_commit(root: pathlib.Path, adds: int) -> None:
    log = root / "_delta_log"
    log.mkdir(parents=True)
    w = _AddWriter(seed=1, partitioned=False)
    ts = _BASE_TS_MS
    head = [_commit_info(0, ts, "WRITE", "ErrorIfExists", adds, partition_by=[]), _protocol(), _metadata([], ts)]
    _write_commit(log, 0, head, w.lines(adds, ts))


def _gen_many_commits(root: pathlib.Path, adds: int) -> None:
    log = root / "_delta_log"
    log.mkdir(parents=True)
    w = _AddWriter(seed=2, partitioned=True)
    for v, n in enumerate(_split(adds, many_commits_count(adds))):
        ts = _BASE_TS_MS + v * 86_400_000
        date = _BASE_DATE + _dt.timedelta(days=v)
        if v == 0:
            head = [_commit_info(0, ts, "WRITE", "ErrorIfExists", n, partition_by=["date"]), _protocol(),
                    _metadata(["date"], ts)]
        else:
            head = [_commit_info(v, ts, "WRITE", "Append", n)]
        _write_commit(log, v, head, w.lines(n, ts, date))


def _gen_checkpoint(root: pathlib.Path, adds: int) -> None:
    import deltalake  # only needed here

    log = root / "_delta_log"
    log.mkdir(parents=True)
    w = _AddWriter(seed=3, partitioned=True)
    removable: List[dict] = []
    for v, n in enumerate(_split(adds, CHECKPOINT_VERSION + 1)):
        ts = _BASE_TS_MS + v * 3_600_000
        if v == 0:
            head = [_commit_info(0, ts, "WRITE", "ErrorIfExists", n, partition_by=["date"]), _protocol(),
                    _metadata(["date"], ts)]
        else:
            head = [_commit_info(v, ts, "WRITE", "Append", n)]
        lines = w.lines(n, ts)
        if v == 0:
            # remember a couple of paths to remove after the checkpoint
            first = [next(lines) for _ in range(min(CHECKPOINT_TAIL_REMOVES, n))]
            removable = [json.loads(line)["add"] for line in first]
            lines = _chain(first, lines)
        _write_commit(log, v, head, lines)

    deltalake.DeltaTable(str(root)).create_checkpoint()
    cp = log / f"{CHECKPOINT_VERSION:020d}.checkpoint.parquet"
    if not cp.is_file():
        found = sorted(p.name for p in log.iterdir() if "checkpoint" in p.name)
        raise RuntimeError(f"deltalake did not write {cp.name}; found {found}")
    last = json.loads((log / "_last_checkpoint").read_text())
    if last.get("version") != CHECKPOINT_VERSION:
        raise RuntimeError(f"unexpected _last_checkpoint: {last}")

    for v in (CHECKPOINT_VERSION + 1, CHECKPOINT_VERSION + 2):
        ts = _BASE_TS_MS + v * 3_600_000
        tail: List[str] = []
        if v == CHECKPOINT_VERSION + 2:
            tail = [
                _j({"remove": {"path": a["path"], "deletionTimestamp": ts, "dataChange": True,
                               "extendedFileMetadata": True, "partitionValues": a["partitionValues"],
                               "size": a["size"]}})
                for a in removable
            ]
        if tail:  # an UPDATE rewriting two files
            head = [_commit_info(v, ts, "UPDATE", None, CHECKPOINT_TAIL_ADDS, len(tail))]
        else:
            head = [_commit_info(v, ts, "WRITE", "Append", CHECKPOINT_TAIL_ADDS)]
        _write_commit(log, v, head, w.lines(CHECKPOINT_TAIL_ADDS, ts), tail)


def _chain(first: List[str], rest: Iterator[str]) -> Iterator[str]:
    yield from first
    yield from rest


def expected(shape: str, adds: int) -> Dict[str, int]:
    if shape == "single_commit":
        return {"version": 0, "num_files": adds}
    if shape == "many_commits":
        return {"version": many_commits_count(adds) - 1, "num_files": adds}
    if shape == "checkpoint":
        return {
            "version": CHECKPOINT_VERSION + 2,
            "num_files": adds + 2 * CHECKPOINT_TAIL_ADDS - min(CHECKPOINT_TAIL_REMOVES, _split(adds, CHECKPOINT_VERSION + 1)[0]),
        }
    raise ValueError(shape)


_GENERATORS: Dict[str, Callable[[pathlib.Path, int], None]] = {
    "single_commit": _gen_single_commit,
    "many_commits": _gen_many_commits,
    "checkpoint": _gen_checkpoint,
}
_PARTITIONED = {"single_commit": False, "many_commits": True, "checkpoint": True}


def ensure_table(shape: str, adds: int = ADDS, base: pathlib.Path = BENCH_DIR) -> BenchTable:
    """Return the cached table for (shape, adds), generating it first if needed."""
    final = base / f"{shape}-{adds}"
    seconds: Optional[float] = None
    if not final.is_dir():
        base.mkdir(parents=True, exist_ok=True)
        tmp = base / f".{shape}-{adds}.tmp-{os.getpid()}"
        if tmp.exists():
            shutil.rmtree(tmp)
        t0 = time.perf_counter()
        try:
            _GENERATORS[shape](tmp, adds)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        seconds = time.perf_counter() - t0
        os.rename(tmp, final)
        _record_generation(base, f"{shape}-{adds}", seconds)
    exp = expected(shape, adds)
    return BenchTable(shape, str(final), exp["version"], exp["num_files"], _PARTITIONED[shape], seconds)


def _record_generation(base: pathlib.Path, key: str, seconds: float) -> None:
    path = base / "generation.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        data = {}
    data[key] = {"seconds": round(seconds, 3), "generated_at": time.strftime("%Y-%m-%dT%H:%M:%S")}
    path.write_text(json.dumps(data, indent=2, sort_keys=True))
