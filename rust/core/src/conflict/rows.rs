//! Evaluating read predicates on the rows of one data file (row-level concurrency, §4 rules 2
//! and 4): the columns the predicates reference are read from the parquet file, partition columns
//! come from the file's partition values, and each selected row is evaluated exactly with SQL
//! three-valued logic (a row matches only when the predicate is TRUE).

use std::fs::File;
use std::path::Path;

use arrow_array::{cast::AsArray, types, Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType as ArrowType, TimeUnit};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::{ProjectionMask, PARQUET_FIELD_ID_META_KEY};

use crate::dv::DeletionBitmap;
use crate::error::{Error, Result};
use crate::log::actions::AddFile;
use crate::partition::Scalar;
use crate::predicate::{eval, ColumnRef, Predicate};
use crate::schema::{file_column_index, DataType};

/// Number of physical rows in a data file: from its stats, else from the parquet footer.
pub fn physical_rows(root: &Path, file: &AddFile) -> Result<u64> {
    // numRecords counts physical rows, whatever the file's DV deletes.
    if let Some(n) = file.num_records()? {
        return Ok(n as u64);
    }
    let path = data_path(root, file)?;
    let f = File::open(&path).map_err(|e| Error::io(&path, e))?;
    let b = ParquetRecordBatchReaderBuilder::try_new(f).map_err(|e| parquet_error(&path, e))?;
    Ok(b.metadata().file_metadata().num_rows() as u64)
}

fn data_path(root: &Path, file: &AddFile) -> Result<std::path::PathBuf> {
    crate::uri::resolve_data_path(root, &file.path)
        .map_err(|m| Error::invalid(format!("data file {}: {m}", file.path)))
}

fn parquet_error(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::invalid(format!("cannot read data file {}: {e}", path.display()))
}

/// Columns already read, by data file and physical column name: the winners of one commit loop
/// often change the same file again and again (one DV update each).
#[derive(Default)]
pub struct ColumnCache(std::sync::Mutex<std::collections::HashMap<(Box<str>, String), ArrayRef>>);

/// The rows among `positions` (physical row indexes of `file`) that satisfy at least one of the
/// predicates. An empty predicate list or a predicate without text ("all rows") matches every row.
pub fn matching_rows(
    root: &Path,
    file: &AddFile,
    predicates: &[Predicate],
    positions: &DeletionBitmap,
    cache: &ColumnCache,
) -> Result<DeletionBitmap> {
    if positions.is_empty() {
        return Ok(DeletionBitmap::default());
    }
    if predicates.is_empty() || predicates.iter().any(Predicate::is_all) {
        return Ok(positions.clone());
    }
    let mut needed: Vec<&ColumnRef> = Vec::new();
    for p in predicates {
        for c in &p.columns {
            if !c.partition && !needed.iter().any(|n| n.physical == c.physical) {
                needed.push(c);
            }
        }
    }
    let data = cached_columns(root, file, &needed, cache)?;
    let mut out = DeletionBitmap::default();
    for p in predicates {
        // Partition values (and columns the file lacks) are the same on every row: set them once.
        let mut values: Vec<Scalar> = p
            .columns
            .iter()
            .map(|c| {
                if c.partition {
                    eval::partition_value(&file.partition_values, c).unwrap_or(Scalar::Null)
                } else {
                    Scalar::Null
                }
            })
            .collect();
        let arrays: Vec<(usize, &ArrayRef)> = p
            .columns
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.partition)
            .filter_map(|(i, c)| {
                data.iter()
                    .find(|(n, _)| *n == c.physical)
                    .map(|(_, a)| (i, a))
            })
            .collect();
        for pos in positions.0.iter() {
            if out.0.contains(pos) {
                continue;
            }
            for &(i, a) in &arrays {
                if pos as usize >= a.len() {
                    return Err(Error::invalid(format!(
                        "row {pos} is beyond the {} rows of data file {}",
                        a.len(),
                        file.path
                    )));
                }
                values[i] = scalar_at(a, pos as usize, &p.columns[i].data_type);
            }
            if eval::eval(&p.expr, &values) == Some(true) {
                out.0.insert(pos);
            }
        }
    }
    Ok(out)
}

/// Live rows of a file: every physical row not in `deleted`.
pub fn live_rows(n: u64, deleted: &DeletionBitmap) -> DeletionBitmap {
    let mut all = roaring::RoaringTreemap::new();
    all.insert_range(0..n);
    DeletionBitmap(all - &deleted.0)
}

fn cached_columns(
    root: &Path,
    file: &AddFile,
    columns: &[&ColumnRef],
    cache: &ColumnCache,
) -> Result<Vec<(String, ArrayRef)>> {
    let mut out = Vec::new();
    let mut missing = Vec::new();
    {
        let map = cache.0.lock().unwrap_or_else(|e| e.into_inner());
        for c in columns {
            match map.get(&(file.path.clone(), c.physical.clone())) {
                Some(a) => out.push((c.physical.clone(), a.clone())),
                None => missing.push(*c),
            }
        }
    }
    if !missing.is_empty() {
        let read = read_columns(root, file, &missing)?;
        let mut map = cache.0.lock().unwrap_or_else(|e| e.into_inner());
        for (name, a) in read {
            map.insert((file.path.clone(), name.clone()), a.clone());
            out.push((name, a));
        }
    }
    Ok(out)
}

