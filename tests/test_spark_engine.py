"""delta_occ.spark against the embedded engine (issue 15, "What it must show" 1 and 4).

Each case builds one base table with the embedded engine, copies it, runs the same operation
through the embedded engine on one copy and through Spark on the other, and asserts:

* the rows of both copies are equal (read by delta_occ), and the Spark copy reads the same with an
  independent reader: deltalake without DVs, delta-kernel-rs with DVs or column mapping;
* the base files that survive and their DV cardinalities are the same (the same DV-or-rewrite
  choice), and the operations' row metrics agree.

The embedded engine is the reference here because its results are checked against a pure-Python
model and the oracles in test_engine.py. The data holds NaN, infinities, NULLs, timestamps, strings
longer than the 32-character statistics prefix, and partition values with space, %, #, =, [ ], { },
non-ASCII and NULL. The Spark session runs in a non-UTC time zone (conftest).
"""

from __future__ import annotations

import datetime
import json
import math
import os
import pathlib
import shutil

import delta_kernel_rust_sharing_wrapper as dk
import deltalake
import pyarrow as pa
import pytest

import delta_occ as docc
from delta_occ import exceptions as exc

from conftest import BOTH_SESSIONS, with_connect

spark_mod = pytest.importorskip("delta_occ.spark", reason="pyspark is not installed")
SparkTable = spark_mod.SparkTable
is_connect = pytest.importorskip("delta_occ.spark._session").is_connect

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("x", pa.float64()), ("ts", pa.timestamp("us", tz="UTC")), ("s", pa.string())])
COLS = SCHEMA.names
DV = {"delta.enableDeletionVectors": "true"}
LAYOUTS = {
    "flat": ([], {}),
    "flat-dv": ([], DV),
    "p": (["p"], {}),
    "p-dv": (["p"], DV),
    "cm-name-dv": (["p"], {"delta.columnMapping.mode": "name", **DV}),
    "cm-id": ([], {"delta.columnMapping.mode": "id"}),
}
P_VALUES = ["a b", "50%", "#h?", "k=v", "[1]", "{2}", "é ü", None]
T0 = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)


def row(i: int) -> dict:
    x = float("nan") if i % 9 == 4 else float("inf") if i % 13 == 5 else None if i % 7 == 3 else (i - 10) * 1.5
    return {
        "id": i,
        "p": P_VALUES[i % len(P_VALUES)],
        "x": x,
        "ts": None if i % 11 == 6 else T0 + datetime.timedelta(hours=i, microseconds=i * 7),
        "s": ("long-" + "z" * 40 + f"{i:02d}") if i % 6 == 1 else f"name-{i:02d}",
    }


def table_of(rows) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def is_dv(layout: str) -> bool:
    return "delta.enableDeletionVectors" in LAYOUTS[layout][1]


def kernel_read(root) -> pa.Table:
    uri = pathlib.Path(root).resolve().as_uri() + "/"
    iface = dk.PythonInterface(uri)
    result = dk.ScanBuilder(dk.Table(uri).snapshot(iface)).build().execute(iface)
    if isinstance(result, pa.RecordBatchReader):
        return result.read_all()
    return result if isinstance(result, pa.Table) else pa.Table.from_batches(list(result))


def _key(v):
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    return v


def canon(rows) -> list:
    if isinstance(rows, pa.Table):
        rows = rows.select(COLS).to_pylist()
    out = [tuple(_key(r[c]) for c in COLS) for r in rows]
    return sorted(out, key=lambda r: r[0])


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    root = tmp_path_factory.mktemp("spark-bases")
    out = {}
    for name, (parts, props) in LAYOUTS.items():
        t = docc.Table.create(root / name, SCHEMA, partition_by=parts, properties=props)
        t.append(table_of([row(i) for i in range(0, 24)]))
        t.append(table_of([row(i) for i in range(24, 40)]))
        out[name] = root / name
    return out


@pytest.fixture
def pair(bases, tmp_path, request):
    layout = request.param
    a, b = tmp_path / "embedded", tmp_path / "spark"
    shutil.copytree(bases[layout], a)
    shutil.copytree(bases[layout], b)
    return layout, a, b


def live_files(path) -> dict:
    files = docc.Table(path).snapshot().files().select(["path", "dv_cardinality"]).to_pylist()
    return {f["path"]: f["dv_cardinality"] for f in files}


