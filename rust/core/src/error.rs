//! The one error type of the core, and the write conflict (concurrency.md §6) it carries. The
//! Python binding maps each variant, and each conflict kind, to one exception class; the core
//! names no Python class.

use std::fmt;

use crate::isolation::IsolationLevel;
pub use crate::rule::ConflictKind;
use crate::rule::{Fallback, Rule};

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What is wrong with an expression's text, for callers that word the error for their context
/// (a SET value, a MERGE condition) without reading the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PredicateProblem {
    /// Not valid SQL, or not valid here (types, functions, constructs).
    Invalid,
    /// Names a column the table (or the MERGE source) does not have; `position` points at the name.
    UnknownColumn,
    /// Valid, but failed on the rows (an overflow, a bad cast of a value).
    Evaluation,
}

impl PredicateProblem {
    /// The name the binding gives Python (`PredicateError.problem`).
    pub fn name(self) -> &'static str {
        match self {
            PredicateProblem::Invalid => "invalid",
            PredicateProblem::UnknownColumn => "unknown_column",
            PredicateProblem::Evaluation => "evaluation",
        }
    }

    fn prefix(self) -> &'static str {
        match self {
            PredicateProblem::Evaluation => "cannot evaluate: ",
            _ => "",
        }
    }
}

/// What is wrong with a table's storage, beyond an I/O error that retrying may cure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageProblem {
    /// A scheme delta-occ does not write to (`dbfs:`, `hdfs://`, ...).
    UnsupportedScheme,
    /// A location that is not a valid path or URI.
    InvalidLocation,
    /// Storage options the store does not accept (an unknown key, a bad value).
    InvalidOptions,
    /// The store does not honour conditional creates: commits could overwrite each other.
    NoConditionalWrites,
    /// The bucket or container does not exist.
    BucketNotFound,
    /// The credentials were refused (a wrong or expired key).
    Unauthenticated,
    /// The credentials are valid but may not do this (a read-only key).
    PermissionDenied,
}

impl StorageProblem {
    /// The name the binding gives Python (`StorageError.problem`).
    pub fn name(self) -> &'static str {
        match self {
            StorageProblem::UnsupportedScheme => "unsupported_scheme",
            StorageProblem::InvalidLocation => "invalid_location",
            StorageProblem::InvalidOptions => "invalid_options",
            StorageProblem::NoConditionalWrites => "no_conditional_writes",
            StorageProblem::BucketNotFound => "bucket_not_found",
            StorageProblem::Unauthenticated => "unauthenticated",
            StorageProblem::PermissionDenied => "permission_denied",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("no Delta table at {path}: {reason}")]
    TableNotFound { path: String, reason: String },

    /// A schema change that would lose data the user did not say to drop.
    #[error("schema change on {table} (version {version}): {detail}")]
    SchemaMismatch {
        table: String,
        version: i64,
        column: String,
        detail: String,
    },

    /// A table (or files a new table would hide) already at the location `create` was given.
    #[error("cannot create a Delta table at {path}: it already holds {found}")]
    TableAlreadyExists { path: String, found: String },

    #[error("corrupt Delta log: {file}{}: {message}", version_suffix(*.version))]
    CorruptLog {
        file: String,
        version: Option<i64>,
        message: String,
    },

    #[error("version {version} of {table} cannot be read: {reason}")]
    VersionNotFound {
        table: String,
        version: i64,
        reason: String,
    },

    #[error("unsupported {what} in {table}{}: {detail}", version_suffix(*.version))]
    UnsupportedFeature {
        table: String,
        version: Option<i64>,
        what: String,
        detail: String,
    },

    #[error("deletion vector error in {file}: {message}")]
    DeletionVector { file: String, message: String },

    /// A table's storage refused the work for a reason that retrying cannot cure; `message`
    /// names the location and never holds a secret.
    #[error("storage error ({}): {message}", problem.name())]
    Storage {
        location: String,
        problem: StorageProblem,
        message: String,
    },

