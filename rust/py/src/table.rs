//! `_core.TableHandle`: an open table (latest known snapshot, incremental refresh).

use std::collections::BTreeMap;
use std::sync::Mutex;

use delta_occ_core::Table;
use pyo3::prelude::*;

use crate::errors::IntoPy;
use crate::snapshot::SnapshotHandle;

#[pyclass(frozen, module = "delta_occ._core")]
pub struct TableHandle {
    inner: Mutex<Table>,
    root: String,
}

impl TableHandle {
    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        // A panic while holding the lock cannot leave the table half-updated (refresh swaps an
        // Arc), so a poisoned lock is safe to reuse.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn wrap(table: Table) -> Self {
        let root = table.root().display().to_string();
        TableHandle { inner: Mutex::new(table), root }
    }
}

#[pymethods]
impl TableHandle {
    #[staticmethod]
    fn open(py: Python<'_>, location: String) -> PyResult<Self> {
        py.detach(|| Table::open(&location)).py_err().map(Self::wrap)
    }

    #[staticmethod]
    #[pyo3(signature = (location, schema_json, partition_by, properties, name=None))]
    fn create(
        py: Python<'_>,
        location: String,
        schema_json: String,
        partition_by: Vec<String>,
        properties: BTreeMap<String, String>,
        name: Option<String>,
    ) -> PyResult<Self> {
        py.detach(|| Table::create(&location, &schema_json, partition_by, properties, name)).py_err().map(Self::wrap)
    }

    #[getter]
    fn root(&self) -> &str {
        &self.root
    }

    #[getter]
    fn version(&self) -> i64 {
        self.table().version()
    }

    fn refresh(&self, py: Python<'_>) -> PyResult<i64> {
        py.detach(|| self.table().refresh()).py_err()
    }

    #[pyo3(signature = (version=None))]
    fn snapshot(&self, py: Python<'_>, version: Option<i64>) -> PyResult<SnapshotHandle> {
        let snap = py.detach(|| self.table().snapshot(version)).py_err()?;
        Ok(SnapshotHandle::new(snap))
    }

    /// `[(version, commitInfo JSON text or None)]`, newest first.
    #[pyo3(signature = (limit=None))]
    fn history(&self, py: Python<'_>, limit: Option<usize>) -> PyResult<Vec<(i64, Option<String>)>> {
        py.detach(|| self.table().history(limit)).py_err()
    }
}
