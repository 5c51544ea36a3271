"""Liquid clustering (issue 30): ``Table.create(cluster_by=)``, ``set_clustering``, and OPTIMIZE of
a clustered table clustering its files.

Expected log contents come from the protocol ("Clustered Table": the ``delta.clustering`` domain
``{"clusteringColumns": [[<physical name>], ...]}`` as delta-spark and Delta Kernel write it, the
``clustering`` and ``domainMetadata`` writer features, ``clusteringProvider`` on clustered files);
rows are read back by delta-kernel-rs and deltalake; the layout is checked from the files' own
statistics (a point on either column lies in 4 of 16 files, as in test_zorder); conflicts follow
concurrency.md §3 check 3 (two writers of one domain)."""

from __future__ import annotations

import json
import os
import pathlib
import random
from typing import Any, Dict, List

import pyarrow as pa
import pytest

import delta_occ as docc
from delta_occ import exceptions as exc

from helpers import kernel_rows

SCHEMA = pa.schema([("id", pa.int64()), ("x", pa.int64()), ("y", pa.int64()), ("s", pa.struct([("a", pa.int32())]))])


def actions(root: pathlib.Path, version: int) -> List[Dict[str, Any]]:
    return [json.loads(line) for line in (root / "_delta_log" / f"{version:020}.json").read_text().splitlines()]


def domain(root: pathlib.Path, t: docc.Table) -> Dict[str, Any]:
    for v in range(t.version, -1, -1):
        for a in actions(root, v):
            d = a.get("domainMetadata")
            if d and d["domain"] == "delta.clustering":
                return json.loads(d["configuration"])
    raise AssertionError("no delta.clustering domain")


def rows(n: int = 10_000) -> List[Dict[str, Any]]:
    out = [{"id": i, "x": i % 100, "y": i // 100, "s": {"a": 1}} for i in range(n)]
    random.Random(5).shuffle(out)
    return out


def test_create_clustered_and_optimize_clusters(tmp_path):
    root = tmp_path / "t"
    t = docc.Table.create(str(root), SCHEMA, cluster_by=["x", "y"])
    p = t.snapshot().protocol
    assert {"clustering", "domainMetadata"} <= set(p["writer_features"]) and p["min_writer_version"] == 7
    assert domain(root, t) == {"clusteringColumns": [["x"], ["y"]]}
    assert t.snapshot().clustering_columns == ["x", "y"]
    create = [a["commitInfo"] for a in actions(root, 0) if "commitInfo" in a][0]
    assert json.loads(create["operationParameters"]["clusterBy"]) == ["x", "y"]
    data = rows()
    for k in range(10):
        t.append(pa.Table.from_pylist(data[k * 1000 : (k + 1) * 1000], schema=SCHEMA))
    size = sum(f["size"] for f in t.snapshot().files().to_pylist())
    r = t.optimize(target_file_size=-(-625 * size // 10_000))
    assert r.committed
    adds = [a["add"] for a in actions(root, r.version) if "add" in a]
    assert len(adds) == 16 and all(a["clusteringProvider"] == "liquid" for a in adds)
    info = [a["commitInfo"] for a in actions(root, r.version) if "commitInfo" in a][0]
    assert info["operation"] == "OPTIMIZE" and json.loads(info["operationParameters"]["clusterBy"]) == ["x", "y"]
    stats = [json.loads(a["stats"]) for a in adds]
    for col, v in (("x", 0), ("x", 61), ("y", 99)):
        assert sum(1 for s in stats if s["minValues"][col] <= v <= s["maxValues"][col]) == 4, (col, v)
    expected = sorted(d["id"] for d in data)
    assert sorted(kernel_rows(t)["id"].to_pylist()) == expected
    import deltalake

    assert sorted(deltalake.DeltaTable(str(root)).to_pyarrow_table()["id"].to_pylist()) == expected
    # appends after it are plain files (no provider); ZORDER BY is refused on a clustered table
    t.append(pa.Table.from_pylist(rows(10)[:3], schema=SCHEMA))
    assert "clusteringProvider" not in [a["add"] for a in actions(root, t.version) if "add" in a][0]
    with pytest.raises(exc.InvalidArgumentError, match="clustered"):
        t.optimize(zorder_by=["x"])


def test_set_clustering_changes_and_removes_the_columns(tmp_path):
    root = tmp_path / "t"
    t = docc.Table.create(str(root), SCHEMA)
    assert t.snapshot().clustering_columns is None
    assert "clustering" not in (t.snapshot().protocol.get("writer_features") or [])
    r = t.set_clustering(["Y"])  # any letter case; the schema's name is recorded
    assert r.operation == "CLUSTER BY"
    assert domain(root, t) == {"clusteringColumns": [["y"]]}
    assert "clustering" in t.snapshot().protocol["writer_features"]
    t.set_clustering(None)
    assert t.snapshot().clustering_columns == [] and domain(root, t) == {"clusteringColumns": []}


def test_column_mapping_records_physical_names(tmp_path):
    root = tmp_path / "t"
    t = docc.Table.create(str(root), SCHEMA, properties={"delta.columnMapping.mode": "name"}, cluster_by=["x"])
    (physical,) = domain(root, t)["clusteringColumns"]
    schema = json.loads([a for a in actions(root, 0) if "metaData" in a][0]["metaData"]["schemaString"])
    x = next(f for f in schema["fields"] if f["name"] == "x")
    assert physical == [x["metadata"]["delta.columnMapping.physicalName"]] and physical != ["x"]
    assert t.snapshot().clustering_columns == ["x"]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"cluster_by": ["x"], "partition_by": ["y"]}, "partition"),
        ({"cluster_by": ["nope"]}, "no column"),
        ({"cluster_by": ["s"]}, "struct"),
        ({"cluster_by": ["x", "X"]}, "twice"),
        ({"cluster_by": "x"}, "list"),
    ],
)
def test_bad_clustering_is_refused_and_nothing_created(tmp_path, kwargs, match):
    root = tmp_path / "t"
    with pytest.raises(exc.InvalidArgumentError, match=match):
        docc.Table.create(str(root), SCHEMA, **kwargs)
    assert not (root / "_delta_log").exists() or not os.listdir(root / "_delta_log")


