//! DROP FEATURE for `deletionVectors`, the protocol's way of removing a reader-writer feature:
//!
//! 1. stop using it: `delta.enableDeletionVectors=false` and every file with a deletion vector
//!    rewritten without its deleted rows (the engines' purge, one commit);
//! 2. wait until the newest commit that wrote a deletion vector is older than
//!    `delta.dropFeatureTruncateHistory.retentionDuration` (default 24 hours): readers and
//!    writers still on those versions finish;
//! 3. downgrade the protocol in a commit that also truncates the log before itself (a checkpoint
//!    at the downgrade, then every older log file deleted), so no client that does not know the
//!    feature can time travel into a version that uses it.
//!
//! This module owns the rule (what counts as a trace, when the wait is over, the protocol
//! after); the engines only purge.

use crate::error::{Error, Result};
use crate::log::actions::Protocol;
use crate::log::path::{commit_path, parse_name, LogFileKind};
use crate::log::segment::log_dir;
use crate::properties::parse_interval_ms;
use crate::protocol::{has_reader_feature, has_writer_feature, is_true};
use crate::snapshot::Snapshot;

/// The features delta-occ can drop.
pub const DROPPABLE: &[&str] = &["deletionVectors"];

/// `delta.dropFeatureTruncateHistory.retentionDuration`'s default (delta-spark's): 24 hours.
pub const DEFAULT_WAIT_MS: i64 = 24 * 3600 * 1000;

/// Where a feature drop stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DropStatus {
    /// Step 1 is due: the feature is still in use (the reasons, for the message).
    InUse(Vec<String>),
    /// Step 2: a version that used the feature is too recent.
    Wait {
        last_trace_version: i64,
        last_trace_ms: i64,
        ready_at_ms: i64,
    },
    /// Step 3 may commit this protocol.
    Ready(Protocol),
}

/// Where dropping `feature` from `snap`'s table stands at `now_ms`.
pub fn status(snap: &Snapshot, feature: &str, now_ms: i64) -> Result<DropStatus> {
    let table = snap.root.to_string();
    if !DROPPABLE.contains(&feature) {
        return Err(Error::UnsupportedFeature {
            table,
            version: Some(snap.version()),
            what: "DROP FEATURE".into(),
            detail: format!(
                "delta-occ drops only {} (asked: {feature:?})",
                DROPPABLE.join(", ")
            ),
        });
    }
    let p = snap.protocol();
    if !has_writer_feature(p, feature) && !has_reader_feature(p, feature) {
        return Err(Error::invalid(format!(
            "{table} at version {} does not have the table feature {feature:?} (reader features: {:?}, writer features: {:?})",
            snap.version(),
            p.reader_features.as_deref().unwrap_or_default(),
            p.writer_features.as_deref().unwrap_or_default()
        )));
    }
    let mut in_use = Vec::new();
    if is_true(
        &snap.metadata().configuration,
        "delta.enableDeletionVectors",
    ) {
        in_use.push("delta.enableDeletionVectors is true".to_string());
    }
    let with_dvs = snap
        .files()
        .iter()
        .filter(|f| f.deletion_vector.is_some())
        .count();
    if with_dvs > 0 {
        in_use.push(format!("{with_dvs} live files have deletion vectors"));
    }
    if !in_use.is_empty() {
        return Ok(DropStatus::InUse(in_use));
    }
    let wait = snap
        .metadata()
        .configuration
        .get("delta.dropFeatureTruncateHistory.retentionDuration")
        .and_then(|v| parse_interval_ms(v))
        .unwrap_or(DEFAULT_WAIT_MS);
    if let Some((version, at)) = last_trace(snap)? {
        if at.saturating_add(wait) > now_ms {
            return Ok(DropStatus::Wait {
                last_trace_version: version,
                last_trace_ms: at,
                ready_at_ms: at.saturating_add(wait),
            });
        }
    }
    Ok(DropStatus::Ready(without(p, feature)))
}

