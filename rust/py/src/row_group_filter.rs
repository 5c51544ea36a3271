//! `_core.RowGroupFilter`: a `where` compiled against a snapshot, by which a read skips the
//! parquet row groups whose footer statistics rule it out (`StorageHandle.read_parquet_columns`).

use pyo3::prelude::*;

#[pyclass(frozen, module = "delta_occ._core")]
pub struct RowGroupFilter {
    pub(crate) predicate: delta_occ_core::Predicate,
}

#[pymethods]
impl RowGroupFilter {
    /// Whether a row group with these Delta stats (JSON text) may hold a matching row.
    fn may_match(&self, stats: &str) -> bool {
        self.predicate.stats_may_match(stats)
    }

    fn __repr__(&self) -> String {
        format!(
            "RowGroupFilter({:?})",
            self.predicate.text.as_deref().unwrap_or("")
        )
    }
}
