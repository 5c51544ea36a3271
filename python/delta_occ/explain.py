"""Why a commit passed its conflict checks, or why a transaction failed them.

`commit(table, version)` reads what delta-occ recorded in the commit's `commitInfo.deltaOcc`: the
concurrent commits (winners) it was checked against and, for each, the ids of the rules that let
it pass (and the sentence the checker wrote for humans). It names the rule of concurrency.md that
let the commit pass or be rebased, and the files and partitions the commit shares with each
winner. `conflict(exception)` says the same of a conflict exception: the winning version, the
rule, the file and the partition.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from ._args import version_arg
from .exceptions import DeltaConcurrentModificationException, VersionNotFoundError, rule_text

# Legacy, only for records written before rule ids (no "rules" in a checkedWinners entry): the
# checker's sentences of those versions → the id of the rule they apply (its text is the core's).
# Checked in order; the first matching phrase names the rule. Newer records are read by id.
_LEGACY_PHRASES: Sequence[Tuple[str, str]] = (
    ("rule disabled for a test", "pass_rule_disabled"),
    ("bin was dropped", "pass_bin_dropped"),
    ("which this compaction carries", "pass_compaction_carries_deletes"),
    ("rows were all deleted already", "pass_all_rows_deleted"),
    ("none of which this transaction read or changes", "pass_disjoint_rows"),
    ("none of the rows in the winner's", "pass_no_added_row_matches"),
    ("transaction is a blind append", "pass_blind_append"),
    ("SnapshotIsolation", "pass_snapshot_isolation"),
    ("WriteSerializable ignores", "pass_write_serializable"),
    ("recorded no read predicate", "pass_no_read_predicate"),
    ("(partition values and statistics)", "pass_data_skipping"),
    ("(partition values)", "pass_partitions"),
    ("added no data files", "pass_no_data_added"),
    ("added no new data files", "pass_no_new_data_files"),
)


def pass_rules(outcome: str) -> List[str]:
    """The rules that let a transaction pass one winner, from the sentence an older delta-occ
    recorded (the most specific first). Records with rule ids are read by `record_rules`."""
    ids = [rule for phrase, rule in _LEGACY_PHRASES if phrase in outcome] or ["pass_no_check_failed"]
    return [rule_text(i) or i for i in dict.fromkeys(ids)]


def record_rules(rec: Dict[str, Any]) -> Tuple[List[str], List[str]]:
    """The rules that let a transaction pass one winner, from a ``checkedWinners`` record or a
    ``CommitResult.checks`` entry: their ids (empty for an old record) and their texts, the most
    specific first."""
    ids = rec.get("rules")
    if ids:
        return list(ids), [rule_text(i) or i for i in ids]
    return [], pass_rules(rec.get("outcome", ""))


def conflict(e: DeltaConcurrentModificationException) -> Dict[str, Any]:
    """The winning version, the rule that failed, the file and the partition (``e.explain()``)."""
    return e.explain()


def commit(table: Any, version: int) -> Dict[str, Any]:
    """What commit `version` of `table` (a `delta_occ.Table`) was checked against and why it
    passed each check."""
    version_arg("version", version)
    summary = _summary(table, version)
    info = summary["commit_info"] or {}
    occ = info.get("deltaOcc") or {}
    mine = _files(table, version, summary)
    records = occ.get("checkedWinners", [])
    # The winners' commits fetched together (one round of requests on an object store).
    winners = {v: _parsed(table, v, s) for v, s in summaries(table, sorted({rec["version"] for rec in records}))}
    checked = []
    for rec in records:
        theirs = _files(table, rec["version"], winners[rec["version"]])
        ids, rules = record_rules(rec)
        checked.append({
            "version": rec["version"],
            "operation": rec["operation"],
            "rule": rules[0],
            "rules": rules,
            "rule_ids": ids,
            "outcome": rec["outcome"],
            "shared_files": sorted(set(mine) & set(theirs)),
            "shared_partitions": _shared_partitions(mine, theirs),
        })
    fields = commit_fields(info, version)
    return {
        "table": table.path,
        **fields,
        "operation": summary["operation"],
        "files": mine,
        "checked": checked,
        "winners_not_recorded": occ.get("winnersNotRecorded", 0),
        "summary": summary_sentence(version, fields["read_version"], occ, checked),
    }


#: A MERGE commitInfo's clause lists (Delta's operationParameters), by group.
_CLAUSE_GROUPS = (("matchedPredicates", "WHEN MATCHED"), ("notMatchedPredicates", "WHEN NOT MATCHED"),
                  ("notMatchedBySourcePredicates", "WHEN NOT MATCHED BY SOURCE"))


def merge_clauses(parameters: Dict[str, Any]) -> List[str]:
    """A MERGE's clauses as SQL (``WHEN MATCHED AND s.v > 1 THEN UPDATE``), in group and call
    order, from the ``*Predicates`` parameters delta-occ and Delta record (empty for others)."""
    out: List[str] = []
    for key, group in _CLAUSE_GROUPS:
        raw = parameters.get(key)
        try:
            items = json.loads(raw) if isinstance(raw, str) else (raw or [])
        except ValueError:
            continue
        for c in items if isinstance(items, list) else []:
            if isinstance(c, dict):
                cond = f" AND {c['predicate']}" if c.get("predicate") else ""
                out.append(f"{group}{cond} THEN {str(c.get('actionType', '?')).upper()}")
    return out


def commit_fields(info: Dict[str, Any], version: int) -> Dict[str, Any]:
    """What a commitInfo says about how its commit was made (for `explain` and `history`)."""
    occ = info.get("deltaOcc") or {}
    return {
        "clauses": merge_clauses(info.get("operationParameters") or {}),
        "version": version,
        "timestamp": info.get("inCommitTimestamp", info.get("timestamp")),
        "operation": info.get("operation"),
        "parameters": info.get("operationParameters", {}),
        "read_version": info.get("readVersion"),
        "isolation_level": info.get("isolationLevel"),
        "blind_append": info.get("isBlindAppend"),
        "rebased_over": [w["version"] for w in occ.get("checkedWinners", [])],
        "attempts": occ.get("attempt"),
        "engine": info.get("engineInfo"),
    }


#: Commits fetched at once by `summaries` (one round of concurrent requests; memory holds this many).
SUMMARY_BATCH = 256


def summaries(table: Any, versions: Sequence[int]) -> Iterator[Tuple[int, Optional[Dict[str, Any]]]]:
    """``(version, TableHandle.commit_summary)`` for each of ``versions`` in order (``None`` for a
    commit file that does not exist), fetched a batch at a time, each batch concurrently: a range
    of commits on an object store costs a round trip per batch, not per commit."""
    versions = list(versions)
    for i in range(0, len(versions), SUMMARY_BATCH):
        batch = versions[i : i + SUMMARY_BATCH]
        yield from zip(batch, table.handle.commit_summaries(batch))


def _summary(table: Any, version: int) -> Dict[str, Any]:
    return _parsed(table, version, table.handle.commit_summary(version))


def _parsed(table: Any, version: int, s: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """A commit summary with its commitInfo parsed; VersionNotFoundError for a missing commit."""
    if s is None:
        latest = table.refresh()
        why = f"the latest is {latest}" if version > latest else "its commit file is gone (log cleanup?)"
        raise VersionNotFoundError(f"version {version} of {table.path} cannot be explained: {why}", table=table.path, version=version)
    s["commit_info"] = json.loads(s["commit_info"]) if s["commit_info"] else None
    return s


def _files(table: Any, version: int, summary: Dict[str, Any]) -> Dict[str, Optional[Dict[str, Any]]]:
    """Every data file the commit added or removed, with its partition values (a removed file's
    come from the remove action or the snapshot before the commit)."""
    out: Dict[str, Optional[Dict[str, Any]]] = {a["path"]: a.get("partition_values") for a in summary["added"]}
    missing = []
    for r in summary["removed"]:
        pv = r.get("partition_values")
        if pv is None and r["path"] not in out:
            missing.append(r["path"])
        out.setdefault(r["path"], pv)
    if missing and version > 0:
        files = table.snapshot(version - 1).files(["path", "partition_values"])
        known = dict(zip(files.column("path").to_pylist(), files.column("partition_values").to_pylist()))
        for path in missing:
            pv = known.get(path)
            out[path] = dict(pv) if isinstance(pv, list) else pv
    return out


def _shared_partitions(mine: Dict[str, Any], theirs: Dict[str, Any]) -> List[Dict[str, Any]]:
    def keys(files: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
        return {json.dumps(pv, sort_keys=True): pv for pv in files.values() if pv}

    a, b = keys(mine), keys(theirs)
    return [a[k] for k in sorted(a.keys() & b.keys())]


def summary_sentence(version: int, read_version: Optional[int], occ: Dict[str, Any], checked: List[Dict[str, Any]]) -> str:
    """`explain`'s one-line account of a commit: its read version and the winners (``version``,
    ``operation``) it was checked against, from its ``commitInfo.deltaOcc`` (``occ``)."""
    if read_version is None:
        return f"version {version} carries no read version: its writer recorded no conflict checks"
    if not occ:
        if read_version == version - 1:
            return f"read version {read_version}; no concurrent commit to check"
        return f"read version {read_version}, committed at {version}: its writer recorded no conflict checks"
    if not checked:
        return f"read version {read_version}; committed on attempt {occ.get('attempt', 1)} with no concurrent commit to check"
    over = ", ".join(f"v{c['version']} ({c['operation']})" for c in checked)
    return f"read version {read_version}; checked against {over} and rebased on attempt {occ.get('attempt')}"
