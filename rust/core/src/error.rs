//! The one error type of the core. The Python binding maps each variant to one exception class.

use std::path::Path;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("no Delta table at {path}: {reason}")]
    TableNotFound { path: String, reason: String },

    #[error("a Delta table already exists at {path} (found {found})")]
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

    #[error("I/O error on {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },

    #[error("{0}")]
    InvalidArgument(String),

    /// Bad `where` text. `position` is the 1-based character column in `text`.
    #[error("invalid predicate {text:?} at position {position}: {reason}")]
    Predicate {
        text: String,
        position: usize,
        reason: String,
    },

    /// A write conflict (concurrency.md §3, §6).
    #[error("{0}")]
    Conflict(Box<crate::conflict::Conflict>),

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
    v.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")
}

fn version_suffix(v: Option<i64>) -> String {
    v.map(|v| format!(" (version {v})")).unwrap_or_default()
}

impl Error {
    pub fn io(path: impl AsRef<Path>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.as_ref().display().to_string(),
            source,
        }
    }

    pub fn corrupt(
        file: impl AsRef<Path>,
        version: Option<i64>,
        message: impl Into<String>,
    ) -> Self {
        Error::CorruptLog {
            file: file.as_ref().display().to_string(),
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
        Error::Predicate {
            text: text.to_string(),
            position,
            reason: reason.into(),
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
