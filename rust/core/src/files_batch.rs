//! Arrow views of a snapshot: one row per live file (`Snapshot.files()` in Python) and the typed
//! partition values of those files, in the same row order.

use std::sync::Arc;

use arrow_array::builder::*;
use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions, StructArray};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType as ArrowType, Field, Fields, Schema, TimeUnit};

use crate::error::{Error, Result};
use crate::log::actions::{visit_stats, AddFile, RawStats};
use crate::partition::Scalar;
use crate::schema_arrow::primitive_arrow_type;
use crate::snapshot::Snapshot;

fn arrow_err(e: arrow_schema::ArrowError) -> Error {
    Error::invalid(format!("building Arrow data: {e}"))
}

/// The columns of `Snapshot.files()`, in order.
pub const FILE_COLUMNS: [&str; 13] = [
    "path",
    "partition_values",
    "size",
    "modification_time",
    "data_change",
    "stats",
    "num_records",
    "tags",
    "deletion_vector",
    "dv_cardinality",
    "base_row_id",
    "default_row_commit_version",
    "clustering_provider",
];

const COL_PATH: usize = 0;
const COL_PARTITION_VALUES: usize = 1;
const COL_SIZE: usize = 2;
const COL_MODIFICATION_TIME: usize = 3;
const COL_DATA_CHANGE: usize = 4;
const COL_STATS: usize = 5;
const COL_NUM_RECORDS: usize = 6;
const COL_TAGS: usize = 7;
const COL_DELETION_VECTOR: usize = 8;
const COL_DV_CARDINALITY: usize = 9;
const COL_BASE_ROW_ID: usize = 10;
const COL_DEFAULT_ROW_COMMIT_VERSION: usize = 11;
const COL_CLUSTERING_PROVIDER: usize = 12;

/// Columns most tables never set: built only for a slice where some file has one.
const SPARSE: &[usize] = &[
    COL_TAGS,
    COL_DELETION_VECTOR,
    COL_BASE_ROW_ID,
    COL_DEFAULT_ROW_COMMIT_VERSION,
    COL_CLUSTERING_PROVIDER,
];

/// Which of [`FILE_COLUMNS`] to build (the others cost nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileColumns(u16);

impl FileColumns {
    pub const ALL: FileColumns = FileColumns((1 << FILE_COLUMNS.len()) - 1);

    /// A selection by name, in any order; unknown names are an error listing the valid ones.
    /// [`FileColumns::of`] the names given, else every column.
    pub fn of_opt(names: Option<&[String]>) -> Result<Self> {
        names.map_or(Ok(FileColumns::ALL), FileColumns::of)
    }

    pub fn of(names: &[String]) -> Result<Self> {
        let mut bits = 0u16;
        for name in names {
            let i = FILE_COLUMNS.iter().position(|c| c == name).ok_or_else(|| {
                Error::invalid(format!(
                    "files(): unknown column {name:?}; the columns are {}",
                    FILE_COLUMNS.join(", ")
                ))
            })?;
            bits |= 1 << i;
        }
        Ok(FileColumns(bits))
    }

    fn has(self, i: usize) -> bool {
        self.0 & (1 << i) != 0
    }

    fn without(self, cols: &[usize]) -> Self {
        FileColumns(cols.iter().fold(self.0, |m, &c| m & !(1 << c)))
    }
}

pub fn files_batches(snap: &Snapshot, cols: FileColumns) -> Result<Vec<RecordBatch>> {
    let all: Vec<&AddFile> = snap.files().iter().collect();
    files_batches_of(snap, &all, cols)
}

/// `files()` for a subset of the live files (a scan's result): one batch per slice, built on all
/// cores and handed over as they are (concatenating would copy every column once more); at
/// least one batch, so the schema is always there.
pub fn files_batches_of(
    snap: &Snapshot,
    files: &[&AddFile],
    cols: FileColumns,
) -> Result<Vec<RecordBatch>> {
    let threads = crate::parallel::threads_for(files.len(), 50_000);
    if threads <= 1 {
        return Ok(vec![slice_batch(snap, files, cols)?]);
    }
    crate::parallel::map(&slices(files, threads), |s| slice_batch(snap, s, cols))
        .into_iter()
        .collect()
}

