//! Delta statistics (`add.stats`) of a parquet file from its footer alone, for engines that write
//! parquet themselves (Spark) and for the file the embedded writer has just encoded: no data page
//! is read. The rules are [`crate::stats`]'s; a footer adds two of its own: a float column whose
//! footer holds NaN as a bound (parquet-mr records NaN) gets none, and string bounds from a
//! legacy writer (no type-defined column order) are not used.

use parquet::basic::{ColumnOrder, ConvertedType, LogicalType, TimeUnit, Type as Physical};
use parquet::file::metadata::{ParquetMetaData, ParquetMetaDataReader};
use parquet::file::statistics::Statistics;
use parquet::schema::types::ColumnDescriptor;

use crate::error::{Error, Result};
use crate::stats::{self, Bound, Bounds, ColumnStats, Kind};
use crate::storage::Location;

/// `(stats JSON, number of rows)` of the parquet file at `path`.
pub fn footer_stats(path: &Location) -> Result<(String, i64)> {
    // One request on an object store: opening fetches the file's tail, which holds the footer.
    let file = path.open().map_err(|e| Error::io(path, e))?;
    footer_stats_of(&file, path)
}

/// [`footer_stats`] of a parquet file held in memory (just written, not stored yet).
pub fn footer_stats_of_bytes(bytes: Vec<u8>) -> Result<(String, i64)> {
    footer_stats_of(&bytes::Bytes::from(bytes), "<parquet bytes>")
}

/// The Arrow schema, stats JSON and row count of the parquet file at `path`, from one footer
/// read (CONVERT TO DELTA). A top-level INT96 column is a `timestamp` (Spark writes INT96 for
/// instants), not the wall-clock time an untagged Arrow timestamp would mean.
pub fn footer_schema_and_stats(path: &Location) -> Result<(arrow_schema::Schema, String, i64)> {
    let file = path.open().map_err(|e| Error::io(path, e))?;
    let unreadable = |e: &dyn std::fmt::Display| {
        Error::invalid(format!("{path}: not a readable parquet footer: {e}"))
    };
    crate::error::no_panic(
        || {
            let meta = ParquetMetaDataReader::new()
                .parse_and_finish(&file)
                .map_err(|e| unreadable(&e))?;
            let fm = meta.file_metadata();
            let arrow =
                parquet::arrow::parquet_to_arrow_schema(fm.schema_descr(), fm.key_value_metadata())
                    .map_err(|e| unreadable(&e))?;
            let int96: Vec<String> = fm
                .schema_descr()
                .columns()
                .iter()
                .filter(|c| c.physical_type() == Physical::INT96 && c.path().parts().len() == 1)
                .map(|c| c.path().parts()[0].clone())
                .collect();
            let fields: Vec<arrow_schema::Field> = arrow
                .fields()
                .iter()
                .map(|f| match int96.contains(f.name()) {
                    true => f
                        .as_ref()
                        .clone()
                        .with_data_type(arrow_schema::DataType::Timestamp(
                            arrow_schema::TimeUnit::Microsecond,
                            Some("UTC".into()),
                        )),
                    false => f.as_ref().clone(),
                })
                .collect();
            let (stats, rows) = stats_of(&meta);
            Ok((arrow_schema::Schema::new(fields), stats, rows))
        },
        |msg| unreadable(&msg),
    )
}

fn footer_stats_of<R: parquet::file::reader::ChunkReader>(
    file: &R,
    name: impl std::fmt::Display,
) -> Result<(String, i64)> {
    let unreadable = |e: &dyn std::fmt::Display| {
        Error::invalid(format!("{name}: not a readable parquet footer: {e}"))
    };
    crate::error::no_panic(
        || {
            let meta = ParquetMetaDataReader::new()
                .parse_and_finish(file)
                .map_err(|e| unreadable(&e))?;
            Ok(stats_of(&meta))
        },
        |msg| unreadable(&msg),
    )
}

fn stats_of(meta: &ParquetMetaData) -> (String, i64) {
    let all: Vec<usize> = (0..meta.num_row_groups()).collect();
    let rows = meta.file_metadata().num_rows();
    (stats_of_groups(meta, &all, rows), rows)
}