    /// A commit whose outcome could not be learned: it may or may not have landed at
    /// `version`. The files it references are kept.
    #[error("the outcome of the commit to {table} at version {version} is unknown: {reason}. Its files are kept; read the table to see whether it landed")]
    CommitOutcomeUnknown {
        table: String,
        version: i64,
        reason: String,
    },

    #[error("I/O error on {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },

    #[error("{0}")]
    InvalidArgument(String),

    /// Bad `where` text. `position` is the 1-based character column in `text`.
    #[error("invalid predicate {text:?} at position {position}: {}{reason}", problem.prefix())]
    Predicate {
        text: String,
        position: usize,
        reason: String,
        problem: PredicateProblem,
    },

    /// DROP FEATURE cannot finish yet: the feature is still in use, or a version that used it
    /// is younger than the wait (`drop_feature`). `ready_at_ms`: when to run it again.
    #[error("cannot drop {feature} from {table} at version {version} yet: {detail}")]
    FeatureDropPending {
        table: String,
        version: i64,
        feature: String,
        ready_at_ms: Option<i64>,
        detail: String,
    },

    /// A write conflict (concurrency.md §3, §6).
    #[error("{0}")]
    Conflict(Box<Conflict>),

    /// The caller stopped the commit loop while it was backing off; nothing was published.
    #[error("commit to {table} interrupted while backing off after {attempts} attempt(s); nothing was published")]
    Interrupted { table: String, attempts: u32 },

    #[error("commit to {table} gave up after {attempts} attempts in {elapsed_ms} ms (versions tried: {}): {reason}", fmt_versions(.versions_tried))]
    CommitRetriesExceeded {
        table: String,
        attempts: u32,
        elapsed_ms: u64,
        versions_tried: Vec<i64>,
        reason: String,
    },
}

fn fmt_versions(v: &[i64]) -> String {
    let join = |v: &[i64]| v.iter().map(i64::to_string).collect::<Vec<_>>().join(", ");
    // A commit retried for minutes tried many versions: the first and last few say enough.
    if v.len() > 12 {
        format!(
            "{}, … {} more …, {}",
            join(&v[..5]),
            v.len() - 10,
            join(&v[v.len() - 5..])
        )
    } else {
        join(v)
    }
}

fn version_suffix(v: Option<i64>) -> String {
    v.map(|v| format!(" (version {v})")).unwrap_or_default()
}

impl Error {
    /// An I/O error on `path`; one that carries a storage problem (a missing bucket, refused
    /// credentials, ...) becomes [`Error::Storage`].
    pub fn io(path: impl fmt::Display, source: std::io::Error) -> Self {
        if let Some((problem, message)) = problem_of(&source) {
            return Error::Storage {
                location: path.to_string(),
                problem,
                message: message.to_string(),
            };
        }
        Error::Io {
            path: path.to_string(),
            source,
        }
    }

    pub(crate) fn from_fault(location: &str, fault: StorageFault) -> Self {
        match fault.problem {
            Some(problem) => Error::Storage {
                location: location.to_string(),
                problem,
                message: fault.message,
            },
            None => Error::Io {
                path: location.to_string(),
                source: std::io::Error::other(fault.message),
            },
        }
    }

    /// Whether retrying cannot cure this error: a storage problem, or an I/O error such as a
    /// permission problem or a full disk.
    pub fn is_permanent(&self) -> bool {
        use std::io::ErrorKind as K;
        match self {
            Error::Storage { .. } => true,
            Error::Io { source, .. } => matches!(
                source.kind(),
                K::PermissionDenied
                    | K::ReadOnlyFilesystem
                    | K::StorageFull
                    | K::QuotaExceeded
                    | K::FileTooLarge
                    | K::NotADirectory
                    | K::IsADirectory
                    | K::InvalidInput
                    | K::Unsupported
            ),
            _ => false,
        }
    }

