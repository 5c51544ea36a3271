//! Replaying a table's log into snapshots: a version from scratch (its checkpoint, then the
//! commits after it), or forward from a snapshot already in memory, reading only the newer
//! commits. The table handle (open, refresh, time travel) and the committer (the snapshot a
//! checkpoint is written from) both load through here.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::log::actions::{Action, Actions};
use crate::log::path::LogFile;
use crate::log::replay::LogState;
use crate::log::segment::{self, log_dir, Listing};
use crate::log::{checkpoint, json as json_log};
use crate::parallel;
use crate::snapshot::Snapshot;
use crate::storage::Location;

/// Commits parsed concurrently before being applied, to bound peak memory.
const COMMIT_BATCH: usize = 64;

#[allow(clippy::large_enum_variant)] // short-lived, one per refresh
pub(crate) enum Forward {
    /// No commits after the latest known version.
    Current,
    Advanced(Snapshot),
    /// The wanted version is above the newest commit, which is this one.
    Beyond(i64),
    /// The wanted commits are not all there.
    Gap,
}

/// Replay the log up to `version` (latest when `None`). The latest version lists the log from
/// the checkpoint `_last_checkpoint` names (an object store lists only from there), and from the
/// start when that does not reconstruct the table.
pub fn snapshot(root: &Location, version: Option<i64>) -> Result<Snapshot> {
    if version.is_none() {
        if let Some(hint) = last_checkpoint(root) {
            let mut listing = segment::list(root, hint)?;
            let covered = listing
                .complete_checkpoints()
                .iter()
                .any(|c| c.version >= hint);
            if covered {
                return load_from_listing(root, &mut listing, None);
            }
        }
    }
    let mut listing = segment::list(root, 0)?;
    load_from_listing(root, &mut listing, version)
}

/// The version `_last_checkpoint` names, when it can be read (it is only a hint: a missing or
/// unreadable one means listing the whole log).
fn last_checkpoint(root: &Location) -> Option<i64> {
    #[derive(serde::Deserialize)]
    struct Last {
        version: i64,
    }
    let bytes = segment::log_dir(root)
        .join("_last_checkpoint")
        .read()
        .ok()?;
    let last: Last = serde_json::from_slice(&bytes).ok()?;
    (last.version > 0).then_some(last.version)
}

fn load_from_listing(
    root: &Location,
    listing: &mut Listing,
    version: Option<i64>,
) -> Result<Snapshot> {
    let seg = listing.segment(root, version)?;
    let mut state = LogState::new();
    let Some(cp) = &seg.checkpoint else {
        apply_commits(&mut state, &seg.commits)?;
        return Snapshot::from_state(root, state);
    };
    // On an object store each commit is a request: fetch the first commits after the checkpoint
    // while the checkpoint is read, instead of after it.
    let early = if root.is_local() {
        0
    } else {
        let mut total = 0u64;
        seg.commits
            .iter()
            .take_while(|f| {
                total += f.size;
                f.size <= LARGE_COMMIT && total <= PREFETCH_BYTES
            })
            .count()
    };
    let early_files = paths(&seg.commits[..early]);
    let (actions, fetched) = std::thread::scope(|s| {
        let fetch = (!early_files.is_empty()).then(|| {
            s.spawn(|| {
                let locations: Vec<&Location> = early_files.iter().map(|(_, p)| p).collect();
                Location::read_many(&locations)
            })
        });
        let later = json_log::room_for_adds(seg.commits.iter().map(|f| f.size).sum());
        let actions = checkpoint::read(&log_dir(root), cp, later);
        let fetched = fetch
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .unwrap_or_default();
        (actions, fetched)
    });
    state.apply_checkpoint(cp.version, actions?);
    apply_fetched_commits(&mut state, &seg.commits, fetched)?;
    Snapshot::from_state(root, state)
}

/// At most this many bytes of commits are fetched while a checkpoint is read.
const PREFETCH_BYTES: u64 = 32 << 20;

/// Commits larger than this are read in ranges, one per thread, instead of whole.
pub(crate) const LARGE_COMMIT: u64 = 16 << 20;

