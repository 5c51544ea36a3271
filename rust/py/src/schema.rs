//! The table schema as Arrow schemas and the Delta <-> Arrow type map: the core's
//! (`schema_arrow`), handed to pyarrow through the Arrow PyCapsule interface.

use arrow_schema::ffi::FFI_ArrowSchema;
use arrow_schema::{DataType, Schema};
use delta_occ_core::{ColumnMappingMode, Error, Names, StructType};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::errors::IntoPy;

fn parse(schema_json: &str) -> PyResult<StructType> {
    StructType::parse(schema_json)
        .map_err(Error::invalid)
        .py_err()
}

fn mode(mode: &str) -> PyResult<ColumnMappingMode> {
    ColumnMappingMode::from_config(Some(mode)).py_err()
}

fn schema_capsule<'py>(py: Python<'py>, schema: &Schema) -> PyResult<Bound<'py, PyCapsule>> {
    let ffi = FFI_ArrowSchema::try_from(schema)
        .map_err(|e| Error::invalid(format!("exporting an Arrow schema: {e}")))
        .py_err()?;
    PyCapsule::new_with_value(py, ffi, c"arrow_schema")
}

/// What an `arrow_schema` capsule (`__arrow_c_schema__` of a pyarrow type, field or schema)
/// describes, as `T` (a DataType, Field or Schema).
fn import<T>(capsule: &Bound<'_, PyCapsule>) -> PyResult<T>
where
    T: for<'a> TryFrom<&'a FFI_ArrowSchema, Error = arrow_schema::ArrowError>,
{
    let ptr = capsule
        .pointer_checked(Some(c"arrow_schema"))?
        .cast::<FFI_ArrowSchema>();
    // SAFETY: the capsule name guarantees the pointee type (Arrow PyCapsule interface); the
    // schema is only borrowed, the capsule keeps ownership.
    T::try_from(unsafe { ptr.as_ref() })
        .map_err(|e| Error::invalid(format!("an Arrow type delta-occ cannot read: {e}")))
        .py_err()
}

/// The table schema (Delta schema JSON) as an Arrow schema with logical names.
#[pyfunction]
pub fn logical_arrow_schema<'py>(
    py: Python<'py>,
    schema_json: &str,
) -> PyResult<Bound<'py, PyCapsule>> {
    let s = delta_occ_core::arrow_schema(&parse(schema_json)?, Names::Logical).py_err()?;
    schema_capsule(py, &s)
}

/// The table schema as the data files hold it under column mapping `mode` ("none", "name",
/// "id"): physical names at every level, the parquet field id (`PARQUET:field_id`) in id mode.
#[pyfunction]
pub fn physical_arrow_schema<'py>(
    py: Python<'py>,
    schema_json: &str,
    mode: &str,
) -> PyResult<Bound<'py, PyCapsule>> {
    let names = Names::Physical(self::mode(mode)?);
    let s = delta_occ_core::arrow_schema(&parse(schema_json)?, names).py_err()?;
    schema_capsule(py, &s)
}

/// The physical schema in Spark's JSON form (field ids as `parquet.field.id`), for Spark writers.
#[pyfunction]
pub fn spark_physical_schema_json(schema_json: &str, mode: &str) -> PyResult<String> {
    Ok(
        delta_occ_core::spark_physical_schema_json(&parse(schema_json)?, self::mode(mode)?)
            .to_string(),
    )
}

/// The Delta schema JSON of an Arrow schema (an `arrow_schema` capsule).
#[pyfunction]
pub fn delta_schema_json(schema: &Bound<'_, PyCapsule>) -> PyResult<String> {
    let s: Schema = import(schema)?;
    delta_occ_core::delta_schema(&s)
        .map(|v| v.to_string())
        .py_err()
}

/// The Delta type (JSON) of an Arrow type (an `arrow_schema` capsule).
#[pyfunction]
pub fn delta_type_json(data_type: &Bound<'_, PyCapsule>) -> PyResult<String> {
    let t: DataType = import(data_type)?;
    delta_occ_core::delta_type(&t)
        .map(|v| v.to_string())
        .py_err()
}

/// The Delta type (JSON) Arrow data of this type counts as when written: unsigned integers as
/// the smallest Delta integer holding them, NULLs as `void`; None where Delta has none.
#[pyfunction]
pub fn delta_type_of_data(data_type: &Bound<'_, PyCapsule>) -> Option<String> {
    let t: DataType = import(data_type).ok()?;
    delta_occ_core::delta_type_of_data(&t).map(|v| v.to_string())
}
