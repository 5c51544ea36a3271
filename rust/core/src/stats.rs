//! Per-file statistics (`add.stats`), parsed only when asked for.

use serde::Deserialize;
use serde_json::{Map, Value};

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileStats {
    #[serde(default)]
    pub num_records: Option<i64>,
    #[serde(default)]
    pub tight_bounds: Option<bool>,
    #[serde(default)]
    pub min_values: Map<String, Value>,
    #[serde(default)]
    pub max_values: Map<String, Value>,
    #[serde(default)]
    pub null_count: Map<String, Value>,
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

pub fn parse(stats: Option<&str>) -> Option<FileStats> {
    serde_json::from_str(stats?).ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn lazy_num_records() {
        assert_eq!(
            super::num_records(Some(r#"{"numRecords":5,"minValues":{"a":1}}"#)),
            Some(5)
        );
        assert_eq!(super::num_records(Some("garbage")), None);
        assert_eq!(super::num_records(None), None);
        let s = super::parse(Some(
            r#"{"numRecords":5,"minValues":{"a":1},"tightBounds":false}"#,
        ))
        .unwrap();
        assert_eq!(s.tight_bounds, Some(false));
        assert_eq!(s.min_values["a"], 1);
    }
}
