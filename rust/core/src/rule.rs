//! Rule identities: which rule of concurrency.md decided a conflict check. Every conflict carries
//! the [`Rule`] that failed (and the [`Fallback`] when row-level concurrency fell back to file
//! level); every winner a commit passed is recorded with the rules that let it pass. Programs and
//! `delta-occ explain` read these ids, never the sentences written for humans, so rewording a
//! message cannot change what they decide.
//!
//! The ids are stable: they are written into `commitInfo.deltaOcc.checkedWinners[].rules` and
//! compared by user code (`e.rule`). Never rename one; add a new rule instead.

/// A rule of concurrency.md: a conflict (§3 checks 1–8, §4 rules 1, 2 and 4) or a reason why a
/// winner did not conflict. The pass rules are declared most specific first: a pass record lists
/// its rules in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rule {
    // Conflicts.
    /// §3 check 1: the winner changed the protocol.
    ProtocolChanged,
    /// §3 check 1: both transactions created the table.
    BothCreatedTable,
    /// §3 check 2: the winner changed the metadata.
    MetadataChanged,
    /// §3 check 3: both wrote the same metadata domain.
    SameDomain,
    /// §3 check 4: the winner set an application id the transaction read.
    AppIdRead,
    /// §3 check 5: the winner added files the transaction should have read.
    ConcurrentAppend,
    /// §3 check 6: the winner removed a file the transaction read.
    DeleteRead,
    /// §3 check 7: both removed the same file.
    DeleteDelete,
    /// §3 check 8: identity columns.
    IdentityColumns,
    /// §4 rule 1: both changed the same rows.
    RowDeleteDelete,
    /// §4 rule 2: the winner changed rows the transaction read.
    RowDeleteRead,
    /// §4 rule 4: rows the winner added match the read predicate.
    RowAppend,

    // Passes, most specific first.
    /// The test switch `DELTA_OCC_TEST_DISABLE_RULE` let a conflict pass.
    PassRuleDisabled,
    /// §4 rule 5: a concurrent compaction already replaced a bin's inputs; the bin was dropped.
    PassBinDropped,
    /// §4 rule 5: rows the winner deleted were carried onto this compaction's output.
    PassCompactionCarries,
    /// §4 rule 5: the winner compacted a file; this transaction's changes were remapped.
    PassRemappedOntoCompaction,
    /// §4 rule 5: the winner compacted a file without provenance; rows followed by their ids.
    PassFollowedByRowId,
    /// §4 rule 5: the winner's compaction dropped a file with no live row.
    PassAllRowsDeleted,
    /// §4 rules 1–3: the winner changed other rows of a file (deletion vectors merged).
    PassDisjointRows,
    /// §4 rule 4: no row the winner added matches the read predicates.
    PassNoAddedRowMatches,
    /// §3 check 5: a blind append does not check concurrent appends.
    PassBlindAppend,
    /// §2: SnapshotIsolation ignores added files.
    PassSnapshotIsolation,
    /// §2: WriteSerializable ignores a concurrent blind append.
    PassWriteSerializable,
    /// §3 check 5: the transaction recorded no read predicate.
    PassNoReadPredicate,
    /// §3 check 5 with conflict-time data skipping.
    PassDataSkipping,
    /// §3 check 5 by partition values.
    PassPartitions,
    /// §3 checks 5–7: the winner added no data files.
    PassNoDataAdded,
    /// §4: the winner added no new data files.
    PassNoNewDataFiles,
    /// §3 checks 1–8: no check failed (no more specific rule recorded).
    PassNoCheckFailed,
}

impl Rule {
    pub const ALL: [Rule; 29] = [
        Rule::ProtocolChanged,
        Rule::BothCreatedTable,
        Rule::MetadataChanged,
        Rule::SameDomain,
        Rule::AppIdRead,
        Rule::ConcurrentAppend,
        Rule::DeleteRead,
        Rule::DeleteDelete,
        Rule::IdentityColumns,
        Rule::RowDeleteDelete,
        Rule::RowDeleteRead,
        Rule::RowAppend,
        Rule::PassRuleDisabled,
        Rule::PassBinDropped,
        Rule::PassCompactionCarries,
        Rule::PassRemappedOntoCompaction,
        Rule::PassFollowedByRowId,
        Rule::PassAllRowsDeleted,
        Rule::PassDisjointRows,
        Rule::PassNoAddedRowMatches,
        Rule::PassBlindAppend,
        Rule::PassSnapshotIsolation,
        Rule::PassWriteSerializable,
        Rule::PassNoReadPredicate,
        Rule::PassDataSkipping,
        Rule::PassPartitions,
        Rule::PassNoDataAdded,
        Rule::PassNoNewDataFiles,
        Rule::PassNoCheckFailed,
    ];

