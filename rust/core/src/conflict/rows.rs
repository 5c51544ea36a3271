//! Evaluating read predicates on the rows of one data file (row-level concurrency, §4 rules 2
//! and 4): the columns the predicates reference are read from the parquet file, partition columns
//! come from the file's partition values, and the rows are evaluated by the same evaluator DML
//! uses (a row matches only when the predicate is TRUE).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arrow_array::{new_null_array, Array, ArrayRef, RecordBatch, RecordBatchOptions, UInt64Array};
use arrow_schema::{Field, Schema};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::data_file::parquet_error;
use crate::dv::DeletionBitmap;
use crate::error::{Error, Result};
use crate::files_batch;
use crate::log::actions::AddFile;
use crate::partition::Scalar;
use crate::predicate::{eval, ColumnRef, Predicate};
use crate::rowexpr::RowExpr;
use crate::schema_arrow::primitive_arrow_type;
use crate::storage::Location;

/// Number of physical rows in a data file: from its stats, else from the parquet footer.
pub fn physical_rows(root: &Location, file: &AddFile) -> Result<u64> {
    // numRecords counts physical rows, whatever the file's DV deletes.
    if let Some(n) = file.num_records()? {
        return Ok(n as u64);
    }
    let path = data_path(root, file)?;
    let f = path.open().map_err(|e| Error::io(&path, e))?;
    let b = ParquetRecordBatchReaderBuilder::try_new(f).map_err(|e| parquet_error(&path, e))?;
    Ok(b.metadata().file_metadata().num_rows() as u64)
}

pub(super) fn data_path(root: &Location, file: &AddFile) -> Result<Location> {
    root.resolve(&file.path)
        .map_err(|m| Error::invalid(format!("data file {}: {m}", file.path)))
}

/// What one commit loop reuses across winners and files: columns already read, by data file and
/// physical column name (the winners often change the same file again and again, one DV update
/// each), and each read predicate compiled once (`Err`: it cannot be decided on rows).
#[derive(Default)]
pub struct ColumnCache {
    columns: Mutex<HashMap<(Arc<str>, String), ArrayRef>>,
    compiled: Mutex<HashMap<String, std::result::Result<Arc<RowExpr>, String>>>,
}

/// The rows among `positions` (physical row indexes of `file`) that satisfy at least one of the
/// predicates. An empty predicate list or a predicate without text ("all rows") matches every row.
/// Rows are evaluated by the one row evaluator ([`crate::rowexpr`]), as DML evaluates them, on
/// the positions only: a value elsewhere in the file can neither match nor fail the evaluation.
pub fn matching_rows(
    root: &Location,
    file: &AddFile,
    predicates: &[&Predicate],
    positions: &DeletionBitmap,
    cache: &ColumnCache,
) -> Result<DeletionBitmap> {
    if positions.is_empty() {
        return Ok(DeletionBitmap::default());
    }
    if predicates.is_empty() || predicates.iter().any(|p| p.is_all()) {
        return Ok(positions.clone());
    }
    let exprs = predicates
        .iter()
        .map(|p| compiled(p, cache).map_err(Error::invalid))
        .collect::<Result<Vec<_>>>()?;
    // Every table column some predicate reads, once (an expression ignores the others).
    let mut needed: Vec<&ColumnRef> = Vec::new();
    for (p, e) in predicates.iter().zip(&exprs) {
        for name in e.columns() {
            if let Some(c) = p.table_columns.iter().find(|c| c.name == *name) {
                if !needed.iter().any(|n| n.name == c.name) {
                    needed.push(c);
                }
            }
        }
    }
    let data_refs: Vec<&ColumnRef> = needed.iter().copied().filter(|c| !c.partition).collect();
    let data = cached_columns(root, file, &data_refs, cache)?;
    let rows = match data.first() {
        Some((_, a)) => a.len() as u64,
        None => physical_rows(root, file)?,
    };
    if let Some(beyond) = positions.0.iter().find(|&p| p >= rows) {
        return Err(Error::invalid(format!(
            "row {beyond} is beyond the {rows} rows of data file {}",
            file.path
        )));
    }
    let picked: Vec<u64> = positions.0.iter().collect();
    let take = UInt64Array::from(picked.clone());
    let (mut fields, mut arrays) = (Vec::new(), Vec::new());
    for c in &needed {
        let ty = primitive_arrow_type(&c.data_type).expect("table_columns are primitive");
        let a = if c.partition {
            let v = eval::partition_value(&file.partition_values, c).unwrap_or(Scalar::Null);
            files_batch::repeated(&ty, v, picked.len())?
        } else {
            match data.iter().find(|(n, _)| *n == c.physical) {
                Some((_, a)) => arrow_select::take::take(a.as_ref(), &take, None)
                    .map_err(|e| parquet_error(&*file.path, e))?,
                None => new_null_array(&ty, picked.len()), // a column the file lacks is NULL
            }
        };
        fields.push(Field::new(&c.name, a.data_type().clone(), true));
        arrays.push(a);
    }
    let batch = RecordBatch::try_new_with_options(
        Arc::new(Schema::new(fields)),
        arrays,
        &RecordBatchOptions::new().with_row_count(Some(picked.len())),
    )
    .map_err(|e| parquet_error(&*file.path, e))?;
    let mut out = DeletionBitmap::default();
    for e in &exprs {
        let mask = e.mask(&batch)?;
        out.0.extend(mask.values().set_indices().map(|j| picked[j]));
    }
    Ok(out)
}

