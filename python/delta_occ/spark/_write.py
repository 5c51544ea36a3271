"""Writing rows from Spark: every job writes into its own new directory under the table (two jobs
sharing an output directory clash in `_temporary`), the driver lists what the job wrote, reads
each footer for Delta statistics and stages the adds. Partition values come from the data
(canonicalised on the driver exactly as the embedded engine does), never from directory names,
which cannot tell NULL from "" and depend on the session time zone."""

from __future__ import annotations

import contextlib
import json
import posixpath
import re
import uuid
from functools import reduce
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import pyarrow as pa
from pyspark.errors import PySparkException
from pyspark.sql import Column, DataFrame
from pyspark.sql.types import StructField

from .. import change_data, identity
from .._schema import type_mismatch, widens
from .._write import Layout, partition_strings
from ..exceptions import ConstraintViolationError, InvalidArgumentError, SchemaMismatchError
from ..operations import row_tracking
from ..operations.bookkeeping import Bookkeeping
from ..operations.conform import check_writable, data_columns
from ..operations.protocols import Staging
from ._columns import col, logical_schema, physical_schema
from ._rowexpr import Compiled, condition
from ._session import F, Session, session_conf

GROUP = "__delta_occ_group"
_WRITE_CONF = {
    # Spark's default INT96 timestamps carry no statistics.
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.parquet.fieldId.write.enabled": "true",
}


class Job:
    """The Spark jobs of one transaction: each writes into a new output directory, which the
    transaction's bookkeeping removes again when it does not commit."""

    def __init__(self, bookkeeping: Bookkeeping) -> None:
        self.bookkeeping = bookkeeping
        self.rows = 0  # rows in the files staged so far
        self.written: List[int] = []  # the group of each file staged, in order

    def new_dir(self, parent: str = "") -> str:
        d = f"{parent}spark-{uuid.uuid4().hex}"
        self.bookkeeping.own_dir(d)
        return d


def conform(df: DataFrame, lay: Layout) -> DataFrame:
    """Columns of the table schema by name (case-insensitive), of the table types or widening to
    them (the embedded engine's rule, ``_schema.widens``); missing nullable columns become NULL;
    unknown columns, other types and NULLs in NOT NULL columns are errors."""
    if not isinstance(df, DataFrame):
        raise InvalidArgumentError(f"data must be a pyspark DataFrame, got {type(df).__name__}")
    schema = logical_schema(json_schema(lay))
    sources = data_columns([(f.name, f.nullable) for f in schema.fields], df.columns, "change the schema first", generated=lay.omittable)
    out: List[Column] = []
    for f, name in zip(schema.fields, sources):
        if name is None:
            out.append(missing_column(lay, f).alias(f.name))
            continue
        data_type = df.schema[name].dataType
        if data_type != f.dataType and not widens(data_type.jsonValue(), f.dataType.jsonValue()):
            raise type_mismatch(f.name, f.dataType.simpleString(), data_type.simpleString())
        c = col(name).cast(f.dataType)
        if not f.nullable and f.name not in lay.generation.expressions:
            c = F.when(c.isNull(), F.raise_error(F.lit(f"delta-occ: column {f.name!r} is NOT NULL but the data holds a null end of column"))).otherwise(c)
        out.append(c.alias(f.name))
    return df.select(*out)


def new_rows(txn: Staging, lay: Layout, df: DataFrame, given: Sequence[str]) -> DataFrame:
    """New rows (of the table schema) with the identity values the data did not give (``given``:
    the columns it gave), consecutive from each column's next value, as the embedded engine gives
    them; the marks move in this transaction.

    Each row's value is its position in the data: its partition's offset (counted first) plus its
    index inside the partition (the low 33 bits of ``monotonically_increasing_id``, as Spark
    documents it). Both passes must see the same partitions and row order, so the rows are first
    fixed with ``localCheckpoint``: a source that changed between the count and the write could
    otherwise give two rows one value."""
    generate = identity.to_generate(lay.identity, given)
    if not generate:
        return df
    df = df.localCheckpoint()
    pid = F.spark_partition_id()
    counts = sorted((r[0], r[1]) for r in df.groupBy(pid.alias("p")).count().collect())
    total = sum(n for _, n in counts)
    if not total:
        return df
    offsets, at = [], 0
    for p, n in counts:
        offsets += [F.lit(p), F.lit(at)]
        at += n
    position = F.element_at(F.create_map(*offsets), pid) + (F.monotonically_increasing_id() - pid.cast("long") * F.lit(1 << 33))
    out = {}
    for name, column in generate.items():
        first = identity.reserve(txn, name, total)
        out[name] = (F.lit(first) + F.lit(column.step) * position).cast("long")
    return df.select(*[out[c].alias(c) if c in out else col(c) for c in df.columns])


def json_schema(lay: Layout) -> str:
    return lay.schema_json