fn apply_commits(state: &mut LogState, commits: &[LogFile]) -> Result<()> {
    apply_fetched_commits(state, commits, Vec::new())
}

/// [`apply_commits`], the bytes of the first commits (all small) fetched already.
fn apply_fetched_commits(
    state: &mut LogState,
    commits: &[LogFile],
    fetched: Vec<std::io::Result<bytes::Bytes>>,
) -> Result<()> {
    let mut fetched = fetched.into_iter();
    let mut rest = commits;
    while let Some(first) = rest.first() {
        if first.size > LARGE_COMMIT {
            // Room for the later commits' adds only where this commit's list becomes the live one.
            let later: u64 = match state.files.is_empty() {
                true => rest[1..].iter().map(|f| f.size).sum(),
                false => 0,
            };
            let mut parts =
                json_log::read_large_commit(&first.path, first.version, first.size, later)?;
            state.begin_commit();
            if state.files.is_empty() {
                // One commit: its actions apply as one set. The adds are gathered in parallel
                // into what becomes the live-file list of the empty state (moved once).
                let mut actions = Actions::default();
                let mut adds = Vec::with_capacity(parts.len());
                for part in &mut parts {
                    adds.push(std::mem::take(&mut part.adds));
                    actions.other.append(&mut part.other);
                }
                actions.adds = parallel::concat(adds, json_log::room_for_adds(later));
                state.apply(actions);
            } else {
                // Files already live (a checkpoint, an earlier commit): each part's adds are
                // appended to them directly, which moves them once too.
                let more: usize = parts.iter().map(|p| p.adds.len()).sum();
                state.files.reserve(more);
                for part in parts {
                    state.apply(part);
                }
            }
            state.end_commit(first.version);
            rest = &rest[1..];
            continue;
        }
        let n = rest
            .iter()
            .take(COMMIT_BATCH)
            .take_while(|f| f.size <= LARGE_COMMIT)
            .count();
        // A batch is either all fetched already or all still to read.
        let n = match fetched.len() {
            0 => n,
            ready => n.min(ready),
        };
        let (batch, tail) = rest.split_at(n);
        let parsed = match fetched.len() {
            0 => json_log::read_commits(&paths(batch)),
            _ => json_log::parse_commits(&paths(batch), fetched.by_ref().take(n).collect()),
        };
        for (f, actions) in batch.iter().zip(parsed) {
            state.apply_commit(f.version, actions?);
        }
        rest = tail;
    }
    Ok(())
}

/// The snapshot at `version` (`latest` when `None`), given the latest known snapshot of the table
/// at `root`: a newer version is reached by applying only the commits after `latest`.
pub(crate) fn snapshot_from(
    root: &Location,
    latest: &Arc<Snapshot>,
    version: Option<i64>,
) -> Result<Arc<Snapshot>> {
    match version {
        None => Ok(latest.clone()),
        Some(v) if v == latest.version() => Ok(latest.clone()),
        Some(v) if v > latest.version() => {
            let table = root.to_string();
            let beyond = |newest: i64| Error::VersionNotFound {
                table: table.clone(),
                version: v,
                reason: format!("the latest version is {newest}"),
            };
            match forward(root, latest, Some(v))? {
                Forward::Advanced(snap) => Ok(Arc::new(snap)),
                Forward::Current => Err(beyond(latest.version())),
                Forward::Beyond(newest) => Err(beyond(newest)),
                Forward::Gap => Err(Error::VersionNotFound {
                    table,
                    version: v,
                    reason: "the log has no contiguous commits up to it".into(),
                }),
            }
        }
        Some(v) => Ok(Arc::new(snapshot(root, Some(v))?)),
    }
}

