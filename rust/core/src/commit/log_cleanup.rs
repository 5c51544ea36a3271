//! Log cleanup (protocol "Metadata Cleanup"): after a checkpoint, the commits, checkpoints and
//! checksum files older than `delta.logRetentionDuration` (default 30 days) are deleted, unless
//! `delta.enableExpiredLogCleanup` is false.
//!
//! Every version inside the window must stay readable, including the one that was current when
//! the window began (the newest version committed before its start, `v*`). So the cleanup keeps
//! the newest complete checkpoint at or before `v*` — the boundary — and every log file from it
//! on, and deletes only files of versions before the boundary, oldest first: a reader that
//! listed the log before the cleanup and starts from the boundary or later never misses a file,
//! and one that needs an older version fails (the file is gone) rather than reading part of it.
//!
//! Sidecars (V2 checkpoints) that no remaining checkpoint names are deleted too, but only once
//! they are older than the window and a day (protocol-notes.md §4.4): a checkpoint writer writes
//! its sidecars before the file that names them, so a young unnamed sidecar may be in use.
//!
//! Leftover conditional-write probes (`.delta-occ-probe-*`, [`crate::storage::probe`]) go too,
//! once stale, whatever the retention and also when expired-log cleanup is off: they are no
//! part of the log, only litter a killed prober (or one that may not delete) left behind.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::log::path::{checksum_version, parse_name, LogFile, LogFileKind};
use crate::log::segment::log_dir;
use crate::properties::parse_interval_ms;
use crate::snapshot::Snapshot;
use crate::storage::{probe, Location};

/// `delta.logRetentionDuration`'s default: 30 days.
pub const DEFAULT_LOG_RETENTION_MS: i64 = 30 * 24 * 3600 * 1000;

/// What one cleanup did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cleaned {
    /// The oldest version still reconstructable (the boundary checkpoint), if anything expired.
    pub boundary: Option<i64>,
    pub deleted: usize,
    /// Unreferenced sidecars deleted.
    pub sidecars_deleted: usize,
    /// Stale conditional-write probes deleted.
    pub probes_deleted: usize,
}

/// A sidecar younger than this is never deleted, named or not.
pub const SIDECAR_MIN_AGE_MS: i64 = 24 * 3600 * 1000;

/// Per version: its files (name), whether its commit is older than the cutoff, and whether a
/// complete checkpoint exists for it.
#[derive(Default)]
struct Version {
    files: Vec<String>,
    commit_expired: Option<bool>,
    classic_or_v2: bool,
    /// Multi-part checkpoints: parts found, per number of parts.
    parts: BTreeMap<u32, u32>,
}

