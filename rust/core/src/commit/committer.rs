//! The commit loop (concurrency.md §1 step 3): put-if-absent at read version + 1; on a collision,
//! check the transaction against each new winner in order, rebase, and retry at latest + 1, with
//! bounded attempts, a time budget, and exponential backoff with jitter.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::commit::attempt::{
    is_empty_commit, materialize, prepare, previous_ict, serialize, Materialized, Prepared,
};
use crate::commit::check_record::CheckRecord;
use crate::commit::options::CommitOptions;
use crate::commit::winners::{check_winners, read_winners};
use crate::commit::{checkpoint, log_cleanup, log_store};
use crate::conflict::rows::ColumnCache;
use crate::conflict::{Staged, WinningCommit};
use crate::error::{Error, Result};
use crate::isolation::IsolationLevel;
use crate::load;
use crate::log::actions::AddFile;
use crate::log::path::commit_path;
use crate::log::segment::log_dir;
use crate::snapshot::Snapshot;
use crate::storage::Location;
use crate::transaction::{Transaction, TxnState};

#[derive(Debug, Clone)]
pub struct CommitResult {
    pub version: i64,
    pub attempts: u32,
    pub isolation_level: IsolationLevel,
    pub read_version: i64,
    pub rebased_over: Vec<i64>,
    pub rows_resolved: u64,
    pub operation: String,
    pub metrics: BTreeMap<String, String>,
    pub checks: Vec<CheckRecord>,
    pub txn_id: String,
    pub is_blind_append: bool,
    /// `Some(error text)` when the checkpoint this commit triggered failed (the commit stands).
    pub checkpoint_error: Option<String>,
    pub checkpoint_written: bool,
    /// False when the transaction had nothing to write and no commit was made: `version` is
    /// then the read version and `attempts` the attempts written before a rebase left nothing.
    pub committed: bool,
}

pub fn commit(
    txn: &mut Transaction,
    operation: &str,
    parameters: &BTreeMap<String, String>,
    opts: &CommitOptions,
) -> Result<CommitResult> {
    match txn.state {
        TxnState::Open => {}
        TxnState::Committed(v) => {
            return Err(Error::invalid(format!(
                "the transaction already committed version {v}"
            )))
        }
        TxnState::Aborted => return Err(Error::invalid("the transaction was aborted")),
    }
    let result = run(txn, operation, parameters, opts);
    txn.state = match &result {
        Ok((r, _)) => TxnState::Committed(r.version),
        Err(_) => TxnState::Aborted,
    };
    result.map(|(r, own)| {
        txn.own_commit = own;
        r
    })
}

/// The commit loop, removing the DV files that no landed commit references: those of attempts
/// that were rebased, and all of them when the commit fails (a conflict, a permanent I/O error,
/// retries exhausted). Every error here means that no attempt landed. Also returns the bytes of
/// the commit when this transaction's own put wrote them.
fn run(
    txn: &Transaction,
    operation: &str,
    parameters: &BTreeMap<String, String>,
    opts: &CommitOptions,
) -> Result<(CommitResult, Option<bytes::Bytes>)> {
    let mut written: Vec<Location> = Vec::new();
    let result = run_attempts(txn, operation, parameters, opts, &mut written);
    let keep: Vec<&Location> = match &result {
        Ok(r) => r.dv_file.iter().collect(),
        // Any attempt may have landed: keep every DV file.
        Err(Error::CommitOutcomeUnknown { .. }) => written.iter().collect(),
        Err(_) => Vec::new(),
    };
    for f in written.iter().filter(|f| !keep.contains(f)) {
        let _ = f.delete();
    }
    result.map(|r| (r.result, r.own_bytes))
}

struct Landed {
    result: CommitResult,
    dv_file: Option<Location>,
    /// The commit's bytes, when the put that landed it was this attempt's (`Ok(true)`).
    own_bytes: Option<bytes::Bytes>,
}