/// Delta stats JSON of the row group `group` alone, by the footer rules above: what a reader
/// judges the group by when a predicate may let it skip the group.
pub fn row_group_stats(meta: &ParquetMetaData, group: usize) -> String {
    stats_of_groups(meta, &[group], meta.row_group(group).num_rows())
}

fn stats_of_groups(meta: &ParquetMetaData, groups: &[usize], rows: i64) -> String {
    let schema = meta.file_metadata().schema_descr();
    let mut columns = Vec::new();
    for (j, col) in schema.columns().iter().enumerate() {
        if col.path().parts().len() != 1 || col.max_rep_level() > 0 {
            continue; // nested: no statistics (the rules)
        }
        let name = col.path().parts()[0].clone();
        let mut kind = kind_of(col);
        if kind == Kind::Str
            && !matches!(
                meta.file_metadata().column_order(j),
                ColumnOrder::TYPE_DEFINED_ORDER(_)
            )
        {
            kind = Kind::CountOnly; // legacy writers' string bounds may compare bytes as signed
        }
        let mut null_count = Some(0u64);
        let mut acc: Option<Bounds> = None;
        let mut bounded = kind != Kind::CountOnly;
        for rg in groups.iter().map(|&g| meta.row_group(g)) {
            let st = rg.column(j).statistics();
            let nc = st.and_then(|s| s.null_count_opt());
            null_count = null_count.zip(nc).map(|(a, b)| a + b);
            if nc.is_some_and(|n| n as i64 == rg.num_rows()) || !bounded {
                continue; // all NULL: no bound needed
            }
            match st.and_then(|s| row_group_bounds(s, kind)) {
                Some(b) => acc = Some(acc.map_or(b.clone(), |a| a.merge(b))),
                None => bounded = false,
            }
        }
        columns.push(ColumnStats {
            name,
            kind,
            null_count,
            bounds: acc.filter(|_| bounded),
        });
    }
    stats::stats_json(rows, columns).to_string()
}

fn kind_of(col: &ColumnDescriptor) -> Kind {
    match (
        col.physical_type(),
        col.logical_type_ref(),
        col.converted_type(),
    ) {
        (
            Physical::BYTE_ARRAY,
            Some(LogicalType::String | LogicalType::Enum | LogicalType::Json),
            _,
        )
        | (
            Physical::BYTE_ARRAY,
            None,
            ConvertedType::UTF8 | ConvertedType::ENUM | ConvertedType::JSON,
        ) => Kind::Str,
        (Physical::INT32, Some(LogicalType::Date), _)
        | (Physical::INT32, None, ConvertedType::DATE) => Kind::Date,
        (Physical::INT64, Some(LogicalType::Timestamp(t)), _) => Kind::Timestamp(match t.unit {
            TimeUnit::MILLIS => stats::TimeUnit::Millis,
            TimeUnit::MICROS => stats::TimeUnit::Micros,
            TimeUnit::NANOS => stats::TimeUnit::Nanos,
        }),
        (Physical::INT64, None, ConvertedType::TIMESTAMP_MILLIS) => {
            Kind::Timestamp(stats::TimeUnit::Millis)
        }
        (Physical::INT64, None, ConvertedType::TIMESTAMP_MICROS) => {
            Kind::Timestamp(stats::TimeUnit::Micros)
        }
        (Physical::INT32 | Physical::INT64, Some(LogicalType::Integer(i)), _) if i.is_signed => {
            Kind::Long
        }
        (
            Physical::INT32 | Physical::INT64,
            None,
            ConvertedType::NONE
            | ConvertedType::INT_8
            | ConvertedType::INT_16
            | ConvertedType::INT_32
            | ConvertedType::INT_64,
        ) => Kind::Long,
        (Physical::FLOAT | Physical::DOUBLE, _, _) => Kind::Float,
        _ => Kind::CountOnly,
    }
}

