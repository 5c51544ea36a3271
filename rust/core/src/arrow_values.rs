//! Arrow values as Delta scalars, for the values every engine hands the core: canonical
//! partition strings (what `partitionValues` records) and SQL literals for the read predicate a
//! MERGE records from a summary of its source keys. One implementation, so the embedded engine
//! and Spark record the same strings and the same reads.

use std::cmp::Ordering;

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::Array;
use arrow_schema::{DataType as ArrowType, TimeUnit};
use chrono::DateTime;

use crate::error::{Error, Result};
use crate::partition::Scalar;

/// Value `i` of `array` (null as `Scalar::Null`). Timestamps of any unit become microseconds
/// (UTC when the array has a time zone, the wall clock otherwise: Arrow stores both as epoch
/// offsets).
pub fn scalar_at(array: &dyn Array, i: usize) -> Result<Scalar> {
    if array.is_null(i) {
        return Ok(Scalar::Null);
    }
    Ok(match array.data_type() {
        ArrowType::Utf8 => Scalar::String(array.as_string::<i32>().value(i).to_string()),
        ArrowType::LargeUtf8 => Scalar::String(array.as_string::<i64>().value(i).to_string()),
        ArrowType::Utf8View => Scalar::String(array.as_string_view().value(i).to_string()),
        ArrowType::Int8 => Scalar::Long(array.as_primitive::<Int8Type>().value(i).into()),
        ArrowType::Int16 => Scalar::Long(array.as_primitive::<Int16Type>().value(i).into()),
        ArrowType::Int32 => Scalar::Long(array.as_primitive::<Int32Type>().value(i).into()),
        ArrowType::Int64 => Scalar::Long(array.as_primitive::<Int64Type>().value(i)),
        ArrowType::UInt8 => Scalar::Long(array.as_primitive::<UInt8Type>().value(i).into()),
        ArrowType::UInt16 => Scalar::Long(array.as_primitive::<UInt16Type>().value(i).into()),
        ArrowType::UInt32 => Scalar::Long(array.as_primitive::<UInt32Type>().value(i).into()),
        ArrowType::UInt64 => {
            let v = array.as_primitive::<UInt64Type>().value(i);
            Scalar::Long(i64::try_from(v).map_err(|_| unsupported(array, "above 2^63"))?)
        }
        ArrowType::Float32 => {
            // Through the shortest text of the f32, so 0.1f32 is recorded as 0.1, as Spark does.
            let v = array.as_primitive::<Float32Type>().value(i);
            Scalar::Double(if v.is_finite() {
                format!("{v:?}").parse().unwrap_or(f64::from(v))
            } else {
                f64::from(v)
            })
        }
        ArrowType::Float64 => Scalar::Double(array.as_primitive::<Float64Type>().value(i)),
        ArrowType::Boolean => Scalar::Boolean(array.as_boolean().value(i)),
        ArrowType::Date32 => Scalar::Date(array.as_primitive::<Date32Type>().value(i)),
        ArrowType::Timestamp(unit, tz) => {
            let v = match unit {
                TimeUnit::Second => {
                    array.as_primitive::<TimestampSecondType>().value(i) * 1_000_000
                }
                TimeUnit::Millisecond => {
                    array.as_primitive::<TimestampMillisecondType>().value(i) * 1_000
                }
                TimeUnit::Microsecond => array.as_primitive::<TimestampMicrosecondType>().value(i),
                TimeUnit::Nanosecond => array
                    .as_primitive::<TimestampNanosecondType>()
                    .value(i)
                    .div_euclid(1_000),
            };
            if tz.is_some() {
                Scalar::Timestamp(v)
            } else {
                Scalar::TimestampNtz(v)
            }
        }
        ArrowType::Decimal128(_, scale) => {
            Scalar::Decimal(array.as_primitive::<Decimal128Type>().value(i), *scale)
        }
        ArrowType::Binary => Scalar::Binary(array.as_binary::<i32>().value(i).to_vec()),
        ArrowType::LargeBinary => Scalar::Binary(array.as_binary::<i64>().value(i).to_vec()),
        _ => return Err(unsupported(array, "")),
    })
}

fn unsupported(array: &dyn Array, what: &str) -> Error {
    Error::invalid(format!(
        "values of Arrow type {}{}{what} cannot be partition values or merge keys",
        array.data_type(),
        if what.is_empty() { "" } else { " " }
    ))
}

/// The canonical partition string of every value of `array` (None for null). An empty string
/// (or empty binary) is None too: the protocol reads a recorded `""` as null, and so do delta-occ
/// and delta-rs, but delta-spark 4.4 reads it back as `''`; delta-spark itself writes `''` as
/// null, so null is the one spelling every reader agrees on (tests/test_interop_deltaspark.py).
pub fn partition_strings(array: &dyn Array) -> Result<Vec<Option<String>>> {
    (0..array.len())
        .map(|i| scalar_at(array, i).map(|s| partition_string(&s).filter(|t| !t.is_empty())))
        .collect()
}

