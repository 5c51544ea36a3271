//! Conflict detection between a transaction and the commits that won the race (concurrency.md §3),
//! and the conflict errors of §6.

pub mod checker;
pub mod row_level;
pub mod rows;
pub mod winner;

use std::fmt;

use crate::isolation::IsolationLevel;

pub use checker::{check, check_all, check_head, check_identity, ReadSet, TxnView};
pub use row_level::{DvChange, RowContext, Staged, PROVENANCE_TAG};
pub use winner::WinningCommit;

/// The §6 exception classes, by name.
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
    pub fn class_name(self) -> &'static str {
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

    fn error_class(self, with_hint: bool) -> String {
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

/// A write conflict with everything §6 asks the exception to carry.
#[derive(Debug, Clone)]
pub struct Conflict {
    pub kind: ConflictKind,
    pub table: String,
    pub winning_version: i64,
    /// The winner's `commitInfo.operation`, or `TRANSACTION` when it has none.
    pub winning_operation: String,
    pub isolation_level: IsolationLevel,
    /// Partition values (logical column → value) of the conflicting file; `None` for an
    /// unpartitioned or whole-table conflict.
    pub partition_hint: Option<Vec<(String, Option<String>)>>,
    pub conflicting_file: Option<String>,
    /// The winner's commitInfo as JSON text.
    pub winning_commit_info: Option<String>,
    pub overlapping_rows: Option<u64>,
    /// Why this is a conflict, in one sentence (also part of the message).
    pub reason: String,
}

impl Conflict {
    pub fn hint_text(&self) -> Option<String> {
        self.partition_hint.as_ref().map(|h| {
            h.iter()
                .map(|(k, v)| {
                    format!(
                        "{k}={}",
                        v.as_deref().unwrap_or("__HIVE_DEFAULT_PARTITION__")
                    )
                })
                .collect::<Vec<_>>()
                .join("/")
        })
    }
}

impl fmt::Display for Conflict {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let hint = self.hint_text();
        let (op, table, v) = (&self.winning_operation, &self.table, self.winning_version);
        write!(
            f,
            "[{}] Transaction conflict detected. ",
            self.kind.error_class(hint.is_some())
        )?;
        match self.kind {
            ConflictKind::ConcurrentAppend => {
                write!(f, "A concurrent {op} added data to table {table} committed at version {v}.")?;
                if let Some(h) = &hint {
                    write!(f, " The concurrent operation modified data in the partition [{h}] that should have been read by this operation.")?;
                }
            }
            ConflictKind::ConcurrentDeleteRead => {
                write!(f, "A concurrent {op} removed data from table {table} committed at version {v}")?;
                match &hint {
                    Some(h) => write!(f, ", in the partition [{h}], that this operation read.")?,
                    None => write!(f, " that this operation read.")?,
                }
            }
            ConflictKind::ConcurrentDeleteDelete => {
                write!(f, "A concurrent {op} also deleted data that this operation deletes, in table {table} committed at version {v}")?;
                match &hint {
                    Some(h) => write!(f, ", in the partition [{h}].")?,
                    None => write!(f, ".")?,
                }
            }
            ConflictKind::MetadataChanged => write!(f, "The metadata of table {table} was changed by a concurrent {op} committed at version {v}.")?,
            ConflictKind::ProtocolChanged => write!(f, "The protocol of table {table} was changed by a concurrent {op} committed at version {v}.")?,
            ConflictKind::ConcurrentTransaction => write!(f, "A concurrent {op} committed at version {v} to table {table} conflicts with this transaction.")?,
            ConflictKind::ConcurrentWrite => write!(f, "A concurrent {op} committed at version {v} wrote to table {table}.")?,
        }
        write!(f, " {}", self.reason)?;
        if let Some(file) = &self.conflicting_file {
            write!(f, " Conflicting file: {file}.")?;
        }
        if let Some(n) = self.overlapping_rows {
            write!(f, " Overlapping rows: {n}.")?;
        }
        write!(
            f,
            " (isolation level {}) Please retry the operation. Refer to https://docs.delta.io/latest/concurrency-control.html for more information.",
            self.isolation_level.as_str()
        )
    }
}
