//! Listing `_delta_log/` and choosing the files that reconstruct a version: the newest complete
//! checkpoint at or before it plus the contiguous commits after it.

use std::collections::BTreeMap;

use std::ops::RangeInclusive;

use super::path::{commit_path, parse_name, LogFile, LogFileKind};
use crate::error::{Error, Result};
use crate::storage::Location;

#[derive(Debug, Clone, Default)]
pub struct Listing {
    pub commits: BTreeMap<i64, LogFile>,
    pub checkpoints: BTreeMap<i64, Vec<LogFile>>,
    /// Log-compaction files by their first version (protocol-notes §4.2): each may stand for
    /// commits `x..=y` that are gone.
    pub compactions: BTreeMap<i64, Vec<LogFile>>,
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
    #[cfg(any(test, feature = "test-hooks"))]
    let entries_hook = crate::test_hooks::listing_drops();
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
    #[cfg(any(test, feature = "test-hooks"))]
    let entries = {
        let mut entries = entries;
        if let Some(i) = entries_hook.dropped(entries.iter().map(|e| e.name.as_str())) {
            entries.remove(i);
        }
        entries
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
            modified: entry.modified,
        };
        match file.kind {
            LogFileKind::Commit => {
                listing.commits.insert(version, file);
            }
            LogFileKind::Compaction { .. } => {
                listing.compactions.entry(version).or_default().push(file)
            }
            _ => listing.checkpoints.entry(version).or_default().push(file),
        }
    }
    Ok(listing)
}

