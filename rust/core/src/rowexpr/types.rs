//! Types of row expressions: the common type two operands are compared or combined in (Spark's
//! implicit widening), and literals read as a given type.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::TimestampMicrosecondType;
use arrow_array::{new_null_array, Array, ArrayRef, Decimal128Array, Float64Array, Int64Array};
use arrow_cast::{cast_with_options, CastOptions};
use arrow_schema::{DataType, TimeUnit};

use super::zone::{self, Zone};

/// Strict casts: a value that does not convert is an error, never a NULL (Spark's ANSI mode).
pub const STRICT: CastOptions<'static> = CastOptions {
    safe: false,
    format_options: arrow_cast::display::FormatOptions::new(),
};

pub fn cast(a: &ArrayRef, to: &DataType) -> Result<ArrayRef, String> {
    if a.data_type() == to {
        return Ok(a.clone());
    }
    if let DataType::Timestamp(unit, Some(tz)) = to {
        // Timestamps are UTC instants whatever the zone label: convert the unit with no zone
        // (or the source's own), then relabel. arrow would otherwise need a zone database.
        let naive = DataType::Timestamp(*unit, None);
        let v = match a.data_type() {
            DataType::Timestamp(_, Some(from)) => {
                let same = DataType::Timestamp(*unit, Some(from.clone()));
                cast_with_options(a, &same, &STRICT).map_err(|e| e.to_string())?
            }
            _ => cast_with_options(a, &naive, &STRICT).map_err(|e| e.to_string())?,
        };
        return relabel(&v, &DataType::Timestamp(*unit, Some(tz.clone())));
    }
    if let (DataType::Timestamp(_, Some(_)), DataType::Timestamp(unit, None)) = (a.data_type(), to)
    {
        let v = relabel(a, &DataType::Timestamp(time_unit(a.data_type()), None))?;
        return cast_with_options(&v, &DataType::Timestamp(*unit, None), &STRICT)
            .map_err(|e| e.to_string());
    }
    match (a.data_type(), to) {
        // Spark prints `yyyy-MM-dd HH:mm:ss[.ffffff]`; arrow would print an RFC 3339 text. A
        // zoned timestamp reaching here is read in UTC (zone-dependent casts are cast_zoned's).
        (DataType::Timestamp(..), DataType::Utf8) => {
            let us = micros(a)?;
            let out: arrow_array::StringArray = us
                .iter()
                .map(|o| {
                    o.map(|v| zone::format_wall_clock(v).ok_or("timestamp out of range"))
                        .transpose()
                })
                .collect::<Result<_, _>>()?;
            Ok(Arc::new(out))
        }
        // Arrow reads a zone label as a zone to convert into; for a UTC instant that is the date
        // of the UTC wall clock, which the label-free cast computes without a zone database.
        (DataType::Timestamp(u, Some(_)), DataType::Date32) => {
            let v = relabel(a, &DataType::Timestamp(*u, None))?;
            cast_with_options(&v, to, &STRICT).map_err(|e| e.to_string())
        }
        _ => cast_with_options(a, to, &STRICT).map_err(|e| e.to_string()),
    }
}

/// A timestamp array (any unit, zoned or not) as microseconds, its label kept.
fn micros(a: &ArrayRef) -> Result<arrow_array::TimestampMicrosecondArray, String> {
    let tz = match a.data_type() {
        DataType::Timestamp(_, tz) => tz.clone(),
        other => return Err(format!("expected a timestamp, got {other}")),
    };
    let v = cast(a, &DataType::Timestamp(TimeUnit::Microsecond, tz))?;
    Ok(v.as_primitive::<TimestampMicrosecondType>().clone())
}

