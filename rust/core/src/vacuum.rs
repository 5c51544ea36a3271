//! VACUUM: delete the files under a table that no version inside the retention window can read.
//!
//! A file stays when a version of the window may read it: it is live in the latest snapshot,
//! or a tombstone removed it after the window's start (every version since then, back to the
//! window's start, may still list it), or it is a deletion-vector file one of those references.
//! A file nothing references stays too while it is newer than the window's start: a writer that
//! has not committed yet may be about to add it. Everything else under the table's root is
//! deleted, except the log and hidden files and directories (names starting with `_` or `.`,
//! other than partition directories and `_change_data`); a hidden file is deleted only as the
//! checksum companion (`.<name>.crc`, Hadoop's local file system) of a file deleted here, or as
//! the job marker (`_SUCCESS`) of a directory this VACUUM empties.

use std::collections::{BTreeMap, HashSet};

use crate::dv::descriptor::DvLocation;
use crate::error::{Error, Result};
use crate::properties::parse_interval_ms;
use crate::snapshot::Snapshot;
use crate::storage::{Entry, Location};

/// `delta.deletedFileRetentionDuration`'s default: one week, as in delta-spark and deltalake.
pub const DEFAULT_RETENTION_MS: i64 = 7 * 24 * 3600 * 1000;

/// What a VACUUM found under a table, and what it deleted.
#[derive(Debug, Clone, PartialEq)]
pub struct VacuumReport {
    /// The snapshot version whose references were kept.
    pub version: i64,
    pub retention_ms: i64,
    /// Files last modified before this instant (ms since the epoch) and referenced by no version
    /// inside the window are deleted.
    pub cutoff_ms: i64,
    /// The files deleted (or, for a dry run, to delete), relative to the table root, in name order.
    pub files: Vec<Entry>,
    /// Listed files kept because a version inside the window references them.
    pub kept_referenced: usize,
    /// Listed files referenced by no version, kept because they are newer than the cutoff.
    pub kept_recent: usize,
    pub dry_run: bool,
}

impl VacuumReport {
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|e| e.size).sum()
    }
}

/// The table's `delta.deletedFileRetentionDuration` in milliseconds (default one week); a value
/// that is no interval is an error, not a silently shorter retention.
pub fn configured_retention_ms(snap: &Snapshot) -> Result<i64> {
    match snap
        .metadata()
        .configuration
        .get("delta.deletedFileRetentionDuration")
    {
        None => Ok(DEFAULT_RETENTION_MS),
        Some(v) => parse_interval_ms(v).ok_or_else(|| {
            Error::invalid(format!(
                "{} (version {}): delta.deletedFileRetentionDuration = {v:?} is not an interval \
                 such as 'interval 7 days'",
                snap.root,
                snap.version()
            ))
        }),
    }
}

/// Plan (and unless `dry_run`, carry out) a VACUUM of `snap`'s table at instant `now_ms`.
/// `retention_ms`: the window (default: the table's retention); one shorter than the table's is
/// refused while `enforce_retention` holds, since a concurrent writer or a reader of an older
/// version may still need the files (delta-spark and deltalake refuse alike).
pub fn vacuum(
    snap: &Snapshot,
    retention_ms: Option<i64>,
    enforce_retention: bool,
    dry_run: bool,
    now_ms: i64,
) -> Result<VacuumReport> {
    let version = snap.version();
    // Only a writer that knows every feature of the protocol knows every file it references.
    crate::protocol::check_writable(snap.protocol(), &snap.root.to_string(), version)?;
    let configured = configured_retention_ms(snap)?;
    let retention_ms = retention_ms.unwrap_or(configured);
    if retention_ms < 0 {
        return Err(Error::invalid(format!(
            "VACUUM {}: retention must not be negative, got {retention_ms} ms",
            snap.root
        )));
    }
    if enforce_retention && retention_ms < configured {
        return Err(Error::invalid(format!(
            "VACUUM {} (version {version}): a retention of {} hours is shorter than the table's \
             delta.deletedFileRetentionDuration ({} hours); files a concurrent writer is about to \
             commit, or an older version's readers need, could be deleted. Pass \
             enforce_retention_duration=False if you are sure",
            snap.root,
            retention_ms as f64 / 3_600_000.0,
            configured as f64 / 3_600_000.0
        )));
    }
    let cutoff_ms = now_ms.saturating_sub(retention_ms);
    let referenced = referenced_keys(snap, cutoff_ms)?;
    let listed = snap
        .root
        .list(None, true)
        .map_err(|e| Error::io(&snap.root, e))?;
    let mut report = VacuumReport {
        version,
        retention_ms,
        cutoff_ms,
        files: Vec::new(),
        kept_referenced: 0,
        kept_recent: 0,
        dry_run,
    };
    let old = |e: &Entry| e.modified.is_some_and(|m| m < cutoff_ms);
    let mut hidden: Vec<&Entry> = Vec::new();
    // Per directory: how many visible files stay.
    let mut staying: BTreeMap<&str, usize> = BTreeMap::new();
    for e in &listed {
        let dir = e.name.rsplit_once('/').map_or("", |(d, _)| d);
        match visibility(&e.name) {
            Visibility::Log => continue,
            Visibility::Hidden => {
                hidden.push(e);
                continue;
            }
            Visibility::Visible => {}
        }
        if referenced.contains(snap.root.join(&e.name).key()) {
            report.kept_referenced += 1;
        } else if !old(e) {
            report.kept_recent += 1;
        } else {
            report.files.push(e.clone());
            continue;
        }
        *staying.entry(dir).or_default() += 1;
    }
    let deleted: HashSet<&str> = report.files.iter().map(|e| e.name.as_str()).collect();
    let mut companions = Vec::new();
    for e in hidden {
        let (dir, name) = e.name.rsplit_once('/').unwrap_or(("", e.name.as_str()));
        // Only hidden files directly in a visible directory (never inside `_temporary/` etc.).
        if !old(e) || dir.split('/').any(is_hidden) {
            continue;
        }
        let of_deleted = name
            .strip_prefix('.')
            .and_then(|n| n.strip_suffix(".crc"))
            .is_some_and(|data| {
                let full = if dir.is_empty() {
                    data.to_string()
                } else {
                    format!("{dir}/{data}")
                };
                deleted.contains(full.as_str())
            });
        let emptied_marker =
            name == "_SUCCESS" && !dir.is_empty() && staying.get(dir).copied().unwrap_or(0) == 0;
        if of_deleted || emptied_marker {
            companions.push(e.clone());
        }
    }
    report.files.extend(companions);
    report.files.sort_by(|a, b| a.name.cmp(&b.name));
    if !dry_run {
        delete_all(&snap.root, &report.files)?;
    }
    Ok(report)
}

