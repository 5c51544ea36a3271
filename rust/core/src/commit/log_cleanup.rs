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

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::log::path::{checksum_version, parse_name, LogFileKind};
use crate::log::segment::log_dir;
use crate::properties::parse_interval_ms;
use crate::snapshot::Snapshot;

/// `delta.logRetentionDuration`'s default: 30 days.
pub const DEFAULT_LOG_RETENTION_MS: i64 = 30 * 24 * 3600 * 1000;

/// What one cleanup did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cleaned {
    /// The oldest version still reconstructable (the boundary checkpoint), if anything expired.
    pub boundary: Option<i64>,
    pub deleted: usize,
}

/// Clean up `snap`'s log at instant `now_ms` (after a checkpoint of `snap`'s version).
pub fn expire(snap: &Snapshot, now_ms: i64) -> Result<Cleaned> {
    let config = &snap.metadata().configuration;
    if config
        .get("delta.enableExpiredLogCleanup")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("false"))
    {
        return Ok(Cleaned::default());
    }
    let retention = config
        .get("delta.logRetentionDuration")
        .and_then(|v| parse_interval_ms(v))
        .unwrap_or(DEFAULT_LOG_RETENTION_MS);
    let cutoff = now_ms.saturating_sub(retention);
    let dir = log_dir(&snap.root);
    let entries = dir.list(None, false).map_err(|e| Error::io(&dir, e))?;
    // Per version: its files (name), whether its commit is older than the cutoff, and whether a
    // complete checkpoint exists for it.
    #[derive(Default)]
    struct Version {
        files: Vec<String>,
        commit_expired: Option<bool>,
        classic_or_v2: bool,
        /// Multi-part checkpoints: parts found, per number of parts.
        parts: BTreeMap<u32, u32>,
    }
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
    let Some(newest_expired) = versions
        .iter()
        .filter(|(_, v)| v.commit_expired == Some(true))
        .map(|(k, _)| *k)
        .next_back()
    else {
        return Ok(Cleaned::default());
    };
    let complete = |v: &Version| v.classic_or_v2 || v.parts.iter().any(|(n, got)| got == n);
    let Some(boundary) = versions
        .range(..=newest_expired)
        .filter(|(_, v)| complete(v))
        .map(|(k, _)| *k)
        .next_back()
    else {
        return Ok(Cleaned::default());
    };
    let mut deleted = 0;
    for (_, v) in versions.range(..boundary) {
        for name in &v.files {
            let at = dir.join(name);
            at.delete().map_err(|e| Error::io(&at, e))?;
            deleted += 1;
        }
    }
    Ok(Cleaned {
        boundary: Some(boundary),
        deleted,
    })
}
