"""Rule identities (issue 28): every conflict names the rule of concurrency.md that failed by a
stable id (``e.rule``, ``e.fallback``), every pass record names the rules that let a winner pass
(``CommitResult.checks[i]["rules"]``, ``commitInfo.deltaOcc.checkedWinners[i].rules``), and the
texts ``explain`` gives come from the core. The expected ids and texts are written here from
concurrency.md §3/§4 and the ids documented in docs/guide.md, not taken from the code."""

from __future__ import annotations

import pyarrow as pa
import pytest

import delta_occ as docc
from delta_occ import _core, explain
from delta_occ import exceptions as ex

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.int32()), ("x", pa.int64())])

# The documented ids: §3 checks 1-8, §4 rules 1, 2 and 4, and the §4 rule 6 fallbacks.
CONFLICT_IDS = {
    "protocol_changed", "both_created_table", "metadata_changed", "same_domain", "app_id_read",
    "concurrent_append", "delete_read", "delete_delete", "identity_columns",
    "row_delete_delete", "row_delete_read", "row_append",
}
FALLBACK_IDS = {"fallback_predicate", "fallback_unreadable", "fallback_time_budget", "fallback_no_provenance"}
RULE6 = "§4 rule 6: row-level concurrency fell back to file level"


def rows(ids, p=1, x=None):
    ids = list(ids)
    return pa.table({"id": ids, "p": [p] * len(ids), "x": list(x) if x is not None else ids}, schema=SCHEMA)


def table(tmp_path, name="t", dv=False, level="Serializable", partition_by=("p",)):
    props = {"delta.isolationLevel": level}
    if dv:
        props["delta.enableDeletionVectors"] = "true"
    t = docc.Table.create(str(tmp_path / name), SCHEMA, partition_by=list(partition_by), properties=props)
    t.append(rows(range(1, 6), p=1))
    t.append(rows(range(6, 11), p=2))
    return t


def conflict(txn):
    with pytest.raises(ex.DeltaConcurrentModificationException) as info:
        txn.commit()
    return info.value


def test_every_rule_id_has_a_description_and_ids_are_unique():
    ids = _core.rule_ids()
    assert len(ids) == len(set(ids))
    assert CONFLICT_IDS | FALLBACK_IDS <= set(ids)
    assert all(i.startswith("pass_") for i in set(ids) - CONFLICT_IDS - FALLBACK_IDS)
    for i in ids:
        text = _core.rule_description(i)
        assert isinstance(text, str) and text.strip(), i
    assert _core.rule_description("no_such_rule") is None
    assert _core.rule_description("row_delete_delete") == "§4 rule 1: both changed the same rows"
    assert all(_core.rule_description(f) == RULE6 for f in FALLBACK_IDS)


def test_concurrent_append_at_file_level(tmp_path):
    t = table(tmp_path)
    txn = t.begin()
    txn.scan("p = 1")
    txn.append(rows([100], p=1))
    t.append(rows([101], p=1))
    e = conflict(txn)
    assert type(e) is ex.ConcurrentAppendException
    assert (e.rule, e.fallback) == ("concurrent_append", None)
    assert e.explain()["rule"] == "§3 check 5: the winner added files this transaction should have read"


def test_delete_read_and_delete_delete_at_file_level(tmp_path):
    t = table(tmp_path)
    (a,) = [p for p in t.snapshot().files(["path"]).column("path").to_pylist() if p.startswith("p=1/")]
    reader = t.begin()
    reader.scan("p = 1")
    reader.append(rows([100], p=3))
    remover = t.begin()
    remover.remove_file(a)
    winner = t.begin()
    winner.remove_file(a)
    winner.commit()
    e = conflict(reader)
    assert type(e) is ex.ConcurrentDeleteReadException and (e.rule, e.fallback) == ("delete_read", None)
    assert e.explain()["rule"] == "§3 check 6: the winner removed a file this transaction read"
    e = conflict(remover)
    assert type(e) is ex.ConcurrentDeleteDeleteException and e.rule == "delete_delete"
    assert e.explain()["rule"] == "§3 check 7: both removed the same file"