/// Bring `latest` to the newest commit, reading only the commits after it. When nobody else
/// holds it (no reader, no transaction) and the new commits are few and small, it advances in
/// place: a million live files took 0.04-0.4 s to copy. On failure `latest` is as it was.
///
/// `own`: commits this process wrote, by version (see [`crate::Table::adopt_commit`]); one the
/// listing shows with the same size is taken from these bytes instead of being read again.
pub(crate) fn refresh(
    root: &Location,
    latest: &mut Arc<Snapshot>,
    own: &BTreeMap<i64, Bytes>,
) -> Result<()> {
    let commits = match commits_after(root, latest.version(), None)? {
        Ok(commits) => commits,
        Err(Forward::Current) => return Ok(()),
        // Something unusual (a gap, or a log rewritten underneath us): replay from scratch.
        Err(_) => {
            *latest = Arc::new(snapshot(root, None)?);
            return Ok(());
        }
    };
    let few = commits.len() <= COMMIT_BATCH && commits.iter().all(|f| f.size <= LARGE_COMMIT);
    let fetched = match few {
        true => with_own_commits(&commits, own),
        false => Vec::new(),
    };
    if few {
        if let Some(snap) = Arc::get_mut(latest) {
            return advance_in_place(root, snap, &commits, fetched);
        }
    }
    *latest = Arc::new(apply_to_copy(root, latest, &commits, fetched)?);
    Ok(())
}

/// The bytes of `commits` (few and small) when `own` holds any of them, each matched by version
/// and size: those from `own`, the others fetched together. Empty when `own` holds none (the
/// callers then read them all as usual).
fn with_own_commits(
    commits: &[LogFile],
    own: &BTreeMap<i64, Bytes>,
) -> Vec<std::io::Result<Bytes>> {
    let mine: Vec<Option<&Bytes>> = commits
        .iter()
        .map(|f| own.get(&f.version).filter(|b| b.len() as u64 == f.size))
        .collect();
    if mine.iter().all(Option::is_none) {
        return Vec::new();
    }
    let others: Vec<&Location> = commits
        .iter()
        .zip(&mine)
        .filter(|(_, m)| m.is_none())
        .map(|(f, _)| &f.path)
        .collect();
    // One result per location, in order (`read_many`), so each `next` is the next other's.
    let mut read = Location::read_many(&others).into_iter();
    mine.into_iter()
        .map(|m| match m {
            Some(b) => Ok(b.clone()),
            None => read
                .next()
                .unwrap_or_else(|| Err(std::io::ErrorKind::NotFound.into())),
        })
        .collect()
}

/// Apply `commits` to `snap` itself (`fetched`: their bytes, or empty to read them). Atomic: they
/// are read, and the resulting protocol, metadata and schema checked, before any is applied.
fn advance_in_place(
    root: &Location,
    snap: &mut Snapshot,
    commits: &[LogFile],
    fetched: Vec<std::io::Result<Bytes>>,
) -> Result<()> {
    let parsed = match fetched.is_empty() {
        true => json_log::read_commits(&paths(commits)),
        false => json_log::parse_commits(&paths(commits), fetched),
    };
    let parsed = parsed.into_iter().collect::<Result<Vec<_>>>()?;
    let mut view = LogState::new();
    view.version = commits.last().map_or(snap.version(), |f| f.version);
    view.protocol = snap.state.protocol.clone();
    view.metadata = snap.state.metadata.clone();
    for action in parsed.iter().flat_map(|a| &a.other) {
        match action {
            Action::Protocol(p) => view.protocol = Some(p.clone()),
            Action::Metadata(m) => view.metadata = Some((**m).clone()),
            _ => {}
        }
    }
    let view = Snapshot::from_state(root, view)?;
    for (f, actions) in commits.iter().zip(parsed) {
        snap.state.apply_commit(f.version, actions);
    }
    snap.schema = view.schema;
    snap.mapping = view.mapping;
    snap.partition_columns = view.partition_columns;
    Ok(())
}

/// Apply the commits after the latest known version `latest` (up to `upto`, or all) to a copy of its
/// state, listing and reading only those commits.
pub(crate) fn forward(root: &Location, latest: &Snapshot, upto: Option<i64>) -> Result<Forward> {
    Ok(match commits_after(root, latest.version(), upto)? {
        Ok(commits) => Forward::Advanced(apply_to_copy(root, latest, &commits, Vec::new())?),
        Err(why) => why,
    })
}

