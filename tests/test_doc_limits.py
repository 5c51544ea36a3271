"""Limits and refusals the README and the guide state, each shown as the code does it (issue 47:
every "not yet", "refused", "until" sentence true, with a test). Each test names the sentence it
checks; expected values are what the sentence says."""

from __future__ import annotations

import inspect
import json
import pathlib
import re
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import delta_occ as docc
from delta_occ import exceptions as exc

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _metadata(root: pathlib.Path) -> dict:
    """The metaData action of version 0, as written."""
    for line in (root / "_delta_log" / f"{0:020d}.json").read_text().splitlines():
        if "metaData" in json.loads(line):
            return json.loads(line)["metaData"]
    raise AssertionError("no metaData in version 0")


def _commit_by_hand(root: pathlib.Path, version: int, actions: list) -> None:
    """A commit another writer made (what delta-occ itself would refuse to write)."""
    (root / "_delta_log" / f"{version:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def test_added_files_are_not_checked(tmp_path):
    """README "Behaviour worth knowing": files added through the transaction API are not checked
    (constraints among them): the engine that wrote them is trusted."""
    t = docc.Table.create(tmp_path / "t", pa.schema([("amount", pa.float64())]))
    t.add_constraint("positive", "amount > 0")
    pq.write_table(pa.table({"amount": [-1.0]}), tmp_path / "t" / "outside.parquet")
    txn = t.begin()
    txn.add_file("outside.parquet", size=(tmp_path / "t" / "outside.parquet").stat().st_size, stats={"numRecords": 1})
    assert txn.commit().committed
    assert t.snapshot().to_pyarrow().column("amount").to_pylist() == [-1.0]


def test_a_failed_checkpoint_does_not_fail_the_commit(tmp_path):
    """README "Behaviour worth knowing": a checkpoint that cannot be written never fails the
    commit that triggered it; the result says why (`checkpoint_error`)."""
    root = tmp_path / "t"
    t = docc.Table.create(root, pa.schema([("id", pa.int64())]), properties={"delta.checkpointInterval": "2"})
    (root / "_delta_log" / "_last_checkpoint").mkdir()  # cannot be written as a file
    results = [t.append(pa.table({"id": [i]})) for i in range(3)]
    assert all(r.committed for r in results)
    failed = [r for r in results if r.checkpoint_error]
    assert failed and not any(r.checkpoint_written for r in failed), [(r.version, r.checkpoint_error) for r in results]
    assert sorted(t.snapshot().to_pyarrow().column("id").to_pylist()) == [0, 1, 2]


def test_a_predicate_on_nested_fields_falls_back_to_file_level(tmp_path):
    """README "Row-level concurrency": the checker falls back to file level, and says so, when the
    read predicate reads nested fields."""
    schema = pa.schema([("id", pa.int64()), ("s", pa.struct([("a", pa.int64())]))])
    t = docc.Table.create(tmp_path / "t", schema, properties={"delta.enableDeletionVectors": "true"})
    t.append(pa.table({"id": [1, 2, 3], "s": [{"a": 1}, {"a": 2}, {"a": 3}]}, schema=schema))
    txn = t.begin()
    txn.scan("s.a = 1")
    txn.delete("id = 1")
    t.delete("id = 3")
    with pytest.raises(exc.ConcurrentDeleteReadException, match="fell back to file level") as e:
        txn.commit()
    assert e.value.fallback == "fallback_predicate"


def test_other_writers_nan_blind_statistics_can_hide_nan_rows(tmp_path):
    """README "Behaviour worth knowing": another writer's statistics that ignore NaN (a maximum
    of 1.0 for a file holding NaN) can make skipping miss NaN rows: NaN is above every number."""
    root = tmp_path / "t"
    t = docc.Table.create(root, pa.schema([("x", pa.float64())]))
    pq.write_table(pa.table({"x": [1.0, float("nan")]}), root / "foreign.parquet")
    txn = t.begin()
    txn.add_file("foreign.parquet", size=(root / "foreign.parquet").stat().st_size,
                  stats={"numRecords": 2, "minValues": {"x": 1.0}, "maxValues": {"x": 1.0}, "nullCount": {"x": 0}})
    txn.commit()
    assert t.snapshot().to_pyarrow(where="x > 5").num_rows == 0  # the file is skipped
    rows = t.snapshot().to_pyarrow().filter(pa.compute.is_nan(pa.compute.field("x")))
    assert rows.num_rows == 1  # yet the NaN row is there, and `x > 5` holds for it


def test_an_existing_constraint_the_core_cannot_evaluate_refuses_new_rows(tmp_path):
    """Guide "CHECK constraints": a table that already has a constraint delta-occ cannot evaluate
    (written by another engine) refuses new rows with UnsupportedFeatureError naming it."""
    root = tmp_path / "t"
    t = docc.Table.create(root, pa.schema([("id", pa.int64())]))
    t.append(pa.table({"id": [1]}))
    meta = _metadata(root)
    meta["configuration"] = {**meta.get("configuration", {}), "delta.constraints.odd": "weird_fn(id) > 0"}
    protocol = {"minReaderVersion": 1, "minWriterVersion": 3}
    _commit_by_hand(root, 2, [{"protocol": protocol}, {"metaData": meta}])
    t.refresh()
    with pytest.raises(exc.UnsupportedFeatureError, match="odd"):
        t.append(pa.table({"id": [2]}))
    assert t.delete("id = 1").committed  # removing rows cannot break it


def test_a_generated_column_another_writer_declared_is_computed_and_checked(tmp_path):
    """Guide "Generated columns and defaults": on a table whose generated column another writer
    declared, new rows get the computed value (id * 2 by the expression) and a wrong given value
    is refused, naming the column and the row; deletes work."""
    root = tmp_path / "t"
    t = docc.Table.create(root, pa.schema([("id", pa.int64()), ("g", pa.int64())]))
    t.append(pa.table({"id": [1], "g": [2]}))
    meta = _metadata(root)
    schema = json.loads(meta["schemaString"])
    schema["fields"][1]["metadata"] = {"delta.generationExpression": "id * 2"}
    meta["schemaString"] = json.dumps(schema)
    _commit_by_hand(root, 2, [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 4}}, {"metaData": meta}])
    t.refresh()
    with pytest.raises(exc.ConstraintViolationError, match="generated column g.*'g': 5"):
        t.append(pa.table({"id": [2], "g": [5]}))
    t.append(pa.table({"id": [2], "g": [4]}))
    t.append(pa.table({"id": [3]}))
    assert sorted(t.snapshot().to_pyarrow().to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "g": 2}, {"id": 2, "g": 4}, {"id": 3, "g": 6}
    ]
    assert t.delete("id = 1").committed


