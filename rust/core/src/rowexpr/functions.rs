//! The SQL functions the evaluator knows, and LIKE.

use std::sync::Arc;

use arrow_arith::temporal::{date_part, DatePart};
use arrow_arith::{boolean as bool_ops, numeric};
use arrow_array::cast::AsArray;
use arrow_array::types::{
    Decimal128Type, Float32Type, Float64Type, Int32Type, Int64Type, IntervalYearMonthType,
    TimestampMicrosecondType,
};
use arrow_array::{
    Array, ArrayRef, BooleanArray, Decimal128Array, Int32Array, Int64Array, PrimitiveArray,
    StringArray,
};
use arrow_ord::cmp;
use arrow_schema::DataType;
use arrow_select::zip::zip;
use arrow_string::regexp::regexp_is_match_scalar;
use chrono::Datelike;

use super::pattern::like as like_one;
use super::value::Val;
use super::zone::Zone;
use super::{types, Func, TruncUnit};

type R<T> = std::result::Result<T, String>;

pub fn apply(f: Func, args: &[Val], ty: &DataType, rows: usize) -> R<Val> {
    let refs: Vec<&Val> = args.iter().collect();
    let x = &args[0];
    let out: ArrayRef = match f {
        Func::Upper => strings(x, |s| s.to_uppercase()),
        Func::Lower => strings(x, |s| s.to_lowercase()),
        // Spark's trim removes spaces only, not other whitespace.
        Func::Trim => strings(x, |s| s.trim_matches(' ').to_string()),
        Func::Length => Arc::new(
            x.arr
                .as_string::<i32>()
                .iter()
                .map(|o| o.map(|s| s.chars().count() as i32))
                .collect::<Int32Array>(),
        ),
        Func::Abs => abs(x)?,
        Func::Floor | Func::Ceil => floor_ceil(x, f == Func::Floor, ty)?,
        Func::Round => {
            let digits = match args.get(1) {
                Some(d) => d
                    .arr
                    .as_primitive::<arrow_array::types::Int32Type>()
                    .value(0),
                None => 0,
            };
            round(x, digits)?
        }
        Func::Coalesce => {
            let len = if args.iter().all(|a| a.scalar) {
                1
            } else {
                rows
            };
            let mut acc = x.expand(len).map_err(|e| e.to_string())?;
            for next in &args[1..] {
                let present = bool_ops::is_not_null(acc.as_ref()).map_err(|e| e.to_string())?;
                acc = zip(&present, &acc.clone(), next).map_err(|e| e.to_string())?;
            }
            acc
        }
        Func::Concat => {
            let len = if args.iter().all(|a| a.scalar) {
                1
            } else {
                rows
            };
            let cols: Vec<ArrayRef> = args
                .iter()
                .map(|a| a.expand(len))
                .collect::<Result<_, _>>()
                .map_err(|e| e.to_string())?;
            let strs: Vec<&StringArray> = cols.iter().map(|c| c.as_string::<i32>()).collect();
            let mut buf = String::new();
            let out: StringArray = (0..len)
                .map(|i| {
                    buf.clear();
                    for s in &strs {
                        if s.is_null(i) {
                            return None;
                        }
                        buf.push_str(s.value(i));
                    }
                    Some(buf.clone())
                })
                .collect();
            Arc::new(out)
        }
        Func::DateAdd | Func::DateSub | Func::DateDiff => {
            // Days as INT, checked (a date beyond INT days is an overflow error, as in Spark).
            let days = |v: &Val| -> R<Val> {
                Ok(Val {
                    arr: types::cast(&v.arr, &DataType::Int32)?,
                    scalar: v.scalar,
                })
            };
            let (a, b) = (days(x)?, days(&args[1])?);
            let out = if f == Func::DateSub || f == Func::DateDiff {
                numeric::sub(&a, &b)
            } else {
                numeric::add(&a, &b)
            }
            .map_err(|e| format!("{}: {e}", func_label(f)))?;
            if f == Func::DateDiff {
                out
            } else {
                types::cast(&out, &DataType::Date32)?
            }
        }
        Func::AddMonths => {
            // arrow adds calendar months clamping the day to the month's last (Spark's rule).
            let n = &args[1];
            let months: PrimitiveArray<IntervalYearMonthType> =
                n.arr.as_primitive::<Int32Type>().reinterpret_cast();
            let months = Val {
                arr: Arc::new(months),
                scalar: n.scalar,
            };
            numeric::add(x, &months).map_err(|e| format!("add_months: {e}"))?
        }
        Func::Year | Func::Month | Func::Day => {
            let part = match f {
                Func::Year => DatePart::Year,
                Func::Month => DatePart::Month,
                _ => DatePart::Day,
            };
            date_part(x.arr.as_ref(), part).map_err(|e| e.to_string())?
        }
        Func::Substring => substring(args, rows)?,
        Func::AddMicros => {
            let ty = x.arr.data_type().clone();
            let raw = Val {
                arr: types::cast(&x.arr, &DataType::Int64)?,
                scalar: x.scalar,
            };
            let out =
                numeric::add(&raw, &args[1]).map_err(|e| format!("timestamp overflow: {e}"))?;
            types::cast(&out, &ty)?
        }
    };
    Ok(Val::result(out, &refs))
}