/// How far a cut between slices may move to fall between two stats sources.
const SNAP: usize = 4096;

/// `files` in `n` slices of about equal length, each cut moved (by up to [`SNAP`] files) to the
/// nearest place where the stats source changes: a slice then holds no short run of a source,
/// which would be read for a few files rather than streamed with the rest of its run.
fn slices<'a>(files: &'a [&'a AddFile], n: usize) -> Vec<&'a [&'a AddFile]> {
    let step = files.len().div_ceil(n.max(1)).max(1);
    let boundary = |i: usize| !files[i - 1].shares_stats_source(files[i]);
    let mut cuts = vec![0];
    for nominal in (step..files.len()).step_by(step) {
        let near = (0..SNAP)
            .flat_map(|d| [nominal + d, nominal.wrapping_sub(d)])
            .find(|&i| i > 0 && i < files.len() && boundary(i));
        let cut = near.unwrap_or(nominal);
        if cut > *cuts.last().unwrap_or(&0) {
            cuts.push(cut);
        }
    }
    cuts.push(files.len());
    cuts.windows(2).map(|w| &files[w[0]..w[1]]).collect()
}

/// Builders sized for `n` rows of the selected columns (unselected ones stay empty).
struct FileBuilders {
    cols: FileColumns,
    /// Columns built, of those asked for: tags, deletion vectors and row ids are left out (and
    /// become null arrays, never written) when no file of the slice has any.
    built: FileColumns,
    rows: usize,
    path: StringBuilder,
    pv: MapBuilder<StringBuilder, StringBuilder>,
    size: Int64Builder,
    mtime: Int64Builder,
    data_change: BooleanBuilder,
    stats: StringBuilder,
    num_records: Int64Builder,
    tags: MapBuilder<StringBuilder, StringBuilder>,
    dv: DvBuilders,
    dv_cardinality: Int64Builder,
    base_row_id: Int64Builder,
    drcv: Int64Builder,
    clustering_provider: StringBuilder,
}

#[derive(Default)]
struct DvBuilders {
    storage: StringBuilder,
    path: StringBuilder,
    offset: Int32Builder,
    size: Int32Builder,
    card: Int64Builder,
    valid: Vec<bool>,
}

impl FileBuilders {
    fn new(snap: &Snapshot, files: &[&AddFile], cols: FileColumns) -> Self {
        let n = files.len();
        // Tags, DVs and row ids are left unbuilt when no file of the slice has any.
        let sparse = files
            .iter()
            .all(|f| f.extra.is_none() && f.deletion_vector.is_none());
        let built = if sparse { cols.without(SPARSE) } else { cols };
        let rows = |name| if built.has(name) { n } else { 0 };
        // Text columns sized from what the files hold, so that no buffer grows (and is copied).
        let text = |name, len: fn(&AddFile) -> usize| {
            let bytes = if built.has(name) {
                files.iter().map(|f| len(f)).sum()
            } else {
                0
            };
            StringBuilder::with_capacity(rows(name), bytes)
        };
        let parts = snap.partition_columns.len();
        let pv_entries = rows(COL_PARTITION_VALUES) * parts;
        FileBuilders {
            cols,
            built,
            rows: n,
            path: text(COL_PATH, |f| f.path.len()),
            pv: MapBuilder::with_capacity(
                None,
                StringBuilder::with_capacity(pv_entries, pv_entries * 8),
                StringBuilder::with_capacity(pv_entries, pv_entries * 8),
                rows(COL_PARTITION_VALUES),
            ),
            size: Int64Builder::with_capacity(rows(COL_SIZE)),
            mtime: Int64Builder::with_capacity(rows(COL_MODIFICATION_TIME)),
            data_change: BooleanBuilder::with_capacity(rows(COL_DATA_CHANGE)),
            stats: text(COL_STATS, AddFile::stats_len_hint),
            num_records: Int64Builder::with_capacity(rows(COL_NUM_RECORDS)),
            tags: MapBuilder::with_capacity(
                None,
                StringBuilder::new(),
                StringBuilder::new(),
                rows(COL_TAGS),
            ),
            dv: DvBuilders::with_capacity(rows(COL_DELETION_VECTOR)),
            dv_cardinality: Int64Builder::with_capacity(rows(COL_DV_CARDINALITY)),
            base_row_id: Int64Builder::with_capacity(rows(COL_BASE_ROW_ID)),
            drcv: Int64Builder::with_capacity(rows(COL_DEFAULT_ROW_COMMIT_VERSION)),
            clustering_provider: StringBuilder::with_capacity(rows(COL_CLUSTERING_PROVIDER), 0),
        }
    }

    fn push(&mut self, snap: &Snapshot, f: &AddFile) -> Result<()> {
        let c = self.built;
        if c.has(COL_PATH) {
            self.path.append_value(&f.path);
        }
        if c.has(COL_PARTITION_VALUES) {
            for col in &snap.partition_columns {
                self.pv.keys().append_value(&col.name);
                self.pv
                    .values()
                    .append_option(snap.raw_partition_value(f, col));
            }
            self.pv.append(true).map_err(arrow_err)?;
        }
        if c.has(COL_SIZE) {
            self.size.append_value(f.size);
        }
        if c.has(COL_MODIFICATION_TIME) {
            self.mtime.append_value(f.modification_time);
        }
        if c.has(COL_DATA_CHANGE) {
            self.data_change.append_value(f.data_change);
        }
        if c.has(COL_TAGS) {
            self.push_tags(f)?;
        }
        if c.has(COL_DELETION_VECTOR) {
            self.dv.push(f);
        }
        if c.has(COL_DV_CARDINALITY) {
            let card = f.deletion_vector.as_ref().map_or(0, |d| d.cardinality);
            self.dv_cardinality.append_value(card);
        }
        if c.has(COL_BASE_ROW_ID) {
            self.base_row_id.append_option(f.base_row_id());
        }
        if c.has(COL_DEFAULT_ROW_COMMIT_VERSION) {
            self.drcv.append_option(f.default_row_commit_version());
        }
        if c.has(COL_CLUSTERING_PROVIDER) {
            self.clustering_provider
                .append_option(f.clustering_provider());
        }
        Ok(())
    }

    /// The stats and num_records of `files` (deferred stats are read once, and not kept).
    fn push_all_stats(&mut self, files: &[&AddFile]) -> Result<()> {
        if !self.cols.has(COL_STATS) && !self.cols.has(COL_NUM_RECORDS) {
            return Ok(());
        }
        visit_stats(files, &mut |raw| self.push_stats(raw))
    }

    fn push_stats(&mut self, raw: Option<RawStats<'_>>) -> Result<()> {
        if self.cols.has(COL_STATS) {
            match raw {
                Some(r) => {
                    r.write_text(&mut self.stats)
                        .map_err(|_| Error::invalid("writing stats text into Arrow"))?;
                    self.stats.append_value("");
                }
                None => self.stats.append_null(),
            }
        }
        if self.cols.has(COL_NUM_RECORDS) {
            self.num_records
                .append_option(raw.and_then(|r| r.num_records()));
        }
        Ok(())
    }

    fn push_tags(&mut self, f: &AddFile) -> Result<()> {
        match f.tags() {
            Some(t) => {
                for (k, v) in t.iter() {
                    self.tags.keys().append_value(k);
                    self.tags.values().append_option(v.as_deref());
                }
                self.tags.append(true).map_err(arrow_err)
            }
            None => self.tags.append(false).map_err(arrow_err),
        }
    }

    fn finish(mut self) -> Result<RecordBatch> {
        // In FILE_COLUMNS order.
        let arrays: [ArrayRef; 13] = [
            Arc::new(self.path.finish()),
            Arc::new(self.pv.finish()),
            Arc::new(self.size.finish()),
            Arc::new(self.mtime.finish()),
            Arc::new(self.data_change.finish()),
            Arc::new(self.stats.finish()),
            Arc::new(self.num_records.finish()),
            Arc::new(self.tags.finish()),
            Arc::new(self.dv.finish()?),
            Arc::new(self.dv_cardinality.finish()),
            Arc::new(self.base_row_id.finish()),
            Arc::new(self.drcv.finish()),
            Arc::new(self.clustering_provider.finish()),
        ];
        let rows = self.rows;
        let (fields, arrays): (Vec<Field>, Vec<ArrayRef>) = arrays
            .into_iter()
            .enumerate()
            .filter(|(i, _)| self.cols.has(*i))
            .map(|(i, a)| {
                // A column not built: nulls in zeroed buffers that nothing writes.
                let a = match self.built.has(i) {
                    true => a,
                    false => arrow_array::new_null_array(a.data_type(), rows),
                };
                let nullable = i != COL_PATH && i != COL_SIZE;
                (
                    Field::new(FILE_COLUMNS[i], a.data_type().clone(), nullable),
                    a,
                )
            })
            .unzip();
        let options = RecordBatchOptions::new().with_row_count(Some(self.rows));
        RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), arrays, &options)
            .map_err(arrow_err)
    }
}