def row_metrics(result) -> dict:
    return {k: v for k, v in result.metrics.items() if k.startswith("num") and k.endswith("Rows") and k != "numOutputRows"}


def check_same(layout, a, b, ra, rb, before, kernel=False):
    """``kernel``: read the Spark copy back with delta-kernel-rs whatever the layout (the Connect tier)."""
    rows_a = canon(docc.Table(a).snapshot().to_pyarrow())
    rows_b = canon(docc.Table(b).snapshot().to_pyarrow())
    assert rows_b == rows_a, "Spark's result differs from the embedded engine's"
    if kernel or is_dv(layout) or layout.startswith("cm"):
        oracle = kernel_read(b)
    else:
        oracle = deltalake.DeltaTable(str(b)).to_pyarrow_table()
    assert canon(oracle) == rows_a, "independent reader of the Spark-written table"
    # The files both copies had before the operation: the same ones survive, with the same DVs.
    after_a, after_b = live_files(a), live_files(b)
    assert {p: d for p, d in after_b.items() if p in before} == {p: d for p, d in after_a.items() if p in before}
    assert rb.operation == ra.operation
    assert row_metrics(rb) == row_metrics(ra)


def run_both(spark, a, b, op, *args, **kwargs):
    """The operation on both copies: (embedded result, Spark result, files before)."""
    before = set(live_files(a))
    assert set(live_files(b)) == before
    conv = [spark.createDataFrame(x) if isinstance(x, pa.Table) else x for x in args]
    ra = getattr(docc.Table(a), op)(*args, **kwargs)
    rb = getattr(SparkTable(spark, b), op)(*conv, **kwargs)
    return ra, rb, before


def cases(layouts, named):
    """``pytest.param``s of every layout with every named case (``(name, *values)``), id ``name-layout``."""
    return [pytest.param(layout, *case, id=f"{case[0]}-{layout}") for case in named for layout in layouts]


DELETES = [
    ("ids", "id IN (1, 5, 8, 17, 33)"),
    ("nan-above", "x > 1"),
    ("nan-equal", "x = 'NaN'"),
    ("null-partition", "p IS NULL"),
    ("awkward-partition", "p IN ('50%', '#h?', 'k=v', '[1]', '{2}', 'é ü')"),
    ("timestamp", "ts >= TIMESTAMP '2024-01-01 20:00:00'"),
    ("long-string", "s > 'long-zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz'"),
    ("or-null", "x < 0 OR ts IS NULL"),
    ("like", "s LIKE 'name-1%'"),
    ("none-match", "id > 1000"),
    ("all", None),
]


# The Connect tier (a subset, for CI time): without DVs, with DVs, column mapping.
@pytest.mark.parametrize("spark,pair,name,where", with_connect(cases(LAYOUTS, DELETES), {"ids-flat", "or-null-p-dv", "timestamp-cm-name-dv"}), indirect=["spark", "pair"])
def test_delete(spark, pair, name, where):
    layout, a, b = pair
    ra, rb, before = run_both(spark, a, b, "delete", where)
    check_same(layout, a, b, ra, rb, before, kernel=is_connect(spark))


UPDATES = [
    ("scale", "x > 2", {"x": "x * 2"}),
    ("by-id", "id IN (3, 4, 20)", {"s": "'changed'", "x": "-1.0"}),
    ("move-partition", "id < 6", {"p": "'moved'"}),
    ("timestamp", "ts < TIMESTAMP '2024-01-01 03:00:00'", {"id": "id + 1000"}),
]


@pytest.mark.parametrize(
    "spark,pair,name,where,set_", with_connect(cases(["flat", "flat-dv", "p-dv", "cm-name-dv"], UPDATES), {"by-id-p-dv", "move-partition-flat"}), indirect=["spark", "pair"]
)
def test_update(spark, pair, name, where, set_):
    layout, a, b = pair
    ra, rb, before = run_both(spark, a, b, "update", where, set_)
    check_same(layout, a, b, ra, rb, before, kernel=is_connect(spark))


def _source(ids, **kw):
    return table_of([{**row(i), "id": i, **kw} for i in ids])


MERGES = [
    ("upsert", dict(when_matched_update={"x": "s.x", "s": "'merged'"}, when_not_matched_insert=True)),
    ("delete-cond", dict(when_matched_delete="t.x > 10", when_matched_update={"s": "'kept'"})),
    ("delete-all", dict(when_matched_delete=True)),
    ("insert-only", dict(when_not_matched_insert={"id": "s.id", "p": "s.p", "s": "'new'"})),
]


