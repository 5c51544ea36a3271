//! Hand Arrow data to pyarrow through the C data interface (PyCapsules named per the Arrow
//! PyCapsule interface); Python wraps each pair as an `__arrow_c_array__` object for `pa.record_batch`.

use arrow_array::{Array, RecordBatch, StructArray};
use arrow_data::ffi::FFI_ArrowArray;
use arrow_schema::ffi::FFI_ArrowSchema;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

pub fn batch_to_capsules<'py>(
    py: Python<'py>,
    batch: RecordBatch,
) -> PyResult<(Bound<'py, PyCapsule>, Bound<'py, PyCapsule>)> {
    array_to_capsules(py, &StructArray::from(batch))
}

/// One array as (schema, array) capsules; pyarrow takes them through `__arrow_c_array__`.
pub fn array_to_capsules<'py>(
    py: Python<'py>,
    array: &dyn Array,
) -> PyResult<(Bound<'py, PyCapsule>, Bound<'py, PyCapsule>)> {
    let data = array.to_data();
    let schema = FFI_ArrowSchema::try_from(data.data_type())
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let array = FFI_ArrowArray::new(&data);
    let schema = PyCapsule::new_with_value(py, schema, c"arrow_schema")?;
    let array = PyCapsule::new_with_value(py, array, c"arrow_array")?;
    Ok((schema, array))
}

/// [`batch_to_capsules`] for each batch; pyarrow joins them with `Table.from_batches`.
pub fn batches_to_capsules<'py>(
    py: Python<'py>,
    batches: Vec<RecordBatch>,
) -> PyResult<Vec<(Bound<'py, PyCapsule>, Bound<'py, PyCapsule>)>> {
    batches
        .into_iter()
        .map(|b| batch_to_capsules(py, b))
        .collect()
}

/// Import an array handed over through the Arrow PyCapsule interface (`__arrow_c_array__`)
/// without copying its buffers. The array capsule's release callback moves into the result.
pub fn array_from_capsules(
    schema: &Bound<'_, PyCapsule>,
    array: &Bound<'_, PyCapsule>,
) -> PyResult<arrow_array::ArrayRef> {
    let schema_ptr = schema
        .pointer_checked(Some(c"arrow_schema"))?
        .cast::<FFI_ArrowSchema>();
    let array_ptr = array
        .pointer_checked(Some(c"arrow_array"))?
        .cast::<FFI_ArrowArray>();
    // SAFETY: the capsule names guarantee the pointee types (Arrow PyCapsule interface);
    // `from_raw` takes the array over and marks the capsule's copy released.
    let data = unsafe {
        let array = FFI_ArrowArray::from_raw(array_ptr.as_ptr());
        arrow_array::ffi::from_ffi(array, schema_ptr.as_ref())
    }
    .map_err(|e| PyValueError::new_err(format!("importing an Arrow array: {e}")))?;
    Ok(arrow_array::make_array(data))
}
