//! Hand Arrow data to pyarrow through the C data interface (PyCapsules named per the Arrow
//! PyCapsule interface); pyarrow imports them with `RecordBatch._import_from_c_capsule`.

use arrow_array::{Array, RecordBatch, StructArray};
use arrow_data::ffi::FFI_ArrowArray;
use arrow_schema::ffi::FFI_ArrowSchema;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

pub fn batch_to_capsules<'py>(py: Python<'py>, batch: RecordBatch) -> PyResult<(Bound<'py, PyCapsule>, Bound<'py, PyCapsule>)> {
    let array = StructArray::from(batch);
    let data = array.to_data();
    let schema = FFI_ArrowSchema::try_from(data.data_type()).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let array = FFI_ArrowArray::new(&data);
    let schema = PyCapsule::new_with_value(py, schema, c"arrow_schema")?;
    let array = PyCapsule::new_with_value(py, array, c"arrow_array")?;
    Ok((schema, array))
}

/// [`batch_to_capsules`] for each batch; pyarrow joins them with `Table.from_batches`.
pub fn batches_to_capsules<'py>(py: Python<'py>, batches: Vec<RecordBatch>) -> PyResult<Vec<(Bound<'py, PyCapsule>, Bound<'py, PyCapsule>)>> {
    batches.into_iter().map(|b| batch_to_capsules(py, b)).collect()
}