/// A value as Delta records it in `partitionValues`: Spark's spelling of non-finite doubles,
/// timestamps as `yyyy-mm-dd HH:MM:SS.ffffff` (UTC), dates as `yyyy-mm-dd`, decimals with their
/// scale, binary as (lossy) UTF-8.
pub fn partition_string(s: &Scalar) -> Option<String> {
    Some(match s {
        Scalar::Null => return None,
        Scalar::String(v) => v.clone(),
        Scalar::Long(v) => v.to_string(),
        Scalar::Double(v) => float_text(*v),
        Scalar::Boolean(v) => v.to_string(),
        Scalar::Date(d) => date_text(*d),
        Scalar::Timestamp(us) | Scalar::TimestampNtz(us) => timestamp_text(*us),
        Scalar::Decimal(v, scale) => decimal_text(*v, *scale),
        Scalar::Binary(b) => String::from_utf8_lossy(b).into_owned(),
    })
}

/// Plain decimal text (never an exponent), with a fraction so it reads back as a double.
fn float_text(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else {
        let text = v.to_string();
        if text.contains('.') {
            text
        } else {
            text + ".0"
        }
    }
}

fn date_text(days: i32) -> String {
    DateTime::from_timestamp(i64::from(days) * 86_400, 0)
        .map(|d| d.format("%Y-%m-%d").to_string())
        .unwrap_or_else(|| days.to_string())
}

fn timestamp_text(us: i64) -> String {
    DateTime::from_timestamp_micros(us)
        .map(|d| d.format("%Y-%m-%d %H:%M:%S%.6f").to_string())
        .unwrap_or_else(|| us.to_string())
}

fn decimal_text(unscaled: i128, scale: i8) -> String {
    if scale <= 0 {
        return (unscaled * 10i128.pow(u32::from(scale.unsigned_abs()))).to_string();
    }
    let digits = unscaled.unsigned_abs().to_string();
    let scale = scale as usize;
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (int, frac) = padded.split_at(padded.len() - scale);
    format!("{}{int}.{frac}", if unscaled < 0 { "-" } else { "" })
}

/// A value as a SQL literal the core's predicate parser reads back as the same value (SQL has no
/// NaN or infinity token: those are strings the parser coerces against a double column).
pub fn sql_literal(s: &Scalar) -> String {
    match s {
        Scalar::Null => "NULL".into(),
        Scalar::Boolean(v) => if *v { "TRUE" } else { "FALSE" }.into(),
        Scalar::Long(v) => v.to_string(),
        Scalar::Decimal(v, scale) => decimal_text(*v, *scale),
        Scalar::Double(_) => {
            let text = partition_string(s).unwrap_or_default();
            if text.parse::<f64>().is_ok_and(f64::is_finite) {
                text
            } else {
                format!("'{text}'")
            }
        }
        Scalar::Date(d) => format!("DATE '{}'", date_text(*d)),
        Scalar::Timestamp(us) | Scalar::TimestampNtz(us) => {
            format!("TIMESTAMP '{}'", timestamp_text(*us))
        }
        Scalar::String(_) | Scalar::Binary(_) => {
            let text = partition_string(s).unwrap_or_default();
            format!("'{}'", text.replace('\'', "''"))
        }
    }
}

