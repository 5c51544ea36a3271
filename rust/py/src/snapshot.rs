//! `_core.SnapshotHandle`: an immutable replayed state of one version.

use std::collections::BTreeMap;
use std::sync::Arc;

use delta_occ_core::files_batch::{self, FileColumns};
use delta_occ_core::Snapshot;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyCapsule, PyDict};

use crate::arrow::{batch_to_capsules, batches_to_capsules};
use crate::deletion_vector::{keep_bits, DeletionVector};
use crate::errors::IntoPy;

#[pyclass(frozen, module = "delta_occ._core")]
pub struct SnapshotHandle {
    inner: Arc<Snapshot>,
}

impl SnapshotHandle {
    pub fn new(inner: Arc<Snapshot>) -> Self {
        SnapshotHandle { inner }
    }

    pub fn inner(&self) -> &Arc<Snapshot> {
        &self.inner
    }
}

type Capsules<'py> = (Bound<'py, PyCapsule>, Bound<'py, PyCapsule>);

#[pymethods]
impl SnapshotHandle {
    /// The clustering columns (logical names), None when the table is not clustered.
    #[getter]
    fn clustering_columns(&self) -> PyResult<Option<Vec<String>>> {
        delta_occ_core::clustering_columns(&self.inner).py_err()
    }

    #[getter]
    fn version(&self) -> i64 {
        self.inner.version()
    }

    #[getter]
    fn root(&self) -> String {
        self.inner.root.to_string()
    }

    /// The table's storage (for the engines' data files).
    #[getter]
    fn storage(&self) -> crate::storage::StorageHandle {
        crate::storage::StorageHandle::new(self.inner.root.clone())
    }

    #[getter]
    fn schema_json(&self) -> &str {
        &self.inner.metadata().schema_string
    }

    #[getter]
    fn partition_columns(&self) -> Vec<String> {
        self.inner
            .partition_columns
            .iter()
            .map(|c| c.name.clone())
            .collect()
    }

    #[getter]
    fn deletion_vectors_enabled(&self) -> bool {
        self.inner.deletion_vectors_enabled()
    }

    #[getter]
    fn properties(&self) -> BTreeMap<String, String> {
        self.inner.metadata().configuration.clone()
    }