    /// The stable id (snake_case; pass rules start with `pass_`).
    pub fn id(self) -> &'static str {
        match self {
            Rule::ProtocolChanged => "protocol_changed",
            Rule::BothCreatedTable => "both_created_table",
            Rule::MetadataChanged => "metadata_changed",
            Rule::SameDomain => "same_domain",
            Rule::AppIdRead => "app_id_read",
            Rule::ConcurrentAppend => "concurrent_append",
            Rule::DeleteRead => "delete_read",
            Rule::DeleteDelete => "delete_delete",
            Rule::IdentityColumns => "identity_columns",
            Rule::RowDeleteDelete => "row_delete_delete",
            Rule::RowDeleteRead => "row_delete_read",
            Rule::RowAppend => "row_append",
            Rule::PassRuleDisabled => "pass_rule_disabled",
            Rule::PassBinDropped => "pass_bin_dropped",
            Rule::PassCompactionCarries => "pass_compaction_carries_deletes",
            Rule::PassRemappedOntoCompaction => "pass_remapped_onto_compaction",
            Rule::PassFollowedByRowId => "pass_followed_by_row_id",
            Rule::PassAllRowsDeleted => "pass_all_rows_deleted",
            Rule::PassDisjointRows => "pass_disjoint_rows",
            Rule::PassNoAddedRowMatches => "pass_no_added_row_matches",
            Rule::PassBlindAppend => "pass_blind_append",
            Rule::PassSnapshotIsolation => "pass_snapshot_isolation",
            Rule::PassWriteSerializable => "pass_write_serializable",
            Rule::PassNoReadPredicate => "pass_no_read_predicate",
            Rule::PassDataSkipping => "pass_data_skipping",
            Rule::PassPartitions => "pass_partitions",
            Rule::PassNoDataAdded => "pass_no_data_added",
            Rule::PassNoNewDataFiles => "pass_no_new_data_files",
            Rule::PassNoCheckFailed => "pass_no_check_failed",
        }
    }

    /// The rule as `explain` names it (the section of concurrency.md, then what it says).
    pub fn describe(self) -> &'static str {
        match self {
            Rule::ProtocolChanged => "§3 check 1: a protocol change fails every concurrent writer",
            Rule::BothCreatedTable => "§3 check 1: a protocol change fails every concurrent writer (both transactions created the table)",
            Rule::MetadataChanged => "§3 check 2: a metadata change fails every concurrent writer",
            Rule::SameDomain => "§3 check 3: both wrote the same metadata domain",
            Rule::AppIdRead => "§3 check 4: the winner set an application id this transaction read",
            Rule::ConcurrentAppend => "§3 check 5: the winner added files this transaction should have read",
            Rule::DeleteRead => "§3 check 6: the winner removed a file this transaction read",
            Rule::DeleteDelete => "§3 check 7: both removed the same file",
            Rule::IdentityColumns => "§3 check 8: identity columns",
            Rule::RowDeleteDelete => "§4 rule 1: both changed the same rows",
            Rule::RowDeleteRead => "§4 rule 2: the winner changed rows this transaction read",
            Rule::RowAppend => "§4 rule 4: rows the winner added match the read predicate",
            Rule::PassRuleDisabled => "a conflict rule switched off in a test build (test hooks)",
            Rule::PassBinDropped => "§4 rule 5: of two overlapping compactions the later drops the bins already replaced",
            Rule::PassCompactionCarries => "§4 rule 5: compaction never conflicts (deleted rows remapped onto its output)",
            Rule::PassRemappedOntoCompaction => "§4 rule 5: compaction never conflicts (this transaction's changes remapped onto its output)",
            Rule::PassFollowedByRowId => "§4 rule 5: compaction never conflicts (rows followed onto its output by their row ids)",
            Rule::PassAllRowsDeleted => "§4 rule 5: the compaction dropped a file with no live row",
            Rule::PassDisjointRows => "§4 rules 1-3: disjoint rows of the same file (deletion vectors merged)",
            Rule::PassNoAddedRowMatches => "§4 rule 4: no row the winner added matches the read predicates",
            Rule::PassBlindAppend => "§3 check 5: a blind append does not check concurrent appends",
            Rule::PassSnapshotIsolation => "§2: SnapshotIsolation (a dataChange=false commit) ignores added files",
            Rule::PassWriteSerializable => "§2: WriteSerializable ignores a concurrent blind append",
            Rule::PassNoReadPredicate => "§3 check 5: this transaction read nothing the added files could change",
            Rule::PassDataSkipping => "§3 check 5 with conflict-time data skipping: no added file can hold a matching row",
            Rule::PassPartitions => "§3 check 5: no added file is in a partition this transaction read",
            Rule::PassNoDataAdded => "§3 checks 5-7: the winner added no data and removed nothing this transaction read or removed",
            Rule::PassNoNewDataFiles => "§4: the winner added no data files",
            Rule::PassNoCheckFailed => "§3 checks 1-8: no check failed",
        }
    }

    pub fn from_id(id: &str) -> Option<Rule> {
        Rule::ALL.into_iter().find(|r| r.id() == id)
    }

    /// The exception a conflict rule raises; `None` for a pass rule.
    pub fn kind(self) -> Option<ConflictKind> {
        Some(match self {
            Rule::ProtocolChanged | Rule::BothCreatedTable => ConflictKind::ProtocolChanged,
            Rule::MetadataChanged => ConflictKind::MetadataChanged,
            Rule::SameDomain | Rule::AppIdRead => ConflictKind::ConcurrentTransaction,
            Rule::ConcurrentAppend | Rule::RowAppend => ConflictKind::ConcurrentAppend,
            Rule::DeleteRead | Rule::RowDeleteRead => ConflictKind::ConcurrentDeleteRead,
            Rule::DeleteDelete | Rule::RowDeleteDelete => ConflictKind::ConcurrentDeleteDelete,
            Rule::IdentityColumns => ConflictKind::ConcurrentWrite,
            _ => return None,
        })
    }
}