@pytest.mark.parametrize("spark,pair,name,clauses", with_connect(cases(["flat", "p", "p-dv", "cm-name-dv"], MERGES), {"upsert-p-dv", "delete-cond-flat"}), indirect=["spark", "pair"])
def test_merge(spark, pair, name, clauses):
    layout, a, b = pair
    source = _source([2, 3, 9, 14, 100, 101], x=7.5)
    ra, rb, before = run_both(spark, a, b, "merge", source, "t.id = s.id", **clauses)
    check_same(layout, a, b, ra, rb, before, kernel=is_connect(spark))
    assert rb.metrics["numTargetRowsInserted"] == ra.metrics["numTargetRowsInserted"]


@pytest.mark.parametrize("spark,pair", with_connect([pytest.param(x, id=x) for x in ["flat", "p", "p-dv"]], {"p-dv"}), indirect=True)
def test_merge_two_source_rows_for_one_target_row_fails(spark, pair):
    """Delta's rule (api.md, the MERGE builder): a target row that a MATCHED clause would change
    pairs with one source row only: MergeCardinalityError, nothing written; except when the only
    MATCHED clause is an unconditional DELETE (the row is deleted once)."""
    layout, a, b = pair
    source = _source([2, 2])
    for clauses in (dict(when_matched_delete="s.x IS NULL OR s.x IS NOT NULL"), dict(when_matched_update={"s": "'u'"})):
        with pytest.raises(exc.MergeCardinalityError, match="more than one source row"):
            docc.Table(a).merge(source, "t.id = s.id", **clauses)
        before = docc.Table(b).version
        with pytest.raises(exc.MergeCardinalityError, match="more than one source row"):
            SparkTable(spark, b).merge(spark.createDataFrame(source), "t.id = s.id", **clauses)
        assert docc.Table(b).version == before
        assert not [p for p in pathlib.Path(b).iterdir() if p.name.startswith("spark-")], "failed work left its output"
    ra, rb, before = run_both(spark, a, b, "merge", source, "t.id = s.id", when_matched_delete=True)
    check_same(layout, a, b, ra, rb, before)
    assert int(ra.metrics["numTargetRowsDeleted"]) == int(rb.metrics["numTargetRowsDeleted"]) == 1  # id 2: one row, deleted once


OVERWRITES = [
    ("full", None, False, [100, 101, 102]),
    ("replace-where", "p = 'a b'", False, None),
    ("dynamic", None, True, [200, 201, 202, 203]),
]


# Dynamic partition overwrite needs a partitioned table (its refusal is tested below).
OVERWRITE_CASES = [
    pytest.param(layout, *o, id=f"{o[0]}-{layout}")
    for layout in ["flat", "p", "p-dv", "cm-name-dv"]
    for o in OVERWRITES
    if not (o[2] and not LAYOUTS[layout][0])
]


@pytest.mark.parametrize(
    "spark,pair,name,replace_where,dynamic,ids", with_connect(OVERWRITE_CASES, {"replace-where-p-dv", "dynamic-cm-name-dv", "full-flat"}), indirect=["spark", "pair"]
)
def test_overwrite(spark, pair, name, replace_where, dynamic, ids):
    layout, a, b = pair
    if replace_where is not None:
        new = table_of([{**row(i), "p": "a b"} for i in (300, 301)])
    else:
        new = table_of([row(i) for i in ids])
    ra, rb, before = run_both(spark, a, b, "overwrite", new, replace_where, dynamic_partitions=dynamic)
    check_same(layout, a, b, ra, rb, before, kernel=is_connect(spark))


def test_overwrite_refusals(spark, bases, tmp_path):
    b = tmp_path / "t"
    shutil.copytree(bases["flat"], b)
    st = SparkTable(spark, b)
    with pytest.raises(exc.InvalidArgumentError, match="partitioned"):
        st.overwrite(spark.createDataFrame(table_of([row(1)])), dynamic_partitions=True)
    with pytest.raises(exc.InvalidArgumentError, match="do not satisfy replace_where"):
        st.overwrite(spark.createDataFrame(table_of([row(1), row(2)])), "id = 1")
    assert st.refresh() == 2


