"""Table definitions without silent loss (issue 44): creating a table where files already are, and
table properties Delta does not know.

Expected outcomes come from the issue's own reports and delta-spark's documented behaviour:
CREATE on a non-empty location fails (DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION), an unknown
``delta.*`` key fails (DELTA_UNKNOWN_CONFIGURATION); both succeeded silently before."""

from __future__ import annotations

import datetime as dt
import json
import pathlib
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import delta_occ as docc
from delta_occ import exceptions as exc

import helpers
from helpers import metadata, protocol, write_commit

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])


def _parquet(path: pathlib.Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int64())}), path)


# -- creating where files already are --------------------------------------------------------

#: What the location holds before create: (relative path, is a parquet file) ... -> refused?
LOCATIONS = {
    "parquet-file": (["part-0.parquet"], True),
    "partitioned-parquet": (["p=a/part-0.parquet"], True),
    "any-visible-file": (["notes.txt"], True),
    "hidden-files-only": ([".hidden", "_SUCCESS", "p=a/.part-0.parquet.crc"], False),
    "empty-delta-log": (["_delta_log/"], False),
    "empty-subdirectory": (["p=a/"], False),
}


@pytest.mark.parametrize("name", list(LOCATIONS))
def test_create_refuses_a_location_holding_files(tmp_path, name):
    entries, refused = LOCATIONS[name]
    root = tmp_path / "t"
    for e in entries:
        if e.endswith("/"):
            (root / e).mkdir(parents=True)
        elif e.endswith(".parquet"):
            _parquet(root / e)
        else:
            (root / e).parent.mkdir(parents=True, exist_ok=True)
            (root / e).write_text("x")
    before = sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))
    if refused:
        with pytest.raises(exc.TableAlreadyExistsError) as info:
            docc.Table.create(root, SCHEMA)
        assert entries[0] in str(info.value) and str(root) in str(info.value)
        assert "vacuum would delete them" in str(info.value)
        # Nothing written: the files are as they were and there is no log.
        assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*")) == before
    else:
        t = docc.Table.create(root, SCHEMA)
        assert t.version == 0 and t.snapshot().to_pyarrow().num_rows == 0


def test_create_on_a_missing_directory_still_works(tmp_path):
    assert docc.Table.create(tmp_path / "a" / "b", SCHEMA).version == 0


# -- table properties ------------------------------------------------------------------------

@pytest.mark.parametrize("key, nearest", [
    ("delta.enableDeletionVector", "delta.enableDeletionVectors"),  # the example
    ("delta.checkpointIntervall", "delta.checkpointInterval"),
    ("delta.logRetention", "delta.logRetentionDuration"),
])
def test_unknown_delta_property_names_the_nearest_known_one(tmp_path, key, nearest):
    with pytest.raises(exc.InvalidArgumentError, match=f"did you mean '{nearest}'|did you mean \"{nearest}\""):
        docc.Table.create(tmp_path / "t", SCHEMA, properties={key: "true"})
    assert not (tmp_path / "t" / "_delta_log").exists() or not any((tmp_path / "t" / "_delta_log").iterdir())
    t = docc.Table.create(tmp_path / "t", SCHEMA)
    with pytest.raises(exc.InvalidArgumentError, match="did you mean"):
        t.set_properties({key: "true"})
    assert t.refresh() == 0 and key not in t.snapshot().properties


@pytest.mark.parametrize("key", [
    "delta.targetFileSize", "delta.autoOptimize.optimizeWrite", "delta.universalFormat.enabledFormats",
    "delta.enableIcebergCompatV2", "DELTA.ENABLEDELETIONVECTORS", "delta.feature.deletionVectors",
    "delta.constraints.positive", "owner", "team.cost-centre",
])
def test_known_and_user_properties_are_accepted(tmp_path, key):
    value = {"delta.targetFileSize": "1048576", "delta.universalFormat.enabledFormats": "iceberg",
             "delta.feature.deletionVectors": "supported", "delta.constraints.positive": "id > 0"}.get(key, "true")
    t = docc.Table.create(tmp_path / "t", SCHEMA)
    t.set_properties({key: value})
    assert t.refresh() == 1


def test_a_table_already_carrying_an_unknown_key_opens_and_takes_writes(tmp_path):
    """Written by another (newer) writer: only keys being set are checked."""
    root = tmp_path / "t"
    write_commit(root, 0, [protocol(1, 2), metadata(configuration={"delta.someFutureProperty": "on"})])
    t = docc.Table(root)
    t.append(pa.table({"id": pa.array([1], pa.int64())}))
    t.set_properties({"owner": "me"})
    assert t.snapshot().properties == {"delta.someFutureProperty": "on", "owner": "me"}
    assert t.snapshot().to_pyarrow().num_rows == 1


# -- schema changes: rename, drop, add (column mapping keeps the data) -------------------------

CM = {"delta.columnMapping.mode": "name"}
NESTED = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.string()),
                    ("s", pa.struct([("a", pa.int64()), ("b", pa.string())]))])


