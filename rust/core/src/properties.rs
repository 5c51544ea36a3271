//! Checks on the values of the `delta.*` table properties delta-occ or other Delta writers act on,
//! so a typo fails when it is set instead of being ignored later (a bad checkpoint interval
//! silently meant the default, a bad retention could never be read). `delta.isolationLevel` is read
//! and checked by [`IsolationLevel::of_table`], here too.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::isolation::{IsolationLevel, PROPERTY};

enum Kind {
    Boolean,
    PositiveInteger,
    /// An integer of at least -1 (`delta.dataSkippingNumIndexedCols`: -1 means all columns).
    ColumnCount,
    Interval,
}

fn kind(key: &str) -> Option<Kind> {
    // Delta matches `delta.*` keys case-insensitively; this list is in its spelling, lower-cased.
    Some(match key.to_ascii_lowercase().as_str() {
        "delta.appendonly"
        | "delta.enabledeletionvectors"
        | "delta.enablechangedatafeed"
        | "delta.enablerowtracking"
        | "delta.rowtrackingsuspended"
        | "delta.enableexpiredlogcleanup"
        | "delta.checkpoint.writestatsasjson"
        | "delta.checkpoint.writestatsasstruct" => Kind::Boolean,
        "delta.checkpointinterval" | "delta.targetfilesize" => Kind::PositiveInteger,
        "delta.dataskippingnumindexedcols" => Kind::ColumnCount,
        "delta.logretentionduration" | "delta.deletedfileretentionduration" => Kind::Interval,
        _ => return None,
    })
}

/// The `delta.*` table properties of the Delta protocol and of delta-spark's documentation, in
/// their spelling: accepted (and their values checked where [`kind`] knows them) even where
/// delta-occ does not act on them. A key outside `delta.` is the user's own.
const KNOWN: &[&str] = &[
    "delta.appendOnly",
    "delta.autoOptimize",
    "delta.autoOptimize.autoCompact",
    "delta.autoOptimize.optimizeWrite",
    "delta.checkpoint.writeStatsAsJson",
    "delta.checkpoint.writeStatsAsStruct",
    "delta.checkpointInterval",
    "delta.checkpointPolicy",
    "delta.checkpointRetentionDuration",
    "delta.columnMapping.maxColumnId",
    "delta.columnMapping.mode",
    "delta.compatibility.symlinkFormatManifest.enabled",
    "delta.dataSkippingNumIndexedCols",
    "delta.dataSkippingStatsColumns",
    "delta.deletedFileRetentionDuration",
    "delta.dropFeatureTruncateHistory.retentionDuration",
    "delta.enableChangeDataCapture",
    "delta.enableChangeDataFeed",
    "delta.enableDeletionVectors",
    "delta.enableExpiredLogCleanup",
    "delta.enableFullRetentionRollback",
    "delta.enableIcebergCompatV1",
    "delta.enableIcebergCompatV2",
    "delta.enableIcebergCompatV3",
    "delta.enableInCommitTimestamps",
    "delta.enableRowTracking",
    "delta.enableTypeWidening",
    "delta.enableVariantShredding",
    "delta.ignoreProtocolDefaults",
    "delta.inCommitTimestampEnablementTimestamp",
    "delta.inCommitTimestampEnablementVersion",
    "delta.isolationLevel",
    "delta.logRetentionDuration",
    "delta.minReaderVersion",
    "delta.minWriterVersion",
    "delta.parquet.compression.codec",
    "delta.randomPrefixLength",
    "delta.randomizeFilePrefixes",
    "delta.rowTracking.materializedRowCommitVersionColumnName",
    "delta.rowTracking.materializedRowIdColumnName",
    "delta.rowTrackingSuspended",
    "delta.sampleRetentionDuration",
    "delta.setTransactionRetentionDuration",
    "delta.targetFileSize",
    "delta.tuneFileSizesForRewrites",
    "delta.universalFormat.enabledFormats",
];

