//! Columns of a data file (parquet), found by the one column resolver
//! ([`crate::schema::file_column_index`]): the embedded engine's reads and the row-level conflict
//! checker find a table column in a file the same way, through the same reader.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::{ProjectionMask, PARQUET_FIELD_ID_META_KEY};
use parquet::basic::Type as PhysicalType;
use parquet::schema::types::SchemaDescriptor;

use crate::error::{Error, Result};
use crate::schema::file_column_index;
use crate::storage::{FileReader, Location};

/// The columns read from one file.
pub struct FileColumns {
    /// Per wanted column, in order: the whole column, or None when the file lacks it.
    pub arrays: Vec<Option<ArrayRef>>,
    /// Rows in the file (physical: before any DV).
    pub rows: u64,
    /// Why this reader does not decode the file as Delta means it (the columns are then not
    /// read): an INT96 timestamp inside a nested column, which only a top-level column's type
    /// hint reads at microseconds. Other readers may.
    pub undecodable: Option<&'static str>,
    /// When row groups were skipped ([`read_columns_where`]): the physical rows read, as
    /// `(first row, rows)` per row group kept, in file order. None: every row was read.
    pub kept: Option<Vec<(u64, u64)>>,
}

/// Bytes fetched with the request that opens a data file on an object store: a file no larger
/// comes whole in one request, a larger one with its footer and last column chunks. Reading a
/// small file in two requests (footer, then column chunks) cost a second round trip, 30 ms or
/// more in a cloud region, where 512 KiB more take a few ms; for a read of some columns of a big
/// file it is at most that much read for nothing.
pub const DATA_FILE_TAIL: u64 = 512 << 10;

/// Which row groups of a file a read keeps, judged by each group's Delta stats JSON
/// ([`crate::parquet_stats::row_group_stats`]).
pub type KeepRowGroup<'a> = &'a (dyn Fn(&str) -> bool + Sync);

/// The columns `wanted` (physical name, field id) of the parquet file at `path`.
pub fn read_columns(path: &Location, wanted: &[(&str, Option<i64>)]) -> Result<FileColumns> {
    read_columns_where(path, wanted, None)
}

/// [`read_columns`] of the row groups `keep` accepts only (all when None): a group whose footer
/// statistics rule out a predicate is neither fetched nor decoded.
pub fn read_columns_where(
    path: &Location,
    wanted: &[(&str, Option<i64>)],
    keep: Option<KeepRowGroup<'_>>,
) -> Result<FileColumns> {
    let f = path
        .open_with_tail(DATA_FILE_TAIL)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound if crate::error::problem_of(&e).is_none() => {
                Error::corrupt(path, None, "data file referenced by the log does not exist")
            }
            _ => Error::io(path, e),
        })?;
    let meta = ArrowReaderMetadata::load(&f, ArrowReaderOptions::new())
        .map_err(|e| parquet_error(path, e))?;
    let rows = meta.metadata().file_metadata().num_rows().max(0) as u64;
    let fields: Vec<(&str, Option<i64>)> = meta
        .schema()
        .fields()
        .iter()
        .map(|f| {
            let id = f.metadata().get(PARQUET_FIELD_ID_META_KEY);
            (f.name().as_str(), id.and_then(|v| v.parse().ok()))
        })
        .collect();
    let found: Vec<Option<usize>> = wanted
        .iter()
        .map(|&(name, id)| file_column_index(&fields, name, id))
        .collect();
    let mut roots: Vec<usize> = found.iter().flatten().copied().collect();
    roots.sort_unstable();
    roots.dedup();
    let int96 = Int96::of(meta.parquet_schema(), &roots);
    if int96.nested {
        return Ok(FileColumns {
            arrays: vec![None; wanted.len()],
            rows,
            undecodable: Some("an INT96 timestamp inside a nested column"),
            kept: None,
        });
    }
    let meta = match int96.microseconds(meta.schema()) {
        Some(hint) => ArrowReaderMetadata::try_new(
            meta.metadata().clone(),
            ArrowReaderOptions::new().with_schema(hint),
        )
        .map_err(|e| parquet_error(path, e))?,
        None => meta,
    };
    let arrow_schema = meta.schema().clone();
    let groups = kept_groups(&meta, keep);
    let all: Vec<usize>;
    let read_groups = match &groups {
        Some(g) => g.as_slice(),
        None => {
            all = (0..meta.metadata().num_row_groups()).collect();
            &all
        }
    };
    prefetch_roots(&f, &meta, &roots, read_groups).map_err(|e| Error::io(path, e))?;
    let kept = groups.as_ref().map(|g| group_rows(&meta, g));
    let rows_read = kept
        .as_ref()
        .map_or(rows, |k| k.iter().map(|(_, n)| n).sum());
    let mut builder = ParquetRecordBatchReaderBuilder::new_with_metadata(f, meta);
    if let Some(g) = groups {
        builder = builder.with_row_groups(g);
    }
    let mask = ProjectionMask::roots(builder.parquet_schema(), roots.iter().copied());
    let batches: Vec<RecordBatch> = builder
        .with_projection(mask)
        // One batch: the columns are returned whole, and a concatenation would copy them again.
        .with_batch_size((rows_read as usize).max(1))
        .build()
        .map_err(|e| parquet_error(path, e))?
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| parquet_error(path, e))?;
    let column = |i: usize| -> Result<Option<ArrayRef>> {
        let name = arrow_schema.field(i).name();
        let parts: Vec<ArrayRef> = batches
            .iter()
            .filter_map(|b| b.column_by_name(name).cloned())
            .collect();
        let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
        Ok(match refs.len() {
            0 => None,
            1 => Some(parts[0].clone()),
            _ => Some(arrow_select::concat::concat(&refs).map_err(|e| parquet_error(path, e))?),
        })
    };
    let arrays = found
        .iter()
        .map(|i| i.map_or(Ok(None), column))
        .collect::<Result<_>>()?;
    Ok(FileColumns {
        arrays,
        rows,
        undecodable: None,
        kept,
    })
}