def _cm_table(tmp_path, props=None, partition_by=("p",)):
    t = docc.Table.create(tmp_path / "t", NESTED, partition_by=list(partition_by), properties=dict(CM, **(props or {})))
    t.append(pa.table({"id": [1, 2, 3], "p": ["x", "y", "x"], "v": ["a", "b", "c"],
                       "s": [{"a": 10, "b": "u"}, {"a": 20, "b": "v"}, None]}, schema=NESTED))
    return t


def kernel_rows(root, key: str = "id") -> list:
    """delta-kernel-rs's read of the table (it follows column mapping), rows sorted by ``key``."""
    return sorted(helpers.kernel_rows(docc.Table(root)).to_pylist(), key=lambda r: r[key])


def test_set_schema_that_loses_a_column_is_refused(tmp_path):
    """Issue 44 case 2: a rename written as a new schema committed drop + add, and every value
    of the column read back NULL. Now SchemaMismatchError, nothing committed, values intact."""
    t = _cm_table(tmp_path)
    renamed = pa.schema([f if f.name != "v" else pa.field("w", pa.string()) for f in NESTED])
    with pytest.raises(exc.SchemaMismatchError, match="rename_column") as info:
        t.set_schema(renamed)
    assert info.value.column == "v" and info.value.version == 1
    assert t.refresh() == 1 and t.snapshot().to_pyarrow().sort_by("id").column("v").to_pylist() == ["a", "b", "c"]
    nested_drop = pa.schema([f if f.name != "s" else pa.field("s", pa.struct([("a", pa.int64())])) for f in NESTED])
    with pytest.raises(exc.SchemaMismatchError) as info:
        t.set_schema(nested_drop)
    assert info.value.column == "s.b"
    t.set_schema(renamed, allow_drop=True)  # asked for: the old values are gone, w is new
    assert t.snapshot().to_pyarrow().column("w").to_pylist() == [None] * 3


def test_rename_column_keeps_the_data(tmp_path):
    t = _cm_table(tmp_path)
    t.rename_column("v", "w")
    t.rename_column("s.a", "alpha")
    t.rename_column("p", "part")
    t.append(pa.table({"id": [4], "part": ["y"], "w": ["d"], "s": [{"alpha": 40, "b": "z"}]},
                      schema=pa.schema([("id", pa.int64()), ("part", pa.string()), ("w", pa.string()),
                                        ("s", pa.struct([("alpha", pa.int64()), ("b", pa.string())]))])))
    want = [  # the values written above, under the new names
        {"id": 1, "part": "x", "w": "a", "s": {"alpha": 10, "b": "u"}},
        {"id": 2, "part": "y", "w": "b", "s": {"alpha": 20, "b": "v"}},
        {"id": 3, "part": "x", "w": "c", "s": None},
        {"id": 4, "part": "y", "w": "d", "s": {"alpha": 40, "b": "z"}},
    ]
    ours = sorted(t.snapshot().to_pyarrow().to_pylist(), key=lambda r: r["id"])
    assert ours == want
    assert kernel_rows(tmp_path / "t") == want
    assert t.snapshot().partition_columns == ["part"]
    assert sorted(r["id"] for r in t.snapshot().to_pyarrow(where="part = 'x'").to_pylist()) == [1, 3]


def test_drop_columns_hides_the_values_and_a_new_column_of_that_name_starts_empty(tmp_path):
    t = _cm_table(tmp_path)
    t.drop_columns(["v", "s.b"])
    assert t.snapshot().schema.names == ["id", "p", "s"]
    t.add_columns([pa.field("v", pa.string()), pa.field("s.c", pa.int32())])
    rows = sorted(t.snapshot().to_pyarrow().to_pylist(), key=lambda r: r["id"])
    # The new v is a new column (new physical name): the dropped values do not come back.
    assert [r["v"] for r in rows] == [None, None, None]
    assert [r["s"] for r in rows] == [{"a": 10, "c": None}, {"a": 20, "c": None}, None]
    assert kernel_rows(tmp_path / "t") == rows


@pytest.mark.parametrize("call, error, match", [
    (lambda t: t.rename_column("nope", "x"), exc.InvalidArgumentError, "no column"),
    (lambda t: t.rename_column("v", "ID"), exc.InvalidArgumentError, "already exists"),
    (lambda t: t.rename_column("v", "a.b"), exc.InvalidArgumentError, "without dots"),
    (lambda t: t.rename_column("id", "key"), exc.InvalidArgumentError, "constraint positive"),
    (lambda t: t.drop_columns(["p"]), exc.InvalidArgumentError, "partition column"),
    (lambda t: t.drop_columns(["s.a", "s.b"]), exc.InvalidArgumentError, "without fields"),
    (lambda t: t.drop_columns("v"), exc.InvalidArgumentError, "list of column names"),
    (lambda t: t.add_columns([pa.field("v", pa.string())]), exc.InvalidArgumentError, "already exists"),
    (lambda t: t.add_columns([pa.field("n", pa.int64(), nullable=False)]), exc.InvalidArgumentError, "NOT NULL"),
    (lambda t: t.add_columns([pa.field("v.x", pa.int64())]), exc.InvalidArgumentError, "not inside a struct"),
])
def test_schema_changes_refuse_bad_requests(tmp_path, call, error, match):
    t = _cm_table(tmp_path)
    t.add_constraint("positive", "id > 0")
    with pytest.raises(error, match=match):
        call(t)
    assert t.refresh() == 2  # nothing committed


