"""Conflict-checker throughput (issue #3 item 5): one transaction that read version 0, checked
against 1,000 winning commits holding $DELTA_OCC_BENCH_ADDS (default 1,000,000) added files,
with a partition predicate and with a data predicate. No winner conflicts, so every action is
checked. The competitor is a straightforward pure-Python implementation of the same rules
(concurrency.md §3 checks 5-7 for these commits) in the same run.

Reported per case (extra_info): winner actions checked per second for the check alone (winners
already parsed) and end to end (reading and parsing the 1,000 commit files too), and the ratio to
the pure-Python version.
"""

from __future__ import annotations

import json
import pathlib
import time

import pytest

import delta_occ as docc

from _tables import ADDS, BENCH_DIR, ROUNDS

WINNERS = 1000
PARTITIONS = 100
CASES = {
    # predicate, data_skipping
    "partition": ("p = 100000", False),
    "data": ("x > 1000000000", True),
}


def _generate(root: pathlib.Path, adds: int) -> None:
    import pyarrow as pa

    docc.Table.create(str(root), pa.schema([("id", pa.int64()), ("p", pa.int32()), ("x", pa.int64())]), ["p"],
                      {"delta.isolationLevel": "Serializable", "delta.checkpointInterval": "1000000"})
    per = max(1, adds // WINNERS)
    log = root / "_delta_log"
    n = 0
    for v in range(1, WINNERS + 1):
        info = {"commitInfo": {"timestamp": 1700000000000 + v, "operation": "MERGE", "isBlindAppend": False,
                               "operationParameters": {}, "txnId": f"bench-{v}"}}
        lines = [json.dumps(info)]
        for i in range(per):
            n += 1
            stats = json.dumps({"numRecords": 100, "minValues": {"id": n * 100, "x": n % 1000},
                                "maxValues": {"id": n * 100 + 99, "x": n % 1000 + 500},
                                "nullCount": {"id": 0, "x": 0}})
            p = n % PARTITIONS
            lines.append(json.dumps({"add": {"path": f"p={p}/part-{n:09d}.parquet", "partitionValues": {"p": str(p)},
                                             "size": 1000 + i, "modificationTime": 1700000000000, "dataChange": True,
                                             "stats": stats}}))
        (log / f"{v:020}.json").write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def winners_table() -> str:
    root = BENCH_DIR / f"checker-{ADDS}"
    if not (root / "_delta_log" / f"{WINNERS:020}.json").exists():
        import shutil

        shutil.rmtree(root, ignore_errors=True)
        _generate(root, ADDS)
    return str(root)


def _txn(path: str, predicate: str, data_skipping: bool):
    txn = docc.Table(path).begin(read_version=0, data_skipping=data_skipping)
    txn.scan(predicate)
    txn.add_file("p=0/bench-own.parquet", {"p": "0"}, 1)
    return txn


def _read_winners(path: str):
    out = []
    log = pathlib.Path(path) / "_delta_log"
    for v in range(1, WINNERS + 1):
        adds, removes, info = [], [], None
        with open(log / f"{v:020}.json") as f:
            for line in f:
                a = json.loads(line)
                if "add" in a:
                    adds.append(a["add"])
                elif "remove" in a:
                    removes.append(a["remove"])
                elif "commitInfo" in a:
                    info = a["commitInfo"]
        out.append((v, info, adds, removes))
    return out


def python_check(winners, case: str, read_files=frozenset(), removed=frozenset()) -> int:
    """The same rules in plain Python: checks 5 (partition or stats), 6 and 7."""
    checked = 0
    for v, _info, adds, removes in winners:
        for a in adds:
            checked += 1
            if not a["dataChange"]:
                continue
            if case == "partition":
                pv = a["partitionValues"].get("p")
                if pv is not None and pv != "" and int(pv) == 100000:
                    raise RuntimeError(f"append conflict at {v}")
            else:
                stats = json.loads(a["stats"]) if a.get("stats") else None
                hi = stats.get("maxValues", {}).get("x") if stats else None
                if hi is None or hi > 1000000000:
                    raise RuntimeError(f"append conflict at {v}")
        for r in removes:
            checked += 1
            if r["path"] in read_files:
                raise RuntimeError("delete-read")
            if r["path"] in removed:
                raise RuntimeError("delete-delete")
    return checked


@pytest.mark.parametrize("case", list(CASES))
def test_delta_occ_checker(benchmark, winners_table, case):
    predicate, skipping = CASES[case]
    txn = _txn(winners_table, predicate, skipping)
    results = []

    def run():
        results.append(txn.validate())

    benchmark.group = f"checker-{case}"
    benchmark.pedantic(run, rounds=ROUNDS, iterations=1, warmup_rounds=0)
    r = min(results, key=lambda x: x["check_seconds"])
    e2e = min(results, key=lambda x: x["read_seconds"] + x["check_seconds"])
    assert r["winners"] == WINNERS and r["actions"] == WINNERS * max(1, ADDS // WINNERS)
    benchmark.extra_info.update(
        actions=r["actions"],
        check_seconds=r["check_seconds"],
        check_actions_per_second=r["actions"] / r["check_seconds"],
        end_to_end_seconds=e2e["read_seconds"] + e2e["check_seconds"],
        end_to_end_actions_per_second=r["actions"] / (e2e["read_seconds"] + e2e["check_seconds"]),
    )
    _RESULTS[("delta-occ", case)] = benchmark.extra_info


@pytest.mark.parametrize("case", list(CASES))
def test_pure_python_checker(benchmark, winners_table, case):
    parsed = _read_winners(winners_table)
    times = []

    def run():
        t0 = time.perf_counter()
        n = python_check(parsed, case)
        times.append(time.perf_counter() - t0)
        return n

    benchmark.group = f"checker-{case}"
    n = benchmark.pedantic(run, rounds=ROUNDS, iterations=1, warmup_rounds=0)
    t0 = time.perf_counter()
    python_check(_read_winners(winners_table), case)
    e2e = time.perf_counter() - t0
    benchmark.extra_info.update(
        actions=n,
        check_seconds=min(times),
        check_actions_per_second=n / min(times),
        end_to_end_seconds=e2e,
        end_to_end_actions_per_second=n / e2e,
    )
    ours = _RESULTS.get(("delta-occ", case))
    if ours:
        ratio = ours["check_actions_per_second"] / benchmark.extra_info["check_actions_per_second"]
        ratio_e2e = ours["end_to_end_actions_per_second"] / benchmark.extra_info["end_to_end_actions_per_second"]
        benchmark.extra_info.update(speedup_check=ratio, speedup_end_to_end=ratio_e2e)
        print(
            f"\n[{case}] delta-occ {ours['check_actions_per_second'] / 1e6:.2f} M actions/s checked "
            f"({ours['end_to_end_actions_per_second'] / 1e6:.2f} M/s with reading); pure Python "
            f"{benchmark.extra_info['check_actions_per_second'] / 1e6:.3f} M/s "
            f"({benchmark.extra_info['end_to_end_actions_per_second'] / 1e6:.3f} M/s); "
            f"ratio {ratio:.1f}x check, {ratio_e2e:.1f}x end to end"
        )


_RESULTS: dict = {}