/// Clean up `snap`'s log at instant `now_ms` (after a checkpoint of `snap`'s version).
pub fn expire(snap: &Snapshot, now_ms: i64) -> Result<Cleaned> {
    let dir = log_dir(&snap.root);
    let entries = dir.list(None, false).map_err(|e| Error::io(&dir, e))?;
    // First, and never an error: a failed expiry below must not keep the litter.
    let probes_deleted = probe::remove_stale(&dir, &entries, now_ms);
    let config = &snap.metadata().configuration;
    if config
        .get("delta.enableExpiredLogCleanup")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("false"))
    {
        return Ok(Cleaned {
            probes_deleted,
            ..Cleaned::default()
        });
    }
    let retention = config
        .get("delta.logRetentionDuration")
        .and_then(|v| parse_interval_ms(v))
        .unwrap_or(DEFAULT_LOG_RETENTION_MS);
    let cutoff = now_ms.saturating_sub(retention);
    let mut versions: BTreeMap<i64, Version> = BTreeMap::new();
    for e in &entries {
        let (version, kind) = match parse_name(&e.name) {
            Some((version, kind)) => (version, Some(kind)),
            None => match checksum_version(&e.name) {
                Some(version) => (version, None),
                None => continue,
            },
        };
        if version > snap.version() {
            continue;
        }
        let v = versions.entry(version).or_default();
        match kind {
            // Optional log compactions stay (replay does not need them; they cost nothing).
            Some(LogFileKind::Compaction { .. }) => continue,
            Some(LogFileKind::Commit) => {
                v.commit_expired = Some(e.modified.is_some_and(|m| m <= cutoff));
            }
            Some(LogFileKind::ClassicCheckpoint | LogFileKind::UuidCheckpoint { .. }) => {
                v.classic_or_v2 = true;
            }
            Some(LogFileKind::MultiPartCheckpoint { parts, .. }) => {
                *v.parts.entry(parts).or_default() += 1;
            }
            None => {} // a `.crc`
        }
        v.files.push(e.name.clone());
    }
    // v*: the newest version whose commit is older than the cutoff (commit times only grow).
    let boundary = expired_boundary(&versions);
    let mut deleted = 0;
    if let Some(boundary) = boundary {
        for (_, v) in versions.range(..boundary) {
            for name in &v.files {
                let at = dir.join(name);
                at.delete().map_err(|e| Error::io(&at, e))?;
                deleted += 1;
            }
        }
    }
    let older_than = cutoff.min(now_ms - SIDECAR_MIN_AGE_MS);
    let sidecars_deleted = expire_sidecars(
        snap,
        &dir,
        &entries,
        boundary.unwrap_or(i64::MIN),
        older_than,
    )?;
    Ok(Cleaned {
        boundary,
        deleted,
        sidecars_deleted,
        probes_deleted,
    })
}

/// Log cleanup asked for outside a commit (`Table.cleanup_metadata`): [`expire`], on a table
/// this client may write (it must understand the checkpoints it keeps).
pub fn cleanup(snap: &Snapshot, now_ms: i64) -> Result<Cleaned> {
    crate::protocol::check_writable(snap.protocol(), &snap.root.to_string(), snap.version())?;
    expire(snap, now_ms)
}

/// Delete every log file of a version before `snap`'s (which has just been checkpointed), oldest
/// first, whatever its age, and every sidecar the new checkpoint does not name once it is a day
/// old: DROP FEATURE's history truncation.
pub fn truncate_before(snap: &Snapshot) -> Result<Cleaned> {
    let dir = log_dir(&snap.root);
    let entries = dir.list(None, false).map_err(|e| Error::io(&dir, e))?;
    let now_ms = chrono::Utc::now().timestamp_millis();
    let probes_deleted = probe::remove_stale(&dir, &entries, now_ms);
    let mut doomed: Vec<(i64, &str)> = entries
        .iter()
        .filter_map(|e| {
            let version = match parse_name(&e.name) {
                Some((v, _)) => v,
                None => checksum_version(&e.name)?,
            };
            (version < snap.version()).then_some((version, e.name.as_str()))
        })
        .collect();
    doomed.sort();
    for (_, name) in &doomed {
        let at = dir.join(name);
        at.delete().map_err(|e| Error::io(&at, e))?;
    }
    let older_than = now_ms - SIDECAR_MIN_AGE_MS;
    let sidecars_deleted = expire_sidecars(snap, &dir, &entries, snap.version(), older_than)?;
    Ok(Cleaned {
        boundary: Some(snap.version()),
        deleted: doomed.len(),
        sidecars_deleted,
        probes_deleted,
    })
}

/// The newest complete checkpoint at or before the newest expired commit.
fn expired_boundary(versions: &BTreeMap<i64, Version>) -> Option<i64> {
    // v*: the newest version whose commit is older than the cutoff (commit times only grow).
    let newest_expired = versions
        .iter()
        .filter(|(_, v)| v.commit_expired == Some(true))
        .map(|(k, _)| *k)
        .next_back()?;
    let complete = |v: &Version| v.classic_or_v2 || v.parts.iter().any(|(n, got)| got == n);
    versions
        .range(..=newest_expired)
        .filter(|(_, v)| complete(v))
        .map(|(k, _)| *k)
        .next_back()
}