/// What a MERGE knows of one key of its source: the distinct non-null values, or (when there
/// are too many to list) their smallest and largest.
pub enum KeySummary<'a> {
    Values(&'a dyn Array),
    Range(&'a dyn Array),
}

/// MERGE's read predicate: per target key column `col IN (values)` (sorted, so every engine
/// records the same text) or `col BETWEEN lo AND hi`, with the condition's target-only
/// conjuncts; `FALSE` when a key has no value at all; None when there is nothing to narrow by.
pub fn merge_read_predicate(
    keys: &[(String, KeySummary<'_>)],
    target_only: &[String],
) -> Result<Option<String>> {
    let mut terms: Vec<String> = target_only.iter().map(|t| format!("({t})")).collect();
    for (column, summary) in keys {
        let name = format!("`{}`", column.replace('`', "``"));
        match summary {
            KeySummary::Values(array) => {
                let mut values = non_null(*array)?;
                if values.is_empty() {
                    return Ok(Some("FALSE".into()));
                }
                values.sort_by(total_order);
                values.dedup_by(|a, b| total_order(a, b) == Ordering::Equal);
                let list: Vec<String> = values.iter().map(sql_literal).collect();
                terms.push(format!("{name} IN ({})", list.join(", ")));
            }
            KeySummary::Range(array) => {
                let bounds = non_null(*array)?;
                let [lo, hi] = bounds.as_slice() else {
                    return Err(Error::invalid(format!(
                        "the range of merge key {column} must be two non-null values, got {}",
                        bounds.len()
                    )));
                };
                terms.push(format!(
                    "{name} BETWEEN {} AND {}",
                    sql_literal(lo),
                    sql_literal(hi)
                ));
            }
        }
    }
    Ok((!terms.is_empty()).then(|| terms.join(" AND ")))
}

fn non_null(array: &dyn Array) -> Result<Vec<Scalar>> {
    (0..array.len())
        .filter(|&i| array.is_valid(i))
        .map(|i| scalar_at(array, i))
        .collect()
}

/// Spark's order for values of one column: NaN above every other double.
fn total_order(a: &Scalar, b: &Scalar) -> Ordering {
    use Scalar::*;
    match (a, b) {
        (Long(x), Long(y)) => x.cmp(y),
        (Double(x), Double(y)) => x.total_cmp(y),
        (Boolean(x), Boolean(y)) => x.cmp(y),
        (Date(x), Date(y)) => x.cmp(y),
        (Timestamp(x), Timestamp(y)) | (TimestampNtz(x), TimestampNtz(y)) => x.cmp(y),
        (Decimal(x, _), Decimal(y, _)) => x.cmp(y),
        (String(x), String(y)) => x.cmp(y),
        (Binary(x), Binary(y)) => x.cmp(y),
        _ => Ordering::Equal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{
        ArrayRef, Date32Array, Decimal128Array, Float64Array, Int32Array, StringArray,
        TimestampMicrosecondArray,
    };
    use std::sync::Arc;

    fn strings(a: ArrayRef) -> Vec<Option<String>> {
        partition_strings(a.as_ref()).unwrap()
    }

    #[test]
    fn partition_strings_follow_delta_spellings() {
        let doubles = Arc::new(Float64Array::from(vec![
            Some(1.5),
            Some(1e16),
            Some(-2.5e-7),
            Some(f64::NAN),
            Some(f64::NEG_INFINITY),
            None,
        ]));
        assert_eq!(
            strings(doubles),
            vec![
                Some("1.5".into()),
                Some("10000000000000000.0".into()),
                Some("-0.00000025".into()),
                Some("NaN".into()),
                Some("-Infinity".into()),
                None
            ]
        );
        let ts = TimestampMicrosecondArray::from(vec![1_704_067_200_000_035]).with_timezone("UTC");
        assert_eq!(
            strings(Arc::new(ts)),
            vec![Some("2024-01-01 00:00:00.000035".into())]
        );
        let text = Arc::new(StringArray::from(vec![
            Some(""),
            Some(" "),
            None,
            Some("a"),
        ]));
        assert_eq!(
            strings(text),
            vec![None, Some(" ".into()), None, Some("a".into())]
        );
        let dates = Arc::new(Date32Array::from(vec![19_723]));
        assert_eq!(strings(dates), vec![Some("2024-01-01".into())]);
        let dec = Decimal128Array::from(vec![-5, 150])
            .with_precision_and_scale(5, 2)
            .unwrap();
        assert_eq!(
            strings(Arc::new(dec)),
            vec![Some("-0.05".into()), Some("1.50".into())]
        );
    }

    #[test]
    fn merge_predicate_lists_sorted_values_and_quotes_strings() {
        let s = StringArray::from(vec![Some("o'k"), None, Some("a")]);
        let ints = Int32Array::from(vec![3, 1]);
        let got = merge_read_predicate(
            &[
                ("p".into(), KeySummary::Values(&s)),
                ("id".into(), KeySummary::Range(&ints)),
            ],
            &["x > 1".into()],
        )
        .unwrap();
        assert_eq!(
            got.as_deref(),
            Some("(x > 1) AND `p` IN ('a', 'o''k') AND `id` BETWEEN 3 AND 1")
        );
        let empty = StringArray::from(vec![None::<&str>]);
        let got = merge_read_predicate(&[("p".into(), KeySummary::Values(&empty))], &[]).unwrap();
        assert_eq!(got.as_deref(), Some("FALSE"));
    }

    #[test]
    fn nan_sorts_last_and_is_quoted() {
        let d = Float64Array::from(vec![f64::NAN, 2.0, -1.0]);
        let got = merge_read_predicate(&[("x".into(), KeySummary::Values(&d))], &[]).unwrap();
        assert_eq!(got.as_deref(), Some("`x` IN (-1.0, 2.0, 'NaN')"));
    }
}
