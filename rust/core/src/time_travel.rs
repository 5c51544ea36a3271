//! Time travel by timestamp: the version of a table at an instant is the newest version whose
//! commit timestamp is at or before it (protocol "In-Commit Timestamps"; delta-spark's and
//! deltalake's rule).
//!
//! A commit's timestamp is its `commitInfo.inCommitTimestamp` from the version in-commit
//! timestamps were enabled at (`delta.inCommitTimestampEnablementVersion`, version 0 when the
//! table was created with them) and its commit file's modification time before it. File times
//! can run backwards (clock skew between writers), so each one is raised to one millisecond
//! after its predecessor's: the timestamps are then strictly increasing, which is what makes the
//! answer unique and lets in-commit timestamps be binary-searched.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::log::json::read_commit_info;
use crate::log::path::commit_path;
use crate::log::segment::log_dir;
use crate::protocol::is_true;
use crate::snapshot::Snapshot;
use crate::storage::Location;

/// When `snap`'s version was committed (epoch milliseconds), as delta-spark's snapshot timestamp
/// (DESCRIBE DETAIL's `lastModified`): its in-commit timestamp where the table has them from that
/// version on, else its commit file's modification time. `None` when neither is there (the
/// commit file of a version read from its checkpoint was cleaned up).
pub fn commit_timestamp(snap: &Snapshot) -> Result<Option<i64>> {
    let v = snap.version();
    let path = commit_path(&log_dir(&snap.root), v);
    if ict_from(&snap.metadata().configuration).is_some_and(|e| v >= e) {
        let info = match snap.commit_info() {
            Ok(info) => info,
            Err(_) if !path.exists().unwrap_or(true) => None,
            Err(e) => return Err(e),
        };
        if let Some(info) = info {
            return in_commit_timestamp(Some(&info), &path, v).map(Some);
        }
    }
    let listing = crate::log::segment::list(&snap.root, v)?;
    Ok(listing.commits.get(&v).and_then(|f| f.modified))
}

/// The version in-commit timestamps start at, when the table has them enabled.
fn ict_from(config: &BTreeMap<String, String>) -> Option<i64> {
    is_true(config, "delta.enableInCommitTimestamps").then(|| {
        config
            .get("delta.inCommitTimestampEnablementVersion")
            .and_then(|v| v.trim().parse::<i64>().ok())
            .unwrap_or(0)
    })
}

/// Version `v`'s `commitInfo.inCommitTimestamp` from its commitInfo JSON `info` (None: the commit
/// has none), on a table whose in-commit timestamps cover `v`: missing, the log is corrupt.
fn in_commit_timestamp(info: Option<&str>, path: &Location, v: i64) -> Result<i64> {
    info.and_then(|t| serde_json::from_str::<Value>(t).ok())
        .and_then(|c| c.get("inCommitTimestamp").and_then(Value::as_i64))
        .ok_or_else(|| {
            Error::corrupt(
                path,
                Some(v),
                "in-commit timestamps are enabled but the commit has no commitInfo.inCommitTimestamp",
            )
        })
}

/// The version of `latest`'s table current at `ts_ms` (epoch milliseconds): `latest`'s own
/// version for any instant after it was committed. An instant before the oldest version that
/// can still be read is an error: before the table existed an invalid argument, after log
/// cleanup a version that is gone.
pub fn version_at(latest: &Snapshot, ts_ms: i64) -> Result<i64> {
    let table = latest.root.to_string();
    let dir = log_dir(&latest.root);
    let mut listing = crate::log::segment::list(&latest.root, 0)?;
    // A hole between listed commits is looked for again before it counts (Listing::confirm): a
    // listing racing a writer must not make old versions look cleaned up.
    listing.confirm_listed(&latest.root, Some(latest.version()))?;
    let mut mtimes: BTreeMap<i64, i64> = BTreeMap::new();
    let mut prev_mtime = 0;
    for (&v, f) in listing.commits.range(..=latest.version()) {
        // A commit found by name has no listed time: its predecessor's (raised below).
        let m = f.modified.unwrap_or(prev_mtime);
        mtimes.insert(v, m);
        prev_mtime = m;
    }
    let checkpoints: Vec<i64> = listing
        .complete_checkpoints()
        .iter()
        .map(|c| c.version)
        .filter(|v| *v <= latest.version())
        .collect();
    // The oldest readable version: version 0 while its commit exists, else the oldest
    // checkpoint that the commits after it continue without a gap.
    let continuous_from = {
        let mut v = latest.version();
        while v > 0 && mtimes.contains_key(&(v - 1)) {
            v -= 1;
        }
        v
    };
    let earliest = if mtimes.contains_key(&0) && continuous_from == 0 {
        0
    } else {
        checkpoints
            .iter()
            .copied()
            .filter(|c| *c + 1 >= continuous_from)
            .min()
            .unwrap_or(latest.version())
    };
    let ict_from = ict_from(&latest.metadata().configuration);
    let ict = |v: i64| -> Result<i64> {
        let path = commit_path(&dir, v);
        in_commit_timestamp(read_commit_info(&path, v)?.as_deref(), &path, v)
    };
    let fmt = |ms: i64| {
        chrono::DateTime::from_timestamp_millis(ms)
            .map(|d| d.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
            .unwrap_or_else(|| ms.to_string())
    };
    let too_early = |first: i64, first_ts: i64| {
        if first == 0 {
            Error::invalid(format!(
                "{table} did not exist at {}: its version 0 was committed at {}",
                fmt(ts_ms),
                fmt(first_ts)
            ))
        } else {
            Error::VersionNotFound {
                table: table.clone(),
                version: first - 1,
                reason: format!(
                    "the table as of {} is older than the oldest version kept, {first} (committed at {}); \
                     older log files were removed by log cleanup",
                    fmt(ts_ms),
                    fmt(first_ts)
                ),
            }
        }
    };
    // In-commit timestamps: binary search over [max(earliest, E), latest] when the instant is at
    // or after the first of them.
    if let Some(e) = ict_from {
        // The first version at or after both whose commit is still there (a checkpoint may
        // stand for a version whose commit file was cleaned up).
        let lo = (e.max(earliest)..=latest.version())
            .find(|v| mtimes.contains_key(v))
            .unwrap_or(i64::MAX);
        if lo <= latest.version() {
            let first = ict(lo)?;
            if ts_ms >= first {
                let (mut good, mut bad) = (lo, latest.version() + 1);
                while bad - good > 1 {
                    let mid = good + (bad - good) / 2;
                    if ict(mid)? <= ts_ms {
                        good = mid;
                    } else {
                        bad = mid;
                    }
                }
                return Ok(good);
            }
            if lo == earliest || e <= earliest {
                return Err(too_early(lo, first));
            }
        }
    }
    // File times, made strictly increasing, for the versions before in-commit timestamps.
    let upto = ict_from.map_or(latest.version(), |e| (e - 1).min(latest.version()));
    let mut prev: Option<i64> = None;
    let mut found: Option<i64> = None;
    for v in earliest..=upto {
        let Some(m) = mtimes.get(&v) else {
            // the checkpoint version's commit may be gone while the checkpoint stays
            continue;
        };
        let t = prev.map_or(*m, |p| (*m).max(p + 1));
        if prev.is_none() && ts_ms < t {
            return Err(too_early(v, t));
        }
        if t > ts_ms {
            break;
        }
        found = Some(v);
        prev = Some(t);
    }
    Ok(found.unwrap_or(earliest))
}
