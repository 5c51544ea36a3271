//! Per-file statistics (`add.stats`): the one owner of Delta's statistics rules, whatever the
//! source of the bounds (a parquet footer, [`crate::parquet_stats`]; the rows themselves,
//! [`crate::arrow_stats`]), and the lazy `numRecords` read.
//!
//! The rules: `numRecords`; per top-level primitive column `nullCount` and, where sound,
//! `minValues` / `maxValues`. Nested columns are left out. No bounds for booleans, binary,
//! decimals (and, from footers, INT96 and unsigned integers). A float column holding NaN gets no
//! bounds, and an infinite bound is left out (JSON has neither). A string min is cut to
//! [`STRING_PREFIX`] characters; a longer (or inexact) max is left out. Timestamps are written at
//! millisecond precision, truncated. Only the table's indexed columns keep statistics
//! ([`Indexed`]: `delta.dataSkippingStatsColumns`, else the first
//! `delta.dataSkippingNumIndexedCols` leaf columns, 32 by default).

use std::collections::BTreeMap;

use chrono::{DateTime, NaiveDate};
use serde::Deserialize;
use serde_json::{Map, Number, Value};

use crate::schema::{ColumnMappingMode, DataType, StructField, StructType};

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

/// delta-spark's default `delta.dataSkippingNumIndexedCols`.
pub const DEFAULT_INDEXED_COLUMNS: usize = 32;

/// The columns whose statistics a table keeps, as physical paths (names from the top level).
#[derive(Debug, PartialEq)]
pub(crate) enum Indexed {
    All,
    Paths(Vec<Vec<String>>),
}

/// The table's indexed columns: those `delta.dataSkippingStatsColumns` lists (comma-separated,
/// dotted for nested fields, backticks allowed; a struct column stands for its fields), else the
/// first `delta.dataSkippingNumIndexedCols` leaf columns of the schema in order (-1: all; 32 when
/// unset), partition columns not counted: they have no statistics.
pub(crate) fn indexed_columns(
    schema: &StructType,
    mode: ColumnMappingMode,
    partition_columns: &[String],
    config: &BTreeMap<String, String>,
) -> Indexed {
    let setting = |key: &str| {
        config
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.trim().to_string())
    };
    let mut leaves = Vec::new();
    for f in &schema.fields {
        if !partition_columns
            .iter()
            .any(|p| p.eq_ignore_ascii_case(&f.name))
        {
            collect_leaves(f, mode, &mut Vec::new(), &mut Vec::new(), &mut leaves);
        }
    }
    if let Some(listed) = setting("delta.dataSkippingStatsColumns") {
        let wanted: Vec<Vec<String>> = listed
            .split(',')
            .map(|c| {
                c.trim()
                    .split('.')
                    .map(|p| p.trim().trim_matches('`').to_lowercase())
                    .collect()
            })
            .collect();
        let picked = leaves
            .into_iter()
            .filter(|(logical, _)| {
                wanted.iter().any(|w| {
                    w.len() <= logical.len()
                        && w.iter()
                            .zip(logical.iter())
                            .all(|(a, b)| *a == b.to_lowercase())
                })
            })
            .map(|(_, physical)| physical)
            .collect();
        return Indexed::Paths(picked);
    }
    let n = match setting("delta.dataSkippingNumIndexedCols").map(|v| v.parse::<i64>()) {
        Some(Ok(n)) if n < 0 => return Indexed::All,
        Some(Ok(n)) => n as usize,
        _ => DEFAULT_INDEXED_COLUMNS,
    };
    if leaves.len() <= n {
        return Indexed::All;
    }
    Indexed::Paths(
        leaves
            .into_iter()
            .take(n)
            .map(|(_, physical)| physical)
            .collect(),
    )
}

/// Every leaf column under `f` (a struct's fields, in order; any other type is one leaf), as
/// (logical path, physical path).
fn collect_leaves(
    f: &StructField,
    mode: ColumnMappingMode,
    logical: &mut Vec<String>,
    physical: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, Vec<String>)>,
) {
    logical.push(f.name.clone());
    physical.push(f.physical_name(mode).to_string());
    match &f.data_type {
        DataType::Struct(s) => {
            for c in &s.fields {
                collect_leaves(c, mode, logical, physical, out);
            }
        }
        _ => out.push((logical.clone(), physical.clone())),
    }
    logical.pop();
    physical.pop();
}