fn func_label(f: Func) -> &'static str {
    super::export::func_name(f)
}

/// Spark's substring (UTF8String.substringSQL): 1-based; a negative position counts from the
/// end; 0 is the first character; a length below 1 gives ''; characters, not bytes.
fn substring(args: &[Val], rows: usize) -> R<ArrayRef> {
    let len = if args.iter().all(|a| a.scalar) {
        1
    } else {
        rows
    };
    let cols: Vec<ArrayRef> = args
        .iter()
        .map(|a| a.expand(len))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    let s = cols[0].as_string::<i32>();
    let pos = cols[1].as_primitive::<Int32Type>();
    let count = cols.get(2).map(|c| c.as_primitive::<Int32Type>());
    let out: StringArray = (0..len)
        .map(|i| {
            if s.is_null(i) || pos.is_null(i) || count.is_some_and(|c| c.is_null(i)) {
                return None;
            }
            let text = s.value(i);
            let n = text.chars().count() as i64;
            let p = pos.value(i) as i64;
            let start = if p > 0 {
                p - 1
            } else if p < 0 {
                n + p
            } else {
                0
            };
            let end = match count {
                Some(c) => start + c.value(i) as i64,
                None => i64::MAX,
            };
            let start = start.max(0);
            let end = end.min(n);
            if start >= end {
                return Some(String::new());
            }
            Some(
                text.chars()
                    .skip(start as usize)
                    .take((end - start) as usize)
                    .collect(),
            )
        })
        .collect();
    Ok(Arc::new(out))
}