/// How a value of `from` becomes a `to`, step by step, each marked when it depends on the
/// session time zone: only instant <-> wall clock (TIMESTAMP <-> TIMESTAMP_NTZ) and text read as
/// an instant do; a TIMESTAMP becomes a DATE or a STRING through its wall clock, a DATE becomes a
/// TIMESTAMP through its midnight (Spark's casts in the session zone).
pub fn cast_steps(from: &DataType, to: &DataType) -> Vec<(DataType, bool)> {
    use DataType as T;
    let ntz = T::Timestamp(TimeUnit::Microsecond, None);
    match (from, to) {
        (T::Timestamp(_, Some(_)), T::Date32 | T::Utf8) => {
            vec![(ntz, true), (to.clone(), false)]
        }
        (T::Date32, T::Timestamp(_, Some(_))) => vec![(ntz, false), (to.clone(), true)],
        (T::Timestamp(_, Some(_)), T::Timestamp(_, None))
        | (T::Timestamp(_, None) | T::Utf8, T::Timestamp(_, Some(_))) => {
            vec![(to.clone(), true)]
        }
        _ => vec![(to.clone(), false)],
    }
}

/// [`cast`] in the session time zone `zone` (one step of [`cast_steps`]).
pub fn cast_zoned(a: &ArrayRef, to: &DataType, zone: &str) -> Result<ArrayRef, String> {
    use DataType as T;
    let steps = cast_steps(a.data_type(), to);
    if steps.len() > 1 {
        let mut v = a.clone();
        for (t, _) in steps {
            v = cast_zoned(&v, &t, zone)?;
        }
        return Ok(v);
    }
    let z = Zone::parse(zone)?;
    let us = DataType::Timestamp(TimeUnit::Microsecond, None);
    let out: ArrayRef = match (a.data_type(), to) {
        (T::Timestamp(_, Some(_)), T::Timestamp(_, None)) => {
            let v = micros(a)?;
            let local: arrow_array::TimestampMicrosecondArray = v
                .iter()
                .map(|o| o.map(|x| z.to_local(x)).transpose())
                .collect::<Result<_, _>>()?;
            Arc::new(local)
        }
        (T::Timestamp(_, None), T::Timestamp(_, Some(label))) => {
            let v = micros(a)?;
            let utc: arrow_array::TimestampMicrosecondArray = v
                .iter()
                .map(|o| o.map(|x| z.to_utc(x, None)).transpose())
                .collect::<Result<_, _>>()?;
            Arc::new(utc.with_timezone(label.clone()))
        }
        (T::Utf8, T::Timestamp(_, Some(label))) => {
            let texts = a.as_string::<i32>();
            let instant = DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into()));
            let one = |s: &str, t: &DataType| -> Result<i64, String> {
                let x: ArrayRef = Arc::new(arrow_array::StringArray::from(vec![s]));
                let v = cast_with_options(&x, t, &STRICT).map_err(|e| e.to_string())?;
                Ok(v.as_primitive::<TimestampMicrosecondType>().value(0))
            };
            let utc: arrow_array::TimestampMicrosecondArray = texts
                .iter()
                .map(|o| {
                    o.map(|s| {
                        if zone::has_zone(s) {
                            one(s, &instant) // the text names its own offset
                        } else {
                            z.to_utc(one(s, &us)?, None)
                        }
                    })
                    .transpose()
                })
                .collect::<Result<_, _>>()?;
            Arc::new(utc.with_timezone(label.clone()))
        }
        _ => return cast(a, to),
    };
    cast(&out, to)
}

fn time_unit(t: &DataType) -> TimeUnit {
    match t {
        DataType::Timestamp(u, _) => *u,
        _ => TimeUnit::Microsecond,
    }
}

/// The same values under another type of the same layout (a timestamp's zone label).
fn relabel(a: &ArrayRef, to: &DataType) -> Result<ArrayRef, String> {
    let data = a
        .to_data()
        .into_builder()
        .data_type(to.clone())
        .build()
        .map_err(|e| e.to_string())?;
    Ok(arrow_array::make_array(data))
}

