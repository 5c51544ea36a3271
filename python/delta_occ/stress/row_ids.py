"""The row-tracking checks of ``delta-occ stress --row-tracking`` (issue 30: "row ids unique
across all live files at every version, never reused, each row's id unchanged by DV-DELETE,
commit versions right after rebases"). A row's id is the one materialized in its file, else its
file's ``baseRowId`` plus its physical position (protocol "Row Tracking"; OPTIMIZE copies rows
with their ids materialized); the workload's ``id`` column names each row for good, so the checks
compare the ids the log gives each ``id`` version by version. A row's commit version is the
version that last wrote it: where its ``x`` changed (UPDATE, MERGE), or it appeared."""

from __future__ import annotations

import json
from typing import Dict, List, Set

from .._write import Layout
from ..operations.row_tracking import ROW_COMMIT_VERSION, ROW_ID
from ..table import Table


def check(t: Table, latest: int) -> List[str]:
    """Anomalies of the row ids over versions 1..``latest`` (empty when all hold)."""
    anomalies: List[str] = []
    id_of: Dict[int, int] = {}  # workload id -> row id, from the version it first appeared
    commit_of: Dict[int, int] = {}  # workload id -> row commit version at the last version read
    x_of: Dict[int, int] = {}  # workload id -> its x at the last version read
    owner: Dict[int, int] = {}  # row id -> workload id
    added_at: Dict[str, int] = {}
    previous: Set[str] = set()
    present: Set[int] = set()  # workload ids live at the previous version
    for v in range(1, latest + 1):
        snap = t.snapshot(v)
        files = snap.files(["path", "base_row_id", "default_row_commit_version"]).to_pylist()
        paths = {f["path"] for f in files}
        for p in paths - previous:
            added_at.setdefault(p, v)
        previous = paths
        lay = Layout(snap)
        seen: Dict[int, int] = {}
        now: Set[int] = set()
        top = -1
        for f in files:
            base, version = f["base_row_id"], f["default_row_commit_version"]
            if base is None or version is None:
                anomalies.append(f"version {v}: {f['path']} has no baseRowId/defaultRowCommitVersion")
                continue
            if version != added_at[f["path"]]:
                anomalies.append(f"version {v}: {f['path']} has defaultRowCommitVersion {version} but was added at version {added_at[f['path']]}")
            rows = lay.reader.read_rows(f["path"], ["id", "x"], positions=False, ids=True)
            columns = (rows.column(c).to_pylist() for c in ("id", "x", ROW_ID, ROW_COMMIT_VERSION))
            for key, x, rid, rv in zip(*columns):
                now.add(key)
                if key not in present:
                    # (re)appearing: a new row (a MERGE may insert an id deleted before)
                    id_of.pop(key, None)
                    commit_of.pop(key, None)
                before = commit_of.get(key)
                # A new or changed row was written at this version; any other keeps its commit
                # version (or takes this one: a MERGE may set the value the row had).
                want = (v,) if before is None or x_of.get(key) != x else (before, v)
                if rv not in want:
                    anomalies.append(f"version {v}: id {key} has row commit version {rv}, not {' or '.join(map(str, want))}")
                commit_of[key], x_of[key] = rv, x
                top = max(top, rid)
                if rid in seen:
                    anomalies.append(f"version {v}: row id {rid} held by ids {seen[rid]} and {key}")
                seen[rid] = key
                if id_of.setdefault(key, rid) != rid:
                    anomalies.append(f"version {v}: id {key} changed row id {id_of[key]} -> {rid}")
                if owner.setdefault(rid, key) != key:
                    anomalies.append(f"version {v}: row id {rid} of id {owner[rid]} reused by id {key}")
        present = now
        mark = json.loads(snap.domain_metadata.get("delta.rowTracking", '{"rowIdHighWaterMark": -1}'))["rowIdHighWaterMark"]
        if top > mark:
            anomalies.append(f"version {v}: row id {top} above the high-water mark {mark}")
    return anomalies


__all__ = ["check"]