impl DvBuilders {
    fn with_capacity(n: usize) -> Self {
        // Text capacity is left to grow: most tables have no deletion vectors.
        DvBuilders {
            storage: StringBuilder::with_capacity(n, 0),
            path: StringBuilder::with_capacity(n, 0),
            offset: Int32Builder::with_capacity(n),
            size: Int32Builder::with_capacity(n),
            card: Int64Builder::with_capacity(n),
            valid: Vec::with_capacity(n),
        }
    }

    fn push(&mut self, f: &AddFile) {
        match &f.deletion_vector {
            Some(d) => {
                self.storage.append_value(&d.storage_type);
                self.path.append_value(&d.path_or_inline_dv);
                self.offset.append_option(d.offset);
                self.size.append_value(d.size_in_bytes);
                self.card.append_value(d.cardinality);
                self.valid.push(true);
            }
            None => {
                self.storage.append_null();
                self.path.append_null();
                self.offset.append_null();
                self.size.append_null();
                self.card.append_null();
                self.valid.push(false);
            }
        }
    }

    fn finish(&mut self) -> Result<StructArray> {
        let fields = Fields::from(vec![
            Field::new("storage_type", ArrowType::Utf8, true),
            Field::new("path_or_inline_dv", ArrowType::Utf8, true),
            Field::new("offset", ArrowType::Int32, true),
            Field::new("size_in_bytes", ArrowType::Int32, true),
            Field::new("cardinality", ArrowType::Int64, true),
        ]);
        let children: Vec<ArrayRef> = vec![
            Arc::new(self.storage.finish()),
            Arc::new(self.path.finish()),
            Arc::new(self.offset.finish()),
            Arc::new(self.size.finish()),
            Arc::new(self.card.finish()),
        ];
        let valid = NullBuffer::from(std::mem::take(&mut self.valid));
        StructArray::try_new(fields, children, Some(valid)).map_err(arrow_err)
    }
}

