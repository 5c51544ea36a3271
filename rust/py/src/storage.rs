//! `_core.StorageHandle`: a table's storage (a local directory or an object-store prefix), for the
//! engines' data files: they read, write, list and delete through the core's storage, never
//! through a file system of their own.

use std::collections::BTreeMap;

use delta_occ_core::{Error, Location};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyCapsule};

use crate::errors::{to_py, IntoPy};
use crate::row_group_filter::RowGroupFilter;

#[pyclass(frozen, module = "delta_occ._core")]
pub struct StorageHandle {
    root: Location,
}

impl StorageHandle {
    pub fn new(root: Location) -> Self {
        StorageHandle { root }
    }

    fn at(&self, path: &str) -> PyResult<Location> {
        self.root
            .locate(path)
            .map_err(|m| to_py(Error::invalid(format!("{path:?}: {m}"))))
    }
}

type ArrowCapsules<'py> = (Bound<'py, PyCapsule>, Bound<'py, PyCapsule>);

/// Hand the pages this thread's mimalloc heap holds for memory other threads freed back to the
/// system: an I/O thread as it goes idle, where the response buffers were allocated (a stream
/// from S3 otherwise kept about as much as it read: BENCHMARKS.md), and a reader thread before
/// each file (`force` false there: it runs once per file read, and forcing measured no gain).
pub fn collect_memory_now(force: bool) {
    // SAFETY: mi_collect only releases memory no live allocation uses.
    unsafe { libmimalloc_sys::mi_collect(force) };
}

/// [`collect_memory_now`], forced: the I/O threads' idle hook.
pub fn collect_memory() {
    collect_memory_now(true);
}

/// What `read_parquet_columns` returns: per wanted column its Arrow capsules (None when the file
/// lacks it), the file's row count, and the `(first row, rows)` of the row groups read when some
/// were skipped.
pub type ReadColumns<'py> = (
    Vec<Option<ArrowCapsules<'py>>>,
    u64,
    Option<Vec<(u64, u64)>>,
);

/// The columns `wanted` (physical name, parquet field id) of one data file, of the row groups
/// `filter` may match (all without one); None for the whole file when the core does not decode
/// it (see `read_parquet_columns`).
pub fn read_columns<'py>(
    py: Python<'py>,
    at: &Location,
    wanted: Vec<(String, Option<i64>)>,
    filter: Option<&RowGroupFilter>,
) -> PyResult<Option<ReadColumns<'py>>> {
    let read = py
        .detach(|| {
            // The arrays of this thread's previous reads were freed by the thread that consumed
            // them: mimalloc keeps their pages in this thread's heap until it collects. Collect
            // first, so that a streamed read holds the files in flight, not every file a reader
            // thread ever decoded.
            collect_memory_now(false);
            let wanted: Vec<(&str, Option<i64>)> =
                wanted.iter().map(|(n, id)| (n.as_str(), *id)).collect();
            let keep = filter.map(|f| move |stats: &str| f.predicate.stats_may_match(stats));
            delta_occ_core::read_data_file_columns_where(
                at,
                &wanted,
                keep.as_ref().map(|k| k as delta_occ_core::KeepRowGroup<'_>),
            )
        })
        .py_err()?;
    if read.undecodable.is_some() {
        return Ok(None);
    }
    let arrays = read
        .arrays
        .iter()
        .map(|a| {
            a.as_ref()
                .map(|a| crate::arrow::array_to_capsules(py, a.as_ref()))
                .transpose()
        })
        .collect::<PyResult<_>>()?;
    Ok(Some((arrays, read.rows, read.kept)))
}

#[pymethods]
impl StorageHandle {
    /// The storage at `location` (a local path or an object-store URI) with `storage_options`.
    #[new]
    #[pyo3(signature = (location, storage_options=None))]
    fn open(
        py: Python<'_>,
        location: String,
        storage_options: Option<BTreeMap<String, String>>,
    ) -> PyResult<Self> {
        let options = storage_options.unwrap_or_default();
        py.detach(|| Location::parse(&location, &options))
            .py_err()
            .map(Self::new)
    }

    /// The root's URI (a local path for a local table); never holds a secret.
    #[getter]
    fn uri(&self) -> String {
        self.root.to_string()
    }

    #[getter]
    fn is_local(&self) -> bool {
        self.root.is_local()
    }

    /// The URI of `path` (relative to the root, or absolute in this storage).
    fn uri_of(&self, path: &str) -> PyResult<String> {
        Ok(self.at(path)?.to_string())
    }

    /// The path Spark (Hadoop) reads and writes `path` at: `file://...`, `s3a://...`, ...
    fn hadoop_path(&self, path: &str) -> PyResult<String> {
        Ok(self.at(path)?.hadoop_path())
    }

    /// The local file system path of `path`, or None in an object store.
    fn local_path(&self, path: &str) -> PyResult<Option<String>> {
        Ok(self
            .at(path)?
            .local_path()
            .map(|p| p.to_string_lossy().into_owned()))
    }

    fn read<'py>(&self, py: Python<'py>, path: &str) -> PyResult<Bound<'py, PyBytes>> {
        let at = self.at(path)?;
        let bytes = py
            .detach(|| at.read().map_err(|e| Error::io(&at, e)))
            .py_err()?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Create or replace `path` with `data`, whole: readers never see a partial file.
    fn write(&self, py: Python<'_>, path: &str, data: &[u8]) -> PyResult<()> {
        let at = self.at(path)?;
        py.detach(|| at.put(data).map_err(|e| Error::io(&at, e)))
            .py_err()
    }

    /// Remove `path` (absent already is fine).
    fn delete(&self, py: Python<'_>, path: &str) -> PyResult<()> {
        let at = self.at(path)?;
        py.detach(|| at.delete().map_err(|e| Error::io(&at, e)))
            .py_err()
    }

    fn size(&self, py: Python<'_>, path: &str) -> PyResult<u64> {
        let at = self.at(path)?;
        py.detach(|| at.size().map_err(|e| Error::io(&at, e)))
            .py_err()
    }

    /// `[(name relative to path, size)]` of the files under directory `path`, in name order.
    #[pyo3(signature = (path, recursive=true))]
    fn list(&self, py: Python<'_>, path: &str, recursive: bool) -> PyResult<Vec<(String, u64)>> {
        let at = self.at(path)?;
        let entries = py
            .detach(|| at.list(None, recursive).map_err(|e| Error::io(&at, e)))
            .py_err()?;
        Ok(entries.into_iter().map(|e| (e.name, e.size)).collect())
    }

    /// `read_parquet_columns` of a file in this storage.
    #[allow(clippy::type_complexity)]
    #[pyo3(signature = (path, wanted, filter=None))]
    fn read_parquet_columns<'py>(
        &self,
        py: Python<'py>,
        path: &str,
        wanted: Vec<(String, Option<i64>)>,
        filter: Option<PyRef<'py, RowGroupFilter>>,
    ) -> PyResult<Option<ReadColumns<'py>>> {
        read_columns(py, &self.at(path)?, wanted, filter.as_deref())
    }

    /// Delta stats (JSON text) and the row count of a parquet file in this storage, from its
    /// footer alone (one ranged read).
    fn footer_stats(&self, py: Python<'_>, path: &str) -> PyResult<(String, i64)> {
        let at = self.at(path)?;
        py.detach(|| delta_occ_core::footer_stats(&at)).py_err()
    }

    fn __repr__(&self) -> String {
        format!("StorageHandle({:?})", self.root.to_string())
    }
}
