//! The transaction's staged actions as the row-level rules (concurrency.md §4) check and rebase
//! them, and what every rule shares: the context of one commit loop, reading deletion vectors,
//! and the file-level fallback (rule 6) with its reason.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use crate::dv::{self, DeletionBitmap};
use crate::error::{Error, Result};
use crate::log::actions::{AddFile, RemoveFile};
use crate::rule::{Fallback, Rule};
use crate::storage::Location;

use super::checker::{self, ReadSet, TxnView};
use super::rows::ColumnCache;
use super::WinningCommit;
use crate::error::ConflictKind;

/// Why row-level resolution of a file cannot decide (§4 rule 6): the cause and, for the
/// message, the details.
pub type Why = (Fallback, String);

/// Rows the transaction deletes from a file through its DV, relative to `base` (the version of
/// the file the deletion applies to; moved forward by each rebase).
#[derive(Debug, Clone)]
pub struct DvChange {
    pub base: AddFile,
    pub rows: DeletionBitmap,
}

/// The transaction's file actions and read set as they stand after the rebases so far.
#[derive(Debug, Clone, Default)]
pub struct Staged {
    pub adds: Vec<AddFile>,
    /// Deleted rows of files this transaction adds itself (a compaction that lost to DML).
    pub own_dvs: BTreeMap<Box<str>, DeletionBitmap>,
    pub removes: Vec<RemoveFile>,
    pub dv: BTreeMap<Box<str>, DvChange>,
    pub read: ReadSet,
    /// Compaction bins dropped because a concurrent compaction replaced their inputs.
    pub dropped_bins: u64,
}

impl Staged {
    /// Whether this transaction only rearranges rows (OPTIMIZE): no action changes data. Its
    /// outcome depends on the files it replaces alone, not on other files it looked at.
    pub fn is_compaction(&self) -> bool {
        (!self.adds.is_empty() || self.dropped_bins > 0)
            && self.adds.iter().all(|a| !a.data_change)
            && self.removes.iter().all(|r| !r.data_change)
            && self.dv.is_empty()
    }
}

/// The transaction's staged actions, its removes indexed by path: every remove of a winner is
/// looked up in them (a scan per lookup made two large compactions quadratic).
pub(super) struct Ours<'a> {
    pub(super) st: &'a Staged,
    /// Per removed path: whether a remove of it has dataChange=true, and whether one has false.
    removes: HashMap<&'a str, (bool, bool)>,
}

impl<'a> Ours<'a> {
    pub(super) fn new(st: &'a Staged) -> Self {
        let mut removes: HashMap<&str, (bool, bool)> = HashMap::with_capacity(st.removes.len());
        for r in &st.removes {
            let e = removes.entry(&r.path).or_default();
            e.0 |= r.data_change;
            e.1 |= !r.data_change;
        }
        Ours { st, removes }
    }

    pub(super) fn removes(&self, path: &str) -> bool {
        self.removes.contains_key(path)
    }

    /// A remove of `path` with dataChange=true (its rows deleted).
    pub(super) fn deletes(&self, path: &str) -> bool {
        self.removes.get(path).is_some_and(|r| r.0)
    }

    /// A remove of `path` with dataChange=false (compacted).
    pub(super) fn compacts(&self, path: &str) -> bool {
        self.removes.get(path).is_some_and(|r| r.1)
    }

    /// Rows of `path` change: a DV update or a delete of the whole file.
    pub(super) fn changes_file(&self, path: &str) -> bool {
        self.st.dv.contains_key(path) || self.deletes(path)
    }
}

/// Copy-on-write access to the staged actions: most winners change nothing, so the (possibly
/// large) staged set is cloned only when a rule rebases it.
pub(super) struct Rebase<'s> {
    pub(super) base: &'s Staged,
    pub(super) next: Option<Staged>,
}

impl Rebase<'_> {
    pub(super) fn get(&self) -> &Staged {
        self.next.as_ref().unwrap_or(self.base)
    }

    pub(super) fn edit(&mut self) -> &mut Staged {
        let base = self.base;
        self.next.get_or_insert_with(|| base.clone())
    }
}

pub struct RowContext<'a> {
    pub root: &'a Location,
    /// Row-level decisions (§4 rules 1–4); `false` keeps file-level checks (rule 5 still applies
    /// on a DV table).
    pub exact: bool,
    pub deadline: Instant,
    pub cache: &'a ColumnCache,
}

pub(crate) fn read_dv(
    root: &Location,
    d: Option<&crate::dv::DeletionVectorDescriptor>,
) -> Result<DeletionBitmap> {
    match d {
        None => Ok(DeletionBitmap::default()),
        Some(d) => dv::file::read(root, d),
    }
}

/// Run `f`; a failure to read a DV or data file becomes a file-level fallback (§4 rule 6).
pub(super) fn or_fallback<T>(r: Result<T>) -> std::result::Result<T, Why> {
    r.map_err(|e| {
        (
            Fallback::Unreadable,
            format!("a file needed for the row-level decision could not be read ({e})"),
        )
    })
}

pub(super) fn fallback_reason(why: &str) -> String {
    format!("Row-level concurrency fell back to file level: {why}.")
}

/// The file-level conflict on a file the winner removed when row-level resolution of it cannot
/// decide (§4 rule 6): `rule` is check 6 or check 7.
pub(super) fn fallback(
    t: &TxnView,
    w: &WinningCommit,
    r: &RemoveFile,
    rule: Rule,
    why: Why,
) -> Error {
    let kind = match rule {
        Rule::DeleteDelete => ConflictKind::ConcurrentDeleteDelete,
        _ => ConflictKind::ConcurrentDeleteRead,
    };
    let mut e = t.file_conflict(
        kind,
        rule,
        w,
        &r.path,
        checker::removed_partition(t, r).as_ref(),
        fallback_reason(&why.1),
    );
    if let Error::Conflict(c) = &mut e {
        c.fallback = Some(why.0);
    }
    e
}

/// The file a winner removed: from the read snapshot, else (a file an earlier winner added, such
/// as a compaction output this transaction's changes were remapped onto) from the remove's own
/// extended metadata (partition values and size).
pub(super) fn removed_file(t: &TxnView, r: &RemoveFile) -> Option<AddFile> {
    if let Some(f) = t.read_snapshot.and_then(|s| s.file(&r.path)) {
        return Some(f.clone());
    }
    Some(AddFile {
        path: r.path.as_ref().into(),
        partition_values: r.partition_values.clone()?,
        size: r.size?,
        modification_time: 0,
        data_change: true,
        stats: None,
        deletion_vector: r.deletion_vector.clone(),
        extra: None,
    })
}
