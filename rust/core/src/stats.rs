//! Per-file statistics (`add.stats`), parsed only when asked for.

use serde::Deserialize;

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
    #[test]
    fn lazy_num_records() {
        assert_eq!(
            super::num_records(Some(r#"{"numRecords":5,"minValues":{"a":1}}"#)),
            Some(5)
        );
        assert_eq!(super::num_records(Some("garbage")), None);
        assert_eq!(super::num_records(None), None);
    }
}