def write(
    spark: Session,
    lay: Layout,
    txn: Staging,
    job: Job,
    df: DataFrame,
    *,
    data_change: bool = True,
    rewrite: bool = False,
) -> Tuple[List[str], Optional[pa.Table]]:
    """Write conformed rows (logical names) and stage one add per file. Returns the paths and,
    on a partitioned table, the distinct partition tuples written (typed, as Arrow)."""
    if data_change and not rewrite:
        check_writable(lay.root, lay.unenforced)
        df = generate(df, lay)
        if lay.rules:
            df = df.filter(rules_guard(lay))
    with rules_broken(lay):
        return _write(spark, lay, txn, job, df, data_change)


def missing_column(lay: Layout, f: StructField) -> Column:
    """The value of a column new rows leave out: its default, else NULL (a generated column's
    NULL is computed by ``generate``)."""
    default = lay.generation.default_values(lay.schema.field(f.name), 1)
    return F.lit(None if default is None else default[0].as_py()).cast(f.dataType)


def generate(df: DataFrame, lay: Layout) -> DataFrame:
    """New or changed rows with each generated column's NULLs replaced by its computed value
    (``delta_occ.generated``: the core's tree compiled to Spark columns, no Python on executors);
    a given value stays, for the table's rules to check."""
    if not lay.generation.expressions:
        return df
    fields = {f.name: f for f in logical_schema(json_schema(lay)).fields}
    out: Dict[str, Column] = {}
    for c, text in lay.generation.expressions.items():
        value = F.coalesce(col(c), Compiled(text, lay.schema).value().cast(fields[c].dataType))
        if not fields[c].nullable:  # an expression that gives NULL cannot fill a NOT NULL column
            value = F.when(value.isNull(), F.raise_error(F.lit(f"delta-occ: column {c!r} is NOT NULL but the data holds a null end of column"))).otherwise(value)
        out[c] = value
    return df.withColumns(out)


def write_changes(spark: Session, lay: Layout, txn: Staging, job: Job, changes: Sequence[Tuple[str, DataFrame]]) -> None:
    """Write an operation's changed rows (kind, rows of the table's columns) as change-data
    files under ``_change_data/`` and stage their ``cdc`` actions (``delta_occ.change_data``):
    one Spark job for all kinds."""
    names = lay.schema.names  # (rows may carry more: positions, row ids)
    frames = [generate(df, lay).select(*[col(n) for n in names]).withColumn(change_data.CHANGE_TYPE, F.lit(kind)) for kind, df in changes]
    if not frames:
        return
    out = reduce(lambda a, b: a.unionByName(b), frames)
    _write(spark, lay, txn, job, out, data_change=False, changes=True)


def _write(
    spark: Session, lay: Layout, txn: Staging, job: Job, df: DataFrame, data_change: bool, changes: bool = False
) -> Tuple[List[str], Optional[pa.Table]]:
    parts = lay.partition_columns
    if not parts:
        return write_groups(spark, lay, txn, job, df, None, {0: ({}, None)}, data_change, changes), None
    tuples = df.select(*[col(c) for c in parts]).distinct().toArrow()
    if tuples.num_rows == 0:
        return [], tuples
    groups: Dict[int, Tuple[Dict[str, Optional[str]], Optional[Dict[str, str]]]] = {
        i: (values, None) for i, values in enumerate(partition_strings(tuples, parts))
    }
    keys = tuples.rename_columns([f"__delta_occ_p{j}" for j in range(len(parts))]).append_column(GROUP, pa.array(range(tuples.num_rows), pa.int32()))
    keys_df = spark.createDataFrame(keys)
    cond = reduce(lambda a, b: a & b, [col(c).eqNullSafe(col(f"__delta_occ_p{j}")) for j, c in enumerate(parts)])
    joined = df.join(F.broadcast(keys_df), on=cond, how="left")
    # The data was evaluated twice (tuples, then rows): a nondeterministic source must not lose rows.
    group = F.when(F.col(GROUP).isNull(), F.raise_error(F.lit("delta-occ: the data changed between its two reads (nondeterministic source?); cache it first"))).otherwise(F.col(GROUP))
    joined = joined.select(*[col(c) for c in df.columns], group.alias(GROUP))
    return write_groups(spark, lay, txn, job, joined, GROUP, groups, data_change, changes), tuples


_BROKEN = re.compile(r"delta-occ rule (\d+) broken by (.*?) end of row", re.S)
_NULL = re.compile(r"delta-occ: column '(.*?)' is NOT NULL but the data holds a null end of column", re.S)


def rules_guard(lay: Layout) -> Column:
    """TRUE on rows that keep every CHECK constraint and invariant of the table (the core's
    compiled rules, as the embedded engine evaluates them); on any other row the job fails with
    a message that ``rules_broken`` turns into the typed error."""
    guard: Optional[Column] = None
    for i, c in enumerate(lay.rules.compiled):
        holds = condition(json.loads(c.expr.tree_json), col)
        row = F.to_json(F.struct(*[col(name) for name in c.expr.columns]), {"ignoreNullFields": "false"})
        broken = F.raise_error(F.concat(F.lit(f"delta-occ rule {i} broken by "), row, F.lit(" end of row")))
        check = F.when(holds, F.lit(True)).otherwise(broken.cast("boolean"))
        guard = check if guard is None else guard & check
    assert guard is not None
    return guard