/// Whole columns (by physical name) of a data file; absent columns are left out (all NULL).
fn read_columns(
    root: &Path,
    file: &AddFile,
    columns: &[&ColumnRef],
) -> Result<Vec<(String, ArrayRef)>> {
    let path = data_path(root, file)?;
    let f = File::open(&path).map_err(|e| Error::io(&path, e))?;
    let builder =
        ParquetRecordBatchReaderBuilder::try_new(f).map_err(|e| parquet_error(&path, e))?;
    let arrow_schema = builder.schema().clone();
    let mut roots = Vec::new();
    let mut names = Vec::new();
    let fields: Vec<(&str, Option<i64>)> = arrow_schema
        .fields()
        .iter()
        .map(|f| {
            let id = f.metadata().get(PARQUET_FIELD_ID_META_KEY);
            (f.name().as_str(), id.and_then(|v| v.parse().ok()))
        })
        .collect();
    for c in columns {
        if let Some(i) = file_column_index(&fields, &c.physical, c.field_id) {
            roots.push(i);
            names.push((arrow_schema.field(i).name().clone(), c.physical.clone()));
        }
    }
    let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
    let reader = builder
        .with_projection(mask)
        .with_batch_size(1 << 16)
        .build()
        .map_err(|e| parquet_error(&path, e))?;
    let batches: Vec<RecordBatch> = reader
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| parquet_error(&path, e))?;
    let mut out = Vec::new();
    for (in_file, name) in names {
        let parts: Vec<ArrayRef> = batches
            .iter()
            .filter_map(|b| b.column_by_name(&in_file).cloned())
            .collect();
        let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
        let whole = match refs.len() {
            0 => continue,
            1 => parts[0].clone(),
            _ => arrow_select::concat::concat(&refs).map_err(|e| parquet_error(&path, e))?,
        };
        out.push((name, whole));
    }
    Ok(out)
}

/// One value as the predicate evaluator's scalar, typed by the table column.
fn scalar_at(a: &ArrayRef, i: usize, column_type: &DataType) -> Scalar {
    if a.is_null(i) {
        return Scalar::Null;
    }
    let ntz = matches!(column_type, DataType::Primitive(t) if t == "timestamp_ntz");
    match a.data_type() {
        ArrowType::Int8 => Scalar::Long(a.as_primitive::<types::Int8Type>().value(i) as i64),
        ArrowType::Int16 => Scalar::Long(a.as_primitive::<types::Int16Type>().value(i) as i64),
        ArrowType::Int32 => Scalar::Long(a.as_primitive::<types::Int32Type>().value(i) as i64),
        ArrowType::Int64 => Scalar::Long(a.as_primitive::<types::Int64Type>().value(i)),
        ArrowType::UInt8 => Scalar::Long(a.as_primitive::<types::UInt8Type>().value(i) as i64),
        ArrowType::UInt16 => Scalar::Long(a.as_primitive::<types::UInt16Type>().value(i) as i64),
        ArrowType::UInt32 => Scalar::Long(a.as_primitive::<types::UInt32Type>().value(i) as i64),
        ArrowType::Float32 => {
            Scalar::Double(a.as_primitive::<types::Float32Type>().value(i) as f64)
        }
        ArrowType::Float64 => Scalar::Double(a.as_primitive::<types::Float64Type>().value(i)),
        ArrowType::Boolean => Scalar::Boolean(a.as_boolean().value(i)),
        ArrowType::Utf8 => Scalar::String(a.as_string::<i32>().value(i).to_string()),
        ArrowType::LargeUtf8 => Scalar::String(a.as_string::<i64>().value(i).to_string()),
        ArrowType::Utf8View => Scalar::String(a.as_string_view().value(i).to_string()),
        ArrowType::Binary => Scalar::Binary(a.as_binary::<i32>().value(i).to_vec()),
        ArrowType::LargeBinary => Scalar::Binary(a.as_binary::<i64>().value(i).to_vec()),
        ArrowType::Date32 => Scalar::Date(a.as_primitive::<types::Date32Type>().value(i)),
        ArrowType::Date64 => {
            Scalar::Date((a.as_primitive::<types::Date64Type>().value(i) / 86_400_000) as i32)
        }
        ArrowType::Timestamp(unit, _) => {
            let micros = match unit {
                TimeUnit::Second => {
                    a.as_primitive::<types::TimestampSecondType>().value(i) * 1_000_000
                }
                TimeUnit::Millisecond => {
                    a.as_primitive::<types::TimestampMillisecondType>().value(i) * 1_000
                }
                TimeUnit::Microsecond => {
                    a.as_primitive::<types::TimestampMicrosecondType>().value(i)
                }
                TimeUnit::Nanosecond => a
                    .as_primitive::<types::TimestampNanosecondType>()
                    .value(i)
                    .div_euclid(1_000),
            };
            if ntz {
                Scalar::TimestampNtz(micros)
            } else {
                Scalar::Timestamp(micros)
            }
        }
        ArrowType::Decimal128(_, s) => {
            Scalar::Decimal(a.as_primitive::<types::Decimal128Type>().value(i), *s)
        }
        // Types the evaluator has no scalar for never satisfy a comparison.
        _ => Scalar::Null,
    }
}
