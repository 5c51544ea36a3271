"""MERGE with any clauses (issue 43, "What it must show" 4): generated MERGEs of 1-5 clauses of
every kind, with and without conditions, over keys with NULLs.

* Against deltalake's merge builder (``DeltaTable.merge(...).when_...().execute()``, the oracle
  for tables without DVs): the embedded engine's table and deltalake's end with the same rows,
  read by deltalake, and the same error-or-not. ``DELTA_OCC_MERGE_EXAMPLES`` examples (default
  200).
* Against the Spark engine (``SparkTable.merge(...)`` builder): the same rows, with and without
  DVs (DV tables read by delta-kernel-rs). ``DELTA_OCC_MERGE_SPARK_EXAMPLES`` examples (default
  20: each is a few Spark jobs; 200 with the variable).

Tables hold under 8,192 rows (deltalake 1.6 reports false duplicate matches above). Source keys
are unique where not NULL (a duplicate is the cardinality error, tested in test_spark_engine.py).
"""

from __future__ import annotations

import json
import os
import pathlib
from typing import Any, Dict, List, Optional, Tuple

import delta_kernel_rust_sharing_wrapper as dk
import deltalake
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import delta_occ as docc
from delta_occ import exceptions as exc

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64()), ("w", pa.string())])
EXAMPLES = int(os.environ.get("DELTA_OCC_MERGE_EXAMPLES", "200"))
SPARK_EXAMPLES = int(os.environ.get("DELTA_OCC_MERGE_SPARK_EXAMPLES", "20"))

V = st.one_of(st.none(), st.integers(-3, 3))
W = st.sampled_from([None, "a", "b"])


@st.composite
def tables(draw) -> Tuple[pa.Table, pa.Table]:
    target_ids = draw(st.lists(st.one_of(st.none(), st.integers(0, 9)), min_size=0, max_size=8))
    source_ids = draw(st.lists(st.integers(0, 12), min_size=0, max_size=6, unique=True)) + [None] * draw(st.integers(0, 2))
    def rows(ids: List[Optional[int]]) -> pa.Table:
        return pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array([draw(V) for _ in ids], pa.int64()),
                         "w": pa.array([draw(W) for _ in ids], pa.string())}, schema=SCHEMA)
    return rows(target_ids), rows(source_ids)


def _atom(sides: List[str]):
    side = st.sampled_from(sides)
    k = st.integers(-2, 2)
    options = [
        st.builds(lambda s, n: f"{s}.v > {n}", side, k),
        st.builds(lambda s: f"{s}.v IS NULL", side),
        st.builds(lambda s, x: f"{s}.w = '{x}'", side, st.sampled_from(["a", "b"])),
    ]
    if len(sides) == 2:
        options += [st.just("t.v = s.v"), st.builds(lambda n: f"t.v + s.v < {n}", k)]
    return st.one_of(*options)


def _condition(sides: List[str]):
    atom = _atom(sides)
    return st.one_of(
        st.none(),
        atom,
        st.builds(lambda a, b: f"({a}) AND ({b})", atom, atom),
        st.builds(lambda a, b: f"({a}) OR ({b})", atom, atom),
        st.builds(lambda a: f"NOT ({a})", atom),
    )


SETS = {
    "matched": [{"v": "s.v + 1"}, {"w": "'u'"}, {"v": "t.v * 2", "w": "s.w"}],
    "by_source": [{"v": "t.v - 1"}, {"w": "'gone'"}],
}
INSERTS = [{"id": "s.id", "v": "s.v", "w": "'ins'"}, {"id": "s.id", "w": "s.w"}]


@st.composite
def clause_lists(draw) -> List[Tuple[str, Optional[str], Any]]:
    """(method name, condition, values) in call order; in each group only the last clause may
    lack a condition (a clause after an unconditional one is not generated)."""
    kinds = st.sampled_from([
        "when_matched_update", "when_matched_update_all", "when_matched_delete", "when_not_matched_insert",
        "when_not_matched_insert_all", "when_not_matched_by_source_update", "when_not_matched_by_source_delete",
    ])
    out: List[Tuple[str, Optional[str], Any]] = []
    closed = set()
    for kind in draw(st.lists(kinds, min_size=1, max_size=5)):
        group = "by_source" if "by_source" in kind else "not_matched" if "not_matched" in kind else "matched"
        if group in closed:
            continue
        sides = {"matched": ["t", "s"], "not_matched": ["s"], "by_source": ["t"]}[group]
        cond = draw(_condition(sides))
        values: Any = None
        if kind in ("when_matched_update", "when_not_matched_by_source_update"):
            values = draw(st.sampled_from(SETS[group]))
        elif kind == "when_not_matched_insert":
            values = draw(st.sampled_from(INSERTS))
        out.append((kind, cond, values))
        if cond is None:
            closed.add(group)
    return out