fn slice_batch(snap: &Snapshot, files: &[&AddFile], cols: FileColumns) -> Result<RecordBatch> {
    let mut b = FileBuilders::new(snap, files, cols);
    for f in files {
        b.push(snap, f)?;
    }
    b.push_all_stats(files)?;
    b.finish()
}

/// A column of `n` copies of one value (a partition value on every row of its file).
pub fn repeated(ty: &ArrowType, v: Scalar, n: usize) -> Result<ArrayRef> {
    let mut builder = make_builder(ty, n);
    for _ in 0..n {
        append(builder.as_mut(), ty, v.clone())?;
    }
    Ok(builder.finish())
}

/// The typed partition values of `files`, in their order.
pub fn partition_batch_of(snap: &Snapshot, files: &[&AddFile]) -> Result<RecordBatch> {
    partition_batch(snap, files.len(), |i, col| {
        snap.typed_partition_value(files[i], col)
    })
}

/// The typed partition values of `rows` as the log spells them (physical column name, string or
/// null) by the table's partition columns: those of actions that are not live files (a commit's
/// `cdc` files), under the same parsing as the files' own.
pub fn partition_batch_of_raw(
    snap: &Snapshot,
    rows: &[Vec<(String, Option<String>)>],
) -> Result<RecordBatch> {
    partition_batch(snap, rows.len(), |i, col| {
        let raw = rows[i]
            .iter()
            .find(|(k, _)| *k == col.physical)
            .and_then(|(_, v)| v.as_deref());
        crate::partition::parse(raw, &col.data_type)
            .map_err(|m| Error::invalid(format!("partition column {}: {m}", col.name)))
    })
}

