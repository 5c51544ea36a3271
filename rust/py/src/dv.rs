//! Deletion-vector functions: read a descriptor's bitmap, write new DV files, (de)serialize.

use std::collections::BTreeMap;

use delta_occ_core::dv::{self, DeletionBitmap, DeletionVectorDescriptor};
use delta_occ_core::Error;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::{to_py, IntoPy};
use crate::snapshot::le_bytes;

fn descriptor(json: &str) -> PyResult<DeletionVectorDescriptor> {
    serde_json::from_str(json).map_err(|e| {
        to_py(Error::invalid(format!(
            "deletion vector descriptor JSON: {e}"
        )))
    })
}

fn bitmap(positions: Vec<u64>) -> PyResult<DeletionBitmap> {
    DeletionBitmap::from_positions(positions).map_err(|m| to_py(Error::invalid(m)))
}

/// Positions (LE u64 bytes) deleted by the DV a descriptor (JSON text) points at, in the table
/// at `table_root` (a local path or an object-store URI with `storage_options`).
#[pyfunction]
#[pyo3(signature = (table_root, descriptor_json, storage_options=None))]
pub fn read_deletion_vector<'py>(
    py: Python<'py>,
    table_root: String,
    descriptor_json: String,
    storage_options: Option<BTreeMap<String, String>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let d = descriptor(&descriptor_json)?;
    let v = py
        .detach(|| {
            let options = storage_options.unwrap_or_default();
            let root = delta_occ_core::Location::parse(&table_root, &options)?;
            dv::file::read(&root, &d).map(|b| b.to_vec())
        })
        .py_err()?;
    Ok(PyBytes::new(py, &le_bytes(&v)))
}

/// Write each list of positions as a DV into one new DV file; returns descriptor JSON texts.
#[pyfunction]
#[pyo3(signature = (table_root, bitmaps, prefix=String::new(), storage_options=None))]
pub fn write_deletion_vectors(
    py: Python<'_>,
    table_root: String,
    bitmaps: Vec<Vec<u64>>,
    prefix: String,
    storage_options: Option<BTreeMap<String, String>>,
) -> PyResult<Vec<String>> {
    let maps = bitmaps
        .into_iter()
        .map(bitmap)
        .collect::<PyResult<Vec<_>>>()?;
    let refs: Vec<&DeletionBitmap> = maps.iter().collect();
    let ds = py
        .detach(|| {
            let options = storage_options.unwrap_or_default();
            let root = delta_occ_core::Location::parse(&table_root, &options)?;
            dv::file::write(&root, &prefix, &refs)
        })
        .py_err()?;
    Ok(ds.iter().map(|d| d.to_json().to_string()).collect())
}

/// Serialize positions as Delta's portable RoaringBitmapArray (with magic number).
#[pyfunction]
pub fn serialize_bitmap<'py>(
    py: Python<'py>,
    positions: Vec<u64>,
) -> PyResult<Bound<'py, PyBytes>> {
    Ok(PyBytes::new(py, &bitmap(positions)?.serialize()))
}

/// Parse RoaringBitmapArray bytes; errors are DeletionVectorError.
#[pyfunction]
pub fn deserialize_bitmap<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
    let b = DeletionBitmap::deserialize(data).map_err(|m| to_py(Error::dv("<bytes>", m)))?;
    Ok(PyBytes::new(py, &le_bytes(&b.to_vec())))
}

/// Z85-encode (inline DVs, UUIDs).
#[pyfunction]
pub fn z85_encode(data: &[u8]) -> String {
    dv::z85::encode(data)
}

#[pyfunction]
pub fn z85_decode<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyBytes>> {
    let b = dv::z85::decode(text).map_err(|m| to_py(Error::invalid(m)))?;
    Ok(PyBytes::new(py, &b))
}