def apply_clauses(builder, clauses, deltalake_names: bool = False):
    for kind, cond, values in clauses:
        fn = getattr(builder, kind)
        if deltalake_names:
            builder = fn(values, predicate=cond) if values is not None else fn(predicate=cond)
        else:
            builder = fn(values, condition=cond) if values is not None else fn(condition=cond)
    return builder


def canon(t: pa.Table) -> list:
    """Rows as tuples, sorted with NULL first."""
    def key(r: dict) -> tuple:
        return tuple((r[c] is not None, r[c] if r[c] is not None else 0 if c != "w" else "") for c in SCHEMA.names)
    return sorted((r for r in t.select(SCHEMA.names).to_pylist()), key=key) if t.num_rows else []


def kernel_read(root) -> pa.Table:
    uri = pathlib.Path(root).resolve().as_uri() + "/"
    iface = dk.PythonInterface(uri)
    result = dk.ScanBuilder(dk.Table(uri).snapshot(iface)).build().execute(iface)
    return result.read_all() if isinstance(result, pa.RecordBatchReader) else pa.Table.from_batches(list(result))


def run_ours(root: pathlib.Path, target: pa.Table, source: Any, clauses, props: Dict[str, str], table_cls=None, spark=None) -> Optional[str]:
    """The MERGE on a fresh table; None, or the error class name."""
    t = docc.Table.create(root, SCHEMA, properties=props)
    if target.num_rows:
        t.append(target)
    handle: Any = t if table_cls is None else table_cls(spark, str(root))
    try:
        apply_clauses(handle.merge(source, "t.id = s.id"), clauses).execute()
    except exc.DeltaOccError as e:
        return type(e).__name__
    return None


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=tables(), clauses=clause_lists())
def test_embedded_merge_ends_as_deltalakes(tmp_path_factory, data, clauses):
    target, source = data
    root = tmp_path_factory.mktemp("m")
    ours = run_ours(root / "ours", target, source, clauses, {})
    deltalake.write_deltalake(str(root / "dl"), target if target.num_rows else SCHEMA.empty_table(), mode="error")
    try:
        apply_clauses(deltalake.DeltaTable(str(root / "dl")).merge(source, "t.id = s.id", source_alias="s", target_alias="t"), clauses, True).execute()
        theirs = None
    except Exception as e:  # noqa: BLE001 - deltalake's errors have no common base; compared by kind below
        theirs = type(e).__name__
    assert (ours is None) == (theirs is None), (ours, theirs, clauses)
    if ours is None:
        assert canon(deltalake.DeltaTable(str(root / "ours")).to_pyarrow_table()) == canon(deltalake.DeltaTable(str(root / "dl")).to_pyarrow_table()), clauses


spark_mod = pytest.importorskip("delta_occ.spark", reason="pyspark is not installed")


@pytest.mark.parametrize("dv", [False, True], ids=["plain", "dv"])
def test_spark_merge_ends_as_the_embedded_engines(spark, tmp_path_factory, dv):
    props = {"delta.enableDeletionVectors": "true"} if dv else {}

    @settings(max_examples=SPARK_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(data=tables(), clauses=clause_lists())
    def check(data, clauses):
        target, source = data
        root = tmp_path_factory.mktemp("s")
        ours = run_ours(root / "embedded", target, source, clauses, props)
        on_spark = run_ours(root / "spark", target, spark.createDataFrame(source), clauses, props, spark_mod.SparkTable, spark)
        assert ours == on_spark, clauses
        if ours is None:
            assert canon(kernel_read(root / "spark")) == canon(kernel_read(root / "embedded")), clauses

    check()


# -- the builder's rules and forms ---------------------------------------------------------------

BASE = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "v": pa.array([10, 20, 30], pa.int64()), "w": pa.array(["a", "b", "c"])}, schema=SCHEMA)
SRC = pa.table({"id": pa.array([2, 3, 4], pa.int64()), "v": pa.array([200, 300, 400], pa.int64()), "w": pa.array(["x", "y", "z"])}, schema=SCHEMA)