def test_rename_and_drop_need_column_mapping(tmp_path):
    t = docc.Table.create(tmp_path / "t", SCHEMA)
    for call in (lambda: t.rename_column("id", "key"), lambda: t.drop_columns(["p"])):
        with pytest.raises(exc.UnsupportedFeatureError, match="column mapping"):
            call()
    t.add_columns([pa.field("extra", pa.float64())])  # adding needs no column mapping
    assert t.snapshot().schema.names == ["id", "p", "extra"]


def test_a_schema_change_fails_a_concurrent_writer(tmp_path):
    """concurrency.md §3 check 2: a metadata change fails every concurrent writer."""
    t = _cm_table(tmp_path)
    txn = t.begin()
    txn.append(pa.table({"id": [9], "p": ["x"], "v": ["z"], "s": [None]}, schema=NESTED))
    t.rename_column("v", "w")
    with pytest.raises(exc.MetadataChangedException):
        txn.commit()
    tx = t.begin()
    tx.rename_column("w", "v2")
    tx.drop_columns(["s"])
    tx.commit()
    assert t.snapshot().schema.names == ["id", "p", "v2"]


def test_spark_table_changes_its_definition_without_reaching_for_table(spark, tmp_path):
    """Issue 44: SparkTable has the metadata calls; Spark reads the renamed column's old values."""
    spark_mod = pytest.importorskip("delta_occ.spark", reason="pyspark is not installed")
    _cm_table(tmp_path)
    st = spark_mod.SparkTable(spark, tmp_path / "t")
    st.rename_column("v", "w")
    st.set_properties({"owner": "me"})
    st.add_columns([pa.field("extra", pa.int64())])
    with pytest.raises(exc.InvalidArgumentError, match="did you mean"):
        st.set_properties({"delta.enableDeletionVector": "true"})
    rows = sorted((r["id"], r["w"], r["extra"]) for r in st.to_df().collect())
    assert rows == [(1, "a", None), (2, "b", None), (3, "c", None)]  # the values _cm_table wrote
    with st.begin() as tx:
        tx.drop_columns(["extra"])
    assert st.to_df().columns == ["id", "p", "w", "s"]
    assert st.snapshot().properties["owner"] == "me"


# -- generated columns and column defaults (issue 44 item 1) ------------------------------------------
GEN = pa.schema([
    ("ts", pa.timestamp("us", tz="UTC")),
    pa.field("day", pa.date32(), metadata={"delta.generationExpression": "CAST(ts AS DATE)"}),
    ("a", pa.int64()),
    pa.field("b", pa.int64(), metadata={"delta.generationExpression": "a * 2 + 1"}),
    pa.field("tag", pa.string(), metadata={"delta.generationExpression": "concat('k', substring(CAST(a AS STRING), 1, 1))"}),
    pa.field("src", pa.string(), metadata={"CURRENT_DEFAULT": "'batch'"}),
    pa.field("yr", pa.int32(), metadata={"delta.generationExpression": "year(ts)"}),
])


def _ts(*args) -> dt.datetime:
    return dt.datetime(*args, tzinfo=dt.timezone.utc)


def _gen_row(ts, a, src="batch") -> dict:
    """A row as the expressions define it (computed here by hand, not by delta-occ)."""
    return {"ts": ts, "day": ts.date(), "a": a, "b": a * 2 + 1, "tag": "k" + str(a)[0], "src": src, "yr": ts.year}


class _Embedded:
    def __init__(self, root, request):
        self.t = docc.Table.create(root, GEN, partition_by=["day"])

    def data(self, rows, names):
        return pa.table({n: [r[n] for r in rows] for n in names}, schema=pa.schema([GEN.field(n) for n in names]))

    def rows(self):
        return sorted(docc.Table(self.t.path).snapshot().to_pyarrow().to_pylist(), key=lambda r: r["a"])


class _OnSpark(_Embedded):
    def __init__(self, root, request):
        from delta_occ.spark import SparkTable

        super().__init__(root, request)
        self.spark = request.getfixturevalue("spark")
        self.t = SparkTable(self.spark, root)

    def data(self, rows, names):
        return self.spark.createDataFrame(super().data(rows, names).to_pandas())


