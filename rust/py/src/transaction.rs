//! `_core.TransactionHandle`: one optimistic transaction (read set, staged actions, commit).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use delta_occ_core::files_batch::{self, FileColumns};
use delta_occ_core::{
    CheckRecord, CommitOptions, CommitResult, Interrupt, Protocol, Transaction, TxnState,
};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict, PyList};

use crate::arrow::batches_to_capsules;
use crate::errors::IntoPy;
use crate::snapshot::SnapshotHandle;

#[pyclass(frozen, module = "delta_occ._core")]
pub struct TransactionHandle {
    inner: Mutex<Transaction>,
}

impl TransactionHandle {
    pub fn new(txn: Transaction) -> Self {
        TransactionHandle {
            inner: Mutex::new(txn),
        }
    }

    pub(crate) fn txn(&self) -> MutexGuard<'_, Transaction> {
        // Transaction methods validate before mutating, so a poisoned lock holds a consistent value.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

type Capsules<'py> = (Bound<'py, PyCapsule>, Bound<'py, PyCapsule>);

#[pymethods]
impl TransactionHandle {
    #[getter]
    fn read_version(&self) -> i64 {
        self.txn().read_version
    }

    /// The table's storage (for the engines' data files).
    #[getter]
    fn storage(&self) -> crate::storage::StorageHandle {
        crate::storage::StorageHandle::new(self.txn().root().clone())
    }

    #[getter]
    fn isolation_level(&self) -> &'static str {
        self.txn().isolation_level().as_str()
    }

    #[getter]
    fn row_level(&self) -> bool {
        self.txn().options().row_level
    }

    #[getter]
    fn data_skipping(&self) -> bool {
        self.txn().options().data_skipping
    }