/// The row groups `keep` accepts, or None when it accepts all (or there is no `keep`).
fn kept_groups(meta: &ArrowReaderMetadata, keep: Option<KeepRowGroup<'_>>) -> Option<Vec<usize>> {
    let keep = keep?;
    let md = meta.metadata();
    let groups: Vec<usize> = (0..md.num_row_groups())
        .filter(|&g| keep(&crate::parquet_stats::row_group_stats(md, g)))
        .collect();
    (groups.len() < md.num_row_groups()).then_some(groups)
}

/// `(first row, rows)` of each of `groups` (ascending) in the file.
fn group_rows(meta: &ArrowReaderMetadata, groups: &[usize]) -> Vec<(u64, u64)> {
    let md = meta.metadata();
    let mut first = Vec::with_capacity(md.num_row_groups());
    let mut at = 0u64;
    for g in md.row_groups() {
        first.push(at);
        at += g.num_rows().max(0) as u64;
    }
    groups
        .iter()
        .map(|&g| (first[g], md.row_group(g).num_rows().max(0) as u64))
        .collect()
}

/// Fetch (from an object store) the column chunks of the root columns `roots` in every row group:
/// a few requests instead of two per page.
fn prefetch_roots(
    f: &FileReader,
    meta: &ArrowReaderMetadata,
    roots: &[usize],
    groups: &[usize],
) -> std::io::Result<()> {
    if f.is_local() {
        return Ok(());
    }
    let descr = meta.parquet_schema();
    let leaves: Vec<usize> = (0..descr.num_columns())
        .filter(|&l| roots.contains(&descr.get_column_root_idx(l)))
        .collect();
    let md = meta.metadata();
    let ranges: Vec<std::ops::Range<u64>> = groups
        .iter()
        .map(|&g| md.row_group(g))
        .flat_map(|g| {
            leaves.iter().map(move |&l| {
                let (start, len) = g.column(l).byte_range();
                start..start + len
            })
        })
        .collect();
    f.prefetch(&ranges)
}

/// The INT96 columns among the roots read. parquet-rs decodes INT96 as nanoseconds, which
/// overflow past 2262; Delta (and Spark, which writes INT96) mean microseconds, which a type hint
/// gives for a top-level column.
struct Int96 {
    top: Vec<usize>,
    nested: bool,
}

impl Int96 {
    fn of(descr: &SchemaDescriptor, roots: &[usize]) -> Self {
        let (mut top, mut nested) = (Vec::new(), false);
        for leaf in 0..descr.num_columns() {
            let column = descr.column(leaf);
            let root = descr.get_column_root_idx(leaf);
            if column.physical_type() != PhysicalType::INT96 || !roots.contains(&root) {
                continue;
            }
            if column.path().parts().len() == 1 {
                top.push(root);
            } else {
                nested = true;
            }
        }
        Int96 { top, nested }
    }

    /// `schema` with the top-level INT96 columns read as microseconds (None: there are none).
    fn microseconds(&self, schema: &Schema) -> Option<Arc<Schema>> {
        if self.top.is_empty() {
            return None;
        }
        let fields: Vec<Field> = schema
            .fields()
            .iter()
            .enumerate()
            .map(|(i, f)| match f.data_type() {
                DataType::Timestamp(_, tz) if self.top.contains(&i) => f
                    .as_ref()
                    .clone()
                    .with_data_type(DataType::Timestamp(TimeUnit::Microsecond, tz.clone())),
                _ => f.as_ref().clone(),
            })
            .collect();
        Some(Arc::new(Schema::new_with_metadata(
            fields,
            schema.metadata().clone(),
        )))
    }
}

pub(crate) fn parquet_error(path: impl std::fmt::Display, e: impl std::fmt::Display) -> Error {
    Error::invalid(format!("cannot read data file {path}: {e}"))
}
