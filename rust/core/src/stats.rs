//! Per-file statistics (`add.stats`): the one owner of Delta's statistics rules, whatever the
//! source of the bounds (a parquet footer, [`crate::parquet_stats`]; the rows themselves,
//! [`crate::arrow_stats`]), and the lazy `numRecords` read.
//!
//! The rules: `numRecords`; per top-level primitive column `nullCount` and, where sound,
//! `minValues` / `maxValues`. Nested columns are left out. No bounds for booleans, binary,
//! decimals (and, from footers, INT96 and unsigned integers). A float column holding NaN gets no
//! bounds, and an infinite bound is left out (JSON has neither). A string min is cut to
//! [`STRING_PREFIX`] characters; a longer (or inexact) max is left out. Timestamps are written at
//! millisecond precision, truncated.

use chrono::{DateTime, NaiveDate};
use serde::Deserialize;
use serde_json::{Map, Number, Value};

/// Delta truncates string statistics to this many characters (delta-spark's default
/// `dataSkippingStringPrefixLength`): a min is cut to it, and a max of this length or more may be
/// such a cut prefix, so it is no upper bound.
pub const STRING_PREFIX: usize = 32;

/// What statistics a column gets, by its type.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Kind {
    Long,
    Float,
    Date,
    Timestamp(TimeUnit),
    Str,
    CountOnly,
}

/// The unit of a timestamp column's values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum TimeUnit {
    Seconds,
    Millis,
    Micros,
    Nanos,
}

/// A bound while row groups or batches are merged: the raw value (infinities and long strings
/// included; the JSON rules apply to the file's final bounds only).
#[derive(Debug, Clone, PartialEq, PartialOrd)]
pub(crate) enum Bound {
    Int(i64),
    Float(f64),
    Text(String),
}

#[derive(Debug, Clone)]
pub(crate) struct Bounds {
    pub lo: Bound,
    pub hi: Bound,
    /// False when some row group's max was truncated by its writer.
    pub hi_exact: bool,
}

impl Bounds {
    pub fn exact(lo: Bound, hi: Bound) -> Self {
        Bounds {
            lo,
            hi,
            hi_exact: true,
        }
    }

    /// Float bounds; None when either is NaN (such a column has no usable bounds).
    pub fn float(lo: f64, hi: f64) -> Option<Self> {
        if lo.is_nan() || hi.is_nan() {
            return None;
        }
        Some(Self::exact(Bound::Float(lo), Bound::Float(hi)))
    }

    pub fn merge(self, other: Bounds) -> Bounds {
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

    /// The file's (min, max) as stats JSON, each left out where the rules say it is no bound.
    fn to_json(&self, kind: Kind) -> (Option<Value>, Option<Value>) {
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

/// The statistics of one column: its null count (None: unknown) and bounds (None: no bounds).
pub(crate) struct ColumnStats {
    pub name: String,
    pub kind: Kind,
    pub null_count: Option<u64>,
    pub bounds: Option<Bounds>,
}

/// `add.stats` JSON of a file of `rows` rows with these top-level columns.
pub(crate) fn stats_json(rows: i64, columns: impl IntoIterator<Item = ColumnStats>) -> Value {
    let (mut mins, mut maxs, mut nulls) = (Map::new(), Map::new(), Map::new());
    for c in columns {
        if let Some(n) = c.null_count {
            nulls.insert(c.name.clone(), Value::from(n));
        }
        if let Some(b) = c.bounds {
            let (lo, hi) = b.to_json(c.kind);
            if let Some(lo) = lo {
                mins.insert(c.name.clone(), lo);
            }
            if let Some(hi) = hi {
                maxs.insert(c.name, hi);
            }
        }
    }
    let mut out = Map::new();
    out.insert("numRecords".into(), Value::from(rows));
    out.insert("minValues".into(), Value::Object(mins));
    out.insert("maxValues".into(), Value::Object(maxs));
    out.insert("nullCount".into(), Value::Object(nulls));
    Value::Object(out)
}

fn date(days: i64) -> Option<Value> {
    let d =
        NaiveDate::from_ymd_opt(1970, 1, 1)?.checked_add_signed(chrono::Duration::days(days))?;
    Some(Value::from(d.format("%Y-%m-%d").to_string()))
}

fn timestamp(v: i64, unit: TimeUnit) -> Option<Value> {
    let micros = match unit {
        TimeUnit::Seconds => v.checked_mul(1_000_000)?,
        TimeUnit::Millis => v.checked_mul(1000)?,
        TimeUnit::Micros => v,
        TimeUnit::Nanos => v.div_euclid(1000),
    };
    let t = DateTime::from_timestamp_micros(micros)?;
    Some(Value::from(t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct NumRecordsOnly {
    #[serde(default)]
    num_records: Option<i64>,
}

/// `numRecords` alone, without materialising the min/max maps. Unparseable stats count as absent
/// (stats are optional; a reader must not fail on them).
pub fn num_records(stats: Option<&str>) -> Option<i64> {
    serde_json::from_str::<NumRecordsOnly>(stats?)
        .ok()?
        .num_records
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lazy_num_records() {
        assert_eq!(
            num_records(Some(r#"{"numRecords":5,"minValues":{"a":1}}"#)),
            Some(5)
        );
        assert_eq!(num_records(Some("garbage")), None);
        assert_eq!(num_records(None), None);
    }

    #[test]
    fn float_bounds_refuse_nan() {
        assert!(Bounds::float(f64::NAN, 1.0).is_none() && Bounds::float(0.0, f64::NAN).is_none());
    }

    #[test]
    fn string_prefix_rule() {
        let b = Bounds::exact(Bound::Text("y".repeat(40)), Bound::Text("z".repeat(40)));
        let (lo, hi) = b.to_json(Kind::Str);
        assert_eq!(lo, Some(Value::from("y".repeat(32))));
        assert_eq!(hi, None);
    }
}