def test_metadata_protocol_and_application_rules(tmp_path):
    t = table(tmp_path)
    txn = t.begin()
    txn.append(rows([100]))
    t.set_properties({"owner": "x"})
    e = conflict(txn)
    assert type(e) is ex.MetadataChangedException and e.rule == "metadata_changed"
    assert e.explain()["rule"] == "§3 check 2: a metadata change fails every concurrent writer"

    txn = t.begin()
    txn.app_version("t1")
    txn.set_app_version("t1", 1)
    txn.append(rows([101]))
    w = t.begin()
    w.set_app_version("t1", 1)
    w.commit()
    e = conflict(txn)
    assert type(e) is ex.ConcurrentTransactionException and e.rule == "app_id_read"
    assert e.explain()["rule"] == "§3 check 4: the winner set an application id this transaction read"

    txn = t.begin()
    txn.set_domain_metadata("app.settings", "{}")
    w = t.begin()
    w.set_domain_metadata("app.settings", '{"a": 1}')
    w.commit()
    e = conflict(txn)
    assert type(e) is ex.ConcurrentTransactionException and e.rule == "same_domain"
    assert e.explain()["rule"] == "§3 check 3: both wrote the same metadata domain"


def test_both_created_the_table(tmp_path):
    path = str(tmp_path / "t")
    first = docc.Table.begin_create(path, SCHEMA, ["p"])
    second = docc.Table.begin_create(path, SCHEMA, ["p"])
    first.commit("CREATE TABLE")
    e = conflict(second)
    assert type(e) is ex.ProtocolChangedException and e.rule == "both_created_table"
    assert e.explain()["rule"].startswith("§3 check 1: a protocol change fails every concurrent writer")


def test_row_level_rules(tmp_path):
    t = table(tmp_path, dv=True, partition_by=())
    # §4 rule 1: the same row deleted twice.
    txn = t.begin()
    txn.delete("id = 2")
    t.delete("id = 2")
    e = conflict(txn)
    assert type(e) is ex.ConcurrentDeleteDeleteException
    assert (e.rule, e.fallback, e.overlapping_rows) == ("row_delete_delete", None, 1)
    assert e.explain()["rule"] == "§4 rule 1: both changed the same rows"
    # §4 rule 2: the winner deleted a row this transaction read.
    txn = t.begin()
    txn.scan("id = 3")
    txn.delete("id = 4")
    t.delete("id = 3")
    e = conflict(txn)
    assert type(e) is ex.ConcurrentDeleteReadException and e.rule == "row_delete_read"
    assert e.explain()["rule"] == "§4 rule 2: the winner changed rows this transaction read"
    # §4 rule 4: the winner added a row this transaction's predicate matches (Serializable).
    txn = t.begin()
    txn.scan("id = 100")
    txn.delete("id = 5")
    t.append(rows([100]))
    e = conflict(txn)
    assert type(e) is ex.ConcurrentAppendException and e.rule == "row_append"
    assert e.explain()["rule"] == "§4 rule 4: rows the winner added match the read predicate"


def test_row_level_fallback_has_its_own_id(tmp_path):
    t = table(tmp_path, dv=True, partition_by=())
    txn = t.begin(row_level_budget=0.0)
    txn.delete("id = 2")
    t.delete("id = 4")
    e = conflict(txn)
    assert type(e) is ex.ConcurrentDeleteReadException
    assert (e.rule, e.fallback) == ("delete_read", "fallback_time_budget")
    assert e.explain()["rule"] == f"§3 check 6: the winner removed a file this transaction read ({RULE6})"


def test_pass_rules_are_recorded_by_id(tmp_path):
    t = table(tmp_path, level="WriteSerializable")
    txn = t.begin()
    txn.scan("p = 1")
    txn.append(rows([100], p=1))
    w = t.append(rows([101], p=1))  # a blind append: WriteSerializable ignores it
    r = txn.commit()
    assert [c["rules"] for c in r.checks] == [["pass_write_serializable"]]
    (c,) = explain.commit(t, r.version)["checked"]
    assert (c["version"], c["rule_ids"]) == (w.version, ["pass_write_serializable"])
    assert c["rule"] == "§2: WriteSerializable ignores a concurrent blind append"
    assert t.history(1)[0]["deltaOcc"]["checkedWinners"][0]["rules"] == ["pass_write_serializable"]


def test_old_records_without_ids_are_read_by_their_sentence():
    ids, texts = explain.record_rules({"version": 3, "operation": "WRITE",
                                       "outcome": "no conflict: WriteSerializable ignores the winner's blind append of 1 files"})
    assert (ids, texts) == ([], ["§2: WriteSerializable ignores a concurrent blind append"])
    ids, texts = explain.record_rules({"rules": ["pass_partitions"], "outcome": "reworded 1"})
    assert (ids, texts) == (["pass_partitions"], ["§3 check 5: no added file is in a partition this transaction read"])


def test_a_change_reader_names_the_metadata_rule(tmp_path):
    t = table(tmp_path)
    t.set_properties({"owner": "x"})
    with pytest.raises(ex.MetadataChangedException) as info:
        list(t.changes(1))
    assert info.value.rule == "metadata_changed"