@pytest.mark.parametrize("engine", ["embedded", "spark"])
def test_generated_columns_and_defaults_are_honoured(tmp_path, request, engine):
    """Issue 44 case 1: the rule was dropped and the table created at protocol 1/2. Now the table
    keeps the expressions and lists the features; both engines compute a missing generated value,
    apply the default, refuse a wrong value (nothing written) and compute again on UPDATE and
    MERGE. delta-kernel-rs reads the rows the expressions define."""
    if engine == "spark":
        pytest.importorskip("delta_occ.spark", reason="pyspark is not installed")
    e = (_Embedded if engine == "embedded" else _OnSpark)(tmp_path / "t", request)
    proto = _newest(tmp_path / "t", "protocol")
    assert {"generatedColumns", "allowColumnDefaults"} <= set(proto["writerFeatures"])
    fields = json.loads(_newest(tmp_path / "t", "metaData")["schemaString"])["fields"]
    assert fields[1]["metadata"]["delta.generationExpression"] == "CAST(ts AS DATE)"
    e.t.append(e.data([{"ts": _ts(2024, 1, 1, 5), "a": 1}], ["ts", "a"]))
    e.t.append(e.data([{"ts": _ts(2024, 1, 2), "a": 2, "b": 5, "src": "given"}], ["ts", "a", "b", "src"]))
    with pytest.raises(exc.ConstraintViolationError, match="generated column b"):
        e.t.append(e.data([{"ts": _ts(2024, 1, 3), "a": 3, "b": 0}], ["ts", "a", "b"]))
    assert e.rows() == [_gen_row(_ts(2024, 1, 1, 5), 1), _gen_row(_ts(2024, 1, 2), 2, "given")]
    e.t.update("a = 1", {"a": "70"})
    e.t.merge(e.data([{"a": 2, "ts": _ts(2024, 3, 1)}, {"a": 9, "ts": _ts(2024, 3, 2)}], ["a", "ts"]), "t.a = s.a",
              when_matched_update={"ts": "s.ts"}, when_not_matched_insert=True)
    want = [_gen_row(_ts(2024, 3, 1), 2, "given"), _gen_row(_ts(2024, 3, 2), 9), _gen_row(_ts(2024, 1, 1, 5), 70)]
    assert e.rows() == want
    assert kernel_rows(tmp_path / "t", "a") == want


@pytest.mark.parametrize("field, match", [
    (pa.field("g", pa.int64(), metadata={"delta.generationExpression": "no_such_fn(a)"}), "no_such_fn"),
    (pa.field("g", pa.date32(), metadata={"delta.generationExpression": "current_date()"}), "not deterministic"),
    (pa.field("g", pa.int64(), metadata={"delta.generationExpression": "CAST(a AS STRING) || 'x'"}), "not int64"),
    (pa.field("g", pa.int64(), metadata={"CURRENT_DEFAULT": "a + 1"}), "unknown column 'a'"),
])
def test_generated_and_default_expressions_are_checked_at_create(tmp_path, field, match):
    """Anything the engines could not apply is refused when declared, never dropped."""
    with pytest.raises(exc.PredicateError, match=match):
        docc.Table.create(tmp_path / "t", pa.schema([("a", pa.int64()), field]))
    assert not (tmp_path / "t" / "_delta_log").exists() or not any((tmp_path / "t" / "_delta_log").iterdir())


@pytest.mark.parametrize("key, value", [("delta.generationExpression", "a + 1"), ("CURRENT_DEFAULT", "5")])
def test_generated_columns_and_defaults_cannot_be_added_later(tmp_path, key, value):
    """The rows already in the table have no such values (delta-spark refuses this too)."""
    t = docc.Table.create(tmp_path / "t", pa.schema([("a", pa.int64())]))
    with pytest.raises(exc.InvalidArgumentError, match="declared when the table is created"):
        t.add_columns([pa.field("b", pa.int64(), metadata={key: value})])
    assert t.refresh() == 0


def test_comments_and_nullability(tmp_path):
    """api.md: set_nullable(name, True) relaxes a NOT NULL column; False is refused, as in Delta."""
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("s", pa.struct([("a", pa.int64())]))])
    t = docc.Table.create(tmp_path / "t", schema)
    t.set_column_comment("id", "the key")
    t.set_column_comment("s.a", "inner")
    with pytest.raises(exc.InvalidArgumentError, match="cannot become NOT NULL"):
        t.set_nullable("s", False)
    with pytest.raises(exc.InvalidArgumentError, match="no column"):
        t.set_column_comment("nope", "x")
    t.set_nullable("id", True)
    t.append(pa.table({"id": pa.array([None], pa.int64()), "s": [None]}))  # refused while id was NOT NULL
    fields = json.loads(t.snapshot().handle.schema_json)["fields"]
    assert fields[0]["nullable"] is True and fields[0]["metadata"]["comment"] == "the key"
    assert fields[1]["type"]["fields"][0]["metadata"]["comment"] == "inner"
    assert t.version == 4


# -- type widening (issue 44, ALTER item 2) ---------------------------------------------------------


