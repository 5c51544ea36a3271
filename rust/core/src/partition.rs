//! Partition values: strings in the log, typed per the schema (protocol-notes.md §10).

use chrono::{NaiveDate, NaiveDateTime};

use crate::schema::DataType;

#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    Null,
    String(String),
    Long(i64),
    Double(f64),
    Boolean(bool),
    /// Days since the epoch.
    Date(i32),
    /// Microseconds since the epoch (UTC for `timestamp`, wall clock for `timestamp_ntz`).
    Timestamp(i64),
    TimestampNtz(i64),
    /// Unscaled value and scale.
    Decimal(i128, i8),
    Binary(Vec<u8>),
}

/// The raw value of the partition column with this physical name: exact match first, then
/// ignoring case (writers differ in the case they record). `None` for null or absent.
pub fn raw_value<'a>(
    pv: &'a crate::log::actions::PartitionValues,
    physical: &str,
) -> Option<&'a str> {
    pv.iter()
        .find(|(k, _)| **k == *physical)
        .or_else(|| pv.iter().find(|(k, _)| k.eq_ignore_ascii_case(physical)))
        .and_then(|(_, v)| v.as_deref())
}

/// Parse a serialized partition value. An empty string or null is SQL NULL.
pub fn parse(value: Option<&str>, data_type: &DataType) -> Result<Scalar, String> {
    let Some(v) = value.filter(|v| !v.is_empty()) else {
        return Ok(Scalar::Null);
    };
    let bad = |what: &str| format!("partition value {v:?} is not a valid {what}");
    Ok(match data_type {
        DataType::Primitive(p) => match p.as_str() {
            "string" => Scalar::String(v.to_string()),
            "long" | "integer" | "short" | "byte" => {
                let n: i64 = v.trim().parse().map_err(|_| bad(p))?;
                let (lo, hi) = match p.as_str() {
                    "integer" => (i32::MIN as i64, i32::MAX as i64),
                    "short" => (i16::MIN as i64, i16::MAX as i64),
                    "byte" => (i8::MIN as i64, i8::MAX as i64),
                    _ => (i64::MIN, i64::MAX),
                };
                if n < lo || n > hi {
                    return Err(bad(p));
                }
                Scalar::Long(n)
            }
            "float" | "double" => Scalar::Double(v.trim().parse().map_err(|_| bad(p))?),
            "boolean" => match v.to_ascii_lowercase().as_str() {
                "true" => Scalar::Boolean(true),
                "false" => Scalar::Boolean(false),
                _ => return Err(bad("boolean")),
            },
            "date" => Scalar::Date(parse_date(v).ok_or_else(|| bad("date (yyyy-mm-dd)"))?),
            "timestamp" => Scalar::Timestamp(parse_timestamp(v).ok_or_else(|| bad("timestamp"))?),
            "timestamp_ntz" => {
                Scalar::TimestampNtz(parse_timestamp(v).ok_or_else(|| bad("timestamp_ntz"))?)
            }
            "binary" => Scalar::Binary(v.as_bytes().to_vec()),
            other => {
                return Err(format!(
                    "partition columns of type {other} are not supported"
                ))
            }
        },
        DataType::Decimal(_, scale) => Scalar::Decimal(
            parse_decimal(v, *scale).ok_or_else(|| bad("decimal"))?,
            *scale,
        ),
        other => {
            return Err(format!(
                "partition columns of type {other:?} are not supported"
            ))
        }
    })
}

fn parse_date(v: &str) -> Option<i32> {
    let d = NaiveDate::parse_from_str(v.trim(), "%Y-%m-%d").ok()?;
    Some((d - NaiveDate::from_ymd_opt(1970, 1, 1)?).num_days() as i32)
}

/// `yyyy-mm-dd HH:MM:SS[.ffffff]` or ISO-8601 with `T` and an optional `Z`/offset.
pub fn parse_timestamp(v: &str) -> Option<i64> {
    let v = v.trim();
    if let Ok(dt) = chrono::DateTime::parse_from_rfc3339(v) {
        return Some(dt.timestamp_micros());
    }
    for fmt in [
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%dT%H:%M:%S",
    ] {
        if let Ok(dt) = NaiveDateTime::parse_from_str(v.trim_end_matches('Z'), fmt) {
            return Some(dt.and_utc().timestamp_micros());
        }
    }
    NaiveDate::parse_from_str(v, "%Y-%m-%d")
        .ok()
        .map(|d| d.and_hms_opt(0, 0, 0).unwrap().and_utc().timestamp_micros())
}

fn parse_decimal(v: &str, scale: i8) -> Option<i128> {
    let v = v.trim();
    let (neg, digits) = match v.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, v.strip_prefix('+').unwrap_or(v)),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    if int.is_empty() && frac.is_empty()
        || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let scale = scale.max(0) as usize;
    if frac.len() > scale && frac[scale..].bytes().any(|b| b != b'0') {
        return None;
    }
    let mut text = String::from(int);
    text.push_str(&format!("{:0<scale$}", &frac[..frac.len().min(scale)]));
    let n: i128 = if text.is_empty() {
        0
    } else {
        text.parse().ok()?
    };
    Some(if neg { -n } else { n })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(t: &str) -> DataType {
        DataType::Primitive(t.into())
    }

    #[test]
    fn typed_values() {
        assert_eq!(parse(Some("42"), &p("integer")), Ok(Scalar::Long(42)));
        assert!(parse(Some("300"), &p("byte")).is_err());
        assert_eq!(parse(None, &p("integer")), Ok(Scalar::Null));
        assert_eq!(parse(Some(""), &p("string")), Ok(Scalar::Null));
        assert_eq!(
            parse(Some("2021-09-08"), &p("date")),
            Ok(Scalar::Date(18878))
        );
        // golden kernel-timestamp-partition-col-ISO8601: 2024-01-01T10:00:00.000000Z = 1704103200000000 µs
        assert_eq!(
            parse(Some("2024-01-01T10:00:00.000000Z"), &p("timestamp")),
            Ok(Scalar::Timestamp(1704103200000000))
        );
        assert_eq!(
            parse(Some("2024-01-01 10:00:00"), &p("timestamp")),
            Ok(Scalar::Timestamp(1704103200000000))
        );
        assert_eq!(
            parse(Some("1.50"), &DataType::Decimal(5, 2)),
            Ok(Scalar::Decimal(150, 2))
        );
        assert_eq!(
            parse(Some("-3"), &DataType::Decimal(5, 2)),
            Ok(Scalar::Decimal(-300, 2))
        );
        assert!(parse(Some("1.234"), &DataType::Decimal(5, 2)).is_err());
        assert_eq!(
            parse(Some("TRUE"), &p("boolean")),
            Ok(Scalar::Boolean(true))
        );
        assert!(parse(Some("x"), &p("double")).is_err());
    }
}