/// Families of `delta.*` keys whose last part is free: table features (`delta.feature.<name>`),
/// CHECK constraints, and the per-format settings of UniForm and coordinated commits.
const KNOWN_PREFIXES: &[&str] = &[
    "delta.feature.",
    "delta.constraints.",
    "delta.universalFormat.config.",
    "delta.coordinatedCommits.",
];

/// Refuse a `delta.*` key that is not a known property, naming the nearest known one (Delta
/// matches these keys case-insensitively). Other keys pass.
fn check_known(key: &str) -> Result<()> {
    let lower = key.to_ascii_lowercase();
    if !lower.starts_with("delta.")
        || KNOWN.iter().any(|k| k.eq_ignore_ascii_case(key))
        || KNOWN_PREFIXES
            .iter()
            .any(|p| lower.starts_with(&p.to_ascii_lowercase()))
    {
        return Ok(());
    }
    let nearest = KNOWN
        .iter()
        .min_by_key(|k| edit_distance(&k.to_ascii_lowercase(), &lower))
        .expect("the list is not empty");
    Err(Error::invalid(format!(
        "unknown table property {key:?}: did you mean {nearest:?}? (Delta refuses delta.* keys it does not know; keys without the delta. prefix are free)"
    )))
}

/// Levenshtein distance over bytes (keys are ASCII): only to name the nearest known key, so a
/// two-row loop rather than a dependency.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Whether the property `key` may be set to `value`: a `delta.*` key must be a known one, and a
/// known one's value must parse. Values are not trimmed: readers (Delta's, and ours) do not trim
/// them either. Only keys being set are checked: a table that already carries an unknown key
/// still opens and takes writes.
pub fn check(key: &str, value: &str) -> Result<()> {
    check_known(key)?;
    let v = value;
    let (ok, expected) = match kind(key) {
        None => return Ok(()),
        Some(Kind::Boolean) => (
            v.eq_ignore_ascii_case("true") || v.eq_ignore_ascii_case("false"),
            "true or false",
        ),
        Some(Kind::PositiveInteger) => {
            (v.parse::<i64>().is_ok_and(|n| n > 0), "a positive integer")
        }
        Some(Kind::ColumnCount) => (v.parse::<i64>().is_ok_and(|n| n >= -1), "an integer >= -1"),
        Some(Kind::Interval) => (
            parse_interval_ms(v).is_some(),
            "an interval such as \"interval 7 days\"",
        ),
    };
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "{key} = {value:?} is not valid: expected {expected}"
        )))
    }
}

/// `interval 1 week`, `7 days`, `1 day 12 hours` ... in milliseconds.
pub fn parse_interval_ms(text: &str) -> Option<i64> {
    let t = text.trim().to_ascii_lowercase();
    let t = t.strip_prefix("interval").unwrap_or(&t).trim();
    let parts: Vec<&str> = t.split_whitespace().collect();
    if parts.is_empty() || parts.len() % 2 != 0 {
        return None;
    }
    let mut total: i64 = 0;
    for pair in parts.chunks(2) {
        let n: i64 = pair[0].parse().ok().filter(|n| *n >= 0)?;
        let ms = match pair[1].trim_end_matches('s') {
            "millisecond" => 1,
            "second" => 1000,
            "minute" => 60_000,
            "hour" => 3_600_000,
            "day" => 86_400_000,
            "week" => 7 * 86_400_000,
            _ => return None,
        };
        total = total.checked_add(n.checked_mul(ms)?)?;
    }
    Some(total)
}

/// Reading an isolation level (the enum itself is in `isolation.rs`).
impl IsolationLevel {
    /// Any letter case; underscores are accepted too (`write_serializable`).
    pub fn parse(text: &str) -> Result<Self> {
        match text.replace('_', "").to_ascii_lowercase().as_str() {
            "serializable" => Ok(IsolationLevel::Serializable),
            "writeserializable" => Ok(IsolationLevel::WriteSerializable),
            "snapshotisolation" => Ok(IsolationLevel::SnapshotIsolation),
            _ => Err(Error::invalid(format!(
                "invalid isolation level {text:?}: expected Serializable, WriteSerializable or SnapshotIsolation"
            ))),
        }
    }

