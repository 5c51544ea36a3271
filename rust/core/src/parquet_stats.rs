//! Delta statistics (`add.stats`) of a parquet file from its footer alone, for engines that write
//! parquet themselves (Spark): no data page is read.
//!
//! The rules are the embedded writer's: `numRecords`; per top-level primitive column `nullCount`
//! and, where sound, `minValues` / `maxValues`. No bounds for booleans, binary, decimals, INT96 and
//! unsigned integers. A float column whose footer holds NaN as a bound (parquet-mr records NaN) gets
//! none, and an infinite bound is left out (JSON has neither). A string min is cut to 32 characters,
//! a longer or inexact max is left out. Timestamps are written at millisecond precision (the max is
//! truncated like the embedded writer's; the checker widens timestamp maxima).

use chrono::{DateTime, NaiveDate};
use parquet::basic::{ColumnOrder, ConvertedType, LogicalType, TimeUnit, Type as Physical};
use parquet::file::metadata::{ParquetMetaData, ParquetMetaDataReader};
use parquet::file::statistics::Statistics;
use parquet::schema::types::ColumnDescriptor;
use serde_json::{Map, Number, Value};

use crate::error::{Error, Result};
use crate::storage::Location;

/// Delta truncates string statistics to this many characters.
const STRING_PREFIX: usize = 32;

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

#[derive(Clone, PartialEq)]
enum Kind {
    Long,
    Float,
    Date,
    Timestamp(TimeUnit),
    Str,
    CountOnly,
}