/// On a `v2Checkpoint` table, delete the sidecars older than `older_than` that no checkpoint
/// of version `keep_from` or later (among the listed `entries`) names. The checkpoints are read
/// only when there is such a candidate.
fn expire_sidecars(
    snap: &Snapshot,
    dir: &Location,
    entries: &[crate::storage::Entry],
    keep_from: i64,
    older_than: i64,
) -> Result<usize> {
    if !crate::protocol::has_writer_feature(snap.protocol(), "v2Checkpoint") {
        return Ok(0);
    }
    let checkpoints: Vec<LogFile> = entries
        .iter()
        .filter_map(|e| {
            let (version, kind) = parse_name(&e.name)?;
            let is_checkpoint = matches!(
                kind,
                LogFileKind::ClassicCheckpoint | LogFileKind::UuidCheckpoint { .. }
            );
            (is_checkpoint && version >= keep_from).then(|| LogFile {
                version,
                kind,
                path: dir.join(&e.name),
                size: e.size,
                modified: e.modified,
            })
        })
        .collect();
    let sidecars = dir.join("_sidecars");
    let listed = match sidecars.list(None, false) {
        Ok(l) => l,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(Error::io(&sidecars, e)),
    };
    let candidates: Vec<_> = listed
        .iter()
        .filter(|e| e.modified.is_some_and(|m| m < older_than))
        .collect();
    if candidates.is_empty() {
        return Ok(0);
    }
    let mut named = std::collections::HashSet::new();
    for names in crate::parallel::map(&checkpoints, crate::log::checkpoint::sidecar_names) {
        named.extend(names?);
    }
    let mut deleted = 0;
    for e in candidates {
        if !named.contains(&e.name) {
            let at = sidecars.join(&e.name);
            at.delete().map_err(|e| Error::io(&at, e))?;
            deleted += 1;
        }
    }
    Ok(deleted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::probe;
    use crate::table::Table;

    const SCHEMA: &str =
        r#"{"type":"struct","fields":[{"name":"x","type":"long","nullable":true,"metadata":{}}]}"#;
    const HOUR: i64 = 3600 * 1000;

    /// A stale probe goes at every cleanup, also with expired-log cleanup off; a fresh one and
    /// every log file stay.
    #[test]
    fn stale_probes_go_whatever_the_log_settings() {
        for enabled in ["true", "false"] {
            let dir = tempfile::tempdir().unwrap();
            let props = BTreeMap::from([(
                "delta.enableExpiredLogCleanup".to_string(),
                enabled.to_string(),
            )]);
            let path = dir.path().to_str().unwrap();
            let t = Table::create(path, &Default::default(), SCHEMA, vec![], props, None).unwrap();
            let log = dir.path().join("_delta_log");
            let now = chrono::Utc::now().timestamp_millis();
            let (stale, fresh) = (probe::name(now - 2 * HOUR), probe::name(now - 1000));
            for (name, age) in [(&stale, 2 * HOUR), (&fresh, 1000)] {
                let f = std::fs::File::create(log.join(name)).unwrap();
                let at =
                    std::time::UNIX_EPOCH + std::time::Duration::from_millis((now - age) as u64);
                f.set_modified(at).unwrap();
            }
            let cleaned = expire(&t.latest(), now).unwrap();
            assert_eq!(
                cleaned.probes_deleted, 1,
                "enableExpiredLogCleanup={enabled}"
            );
            assert_eq!((cleaned.deleted, cleaned.boundary), (0, None));
            let mut left: Vec<String> = std::fs::read_dir(&log)
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect();
            left.sort();
            assert_eq!(
                left,
                vec![fresh.clone(), "00000000000000000000.json".into()]
            );
        }
    }
}