enum Visibility {
    Log,
    Hidden,
    Visible,
}

fn is_hidden(component: &str) -> bool {
    (component.starts_with('_') || component.starts_with('.'))
        && !component.contains('=')
        && component != "_change_data"
}

/// Whether a file under a table's root (`name` relative to it) is one vacuum treats as a data
/// file: outside `_delta_log/`, with no hidden directory or name on its path. Creating a table
/// where such files exist is refused ([`crate::table::begin_create`]): vacuum would delete them.
pub fn is_visible_data(name: &str) -> bool {
    matches!(visibility(name), Visibility::Visible)
}

fn visibility(name: &str) -> Visibility {
    if name.starts_with("_delta_log/") {
        return Visibility::Log;
    }
    if name.split('/').any(is_hidden) {
        Visibility::Hidden
    } else {
        Visibility::Visible
    }
}

/// The storage keys of every data and DV file a version inside the window may read.
fn referenced_keys(snap: &Snapshot, cutoff_ms: i64) -> Result<HashSet<String>> {
    let root = &snap.root;
    let corrupt = |what: &str, path: &str, m: String| {
        Error::corrupt(
            root.join("_delta_log"),
            Some(snap.version()),
            format!("{what} {path}: {m}"),
        )
    };
    let mut keys = HashSet::new();
    let mut dv = |d: &crate::dv::DeletionVectorDescriptor, path: &str| -> Result<()> {
        match d.location(root) {
            Ok(DvLocation::File { path, .. }) => {
                keys.insert(path.key().to_string());
                Ok(())
            }
            Ok(DvLocation::Inline(_)) => Ok(()),
            // An absolute DV path into another store (never listed here).
            Err(_) if d.storage_type == "p" => Ok(()),
            Err(m) => Err(corrupt("deletion vector of", path, m)),
        }
    };
    let mut files: Vec<String> = Vec::new();
    for a in snap.files() {
        if let Some(d) = &a.deletion_vector {
            dv(d, &a.path)?;
        }
        if let Some(k) = key_of(root, &a.path).map_err(|m| corrupt("add.path", &a.path, m))? {
            files.push(k);
        }
    }
    for r in snap.state.tombstones.values() {
        // A remove without a timestamp cannot be aged: its file stays (the conservative side).
        if r.deletion_timestamp.is_some_and(|t| t < cutoff_ms) {
            continue;
        }
        if let Some(d) = &r.deletion_vector {
            dv(d, &r.path)?;
        }
        if let Some(k) = key_of(root, &r.path).map_err(|m| corrupt("remove.path", &r.path, m))? {
            files.push(k);
        }
    }
    keys.extend(files);
    Ok(keys)
}

/// The storage key of a log path; `None` for an absolute URI of another store (a shallow
/// clone's source files: never listed here, so never deleted). A relative path that does not
/// resolve is an error: its file could otherwise look unreferenced.
fn key_of(root: &Location, log_path: &str) -> std::result::Result<Option<String>, String> {
    match root.resolve(log_path) {
        Ok(l) => Ok(Some(l.key().to_string())),
        Err(_) if log_path.contains("://") => Ok(None),
        Err(m) => Err(m),
    }
}

/// Delete the files, on several threads for an object store (each delete is a request).
fn delete_all(root: &Location, files: &[Entry]) -> Result<()> {
    let threads = if root.is_local() { 1 } else { 16 };
    crate::parallel::map_on(files, threads, |e| {
        let at = root.join(&e.name);
        at.delete().map_err(|err| Error::io(&at, err))
    })
    .into_iter()
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_hidden() {
        for (name, hidden) in [
            ("part-0.parquet", false),
            ("p=1/part-0.parquet", false),
            ("_p=1/part-0.parquet", false),
            ("_change_data/cdc-0.parquet", false),
            ("deletion_vector_x.bin", false),
            ("spark-ab/part-0.parquet", false),
            ("spark-ab/_SUCCESS", true),
            ("spark-ab/_temporary/0/part-0.parquet", true),
            (".part-0.parquet.crc", true),
            ("p=1/.part-0.parquet.crc", true),
        ] {
            assert_eq!(
                matches!(visibility(name), Visibility::Hidden),
                hidden,
                "{name}"
            );
        }
        assert!(matches!(
            visibility("_delta_log/00000000000000000000.json"),
            Visibility::Log
        ));
    }
}
