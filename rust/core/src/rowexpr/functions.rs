//! The SQL functions the evaluator knows, and LIKE.

use std::sync::Arc;

use arrow_arith::{boolean as bool_ops, numeric};
use arrow_array::cast::AsArray;
use arrow_array::types::{Decimal128Type, Float32Type, Float64Type, Int64Type};
use arrow_array::{
    Array, ArrayRef, BooleanArray, Decimal128Array, Int32Array, Int64Array, PrimitiveArray,
    StringArray,
};
use arrow_ord::cmp;
use arrow_schema::DataType;
use arrow_select::zip::zip;

use super::value::Val;
use super::{types, Func};
use crate::predicate::expr::like as like_one;

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
    };
    Ok(Val::result(out, &refs))
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