@contextlib.contextmanager
def rules_broken(lay: Layout) -> Iterator[None]:
    """A Spark job failed by ``rules_guard`` as the ConstraintViolationError the embedded engine
    raises (without the count of such rows: the job stops at the first), and one failed by a NULL
    in a NOT NULL column (``conform``) as its SchemaMismatchError."""
    try:
        yield
    except PySparkException as e:
        null = _NULL.search(str(e))
        if null is not None:
            raise SchemaMismatchError(f"column {null.group(1)!r} is NOT NULL but the data holds a null", column=null.group(1)) from None
        found = _BROKEN.search(str(e))
        if found is None:
            raise
        rule = lay.rules.compiled[int(found.group(1))].rule
        try:
            row = json.loads(found.group(2))
        except ValueError:
            row = found.group(2)
        raise ConstraintViolationError(
            f"{rule.describe()} is not true for a row written to {lay.root}: {row}",
            table=lay.root, constraint=rule.name, expression=rule.expression, row=row,
        ) from None


def write_groups(
    spark: Session,
    lay: Layout,
    txn: Staging,
    job: Job,
    df: DataFrame,
    group_col: Optional[str],
    groups: Dict[int, Tuple[Dict[str, Optional[str]], Optional[Dict[str, str]]]],
    data_change: bool,
    changes: bool = False,
) -> List[str]:
    """Write `df` (logical names, plus `group_col` when given) with one output directory per
    group; `groups` maps a group number to its partition values and add tags. With `changes`,
    change-data files: `df` has `_change_type` too, and they go under `_change_data/`."""
    out_dir = job.new_dir(change_data.DIRECTORY + "/") if changes else job.new_dir()
    phys = physical_schema(json_schema(lay), lay.mode)
    logical = logical_schema(json_schema(lay))
    cols: List[Column] = []
    for lf, pf in zip(logical.fields, phys.fields):
        if lf.name in lay.partition_columns:
            continue
        c = col(lf.name)
        if pf.dataType != lf.dataType:
            c = c.cast(pf.dataType)
        cols.append(c.alias(pf.name, metadata=pf.metadata) if pf.metadata else c.alias(pf.name))
    if changes:
        cols.append(F.col(change_data.CHANGE_TYPE))
    elif lay.row_id_columns and row_tracking.ROW_ID in df.columns:
        # Copied rows keep their ids and commit versions in the materialized columns.
        for kept, name in zip((row_tracking.ROW_ID, row_tracking.ROW_COMMIT_VERSION), lay.row_id_columns):
            cols.append(F.col(kept).cast("long").alias(name))
    if group_col is not None:
        cols.append(F.col(group_col))
    writer = df.select(*cols).write.mode("error")
    if group_col is not None:
        writer = writer.partitionBy(group_col)
    with session_conf(spark, **_WRITE_CONF):
        writer.parquet(lay.storage.hadoop_path(out_dir))
    return stage_written(lay, txn, job, out_dir, group_col, groups, data_change, changes)


def stage_written(
    lay: Layout,
    txn: Staging,
    job: Job,
    out_dir: str,
    group_col: Optional[str],
    groups: Dict[int, Tuple[Dict[str, Optional[str]], Optional[Dict[str, str]]]],
    data_change: bool,
    changes: bool = False,
) -> List[str]:
    """Stage what the job wrote into ``out_dir`` (relative to the table root), listed and read
    (footers only) through the table's storage: a local directory or an object store."""
    storage = lay.storage
    paths = []
    for name, size in storage.list(out_dir):
        rel = f"{out_dir}/{name}"
        dirname, base = posixpath.split(name)
        scratch = any(d == "_temporary" or d.startswith(("__magic", ".")) for d in dirname.split("/"))
        if size == 0 or scratch or base.startswith(("_", ".")) or base.endswith(".crc"):
            # _SUCCESS, checksums, temporaries, directory markers: nobody reads them
            storage.delete(rel)
            continue
        group = 0
        if group_col is not None:
            leaf = posixpath.basename(dirname)
            if not leaf.startswith(group_col + "="):
                raise InvalidArgumentError(f"unexpected file {storage.uri_of(rel)} in the job's output")
            group = int(leaf.split("=", 1)[1])
        values, tags = groups[group]
        stats, rows = storage.footer_stats(rel)
        if rows == 0:
            storage.delete(rel)  # Spark writes one empty file for an empty DataFrame
            continue
        if changes:
            txn.add_cdc_file(rel, values, size)
            paths.append(rel)
            continue
        txn.add_file(rel, values, size, stats, data_change=data_change, tags=tags)
        paths.append(rel)
        job.rows += rows
        job.written.append(group)
    return paths


__all__ = ["Job", "conform", "write", "write_changes", "write_groups", "GROUP"]