    /// "open", "committed" or "aborted".
    #[getter]
    fn state(&self) -> &'static str {
        match self.txn().state() {
            TxnState::Open => "open",
            TxnState::Committed(_) => "committed",
            TxnState::Aborted => "aborted",
        }
    }

    /// The schema JSON this transaction commits: the staged one (`set_schema`), else the read
    /// snapshot's.
    #[getter]
    fn schema_json(&self) -> PyResult<String> {
        Ok(self.txn().current_metadata().py_err()?.schema_string)
    }

    /// The snapshot read; for a transaction that creates the table, the table as its version 0
    /// will define it (version -1, no files: `Transaction::created_snapshot`).
    #[getter]
    fn snapshot(&self) -> PyResult<Option<SnapshotHandle>> {
        let t = self.txn();
        if let Some(snap) = t.snapshot() {
            return Ok(Some(SnapshotHandle::new(snap.clone())));
        }
        Ok(t.created_snapshot()
            .py_err()?
            .map(|s| SnapshotHandle::new(Arc::new(s))))
    }

    /// Record the read and return the matching live files as a `files()` batch.
    #[pyo3(signature = (predicate=None, columns=None))]
    fn scan<'py>(
        &self,
        py: Python<'py>,
        predicate: Option<String>,
        columns: Option<Vec<String>>,
    ) -> PyResult<Vec<Capsules<'py>>> {
        let batches = py
            .detach(|| {
                let cols = FileColumns::of_opt(columns.as_deref())?;
                let mut t = self.txn();
                let hits = t.scan(predicate.as_deref())?;
                let snap = t.snapshot().expect("scan needs a snapshot").clone();
                let files: Vec<_> = hits.iter().map(|&i| &snap.files()[i]).collect();
                files_batch::files_batches_of(&snap, &files, cols)
            })
            .py_err()?;
        batches_to_capsules(py, batches)
    }

    /// Parse and resolve a predicate without recording anything; returns its description
    /// (`partition_only`, `has_data_conjuncts`, `columns`) or raises PredicateError.
    fn explain_predicate<'py>(
        &self,
        py: Python<'py>,
        text: String,
    ) -> PyResult<Bound<'py, PyDict>> {
        let p = self.txn().parse_predicate(&text).py_err()?;
        let d = PyDict::new(py);
        d.set_item(
            "columns",
            p.columns.iter().map(|c| c.name.clone()).collect::<Vec<_>>(),
        )?;
        d.set_item("has_partition_conjuncts", p.partition_expr.is_some())?;
        d.set_item("has_data_conjuncts", p.has_data_conjuncts)?;
        d.set_item("deterministic", p.is_deterministic())?;
        Ok(d)
    }

    /// Record reading exactly these live files, without a predicate.
    fn record_files_read(&self, paths: Vec<String>) -> PyResult<()> {
        self.txn().record_files_read(&paths).py_err()
    }

    fn read_whole_table(&self) -> PyResult<()> {
        self.txn().read_whole_table().py_err()
    }

    fn app_version(&self, app_id: &str) -> PyResult<i64> {
        self.txn().app_version(app_id).py_err()
    }

    #[pyo3(signature = (path, partition_values, size, stats=None, data_change=true, tags=None, modification_time=None))]
    #[allow(clippy::too_many_arguments)]
    fn add_file(
        &self,
        path: &str,
        partition_values: Vec<(String, Option<String>)>,
        size: i64,
        stats: Option<String>,
        data_change: bool,
        tags: Option<BTreeMap<String, Option<String>>>,
        modification_time: Option<i64>,
    ) -> PyResult<()> {
        self.txn()
            .add_file(
                path,
                partition_values,
                size,
                stats,
                data_change,
                tags,
                modification_time,
            )
            .py_err()
    }

    fn add_cdc_file(
        &self,
        path: &str,
        partition_values: Vec<(String, Option<String>)>,
        size: i64,
    ) -> PyResult<()> {
        self.txn()
            .add_cdc_file(path, partition_values, size)
            .py_err()
    }

    #[pyo3(signature = (path, data_change=true))]
    fn remove_file(&self, path: &str, data_change: bool) -> PyResult<()> {
        self.txn().remove_file(path, data_change).py_err()
    }

    fn delete_rows(&self, py: Python<'_>, path: &str, positions: Vec<u64>) -> PyResult<()> {
        py.detach(|| self.txn().delete_rows(path, &positions))
            .py_err()
    }

    /// Stage DV deletes of many files from one Arrow batch (`__arrow_c_array__` of a struct with
    /// `file`: int32 index into `paths`, `row`: int64/uint64 position), without a Python int per
    /// position.
    fn delete_rows_arrow(
        &self,
        py: Python<'_>,
        paths: Vec<String>,
        batch: (Bound<'_, PyCapsule>, Bound<'_, PyCapsule>),
    ) -> PyResult<()> {
        let array = crate::arrow::array_from_capsules(&batch.0, &batch.1)?;
        let per_file = py
            .detach(|| files_batch::positions_per_file(array.as_ref(), paths.len()))
            .py_err()?;
        py.detach(|| {
            let mut t = self.txn();
            for (path, rows) in paths.iter().zip(&per_file) {
                if !rows.is_empty() {
                    t.delete_rows(path, rows)?;
                }
            }
            Ok(())
        })
        .py_err()
    }

    /// Stage DV deletes of one file from runs of bits (`__arrow_c_array__` of a struct with
    /// `first`: the run's first position, `bits`: binary, least-significant bit first), without a
    /// value per row.
    fn delete_row_bits(
        &self,
        py: Python<'_>,
        path: &str,
        runs: (Bound<'_, PyCapsule>, Bound<'_, PyCapsule>),
    ) -> PyResult<()> {
        let array = crate::arrow::array_from_capsules(&runs.0, &runs.1)?;
        py.detach(|| {
            let rows = files_batch::rows_of_bit_runs(array.as_ref())?;
            self.txn().delete_rows_bitmap(path, rows)
        })
        .py_err()
    }

    fn replace_schema(&self, schema_json: &str) -> PyResult<()> {
        self.txn().replace_schema(schema_json).py_err()
    }

    fn rename_column(&self, path: &str, new_name: &str) -> PyResult<()> {
        self.txn().rename_column(path, new_name).py_err()
    }

    fn drop_columns(&self, paths: Vec<String>) -> PyResult<()> {
        self.txn().drop_columns(&paths).py_err()
    }

    fn set_column_comment(&self, path: &str, comment: &str) -> PyResult<()> {
        self.txn().set_column_comment(path, comment).py_err()
    }

    fn set_nullable(&self, path: &str, nullable: bool) -> PyResult<()> {
        self.txn().set_nullable(path, nullable).py_err()
    }

    fn widen_column(&self, path: &str, to_json: &str) -> PyResult<()> {
        self.txn().widen_column(path, to_json).py_err()
    }

    fn add_columns(&self, fields_json: &str) -> PyResult<()> {
        self.txn().add_columns(fields_json).py_err()
    }

    fn set_app_version(&self, app_id: &str, version: i64) -> PyResult<()> {
        self.txn().set_app_version(app_id, version).py_err()
    }

    #[pyo3(signature = (domain, configuration, removed=false))]
    fn set_domain_metadata(
        &self,
        domain: &str,
        configuration: &str,
        removed: bool,
    ) -> PyResult<()> {
        self.txn()
            .set_domain_metadata(domain, configuration, removed)
            .py_err()
    }

    fn set_properties(&self, props: BTreeMap<String, String>) -> PyResult<()> {
        self.txn().set_properties(props).py_err()
    }

    fn unset_properties(&self, keys: Vec<String>) -> PyResult<()> {
        self.txn().unset_properties(&keys).py_err()
    }

    #[pyo3(signature = (schema_json, allow_drop=false))]
    fn set_schema(&self, schema_json: &str, allow_drop: bool) -> PyResult<()> {
        self.txn().set_schema(schema_json, allow_drop).py_err()
    }

    #[pyo3(signature = (min_reader_version, min_writer_version, reader_features=None, writer_features=None))]
    fn set_protocol(
        &self,
        min_reader_version: i32,
        min_writer_version: i32,
        reader_features: Option<Vec<String>>,
        writer_features: Option<Vec<String>>,
    ) -> PyResult<()> {
        self.txn()
            .set_protocol(Protocol {
                min_reader_version,
                min_writer_version,
                reader_features,
                writer_features,
            })
            .py_err()
    }

    /// Stage DROP FEATURE's downgrade of `feature` (FeatureDropPendingError while it cannot be
    /// done yet; `now_ms`: the instant the wait is measured at, default now).
    #[pyo3(signature = (feature, now_ms=None))]
    fn drop_feature(&self, py: Python<'_>, feature: &str, now_ms: Option<i64>) -> PyResult<()> {
        let now = now_ms.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as i64)
        });
        py.detach(|| self.txn().drop_feature(feature, now)).py_err()
    }

    /// Stage ALTER TABLE CLUSTER BY `columns` (empty: CLUSTER BY NONE).
    fn set_clustering(&self, columns: Vec<String>) -> PyResult<()> {
        self.txn().set_clustering(&columns).py_err()
    }

    /// Mark the adds staged from now on as clustered (or no longer).
    fn mark_clustered(&self, clustered: bool) -> PyResult<()> {
        self.txn().mark_clustered(clustered).py_err()
    }

    /// Stage a RESTORE of `target` (an earlier snapshot of this table); returns its operation
    /// metrics.
    fn restore(
        &self,
        py: Python<'_>,
        target: &SnapshotHandle,
    ) -> PyResult<BTreeMap<String, String>> {
        let target = target.inner().clone();
        py.detach(|| delta_occ_core::restore(&mut self.txn(), &target))
            .map(|r| r.metrics())
            .py_err()
    }

    fn set_operation_metrics(&self, metrics: BTreeMap<String, String>) -> PyResult<()> {
        self.txn().set_operation_metrics(metrics).py_err()
    }

    /// Facts for `commitInfo.deltaOcc` (a JSON object) that only the writer knows: host,
    /// process, engine, re-executions (`delta_occ.timeline` draws them).
    fn set_commit_note(&self, note_json: &str) -> PyResult<()> {
        let invalid = |m: String| crate::errors::to_py(delta_occ_core::Error::invalid(m));
        match serde_json::from_str::<serde_json::Value>(note_json) {
            Ok(serde_json::Value::Object(note)) => self.txn().set_commit_note(note).py_err(),
            Ok(other) => Err(invalid(format!(
                "a commit note must be a JSON object, got {other}"
            ))),
            Err(e) => Err(invalid(format!("a commit note must be a JSON object: {e}"))),
        }
    }

    fn num_staged(&self) -> usize {
        self.txn().num_staged()
    }

    #[pyo3(signature = (operation, parameters, max_attempts=None, time_budget=None, row_level_budget=None))]
    fn commit<'py>(
        &self,
        py: Python<'py>,
        operation: String,
        parameters: BTreeMap<String, String>,
        max_attempts: Option<i64>,
        time_budget: Option<f64>,
        row_level_budget: Option<f64>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let invalid = |m: String| crate::errors::to_py(delta_occ_core::Error::invalid(m));
        let mut opts = CommitOptions::default();
        if let Some(n) = max_attempts {
            opts.max_attempts =
                Some(u32::try_from(n).ok().filter(|n| *n >= 1).ok_or_else(|| {
                    invalid(format!(
                        "max_attempts must be an integer from 1 to {}, got {n}",
                        u32::MAX
                    ))
                })?);
        }
        // Budgets beyond about 31 years are refused rather than overflowing a Duration or Instant.
        let seconds = |s: f64, min_ok: bool, name: &str| {
            if min_ok && s.is_finite() && s <= 1e9 {
                Duration::try_from_secs_f64(s).map_err(|e| invalid(format!("{name}: {e}")))
            } else {
                Err(invalid(format!(
                    "{name} must be a number of seconds {}, at most 1e9, got {s}",
                    if name == "time_budget" { "> 0" } else { ">= 0" }
                )))
            }
        };
        if let Some(s) = time_budget {
            opts.time_budget = seconds(s, s > 0.0, "time_budget")?;
        }
        if let Some(s) = row_level_budget {
            opts.row_level_budget = seconds(s, s >= 0.0, "row_level_budget")?;
        }
        // Ctrl-C: the loop asks between attempts; Python's handler runs under the GIL there.
        let raised: Arc<Mutex<Option<PyErr>>> = Arc::default();
        let stash = raised.clone();
        opts.interrupted = Some(Interrupt(Arc::new(move || {
            Python::attach(|py| match py.check_signals() {
                Ok(()) => false,
                Err(e) => {
                    *stash.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                    true
                }
            })
        })));
        let result =
            py.detach(|| delta_occ_core::commit(&mut self.txn(), &operation, &parameters, &opts));
        if let Some(e) = raised.lock().unwrap_or_else(|p| p.into_inner()).take() {
            if !e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) {
                return Err(e); // a handler's own exception, as raised
            }
        }
        result_dict(py, &result.py_err()?)
    }

    /// Check against the commits after the read version without committing; raises the
    /// conflict a commit would hit. Returns counts, timings and the per-winner explanations.
    #[pyo3(signature = (through=None))]
    fn validate<'py>(&self, py: Python<'py>, through: Option<i64>) -> PyResult<Bound<'py, PyDict>> {
        let v = py
            .detach(|| delta_occ_core::validate(&self.txn(), through))
            .py_err()?;
        let d = PyDict::new(py);
        d.set_item("winners", v.winners)?;
        d.set_item("actions", v.actions)?;
        d.set_item("read_seconds", v.read_seconds)?;
        d.set_item("check_seconds", v.check_seconds)?;
        d.set_item("checks", checks_list(py, &v.checks)?)?;
        Ok(d)
    }

    fn abort(&self) {
        self.txn().abort()
    }
}