def test_vacuum_writes_no_commit(tmp_path):
    """Guide "VACUUM": it deletes files and writes no commit."""
    t = docc.Table.create(tmp_path / "t", pa.schema([("id", pa.int64())]))
    t.append(pa.table({"id": [1]}))
    t.overwrite(pa.table({"id": [2]}))
    before = t.refresh()
    # The window (0 hours) starts at the vacuum's instant: the overwrite must be in an earlier
    # millisecond, or its read version still counts as current and keeps the file (a flake seen once).
    time.sleep(0.01)
    r = t.vacuum(retention_hours=0, enforce_retention_duration=False)
    assert len(r.files) == 1 and t.refresh() == before


def test_zorder_orders_minus_zero_before_zero(tmp_path):
    """Guide "Z-order": the core puts -0.0 first (Spark orders it equal to 0.0)."""
    t = docc.Table.create(tmp_path / "t", pa.schema([("x", pa.float64()), ("n", pa.int64())]))
    t.append(pa.table({"x": [0.0], "n": [1]}))
    t.append(pa.table({"x": [-0.0], "n": [2]}))
    t.optimize(zorder_by=["x"])
    assert t.snapshot().to_pyarrow().column("n").to_pylist() == [2, 1]


@pytest.mark.parametrize("level, fails", [("WriteSerializable", False), ("Serializable", True)])
def test_restore_is_never_resolved_at_row_level(tmp_path, level, fails):
    """Guide "Time travel, RESTORE": RESTORE is checked at file level even on a DV table (a
    racing DELETE of another row conflicts); a blind append conflicts only under Serializable."""
    t = docc.Table.create(tmp_path / "t", pa.schema([("id", pa.int64())]),
                          properties={"delta.enableDeletionVectors": "true", "delta.isolationLevel": level})
    t.append(pa.table({"id": [1, 2, 3]}))
    t.delete("id = 1")
    txn = t.begin()
    txn.restore(t.snapshot(version=1))
    docc.Table(str(tmp_path / "t")).append(pa.table({"id": [4]}))
    if fails:
        with pytest.raises(exc.ConcurrentAppendException):
            txn.commit()
    else:
        assert txn.commit().committed
    txn = t.begin()
    txn.restore(t.snapshot(version=1))
    docc.Table(str(tmp_path / "t")).delete("id = 3")
    with pytest.raises(exc.DeltaConcurrentModificationException):
        txn.commit()


def test_appends_write_no_change_data(tmp_path):
    """Guide "Change data feed": appends write no change-data files (the feed reads their adds)."""
    root = tmp_path / "t"
    t = docc.Table.create(root, pa.schema([("id", pa.int64())]), properties={"delta.enableChangeDataFeed": "true"})
    t.append(pa.table({"id": [1, 2]}))
    assert not (root / "_change_data").exists()
    log = (root / "_delta_log" / f"{1:020d}.json").read_text()
    assert '"cdc"' not in log
    assert t.read_change_feed(1, 1).column("_change_type").to_pylist() == ["insert", "insert"]