/// Why row-level concurrency fell back to file level for a file (§4 rule 6). The conflict then
/// carries the file-level rule of its exception.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fallback {
    /// The read predicate cannot be decided on rows (not deterministic, nested values).
    Predicate,
    /// A DV or data file needed for the decision could not be read (or located).
    Unreadable,
    /// The time budget for row-level resolution of the commit attempt ran out.
    TimeBudget,
    /// A compaction recorded no provenance: its rows cannot be mapped to its inputs.
    NoProvenance,
}

impl Fallback {
    pub const ALL: [Fallback; 4] = [
        Fallback::Predicate,
        Fallback::Unreadable,
        Fallback::TimeBudget,
        Fallback::NoProvenance,
    ];

    /// The stable id (snake_case, starting with `fallback_`).
    pub fn id(self) -> &'static str {
        match self {
            Fallback::Predicate => "fallback_predicate",
            Fallback::Unreadable => "fallback_unreadable",
            Fallback::TimeBudget => "fallback_time_budget",
            Fallback::NoProvenance => "fallback_no_provenance",
        }
    }

    /// The rule as `explain` appends it to the file-level rule; the id says which cause, the
    /// conflict's reason says it in words.
    pub fn describe(self) -> &'static str {
        "§4 rule 6: row-level concurrency fell back to file level"
    }

    pub fn from_id(id: &str) -> Option<Fallback> {
        Fallback::ALL.into_iter().find(|f| f.id() == id)
    }
}

/// The description of a rule or fallback id; `None` for an unknown id.
pub fn describe(id: &str) -> Option<&'static str> {
    Rule::from_id(id)
        .map(Rule::describe)
        .or_else(|| Fallback::from_id(id).map(Fallback::describe))
}

/// Every rule and fallback id.
pub fn ids() -> impl Iterator<Item = &'static str> {
    Rule::ALL
        .into_iter()
        .map(Rule::id)
        .chain(Fallback::ALL.into_iter().map(Fallback::id))
}

/// The §6 conflict exceptions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConflictKind {
    ConcurrentWrite,
    MetadataChanged,
    ProtocolChanged,
    ConcurrentAppend,
    ConcurrentDeleteRead,
    ConcurrentDeleteDelete,
    ConcurrentTransaction,
}

