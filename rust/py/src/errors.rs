//! The one conversion from core errors to the exception classes of `delta_occ.exceptions`.

use delta_occ_core::{ConflictKind, Error};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString};

/// The class of `delta_occ.exceptions` each error is raised as.
fn class_name(e: &Error) -> &'static str {
    match e {
        Error::TableNotFound { .. } => "TableNotFoundError",
        Error::TableAlreadyExists { .. } => "TableAlreadyExistsError",
        Error::SchemaMismatch { .. } => "SchemaMismatchError",
        Error::CorruptLog { .. } => "CorruptLogError",
        Error::VersionNotFound { .. } => "VersionNotFoundError",
        Error::UnsupportedFeature { .. } => "UnsupportedFeatureError",
        Error::DeletionVector { .. } => "DeletionVectorError",
        Error::Io { .. } => "DeltaIOError",
        Error::Storage { .. } => "StorageError",
        Error::CommitOutcomeUnknown { .. } => "CommitOutcomeUnknownError",
        Error::InvalidArgument(_) => "InvalidArgumentError",
        Error::Predicate { .. } => "PredicateError",
        Error::Conflict(c) => conflict_class(c.kind),
        Error::CommitRetriesExceeded { .. } => "CommitRetriesExceededError",
        Error::Interrupted { .. } => "CommitInterruptedError",
        Error::FeatureDropPending { .. } => "FeatureDropPendingError",
    }
}

/// The conflict classes of `delta_occ.exceptions` carry Delta's own exception names (as
/// delta-spark's `io.delta.exceptions` do), which the core owns.
fn conflict_class(kind: ConflictKind) -> &'static str {
    kind.delta_name()
}

fn attributes<'py>(py: Python<'py>, e: &Error) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    match e {
        Error::TableNotFound { path, .. } | Error::TableAlreadyExists { path, .. } => {
            d.set_item("table", path)?
        }
        Error::CorruptLog { file, version, .. } => {
            d.set_item("file", file)?;
            d.set_item("version", version)?;
        }
        Error::VersionNotFound { table, version, .. } => {
            d.set_item("table", table)?;
            d.set_item("version", version)?;
        }
        Error::UnsupportedFeature {
            table,
            version,
            detail,
            ..
        } => {
            d.set_item("table", table)?;
            d.set_item("version", version)?;
            d.set_item("feature", detail)?;
        }
        Error::DeletionVector { file, .. } => d.set_item("file", file)?,
        Error::Io { path, source } => {
            d.set_item("file", path)?;
            d.set_item("errno", source.raw_os_error())?;
        }
        Error::Storage {
            location, problem, ..
        } => {
            d.set_item("file", location)?;
            d.set_item("location", location)?;
            d.set_item("problem", problem.name())?;
        }
        Error::CommitOutcomeUnknown { table, version, .. } => {
            d.set_item("table", table)?;
            d.set_item("version", version)?;
        }
        Error::InvalidArgument(_) => {}
        Error::SchemaMismatch {
            table,
            version,
            column,
            ..
        } => {
            d.set_item("table", table)?;
            d.set_item("version", version)?;
            d.set_item("column", column)?;
        }
        Error::FeatureDropPending {
            table,
            version,
            feature,
            ready_at_ms,
            ..
        } => {
            d.set_item("table", table)?;
            d.set_item("version", version)?;
            d.set_item("feature", feature)?;
            d.set_item("ready_at_ms", ready_at_ms)?;
        }
        Error::Interrupted { table, attempts } => {
            d.set_item("table", table)?;
            d.set_item("attempts", attempts)?;
        }
        Error::Predicate {
            text,
            position,
            reason,
            problem,
        } => {
            d.set_item("text", text)?;
            d.set_item("position", position)?;
            d.set_item("reason", reason)?;
            d.set_item("problem", problem.name())?;
        }
        Error::Conflict(c) => {
            d.set_item("winning_version", c.winning_version)?;
            d.set_item("winning_operation", &c.winning_operation)?;
            d.set_item("table", &c.table)?;
            d.set_item("isolation_level", c.isolation_level.as_str())?;
            let hint = match &c.partition_hint {
                None => None,
                Some(h) => {
                    let hd = PyDict::new(py);
                    for (k, v) in h {
                        hd.set_item(k, v)?;
                    }
                    Some(hd)
                }
            };
            d.set_item("partition_hint", hint)?;
            d.set_item("conflicting_file", &c.conflicting_file)?;
            static LOADS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
            let info = match &c.winning_commit_info {
                Some(text) => Some(LOADS.import(py, "json", "loads")?.call1((text,))?),
                None => None,
            };
            d.set_item("winning_commit_info", info)?;
            d.set_item("overlapping_rows", c.overlapping_rows)?;
            d.set_item("reason", &c.reason)?;
            d.set_item("rule", c.rule.id())?;
            d.set_item("fallback", c.fallback.map(|f| f.id()))?;
        }
        Error::CommitRetriesExceeded {
            table,
            attempts,
            elapsed_ms,
            versions_tried,
            ..
        } => {
            d.set_item("table", table)?;
            d.set_item("attempts", attempts)?;
            d.set_item("elapsed_ms", elapsed_ms)?;
            d.set_item("versions_tried", versions_tried)?;
        }
    }
    Ok(d)
}

/// The classes of `delta_occ.exceptions` by name, resolved on the first error and kept.
fn classes(py: Python<'_>) -> PyResult<&Bound<'_, PyDict>> {
    static CLASSES: PyOnceLock<Py<PyDict>> = PyOnceLock::new();
    CLASSES
        .get_or_try_init(py, || {
            let module = py.import("delta_occ.exceptions")?;
            let by_name = PyDict::new(py);
            for name in module.getattr("__all__")?.try_iter()? {
                let name = name?;
                by_name.set_item(&name, module.getattr(name.cast::<PyString>()?)?)?;
            }
            Ok::<_, PyErr>(by_name.unbind())
        })
        .map(|d| d.bind(py))
}

pub fn to_py(e: Error) -> PyErr {
    Python::attach(|py| {
        let build = || -> PyResult<PyErr> {
            let name = class_name(&e);
            let class = classes(py)?.get_item(name)?.ok_or_else(|| {
                PyRuntimeError::new_err(format!("delta_occ.exceptions has no class {name}"))
            })?;
            let exc = class.call((e.to_string(),), Some(&attributes(py, &e)?))?;
            Ok(PyErr::from_value(exc))
        };
        build().unwrap_or_else(|import_err| match e {
            Error::InvalidArgument(m) => PyValueError::new_err(m),
            other => PyRuntimeError::new_err(format!(
                "{other} (and delta_occ.exceptions failed: {import_err})"
            )),
        })
    })
}

/// `?`-friendly conversion.
pub trait IntoPy<T> {
    fn py_err(self) -> PyResult<T>;
}

impl<T> IntoPy<T> for Result<T, Error> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}