pub fn is_integer(t: &DataType) -> bool {
    t.is_integer()
}

pub fn is_float(t: &DataType) -> bool {
    matches!(t, DataType::Float16 | DataType::Float32 | DataType::Float64)
}

pub fn is_decimal(t: &DataType) -> bool {
    matches!(t, DataType::Decimal128(..))
}

pub fn is_numeric(t: &DataType) -> bool {
    is_integer(t) || is_float(t) || is_decimal(t)
}

pub fn is_string(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

fn is_binary(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView
    )
}

/// Decimal digits needed for any value of an integer type (Spark: INT is DECIMAL(10,0)).
fn integer_digits(t: &DataType) -> u8 {
    match t {
        DataType::Int8 | DataType::UInt8 => 3,
        DataType::Int16 | DataType::UInt16 => 5,
        DataType::Int32 | DataType::UInt32 => 10,
        _ => 20,
    }
}

fn integer_rank(t: &DataType) -> u8 {
    match t {
        DataType::Int8 => 1,
        DataType::UInt8 | DataType::Int16 => 2,
        DataType::UInt16 | DataType::Int32 => 3,
        DataType::UInt32 | DataType::Int64 => 4,
        _ => 5, // UInt64
    }
}

fn integer_of_rank(r: u8) -> DataType {
    match r {
        1 => DataType::Int8,
        2 => DataType::Int16,
        3 => DataType::Int32,
        4 => DataType::Int64,
        _ => DataType::Decimal128(20, 0),
    }
}

fn decimal(precision: u8, scale: i8) -> DataType {
    DataType::Decimal128(precision.min(38), scale)
}

/// The type both sides are converted to before they are compared or combined; `None` when they
/// cannot be (a string and a number, a date and a boolean...).
pub fn common(a: &DataType, b: &DataType) -> Option<DataType> {
    use DataType as T;
    if a == b {
        return Some(a.clone());
    }
    Some(match (a, b) {
        (T::Null, o) | (o, T::Null) => o.clone(),
        _ if is_integer(a) && is_integer(b) => {
            integer_of_rank(integer_rank(a).max(integer_rank(b)))
        }
        (T::Float32, T::Float32) => T::Float32,
        _ if (is_float(a) && is_numeric(b)) || (is_float(b) && is_numeric(a)) => T::Float64,
        (T::Decimal128(p1, s1), T::Decimal128(p2, s2)) => {
            let s = *s1.max(s2);
            let int = (*p1 as i16 - *s1 as i16).max(*p2 as i16 - *s2 as i16);
            decimal((int + s as i16).clamp(1, 38) as u8, s)
        }
        (T::Decimal128(p, s), i) | (i, T::Decimal128(p, s)) if is_integer(i) => {
            let int = (*p as i16 - *s as i16).max(integer_digits(i) as i16);
            decimal((int + *s as i16).clamp(1, 38) as u8, *s)
        }
        _ if is_string(a) && is_string(b) => T::Utf8,
        _ if is_binary(a) && is_binary(b) => T::Binary,
        (T::Date32, T::Timestamp(u, tz)) | (T::Timestamp(u, tz), T::Date32) => {
            T::Timestamp(*u, tz.clone())
        }
        (T::Timestamp(u1, tz1), T::Timestamp(u2, tz2)) => {
            T::Timestamp(finer(*u1, *u2), tz1.clone().or_else(|| tz2.clone()))
        }
        _ => return None,
    })
}

fn finer(a: TimeUnit, b: TimeUnit) -> TimeUnit {
    let rank = |u: TimeUnit| match u {
        TimeUnit::Second => 0,
        TimeUnit::Millisecond => 1,
        TimeUnit::Microsecond => 2,
        TimeUnit::Nanosecond => 3,
    };
    if rank(a) >= rank(b) {
        a
    } else {
        b
    }
}