fn checks_list<'py>(py: Python<'py>, checks: &[CheckRecord]) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for c in checks {
        let cd = PyDict::new(py);
        cd.set_item("version", c.version)?;
        cd.set_item("operation", &c.operation)?;
        cd.set_item("rules", c.rules.iter().map(|r| r.id()).collect::<Vec<_>>())?;
        cd.set_item("outcome", &c.outcome)?;
        out.append(cd)?;
    }
    Ok(out)
}

fn result_dict<'py>(py: Python<'py>, r: &CommitResult) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("version", r.version)?;
    d.set_item("attempts", r.attempts)?;
    d.set_item("isolation_level", r.isolation_level.as_str())?;
    d.set_item("read_version", r.read_version)?;
    d.set_item("rebased_over", r.rebased_over.clone())?;
    d.set_item("rows_resolved", r.rows_resolved)?;
    d.set_item("operation", &r.operation)?;
    d.set_item("metrics", r.metrics.clone())?;
    d.set_item("checks", checks_list(py, &r.checks)?)?;
    d.set_item("txn_id", &r.txn_id)?;
    d.set_item("is_blind_append", r.is_blind_append)?;
    d.set_item("checkpoint_written", r.checkpoint_written)?;
    d.set_item("checkpoint_error", &r.checkpoint_error)?;
    d.set_item("committed", r.committed)?;
    Ok(d)
}