/// Whether `regex` (already a Rust pattern) compiles, and matches nothing surprising.
pub fn check_regex(regex: &str) -> R<()> {
    let empty = StringArray::from(Vec::<&str>::new());
    regexp_is_match_scalar(&empty, regex, None)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// RLIKE: a match anywhere in the value (Java's `find()`).
pub fn rlike(values: &StringArray, regex: &str) -> R<BooleanArray> {
    regexp_is_match_scalar(values, regex, None).map_err(|e| e.to_string())
}

/// date_trunc on µs values (zoned: instants truncated in `zone`'s wall clock, as Spark's
/// DateTimeUtils.truncTimestamp: seconds and finer on the instant, minutes to days keeping the
/// offset, weeks and longer from the local midnight).
pub fn date_trunc(x: &Val, unit: TruncUnit, zone: &str) -> R<ArrayRef> {
    const S: i64 = 1_000_000;
    const DAY: i64 = 86_400 * S;
    let ty = x.arr.data_type().clone();
    let zoned = matches!(ty, DataType::Timestamp(_, Some(_)));
    let z = Zone::parse(zone)?;
    let floor = |v: i64, m: i64| v - v.rem_euclid(m);
    let local_trunc = |local: i64| -> R<i64> {
        Ok(match unit {
            TruncUnit::Minute => floor(local, 60 * S),
            TruncUnit::Hour => floor(local, 3600 * S),
            TruncUnit::Day => floor(local, DAY),
            TruncUnit::Week => {
                let days = local.div_euclid(DAY);
                // 1970-01-01 was a Thursday: Monday-based weekday index 3.
                (days - (days + 3).rem_euclid(7)) * DAY
            }
            _ => {
                let d = chrono::DateTime::from_timestamp_micros(local)
                    .ok_or("timestamp out of range")?
                    .date_naive();
                let (y, m) = (d.year(), d.month());
                let m = match unit {
                    TruncUnit::Year => 1,
                    TruncUnit::Quarter => (m - 1) / 3 * 3 + 1,
                    _ => m,
                };
                let first = chrono::NaiveDate::from_ymd_opt(y, m, 1).ok_or("date out of range")?;
                first
                    .and_hms_opt(0, 0, 0)
                    .expect("midnight")
                    .and_utc()
                    .timestamp_micros()
            }
        })
    };
    let v = x.arr.as_primitive::<TimestampMicrosecondType>();
    let out: PrimitiveArray<TimestampMicrosecondType> = v
        .iter()
        .map(|o| {
            o.map(|t| -> R<i64> {
                match unit {
                    TruncUnit::Microsecond => return Ok(t),
                    TruncUnit::Millisecond => return Ok(floor(t, 1_000)),
                    TruncUnit::Second => return Ok(floor(t, S)),
                    _ => {}
                }
                if !zoned {
                    return local_trunc(t);
                }
                let off = z.offset_seconds(t)?;
                let local = local_trunc(t + off * S)?;
                let prefer = matches!(unit, TruncUnit::Minute | TruncUnit::Hour | TruncUnit::Day)
                    .then_some(off);
                z.to_utc(local, prefer)
            })
            .transpose()
        })
        .collect::<R<_>>()?;
    Ok(Arc::new(out.with_data_type(ty)))
}

fn strings(x: &Val, f: impl Fn(&str) -> String) -> ArrayRef {
    Arc::new(
        x.arr
            .as_string::<i32>()
            .iter()
            .map(|o| o.map(&f))
            .collect::<StringArray>(),
    )
}

fn abs(x: &Val) -> R<ArrayRef> {
    Ok(match x.arr.data_type() {
        DataType::Float64 => Arc::new(
            x.arr
                .as_primitive::<Float64Type>()
                .unary::<_, Float64Type>(f64::abs),
        ),
        DataType::Float32 => Arc::new(
            x.arr
                .as_primitive::<Float32Type>()
                .unary::<_, Float32Type>(f32::abs),
        ),
        _ => {
            // Integers and decimals: -x where x < 0 (checked: abs of the minimum overflows).
            let zero = types::cast(
                &(Arc::new(Int64Array::from(vec![0i64])) as ArrayRef),
                x.arr.data_type(),
            )?;
            let negative =
                cmp::lt(x, &arrow_array::Scalar::new(zero)).map_err(|e| e.to_string())?;
            let negative = BooleanArray::new(
                match negative.nulls() {
                    Some(v) => negative.values() & v.inner(),
                    None => negative.values().clone(),
                },
                None,
            );
            let neg = negated_where(x, &negative)?;
            zip(&negative, &neg, x).map_err(|e| e.to_string())?
        }
    })
}

/// `-x` on the selected rows (the others keep x), so only a selected minimum overflows.
fn negated_where(x: &Val, selected: &BooleanArray) -> R<ArrayRef> {
    let picked =
        arrow_select::filter::filter(x.arr.as_ref(), selected).map_err(|e| e.to_string())?;
    let neg = numeric::neg(picked.as_ref()).map_err(|e| format!("arithmetic overflow: {e}"))?;
    let mut pick = Vec::with_capacity(selected.len());
    let mut j = 0;
    for i in 0..selected.len() {
        if selected.value(i) {
            pick.push((1, j));
            j += 1;
        } else {
            pick.push((0, i));
        }
    }
    arrow_select::interleave::interleave(&[x.arr.as_ref(), neg.as_ref()], &pick)
        .map_err(|e| e.to_string())
}

fn floor_ceil(x: &Val, floor: bool, ty: &DataType) -> R<ArrayRef> {
    let f = |v: f64| if floor { v.floor() } else { v.ceil() };
    Ok(match x.arr.data_type() {
        DataType::Float64 | DataType::Float32 => {
            let d = types::cast(&x.arr, &DataType::Float64)?;
            let out: PrimitiveArray<Int64Type> = d
                .as_primitive::<Float64Type>()
                .iter()
                .map(|o| {
                    o.map(|v| {
                        let r = f(v);
                        // Beyond BIGINT (or NaN): an error, never a silent wrap or 0.
                        if (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&r) {
                            Ok(r as i64)
                        } else {
                            Err(format!(
                                "{} of {v} does not fit a bigint",
                                if floor { "floor" } else { "ceil" }
                            ))
                        }
                    })
                    .transpose()
                })
                .collect::<R<_>>()?;
            Arc::new(out)
        }
        DataType::Decimal128(_, s) => {
            let factor = 10i128.pow(*s as u32);
            let (p, _) = match ty {
                DataType::Decimal128(p, s) => (*p, *s),
                _ => (38, 0),
            };
            let out: Decimal128Array = x
                .arr
                .as_primitive::<Decimal128Type>()
                .iter()
                .map(|o| {
                    o.map(|v| {
                        let q = v.div_euclid(factor);
                        if floor || v.rem_euclid(factor) == 0 {
                            q
                        } else {
                            q + 1
                        }
                    })
                })
                .collect();
            Arc::new(
                out.with_precision_and_scale(p, 0)
                    .map_err(|e| e.to_string())?,
            )
        }
        _ => x.arr.clone(),
    })
}

/// Spark's ROUND: half away from zero ("HALF_UP"), on the decimal digits a double prints as.
fn round(x: &Val, digits: i32) -> R<ArrayRef> {
    Ok(match x.arr.data_type() {
        DataType::Float64 => Arc::new(
            x.arr
                .as_primitive::<Float64Type>()
                .unary::<_, Float64Type>(|v| round_f64(v, digits)),
        ),
        DataType::Float32 => Arc::new(
            x.arr
                .as_primitive::<Float32Type>()
                .unary::<_, Float32Type>(|v| round_f64(v as f64, digits) as f32),
        ),
        DataType::Decimal128(p, s) => {
            let drop = *s as i32 - digits;
            if drop <= 0 {
                return Ok(x.arr.clone());
            }
            let factor = 10i128
                .checked_pow(drop as u32)
                .ok_or("round() scale out of range")?;
            let out: Decimal128Array = x
                .arr
                .as_primitive::<Decimal128Type>()
                .iter()
                .map(|o| o.map(|v| half_up(v, factor) * factor))
                .collect();
            Arc::new(
                out.with_precision_and_scale(*p, *s)
                    .map_err(|e| e.to_string())?,
            )
        }
        t if t.is_integer() && digits < 0 => {
            let factor = 10i128
                .checked_pow((-digits) as u32)
                .ok_or("round() scale out of range")?;
            let wide = types::cast(&x.arr, &DataType::Decimal128(38, 0))?;
            let out: Decimal128Array = wide
                .as_primitive::<Decimal128Type>()
                .iter()
                .map(|o| o.map(|v| half_up(v, factor) * factor))
                .collect();
            let out: ArrayRef = Arc::new(
                out.with_precision_and_scale(38, 0)
                    .map_err(|e| e.to_string())?,
            );
            types::cast(&out, t)?
        }
        _ => x.arr.clone(),
    })
}

fn half_up(v: i128, factor: i128) -> i128 {
    let (q, r) = (v / factor, v % factor);
    if r.abs() * 2 >= factor {
        q + v.signum()
    } else {
        q
    }
}

fn round_f64(v: f64, digits: i32) -> f64 {
    if !v.is_finite() {
        return v;
    }
    let text = format!("{}", v.abs());
    let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
    let all: Vec<u8> = int.bytes().chain(frac.bytes()).collect();
    let point = int.len() as i64;
    let keep = point + digits as i64;
    if keep >= all.len() as i64 {
        return v;
    }
    if keep < 0 {
        return 0.0f64.copysign(v);
    }
    let keep = keep as usize;
    let kept = std::str::from_utf8(&all[..keep]).unwrap_or("0");
    let mut n: i128 = if kept.is_empty() {
        0
    } else {
        kept.parse().unwrap_or(0)
    };
    if all.len() > 38 + keep {
        return v;
    }
    if all[keep] >= b'5' {
        n += 1;
    }
    let out: f64 = format!("{n}e{}", point - keep as i64).parse().unwrap_or(v);
    out.copysign(v)
}

/// SQL LIKE (`%`, `_`, backslash escapes) on every value; the common shapes (no wildcard, a
/// prefix, a suffix, a substring) without the general matcher.
pub fn like(values: &StringArray, pattern: &str, case_insensitive: bool) -> BooleanArray {
    let pattern = if case_insensitive {
        pattern.to_lowercase()
    } else {
        pattern.to_string()
    };
    let plain = |s: &str| !s.contains(['%', '_', '\\']);
    let test: Box<dyn Fn(&str) -> bool> =
        match (pattern.strip_prefix('%'), pattern.strip_suffix('%')) {
            _ if plain(&pattern) => Box::new(move |s| s == pattern),
            (Some(mid), Some(_)) if !mid.is_empty() && plain(&mid[..mid.len() - 1]) => {
                let needle = mid[..mid.len() - 1].to_string();
                Box::new(move |s| s.contains(needle.as_str()))
            }
            (None, Some(prefix)) if plain(prefix) => {
                let p = prefix.to_string();
                Box::new(move |s| s.starts_with(p.as_str()))
            }
            (Some(suffix), None) if plain(suffix) => {
                let p = suffix.to_string();
                Box::new(move |s| s.ends_with(p.as_str()))
            }
            _ => Box::new(move |s| like_one(s, &pattern, false)),
        };
    values
        .iter()
        .map(|o| {
            o.map(|s| {
                if case_insensitive {
                    test(&s.to_lowercase())
                } else {
                    test(s)
                }
            })
        })
        .collect()
}
