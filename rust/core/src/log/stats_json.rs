//! Turn a checkpoint's `stats_parsed` struct back into the stats JSON text that `add.stats` holds,
//! so the rest of the system sees one representation.

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, StructArray};
use arrow_schema::{DataType, TimeUnit};
use serde_json::{Map, Number, Value};

/// The stats object of row `i`, or `None` when the struct is null.
pub fn row_to_json(stats: &StructArray, i: usize) -> Option<Value> {
    if stats.is_null(i) {
        return None;
    }
    value_at(stats, i)
}

fn num(v: impl Into<Number>) -> Option<Value> {
    Some(Value::Number(v.into()))
}

fn float(v: f64) -> Option<Value> {
    Number::from_f64(v).map(Value::Number)
}

fn value_at(a: &dyn Array, i: usize) -> Option<Value> {
    if a.is_null(i) {
        return None;
    }
    match a.data_type() {
        DataType::Boolean => Some(Value::Bool(a.as_boolean().value(i))),
        DataType::Int8 => num(a.as_primitive::<Int8Type>().value(i)),
        DataType::Int16 => num(a.as_primitive::<Int16Type>().value(i)),
        DataType::Int32 => num(a.as_primitive::<Int32Type>().value(i)),
        DataType::Int64 => num(a.as_primitive::<Int64Type>().value(i)),
        DataType::Float32 => float(a.as_primitive::<Float32Type>().value(i) as f64),
        DataType::Float64 => float(a.as_primitive::<Float64Type>().value(i)),
        DataType::Utf8 => Some(Value::String(a.as_string::<i32>().value(i).to_string())),
        DataType::LargeUtf8 => Some(Value::String(a.as_string::<i64>().value(i).to_string())),
        DataType::Date32 => {
            let days = a.as_primitive::<Date32Type>().value(i);
            chrono::DateTime::from_timestamp(days as i64 * 86_400, 0)
                .map(|d| Value::String(d.format("%Y-%m-%d").to_string()))
        }
        DataType::Timestamp(unit, _) => {
            let micros = match unit {
                TimeUnit::Second => a
                    .as_primitive::<TimestampSecondType>()
                    .value(i)
                    .checked_mul(1_000_000)?,
                TimeUnit::Millisecond => a
                    .as_primitive::<TimestampMillisecondType>()
                    .value(i)
                    .checked_mul(1_000)?,
                TimeUnit::Microsecond => a.as_primitive::<TimestampMicrosecondType>().value(i),
                TimeUnit::Nanosecond => {
                    a.as_primitive::<TimestampNanosecondType>().value(i) / 1_000
                }
            };
            chrono::DateTime::from_timestamp_micros(micros)
                .map(|d| Value::String(d.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()))
        }
        DataType::Decimal128(_, scale) => {
            let raw = a.as_primitive::<Decimal128Type>().value(i);
            float(raw as f64 / 10f64.powi(*scale as i32))
        }
        DataType::Struct(_) => {
            let s = a.as_struct();
            let mut m = Map::new();
            for (field, child) in s.fields().iter().zip(s.columns()) {
                if let Some(v) = value_at(child.as_ref(), i) {
                    m.insert(field.name().clone(), v);
                }
            }
            Some(Value::Object(m))
        }
        _ => None,
    }
}