@pytest.mark.parametrize("spark,pair", with_connect([pytest.param(x, id=x) for x in LAYOUTS], {"p-dv", "cm-id"}), indirect=True)
def test_append(spark, pair):
    layout, a, b = pair
    new = table_of([row(i) for i in range(40, 60)])
    ra, rb, before = run_both(spark, a, b, "append", new)
    check_same(layout, a, b, ra, rb, before, kernel=is_connect(spark))
    assert rb.is_blind_append


@pytest.mark.parametrize("spark", BOTH_SESSIONS, indirect=True)
def test_append_conforms_like_the_embedded_engine(spark, bases, tmp_path):
    b = tmp_path / "t"
    shutil.copytree(bases["p"], b)
    st = SparkTable(spark, b)
    df = spark.createDataFrame(pa.table({"ID": pa.array([500], pa.int32()), "p": ["z"]}))
    st.append(df)  # upper-case name matched, int cast to long, missing nullable columns NULL
    got = docc.Table(b).snapshot().to_pyarrow(where="id = 500").to_pylist()
    assert got == [{"id": 500, "p": "z", "x": None, "ts": None, "s": None}]
    with pytest.raises(exc.InvalidArgumentError, match="not in the table schema"):
        st.append(spark.createDataFrame(pa.table({"id": [1], "nope": [2]})))


@pytest.mark.parametrize("spark,pair", with_connect([pytest.param(x, id=x) for x in ["flat", "flat-dv", "p-dv", "cm-name-dv"]], {"p-dv"}), indirect=True)
def test_optimize(spark, pair):
    layout, a, b = pair
    if is_dv(layout):  # give the compaction files with DVs to carry
        docc.Table(a).delete("id IN (0, 7, 30)")
        docc.Table(b).delete("id IN (0, 7, 30)")
    ra, rb, before = run_both(spark, a, b, "optimize")
    check_same(layout, a, b, ra, rb, before, kernel=is_connect(spark))
    assert rb.metrics["numBins"] == ra.metrics["numBins"]
    # Provenance: each output's rows are its inputs' live rows, in the recorded order.
    snap_before = docc.Table(b).snapshot(rb.version - 1)
    for f in docc.Table(b).snapshot().files().to_pylist():
        tags = dict(f["tags"] or [])
        if "delta-occ.compactedFrom" not in tags:
            continue
        inputs = json.loads(tags["delta-occ.compactedFrom"])
        expected = []
        for path, live, _read_dv in inputs:
            ids = _live_ids_in_order(snap_before, path)
            assert len(ids) == live
            expected += ids
        got = _ids_in_file(docc.Table(b).snapshot(), f["path"])
        assert got == expected, "compacted rows are not in provenance order"


def _ids_in_file(snap, path):
    import pyarrow.parquet as pq

    h = snap.handle
    abs_path = {log: p for p, log, _ in h.data_files()}[path]
    table = pq.read_table(abs_path)
    return table.column(0).to_pylist()  # id is the first column (physical name under column mapping)


def _live_ids_in_order(snap, path):
    ids = _ids_in_file(snap, path)
    deleted = set(snap.deleted_rows(path).to_pylist())
    return [v for k, v in enumerate(ids) if k not in deleted]


def test_optimize_nothing_to_do_writes_no_commit(spark, bases, tmp_path):
    b = tmp_path / "t"
    shutil.copytree(bases["flat"], b)
    st = SparkTable(spark, b)
    st.optimize()
    r = st.optimize()
    assert r.committed is False and r.version == st.version


@pytest.mark.parametrize("partition_by, want", [(None, []), ("p", ["p"]), (["p"], ["p"])])
def test_spark_create_takes_every_form_of_partition_by(spark, tmp_path, partition_by, want):
    """api.md: SparkTable.create takes ``partition_by`` as Table.create does (None, one name, a
    sequence of names)."""
    st = SparkTable.create(spark, tmp_path / "t", SCHEMA, partition_by=partition_by)
    assert st.version == 0 and docc.Table(tmp_path / "t").snapshot().partition_columns == want


