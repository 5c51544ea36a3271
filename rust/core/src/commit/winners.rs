//! Checking a transaction against the commits that won the race (concurrency.md §3, §4): reading
//! them, the view of the transaction the checks take, and validation without committing.

use std::collections::HashSet;
use std::time::Instant;

use crate::commit::check_record::CheckRecord;
use crate::commit::options::CommitOptions;
use crate::conflict::rows::ColumnCache;
use crate::conflict::{self, Passed, RowContext, Staged, TxnView, WinningCommit};
use crate::error::{Error, Result};
use crate::log::segment::{self, log_dir};
use crate::rule::Rule;
use crate::storage::Location;
use crate::transaction::Transaction;

use super::attempt::{prepare, Prepared};

pub(super) struct Checked {
    pub(super) passed: Vec<Passed>,
    /// The staged actions after the rebases, when any winner changed them.
    pub(super) rebased: Option<Staged>,
    pub(super) rows_resolved: u64,
}

/// Check the winners in order. On a DV table each check may rebase the staged actions; elsewhere
/// the checks are pure and run in parallel.
pub(super) fn check_winners(
    txn: &Transaction,
    prepared: &Prepared,
    st: &Staged,
    table: &str,
    winners: &[WinningCommit],
    deadline: Instant,
    cache: &ColumnCache,
) -> Result<Checked> {
    let Some(exact) = prepared.dv_table else {
        let removed = removed_paths(st);
        let view = make_view(txn, prepared, st, &removed, table);
        let passed = match conflict::check_all(&view, winners) {
            Err(e) if crate::test_hooks::rule_disabled(&e) => vec![disabled(); winners.len()],
            r => r?,
        };
        return Ok(Checked {
            passed,
            rebased: None,
            rows_resolved: 0,
        });
    };
    let cx = RowContext {
        root: &txn.root,
        exact,
        deadline,
        cache,
    };
    let mut out = Checked {
        passed: Vec::with_capacity(winners.len()),
        rebased: None,
        rows_resolved: 0,
    };
    for w in winners {
        let current = out.rebased.as_ref().unwrap_or(st);
        let removed = removed_paths(current);
        let view = make_view(txn, prepared, current, &removed, table);
        let checked = conflict::check_head(&view, w)
            .and_then(|()| conflict::row_level::check_winner(&view, current, w, &cx))
            .and_then(|v| conflict::check_identity(&view, w).map(|()| v));
        let v = match checked {
            Err(e) if crate::test_hooks::rule_disabled(&e) => {
                out.passed.push(disabled());
                continue;
            }
            r => r?,
        };
        out.passed.push(v.passed);
        out.rows_resolved += v.rows_resolved;
        if v.rebased.is_some() {
            out.rebased = v.rebased;
        }
    }
    Ok(out)
}

/// The pass record of a conflict the test switch (test_hooks.rs) let through.
fn disabled() -> Passed {
    Passed::new(Rule::PassRuleDisabled, "(rule disabled for a test)")
}

fn removed_paths(st: &Staged) -> HashSet<Box<str>> {
    st.removes
        .iter()
        .map(|r| r.path.clone())
        .chain(st.dv.keys().cloned())
        .collect()
}

fn make_view<'a>(
    txn: &'a Transaction,
    prepared: &'a Prepared,
    st: &'a Staged,
    removed_paths: &'a HashSet<Box<str>>,
    table: &'a str,
) -> TxnView<'a> {
    TxnView {
        table,
        read_version: txn.read_version,
        level: prepared.level,
        metadata_changed: prepared.metadata.is_some(),
        is_blind_append: prepared.is_blind_append,
        read: &st.read,
        removed_paths,
        domains: &prepared.domains,
        adds_data: st.adds.iter().any(|a| a.data_change),
        identity_columns: txn
            .snapshot
            .as_ref()
            .is_some_and(|s| s.schema.has_identity_columns()),
        data_skipping: txn.opts.data_skipping,
        partition_columns: txn
            .snapshot
            .as_ref()
            .map(|s| s.partition_columns.as_slice())
            .unwrap_or(&[]),
        read_snapshot: txn.snapshot.as_deref(),
    }
}

/// What checking a transaction against the commits after its read version found, without
/// committing (and without writing DV files).
#[derive(Debug, Clone)]
pub struct Validation {
    pub winners: usize,
    pub actions: usize,
    pub read_seconds: f64,
    pub check_seconds: f64,
    pub checks: Vec<CheckRecord>,
}

/// Read every commit after the transaction's read version (through `through`, or the latest)
/// and run the checks against them in order; `Err` is the conflict a commit would hit.
pub fn validate(txn: &Transaction, through: Option<i64>) -> Result<Validation> {
    let table = txn.root.to_string();
    let prepared = prepare(txn)?;
    let started = Instant::now();
    let winners = read_winners(txn, txn.read_version + 1, through)?;
    let read_seconds = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let deadline = started + CommitOptions::default().row_level_budget;
    let passed = check_winners(
        txn,
        &prepared,
        &prepared.staged,
        &table,
        &winners,
        deadline,
        &ColumnCache::default(),
    )?
    .passed;
    let checks = passed
        .into_iter()
        .zip(&winners)
        .map(|(p, w)| CheckRecord::passed(w, p))
        .collect();
    Ok(Validation {
        winners: winners.len(),
        actions: winners.iter().map(WinningCommit::num_actions).sum(),
        read_seconds,
        check_seconds: started.elapsed().as_secs_f64(),
        checks,
    })
}

/// The commits from `from` on (through `through`, or the latest), parsed in parallel. They must
/// be contiguous: a missing one is a corrupt log.
pub(super) fn read_winners(
    txn: &Transaction,
    from: i64,
    through: Option<i64>,
) -> Result<Vec<WinningCommit>> {
    let root = &txn.root;
    let mut listing = segment::list(root, from)?;
    let upto = match through {
        Some(t) => t,
        None => listing
            .commits
            .keys()
            .next_back()
            .copied()
            .unwrap_or(from - 1),
    };
    // A listing may miss a commit that exists while showing a later one: look again before a
    // hole counts (Listing::confirm). The winners are new commits, which neither log cleanup nor
    // a log compaction stands in for: one still missing is a corrupt log.
    if let Some(&missing) = listing.confirm(root, from..=upto)?.first() {
        return Err(Error::corrupt(
            log_dir(root).join(&crate::log::path::commit_file_name(missing)),
            Some(missing),
            format!("commit {missing} is missing while checking winners up to {upto} (listed twice and read by name)"),
        ));
    }
    let files: Vec<_> = listing
        .commits
        .range(from..=upto)
        .map(|(v, f)| (*v, f.path.clone()))
        .collect();
    let stats_read = txn.options().data_skipping
        && txn
            .read_set()
            .predicates
            .iter()
            .any(|p| p.has_data_conjuncts);
    let winner = |v: i64, actions| {
        let mut w = WinningCommit::from_actions(v, actions);
        if stats_read {
            w.unescape_stats();
        }
        w
    };
    if files.iter().all(|(_, p)| p.is_local()) {
        let read = |(v, p): &(i64, Location)| Ok(winner(*v, crate::log::json::read_commit(p, *v)?));
        return crate::parallel::map(&files, read).into_iter().collect();
    }
    // From an object store: every winner fetched concurrently, each once.
    let parsed = crate::log::json::read_commits(&files);
    files
        .iter()
        .zip(parsed)
        .map(|((v, _), actions)| Ok(winner(*v, actions?)))
        .collect()
}