fn run_attempts(
    txn: &Transaction,
    operation: &str,
    parameters: &BTreeMap<String, String>,
    opts: &CommitOptions,
    written: &mut Vec<Location>,
) -> Result<Landed> {
    let table = txn.root.to_string();
    let prepared = prepare(txn)?;
    let dir = log_dir(&txn.root);
    let started = Instant::now();
    let mut prev_ict = previous_ict(txn)?;
    let mut attempt_version = txn.read_version + 1;
    let mut checked_upto = txn.read_version;
    let mut checks: Vec<CheckRecord> = Vec::new();
    let mut rebased_over = Vec::new();
    let mut tried = Vec::new();
    // The staged actions after the rebases so far; most commits never rebase.
    let mut rebased: Option<Staged> = None;
    let mut actions: Option<Materialized> = None;
    let cache = ColumnCache::default();
    let mut rows_resolved = 0u64;
    let mut attempt: u32 = 0;
    // Attempts that lost the race to another writer, and puts that failed with an I/O error:
    // each has its own back-off.
    let mut lost_races: u32 = 0;
    let mut io_failures: u32 = 0;
    // The newest row-id high-water mark known: as read, then as the winners moved it.
    let mut row_id_mark = prepared.row_id_mark;
    loop {
        attempt += 1;
        tried.push(attempt_version);
        if actions.is_none() {
            let mut m = materialize(&txn.root, rebased.as_ref().unwrap_or(&prepared.staged))?;
            written.extend(m.dv_file.clone());
            for (k, v) in &txn.operation_metrics {
                // The core counts only rows its DVs delete; an engine that also removed whole
                // files knows the operation's true numDeletedRows.
                if k == "numDeletedRows" {
                    m.metrics.insert(k.clone(), v.clone());
                } else {
                    m.metrics.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
            actions = Some(m);
        }
        let now = chrono::Utc::now().timestamp_millis();
        let ict = prepared
            .ict_enabled
            .then(|| now.max(prev_ict.map_or(i64::MIN, |p| p + 1)));
        // A file stops being live when the commit lands, not when its remove was staged (a
        // transaction may stage long before it commits, and retries): VACUUM and checkpoints age
        // tombstones by this time.
        for r in &mut actions.as_mut().expect("materialized above").removes {
            r.deletion_timestamp = Some(ict.unwrap_or(now));
        }
        if let Some(mark) = row_id_mark {
            // Fresh ids above the newest mark, at the version this attempt writes.
            let m = actions.as_mut().expect("materialized above");
            let new_mark = crate::row_tracking::assign(
                &mut m.adds,
                &m.fresh_row_ids,
                mark,
                attempt_version,
                &table,
            )?;
            m.row_id_domain = new_mark.map(crate::row_tracking::domain);
        }
        let m = actions.as_ref().expect("materialized above");
        check_files_survived_vacuum(txn, m, now)?;
        if is_empty_commit(txn, &prepared, m) {
            return Ok(Landed {
                result: nothing_committed(summary(
                    txn,
                    &prepared,
                    rows_resolved,
                    m,
                    operation,
                    txn.read_version,
                    attempt - 1,
                    rebased_over,
                    checks,
                )),
                dv_file: None,
                own_bytes: None,
            });
        }
        let bytes = serialize(
            txn,
            &prepared,
            m,
            operation,
            parameters,
            attempt_version,
            now,
            ict,
            attempt,
            &checks,
        )?;
        let put_started = Instant::now();
        let put = log_store::put_if_absent(&dir, attempt_version, &bytes);
        // Only this put's own success says the bytes at `attempt_version` are these.
        let put_landed = matches!(put, Ok(true));
        // Whose commit is at `attempt_version`: Some(true) ours, Some(false) another writer's,
        // None nobody's yet.
        let owner = match put {
            Ok(true) => Some(true),
            // Another writer's, or ours: a client that retried a put whose answer was lost
            // finds its own commit there. Reading the winners tells (their txnIds).
            Ok(false) => Some(false),
            // The outcome is unknown: look before retrying, never write the commit twice.
            Err(e) => match outcome(
                &dir,
                attempt_version,
                &prepared.txn_id,
                opts,
                started,
                &table,
            )? {
                Some(ours) => Some(ours),
                // The store refused the request itself (no bucket, refused or read-only
                // credentials, a full or read-only disk): nothing was published, and retrying
                // will not help: say so now, not after max_attempts back-offs.
                None if e.is_permanent() => return Err(e),
                // Absent. On a local disk nothing can land later: an ordinary retry. Where a put
                // whose answer was lost may still land, the same version is retried (never
                // another), and running out of time or being interrupted is an unknown outcome.
                None => {
                    let may_land = dir.failed_puts_may_land_later();
                    io_failures += 1;
                    if opts.attempts_exhausted(attempt)
                        || io_failures > opts.max_io_retries
                        || started.elapsed() > opts.time_budget
                    {
                        return Err(if may_land {
                            unknown(&table, attempt_version, &e)
                        } else {
                            give_up(&table, attempt, started, tried, format!("last error: {e}"))
                        });
                    }
                    backoff(
                        opts,
                        exponential(opts, opts.backoff_base, io_failures),
                        attempt,
                        &table,
                    )
                    .map_err(|interrupted| {
                        if may_land {
                            unknown(&table, attempt_version, &e)
                        } else {
                            interrupted
                        }
                    })?;
                    continue;
                }
            },
        };
        // Collision: check every commit that appeared since the last check, in order. The
        // version ours landed at, if it did: here, or an earlier attempt whose outcome looked
        // unknown and that a winner's txnId shows did land.
        let (landed_at, winners) = if owner == Some(true) {
            (Some(attempt_version), Vec::new())
        } else {
            match read_winners(txn, checked_upto + 1, None) {
                Ok(w) => {
                    let ours = w
                        .iter()
                        .find(|w| w.txn_id.as_deref() == Some(prepared.txn_id.as_str()))
                        .map(|w| w.version);
                    (ours, w)
                }
                // Our own commit may be the one at `attempt_version` (see Ok(false) above): an
                // error may only say that nothing landed once that version is known to be
                // another's.
                Err(e) => match outcome(
                    &dir,
                    attempt_version,
                    &prepared.txn_id,
                    opts,
                    started,
                    &table,
                )? {
                    Some(true) => (Some(attempt_version), Vec::new()),
                    _ => return Err(e),
                },
            }
        };
        if let Some(version) = landed_at {
            let dv_file = m.dv_file.clone();
            // Kept for the table to take instead of reading the commit back, unless larger than
            // a refresh ever takes whole (it is read in ranges then, and the bytes only held).
            let own_bytes = (put_landed
                && version == attempt_version
                && bytes.len() as u64 <= load::LARGE_COMMIT)
                .then(|| bytes.into());
            return Ok(Landed {
                result: finish(
                    txn,
                    &prepared,
                    rows_resolved,
                    m,
                    operation,
                    version,
                    attempt,
                    rebased_over,
                    checks,
                ),
                dv_file,
                own_bytes,
            });
        }
        let deadline = Instant::now() + opts.row_level_budget;
        let st = rebased.as_ref().unwrap_or(&prepared.staged);
        let checked = check_winners(txn, &prepared, st, &table, &winners, deadline, &cache)?;
        rows_resolved += checked.rows_resolved;
        if let Some(r) = checked.rebased {
            rebased = Some(r);
            actions = None;
        }
        for (passed, w) in checked.passed.into_iter().zip(&winners) {
            if let (Some(mark), Some(d)) = (
                row_id_mark,
                w.domains
                    .iter()
                    .rfind(|d| d.domain == crate::row_tracking::DOMAIN),
            ) {
                row_id_mark =
                    Some(mark.max(crate::row_tracking::high_water_mark(Some(d), &table)?));
            }
            checks.push(CheckRecord::passed(w, passed));
            rebased_over.push(w.version);
            if w.in_commit_timestamp.is_some() {
                prev_ict = prev_ict.max(w.in_commit_timestamp);
            }
            checked_upto = w.version;
        }
        attempt_version = checked_upto + 1;
        lost_races += 1;
        if opts.attempts_exhausted(attempt) || started.elapsed() > opts.time_budget {
            return Err(give_up(
                &table,
                attempt,
                started,
                tried,
                "other writers kept winning".into(),
            ));
        }
        let overtaken = winners
            .iter()
            .any(|w| w.read_version.is_some_and(|r| r > txn.read_version));
        // What losing cost (the put, the listing, reading and checking the winners): the unit
        // of the wait, so that on a store with slow round trips a waiting writer stays out of
        // the way of one that was overtaken for as long as a retry takes there.
        let window = race_backoff(opts, lost_races, overtaken, put_started.elapsed());
        backoff(opts, window, attempt, &table)?;
    }
}

fn give_up(
    table: &str,
    attempts: u32,
    started: Instant,
    versions_tried: Vec<i64>,
    reason: String,
) -> Error {
    Error::CommitRetriesExceeded {
        table: table.to_string(),
        attempts,
        elapsed_ms: started.elapsed().as_millis() as u64,
        versions_tried,
        reason,
    }
}

/// The wait after the `n`th failed put (an I/O error) or lost race: `unit` (at least
/// `backoff_base`) doubling up to `backoff_max`, so neither a struggling store nor the table's
/// log is hammered.
fn exponential(opts: &CommitOptions, unit: Duration, n: u32) -> Duration {
    unit.max(opts.backoff_base)
        .saturating_mul(1u32 << n.saturating_sub(1).min(16))
        .min(opts.backoff_max)
}

/// The wait after the `n`th race this commit lost: exponential in units of what the lost
/// attempt took (at least `backoff_base`) up to `backoff_max`, but none once a winner overtook
/// this commit (it read a newer version, so it started later). Exponential back-off alone keeps
/// the writer that just won winning and sends a writer that lost a few times ever further away;
/// retrying at once when overtaken serves the longest waiters first, without every writer
/// spinning (BENCHMARKS.md, "many writers on one table").
fn race_backoff(opts: &CommitOptions, n: u32, overtaken: bool, lost_attempt: Duration) -> Duration {
    if overtaken {
        return Duration::ZERO;
    }
    exponential(opts, lost_attempt, n)
}

/// Sleep a jittered part of `window` (uniform in [window/2, window)), then ask the caller's
/// interrupt.
fn backoff(opts: &CommitOptions, window: Duration, attempt: u32, table: &str) -> Result<()> {
    // Random bits from a v4 UUID (no RNG dependency needed).
    let r = (uuid::Uuid::new_v4().as_u128() % 1_000_000) as f64 / 1_000_000.0;
    if !window.is_zero() {
        std::thread::sleep(window.mul_f64(0.5 + r / 2.0));
    }
    match &opts.interrupted {
        Some(stop) if (stop.0)() => Err(Error::Interrupted {
            table: table.to_string(),
            attempts: attempt,
        }),
        _ => Ok(()),
    }
}

/// A transaction older than the table's VACUUM window may have had files it wrote deleted by a
/// VACUUM (they looked unreferenced and old enough): before committing, such a transaction
/// checks that every file it adds still exists, and fails instead of committing a reference to
/// a missing file. A younger transaction checks only the adds of files older than the window
/// (a RESTORE re-adding files removed long ago, which a VACUUM may be deleting right now); its
/// own files are all newer than any window's start. The margin (half the window, at most 5
/// minutes) covers clock skew between this machine and the store's timestamps.
fn check_files_survived_vacuum(txn: &Transaction, m: &Materialized, now: i64) -> Result<()> {
    let Some(snap) = &txn.snapshot else {
        return Ok(());
    };
    let window =
        crate::vacuum::configured_retention_ms(snap).unwrap_or(crate::vacuum::DEFAULT_RETENTION_MS);
    let margin = (window / 2).min(300_000);
    let age = now.saturating_sub(txn.began_ms);
    let old_txn = age.saturating_add(margin) >= window;
    let window_start = now.saturating_sub(window).saturating_add(margin);
    let check: Vec<&AddFile> = m
        .adds
        .iter()
        .filter(|a| old_txn || a.modification_time < window_start)
        .collect();
    let Some(at) = snap.first_missing(check)? else {
        return Ok(());
    };
    let why = if old_txn {
        format!(
            "the transaction is {} s old, older than the table's VACUUM window ({} s), and a VACUUM removed the file",
            age / 1000,
            window / 1000
        )
    } else {
        format!(
            "the file is older than the table's VACUUM window ({} s) and a VACUUM removed it",
            window / 1000
        )
    };
    Err(Error::io(
        at,
        std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!(
                "a file this transaction added no longer exists: {why}. Nothing was committed; run the operation again"
            ),
        ),
    ))
}

/// After a put whose outcome is unknown: `None` if commit `version` is absent, `Some(true)` if it
/// is this transaction's (`txn_id`), `Some(false)` if another writer's. Reading it is retried
/// while the commit's time budget lasts (and for at least [`RESOLVE_AT_LEAST`]); if it still
/// cannot be read, the outcome stays unknown and the error says so (the caller then keeps every
/// file the commit references).
fn outcome(
    dir: &Location,
    version: i64,
    txn_id: &str,
    opts: &CommitOptions,
    started: Instant,
    table: &str,
) -> Result<Option<bool>> {
    let until = (started + opts.time_budget).max(Instant::now() + RESOLVE_AT_LEAST);
    let mut tries = 0u32;
    loop {
        tries += 1;
        let read = (|| -> Result<Option<bool>> {
            let path = commit_path(dir, version);
            match path.exists().map_err(|e| Error::io(&path, e)) {
                Ok(true) => {}
                Ok(false) => return Ok(None),
                // No bucket, no commit (and none can land).
                Err(Error::Storage {
                    problem: crate::error::StorageProblem::BucketNotFound,
                    ..
                }) => return Ok(None),
                Err(e) => return Err(e),
            }
            let w = WinningCommit::read(dir, version)?;
            Ok(Some(w.txn_id.as_deref() == Some(txn_id)))
        })();
        match read {
            Ok(found) => return Ok(found),
            Err(e) if Instant::now() >= until => {
                return Err(Error::CommitOutcomeUnknown {
                    table: table.to_string(),
                    version,
                    reason: format!("reading the commit back failed {tries} time(s), last: {e}"),
                })
            }
            Err(_) => std::thread::sleep(
                opts.backoff_max
                    .min(opts.backoff_base.saturating_mul(1 << tries.min(16))),
            ),
        }
    }
}

/// The error for a put whose outcome stayed unknown: it may land at `version` after we stop.
fn unknown(table: &str, version: i64, last: &Error) -> Error {
    Error::CommitOutcomeUnknown {
        table: table.to_string(),
        version,
        reason: format!("the put failed ({last}) and the commit was not there when read back; the put may still land"),
    }
}

/// Time given to learning the outcome of an unknown put, even past the commit's time budget.
const RESOLVE_AT_LEAST: Duration = Duration::from_secs(10);

/// The result of a transaction that wrote nothing. Its level is SnapshotIsolation, the level
/// delta-spark gives a commit without data changes: it changed nothing, so nothing conflicts.
fn nothing_committed(r: CommitResult) -> CommitResult {
    CommitResult {
        committed: false,
        isolation_level: IsolationLevel::SnapshotIsolation,
        is_blind_append: false,
        txn_id: String::new(),
        ..r
    }
}

#[allow(clippy::too_many_arguments)]
fn finish(
    txn: &Transaction,
    p: &Prepared,
    rows_resolved: u64,
    m: &Materialized,
    operation: &str,
    version: i64,
    attempts: u32,
    rebased_over: Vec<i64>,
    checks: Vec<CheckRecord>,
) -> CommitResult {
    let (checkpoint_written, checkpoint_error) = maybe_checkpoint(txn, version);
    CommitResult {
        checkpoint_written,
        checkpoint_error,
        ..summary(
            txn,
            p,
            rows_resolved,
            m,
            operation,
            version,
            attempts,
            rebased_over,
            checks,
        )
    }
}

#[allow(clippy::too_many_arguments)]
fn summary(
    txn: &Transaction,
    p: &Prepared,
    rows_resolved: u64,
    m: &Materialized,
    operation: &str,
    version: i64,
    attempts: u32,
    rebased_over: Vec<i64>,
    checks: Vec<CheckRecord>,
) -> CommitResult {
    CommitResult {
        version,
        attempts,
        isolation_level: p.level,
        read_version: txn.read_version,
        rebased_over,
        rows_resolved,
        operation: operation.to_string(),
        metrics: m.metrics.clone(),
        checks,
        txn_id: p.txn_id.clone(),
        is_blind_append: p.is_blind_append,
        checkpoint_error: None,
        checkpoint_written: false,
        committed: true,
    }
}

/// A checkpoint (classic, or V2 on `v2Checkpoint` tables) every `delta.checkpointInterval` commits. Failure never fails the commit.
fn maybe_checkpoint(txn: &Transaction, version: i64) -> (bool, Option<String>) {
    let Some(read) = &txn.snapshot else {
        return (false, None);
    };
    // A winner that changed metadata would have conflicted, so ours (or the read one) is in
    // effect at `version`: decide before replaying anything.
    let config = &txn
        .metadata
        .as_ref()
        .unwrap_or(read.metadata())
        .configuration;
    let truncate = txn.truncates_history;
    if !truncate && (version == 0 || version % checkpoint::interval(config) != 0) {
        return (false, None);
    }
    let run = || -> Result<(bool, Option<String>)> {
        let snap: Arc<Snapshot> = load::snapshot_from(&read.root, read, Some(version))?;
        checkpoint::write(&snap)?;
        if truncate {
            // DROP FEATURE's downgrade: no version before it may stay readable.
            let cleanup = log_cleanup::truncate_before(&snap)
                .err()
                .map(|e| format!("truncating the log before the feature drop: {e}"));
            return Ok((true, cleanup));
        }
        // With the new checkpoint, log files older than the retention may go; a failure here is
        // reported like a failed checkpoint (the files stay; the next checkpoint tries again).
        let cleanup = log_cleanup::expire(&snap, chrono::Utc::now().timestamp_millis())
            .err()
            .map(|e| format!("log cleanup after the checkpoint: {e}"));
        Ok((true, cleanup))
    };
    match run() {
        Ok(w) => w,
        Err(e) => (false, Some(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ConflictKind;
    use crate::rule::Rule;
    use crate::table::Table;
    use crate::transaction::TxnOptions;
    use serde_json::{json, Value};

    const SCHEMA: &str = r#"{"type":"struct","fields":[{"name":"p","type":"integer","nullable":true,"metadata":{}},{"name":"x","type":"long","nullable":true,"metadata":{}}]}"#;

    fn table(dir: &std::path::Path, props: &[(&str, &str)]) -> Table {
        let props = props
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Table::create(
            dir.to_str().unwrap(),
            &Default::default(),
            SCHEMA,
            vec!["p".into()],
            props,
            None,
        )
        .unwrap()
    }

    fn begin(t: &mut Table) -> Transaction {
        t.refresh().unwrap();
        Transaction::begin(t.latest(), TxnOptions::default()).unwrap()
    }

    fn add(txn: &mut Transaction, name: &str, p: i32) {
        txn.add_file(
            &format!("p={p}/{name}.parquet"),
            vec![("p".into(), Some(p.to_string()))],
            10,
            None,
            true,
            None,
            None,
        )
        .unwrap();
    }

    fn commit_ok(txn: &mut Transaction) -> CommitResult {
        commit(txn, "WRITE", &BTreeMap::new(), &CommitOptions::default()).unwrap()
    }

    /// The writer's note and the read time go into `commitInfo.deltaOcc`; the core's own keys
    /// cannot be overwritten by a note.
    #[test]
    fn commit_info_carries_the_writers_note_and_read_time() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = table(dir.path(), &[]);
        let before = chrono::Utc::now().timestamp_millis();
        let mut a = begin(&mut t);
        add(&mut a, "a", 1);
        let note = json!({ "host": "h1", "pid": 7, "attempt": 99, "checkedWinners": "forged" });
        a.set_commit_note(note.as_object().unwrap().clone())
            .unwrap();
        assert_eq!(commit_ok(&mut a).version, 1);
        let text = std::fs::read_to_string(dir.path().join("_delta_log/00000000000000000001.json"))
            .unwrap();
        let info: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        let occ = &info["commitInfo"]["deltaOcc"];
        assert_eq!(
            (occ["host"].clone(), occ["pid"].clone()),
            (json!("h1"), json!(7)),
            "{occ}"
        );
        assert_eq!(
            (occ["attempt"].clone(), occ["checkedWinners"].clone()),
            (json!(1), json!([])),
            "{occ}"
        );
        let read = occ["readTime"].as_i64().unwrap();
        let committed = info["commitInfo"]["timestamp"].as_i64().unwrap();
        assert!(before <= read && read <= committed, "{occ}");
    }

    /// Row tracking under a race (protocol-notes §6.4, delta-spark's reassignment): the loser of
    /// two blind appends takes ids above the winner's mark and the version it lands at.
    #[test]
    fn row_ids_are_rebased_over_a_winner() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = table(dir.path(), &[("delta.enableRowTracking", "true")]);
        let stats = |n: i64| Some(format!(r#"{{"numRecords":{n}}}"#));
        let put = |txn: &mut Transaction, name: &str, n: i64| {
            txn.add_file(
                &format!("p=1/{name}.parquet"),
                vec![("p".into(), Some("1".into()))],
                10,
                stats(n),
                true,
                None,
                None,
            )
            .unwrap()
        };
        let mut loser = begin(&mut t);
        put(&mut loser, "loser", 5);
        let mut winner = begin(&mut t);
        put(&mut winner, "winner", 3);
        assert_eq!(commit_ok(&mut winner).version, 1);
        let r = commit_ok(&mut loser);
        assert_eq!((r.version, r.rebased_over.clone()), (2, vec![1]));
        t.refresh().unwrap();
        let snap = t.latest();
        let ids = |name: &str| {
            let f = snap.files().iter().find(|f| f.path.contains(name)).unwrap();
            (f.base_row_id(), f.default_row_commit_version())
        };
        assert_eq!(ids("winner"), (Some(0), Some(1)));
        assert_eq!(ids("loser"), (Some(3), Some(2)));
        let mark = crate::row_tracking::high_water_mark(
            snap.state.domains.get(crate::row_tracking::DOMAIN),
            "t",
        );
        assert_eq!(mark.unwrap(), 7);
    }

    /// Issue 42: by default no attempt count gives a commit up, and a commit another writer
    /// overtook retries at once while the others back off exponentially up to the cap.
    #[test]
    fn back_off_and_attempt_caps() {
        let opts = CommitOptions::default();
        assert_eq!(opts.max_attempts, None);
        assert!(!opts.attempts_exhausted(u32::MAX));
        let capped = CommitOptions {
            max_attempts: Some(3),
            ..CommitOptions::default()
        };
        assert!(!capped.attempts_exhausted(2) && capped.attempts_exhausted(3));
        let ms = |d: Duration| d.as_millis();
        assert_eq!(
            (1..=9)
                .map(|n| ms(race_backoff(&opts, n, false, Duration::ZERO)))
                .collect::<Vec<_>>(),
            vec![2, 4, 8, 16, 32, 64, 128, 250, 250]
        );
        assert!((1..=40).all(|n| race_backoff(&opts, n, true, Duration::ZERO).is_zero()));
        // On a store where losing took 100 ms, the wait counts in those units.
        let slow = Duration::from_millis(100);
        assert_eq!(
            (1..=3)
                .map(|n| ms(race_backoff(&opts, n, false, slow)))
                .collect::<Vec<_>>(),
            vec![100, 200, 250]
        );
    }

    #[test]
    fn a_transaction_with_nothing_to_write_commits_nothing_and_cannot_conflict() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = table(dir.path(), &[("delta.isolationLevel", "Serializable")]);
        let mut w = begin(&mut t);
        add(&mut w, "a", 1);
        commit_ok(&mut w);
        let mut reader = begin(&mut t);
        reader.read_whole_table().unwrap();
        let mut winner = begin(&mut t);
        winner.remove_file("p=1/a.parquet", true).unwrap();
        assert_eq!(commit_ok(&mut winner).version, 2);
        // Committed, reader would raise ConcurrentDeleteReadException; it wrote nothing.
        let r = commit_ok(&mut reader);
        assert_eq!(
            (r.committed, r.version, r.attempts, r.isolation_level),
            (false, 1, 0, IsolationLevel::SnapshotIsolation)
        );
        assert_eq!(reader.state(), TxnState::Committed(1));
        assert_eq!(t.refresh().unwrap(), 2, "no version 3 was written");
        let mut app = begin(&mut t);
        app.set_app_version("app", 1).unwrap();
        assert!(
            commit_ok(&mut app).committed,
            "an application id alone is an action"
        );
    }

    #[test]
    fn setting_an_app_version_records_its_read() {
        // Two writers of one app id that never asked for its version: the second must not
        // commit the same batch again (§3 check 4), so set_app_version itself records the read.
        let dir = tempfile::tempdir().unwrap();
        let mut t = table(dir.path(), &[]);
        let mut a = begin(&mut t);
        let mut b = begin(&mut t);
        for txn in [&mut a, &mut b] {
            txn.set_app_version("stream", 7).unwrap();
            add(txn, "x", 1);
        }
        assert_eq!(commit_ok(&mut a).version, 1);
        let err = commit(&mut b, "WRITE", &BTreeMap::new(), &CommitOptions::default()).unwrap_err();
        match err {
            Error::Conflict(c) => assert_eq!(c.kind, ConflictKind::ConcurrentTransaction),
            other => panic!("expected a conflict, got {other:?}"),
        }
    }

    #[test]
    fn rebases_over_a_non_conflicting_winner() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = table(dir.path(), &[("delta.isolationLevel", "Serializable")]);
        let mut a = begin(&mut t);
        a.scan(Some("p = 1")).unwrap();
        add(&mut a, "a", 1);
        let mut b = begin(&mut t);
        add(&mut b, "b", 2);
        assert_eq!(commit_ok(&mut b).version, 1);
        let r = commit_ok(&mut a);
        assert_eq!(
            (r.version, r.attempts, r.rebased_over.clone()),
            (2, 2, vec![1])
        );
        assert!(
            r.checks[0].outcome.starts_with("no conflict"),
            "{:?}",
            r.checks
        );
        // Data skipping is on by default: the rule names it, and the commit records its id.
        assert_eq!(r.checks[0].rules, vec![Rule::PassDataSkipping]);
        let text = std::fs::read_to_string(dir.path().join("_delta_log/00000000000000000002.json"))
            .unwrap_or_default();
        let line = text.lines().next().unwrap_or_default();
        let info: Value = serde_json::from_str(line).unwrap_or_default();
        assert_eq!(
            info["commitInfo"]["deltaOcc"]["checkedWinners"][0]["rules"],
            json!(["pass_data_skipping"]),
            "{line}"
        );

        let mut c = begin(&mut t);
        c.scan(Some("p = 2")).unwrap();
        add(&mut c, "c", 2);
        let mut d = begin(&mut t);
        add(&mut d, "d", 2);
        commit_ok(&mut d);
        match commit(&mut c, "WRITE", &BTreeMap::new(), &CommitOptions::default()) {
            Err(Error::Conflict(x)) => {
                assert_eq!(x.kind, ConflictKind::ConcurrentAppend);
                assert_eq!((x.rule, x.fallback), (Rule::ConcurrentAppend, None));
                assert_eq!(x.winning_version, 3);
                assert_eq!(
                    x.partition_hint,
                    Some(vec![("p".to_string(), Some("2".to_string()))])
                );
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(c.state(), TxnState::Aborted);
    }

    #[test]
    fn checkpoint_every_interval_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = table(dir.path(), &[("delta.checkpointInterval", "3")]);
        for i in 0..7 {
            let mut x = begin(&mut t);
            add(&mut x, &format!("f{i}"), i % 2);
            let r = commit_ok(&mut x);
            assert_eq!(r.checkpoint_written, r.version % 3 == 0, "{r:?}");
            assert!(r.checkpoint_error.is_none(), "{r:?}");
        }
        let lc = std::fs::read_to_string(dir.path().join("_delta_log/_last_checkpoint")).unwrap();
        assert!(lc.contains("\"version\":6"), "{lc}");
        // Replay from the checkpoint alone must give the same files as the JSON commits.
        for v in [3, 6, 7] {
            let from_cp = load::snapshot(&Location::local(dir.path()), Some(v)).unwrap();
            assert_eq!(from_cp.files().len(), v as usize);
        }
        let cp6 = load::snapshot(&Location::local(dir.path()), Some(6)).unwrap();
        assert_eq!(cp6.state.checkpoint_version, Some(6));
    }
}