/// The type a column is evaluated in: dictionaries decoded, string and binary flavours unified,
/// DATE64 as DATE.
pub fn evaluated(t: &DataType) -> DataType {
    match t {
        DataType::Dictionary(_, v) => evaluated(v),
        DataType::LargeUtf8 | DataType::Utf8View => DataType::Utf8,
        DataType::LargeBinary | DataType::BinaryView => DataType::Binary,
        DataType::Date64 => DataType::Date32,
        other => other.clone(),
    }
}

/// A SQL number literal (`42`, `-1.5`, `1e3`) as a one-value array, read as `hint` when it is a
/// number type the value fits. Without one: BIGINT for integers (DECIMAL(38,0) beyond), DOUBLE
/// for the rest.
pub fn number(text: &str, hint: Option<&DataType>) -> Result<ArrayRef, String> {
    let integral = !text.contains(['.', 'e', 'E']);
    let own: ArrayRef = match (integral, text.parse::<i64>()) {
        (true, Ok(v)) => Arc::new(Int64Array::from(vec![v])),
        (true, Err(_)) => match text.parse::<i128>() {
            Ok(v) if v.unsigned_abs() < 10u128.pow(38) => Arc::new(
                Decimal128Array::from(vec![v])
                    .with_precision_and_scale(38, 0)
                    .map_err(|e| e.to_string())?,
            ),
            _ => Arc::new(Float64Array::from(vec![parse_f64(text)?])),
        },
        (false, _) => Arc::new(Float64Array::from(vec![parse_f64(text)?])),
    };
    let Some(h) = hint.filter(|h| is_numeric(h)) else {
        return Ok(own);
    };
    if let DataType::Decimal128(p, s) = h {
        if let Some(v) = exact_decimal(text, *s) {
            if v.unsigned_abs() < 10u128.pow(*p as u32) {
                return Ok(Arc::new(
                    Decimal128Array::from(vec![v])
                        .with_precision_and_scale(*p, *s)
                        .map_err(|e| e.to_string())?,
                ));
            }
        }
        // More digits than the column's scale: compared in a wider decimal, exactly.
        if let Some((v, scale)) = decimal_digits(text) {
            let p = digits(v).max(scale.max(0) as u8 + 1).min(38);
            return Ok(Arc::new(
                Decimal128Array::from(vec![v])
                    .with_precision_and_scale(p, scale)
                    .map_err(|e| e.to_string())?,
            ));
        }
        return Ok(own);
    }
    if is_integer(h) && !integral {
        // 1.5 against an integer column: a DECIMAL literal, compared exactly (Spark).
        if let Some((v, scale)) = decimal_digits(text) {
            let p = digits(v).max(scale.max(0) as u8 + 1);
            if p <= 38 {
                let d = Decimal128Array::from(vec![v]).with_precision_and_scale(p, scale);
                return Ok(Arc::new(d.map_err(|e| e.to_string())?));
            }
        }
        return Ok(own);
    }
    Ok(cast(&own, h).unwrap_or(own))
}

fn digits(v: i128) -> u8 {
    let mut n = 1u8;
    let mut x = v.unsigned_abs();
    while x >= 10 {
        x /= 10;
        n += 1;
    }
    n
}

fn parse_f64(text: &str) -> Result<f64, String> {
    text.parse::<f64>()
        .map_err(|_| format!("{text} is not a number"))
}

/// `text` (digits with an optional fraction, no exponent) as an unscaled value at `scale`, when
/// exact.
fn exact_decimal(text: &str, scale: i8) -> Option<i128> {
    let (v, s) = decimal_digits(text)?;
    if s > scale {
        return None;
    }
    v.checked_mul(10i128.checked_pow((scale - s) as u32)?)
}