/// The predicate compiled by the row evaluator against the table's primitive columns (logical
/// names), once per commit loop; an error (a nested field, a function the evaluator lacks) means
/// it cannot be decided on rows.
pub fn compiled(p: &Predicate, cache: &ColumnCache) -> std::result::Result<Arc<RowExpr>, String> {
    let text = p.text.as_deref().unwrap_or("TRUE");
    let mut map = cache.compiled.lock().unwrap_or_else(|e| e.into_inner());
    map.entry(text.to_string())
        .or_insert_with(|| {
            let fields: Vec<Field> = p
                .table_columns
                .iter()
                .filter_map(|c| {
                    Some(Field::new(
                        &c.name,
                        primitive_arrow_type(&c.data_type)?,
                        true,
                    ))
                })
                .collect();
            RowExpr::compile(text, &Schema::new(fields), &[])
                .map(Arc::new)
                .map_err(|e| e.to_string())
        })
        .clone()
}

/// Live rows of a file: every physical row not in `deleted`.
pub fn live_rows(n: u64, deleted: &DeletionBitmap) -> DeletionBitmap {
    let mut all = roaring::RoaringTreemap::new();
    all.insert_range(0..n);
    DeletionBitmap(all - &deleted.0)
}

fn cached_columns(
    root: &Location,
    file: &AddFile,
    columns: &[&ColumnRef],
    cache: &ColumnCache,
) -> Result<Vec<(String, ArrayRef)>> {
    let mut out = Vec::new();
    let mut missing = Vec::new();
    {
        let map = cache.columns.lock().unwrap_or_else(|e| e.into_inner());
        for c in columns {
            match map.get(&(file.path.clone(), c.physical.clone())) {
                Some(a) => out.push((c.physical.clone(), a.clone())),
                None => missing.push(*c),
            }
        }
    }
    if !missing.is_empty() {
        let read = read_columns(root, file, &missing)?;
        let mut map = cache.columns.lock().unwrap_or_else(|e| e.into_inner());
        for (name, a) in read {
            map.insert((file.path.clone(), name.clone()), a.clone());
            out.push((name, a));
        }
    }
    Ok(out)
}

/// Whole columns (by physical name) of a data file; absent columns are left out (all NULL).
fn read_columns(
    root: &Location,
    file: &AddFile,
    columns: &[&ColumnRef],
) -> Result<Vec<(String, ArrayRef)>> {
    let path = data_path(root, file)?;
    let wanted: Vec<(&str, Option<i64>)> = columns
        .iter()
        .map(|c| (c.physical.as_str(), c.field_id))
        .collect();
    let read = crate::data_file::read_columns(&path, &wanted)?;
    if let Some(why) = read.undecodable {
        // Rows judged on values decoded otherwise than the engine's could miss a conflict.
        return Err(Error::invalid(format!(
            "row-level check cannot read {path}: {why}"
        )));
    }
    Ok(columns
        .iter()
        .zip(read.arrays)
        .filter_map(|(c, a)| Some((c.physical.clone(), a?)))
        .collect())
}
