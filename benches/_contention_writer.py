"""One writer process of ``bench_contention.py``: ``python _contention_writer.py CONFIG_JSON``.

It imports its library, waits for the common start instant, then runs its operations one after
another as fast as it can and writes one JSON document: per operation its kind, start, latency,
attempts (delta_occ's ``CommitResult.attempts``; deltalake does not report them) and, when it
failed, the exception's class and first line. Nothing is retried here: a failure is what the
library gave up on.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any, Dict, List


def main() -> None:
    cfg: Dict[str, Any] = json.loads(sys.argv[1])
    import pyarrow as pa

    system, uri, opts = cfg["system"], cfg["uri"], cfg["storage_options"] or None
    schema = pa.schema([("id", pa.int64()), ("w", pa.int64())])
    if system == "delta_occ":
        import delta_occ

        table = delta_occ.Table(uri, storage_options=opts)

        def append(i: int) -> Any:
            return table.append(pa.table({"id": [i], "w": [cfg["writer"]]}, schema=schema)).attempts

        def delete(k: int) -> Any:
            return table.delete(f"id = {k}").attempts
    else:
        import deltalake

        def append(i: int) -> Any:
            deltalake.write_deltalake(uri, pa.table({"id": [i], "w": [cfg["writer"]]}, schema=schema), mode="append", storage_options=opts)
            return None

        def delete(k: int) -> Any:
            deltalake.DeltaTable(uri, storage_options=opts).delete(f"id = {k}")
            return None

    ops: List[Any] = cfg["ops"]
    out: List[Dict[str, Any]] = []
    while time.time() < cfg["start_at"]:
        time.sleep(0.002)
    for kind, arg in ops:
        t0 = time.time()
        rec: Dict[str, Any] = {"kind": kind, "start": t0}
        try:
            rec["attempts"] = append(arg) if kind == "append" else delete(arg)
        except Exception as e:  # noqa: BLE001 - every failure is a measured outcome
            rec["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
        rec["latency"] = time.time() - t0
        out.append(rec)
    with open(cfg["out"], "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