    pub fn corrupt(
        file: impl fmt::Display,
        version: Option<i64>,
        message: impl Into<String>,
    ) -> Self {
        Error::CorruptLog {
            file: file.to_string(),
            version,
            message: message.into(),
        }
    }

    pub fn dv(file: impl Into<String>, message: impl Into<String>) -> Self {
        Error::DeletionVector {
            file: file.into(),
            message: message.into(),
        }
    }

    pub fn predicate(text: &str, position: usize, reason: impl Into<String>) -> Self {
        Self::predicate_problem(text, position, reason, PredicateProblem::Invalid)
    }

    pub fn predicate_problem(
        text: &str,
        position: usize,
        reason: impl Into<String>,
        problem: PredicateProblem,
    ) -> Self {
        Error::Predicate {
            text: text.to_string(),
            position,
            reason: reason.into(),
            problem,
        }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Error::InvalidArgument(message.into())
    }
}

/// Run decoding of untrusted bytes that may panic (the parquet crate asserts on some malformed
/// footers) and turn a panic into the error `on_panic` builds from its message, so corrupt input
/// is always a typed error, never a crash of the caller.
pub(crate) fn no_panic<T>(
    f: impl FnOnce() -> Result<T>,
    on_panic: impl FnOnce(&str) -> Error,
) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|payload| {
        let msg = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_string());
        Err(on_panic(&msg))
    })
}

/// A write conflict with everything §6 asks the exception to carry.
#[derive(Debug, Clone)]
pub struct Conflict {
    pub kind: ConflictKind,
    /// The rule that failed (its [`Rule::kind`] is `kind`); with a `fallback` it is the
    /// file-level rule that decided after row-level concurrency fell back.
    pub rule: Rule,
    /// Why row-level concurrency fell back to file level (§4 rule 6), if it did.
    pub fallback: Option<Fallback>,
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

/// What a storage error means to a user, beyond its I/O kind: problems that retrying cannot cure.
#[derive(Debug)]
pub struct StorageFault {
    pub problem: Option<StorageProblem>,
    /// The message, with every secret of the store's options removed.
    pub message: String,
}

impl StorageFault {
    pub(crate) fn new(problem: Option<StorageProblem>, message: impl Into<String>) -> Self {
        StorageFault {
            problem,
            message: message.into(),
        }
    }

    pub(crate) fn into_io(self, kind: std::io::ErrorKind) -> std::io::Error {
        std::io::Error::new(kind, self)
    }
}

impl std::fmt::Display for StorageFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for StorageFault {}

/// A copy of an I/O error (`std::io::Error` is not `Clone`) that keeps its kind and storage problem.
pub(crate) fn clone_io(e: &std::io::Error) -> std::io::Error {
    match e.get_ref().and_then(|r| r.downcast_ref::<StorageFault>()) {
        Some(f) => StorageFault::new(f.problem, f.message.clone()).into_io(e.kind()),
        None => std::io::Error::new(e.kind(), e.to_string()),
    }
}

/// The storage problem an I/O error carries, if any.
pub(crate) fn problem_of(e: &std::io::Error) -> Option<(StorageProblem, &str)> {
    let fault = e.get_ref()?.downcast_ref::<StorageFault>()?;
    fault.problem.map(|p| (p, fault.message.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_in_untrusted_decoding_becomes_the_callers_error() {
        // The fuzzer found a corrupt checkpoint on which the parquet crate panics ("column start
        // and length should not be negative"); the reader must turn that into a typed error.
        let r: Result<()> = no_panic(
            || panic!("column start and length should not be negative"),
            |m| Error::corrupt("cp.parquet", Some(7), m),
        );
        let e = r.unwrap_err().to_string();
        assert!(
            e.contains("cp.parquet")
                && e.contains("(version 7)")
                && e.contains("should not be negative"),
            "{e}"
        );
        let ok: Result<u8> = no_panic(|| Ok(3), |m| Error::invalid(m));
        assert_eq!(ok.unwrap(), 3);
    }
}