def _fresh(root) -> docc.Table:
    t = docc.Table.create(root, SCHEMA)
    t.append(BASE)
    return t


REFUSED = {
    "unconditional-not-last": lambda m: m.when_matched_delete().when_matched_update({"v": "s.v"}, condition="s.v > 0").execute(),
    "source-in-by-source": lambda m: m.when_not_matched_by_source_update({"v": "s.v"}).execute(),
    "target-in-insert": lambda m: m.when_not_matched_insert({"id": "t.id"}).execute(),
    "no-clause": lambda m: m.execute(),
    "empty-set": lambda m: m.when_matched_update({}),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_refused_clauses_write_nothing(tmp_path, case):
    t = _fresh(tmp_path / "t")
    with pytest.raises((exc.InvalidArgumentError, exc.PredicateError)):  # both typed; PredicateError names the text
        REFUSED[case](t.merge(SRC, "t.id = s.id"))
    assert docc.Table(tmp_path / "t").version == 1


def test_keyword_delete_true_with_an_update_is_refused(tmp_path):
    t = _fresh(tmp_path / "t")
    with pytest.raises(exc.InvalidArgumentError, match="would never act"):
        t.merge(SRC, "t.id = s.id", when_matched_delete=True, when_matched_update={"v": "s.v"})


def test_builder_in_a_transaction_stages_and_takes_no_options(tmp_path):
    """Expected rows by hand from BASE and SRC: 2 and 3 matched (3 deleted by its condition, 2
    updated), 4 inserted, 1 not matched by source (its w set)."""
    t = _fresh(tmp_path / "t")
    with t.begin() as txn:
        m = txn.merge(SRC, "t.id = s.id").when_matched_delete("s.v > 250").when_matched_update_all().when_not_matched_insert_all()
        with pytest.raises(exc.InvalidArgumentError, match="no options"):
            m.execute(max_attempts=3)
        txn.merge(SRC, "t.id = s.id").when_matched_delete("s.v > 250").when_matched_update_all().when_not_matched_insert_all() \
            .when_not_matched_by_source_update({"w": "'old'"}).execute()
        result = txn.commit()
    assert result.metrics["numTargetRowsDeleted"] == "1" and result.metrics["numTargetRowsInserted"] == "1"
    assert canon(t.refresh() and t.snapshot().to_pyarrow()) == canon(pa.table(
        {"id": [1, 2, 4], "v": [10, 200, 400], "w": ["old", "x", "z"]}, schema=SCHEMA))


def test_schema_evolution_adds_the_source_column_as_deltalake_does(tmp_path):
    wide = SRC.append_column("x", pa.array([7, 8, 9], pa.int64()))
    t = _fresh(tmp_path / "ours")
    t.merge(wide, "t.id = s.id").when_matched_update_all().when_not_matched_insert_all().with_schema_evolution().execute()
    deltalake.write_deltalake(str(tmp_path / "dl"), BASE)
    deltalake.DeltaTable(str(tmp_path / "dl")).merge(wide, "t.id = s.id", source_alias="s", target_alias="t", merge_schema=True) \
        .when_matched_update_all().when_not_matched_insert_all().execute()
    ours = deltalake.DeltaTable(str(tmp_path / "ours")).to_pyarrow_table()
    theirs = deltalake.DeltaTable(str(tmp_path / "dl")).to_pyarrow_table()
    assert ours.schema.names == theirs.schema.names == ["id", "v", "w", "x"]
    assert sorted(ours.to_pylist(), key=lambda r: r["id"]) == sorted(theirs.to_pylist(), key=lambda r: r["id"])


def test_spark_builder_refuses_schema_evolution_and_runs_in_a_transaction(spark, tmp_path):
    t = _fresh(tmp_path / "t")
    st_ = spark_mod.SparkTable(spark, str(tmp_path / "t"))
    with pytest.raises(exc.InvalidArgumentError, match="MERGE on the Spark engine does not change the schema"):
        st_.merge(spark.createDataFrame(SRC), "t.id = s.id").when_matched_update_all().with_schema_evolution().execute()
    assert docc.Table(tmp_path / "t").version == 1
    with st_.begin() as txn:
        txn.merge(spark.createDataFrame(SRC), "t.id = s.id").when_matched_delete("s.v > 250").when_matched_update_all() \
            .when_not_matched_insert_all().when_not_matched_by_source_update({"w": "'old'"}).execute()
        txn.commit()
    assert canon(t.refresh() and t.snapshot().to_pyarrow()) == canon(pa.table(
        {"id": [1, 2, 4], "v": [10, 200, 400], "w": ["old", "x", "z"]}, schema=SCHEMA))


# -- conflicts per clause kind (concurrency.md §4 rules; the expected outcome of each scenario is
# worked out from those rules in its comment) --------------------------------------------------

SCHEMA2 = SCHEMA
A_IDS, B_IDS = list(range(0, 10)), list(range(10, 20))
MSRC = pa.table({"id": pa.array([3, 50], pa.int64()), "v": pa.array([333, 500], pa.int64()), "w": pa.array(["s", "s"])}, schema=SCHEMA)


def _two_files(root, dvs: bool = True) -> docc.Table:
    t = docc.Table.create(root, SCHEMA, properties={"delta.enableDeletionVectors": "true"} if dvs else {})
    for ids in (A_IDS, B_IDS):
        t.append(pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array(ids, pa.int64()), "w": pa.array(["o"] * len(ids))}, schema=SCHEMA))
    return t