def _newest(root, kind: str) -> dict:
    """The newest ``kind`` action ("protocol", "metaData") in the table's JSON commits, read as
    the protocol defines them (not through delta-occ)."""
    found = {}
    for commit in sorted((pathlib.Path(root) / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if kind in action:
                found = action[kind]
    return found

# Each row: old pyarrow type, a value of it, the wider type (Delta's name), the value read back.
# The pairs are the protocol's typeWidening list; the read-back value is the old value in the
# new type by that type's definition (an integer stays the integer, a date is its midnight).
WIDENINGS = [
    (pa.int8(), 7, "short", pa.int16(), 7),
    (pa.int16(), -300, "integer", pa.int32(), -300),
    (pa.int32(), 2**31 - 1, "long", pa.int64(), 2**31 - 1),
    (pa.int32(), 5, "double", pa.float64(), 5.0),
    (pa.float32(), 1.5, "double", pa.float64(), 1.5),
    (pa.date32(), dt.date(2020, 2, 29), "timestamp_ntz", pa.timestamp("us"), dt.datetime(2020, 2, 29)),
    (pa.int32(), 123, "decimal(10,0)", pa.decimal128(10, 0), Decimal("123")),
    (pa.decimal128(5, 2), Decimal("123.45"), "decimal(7,3)", pa.decimal128(7, 3), Decimal("123.450")),
]


@pytest.mark.parametrize("old, value, to, arrow_to, read_back", WIDENINGS, ids=[f"{w[0]}->{w[2]}" for w in WIDENINGS])
def test_widen_column_reads_old_files_in_the_new_type(tmp_path, old, value, to, arrow_to, read_back):
    """Old files are not rewritten: we and delta-kernel-rs read them in the new type; a filter on
    the column still finds the old file's row (its statistics are in the old type)."""
    schema = pa.schema([("id", pa.int64()), ("c", old)])
    t = docc.Table.create(tmp_path / "t", schema, properties={"delta.checkpointInterval": "3"})
    t.append(pa.table({"id": [1], "c": pa.array([value], old)}))
    t.widen_column("c", to)
    t.append(pa.table({"id": [2], "c": pa.array([None], arrow_to)}))  # version 3: a checkpoint too
    assert (tmp_path / "t" / "_delta_log" / "00000000000000000003.checkpoint.parquet").exists()
    # The protocol's typeWidening section: the feature as reader and writer feature, the property,
    # and the change in the field's metadata.
    proto = _newest(tmp_path / "t", "protocol")
    assert "typeWidening" in proto["readerFeatures"] and "typeWidening" in proto["writerFeatures"]
    meta = _newest(tmp_path / "t", "metaData")
    assert meta["configuration"]["delta.enableTypeWidening"] == "true"
    field = json.loads(meta["schemaString"])["fields"][1]
    assert field["type"] == to
    assert field["metadata"]["delta.typeChanges"][-1]["toType"] == to
    fresh = docc.Table(tmp_path / "t").snapshot()
    got = fresh.to_pyarrow()
    assert got.schema.field("c").type == arrow_to
    assert sorted(got.to_pylist(), key=lambda r: r["id"]) == [{"id": 1, "c": read_back}, {"id": 2, "c": None}]
    assert fresh.to_pyarrow(where="c IS NOT NULL").column("id").to_pylist() == [1]
    assert kernel_rows(tmp_path / "t") == [{"id": 1, "c": read_back}, {"id": 2, "c": None}]


@pytest.mark.parametrize("call, error, match", [
    (lambda t: t.widen_column("id", pa.int32()), exc.InvalidArgumentError, "cannot change type from long to integer"),
    (lambda t: t.widen_column("v", "long"), exc.InvalidArgumentError, "from string to long"),
    (lambda t: t.widen_column("p", "long"), exc.InvalidArgumentError, "partition column"),
    (lambda t: t.widen_column("nope", "long"), exc.InvalidArgumentError, "no column"),
    (lambda t: t.widen_column("n", 42), exc.InvalidArgumentError, "pyarrow DataType"),
])
def test_widen_column_refuses_what_is_not_a_widening(tmp_path, call, error, match):
    schema = pa.schema([("id", pa.int64()), ("p", pa.int32()), ("v", pa.string()), ("n", pa.int32())])
    t = docc.Table.create(tmp_path / "t", schema, partition_by=["p"])
    with pytest.raises(error, match=match):
        call(t)
    assert t.refresh() == 0 and "delta.enableTypeWidening" not in _newest(tmp_path / "t", "metaData")["configuration"]


def test_set_schema_widens_only_where_the_table_allows_it(tmp_path):
    """delta-spark's rule: a wider type in a new schema needs delta.enableTypeWidening; with it,
    the change is recorded as widen_column records it."""
    t = docc.Table.create(tmp_path / "t", pa.schema([("id", pa.int32())]))
    wider = pa.schema([("id", pa.int64())])
    with pytest.raises(exc.UnsupportedFeatureError, match="widen_column"):
        t.set_schema(wider)
    t.set_properties({"delta.enableTypeWidening": "true"})
    t.set_schema(wider)
    field = json.loads(_newest(tmp_path / "t", "metaData")["schemaString"])["fields"][0]
    assert field["metadata"]["delta.typeChanges"] == [{"fromType": "integer", "toType": "long"}]


def test_spark_reads_and_deletes_in_a_widened_table(spark, tmp_path):
    spark_mod = pytest.importorskip("delta_occ.spark", reason="pyspark is not installed")
    t = docc.Table.create(tmp_path / "t", pa.schema([("id", pa.int32()), ("d", pa.date32())]))
    t.append(pa.table({"id": pa.array([1, 2], pa.int32()), "d": [dt.date(2020, 1, 1), dt.date(2020, 1, 2)]}))
    st = spark_mod.SparkTable(spark, tmp_path / "t")
    st.widen_column("id", "long")
    st.widen_column("d", "timestamp_ntz")
    t.append(pa.table({"id": [2**40], "d": pa.array([dt.datetime(2021, 1, 1, 6)], pa.timestamp("us"))}))
    st.delete("id = 2")
    rows = sorted((r["id"], r["d"]) for r in st.to_df().collect())
    assert rows == [(1, dt.datetime(2020, 1, 1)), (2**40, dt.datetime(2021, 1, 1, 6))]
    assert sorted((r["id"], r["d"]) for r in kernel_rows(tmp_path / "t")) == rows


def test_enabling_column_mapping_on_an_existing_table_keeps_its_data(tmp_path):
    """Issue 44 item 2: none -> name upgrades the protocol; the physical names are the current
    names, so old files read as before, and renames then keep the data (delta-kernel-rs reads the
    values written; deltalake 1.6 refuses the table, naming the feature it does not read)."""
    schema = pa.schema([("id", pa.int64()), ("s", pa.struct([("a", pa.int64())])), ("p", pa.string())])
    t = docc.Table.create(tmp_path / "t", schema, partition_by=["p"])
    t.append(pa.table({"id": [1, 2], "s": [{"a": 1}, None], "p": ["x", "y"]}, schema=schema))
    t.set_properties({"delta.columnMapping.mode": "name"})
    proto = _newest(tmp_path / "t", "protocol")
    assert "columnMapping" in proto["readerFeatures"] and "columnMapping" in proto["writerFeatures"]
    fields = json.loads(_newest(tmp_path / "t", "metaData")["schemaString"])["fields"]
    assert [f["metadata"]["delta.columnMapping.physicalName"] for f in fields] == ["id", "s", "p"]
    t.rename_column("id", "key")
    t.rename_column("s.a", "b")
    t.append(pa.table({"key": [3], "s": [{"b": 5}], "p": ["x"]}))
    want = [{"key": 1, "s": {"b": 1}, "p": "x"}, {"key": 2, "s": None, "p": "y"}, {"key": 3, "s": {"b": 5}, "p": "x"}]
    assert sorted(t.snapshot().to_pyarrow().to_pylist(), key=lambda r: r["key"]) == want
    assert kernel_rows(tmp_path / "t", "key") == want
    deltalake = pytest.importorskip("deltalake")
    with pytest.raises(Exception, match="columnMapping"):
        deltalake.DeltaTable(str(tmp_path / "t")).to_pyarrow_table()
    for mode in ("id", "none"):
        with pytest.raises(exc.UnsupportedFeatureError, match="only none -> name"):
            t.set_properties({"delta.columnMapping.mode": mode})


# -- which columns get statistics (issue 44 item 4) -------------------------------------------------
WIDE = pa.schema([("a", pa.int64()), ("s", pa.struct([("x", pa.int64()), ("y", pa.int64())])), ("b", pa.int64()), ("c", pa.string())])
WIDE_ROWS = pa.table({"a": [1, 5], "s": [{"x": 1, "y": 2}, {"x": 3, "y": 4}], "b": [10, 20], "c": ["u", "v"]}, schema=WIDE)


@pytest.mark.parametrize("props, kept", [
    # delta-spark's documented meaning: the first N leaf columns of the schema (a struct's fields
    # count one by one; delta-occ keeps no nested statistics, so s.x uses a slot and shows none).
    ({"delta.dataSkippingNumIndexedCols": "1"}, {"a"}),
    ({"delta.dataSkippingNumIndexedCols": "3"}, {"a"}),
    ({"delta.dataSkippingNumIndexedCols": "4"}, {"a", "b"}),
    ({"delta.dataSkippingNumIndexedCols": "0"}, set()),
    ({"delta.dataSkippingNumIndexedCols": "-1"}, {"a", "b", "c"}),
    ({"delta.dataSkippingStatsColumns": "c,`b`"}, {"b", "c"}),
    ({}, {"a", "b", "c"}),  # 32 by default
])
@pytest.mark.parametrize("engine", ["embedded", "spark"])
def test_statistics_follow_the_data_skipping_properties(tmp_path, request, props, kept, engine):
    t = docc.Table.create(tmp_path / "t", WIDE, properties=props)
    if engine == "embedded":
        t.append(WIDE_ROWS)
    else:
        spark_mod = pytest.importorskip("delta_occ.spark", reason="pyspark is not installed")
        spark = request.getfixturevalue("spark")
        spark_mod.SparkTable(spark, tmp_path / "t").append(spark.createDataFrame(WIDE_ROWS.to_pandas()))
    snap = docc.Table(tmp_path / "t").snapshot()
    files = [json.loads(f["stats"]) for f in snap.files().to_pylist()]
    assert sum(s["numRecords"] for s in files) == 2  # Spark may write one file per row
    for stats in files:
        for key in ("minValues", "nullCount"):
            assert set(stats.get(key, {})) == kept, (key, stats)
        # A string max from a footer that may hold a cut prefix is left out (stats.rs rules).
        assert set(stats.get("maxValues", {})) <= kept and kept - {"c"} <= set(stats.get("maxValues", {})), stats
    # A filter on a column without statistics reads every file and still finds the right rows.
    assert snap.to_pyarrow(where="b = 20 AND c = 'v'").column("a").to_pylist() == [5]


# -- schema_mode on writes (issue 44 item 2) --------------------------------------------------------
S1 = pa.schema([("id", pa.int64()), ("s", pa.struct([("a", pa.int64())])), ("p", pa.string())])
S2 = pa.schema([("id", pa.int64()), ("s", pa.struct([("a", pa.int64()), ("b", pa.string())])), ("p", pa.string()), ("n", pa.float64())])


@pytest.mark.parametrize("props", [{}, CM])
def test_schema_mode_merge_adds_nested_fields(tmp_path, props):
    """A new field inside a struct column and a new top-level column, both added by the write;
    the old row reads NULL for them (the values written are the model)."""
    t = docc.Table.create(tmp_path / "t", S1, partition_by=["p"], properties=props)
    t.append(pa.table({"id": [1], "s": [{"a": 1}], "p": ["x"]}, schema=S1))
    with pytest.raises(exc.SchemaMismatchError):
        t.append(pa.table({"id": [2], "s": [{"a": 2, "b": "z"}], "p": ["y"], "n": [1.5]}, schema=S2))
    t.append(pa.table({"id": [2], "s": [{"a": 2, "b": "z"}], "p": ["y"], "n": [1.5]}, schema=S2), schema_mode="merge")
    want = [{"id": 1, "s": {"a": 1, "b": None}, "p": "x", "n": None}, {"id": 2, "s": {"a": 2, "b": "z"}, "p": "y", "n": 1.5}]
    assert t.snapshot().schema == S2
    assert sorted(t.snapshot().to_pyarrow().to_pylist(), key=lambda r: r["id"]) == want
    assert kernel_rows(tmp_path / "t") == want


@pytest.mark.parametrize("props", [{}, CM])
def test_schema_mode_overwrite_replaces_the_schema(tmp_path, props):
    """delta-spark's overwriteSchema: columns dropped, retyped and renamed in one whole-table
    overwrite; only the new rows remain, read by us and delta-kernel-rs as written."""
    t = docc.Table.create(tmp_path / "t", S1, partition_by=["p"], properties=props)
    t.append(pa.table({"id": [1, 2], "s": [{"a": 1}, None], "p": ["x", "y"]}, schema=S1))
    new = pa.schema([("id", pa.string()), ("label", pa.string()), ("p", pa.string())])
    t.overwrite(pa.table({"id": ["k1"], "label": ["one"], "p": ["x"]}, schema=new), schema_mode="overwrite")
    assert t.snapshot().schema == new
    assert t.snapshot().to_pyarrow().to_pylist() == [{"id": "k1", "label": "one", "p": "x"}]
    assert kernel_rows(tmp_path / "t") == [{"id": "k1", "label": "one", "p": "x"}]
    if not props:
        deltalake = pytest.importorskip("deltalake")
        assert deltalake.DeltaTable(str(tmp_path / "t")).to_pyarrow_table().to_pylist() == [{"id": "k1", "label": "one", "p": "x"}]


@pytest.mark.parametrize("call, match", [
    (lambda t: t.append(pa.table({"k": ["a"], "p": ["x"]}), schema_mode="overwrite"), "not append"),
    (lambda t: t.overwrite(pa.table({"k": ["a"], "p": ["x"]}), replace_where="p = 'x'", schema_mode="overwrite"), "whole table"),
    (lambda t: t.overwrite(pa.table({"k": ["a"]}), schema_mode="overwrite"), "partition column \"p\""),
    (lambda t: t.append(pa.table({"k": ["a"], "p": ["x"]}), schema_mode="replace"), "'merge' or 'overwrite'"),
])
def test_schema_mode_refusals(tmp_path, call, match):
    t = docc.Table.create(tmp_path / "t", S1, partition_by=["p"])
    t.append(pa.table({"id": [1], "s": [{"a": 1}], "p": ["x"]}, schema=S1))
    with pytest.raises(exc.InvalidArgumentError, match=match):
        call(t)
    assert t.refresh() == 1 and t.snapshot().schema == S1


def test_a_staged_schema_replacement_needs_every_file_removed(tmp_path):
    t = docc.Table.create(tmp_path / "t", S1, partition_by=["p"])
    t.append(pa.table({"id": [1], "s": [{"a": 1}], "p": ["x"]}, schema=S1))
    tx = t.begin()
    tx.replace_schema(pa.schema([("z", pa.int64()), ("p", pa.string())]))
    with pytest.raises(exc.InvalidArgumentError, match="1 live file"):
        tx.commit()
    assert t.refresh() == 1


@pytest.mark.parametrize("mode", ["merge", "overwrite"])
def test_spark_writes_take_schema_mode_too(spark, tmp_path, mode):
    """The same rule (operations.conform.evolve) on the Spark engine: merge adds the new nested
    field and column, overwrite replaces the schema; delta-kernel-rs reads the rows written."""
    spark_mod = pytest.importorskip("delta_occ.spark", reason="pyspark is not installed")
    t = docc.Table.create(tmp_path / "t", S1, partition_by=["p"])
    t.append(pa.table({"id": [1], "s": [{"a": 1}], "p": ["x"]}, schema=S1))
    st = spark_mod.SparkTable(spark, tmp_path / "t")
    if mode == "merge":
        st.append(spark.createDataFrame(pa.table({"id": [2], "s": [{"a": 2, "b": "z"}], "p": ["y"], "n": [1.5]}, schema=S2).to_pandas()),
                  schema_mode="merge")
        want = [{"id": 1, "s": {"a": 1, "b": None}, "p": "x", "n": None}, {"id": 2, "s": {"a": 2, "b": "z"}, "p": "y", "n": 1.5}]
    else:
        new = pa.schema([("id", pa.string()), ("label", pa.string()), ("p", pa.string())])
        st.overwrite(spark.createDataFrame(pa.table({"id": ["k1"], "label": ["one"], "p": ["x"]}, schema=new).to_pandas()),
                     schema_mode="overwrite")
        want = [{"id": "k1", "label": "one", "p": "x"}]
    assert sorted(docc.Table(tmp_path / "t").snapshot().to_pyarrow().to_pylist(), key=lambda r: str(r["id"])) == want
    assert kernel_rows(tmp_path / "t") == want


def test_widening_refusals_see_the_type_and_any_letter_case(tmp_path):
    """Review findings: the current type is no widening (it would add the feature for nothing),
    and a partition column is refused whatever the letter case."""
    t = docc.Table.create(tmp_path / "t", pa.schema([("id", pa.int64()), ("Day", pa.int32())]), partition_by=["day"])
    with pytest.raises(exc.InvalidArgumentError, match="already of that type"):
        t.widen_column("id", pa.int64())
    with pytest.raises(exc.InvalidArgumentError, match="partition column"):
        t.widen_column("Day", pa.int64())
    assert t.refresh() == 0


def test_schema_overwrite_keeps_declarations_and_refuses_dangling_rules(tmp_path):
    commented = pa.field("v", pa.string(), metadata={"comment": "the value"})
    t = docc.Table.create(tmp_path / "t", pa.schema([("id", pa.int64()), commented, ("x", pa.int64())]))
    t.add_constraint("x_pos", "x > 0")
    t.append(pa.table({"id": [1], "v": ["a"], "x": [1]}))
    with pytest.raises(exc.InvalidArgumentError, match="constraint x_pos"):
        t.overwrite(pa.table({"id": [2], "v": ["b"]}), schema_mode="overwrite")
    t.drop_constraint("x_pos")
    t.overwrite(pa.table({"id": ["k"], "v": ["b"]}), schema_mode="overwrite")
    fields = json.loads(_newest(tmp_path / "t", "metaData")["schemaString"])["fields"]
    assert [f["name"] for f in fields] == ["id", "v"] and fields[1]["metadata"].get("comment") == "the value"


@pytest.mark.parametrize("engine", ["embedded", "spark"])
def test_a_merge_insert_naming_some_columns_applies_the_others_defaults(tmp_path, request, engine):
    """Review finding: an INSERT with a value map left the other columns NULL, not their default."""
    if engine == "spark":
        pytest.importorskip("delta_occ.spark", reason="pyspark is not installed")
    e = (_Embedded if engine == "embedded" else _OnSpark)(tmp_path / "t", request)
    e.t.merge(e.data([{"a": 3, "ts": _ts(2024, 5, 1)}], ["a", "ts"]), "t.a = s.a", when_not_matched_insert={"a": "s.a", "ts": "s.ts"})
    assert e.rows() == [_gen_row(_ts(2024, 5, 1), 3)]
