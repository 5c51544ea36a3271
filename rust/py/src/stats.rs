//! Delta per-file statistics (`add.stats`): the core's rules, from a parquet footer or from rows.

use arrow_array::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
use arrow_array::RecordBatch;
use delta_occ_core::Error;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::errors::IntoPy;

/// The rows of a pyarrow table (anything with `__arrow_c_stream__`), without copying them.
fn batches(table: &Bound<'_, PyAny>) -> PyResult<Vec<RecordBatch>> {
    let capsule = table.call_method0("__arrow_c_stream__")?;
    let capsule = capsule.cast::<PyCapsule>()?;
    let ptr = capsule
        .pointer_checked(Some(c"arrow_array_stream"))?
        .cast::<FFI_ArrowArrayStream>();
    // SAFETY: the capsule name guarantees the pointee type (Arrow PyCapsule interface);
    // `from_raw` moves the stream out and marks the capsule's copy released.
    let reader = unsafe { RecordBatchStreamReader::from_raw(ptr.as_ptr()) }
        .map_err(|e| Error::invalid(format!("importing Arrow data: {e}")))
        .py_err()?;
    reader
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Error::invalid(format!("importing Arrow data: {e}")))
        .py_err()
}

/// Delta stats (JSON text) and the row count of a parquet file (a local path), from its footer
/// alone. `StorageHandle.footer_stats` reads one in any storage.
#[pyfunction]
pub fn parquet_footer_stats(py: Python<'_>, path: String) -> PyResult<(String, i64)> {
    py.detach(|| {
        let at = delta_occ_core::Location::parse(&path, &Default::default())?;
        delta_occ_core::footer_stats(&at)
    })
    .py_err()
}

/// `parquet_footer_stats` of a whole parquet file in memory.
#[pyfunction]
pub fn parquet_footer_stats_of(py: Python<'_>, data: &[u8]) -> PyResult<(String, i64)> {
    let bytes = data.to_vec();
    py.detach(|| delta_occ_core::footer_stats_of_bytes(bytes))
        .py_err()
}

/// Delta stats (JSON text) of the rows of a pyarrow table, computed from the rows.
#[pyfunction]
pub fn rows_stats(py: Python<'_>, table: &Bound<'_, PyAny>) -> PyResult<String> {
    let batches = batches(table)?;
    Ok(py.detach(|| delta_occ_core::rows_stats(&batches)))
}

/// Delta stats (JSON text) of the parquet file `written` (its bytes) just encoded from the rows
/// of `table`: the footer's bounds, corrected by what only the rows tell.
#[pyfunction]
pub fn written_file_stats(
    py: Python<'_>,
    written: &[u8],
    table: &Bound<'_, PyAny>,
) -> PyResult<String> {
    let batches = batches(table)?;
    let bytes = written.to_vec();
    py.detach(|| delta_occ_core::written_file_stats(bytes, &batches))
        .py_err()
}