/// `text` as (unscaled value, scale) when it is a plain decimal number.
fn decimal_digits(text: &str) -> Option<(i128, i8)> {
    if text.contains(['e', 'E']) {
        return None;
    }
    let (neg, body) = match text.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (int, frac) = body.split_once('.').unwrap_or((body, ""));
    if frac.len() > 38 || (int.is_empty() && frac.is_empty()) {
        return None;
    }
    let all: String = format!("{int}{frac}");
    let v: i128 = if all.is_empty() { 0 } else { all.parse().ok()? };
    Some((if neg { -v } else { v }, frac.len() as i8))
}

/// A NULL of `t` as a one-value array.
pub fn null_of(t: &DataType) -> ArrayRef {
    new_null_array(t, 1)
}

/// A string literal read as `to` (a DATE, TIMESTAMP, number or BOOLEAN column it is compared
/// with). A zone-less timestamp text is a wall clock of the session zone `zone`.
pub fn string_as(text: &str, to: &DataType, zone: &str) -> Result<ArrayRef, String> {
    let s: ArrayRef = Arc::new(arrow_array::StringArray::from(vec![text]));
    cast_zoned(&s, to, zone)
        .map_err(|e| format!("literal {text:?} cannot be read as {}: {e}", type_name(to)))
}

/// The Delta name of an Arrow type, for messages (as the `where` resolver words them).
pub fn type_name(t: &DataType) -> String {
    use DataType as T;
    match t {
        T::Int8 => "byte".into(),
        T::Int16 => "short".into(),
        T::Int32 => "integer".into(),
        T::Int64 => "long".into(),
        T::Float32 => "float".into(),
        T::Float64 => "double".into(),
        T::Utf8 | T::LargeUtf8 | T::Utf8View => "string".into(),
        T::Binary | T::LargeBinary | T::BinaryView => "binary".into(),
        T::Boolean => "boolean".into(),
        T::Date32 | T::Date64 => "date".into(),
        T::Timestamp(_, Some(_)) => "timestamp".into(),
        T::Timestamp(_, None) => "timestamp_ntz".into(),
        T::Decimal128(p, s) => format!("decimal({p},{s})"),
        T::Null => "void".into(),
        other => other.to_string().to_lowercase(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::Decimal128Type;

    #[test]
    fn common_types_widen_like_spark() {
        use DataType as T;
        assert_eq!(common(&T::Int32, &T::Int64), Some(T::Int64));
        assert_eq!(common(&T::Int32, &T::Float64), Some(T::Float64));
        assert_eq!(
            common(&T::Int64, &T::Decimal128(10, 2)),
            Some(T::Decimal128(22, 2))
        );
        assert_eq!(
            common(&T::Decimal128(5, 1), &T::Decimal128(4, 3)),
            Some(T::Decimal128(7, 3))
        );
        assert_eq!(common(&T::Utf8, &T::Int64), None);
        assert_eq!(common(&T::Null, &T::Date32), Some(T::Date32));
    }

    #[test]
    fn number_literals_take_the_column_type_when_exact() {
        let d = number("12.5", Some(&DataType::Decimal128(10, 2))).unwrap();
        assert_eq!(d.data_type(), &DataType::Decimal128(10, 2));
        assert_eq!(d.as_primitive::<Decimal128Type>().value(0), 1250);
        let f = number("1.5", Some(&DataType::Int32)).unwrap();
        assert_eq!(f.data_type(), &DataType::Decimal128(2, 1));
        let i = number("7", Some(&DataType::Int16)).unwrap();
        assert_eq!(i.data_type(), &DataType::Int16);
        let big = number("99999999999999999999", None).unwrap();
        assert_eq!(big.data_type(), &DataType::Decimal128(38, 0));
    }

    #[test]
    fn string_literals_read_as_the_column_type() {
        let ts = string_as(
            "2024-01-02 03:04:05",
            &DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            "UTC",
        )
        .unwrap();
        assert_eq!(ts.len(), 1);
        assert!(string_as("abc", &DataType::Int64, "UTC")
            .unwrap_err()
            .contains("cannot be read as long"));
    }
}