/// One typed column per partition column, `n` rows, each value from `value(row, column)`.
fn partition_batch(
    snap: &Snapshot,
    n: usize,
    value: impl Fn(usize, &crate::snapshot::PartitionColumn) -> Result<Scalar>,
) -> Result<RecordBatch> {
    let mut fields = Vec::new();
    let mut arrays: Vec<ArrayRef> = Vec::new();
    for col in &snap.partition_columns {
        let ty = primitive_arrow_type(&col.data_type).ok_or_else(|| {
            Error::invalid(format!(
                "partition column {} has unsupported type {:?}",
                col.name, col.data_type
            ))
        })?;
        let mut builder = make_builder(&ty, n);
        for i in 0..n {
            append(builder.as_mut(), &ty, value(i, col)?)?;
        }
        fields.push(Field::new(&col.name, ty, true));
        arrays.push(builder.finish());
    }
    let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(n));
    RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), arrays, &options)
        .map_err(arrow_err)
}

fn append(b: &mut dyn ArrayBuilder, ty: &ArrowType, v: Scalar) -> Result<()> {
    macro_rules! typed {
        ($builder:ty) => {
            b.as_any_mut()
                .downcast_mut::<$builder>()
                .expect("builder matches its type")
        };
    }
    let mismatch =
        |v: &Scalar| Error::invalid(format!("partition value {v:?} does not fit {ty:?}"));
    match (ty, v) {
        (ArrowType::Utf8, Scalar::String(s)) => typed!(StringBuilder).append_value(s),
        (ArrowType::Utf8, Scalar::Null) => typed!(StringBuilder).append_null(),
        (ArrowType::Int64, v) => typed!(Int64Builder).append_option(long(v)?),
        (ArrowType::Int32, v) => typed!(Int32Builder).append_option(long(v)?.map(|x| x as i32)),
        (ArrowType::Int16, v) => typed!(Int16Builder).append_option(long(v)?.map(|x| x as i16)),
        (ArrowType::Int8, v) => typed!(Int8Builder).append_option(long(v)?.map(|x| x as i8)),
        (ArrowType::Float32, Scalar::Double(d)) => typed!(Float32Builder).append_value(d as f32),
        (ArrowType::Float32, Scalar::Null) => typed!(Float32Builder).append_null(),
        (ArrowType::Float64, Scalar::Double(d)) => typed!(Float64Builder).append_value(d),
        (ArrowType::Float64, Scalar::Null) => typed!(Float64Builder).append_null(),
        (ArrowType::Boolean, Scalar::Boolean(x)) => typed!(BooleanBuilder).append_value(x),
        (ArrowType::Boolean, Scalar::Null) => typed!(BooleanBuilder).append_null(),
        (ArrowType::Date32, Scalar::Date(d)) => typed!(Date32Builder).append_value(d),
        (ArrowType::Date32, Scalar::Null) => typed!(Date32Builder).append_null(),
        (ArrowType::Timestamp(..), Scalar::Timestamp(t) | Scalar::TimestampNtz(t)) => {
            typed!(TimestampMicrosecondBuilder).append_value(t)
        }
        (ArrowType::Timestamp(..), Scalar::Null) => {
            typed!(TimestampMicrosecondBuilder).append_null()
        }
        (ArrowType::Decimal128(..), Scalar::Decimal(x, _)) => {
            typed!(Decimal128Builder).append_value(x)
        }
        (ArrowType::Decimal128(..), Scalar::Null) => typed!(Decimal128Builder).append_null(),
        (ArrowType::Binary, Scalar::Binary(x)) => typed!(BinaryBuilder).append_value(x),
        (ArrowType::Binary, Scalar::Null) => typed!(BinaryBuilder).append_null(),
        (_, v) => return Err(mismatch(&v)),
    }
    Ok(())
}

fn long(v: Scalar) -> Result<Option<i64>> {
    match v {
        Scalar::Long(x) => Ok(Some(x)),
        Scalar::Null => Ok(None),
        other => Err(Error::invalid(format!(
            "expected an integer partition value, found {other:?}"
        ))),
    }
}