def _upsert(m):
    return m.when_matched_update({"v": "s.v"}).when_not_matched_insert_all()


UPSERT = ["WHEN MATCHED THEN UPDATE", "WHEN NOT MATCHED THEN INSERT *"]

# name: (clauses, level, winner, expected exception, the clauses it names). The clauses named
# are those that change rows of the conflicting file (rules 1-2), or whose read may cover it
# (rule 4): the join's read for MATCHED and NOT MATCHED, each BY SOURCE clause's condition.
SCENARIOS = {
    # R = id IN (3, 50), C = {3}; the winner deletes 4: W ∩ C = W ∩ R = ∅ (rule 3).
    "matched-vs-delete-other-row": (_upsert, "WriteSerializable", lambda t: t.delete("id = 4"), None, None),
    # The winner deletes 3, which our MATCHED clause changes: W ∩ C = {3} (rule 1).
    "matched-vs-delete-same-row": (_upsert, "WriteSerializable", lambda t: t.delete("id = 3"), exc.ConcurrentDeleteDeleteException,
                                   ["WHEN MATCHED THEN UPDATE"]),
    # R = id IN (3, 50) OR id >= 15, C = {3, 15..19}; the winner deletes 12: outside both (rule 3).
    "by-source-vs-delete-outside": (lambda m: _upsert(m).when_not_matched_by_source_delete("t.id >= 15"), "WriteSerializable",
                                    lambda t: t.delete("id = 12"), None, None),
    # The winner deletes 16, which our NOT MATCHED BY SOURCE clause deletes too (rule 1).
    "by-source-vs-delete-inside": (lambda m: _upsert(m).when_not_matched_by_source_delete("t.id >= 15"), "WriteSerializable",
                                   lambda t: t.delete("id = 16"), exc.ConcurrentDeleteDeleteException,
                                   ["WHEN NOT MATCHED BY SOURCE AND t.id >= 15 THEN DELETE"]),
    # Without a condition the clause reads (and deletes) every unmatched row: 12 is in C (rule 1).
    "by-source-all-vs-delete": (lambda m: m.when_not_matched_by_source_delete(), "WriteSerializable",
                                lambda t: t.delete("id = 12"), exc.ConcurrentDeleteDeleteException,
                                ["WHEN NOT MATCHED BY SOURCE THEN DELETE"]),
    # Serializable: the appended row 100 satisfies the read (id >= 15) (rule 4).
    "by-source-vs-append-serializable": (lambda m: m.when_not_matched_by_source_update({"w": "'old'"}, "t.id >= 15"), "Serializable",
                                         lambda t: t.append(pa.table({"id": [100], "v": [1], "w": ["n"]}, schema=SCHEMA)), exc.ConcurrentAppendException,
                                         ["WHEN NOT MATCHED BY SOURCE AND t.id >= 15 THEN UPDATE"]),
    # The appended 3 is in the join's read id IN (3, 50), not in the BY SOURCE clause's id >= 15
    # (the new file's statistics say so): the join's clauses are named, not the BY SOURCE one.
    "upsert-and-by-source-vs-append-in-join-read": (
        lambda m: _upsert(m).when_not_matched_by_source_update({"w": "'old'"}, "t.id >= 15"), "Serializable",
        lambda t: t.append(pa.table({"id": [3], "v": [1], "w": ["n"]}, schema=SCHEMA)), exc.ConcurrentAppendException, UPSERT),
    # WriteSerializable: a blind append never conflicts (§2).
    "by-source-vs-append-write-serializable": (lambda m: m.when_not_matched_by_source_update({"w": "'old'"}, "t.id >= 15"), "WriteSerializable",
                                               lambda t: t.append(pa.table({"id": [100], "v": [1], "w": ["n"]}, schema=SCHEMA)), None, None),
    # Serializable: the appended 50 matches the narrowed read id IN (3, 50) of an insert-only MERGE (rule 4).
    "insert-vs-append-same-key": (lambda m: m.when_not_matched_insert_all(), "Serializable",
                                  lambda t: t.append(pa.table({"id": [50], "v": [5], "w": ["n"]}, schema=SCHEMA)), exc.ConcurrentAppendException,
                                  ["WHEN NOT MATCHED THEN INSERT *"]),
    # A compaction never conflicts on a DV table (rule 5).
    "matched-vs-optimize": (_upsert, "WriteSerializable", lambda t: t.optimize(), None, None),
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_merge_clause_conflicts(tmp_path, name):
    """Each scenario's outcome, and the clauses the conflict names (``clauses`` and ``explain()``)."""
    clauses, level, winner, expected, named = SCENARIOS[name]
    t = _two_files(tmp_path / "t")
    txn = t.begin(isolation_level=level)
    clauses(txn.merge(MSRC, "t.id = s.id")).execute()
    winner(docc.Table(tmp_path / "t"))
    before = docc.Table(tmp_path / "t").version
    if expected is None:
        txn.commit()
        assert docc.Table(tmp_path / "t").version == before + 1
    else:
        with pytest.raises(expected) as e:
            txn.commit()
        assert docc.Table(tmp_path / "t").version == before
        assert e.value.clauses == named and e.value.explain()["clauses"] == named


# The same clause kinds at file level (no DVs: a DELETE rewrites the file it hits), per §3: an
# added file that is not a blind append and may hold rows of the read conflicts first (check 5),
# then a removed file that was read (check 6). The read is R above: file A holds ids 0-9, B 10-19.
FILE_SCENARIOS = {
    # The winner rewrites A without 4; its new file may hold 3 (R): check 5, the join's read.
    "matched-vs-delete-other-row": (_upsert, "WriteSerializable", lambda t: t.delete("id = 4"), exc.ConcurrentAppendException, UPSERT),
    # The same when it deletes 3 itself.
    "matched-vs-delete-same-row": (_upsert, "WriteSerializable", lambda t: t.delete("id = 3"), exc.ConcurrentAppendException, UPSERT),
    # The winner rewrites B without 16; the new file may hold ids >= 15 (the BY SOURCE read), not 3 or 50.
    "by-source-vs-delete-inside": (lambda m: _upsert(m).when_not_matched_by_source_delete("t.id >= 15"), "WriteSerializable",
                                   lambda t: t.delete("id = 16"), exc.ConcurrentAppendException,
                                   ["WHEN NOT MATCHED BY SOURCE AND t.id >= 15 THEN DELETE"]),
    # Serializable: the appended 50 is in R (check 5).
    "insert-vs-append-same-key": (lambda m: m.when_not_matched_insert_all(), "Serializable",
                                  lambda t: t.append(pa.table({"id": [50], "v": [5], "w": ["n"]}, schema=SCHEMA)), exc.ConcurrentAppendException,
                                  ["WHEN NOT MATCHED THEN INSERT *"]),
    # WriteSerializable: a blind append never conflicts (§2).
    "by-source-vs-append-write-serializable": (lambda m: m.when_not_matched_by_source_update({"w": "'old'"}, "t.id >= 15"), "WriteSerializable",
                                               lambda t: t.append(pa.table({"id": [100], "v": [1], "w": ["n"]}, schema=SCHEMA)), None, None),
    # The compaction removes A, which the MERGE read (check 6; its output is dataChange=false, no append).
    "matched-vs-optimize": (_upsert, "WriteSerializable", lambda t: t.optimize(), exc.ConcurrentDeleteReadException, UPSERT),
}


@pytest.mark.parametrize("name", list(FILE_SCENARIOS))
def test_merge_clause_conflicts_at_file_level(tmp_path, name):
    clauses, level, winner, expected, named = FILE_SCENARIOS[name]
    t = _two_files(tmp_path / "t", dvs=False)
    txn = t.begin(isolation_level=level)
    clauses(txn.merge(MSRC, "t.id = s.id")).execute()
    winner(docc.Table(tmp_path / "t"))
    if expected is None:
        assert txn.commit().committed
        return
    with pytest.raises(expected) as e:
        txn.commit()
    assert e.value.clauses == named


@pytest.mark.parametrize("name", ["matched-vs-delete-same-row", "by-source-vs-delete-inside", "insert-vs-append-same-key"])
def test_spark_merge_conflicts_name_the_same_clauses(spark, tmp_path, name):
    """The Spark engine names the same clauses (its per-file clause numbers come from the
    executors' summary, with the hit bits)."""
    from delta_occ.spark import SparkTable

    clauses, level, winner, expected, named = SCENARIOS[name]
    _two_files(tmp_path / "t")
    st = SparkTable(spark, str(tmp_path / "t"))
    with pytest.raises(expected) as e:
        with st.begin(isolation_level=level) as txn:
            clauses(txn.merge(spark.createDataFrame(MSRC), "t.id = s.id")).execute()
            winner(docc.Table(tmp_path / "t"))
    assert e.value.clauses == named


def test_the_recorded_read_names_table_columns(tmp_path):
    """A target-only conjunct of `on` and a NOT MATCHED BY SOURCE condition are recorded over the
    table's own column names (`v`, not `t.v`), so the row-level checker can evaluate them (with
    `t.v` it fell back to file level)."""
    t = _fresh(tmp_path / "t")
    t.merge(SRC, "t.id = s.id AND t.v > 0").when_matched_update_all().when_not_matched_by_source_delete("t.w = 'a'").execute()
    read = docc.Table(tmp_path / "t").history(1)[0]["operationParameters"]["readPredicate"]
    assert "t." not in read and "(v > 0)" in read and "(w = 'a')" in read, read


def test_commit_info_lists_the_clauses_as_delta_does_and_explain_names_them(tmp_path):
    """Delta's MERGE commitInfo: matchedPredicates / notMatchedPredicates /
    notMatchedBySourcePredicates (JSON lists of actionType and predicate) and per-group row
    metrics. Expected from BASE and SRC by hand: 2 updated and 3 deleted (MATCHED), 1 updated
    (NOT MATCHED BY SOURCE), 4 inserted."""
    from delta_occ import explain

    t = _fresh(tmp_path / "t")
    r = t.merge(SRC, "t.id = s.id").when_matched_delete("s.v > 250").when_matched_update_all().when_not_matched_insert_all() \
        .when_not_matched_by_source_update({"w": "'old'"}).execute()
    info = docc.Table(tmp_path / "t").history(1)[0]
    params = info["operationParameters"]
    assert json.loads(params["matchedPredicates"]) == [{"actionType": "delete", "predicate": "s.v > 250"}, {"actionType": "update"}]
    assert json.loads(params["notMatchedPredicates"]) == [{"actionType": "insert"}]
    assert json.loads(params["notMatchedBySourcePredicates"]) == [{"actionType": "update"}]
    m = {k: int(v) for k, v in r.metrics.items() if k.startswith("numTarget")}
    assert m == {"numTargetRowsUpdated": 2, "numTargetRowsDeleted": 1, "numTargetRowsInserted": 1, "numTargetRowsMatchedUpdated": 1,
                 "numTargetRowsMatchedDeleted": 1, "numTargetRowsNotMatchedBySourceUpdated": 1, "numTargetRowsNotMatchedBySourceDeleted": 0}
    assert explain.commit(docc.Table(tmp_path / "t"), r.version)["clauses"] == [
        "WHEN MATCHED AND s.v > 250 THEN DELETE", "WHEN MATCHED THEN UPDATE", "WHEN NOT MATCHED THEN INSERT", "WHEN NOT MATCHED BY SOURCE THEN UPDATE"]