/// `base` (older than the latest version) advanced to `version` by the commits in between, read
/// by name: versions up to the latest known one exist, so no listing is needed.
pub(crate) fn forward_by_name(
    root: &Location,
    base: &Arc<Snapshot>,
    version: i64,
) -> Result<Arc<Snapshot>> {
    if version == base.version() {
        return Ok(base.clone());
    }
    // A walk to one version.
    let mut walked = forward_walk(root, base, &[version])?;
    walked.pop().ok_or_else(|| {
        Error::invalid(format!(
            "version {version} is before version {}",
            base.version()
        ))
    })
}

/// The commit files of `versions`, named without a listing (their size unknown: read whole).
fn commits_by_name(root: &Location, versions: std::ops::RangeInclusive<i64>) -> Vec<LogFile> {
    let dir = log_dir(root);
    versions
        .map(|v| LogFile {
            version: v,
            kind: crate::log::path::LogFileKind::Commit,
            path: crate::log::path::commit_path(&dir, v),
            size: 0,
            modified: None,
        })
        .collect()
}

/// `base` advanced to each of `versions` (ascending, all newer than `base`; the caller checks)
/// in one walk: the commits in between are read by name, [`COMMIT_BATCH`] at a time (fetched
/// concurrently), and each version's snapshot is a copy of the state as the walk passes it.
pub(crate) fn forward_walk(
    root: &Location,
    base: &Arc<Snapshot>,
    versions: &[i64],
) -> Result<Vec<Arc<Snapshot>>> {
    debug_assert!(versions.first().is_none_or(|&v| v > base.version()));
    debug_assert!(versions.windows(2).all(|w| w[0] < w[1]));
    let Some(&last) = versions.last() else {
        return Ok(Vec::new());
    };
    let mut state = base.state.clone();
    let mut out = Vec::with_capacity(versions.len());
    let mut wanted = versions.iter().copied().peekable();
    let commits = commits_by_name(root, base.version() + 1..=last);
    for batch in commits.chunks(COMMIT_BATCH) {
        let parsed = json_log::read_commits(&paths(batch));
        for (f, actions) in batch.iter().zip(parsed) {
            state.apply_commit(f.version, actions?);
            // A version asked for: the state as it stands now, copied (the walk goes on).
            if wanted.next_if_eq(&f.version).is_some() {
                out.push(Arc::new(Snapshot::from_state(root, state.clone())?));
            }
        }
    }
    Ok(out)
}

/// The commits after version `latest` up to `upto` (or the newest), in order; or why there are
/// none to apply (never `Forward::Advanced`).
fn commits_after(
    root: &Location,
    latest: i64,
    upto: Option<i64>,
) -> Result<std::result::Result<Vec<LogFile>, Forward>> {
    let from = latest + 1;
    let mut listing = segment::list(root, from)?;
    let Some(newest) = listing.commits.keys().next_back().copied() else {
        return Ok(Err(Forward::Current));
    };
    let target = upto.unwrap_or(newest);
    if target > newest {
        return Ok(Err(Forward::Beyond(newest)));
    }
    // A hole the listing shows is looked for again before it counts (Listing::confirm).
    if !listing.confirm(root, from..=target)?.is_empty() {
        return Ok(Err(Forward::Gap));
    }
    Ok(Ok(listing
        .commits
        .range(..=target)
        .map(|(_, f)| f.clone())
        .collect()))
}

/// `(version, location)` of each commit file.
fn paths(commits: &[LogFile]) -> Vec<(i64, Location)> {
    commits
        .iter()
        .map(|f| (f.version, f.path.clone()))
        .collect()
}

fn apply_to_copy(
    root: &Location,
    latest: &Snapshot,
    commits: &[LogFile],
    fetched: Vec<std::io::Result<Bytes>>,
) -> Result<Snapshot> {
    let mut state = latest.state.clone();
    apply_fetched_commits(&mut state, commits, fetched)?;
    Snapshot::from_state(root, state)
}
