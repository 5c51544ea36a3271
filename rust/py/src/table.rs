//! `_core.TableHandle`: an open table (latest known snapshot, incremental refresh).

use std::collections::BTreeMap;
use std::sync::Mutex;

use delta_occ_core::{
    convert_to_delta, Error, IsolationLevel, PartitionColumn, Table, Transaction, TxnOptions,
    WinningCommit,
};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::errors::IntoPy;
use crate::snapshot::SnapshotHandle;
use crate::storage::StorageHandle;
use crate::transaction::TransactionHandle;

#[pyclass(frozen, module = "delta_occ._core")]
pub struct TableHandle {
    inner: Mutex<Table>,
    root: String,
    /// The table's location, outside the lock: a refresh on another thread (a network request
    /// for an object store) must not stall a caller that only wants the storage.
    location: delta_occ_core::Location,
}

impl TableHandle {
    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        // A panic while holding the lock cannot leave the table half-updated (refresh swaps an
        // Arc), so a poisoned lock is safe to reuse.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn wrap(table: Table) -> Self {
        let root = table.root().to_string();
        let location = table.root().clone();
        TableHandle {
            inner: Mutex::new(table),
            root,
            location,
        }
    }
}

#[pymethods]
impl TableHandle {
    #[staticmethod]
    #[pyo3(signature = (location, storage_options=None))]
    fn open(
        py: Python<'_>,
        location: String,
        storage_options: Option<BTreeMap<String, String>>,
    ) -> PyResult<Self> {
        let options = storage_options.unwrap_or_default();
        py.detach(|| Table::open(&location, &options))
            .py_err()
            .map(Self::wrap)
    }

    #[staticmethod]
    #[pyo3(signature = (location, schema_json, partition_by, properties, name=None, storage_options=None, cluster_by=None))]
    #[allow(clippy::too_many_arguments)]
    fn create(
        py: Python<'_>,
        location: String,
        schema_json: String,
        partition_by: Vec<String>,
        properties: BTreeMap<String, String>,
        name: Option<String>,
        storage_options: Option<BTreeMap<String, String>>,
        cluster_by: Option<Vec<String>>,
    ) -> PyResult<Self> {
        let options = storage_options.unwrap_or_default();
        let cluster_by = cluster_by.unwrap_or_default();
        py.detach(|| {
            Table::create_clustered(
                &location,
                &options,
                &schema_json,
                partition_by,
                &cluster_by,
                properties,
                name,
            )
        })
        .py_err()
        .map(Self::wrap)
    }

    /// CONVERT TO DELTA: commit version 0 listing the parquet files under `location`; the open
    /// table. `partition_by`: names with an optional Delta type (JSON).
    #[staticmethod]
    #[pyo3(signature = (location, partition_by, properties, storage_options=None))]
    fn convert_to_delta(
        py: Python<'_>,
        location: String,
        partition_by: Vec<(String, Option<String>)>,
        properties: BTreeMap<String, String>,
        storage_options: Option<BTreeMap<String, String>>,
    ) -> PyResult<Self> {
        let options = storage_options.unwrap_or_default();
        py.detach(|| {
            let columns = partition_by
                .into_iter()
                .map(|(name, t)| {
                    let data_type =
                        t.map(|t| serde_json::from_str(&t))
                            .transpose()
                            .map_err(|e| {
                                Error::invalid(format!("partition column {name:?}: type JSON: {e}"))
                            })?;
                    Ok(PartitionColumn { name, data_type })
                })
                .collect::<Result<Vec<_>, Error>>()?;
            convert_to_delta(&location, &options, &columns, properties)?;
            Table::open(&location, &options)
        })
        .py_err()
        .map(Self::wrap)
    }

    #[getter]
    fn root(&self) -> &str {
        &self.root
    }

    /// The table's storage (for the engines' data files).
    #[getter]
    fn storage(&self) -> StorageHandle {
        StorageHandle::new(self.location.clone())
    }

    #[getter]
    fn version(&self, py: Python<'_>) -> i64 {
        // The lock may be held by a refresh on another thread: wait without the GIL.
        py.detach(|| self.table().version())
    }