/// At most this many versions a second listing still lacks are read by name: a listing that
/// misses more than that twice is not a listing race but a log with a hole.
const PROBES: usize = 16;

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

    /// The commits among `range` that this listing lacks and that stay absent when looked for
    /// again. A listing is not a snapshot of the directory: a local file system's readdir may
    /// miss an entry created while it runs yet return a later one, and an object store's listing
    /// may lag its writes. So a hole is first listed again (from the hole on) and each version
    /// still missing then read by name ([`PROBES`] at most); whatever is found joins the listing.
    /// Returns the versions that remain missing, in order: only those are a gap.
    pub fn confirm(&mut self, root: &Location, range: RangeInclusive<i64>) -> Result<Vec<i64>> {
        let holes = |l: &Listing| -> Vec<i64> {
            range
                .clone()
                .filter(|v| !l.commits.contains_key(v))
                .collect()
        };
        let missing = holes(self);
        let Some(&first) = missing.first() else {
            return Ok(missing);
        };
        self.merge(list(root, first)?);
        let dir = log_dir(root);
        let mut missing = holes(self);
        let mut still = Vec::new();
        for (i, v) in missing.drain(..).enumerate() {
            if i >= PROBES {
                still.push(v);
                continue;
            }
            let path = commit_path(&dir, v);
            match path.size() {
                Ok(size) => {
                    let file = LogFile {
                        version: v,
                        kind: LogFileKind::Commit,
                        path,
                        size,
                        modified: None,
                    };
                    self.commits.insert(v, file);
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => still.push(v),
                Err(e) => return Err(Error::io(&path, e)),
            }
        }
        Ok(still)
    }

    /// [`Listing::confirm`] over the versions from the oldest commit listed to `upto` (the newest
    /// listed when `None`): the holes between listed commits, which log cleanup never makes.
    pub fn confirm_listed(&mut self, root: &Location, upto: Option<i64>) -> Result<Vec<i64>> {
        let (Some(&lo), Some(&hi)) = (self.commits.keys().next(), self.commits.keys().next_back())
        else {
            return Ok(Vec::new());
        };
        self.confirm(root, lo..=upto.unwrap_or(hi))
    }

    /// Add what `other` (a later listing) found.
    fn merge(&mut self, other: Listing) {
        self.commits.extend(other.commits);
        for (map, more) in [
            (&mut self.checkpoints, other.checkpoints),
            (&mut self.compactions, other.compactions),
        ] {
            for (v, files) in more {
                let known = map.entry(v).or_default();
                for f in files {
                    if !known.iter().any(|k| k.path == f.path) {
                        known.push(f);
                    }
                }
            }
        }
    }

    /// The segment for `version` (latest when `None`): the newest complete checkpoint at or
    /// before it and the commits after it, contiguous. A hole in the listing is looked for again
    /// ([`Listing::confirm`]) before it counts; a commit that is really gone may be stood for by
    /// a log-compaction file covering it.
    pub fn segment(&mut self, root: &Location, version: Option<i64>) -> Result<LogSegment> {
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
        let mut looked_again = false;
        loop {
            let checkpoint = self
                .complete_checkpoints()
                .into_iter()
                .rev()
                .find(|c| c.version <= version);
            let first = checkpoint.as_ref().map(|c| c.version + 1).unwrap_or(0);
            match self.contiguous(first, version) {
                Ok(commits) => {
                    return Ok(LogSegment {
                        checkpoint,
                        commits,
                    })
                }
                Err(missing) if looked_again => {
                    return Err(self.gap_error(root, missing, first, version))
                }
                Err(_) => {
                    // Looked for again once; a checkpoint the second listing found may also
                    // shorten the segment.
                    self.confirm(root, first..=version)?;
                    looked_again = true;
                }
            }
        }
    }

    /// The files replaying versions `first..=version`: each commit, or where commits are gone a
    /// compaction file that covers them (its version is its last one). `Err` names the first
    /// version neither covers.
    fn contiguous(&self, first: i64, version: i64) -> std::result::Result<Vec<LogFile>, i64> {
        let mut out = Vec::with_capacity((version - first + 1).max(0) as usize);
        let mut v = first;
        // Where a compaction may start: after the last one taken (they never overlap here).
        let mut floor = first;
        while v <= version {
            if let Some(f) = self.commits.get(&v) {
                out.push(f.clone());
                v += 1;
                continue;
            }
            // The compaction reaching furthest (within the segment) that starts in the segment
            // at or before the hole; the commits it replaces are dropped.
            let cover = self
                .compactions
                .range(floor..=v)
                .flat_map(|(_, files)| files)
                .filter_map(|f| match f.kind {
                    LogFileKind::Compaction { end } if end >= v && end <= version => Some((end, f)),
                    _ => None,
                })
                .max_by_key(|(end, _)| *end);
            let Some((end, f)) = cover else {
                return Err(v);
            };
            out.retain(|c| c.version < f.version);
            out.push(LogFile {
                version: end,
                ..f.clone()
            });
            v = end + 1;
            floor = v;
        }
        Ok(out)
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::commit::committer::commit;
    use crate::commit::options::CommitOptions;
    use crate::load;
    use crate::log::path::commit_file_name;
    use crate::table::Table;
    use crate::test_hooks::drop_from_next_listings;
    use crate::transaction::{Transaction, TxnOptions};

    const SCHEMA: &str =
        r#"{"type":"struct","fields":[{"name":"x","type":"long","nullable":true,"metadata":{}}]}"#;

    /// A table with versions 0..=`last`, each after 0 adding one file `f<v>.parquet`.
    fn table(dir: &std::path::Path, last: i64, props: &[(&str, &str)]) -> Table {
        let props = props
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let path = dir.to_str().unwrap();
        let mut t = Table::create(path, &Default::default(), SCHEMA, vec![], props, None).unwrap();
        for v in 1..=last {
            let mut txn = begin(&mut t);
            add(&mut txn, &format!("f{v}"));
            commit(
                &mut txn,
                "WRITE",
                &BTreeMap::new(),
                &CommitOptions::default(),
            )
            .unwrap();
        }
        t
    }

    fn begin(t: &mut Table) -> Transaction {
        t.refresh().unwrap();
        Transaction::begin(t.latest(), TxnOptions::default()).unwrap()
    }

    fn add(txn: &mut Transaction, name: &str) {
        let path = format!("{name}.parquet");
        txn.add_file(&path, vec![], 10, None, true, None, None)
            .unwrap();
    }

    fn files(s: &crate::snapshot::Snapshot) -> Vec<String> {
        let mut f: Vec<String> = s.files().iter().map(|f| f.path.to_string()).collect();
        f.sort();
        f
    }

    fn root(dir: &std::path::Path) -> Location {
        Location::local(dir)
    }

    fn corrupt_version(e: Error) -> Option<i64> {
        match e {
            Error::CorruptLog { version, .. } => version,
            other => panic!("expected CorruptLogError, got {other:?}"),
        }
    }

    /// Issue 41: a listing that misses a commit between two it shows (a directory read racing a
    /// writer) must not make a healthy log corrupt: loading, time travel, refresh and history
    /// look again. Expected values: the commits the test wrote.
    #[test]
    fn a_listing_that_misses_a_commit_is_looked_at_again() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = table(dir.path(), 4, &[]);
        let two = commit_file_name(2);
        // Missed by one listing: the second listing finds it.
        drop_from_next_listings(&two, 1);
        let s = load::snapshot(&root(dir.path()), None).unwrap();
        assert_eq!((s.version(), s.files().len()), (4, 4));
        // Missed by two listings: read by name.
        drop_from_next_listings(&two, 2);
        let s = load::snapshot(&root(dir.path()), Some(3)).unwrap();
        assert_eq!((s.version(), files(&s).len()), (3, 3));
        // A handle's refresh over the commits after its version.
        let mut old = Table::open(dir.path().to_str().unwrap(), &Default::default()).unwrap();
        let mut w = begin(&mut t);
        add(&mut w, "f5");
        commit(&mut w, "WRITE", &BTreeMap::new(), &CommitOptions::default()).unwrap();
        let mut w = begin(&mut t);
        add(&mut w, "f6");
        commit(&mut w, "WRITE", &BTreeMap::new(), &CommitOptions::default()).unwrap();
        drop_from_next_listings(&commit_file_name(5), 2);
        assert_eq!(old.refresh().unwrap(), 6);
        assert_eq!(old.latest().files().len(), 6);
        // History does not stop at the hole as if older commits were cleaned up.
        drop_from_next_listings(&commit_file_name(3), 1);
        let h: Vec<i64> = old.history(None).unwrap().iter().map(|(v, _)| *v).collect();
        assert_eq!(h, vec![6, 5, 4, 3, 2, 1, 0]);
        // Time travel by timestamp sees every version.
        drop_from_next_listings(&commit_file_name(3), 1);
        assert_eq!(old.version_at(i64::MAX / 2).unwrap(), 6);
    }

    /// The commit loop: a transaction that lost the race reads the winners from a listing that
    /// misses the first of them, and still commits after checking both.
    #[test]
    fn checking_winners_looks_again_at_a_missed_winner() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = table(dir.path(), 1, &[]);
        let mut loser = begin(&mut t);
        add(&mut loser, "loser");
        for name in ["w2", "w3"] {
            let mut w = begin(&mut t);
            add(&mut w, name);
            commit(&mut w, "WRITE", &BTreeMap::new(), &CommitOptions::default()).unwrap();
        }
        drop_from_next_listings(&commit_file_name(2), 2);
        let r = commit(
            &mut loser,
            "WRITE",
            &BTreeMap::new(),
            &CommitOptions::default(),
        )
        .unwrap();
        assert_eq!((r.version, r.rebased_over.clone()), (4, vec![2, 3]));
    }

    /// A commit really gone after the checkpoint in use stays a corrupt log naming it, for
    /// loading and for the commit loop; one a log-compaction file covers is replayed from it.
    #[test]
    fn a_commit_really_missing_is_corrupt_unless_a_compaction_covers_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = table(dir.path(), 2, &[]);
        let mut loser = begin(&mut t);
        add(&mut loser, "loser");
        for v in 3..=6 {
            let mut w = begin(&mut t);
            add(&mut w, &format!("f{v}"));
            commit(&mut w, "WRITE", &BTreeMap::new(), &CommitOptions::default()).unwrap();
        }
        let log = dir.path().join("_delta_log");
        let expected = files(&load::snapshot(&root(dir.path()), None).unwrap());
        // The compaction of 3..=4: their reconciled actions (the adds; no commitInfo).
        let adds: String = [3, 4]
            .iter()
            .flat_map(|v| {
                let text = std::fs::read_to_string(log.join(commit_file_name(*v))).unwrap();
                text.lines()
                    .filter(|l| l.starts_with(r#"{"add""#))
                    .map(|l| format!("{l}\n"))
                    .collect::<Vec<_>>()
            })
            .collect();
        std::fs::remove_file(log.join(commit_file_name(4))).unwrap();
        let e = load::snapshot(&root(dir.path()), None).unwrap_err();
        assert_eq!(corrupt_version(e), Some(4));
        // The loser's first attempt (3) collides; winner 4 stays missing.
        let e = commit(
            &mut loser,
            "WRITE",
            &BTreeMap::new(),
            &CommitOptions::default(),
        );
        assert_eq!(corrupt_version(e.unwrap_err()), Some(4));
        assert!(!log.join(commit_file_name(7)).exists(), "nothing committed");
        std::fs::write(
            log.join(format!("{:020}.{:020}.compacted.json", 3, 4)),
            adds,
        )
        .unwrap();
        let s = load::snapshot(&root(dir.path()), None).unwrap();
        assert_eq!((s.version(), files(&s)), (6, expected));
    }

    /// Commits removed before the checkpoint in use are no gap (log cleanup removes them); time
    /// travel to them is a version not found.
    #[test]
    fn commits_before_the_checkpoint_are_no_gap() {
        let dir = tempfile::tempdir().unwrap();
        table(dir.path(), 6, &[("delta.checkpointInterval", "3")]);
        let log = dir.path().join("_delta_log");
        for v in 0..=2 {
            std::fs::remove_file(log.join(commit_file_name(v))).unwrap();
        }
        let r = root(dir.path());
        assert_eq!(load::snapshot(&r, None).unwrap().files().len(), 6);
        assert_eq!(load::snapshot(&r, Some(4)).unwrap().files().len(), 4);
        assert!(matches!(
            load::snapshot(&r, Some(1)),
            Err(Error::VersionNotFound { .. })
        ));
    }
}