fn make_builder(ty: &ArrowType, n: usize) -> Box<dyn ArrayBuilder> {
    match ty {
        ArrowType::Timestamp(TimeUnit::Microsecond, tz) => {
            Box::new(TimestampMicrosecondBuilder::with_capacity(n).with_timezone_opt(tz.clone()))
        }
        ArrowType::Decimal128(p, s) => Box::new(
            Decimal128Builder::with_capacity(n)
                .with_precision_and_scale(*p, *s)
                .expect("valid decimal"),
        ),
        other => arrow_array::builder::make_builder(other, n),
    }
}

/// What an engine that reads files itself needs of `paths` (live files of `snap`): per file its
/// number in this plan (`file`), log path, absolute path, the key Spark reports as
/// `_metadata.file_path`, size, `numRecords` (null without stats), DV cardinality, `baseRowId`
/// and `defaultRowCommitVersion` (null without row tracking), then the typed partition columns.
/// Unknown paths are an error naming the version.
pub fn scan_plan(snap: &Snapshot, paths: &[String]) -> Result<RecordBatch> {
    let files = live_files(snap, paths)?;
    let n = files.len();
    let mut file = Int32Builder::with_capacity(n);
    let mut path = StringBuilder::with_capacity(n, n * 64);
    let mut abs = StringBuilder::with_capacity(n, n * 96);
    let mut key = StringBuilder::with_capacity(n, n * 100);
    let mut size = Int64Builder::with_capacity(n);
    let mut num_records = Int64Builder::with_capacity(n);
    let mut dv_cardinality = Int64Builder::with_capacity(n);
    let mut base_row_id = Int64Builder::with_capacity(n);
    let mut drcv = Int64Builder::with_capacity(n);
    for (i, f) in files.iter().enumerate() {
        let location = snap.data_path(f)?;
        let data = location.to_string();
        let data = data.as_str();
        file.append_value(
            i32::try_from(i)
                .map_err(|_| Error::invalid("more than 2^31 files in one scan plan"))?,
        );
        path.append_value(&f.path);
        abs.append_value(data);
        key.append_value(location.hadoop_uri());
        size.append_value(f.size);
        num_records.append_option(f.num_records()?);
        dv_cardinality.append_value(f.deletion_vector.as_ref().map_or(0, |d| d.cardinality));
        base_row_id.append_option(f.base_row_id());
        drcv.append_option(f.default_row_commit_version());
    }
    let mut fields = vec![
        Field::new("file", ArrowType::Int32, false),
        Field::new("path", ArrowType::Utf8, false),
        Field::new("abs_path", ArrowType::Utf8, false),
        Field::new("key", ArrowType::Utf8, false),
        Field::new("size", ArrowType::Int64, false),
        Field::new("num_records", ArrowType::Int64, true),
        Field::new("dv_cardinality", ArrowType::Int64, false),
        Field::new("base_row_id", ArrowType::Int64, true),
        Field::new("default_row_commit_version", ArrowType::Int64, true),
    ];
    let mut arrays: Vec<ArrayRef> = vec![
        Arc::new(file.finish()),
        Arc::new(path.finish()),
        Arc::new(abs.finish()),
        Arc::new(key.finish()),
        Arc::new(size.finish()),
        Arc::new(num_records.finish()),
        Arc::new(dv_cardinality.finish()),
        Arc::new(base_row_id.finish()),
        Arc::new(drcv.finish()),
    ];
    let parts = partition_batch_of(snap, &files)?;
    fields.extend(parts.schema().fields().iter().map(|f| f.as_ref().clone()));
    arrays.extend(parts.columns().iter().cloned());
    let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(n));
    RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), arrays, &options)
        .map_err(arrow_err)
}

