//! Columns of a data file (parquet), found by the one column resolver
//! ([`crate::schema::file_column_index`]): the embedded engine's reads and the row-level conflict
//! checker find a table column in a file the same way, through the same reader.

use std::fs::File;
use std::path::Path;

use arrow_array::{Array, ArrayRef, RecordBatch};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::{ProjectionMask, PARQUET_FIELD_ID_META_KEY};
use parquet::basic::Type as PhysicalType;

use crate::error::{Error, Result};
use crate::schema::file_column_index;

/// The columns read from one file.
pub struct FileColumns {
    /// Per wanted column, in order: the whole column, or None when the file lacks it.
    pub arrays: Vec<Option<ArrayRef>>,
    /// Rows in the file (physical: before any DV).
    pub rows: u64,
    /// A column read is stored as INT96, which this reader decodes at nanosecond precision (a
    /// narrower range of dates than Delta's microseconds).
    pub int96: bool,
}

/// The columns `wanted` (physical name, field id) of the parquet file at `path`.
pub fn read_columns(path: &Path, wanted: &[(&str, Option<i64>)]) -> Result<FileColumns> {
    let f = File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => {
            Error::corrupt(path, None, "data file referenced by the log does not exist")
        }
        _ => Error::io(path, e),
    })?;
    let builder =
        ParquetRecordBatchReaderBuilder::try_new(f).map_err(|e| parquet_error(path, e))?;
    let rows = builder.metadata().file_metadata().num_rows().max(0) as u64;
    let arrow_schema = builder.schema().clone();
    let fields: Vec<(&str, Option<i64>)> = arrow_schema
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
    let descr = builder.parquet_schema();
    let int96 = (0..descr.num_columns()).any(|leaf| {
        descr.column(leaf).physical_type() == PhysicalType::INT96
            && roots.contains(&descr.get_column_root_idx(leaf))
    });
    let mask = ProjectionMask::roots(descr, roots.iter().copied());
    let batches: Vec<RecordBatch> = builder
        .with_projection(mask)
        // One batch: the columns are returned whole, and a concatenation would copy them again.
        .with_batch_size((rows as usize).max(1))
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
        int96,
    })
}

pub(crate) fn parquet_error(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::invalid(format!("cannot read data file {}: {e}", path.display()))
}