/// Leave out of `stats` (parsed JSON) the bounds and null counts of columns outside `indexed`
/// (`numRecords` and any other key kept); whether anything was left out.
pub(crate) fn keep_indexed(stats: &mut Value, indexed: &Indexed) -> bool {
    let Indexed::Paths(paths) = indexed else {
        return false;
    };
    let mut changed = false;
    for key in ["minValues", "maxValues", "nullCount"] {
        if let Some(Value::Object(m)) = stats.get_mut(key) {
            let before = m.len();
            changed |= retain_paths(m, paths, 0) || m.len() != before;
        }
    }
    changed
}

/// Keep the keys of `m` on one of `paths` (at `depth`); whether a nested map lost a key.
fn retain_paths(m: &mut Map<String, Value>, paths: &[Vec<String>], depth: usize) -> bool {
    let mut nested_changed = false;
    m.retain(|k, v| {
        let under: Vec<Vec<String>> = paths
            .iter()
            .filter(|p| p.get(depth) == Some(k))
            .cloned()
            .collect();
        match v {
            _ if under.is_empty() => false,
            Value::Object(inner) if under.iter().all(|p| p.len() > depth + 1) => {
                let before = inner.len();
                nested_changed |= retain_paths(inner, &under, depth + 1) || inner.len() != before;
                !inner.is_empty()
            }
            _ => true,
        }
    });
    nested_changed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> StructType {
        StructType::parse(
            r#"{"type":"struct","fields":[
              {"name":"a","type":"long","nullable":true,"metadata":{}},
              {"name":"p","type":"string","nullable":true,"metadata":{}},
              {"name":"s","type":{"type":"struct","fields":[
                 {"name":"x","type":"long","nullable":true,"metadata":{}},
                 {"name":"y","type":"long","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}},
              {"name":"b","type":"long","nullable":true,"metadata":{}}]}"#,
        )
        .unwrap()
    }

    /// Issue 44 item 4: the indexed columns follow delta-spark's two properties; leaves count,
    /// partition columns do not.
    #[test]
    fn indexed_columns_follow_the_properties() {
        let at = |pairs: &[(&str, &str)]| {
            let config = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            match indexed_columns(&schema(), ColumnMappingMode::None, &["p".into()], &config) {
                Indexed::All => vec!["*".to_string()],
                Indexed::Paths(p) => p.iter().map(|p| p.join(".")).collect(),
            }
        };
        assert_eq!(at(&[]), ["*"]);
        assert_eq!(
            at(&[("delta.dataSkippingNumIndexedCols", "2")]),
            ["a", "s.x"]
        );
        assert_eq!(
            at(&[("delta.dataSkippingNumIndexedCols", "0")]),
            Vec::<String>::new()
        );
        assert_eq!(at(&[("delta.dataSkippingNumIndexedCols", "-1")]), ["*"]);
        assert_eq!(at(&[("delta.dataSkippingNumIndexedCols", "4")]), ["*"]);
        assert_eq!(
            at(&[("delta.dataSkippingStatsColumns", "b, `S`")]),
            ["s.x", "s.y", "b"]
        );
        assert_eq!(
            at(&[
                ("delta.dataskippingstatscolumns", "s.y"),
                ("delta.dataSkippingNumIndexedCols", "1")
            ]),
            ["s.y"]
        );
    }

    #[test]
    fn keep_indexed_drops_the_other_columns() {
        let stats = r#"{"numRecords":3,"minValues":{"a":1,"b":2,"s":{"x":1,"y":2}},"maxValues":{"a":5,"b":6},"nullCount":{"a":0,"b":0,"s":{"x":0,"y":1}}}"#;
        let paths = Indexed::Paths(vec![vec!["a".into()], vec!["s".into(), "y".into()]]);
        let mut kept: Value = serde_json::from_str(stats).unwrap();
        assert!(keep_indexed(&mut kept, &paths));
        let want: Value = serde_json::from_str(
            r#"{"numRecords":3,"minValues":{"a":1,"s":{"y":2}},"maxValues":{"a":5},"nullCount":{"a":0,"s":{"y":1}}}"#,
        )
        .unwrap();
        assert_eq!(kept, want);
        let mut all: Value = serde_json::from_str(stats).unwrap();
        assert!(!keep_indexed(&mut all, &Indexed::All));
        assert_eq!(all, serde_json::from_str::<Value>(stats).unwrap());
    }

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