/// The rows deleted by the DVs of `paths`, all files in one batch: `file` (index into `paths`),
/// `row` (0-based position, int64 as Spark's `_metadata.row_index`), ascending per file.
pub fn dv_positions(snap: &Snapshot, paths: &[String]) -> Result<RecordBatch> {
    let files = live_files(snap, paths)?;
    let mut file = Int32Builder::new();
    let mut row = Int64Builder::new();
    for (i, f) in files.iter().enumerate() {
        if f.deletion_vector.is_none() {
            continue;
        }
        for p in snap.deleted_rows_of(f)?.0.iter() {
            file.append_value(i as i32);
            row.append_value(
                i64::try_from(p)
                    .map_err(|_| Error::dv(f.path.to_string(), format!("row {p} exceeds 2^63")))?,
            );
        }
    }
    let schema = Schema::new(vec![
        Field::new("file", ArrowType::Int32, false),
        Field::new("row", ArrowType::Int64, false),
    ]);
    RecordBatch::try_new(
        Arc::new(schema),
        vec![Arc::new(file.finish()), Arc::new(row.finish())],
    )
    .map_err(arrow_err)
}

/// The DVs of `paths` as dense bitmaps, one row per file that has a DV: `file` (index into
/// `paths`) and `words`, where bit `r % 64` of word `r / 64` is set when row `r` is deleted. The
/// list ends at the word of the last deleted row, so an engine testing a row past it must treat
/// the row as live. Dense words let Spark test a row with one array access instead of a hash
/// lookup among all deleted positions. `None` when they would take more than `max_words` words
/// in all (checked before any is allocated).
pub fn dv_bitmaps(
    snap: &Snapshot,
    paths: &[String],
    max_words: u64,
) -> Result<Option<RecordBatch>> {
    let files = live_files(snap, paths)?;
    let mut deleted = Vec::new();
    let mut total = 0u64;
    for (i, f) in files.iter().enumerate() {
        if f.deletion_vector.is_some() {
            let rows = snap.deleted_rows_of(f)?.0;
            total = total.saturating_add(rows.max().map_or(0, |m| m / 64 + 1));
            if total > max_words {
                return Ok(None);
            }
            deleted.push((i, rows));
        }
    }
    let mut file = Int32Builder::with_capacity(deleted.len());
    let mut words =
        ListBuilder::with_capacity(Int64Builder::with_capacity(total as usize), deleted.len());
    for (i, rows) in &deleted {
        file.append_value(*i as i32);
        words.values().append_slice(&dense_words(rows));
        words.append(true);
    }
    let item = Arc::new(Field::new_list_field(ArrowType::Int64, true));
    let schema = Schema::new(vec![
        Field::new("file", ArrowType::Int32, false),
        Field::new("words", ArrowType::List(item), false),
    ]);
    RecordBatch::try_new(
        Arc::new(schema),
        vec![Arc::new(file.finish()), Arc::new(words.finish())],
    )
    .map(Some)
    .map_err(arrow_err)
}

/// Bit `r % 64` of word `r / 64` set for every deleted row `r`, as the signed longs Spark
/// stores (same bits); empty for an empty set. The caller bounds the size.
fn dense_words(deleted: &roaring::RoaringTreemap) -> Vec<i64> {
    let Some(last) = deleted.max() else {
        return Vec::new();
    };
    let mut dense = vec![0u64; (last / 64 + 1) as usize];
    for p in deleted.iter() {
        dense[(p / 64) as usize] |= 1 << (p % 64);
    }
    dense.into_iter().map(|w| w as i64).collect()
}

fn live_files<'a>(snap: &'a Snapshot, paths: &[String]) -> Result<Vec<&'a AddFile>> {
    paths
        .iter()
        .map(|p| {
            snap.file(p).ok_or_else(|| {
                Error::invalid(format!(
                    "{p} is not a live file of version {}",
                    snap.version()
                ))
            })
        })
        .collect()
}