    fn refresh(&self, py: Python<'_>) -> PyResult<i64> {
        py.detach(|| self.table().refresh()).py_err()
    }

    #[pyo3(signature = (version=None))]
    fn snapshot(&self, py: Python<'_>, version: Option<i64>) -> PyResult<SnapshotHandle> {
        let snap = py.detach(|| self.table().snapshot(version)).py_err()?;
        Ok(SnapshotHandle::new(snap))
    }

    /// The snapshots at `versions` (ascending, no repeats), made in one walk (commits between
    /// them fetched together).
    fn snapshots(&self, py: Python<'_>, versions: Vec<i64>) -> PyResult<Vec<SnapshotHandle>> {
        let snaps = py.detach(|| self.table().snapshots(&versions)).py_err()?;
        Ok(snaps.into_iter().map(SnapshotHandle::new).collect())
    }

    /// The version current at `ts_ms` (epoch milliseconds): the newest whose commit timestamp
    /// is at or before it, at most the latest known version.
    fn version_at(&self, py: Python<'_>, ts_ms: i64) -> PyResult<i64> {
        py.detach(|| self.table().version_at(ts_ms)).py_err()
    }

    /// `[(version, commitInfo JSON text or None)]`, newest first.
    #[pyo3(signature = (limit=None))]
    fn history(
        &self,
        py: Python<'_>,
        limit: Option<usize>,
    ) -> PyResult<Vec<(i64, Option<String>)>> {
        let entries = py.detach(|| self.table().history(limit)).py_err()?;
        entries
            .into_iter()
            .map(|(v, info)| Ok((v, info.py_err()?)))
            .collect()
    }

    /// Keep the commit `txn` (a committed transaction of this table) wrote, so that the next
    /// refresh does not read it back from storage.
    fn adopt_commit(&self, py: Python<'_>, txn: &TransactionHandle) {
        // Both locks may be held for long (a refresh lists and reads the log): wait without the GIL.
        py.detach(|| {
            let mut t = txn.txn();
            self.table().adopt_commit(&mut t);
        })
    }

    /// Refresh, then pin the latest snapshot in a new transaction.
    #[pyo3(signature = (isolation_level=None, row_level=true, data_skipping=true, read_version=None))]
    fn begin(
        &self,
        py: Python<'_>,
        isolation_level: Option<String>,
        row_level: bool,
        data_skipping: bool,
        read_version: Option<i64>,
    ) -> PyResult<TransactionHandle> {
        let level = isolation_level
            .as_deref()
            .map(IsolationLevel::parse)
            .transpose()
            .py_err()?;
        let opts = TxnOptions {
            isolation_level: level,
            row_level,
            data_skipping,
        };
        let txn = py
            .detach(|| {
                let snap = {
                    let mut t = self.table();
                    t.refresh()?;
                    match read_version {
                        None => t.latest(),
                        Some(v) => t.snapshot(Some(v))?,
                    }
                };
                Transaction::begin(snap, opts)
            })
            .py_err()?;
        Ok(TransactionHandle::new(txn))
    }

    /// The transaction that creates a table at `location` (read version -1).
    #[staticmethod]
    #[pyo3(signature = (location, schema_json, partition_by, properties, name=None, storage_options=None, description=None))]
    #[allow(clippy::too_many_arguments)]
    fn begin_create(
        py: Python<'_>,
        location: String,
        schema_json: String,
        partition_by: Vec<String>,
        properties: BTreeMap<String, String>,
        name: Option<String>,
        storage_options: Option<BTreeMap<String, String>>,
        description: Option<String>,
    ) -> PyResult<TransactionHandle> {
        let options = storage_options.unwrap_or_default();
        py.detach(|| {
            delta_occ_core::begin_create(
                &location,
                &options,
                &schema_json,
                partition_by,
                properties,
                name,
                description,
            )
        })
        .py_err()
        .map(TransactionHandle::new)
    }