    #[getter]
    fn column_mapping_mode(&self) -> &'static str {
        match self.inner.mapping {
            delta_occ_core::ColumnMappingMode::None => "none",
            delta_occ_core::ColumnMappingMode::Name => "name",
            delta_occ_core::ColumnMappingMode::Id => "id",
        }
    }

    #[getter]
    fn isolation_level(&self) -> PyResult<&'static str> {
        self.inner.isolation_level().py_err().map(|l| l.as_str())
    }

    #[getter]
    fn protocol<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let p = self.inner.protocol();
        let d = PyDict::new(py);
        d.set_item("min_reader_version", p.min_reader_version)?;
        d.set_item("min_writer_version", p.min_writer_version)?;
        d.set_item("reader_features", p.reader_features.clone())?;
        d.set_item("writer_features", p.writer_features.clone())?;
        Ok(d)
    }

    #[getter]
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let m = self.inner.metadata();
        let d = PyDict::new(py);
        d.set_item("id", &m.id)?;
        d.set_item("name", &m.name)?;
        d.set_item("description", &m.description)?;
        d.set_item("created_time", m.created_time)?;
        d.set_item("format", &m.format.provider)?;
        Ok(d)
    }

    /// commitInfo of this version as JSON text (None when replay started from its checkpoint).
    #[getter]
    fn commit_info(&self) -> Option<String> {
        self.inner.state.commit_info.as_deref().map(String::from)
    }

    #[getter]
    fn checkpoint_version(&self) -> Option<i64> {
        self.inner.state.checkpoint_version
    }

    fn num_files(&self) -> usize {
        self.inner.files().len()
    }

    #[pyo3(signature = (columns=None))]
    fn files<'py>(
        &self,
        py: Python<'py>,
        columns: Option<Vec<String>>,
    ) -> PyResult<Vec<Capsules<'py>>> {
        let batches = py
            .detach(|| {
                let cols = FileColumns::of_opt(columns.as_deref())?;
                files_batch::files_batches(&self.inner, cols)
            })
            .py_err()?;
        batches_to_capsules(py, batches)
    }

    /// OPTIMIZE's bins (indices into `files()`) among the files at `indices` (all when None).
    #[pyo3(signature = (indices, target))]
    fn compaction_bins(
        &self,
        py: Python<'_>,
        indices: Option<Vec<usize>>,
        target: i64,
    ) -> PyResult<Vec<Vec<usize>>> {
        py.detach(|| delta_occ_core::plan_bins(&self.inner, indices.as_deref(), target))
            .py_err()
    }

    /// The typed partition values of the live files at `indices` (all when None).
    #[pyo3(signature = (indices=None))]
    fn partition_values<'py>(
        &self,
        py: Python<'py>,
        indices: Option<Vec<usize>>,
    ) -> PyResult<Capsules<'py>> {
        let batch = py
            .detach(|| {
                let files = self.inner.files_at(indices.as_deref())?;
                files_batch::partition_batch_of(&self.inner, &files)
            })
            .py_err()?;
        batch_to_capsules(py, batch)
    }

    /// Typed partition values of actions that are not live files (a commit's cdc files): one
    /// row per entry of `rows`, each the action's `partitionValues` as the log has them.
    fn typed_partition_values<'py>(
        &self,
        py: Python<'py>,
        rows: Vec<Vec<(String, Option<String>)>>,
    ) -> PyResult<Capsules<'py>> {
        let batch = py
            .detach(|| files_batch::partition_batch_of_raw(&self.inner, &rows))
            .py_err()?;
        batch_to_capsules(py, batch)
    }

    /// The scan plan of live files for an engine that reads them itself (see `files_batch::scan_plan`).
    fn scan_plan<'py>(&self, py: Python<'py>, paths: Vec<String>) -> PyResult<Capsules<'py>> {
        let batch = py
            .detach(|| files_batch::scan_plan(&self.inner, &paths))
            .py_err()?;
        batch_to_capsules(py, batch)
    }

    /// Deleted positions of many files in one batch: `file` (index into `paths`), `row`.
    fn dv_positions<'py>(&self, py: Python<'py>, paths: Vec<String>) -> PyResult<Capsules<'py>> {
        let batch = py
            .detach(|| files_batch::dv_positions(&self.inner, &paths))
            .py_err()?;
        batch_to_capsules(py, batch)
    }

    /// DVs of `paths` as dense bitmaps (`file`, `words`), or None above `max_words` words.
    fn dv_bitmaps<'py>(
        &self,
        py: Python<'py>,
        paths: Vec<String>,
        max_words: u64,
    ) -> PyResult<Option<Capsules<'py>>> {
        let batch = py
            .detach(|| files_batch::dv_bitmaps(&self.inner, &paths, max_words))
            .py_err()?;
        batch.map(|b| batch_to_capsules(py, b)).transpose()
    }

    /// `[(absolute data path, log path, has_dv)]` of the live files at `indices` (all when None),
    /// in that order.
    #[pyo3(signature = (indices=None))]
    fn data_files(&self, indices: Option<Vec<usize>>) -> PyResult<Vec<(String, String, bool)>> {
        self.inner
            .files_at(indices.as_deref())
            .py_err()?
            .into_iter()
            .map(|f| {
                let p = self.inner.data_path(f).py_err()?;
                Ok((
                    p.to_string(),
                    f.path.to_string(),
                    f.deletion_vector.is_some(),
                ))
            })
            .collect()
    }

    /// Deleted row positions of a live file as little-endian u64 bytes.
    fn deleted_rows<'py>(&self, py: Python<'py>, path: String) -> PyResult<Bound<'py, PyBytes>> {
        let positions = py
            .detach(|| self.inner.deleted_rows(&path).map(|b| b.to_vec()))
            .py_err()?;
        Ok(PyBytes::new(py, &le_bytes(&positions)))
    }

    /// Packed validity bits (LSB first) of `num_rows` rows: 1 = row kept, 0 = deleted by the DV.
    /// A DV that deletes a row beyond `num_rows` is a DeletionVectorError.
    fn keep_mask<'py>(
        &self,
        py: Python<'py>,
        path: String,
        num_rows: u64,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let mask = py
            .detach(|| -> delta_occ_core::Result<Vec<u8>> {
                let deleted = self.inner.deleted_rows(&path)?;
                keep_bits(&path, self.inner.version(), &deleted, num_rows)
            })
            .py_err()?;
        Ok(PyBytes::new(py, &mask))
    }

    /// The deletion vector of a live file, read now (for a reader that fetches it while it
    /// reads the file's data); an empty one for a file without.
    fn deletion_vector(&self, py: Python<'_>, path: String) -> PyResult<DeletionVector> {
        let deleted = py.detach(|| self.inner.deleted_rows(&path)).py_err()?;
        Ok(DeletionVector::new(path, self.inner.version(), deleted))
    }

    /// `predicate` compiled for skipping the row groups of this snapshot's files whose footer
    /// statistics rule it out (`StorageHandle.read_parquet_columns(filter=)`).
    fn row_group_filter(
        &self,
        py: Python<'_>,
        predicate: String,
    ) -> PyResult<crate::row_group_filter::RowGroupFilter> {
        py.detach(|| self.inner.parse_predicate(&predicate))
            .py_err()
            .map(|predicate| crate::row_group_filter::RowGroupFilter { predicate })
    }

    /// File skipping for `to_pyarrow(where=)`: the indices (in `files()` order) of files that may
    /// hold matching rows, and the resolved expression as JSON text.
    fn prune(&self, py: Python<'_>, predicate: String) -> PyResult<(Vec<usize>, String)> {
        py.detach(|| {
            let p = self.inner.parse_predicate(&predicate)?;
            let hits = delta_occ_core::select_files(&p, self.inner.files());
            Ok((hits, p.to_json().to_string()))
        })
        .py_err()
    }

    fn app_transactions(&self) -> BTreeMap<String, i64> {
        self.inner
            .state
            .txns
            .iter()
            .map(|(k, t)| (k.clone(), t.version))
            .collect()
    }

    fn domain_metadata(&self) -> BTreeMap<String, String> {
        self.inner
            .state
            .domains
            .iter()
            .map(|(k, d)| (k.clone(), d.configuration.clone()))
            .collect()
    }

    /// Every feature the table's protocol supports, sorted (legacy versions' implied ones too).
    #[getter]
    fn table_features(&self) -> Vec<String> {
        delta_occ_core::supported_features(self.inner.protocol())
    }

    /// When this version was committed (epoch ms; `delta_occ_core::commit_timestamp`), or None.
    fn commit_timestamp(&self, py: Python<'_>) -> PyResult<Option<i64>> {
        py.detach(|| delta_occ_core::commit_timestamp(&self.inner))
            .py_err()
    }

    /// Write this version's checkpoint and point `_last_checkpoint` at it.
    fn create_checkpoint(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| delta_occ_core::create_checkpoint(&self.inner))
            .py_err()
    }

    /// VACUUM this snapshot's table (`delta_occ_core::vacuum`): a dict with the files deleted (or
    /// to delete, `dry_run`) as `[(path relative to the root, size)]` and the counts kept.
    /// `now_ms`: the instant the retention window ends (default: now).
    #[pyo3(signature = (retention_ms=None, enforce_retention=true, dry_run=false, now_ms=None))]
    fn vacuum<'py>(
        &self,
        py: Python<'py>,
        retention_ms: Option<i64>,
        enforce_retention: bool,
        dry_run: bool,
        now_ms: Option<i64>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let now = now_ms.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as i64)
        });
        let r = py
            .detach(|| {
                delta_occ_core::vacuum(&self.inner, retention_ms, enforce_retention, dry_run, now)
            })
            .py_err()?;
        let d = PyDict::new(py);
        d.set_item("version", r.version)?;
        d.set_item("retention_ms", r.retention_ms)?;
        d.set_item("cutoff_ms", r.cutoff_ms)?;
        d.set_item("bytes", r.bytes())?;
        d.set_item(
            "files",
            r.files
                .iter()
                .map(|e| (e.name.clone(), e.size))
                .collect::<Vec<_>>(),
        )?;
        d.set_item("kept_referenced", r.kept_referenced)?;
        d.set_item("kept_recent", r.kept_recent)?;
        d.set_item("dry_run", r.dry_run)?;
        Ok(d)
    }

    /// Log cleanup of this snapshot's table (`delta_occ_core::cleanup_log`, what
    /// a commit runs after each checkpoint): a dict with `boundary` (the oldest version kept
    /// reconstructable, None when nothing expired), `deleted`, `sidecars_deleted` and
    /// `probes_deleted`. `now_ms`: the instant ages are judged at (default: now).
    #[pyo3(signature = (now_ms=None))]
    fn cleanup_log<'py>(
        &self,
        py: Python<'py>,
        now_ms: Option<i64>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let now = now_ms.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as i64)
        });
        let r = py
            .detach(|| delta_occ_core::cleanup_log(&self.inner, now))
            .py_err()?;
        let d = PyDict::new(py);
        d.set_item("boundary", r.boundary)?;
        d.set_item("deleted", r.deleted)?;
        d.set_item("sidecars_deleted", r.sidecars_deleted)?;
        d.set_item("probes_deleted", r.probes_deleted)?;
        Ok(d)
    }

    /// `[(log path, dv unique id or None, deletion timestamp or None)]`.
    fn tombstones(&self) -> Vec<(String, Option<String>, Option<i64>)> {
        self.inner
            .state
            .tombstones
            .values()
            .map(|r| (r.path.to_string(), r.dv_unique_id(), r.deletion_timestamp))
            .collect()
    }
}

pub fn le_bytes(v: &[u64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(v.len() * 8);
    for x in v {
        out.extend_from_slice(&x.to_le_bytes());
    }
    out
}
