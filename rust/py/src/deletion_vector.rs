//! `_core.DeletionVector`: the rows one live file's deletion vector deletes, read once
//! (`SnapshotHandle.deletion_vector`), so that a reader can fetch it while it reads the file's
//! data and build the file's keep mask from it after.

use delta_occ_core::dv::DeletionBitmap;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::IntoPy;

#[pyclass(frozen, module = "delta_occ._core")]
pub struct DeletionVector {
    path: String,
    version: i64,
    deleted: DeletionBitmap,
}

impl DeletionVector {
    pub fn new(path: String, version: i64, deleted: DeletionBitmap) -> Self {
        DeletionVector {
            path,
            version,
            deleted,
        }
    }
}

/// [`DeletionBitmap::keep_bits`] of the data file at `path`, its error a DeletionVectorError
/// naming the file and the snapshot's version.
pub fn keep_bits(
    path: &str,
    version: i64,
    deleted: &DeletionBitmap,
    num_rows: u64,
) -> delta_occ_core::Result<Vec<u8>> {
    deleted.keep_bits(num_rows).map_err(|m| {
        delta_occ_core::Error::dv(path.to_string(), format!("{m} (version {version})"))
    })
}

#[pymethods]
impl DeletionVector {
    /// The data file's log path.
    #[getter]
    fn path(&self) -> &str {
        &self.path
    }

    /// `SnapshotHandle.keep_mask` of this file, without reading its DV again.
    fn keep_mask<'py>(&self, py: Python<'py>, num_rows: u64) -> PyResult<Bound<'py, PyBytes>> {
        let bits = py
            .detach(|| keep_bits(&self.path, self.version, &self.deleted, num_rows))
            .py_err()?;
        Ok(PyBytes::new(py, &bits))
    }
}