    /// One commit's actions, summarised: operation, commitInfo, added/removed files, and whether
    /// it changed metadata or protocol. `None` when the commit file does not exist.
    fn commit_summary<'py>(
        &self,
        py: Python<'py>,
        version: i64,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        Ok(self.commit_summaries(py, vec![version])?.pop().flatten())
    }

    /// `commit_summary` of each of `versions`, in order: the commits are fetched concurrently
    /// (on an object store a round trip is paid once, not once per commit; callers bound memory
    /// by how many they ask for at once, see `delta_occ.explain.summaries`).
    fn commit_summaries<'py>(
        &self,
        py: Python<'py>,
        versions: Vec<i64>,
    ) -> PyResult<Vec<Option<Bound<'py, PyDict>>>> {
        let dir = self.table().root().join("_delta_log");
        py.detach(|| WinningCommit::read_many(&dir, &versions))
            .into_iter()
            .map(|w| w.py_err()?.map(|w| summary_dict(py, &w)).transpose())
            .collect()
    }
}

/// The summary dict of one commit (see `TableHandle.commit_summary`).
fn summary_dict<'py>(py: Python<'py>, w: &WinningCommit) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("version", w.version)?;
    d.set_item("operation", &w.operation)?;
    d.set_item("commit_info", &w.commit_info)?;
    let added = PyList::empty(py);
    let values = |pv: &delta_occ_core::PartitionValues| {
        pv.iter()
            .map(|(k, v)| (k.to_string(), v.as_deref().map(String::from)))
            .collect::<BTreeMap<_, _>>()
    };
    for a in &w.adds {
        let f = PyDict::new(py);
        f.set_item("path", &*a.path)?;
        f.set_item("partition_values", values(&a.partition_values))?;
        f.set_item("size", a.size)?;
        f.set_item("data_change", a.data_change)?;
        f.set_item("stats", a.stats_text().py_err()?.as_deref())?;
        f.set_item("deletion_vector", a.dv_unique_id())?;
        added.append(f)?;
    }
    d.set_item("added", added)?;
    let removed = PyList::empty(py);
    for r in &w.removes {
        let f = PyDict::new(py);
        f.set_item("path", &*r.path)?;
        f.set_item("partition_values", r.partition_values.as_ref().map(values))?;
        f.set_item("data_change", r.data_change)?;
        f.set_item("deletion_vector", r.dv_unique_id())?;
        removed.append(f)?;
    }
    d.set_item("removed", removed)?;
    let cdc = PyList::empty(py);
    for c in &w.cdc {
        let f = PyDict::new(py);
        f.set_item("path", &*c.path)?;
        f.set_item("partition_values", values(&c.partition_values))?;
        f.set_item("size", c.size)?;
        cdc.append(f)?;
    }
    d.set_item("cdc", cdc)?;
    d.set_item("metadata_changed", w.metadata.is_some())?;
    d.set_item("protocol_changed", w.protocol.is_some())?;
    d.set_item(
        "app_transactions",
        w.txns
            .iter()
            .map(|t| (t.app_id.clone(), t.version))
            .collect::<BTreeMap<_, _>>(),
    )?;
    Ok(d)
}

/// One commit of `history_report`: version, commitInfo JSON (or None), the problem reading it.
type HistoryEntry = (i64, Option<String>, Option<String>);

/// The history of the log at `location` without loading a snapshot: `(version, commitInfo JSON
/// or None, None)`, or `(version, None, message)` for a commit that cannot be read, newest first
/// (`delta-occ history` prints what it can read and names the rest).
#[pyfunction]
#[pyo3(signature = (location, storage_options=None, limit=None))]
pub fn history_report(
    py: Python<'_>,
    location: String,
    storage_options: Option<BTreeMap<String, String>>,
    limit: Option<usize>,
) -> PyResult<Vec<HistoryEntry>> {
    let options = storage_options.unwrap_or_default();
    let entries = py
        .detach(|| delta_occ_core::history_of(&location, &options, limit))
        .py_err()?;
    Ok(entries
        .into_iter()
        .map(|(v, info)| match info {
            Ok(i) => (v, i, None),
            Err(e) => (v, None, Some(e.to_string())),
        })
        .collect())
}