/// Split a struct array of (`file` int32, `row` int64 or uint64) into positions per file index
/// (`files` of them), checking every index and position.
pub fn positions_per_file(batch: &dyn arrow_array::Array, files: usize) -> Result<Vec<Vec<u64>>> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int32Type;
    let bad = |what: String| Error::invalid(format!("row positions batch: {what}"));
    let s = batch.as_struct_opt().ok_or_else(|| {
        bad(format!(
            "expected a struct of (file, row), got {:?}",
            batch.data_type()
        ))
    })?;
    let col = |name: &str| {
        s.column_by_name(name)
            .ok_or_else(|| bad(format!("no `{name}` column")))
    };
    let file = col("file")?
        .as_primitive_opt::<Int32Type>()
        .ok_or_else(|| bad("`file` must be int32".into()))?;
    let row = col("row")?;
    let rows = positions(row.as_ref(), "row", &bad)?;
    if arrow_array::Array::null_count(file) > 0 || row.null_count() > 0 {
        return Err(bad("null file index or row position".into()));
    }
    let mut out = vec![Vec::new(); files];
    for (&f, p) in file.values().iter().zip(rows) {
        let slot = usize::try_from(f)
            .ok()
            .and_then(|i| out.get_mut(i))
            .ok_or_else(|| bad(format!("file index {f} outside 0..{files}")))?;
        slot.push(p);
    }
    Ok(out)
}

/// The values of an int64 or uint64 column of row positions (`name` for messages).
fn positions(
    column: &dyn arrow_array::Array,
    name: &str,
    bad: &dyn Fn(String) -> Error,
) -> Result<Vec<u64>> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Int64Type, UInt64Type};
    if let Some(c) = column.as_primitive_opt::<Int64Type>() {
        c.values()
            .iter()
            .map(|&v| u64::try_from(v).map_err(|_| bad(format!("negative `{name}` position {v}"))))
            .collect()
    } else if let Some(c) = column.as_primitive_opt::<UInt64Type>() {
        Ok(c.values().to_vec())
    } else {
        Err(bad(format!(
            "`{name}` must be int64 or uint64, got {:?}",
            column.data_type()
        )))
    }
}

/// The rows named by a struct array of runs of bits (`first` int64 or uint64: the run's first
/// position; `bits` binary: bit `b % 8` of byte `b / 8` set means row `first + b`), as a bitmap
/// (see [`DeletionBitmap::from_lsb0_runs`]): one file's hits, no value per row on the way.
pub fn rows_of_bit_runs(batch: &dyn arrow_array::Array) -> Result<crate::dv::DeletionBitmap> {
    use arrow_array::cast::AsArray;
    let bad = |what: String| Error::invalid(format!("bit runs batch: {what}"));
    let s = batch.as_struct_opt().ok_or_else(|| {
        bad(format!(
            "expected a struct of (first, bits), got {:?}",
            batch.data_type()
        ))
    })?;
    let col = |name: &str| {
        s.column_by_name(name)
            .ok_or_else(|| bad(format!("no `{name}` column")))
    };
    let (first, bits) = (col("first")?, col("bits")?);
    if first.null_count() > 0 || bits.null_count() > 0 {
        return Err(bad("a null first position or bit run".into()));
    }
    let firsts = positions(first.as_ref(), "first", &bad)?;
    let runs: Vec<&[u8]> = if let Some(b) = bits.as_binary_opt::<i32>() {
        b.iter().flatten().collect()
    } else if let Some(b) = bits.as_binary_opt::<i64>() {
        b.iter().flatten().collect()
    } else {
        return Err(bad(format!(
            "`bits` must be binary, got {:?}",
            bits.data_type()
        )));
    };
    crate::dv::DeletionBitmap::from_lsb0_runs(firsts.into_iter().zip(runs)).map_err(bad)
}

#[cfg(test)]
mod tests {
    use super::dense_words;
    use roaring::RoaringTreemap;

    #[test]
    fn dense_words_set_one_bit_per_deleted_row() {
        let rows: RoaringTreemap = [0u64, 1, 63, 64, 130, 1000].into_iter().collect();
        let w = dense_words(&rows);
        assert_eq!(w.len(), 1000 / 64 + 1);
        let mut back = Vec::new();
        for (i, word) in w.iter().enumerate() {
            for b in 0..64 {
                if (*word as u64) >> b & 1 == 1 {
                    back.push(i as u64 * 64 + b);
                }
            }
        }
        assert_eq!(back, vec![0, 1, 63, 64, 130, 1000]);
        assert!(w[0] < 0, "bit 63 is the sign bit of a long");
    }

    #[test]
    fn dense_words_of_nothing_is_empty() {
        assert!(dense_words(&RoaringTreemap::new()).is_empty());
    }
}