    /// The table's level: WriteSerializable when the property is absent (the Azure Databricks
    /// default; open-source delta-spark assumes Serializable).
    pub fn of_table(config: &BTreeMap<String, String>) -> Result<Self> {
        match config.get(PROPERTY) {
            None => Ok(IsolationLevel::WriteSerializable),
            Some(v) => match IsolationLevel::parse(v)? {
                IsolationLevel::SnapshotIsolation => Err(Error::invalid(format!(
                    "{PROPERTY} = {v:?} is not a table level: expected Serializable or WriteSerializable"
                ))),
                level => Ok(level),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Misspelt keys from issue 44 and delta-spark's error for them (DELTA_UNKNOWN_CONFIGURATION).
    #[test]
    fn unknown_delta_keys_are_refused_with_the_nearest_known_one() {
        for (key, nearest) in [
            ("delta.enableDeletionVector", "delta.enableDeletionVectors"),
            ("delta.checkpointIntervall", "delta.checkpointInterval"),
            ("Delta.AppendOnlyy", "delta.appendOnly"),
            ("delta.logRetention", "delta.logRetentionDuration"),
        ] {
            let e = check(key, "true").unwrap_err().to_string();
            assert!(
                e.contains(&format!("did you mean {nearest:?}")),
                "{key}: {e}"
            );
            assert!(e.contains(key), "{e}");
        }
        for key in [
            "delta.feature.deletionVectors",
            "delta.constraints.positive",
            "delta.universalFormat.config.iceberg.x",
            "DELTA.ENABLEDELETIONVECTORS",
            "delta.autoOptimize.autoCompact",
            "deltaX.whatever",
            "owner",
        ] {
            assert!(check(key, "true").is_ok(), "{key}");
        }
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
    }

    #[test]
    fn known_properties_are_checked_and_others_pass() {
        for (k, v, ok) in [
            ("delta.checkpointInterval", "10", true),
            ("delta.checkpointInterval", "-5", false),
            ("delta.checkpointInterval", "ten", false),
            ("delta.appendOnly", "TRUE", true),
            ("delta.appendOnly", "yes", false),
            ("delta.appendOnly", "true ", false),
            ("DELTA.APPENDONLY", "yes", false),
            (
                "delta.logRetentionDuration",
                "interval 1 day 12 hours",
                true,
            ),
            ("delta.logRetentionDuration", "interval 30 days", true),
            ("delta.logRetentionDuration", "30", false),
            ("delta.dataSkippingNumIndexedCols", "-1", true),
            ("delta.dataSkippingNumIndexedCols", "-2", false),
            ("delta.targetFileSize", "0", false),
            ("my.own.property", "anything", true),
        ] {
            assert_eq!(check(k, v).is_ok(), ok, "{k} = {v}");
        }
        let e = check("delta.checkpointInterval", "-5")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("delta.checkpointInterval")
                && e.contains("\"-5\"")
                && e.contains("positive integer"),
            "{e}"
        );
    }

    #[test]
    fn isolation_levels() {
        let mut c = BTreeMap::new();
        assert_eq!(
            IsolationLevel::of_table(&c).unwrap(),
            IsolationLevel::WriteSerializable
        );
        c.insert(PROPERTY.to_string(), "serializable".to_string());
        assert_eq!(
            IsolationLevel::of_table(&c).unwrap(),
            IsolationLevel::Serializable
        );
        c.insert(PROPERTY.to_string(), "SnapshotIsolation".to_string());
        assert!(IsolationLevel::of_table(&c).is_err());
        let e = IsolationLevel::parse("strict").unwrap_err().to_string();
        assert!(e.contains("Serializable") && e.contains("WriteSerializable"));
    }

    #[test]
    fn intervals() {
        assert_eq!(parse_interval_ms("interval 1 week"), Some(604_800_000));
        assert_eq!(parse_interval_ms("2 days"), Some(172_800_000));
        assert_eq!(parse_interval_ms("interval 1 fortnight"), None);
        assert_eq!(parse_interval_ms("soon"), None);
    }
}