def test_spark_written_nan_files_keep_no_float_bounds(spark, tmp_path):
    """parquet-mr records NaN as a bound (issue 15 facts): footer statistics of a Spark-written
    file with NaN anywhere must carry no min/max for that column, so `x > 100` still finds the
    NaN rows (NaN is above every value in Spark's order) by file skipping and by the checker."""
    st = SparkTable.create(spark, tmp_path / "t", SCHEMA)
    xs = [1.0, float("nan"), 2.0, float("-inf"), 3.0]
    st.append(spark.createDataFrame(table_of([{**row(i), "x": x} for i, x in enumerate(xs)]).select(["id", "x"])).coalesce(1))
    stats = [json.loads(s) for s in docc.Table(tmp_path / "t").snapshot().files().column("stats").to_pylist()]
    assert len(stats) == 1
    assert "x" not in stats[0]["maxValues"] and "x" not in stats[0]["minValues"]
    assert stats[0]["nullCount"]["x"] == 0 and stats[0]["numRecords"] == 5
    assert (stats[0]["minValues"]["id"], stats[0]["maxValues"]["id"]) == (0, 4)  # other bounds kept
    assert st.to_df(where="x > 100").toArrow().column("id").to_pylist() == [1]
    assert docc.Table(tmp_path / "t").snapshot().to_pyarrow(where="x > 100").column("id").to_pylist() == [1]


@pytest.mark.parametrize("layout", ["flat-dv", "p-dv"])
def test_delete_counts_rows_of_whole_files_removed_and_dv_rows(spark, bases, tmp_path, layout):
    """numDeletedRows is every row the DELETE removed: rows of files it removed whole plus rows
    it marked in DVs (the embedded engine's count; the model: the rows that disappear)."""
    b = tmp_path / "t"
    shutil.copytree(bases[layout], b)
    before = docc.Table(b).snapshot().to_pyarrow().num_rows
    r = SparkTable(spark, b).delete("p IS NULL OR id IN (1, 2)")
    after = docc.Table(b).snapshot().to_pyarrow().num_rows
    assert int(r.metrics["numDeletedRows"]) == before - after > 0


def test_optimize_commit_info_uses_deltas_metric_names(spark, bases, tmp_path):
    """As the embedded engine: Delta's ``numRemovedFiles``, never ``numFilesRemoved``."""
    b = tmp_path / "t"
    shutil.copytree(bases["flat"], b)
    files = len(live_files(b))
    SparkTable(spark, b).optimize()
    info = docc.Table(b).history(1)[0]
    assert info["operation"] == "OPTIMIZE"
    assert info["operationMetrics"]["numRemovedFiles"] == str(files)
    assert "numFilesRemoved" not in info["operationMetrics"]


def test_commit_note_names_the_spark_engine(spark, bases, tmp_path):
    """What ``delta-occ timeline`` draws a Spark job's lane from: the driver's process, and the
    engine (``commitInfo.deltaOcc``, ``delta_occ.commit_note``)."""
    b = tmp_path / "t"
    shutil.copytree(bases["flat"], b)
    SparkTable(spark, b).optimize()
    occ = docc.Table(b).history(1)[0]["deltaOcc"]
    assert (occ["engine"], occ["pid"]) == ("spark", os.getpid())


@pytest.mark.parametrize("dv", [False, True], ids=["rewrite", "dv"])
@pytest.mark.parametrize("name", ["key", "size", "path"])
def test_partition_column_named_like_a_scan_plan_column(spark, tmp_path, name, dv):
    """The scan plan's own columns (``file``, ``path``, ``key``, ``size``, ...) must not be
    confused with a partition column of the same name."""
    schema = pa.schema([("id", pa.int64()), (name, pa.string()), ("x", pa.float64())])
    rows = [{"id": i, name: f"v{i % 3}", "x": float(i)} for i in range(12)]
    st = SparkTable.create(spark, tmp_path / "t", schema, partition_by=[name], properties=DV if dv else None)
    st.append(spark.createDataFrame(pa.Table.from_pylist(rows[:6], schema=schema)))
    st.append(spark.createDataFrame(pa.Table.from_pylist(rows[6:], schema=schema)))

    def got(df):
        return sorted(tuple(r) for r in df.select("id", name, "x").collect())

    assert got(st.to_df()) == [(r["id"], r[name], r["x"]) for r in rows]
    assert got(st.to_df(where=f"{name} = 'v1'")) == [(r["id"], r[name], r["x"]) for r in rows if r[name] == "v1"]
    r = st.update("id < 5", {"x": "x + 100"})
    assert r.metrics["numUpdatedRows"] == "5"
    expected = [(r["id"], r[name], r["x"] + 100 if r["id"] < 5 else r["x"]) for r in rows]
    assert got(st.to_df()) == expected
    assert canon_rows(docc.Table(tmp_path / "t").snapshot().to_pyarrow(), name) == expected


def canon_rows(t: pa.Table, name: str) -> list:
    return sorted((r["id"], r[name], r["x"]) for r in t.to_pylist())