/// `p` without `feature`; reader version 1 once no reader feature is left.
pub fn without(p: &Protocol, feature: &str) -> Protocol {
    let reader: Option<Vec<String>> = p
        .reader_features
        .as_ref()
        .map(|r| r.iter().filter(|f| *f != feature).cloned().collect());
    let writer: Option<Vec<String>> = p
        .writer_features
        .as_ref()
        .map(|w| w.iter().filter(|f| *f != feature).cloned().collect());
    let no_reader_features = reader.as_ref().is_none_or(Vec::is_empty);
    let min_reader_version = if p.min_reader_version == 3 && no_reader_features {
        1
    } else {
        p.min_reader_version
    };
    Protocol {
        min_reader_version,
        min_writer_version: p.min_writer_version,
        reader_features: (min_reader_version == 3).then(|| reader.unwrap_or_default()),
        writer_features: writer,
    }
}

/// The newest version in the log that wrote or removed a deletion vector, with its commit
/// file's time: a commit whose actions carry one, or (when older commits were cleaned up) the
/// oldest checkpoint if its state still holds one.
fn last_trace(snap: &Snapshot) -> Result<Option<(i64, i64)>> {
    let dir = log_dir(&snap.root);
    let entries = dir.list(None, false).map_err(|e| Error::io(&dir, e))?;
    let mut commits: Vec<(i64, i64)> = entries
        .iter()
        .filter_map(|e| match parse_name(&e.name) {
            Some((v, LogFileKind::Commit)) if v <= snap.version() => {
                Some((v, e.modified.unwrap_or(i64::MAX)))
            }
            _ => None,
        })
        .collect();
    commits.sort();
    let found = crate::parallel::map(&commits, |&(v, at)| -> Result<Option<(i64, i64)>> {
        let path = commit_path(&dir, v);
        let bytes = path.read().map_err(|e| Error::io(&path, e))?;
        let hit = memchr::memmem::find(&bytes, b"\"deletionVector\":{").is_some();
        Ok(hit.then_some((v, at)))
    });
    let mut newest: Option<(i64, i64)> = None;
    for f in found {
        if let Some(hit) = f? {
            newest = newest.max(Some(hit));
        }
    }
    if newest.is_none() {
        // Commits before the oldest kept one are gone: its checkpoint's state may still hold
        // files or tombstones with deletion vectors.
        if let Some(&(oldest, at)) = commits.first() {
            if oldest > 0 {
                let old = crate::load::snapshot(&snap.root, Some(oldest))?;
                let dv_file = old.files().iter().any(|f| f.deletion_vector.is_some());
                let dv_tomb = old
                    .state
                    .tombstones
                    .values()
                    .any(|r| r.deletion_vector.is_some());
                if dv_file || dv_tomb {
                    newest = Some((oldest, at));
                }
            }
        }
    }
    Ok(newest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proto(r: i32, reader: Option<&[&str]>, writer: &[&str]) -> Protocol {
        Protocol {
            min_reader_version: r,
            min_writer_version: 7,
            reader_features: reader.map(|f| f.iter().map(|s| s.to_string()).collect()),
            writer_features: Some(writer.iter().map(|s| s.to_string()).collect()),
        }
    }

    #[test]
    fn dropping_the_last_reader_feature_lowers_the_reader_version() {
        let p = proto(
            3,
            Some(&["deletionVectors"]),
            &["deletionVectors", "appendOnly"],
        );
        assert_eq!(
            without(&p, "deletionVectors"),
            proto(1, None, &["appendOnly"])
        );
        let p = proto(
            3,
            Some(&["deletionVectors", "columnMapping"]),
            &["columnMapping", "deletionVectors"],
        );
        assert_eq!(
            without(&p, "deletionVectors"),
            proto(3, Some(&["columnMapping"]), &["columnMapping"])
        );
    }
}