/// A row group's bounds; None when the column cannot be bounded (missing statistics, NaN).
fn row_group_bounds(st: &Statistics, kind: Kind) -> Option<Bounds> {
    let exact = |lo, hi| Some(Bounds::exact(lo, hi));
    match (st, kind) {
        (Statistics::Int32(s), Kind::Long | Kind::Date) => exact(
            Bound::Int((*s.min_opt()?).into()),
            Bound::Int((*s.max_opt()?).into()),
        ),
        (Statistics::Int64(s), Kind::Long | Kind::Timestamp(_)) => {
            exact(Bound::Int(*s.min_opt()?), Bound::Int(*s.max_opt()?))
        }
        (Statistics::Float(s), Kind::Float) if s.nan_count_opt().unwrap_or(0) == 0 => {
            Bounds::float(f64::from(*s.min_opt()?), f64::from(*s.max_opt()?))
        }
        (Statistics::Double(s), Kind::Float) if s.nan_count_opt().unwrap_or(0) == 0 => {
            Bounds::float(*s.min_opt()?, *s.max_opt()?)
        }
        (Statistics::ByteArray(s), Kind::Str) => {
            let lo = std::str::from_utf8(s.min_opt()?.data()).ok()?;
            let hi = std::str::from_utf8(s.max_opt()?.data()).ok()?;
            Some(Bounds {
                lo: Bound::Text(lo.into()),
                hi: Bound::Text(hi.into()),
                hi_exact: s.max_is_exact(),
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{
        Array, ArrayRef, Date32Array, Float64Array, Int64Array, RecordBatch, StringArray,
        TimestampMicrosecondArray,
    };
    use parquet::arrow::ArrowWriter;
    use parquet::file::properties::WriterProperties;

    use super::*;

    fn write(batches: &[RecordBatch], rows_per_group: usize) -> tempfile::NamedTempFile {
        let f = tempfile::NamedTempFile::new().unwrap();
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(rows_per_group))
            .build();
        let mut w =
            ArrowWriter::try_new(f.reopen().unwrap(), batches[0].schema(), Some(props)).unwrap();
        for b in batches {
            w.write(b).unwrap();
        }
        w.close().unwrap();
        f
    }

    fn stats(batch: RecordBatch, rows_per_group: usize) -> serde_json::Value {
        let f = write(&[batch], rows_per_group);
        let (text, _) = footer_stats(&Location::local(f.path())).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    fn batch(cols: Vec<(&str, ArrayRef)>) -> RecordBatch {
        RecordBatch::try_from_iter(cols).unwrap()
    }

    /// Each group's stats are its own (values written: [5, NULL] and [-3, 9]); a read keeps the
    /// groups a predicate's judge accepts and returns their rows with their positions.
    #[test]
    fn row_groups_are_judged_and_read_by_their_own_stats() {
        let b = batch(vec![(
            "id",
            Arc::new(Int64Array::from(vec![Some(5), None, Some(-3), Some(9)])) as ArrayRef,
        )]);
        let f = write(&[b], 2);
        let at = Location::local(f.path());
        let file = at.open().unwrap();
        let meta = ParquetMetaDataReader::new()
            .parse_and_finish(&file)
            .unwrap();
        let group =
            |g| -> serde_json::Value { serde_json::from_str(&row_group_stats(&meta, g)).unwrap() };
        assert_eq!(
            (
                group(0)["numRecords"].clone(),
                group(1)["numRecords"].clone()
            ),
            (2.into(), 2.into())
        );
        assert_eq!(
            (
                group(0)["minValues"]["id"].clone(),
                group(0)["nullCount"]["id"].clone()
            ),
            (5.into(), 1.into())
        );
        assert_eq!(
            (
                group(1)["minValues"]["id"].clone(),
                group(1)["maxValues"]["id"].clone()
            ),
            ((-3).into(), 9.into())
        );
        let keep = |stats: &str| stats.contains("\"minValues\":{\"id\":-3");
        let read = crate::data_file::read_columns_where(&at, &[("id", None)], Some(&keep)).unwrap();
        assert_eq!((read.rows, read.kept.clone()), (4, Some(vec![(2, 2)])));
        let ids = read.arrays[0].as_ref().unwrap();
        let ids = ids.as_any().downcast_ref::<Int64Array>().unwrap();
        assert_eq!(ids.values().to_vec(), vec![-3, 9]);
        let all = crate::data_file::read_columns_where(&at, &[("id", None)], Some(&|_: &str| true))
            .unwrap();
        assert_eq!((all.kept, all.arrays[0].as_ref().unwrap().len()), (None, 4));
    }

    #[test]
    fn longs_dates_timestamps_across_row_groups() {
        let s = stats(
            batch(vec![
                (
                    "id",
                    Arc::new(Int64Array::from(vec![Some(5), None, Some(-3), Some(9)])) as ArrayRef,
                ),
                (
                    "d",
                    Arc::new(Date32Array::from(vec![
                        Some(19723),
                        Some(0),
                        None,
                        Some(-1),
                    ])),
                ),
                (
                    "ts",
                    Arc::new(
                        TimestampMicrosecondArray::from(vec![
                            Some(1_704_067_200_000_999),
                            None,
                            None,
                            Some(-1),
                        ])
                        .with_timezone("UTC"),
                    ),
                ),
            ]),
            2,
        );
        assert_eq!(s["numRecords"], 4);
        assert_eq!(s["minValues"]["id"], -3);
        assert_eq!(s["maxValues"]["id"], 9);
        assert_eq!(s["nullCount"]["id"], 1);
        assert_eq!(s["minValues"]["d"], "1969-12-31");
        assert_eq!(s["maxValues"]["d"], "2024-01-01");
        // -1 µs is 1969-12-31T23:59:59.999999, floored to the millisecond like the embedded writer
        assert_eq!(s["minValues"]["ts"], "1969-12-31T23:59:59.999Z");
        assert_eq!(s["maxValues"]["ts"], "2024-01-01T00:00:00.000Z");
        assert_eq!(s["nullCount"]["ts"], 2);
    }

    #[test]
    fn floats_nan_and_infinities() {
        // arrow-rs, like pyarrow, leaves NaN out of its statistics: only parquet-mr's NaN bounds
        // are visible in a footer, tested from Python with Spark-written files.
        let s = stats(
            batch(vec![
                (
                    "inf",
                    Arc::new(Float64Array::from(vec![f64::NEG_INFINITY, 2.5])) as ArrayRef,
                ),
                ("fin", Arc::new(Float64Array::from(vec![1.5, -2.0]))),
            ]),
            10,
        );
        assert!(s["minValues"].get("inf").is_none());
        assert_eq!(s["maxValues"]["inf"], 2.5);
        assert_eq!(s["minValues"]["fin"], -2.0);
        assert_eq!(s["maxValues"]["fin"], 1.5);
        // an infinite bound of one row group is still compared before it is left out
        let s = stats(
            batch(vec![(
                "x",
                Arc::new(Float64Array::from(vec![f64::INFINITY, -2.0, 3.0])) as ArrayRef,
            )]),
            1,
        );
        assert_eq!(s["minValues"]["x"], -2.0);
        assert!(s["maxValues"].get("x").is_none());
    }

    #[test]
    fn strings_prefix_rule_and_all_null_groups() {
        let long = "z".repeat(40);
        let s = stats(
            batch(vec![
                (
                    "s",
                    Arc::new(StringArray::from(vec![Some(long.as_str()), Some("a")])) as ArrayRef,
                ),
                (
                    "short",
                    Arc::new(StringArray::from(vec![Some("b"), Some("é")])),
                ),
                ("n", Arc::new(StringArray::from(vec![None::<&str>, None]))),
            ]),
            1,
        );
        assert_eq!(s["minValues"]["s"], "a");
        assert!(
            s["maxValues"].get("s").is_none(),
            "a max longer than 32 characters is no bound"
        );
        assert_eq!(s["maxValues"]["short"], "é");
        assert_eq!(s["nullCount"]["n"], 2);
        assert!(s["minValues"].get("n").is_none());
    }

    #[test]
    fn not_parquet_is_a_clear_error() {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), b"not parquet at all").unwrap();
        let e = footer_stats(&Location::local(f.path()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a readable parquet footer"), "{e}");
    }
}
