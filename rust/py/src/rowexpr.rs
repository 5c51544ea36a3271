//! `RowExpr`: the core's row evaluator, on batches handed over through the Arrow PyCapsule
//! interface (`__arrow_c_schema__`, `__arrow_c_array__`).

use arrow_array::{Array, RecordBatch, StructArray};
use arrow_schema::ffi::FFI_ArrowSchema;
use arrow_schema::Schema;
use delta_occ_core::rowexpr::{RowExpr, Scope};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyTuple};

use crate::arrow::{array_from_capsules, array_to_capsules};
use crate::errors::IntoPy;

type Capsules<'py> = (Bound<'py, PyCapsule>, Bound<'py, PyCapsule>);

/// A SQL expression compiled against a schema; evaluated on record batches.
#[pyclass(name = "RowExpr", module = "delta_occ._core", frozen)]
pub struct PyRowExpr {
    inner: RowExpr,
}

#[pymethods]
impl PyRowExpr {
    #[new]
    #[pyo3(signature = (text, schema, scopes=None, time_zone=None))]
    fn new(
        text: &str,
        schema: &Bound<'_, PyAny>,
        scopes: Option<Vec<(Option<String>, String, bool)>>,
        time_zone: Option<&str>,
    ) -> PyResult<Self> {
        let schema = import_schema(schema)?;
        let zone = time_zone.unwrap_or(delta_occ_core::rowexpr::zone::DEFAULT);
        RowExpr::compile_in(text, &schema, &scopes_of(scopes), zone)
            .py_err()
            .map(|inner| PyRowExpr { inner })
    }

    /// The SQL session time zone the text was compiled in.
    #[getter]
    fn time_zone(&self) -> &str {
        self.inner.time_zone()
    }

    #[getter]
    fn text(&self) -> &str {
        self.inner.text()
    }

    /// Names (as in the compile schema) of the columns the expression reads.
    #[getter]
    fn columns(&self) -> Vec<String> {
        self.inner.columns().to_vec()
    }

    /// The compiled tree as JSON (format: rust/core/src/rowexpr/export.rs), for engines that
    /// evaluate it themselves and must select the same rows.
    #[getter]
    fn tree_json(&self) -> String {
        self.inner.tree_json()
    }

    /// The value on every row of `batch` (an object with `__arrow_c_array__`, a record batch),
    /// as array capsules.
    fn evaluate<'py>(&self, py: Python<'py>, batch: &Bound<'py, PyAny>) -> PyResult<Capsules<'py>> {
        let batch = import_batch(batch)?;
        let out = py.detach(|| self.inner.evaluate(&batch)).py_err()?;
        array_to_capsules(py, &out)
    }

    /// TRUE rows as a boolean array without nulls (NULL counts as not selected).
    fn mask<'py>(&self, py: Python<'py>, batch: &Bound<'py, PyAny>) -> PyResult<Capsules<'py>> {
        let batch = import_batch(batch)?;
        let out = py.detach(|| self.inner.mask(&batch)).py_err()?;
        array_to_capsules(py, &out)
    }
}

/// `text` with current_date() / current_timestamp() replaced by the literals of `now_micros`
/// (µs since the epoch; the date in `time_zone`), unchanged when it has none.
#[pyfunction]
#[pyo3(signature = (text, now_micros, time_zone=None))]
pub fn resolve_now(text: &str, now_micros: i64, time_zone: Option<&str>) -> PyResult<String> {
    let zone = time_zone.unwrap_or(delta_occ_core::rowexpr::zone::DEFAULT);
    delta_occ_core::rowexpr::resolve_now(text, now_micros, zone).py_err()
}

/// `text` with the columns qualified by `alias` named without it (a MERGE clause's target-side
/// condition as a predicate over the table's columns).
#[pyfunction]
pub fn unqualified(text: &str, alias: &str) -> PyResult<String> {
    delta_occ_core::rowexpr::unqualified(text, alias).py_err()
}

/// The top-level AND conjuncts of a SQL condition, as SQL texts.
#[pyfunction]
pub fn conjuncts(text: &str) -> PyResult<Vec<String>> {
    delta_occ_core::rowexpr::conjuncts(text).py_err()
}

/// A condition's columns found through `scopes` like `RowExpr`, not type-checked: (schema names
/// in first-use order, the pair when the text is exactly `column = column`).
#[pyfunction]
#[pyo3(signature = (text, schema, scopes=None))]
#[allow(clippy::type_complexity)]
pub fn referenced_columns(
    text: &str,
    schema: &Bound<'_, PyAny>,
    scopes: Option<Vec<(Option<String>, String, bool)>>,
) -> PyResult<(Vec<String>, Option<(String, String)>)> {
    let schema = import_schema(schema)?;
    let r =
        delta_occ_core::rowexpr::referenced_columns(text, &schema, &scopes_of(scopes)).py_err()?;
    Ok((r.columns, r.equated))
}

fn scopes_of(scopes: Option<Vec<(Option<String>, String, bool)>>) -> Vec<Scope> {
    scopes
        .unwrap_or_default()
        .into_iter()
        .map(|(alias, prefix, readable)| Scope {
            alias,
            prefix,
            readable,
        })
        .collect()
}

fn import_schema(obj: &Bound<'_, PyAny>) -> PyResult<Schema> {
    let capsule = obj.call_method0("__arrow_c_schema__")?;
    let capsule = capsule.cast::<PyCapsule>()?;
    let ptr = capsule
        .pointer_checked(Some(c"arrow_schema"))?
        .cast::<FFI_ArrowSchema>();
    // SAFETY: the capsule name guarantees the pointee type (Arrow PyCapsule interface); the
    // schema is only read, its owner (the capsule) outlives this call.
    let ffi = unsafe { ptr.as_ref() };
    Schema::try_from(ffi)
        .map_err(|e| PyValueError::new_err(format!("importing an Arrow schema: {e}")))
}

pub(crate) fn import_batch(obj: &Bound<'_, PyAny>) -> PyResult<RecordBatch> {
    let pair = obj.call_method0("__arrow_c_array__")?;
    let pair = pair.cast::<PyTuple>()?;
    let schema = pair.get_item(0)?;
    let array = pair.get_item(1)?;
    let array = array_from_capsules(schema.cast::<PyCapsule>()?, array.cast::<PyCapsule>()?)?;
    let s = array
        .as_any()
        .downcast_ref::<StructArray>()
        .ok_or_else(|| PyValueError::new_err("expected a record batch (a struct array)"))?;
    Ok(RecordBatch::from(s.clone()))
}