def test_two_writers_changing_the_clustering_conflict(tmp_path):
    root = tmp_path / "t"
    docc.Table.create(str(root), SCHEMA, cluster_by=["x"])
    a = docc.Table(str(root)).begin()
    a.set_clustering(["y"])
    docc.Table(str(root)).set_clustering(["id"])
    with pytest.raises(exc.ConcurrentTransactionException):
        a.commit()
    # an append racing a CLUSTER BY does not conflict (different actions)
    b = docc.Table(str(root)).begin()
    b.append(pa.Table.from_pylist(rows(5), schema=SCHEMA))
    docc.Table(str(root)).set_clustering(["x"])
    assert b.commit().committed


def test_a_clustering_column_cannot_be_dropped(tmp_path):
    root = tmp_path / "t"
    t = docc.Table.create(str(root), SCHEMA, cluster_by=["x"])
    txn = t.begin()
    with pytest.raises(exc.InvalidArgumentError, match="clustering column"):
        txn.set_schema(pa.schema([f for f in SCHEMA if f.name != "x"]))
    txn.abort()


def test_clustering_is_incremental_and_full_reclusters(tmp_path):
    """A second OPTIMIZE of a clustered table rewrites only the files appended since the first
    (and files with deletion vectors), not the clustered ones: their adds are untouched (same
    paths live, no remove of them). ``full=True`` rewrites every file (OPTIMIZE FULL). Rows by
    delta-kernel-rs; expected files from the log of each commit."""
    root = tmp_path / "t"
    t = docc.Table.create(str(root), SCHEMA, cluster_by=["x"], properties={"delta.enableDeletionVectors": "true"})
    data = rows(4000)
    for k in range(4):
        t.append(pa.Table.from_pylist(data[k * 1000 : (k + 1) * 1000], schema=SCHEMA))
    size = sum(f["size"] for f in t.snapshot().files().to_pylist())
    target = size // 4
    first = t.optimize(target_file_size=target)
    clustered = {a["add"]["path"] for a in actions(root, first.version) if "add" in a}
    assert len(clustered) >= 2
    new = [{"id": i, "x": i % 100, "y": i // 100, "s": {"a": 1}} for i in range(4000, 4500)]
    t.append(pa.Table.from_pylist(new[:250], schema=SCHEMA))
    t.append(pa.Table.from_pylist(new[250:], schema=SCHEMA))
    appended = {f["path"] for f in t.snapshot().files().to_pylist()} - clustered
    assert len(appended) == 2
    second = t.optimize(target_file_size=target)
    removed = {a["remove"]["path"] for a in actions(root, second.version) if "remove" in a}
    assert removed == appended  # the clustered files were not read again
    live = {f["path"] for f in t.snapshot().files().to_pylist()}
    assert clustered <= live
    # a clustered file that lost rows (DV) is rewritten by the next one, alone
    victim_id = t.snapshot().to_pyarrow().column("id")[0].as_py()
    t.delete(f"id = {victim_id}")
    dv_files = {f["path"] for f in t.snapshot().files().to_pylist() if f["dv_cardinality"]}
    assert len(dv_files) == 1
    third = t.optimize(target_file_size=target)
    assert third.committed and {a["remove"]["path"] for a in actions(root, third.version) if "remove" in a} == dv_files
    assert not t.optimize(target_file_size=target).committed  # nothing left to cluster
    before_full = {f["path"] for f in t.snapshot().files().to_pylist()}
    full = t.optimize(target_file_size=target, full=True)
    assert {a["remove"]["path"] for a in actions(root, full.version) if "remove" in a} == before_full
    expected = [i for i in range(4500) if i != victim_id]
    assert sorted(kernel_rows(t)["id"].to_pylist()) == expected


def test_spark_clustering_is_incremental_too(spark, tmp_path):
    """The same rule through a SparkTable (it is the operations' own, not an engine's): the
    second OPTIMIZE removes only the two files appended after the first."""
    spark_mod = pytest.importorskip("delta_occ.spark", reason="pyspark is not installed")
    schema = pa.schema([("id", pa.int64()), ("x", pa.int64())])
    st = spark_mod.SparkTable.create(spark, tmp_path / "t", schema, cluster_by=["x"])
    root = tmp_path / "t"

    def frame(lo: int, hi: int):
        return spark.createDataFrame([(i, i % 10) for i in range(lo, hi)], "id long, x long").coalesce(1)

    st.append(frame(0, 100))
    st.append(frame(100, 200))
    first = st.optimize()
    clustered = {a["add"]["path"] for a in actions(root, first.version) if "add" in a}
    st.append(frame(200, 250))
    st.append(frame(250, 300))
    appended = {f["path"] for f in st.snapshot().files().to_pylist()} - clustered
    second = st.optimize()
    assert {a["remove"]["path"] for a in actions(root, second.version) if "remove" in a} == appended
    assert sorted(docc.Table(str(root)).snapshot().to_pyarrow()["id"].to_pylist()) == list(range(300))