fn stats_of(meta: &ParquetMetaData) -> (String, i64) {
    let schema = meta.file_metadata().schema_descr();
    let rows = meta.file_metadata().num_rows();
    let (mut mins, mut maxs, mut nulls) = (Map::new(), Map::new(), Map::new());
    for (j, col) in schema.columns().iter().enumerate() {
        if col.path().parts().len() != 1 || col.max_rep_level() > 0 {
            continue; // nested: the embedded writer records nothing for them either
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
        for rg in meta.row_groups() {
            let st = rg.column(j).statistics();
            let nc = st.and_then(|s| s.null_count_opt());
            null_count = null_count.zip(nc).map(|(a, b)| a + b);
            if nc.is_some_and(|n| n as i64 == rg.num_rows()) || !bounded {
                continue; // all NULL: no bound needed
            }
            match st.and_then(|s| row_group_bounds(s, &kind)) {
                Some(b) => acc = Some(acc.map_or(b.clone(), |a| a.merge(b))),
                None => bounded = false,
            }
        }
        if let Some(n) = null_count {
            nulls.insert(name.clone(), Value::from(n));
        }
        if let (true, Some(b)) = (bounded, acc) {
            let (lo, hi) = b.to_json(&kind);
            if let Some(lo) = lo {
                mins.insert(name.clone(), lo);
            }
            if let Some(hi) = hi {
                maxs.insert(name, hi);
            }
        }
    }
    let mut out = Map::new();
    out.insert("numRecords".into(), Value::from(rows));
    out.insert("minValues".into(), Value::Object(mins));
    out.insert("maxValues".into(), Value::Object(maxs));
    out.insert("nullCount".into(), Value::Object(nulls));
    (Value::Object(out).to_string(), rows)
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
        (Physical::INT64, Some(LogicalType::Timestamp(t)), _) => Kind::Timestamp(t.unit),
        (Physical::INT64, None, ConvertedType::TIMESTAMP_MILLIS) => {
            Kind::Timestamp(TimeUnit::MILLIS)
        }
        (Physical::INT64, None, ConvertedType::TIMESTAMP_MICROS) => {
            Kind::Timestamp(TimeUnit::MICROS)
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

/// A bound while row groups are merged: the raw value (infinities and long strings included; the
/// JSON rules apply to the file's final bounds only).
#[derive(Clone, PartialEq, PartialOrd)]
enum Bound {
    Int(i64),
    Float(f64),
    Text(String),
}

#[derive(Clone)]
struct Bounds {
    lo: Bound,
    hi: Bound,
    /// False when some row group's max was truncated by its writer.
    hi_exact: bool,
}

impl Bounds {
    fn merge(self, other: Bounds) -> Bounds {
        let lo = if other.lo < self.lo {
            other.lo
        } else {
            self.lo
        };
        let hi = if other.hi > self.hi {
            other.hi
        } else {
            self.hi
        };
        Bounds {
            lo,
            hi,
            hi_exact: self.hi_exact && other.hi_exact,
        }
    }

    fn to_json(&self, kind: &Kind) -> (Option<Value>, Option<Value>) {
        let one = |b: &Bound, is_max: bool| -> Option<Value> {
            match (b, kind) {
                (Bound::Int(v), Kind::Long) => Some(Value::from(*v)),
                (Bound::Int(v), Kind::Date) => date(*v),
                (Bound::Int(v), Kind::Timestamp(unit)) => timestamp(*v, unit),
                (Bound::Float(v), _) => v
                    .is_finite()
                    .then(|| Number::from_f64(*v).map(Value::Number))
                    .flatten(),
                (Bound::Text(t), _) if is_max => (self.hi_exact
                    && t.chars().count() <= STRING_PREFIX)
                    .then(|| Value::from(t.as_str())),
                (Bound::Text(t), _) => Some(Value::from(
                    t.chars().take(STRING_PREFIX).collect::<String>(),
                )),
                _ => None,
            }
        };
        (one(&self.lo, false), one(&self.hi, true))
    }
}

/// A row group's bounds; None when the column cannot be bounded (missing statistics, NaN).
fn row_group_bounds(st: &Statistics, kind: &Kind) -> Option<Bounds> {
    let exact = |lo, hi| {
        Some(Bounds {
            lo,
            hi,
            hi_exact: true,
        })
    };
    match (st, kind) {
        (Statistics::Int32(s), Kind::Long | Kind::Date) => exact(
            Bound::Int((*s.min_opt()?).into()),
            Bound::Int((*s.max_opt()?).into()),
        ),
        (Statistics::Int64(s), Kind::Long | Kind::Timestamp(_)) => {
            exact(Bound::Int(*s.min_opt()?), Bound::Int(*s.max_opt()?))
        }
        (Statistics::Float(s), Kind::Float) if s.nan_count_opt().unwrap_or(0) == 0 => {
            float_bounds(f64::from(*s.min_opt()?), f64::from(*s.max_opt()?))
        }
        (Statistics::Double(s), Kind::Float) if s.nan_count_opt().unwrap_or(0) == 0 => {
            float_bounds(*s.min_opt()?, *s.max_opt()?)
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

/// parquet-mr records NaN as a float bound: such a column has no usable bounds.
fn float_bounds(lo: f64, hi: f64) -> Option<Bounds> {
    if lo.is_nan() || hi.is_nan() {
        return None;
    }
    Some(Bounds {
        lo: Bound::Float(lo),
        hi: Bound::Float(hi),
        hi_exact: true,
    })
}

fn date(days: i64) -> Option<Value> {
    let d =
        NaiveDate::from_ymd_opt(1970, 1, 1)?.checked_add_signed(chrono::Duration::days(days))?;
    Some(Value::from(d.format("%Y-%m-%d").to_string()))
}

fn timestamp(v: i64, unit: &TimeUnit) -> Option<Value> {
    let micros = match unit {
        TimeUnit::MILLIS => v.checked_mul(1000)?,
        TimeUnit::MICROS => v,
        TimeUnit::NANOS => v.div_euclid(1000),
    };
    let t = DateTime::from_timestamp_micros(micros)?;
    Some(Value::from(t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{
        ArrayRef, Date32Array, Float64Array, Int64Array, RecordBatch, StringArray,
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

    fn stats(batch: RecordBatch, rows_per_group: usize) -> Value {
        let f = write(&[batch], rows_per_group);
        let (text, _) = footer_stats(&Location::local(f.path())).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    fn batch(cols: Vec<(&str, ArrayRef)>) -> RecordBatch {
        RecordBatch::try_from_iter(cols).unwrap()
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
        assert!(float_bounds(f64::NAN, 1.0).is_none() && float_bounds(0.0, f64::NAN).is_none());
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