def test_table_operations_take_no_time_zone():
    """Guide "How rows are evaluated": table operations do not take a zone (their conditions are
    UTC); only the core's compiler does."""
    for method in (docc.Table.delete, docc.Table.update, docc.Table.merge, docc.Snapshot.to_pyarrow):
        assert "time_zone" not in inspect.signature(method).parameters
    assert "time_zone" in (docc._core.RowExpr.__doc__ or "") or "time_zone" in inspect.signature(docc._core.RowExpr).parameters


def test_sub_microsecond_timestamps_are_refused(tmp_path):
    """Guide "Types": a timestamp cast that would lose sub-microsecond digits is refused."""
    t = docc.Table.create(tmp_path / "t", pa.schema([("ts", pa.timestamp("us", "UTC"))]))
    ns = pa.timestamp("ns", "UTC")
    assert t.append(pa.table({"ts": pa.array([1000], ns)})).committed
    with pytest.raises(exc.SchemaMismatchError):
        t.append(pa.table({"ts": pa.array([1001], ns)}))


def test_layout_import_rules():
    """README "Layout": operations/ never imports spark/ or stress/; spark/ never imports
    stress/; the core's storage/ imports only error, uri and the test hooks, conflict/ never
    commit/."""
    pkg = ROOT / "python" / "delta_occ"
    for folder, banned in (("operations", "spark|stress"), ("spark", "stress")):
        rule = re.compile(rf"^\s*(from \.\.({banned})\b|from \.\. import .*\b({banned})\b|(from|import) delta_occ\.({banned})\b)", re.M)
        for f in (pkg / folder).glob("*.py"):
            assert not rule.search(f.read_text()), f"{folder}/{f.name} imports {banned}"
    core = ROOT / "rust" / "core" / "src"
    for f in (core / "storage").glob("*.rs"):
        used = set(re.findall(r"crate::(\w+)", f.read_text()))
        assert used <= {"error", "Error", "Result", "uri", "test_hooks", "storage"}, (f.name, used)  # Error, Result: error's, re-exported
    for f in (core / "conflict").glob("*.rs"):
        assert "crate::commit" not in f.read_text(), f.name


def test_spark_transaction_steps_must_touch_different_files(spark, tmp_path):
    """README "From a PySpark job": operations in one `begin()` transaction must touch different
    existing files, and the transaction says so instead of guessing; nothing is committed."""
    from delta_occ.spark import SparkTable

    st = SparkTable.create(spark, str(tmp_path / "t"), pa.schema([("id", pa.int64())]))
    st.append(spark.range(4).selectExpr("id"))
    before = st.table.refresh()
    with pytest.raises(exc.InvalidArgumentError, match="already changes"):
        with st.begin() as txn:
            txn.delete("id = 1")
            txn.delete("id >= 0")
    assert st.table.refresh() == before


def test_the_streaming_sink_keeps_no_session(spark, tmp_path):
    """Guide "Exactly-once writes": the sink keeps only the table's location and storage options,
    not the session (so Spark Connect can ship it to the server's Python)."""
    from pyspark import cloudpickle
    from pyspark.sql import SparkSession

    from delta_occ.spark import SparkTable

    st = SparkTable.create(spark, str(tmp_path / "t"), pa.schema([("id", pa.int64())]))
    sink = st.foreach_batch_sink("ingest")
    kept = [c.cell_contents for c in sink.__closure__ or ()]
    assert str(tmp_path / "t") in kept and not any(isinstance(v, (SparkSession, SparkTable)) for v in kept), kept
    assert cloudpickle.loads(cloudpickle.dumps(sink)).__code__ is not None


def test_a_nested_int96_file_is_read_by_pyarrow_and_checked_on_its_top_level_columns(tmp_path):
    """Guide "How rows are read": a file with an INT96 inside a struct is read by pyarrow for the
    engine; the row-level checker reads only the top-level columns a predicate names, so two
    deletes of different rows of such a file both commit (scenario 23's rule)."""
    import datetime

    root = tmp_path / "t"
    schema = pa.schema([("id", pa.int64()), ("s", pa.struct([("ts", pa.timestamp("us"))]))])
    t = docc.Table.create(root, schema, properties={"delta.enableDeletionVectors": "true"})
    when = datetime.datetime(2024, 1, 1)
    pq.write_table(pa.table({"id": [1, 2], "s": [{"ts": when}, {"ts": when}]}, schema=schema), root / "int96.parquet",
                   use_deprecated_int96_timestamps=True)
    txn = t.begin()
    txn.add_file("int96.parquet", size=(root / "int96.parquet").stat().st_size, stats={"numRecords": 2})
    txn.commit()
    assert t.snapshot().to_pyarrow().column("s").to_pylist() == [{"ts": when}, {"ts": when}]
    mine = t.begin()
    mine.delete("id = 1")
    docc.Table(str(root)).delete("id = 2")
    assert mine.commit().rebased_over == [2]
    assert t.refresh() == 3 and t.snapshot().to_pyarrow().num_rows == 0
