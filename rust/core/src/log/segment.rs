//! Listing `_delta_log/` and choosing the files that reconstruct a version: the newest complete
//! checkpoint at or before it plus the contiguous commits after it.

use std::collections::BTreeMap;

use super::path::{parse_name, LogFile, LogFileKind};
use crate::error::{Error, Result};
use crate::storage::Location;

#[derive(Debug, Clone, Default)]
pub struct Listing {
    pub commits: BTreeMap<i64, LogFile>,
    pub checkpoints: BTreeMap<i64, Vec<LogFile>>,
}

#[derive(Debug, Clone)]
pub struct CheckpointFiles {
    pub version: i64,
    pub files: Vec<LogFile>,
}

#[derive(Debug, Clone)]
pub struct LogSegment {
    pub checkpoint: Option<CheckpointFiles>,
    pub commits: Vec<LogFile>,
}

pub fn log_dir(root: &Location) -> Location {
    root.join("_delta_log")
}

/// List the log files of versions `start` and up (an object store lists from there: a refresh
/// lists only the new commits).
pub fn list(root: &Location, start: i64) -> Result<Listing> {
    let dir = log_dir(root);
    // Every name of version `start` or later sorts after the bare 20-digit number.
    let after = (start > 0).then(|| format!("{start:020}"));
    let entries = match dir.list(after.as_deref(), false) {
        Ok(e) => e,
        Err(e)
            if e.kind() == std::io::ErrorKind::NotFound
                && crate::error::problem_of(&e).is_none() =>
        {
            return Err(Error::TableNotFound {
                path: root.to_string(),
                reason: "there is no _delta_log directory".into(),
            })
        }
        Err(e) => return Err(Error::io(&dir, e)),
    };
    let mut listing = Listing::default();
    for entry in entries {
        let Some((version, kind)) = parse_name(&entry.name) else {
            continue;
        };
        if version < start {
            continue;
        }
        let file = LogFile {
            version,
            kind,
            path: dir.join(&entry.name),
            size: entry.size,
        };
        match file.kind {
            LogFileKind::Commit => {
                listing.commits.insert(version, file);
            }
            LogFileKind::Compaction { .. } => {}
            _ => listing.checkpoints.entry(version).or_default().push(file),
        }
    }
    Ok(listing)
}

impl Listing {
    pub fn latest_version(&self) -> Option<i64> {
        let c = self.commits.keys().next_back().copied();
        let k = self.complete_checkpoints().last().map(|c| c.version);
        c.max(k)
    }

    /// Complete checkpoints in ascending version order (one per version).
    pub fn complete_checkpoints(&self) -> Vec<CheckpointFiles> {
        self.checkpoints
            .iter()
            .filter_map(|(&v, files)| {
                complete_at(files).map(|files| CheckpointFiles { version: v, files })
            })
            .collect()
    }

    fn incomplete_note(&self, below_or_at: i64) -> String {
        let mut notes = Vec::new();
        for (&v, files) in self.checkpoints.range(..=below_or_at) {
            if complete_at(files).is_none() {
                let parts: Vec<String> = files
                    .iter()
                    .filter_map(|f| match f.kind {
                        LogFileKind::MultiPartCheckpoint { part, parts } => {
                            Some(format!("{part}/{parts}"))
                        }
                        _ => None,
                    })
                    .collect();
                notes.push(format!(
                    "checkpoint {v} is incomplete (only parts {} present)",
                    parts.join(", ")
                ));
            }
        }
        if notes.is_empty() {
            String::new()
        } else {
            format!("; {}", notes.join("; "))
        }
    }

    /// The segment for `version` (latest when `None`).
    pub fn segment(&self, root: &Location, version: Option<i64>) -> Result<LogSegment> {
        let table = root.to_string();
        let latest = self.latest_version().ok_or_else(|| Error::TableNotFound {
            path: table.clone(),
            reason: "_delta_log holds no commits or checkpoints".into(),
        })?;
        let version = version.unwrap_or(latest);
        if version < 0 || version > latest {
            return Err(Error::VersionNotFound {
                table,
                version,
                reason: format!("the latest version is {latest}"),
            });
        }
        let checkpoint = self
            .complete_checkpoints()
            .into_iter()
            .rev()
            .find(|c| c.version <= version);
        let first = checkpoint.as_ref().map(|c| c.version + 1).unwrap_or(0);
        let mut commits = Vec::with_capacity((version - first + 1).max(0) as usize);
        for v in first..=version {
            match self.commits.get(&v) {
                Some(f) => commits.push(f.clone()),
                None => return Err(self.gap_error(root, v, first, version)),
            }
        }
        Ok(LogSegment {
            checkpoint,
            commits,
        })
    }

    fn gap_error(&self, root: &Location, missing: i64, first: i64, version: i64) -> Error {
        let table = root.to_string();
        let present: Vec<i64> = self
            .commits
            .range(first..=version)
            .map(|(v, _)| *v)
            .collect();
        let earliest = self.commits.keys().next().copied();
        let cleaned_up = first == 0 && earliest.is_none_or(|e| e > missing);
        let latest = self.latest_version().unwrap_or(version);
        if cleaned_up && version < latest {
            // Time travel past log cleanup: an old version, not a broken table.
            return Error::VersionNotFound {
                table,
                version,
                reason: format!(
                    "no checkpoint at or before it and the commits from version 0 are gone (the log starts at {}){}",
                    earliest.map(|e| e.to_string()).unwrap_or_else(|| "-".into()),
                    self.incomplete_note(version)
                ),
            };
        }
        let path = log_dir(root).join(&super::path::commit_file_name(missing));
        let what = if cleaned_up {
            format!("commit {missing} is missing and no complete checkpoint covers it (found commits {present:?})")
        } else {
            format!("versions are not contiguous: commit {missing} is missing between {first} and {version} (found {present:?})")
        };
        Error::corrupt(
            path,
            Some(missing),
            format!("{what}{}", self.incomplete_note(version)),
        )
    }
}

fn complete_at(files: &[LogFile]) -> Option<Vec<LogFile>> {
    if let Some(f) = files
        .iter()
        .find(|f| f.kind == LogFileKind::ClassicCheckpoint)
    {
        return Some(vec![f.clone()]);
    }
    if let Some(f) = files
        .iter()
        .find(|f| matches!(f.kind, LogFileKind::UuidCheckpoint { .. }))
    {
        return Some(vec![f.clone()]);
    }
    // Multi-part: any total whose parts are all present.
    let mut by_total: BTreeMap<u32, Vec<&LogFile>> = BTreeMap::new();
    for f in files {
        if let LogFileKind::MultiPartCheckpoint { parts, .. } = f.kind {
            by_total.entry(parts).or_default().push(f);
        }
    }
    for (total, mut parts) in by_total {
        parts.sort_by_key(|f| match f.kind {
            LogFileKind::MultiPartCheckpoint { part, .. } => part,
            _ => 0,
        });
        parts.dedup_by_key(|f| f.path.clone());
        if parts.len() == total as usize {
            return Some(parts.into_iter().cloned().collect());
        }
    }
    None
}