impl ConflictKind {
    /// The name Delta gives this exception (delta-spark's `io.delta.exceptions`): the names the
    /// test hooks take, and the names the binding's exception classes carry.
    pub fn delta_name(self) -> &'static str {
        match self {
            ConflictKind::ConcurrentWrite => "ConcurrentWriteException",
            ConflictKind::MetadataChanged => "MetadataChangedException",
            ConflictKind::ProtocolChanged => "ProtocolChangedException",
            ConflictKind::ConcurrentAppend => "ConcurrentAppendException",
            ConflictKind::ConcurrentDeleteRead => "ConcurrentDeleteReadException",
            ConflictKind::ConcurrentDeleteDelete => "ConcurrentDeleteDeleteException",
            ConflictKind::ConcurrentTransaction => "ConcurrentTransactionException",
        }
    }

    pub(crate) fn error_class(self, with_hint: bool) -> String {
        let base = match self {
            ConflictKind::ConcurrentWrite => "DELTA_CONCURRENT_WRITE",
            ConflictKind::MetadataChanged => "DELTA_METADATA_CHANGED",
            ConflictKind::ProtocolChanged => "DELTA_PROTOCOL_CHANGED",
            ConflictKind::ConcurrentAppend => "DELTA_CONCURRENT_APPEND",
            ConflictKind::ConcurrentDeleteRead => "DELTA_CONCURRENT_DELETE_READ",
            ConflictKind::ConcurrentDeleteDelete => "DELTA_CONCURRENT_DELETE_DELETE",
            ConflictKind::ConcurrentTransaction => "DELTA_CONCURRENT_TRANSACTION",
        };
        match self {
            ConflictKind::ConcurrentAppend
            | ConflictKind::ConcurrentDeleteRead
            | ConflictKind::ConcurrentDeleteDelete => {
                format!(
                    "{base}.{}",
                    if with_hint {
                        "WITH_PARTITION_HINT"
                    } else {
                        "WITHOUT_HINT"
                    }
                )
            }
            _ => base.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_are_unique_snake_case_and_round_trip() {
        let all: Vec<&str> = ids().collect();
        assert_eq!(
            all.iter().collect::<HashSet<_>>().len(),
            all.len(),
            "{all:?}"
        );
        for id in &all {
            assert!(
                id.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{id}"
            );
            assert!(describe(id).is_some_and(|d| !d.is_empty()), "{id}");
        }
        for r in Rule::ALL {
            assert_eq!(Rule::from_id(r.id()), Some(r));
            // Pass rules carry no exception; conflict rules one.
            assert_eq!(r.kind().is_none(), r.id().starts_with("pass_"), "{r:?}");
        }
        for f in Fallback::ALL {
            assert_eq!(Fallback::from_id(f.id()), Some(f));
        }
        assert_eq!(describe("no_such_rule"), None);
    }

    #[test]
    fn all_lists_every_rule_in_declaration_order() {
        // ALL drives from_id, and the declaration order is the "most specific first" order.
        let mut sorted = Rule::ALL;
        sorted.sort();
        assert_eq!(sorted, Rule::ALL);
        assert_eq!(Rule::ALL.last(), Some(&Rule::PassNoCheckFailed));
    }

    /// The ids are written into commits and compared by user code: they never change.
    #[test]
    fn ids_are_stable() {
        let expected = [
            "protocol_changed",
            "both_created_table",
            "metadata_changed",
            "same_domain",
            "app_id_read",
            "concurrent_append",
            "delete_read",
            "delete_delete",
            "identity_columns",
            "row_delete_delete",
            "row_delete_read",
            "row_append",
            "pass_rule_disabled",
            "pass_bin_dropped",
            "pass_compaction_carries_deletes",
            "pass_remapped_onto_compaction",
            "pass_followed_by_row_id",
            "pass_all_rows_deleted",
            "pass_disjoint_rows",
            "pass_no_added_row_matches",
            "pass_blind_append",
            "pass_snapshot_isolation",
            "pass_write_serializable",
            "pass_no_read_predicate",
            "pass_data_skipping",
            "pass_partitions",
            "pass_no_data_added",
            "pass_no_new_data_files",
            "pass_no_check_failed",
            "fallback_predicate",
            "fallback_unreadable",
            "fallback_time_budget",
            "fallback_no_provenance",
        ];
        assert_eq!(ids().collect::<Vec<_>>(), expected);
        assert_eq!(
            Rule::RowDeleteDelete.describe(),
            "§4 rule 1: both changed the same rows"
        );
    }
}
