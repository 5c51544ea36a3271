//! `delta_occ._core`: the thin PyO3 layer over `delta-occ-core`.

use pyo3::prelude::*;

mod arrow;
mod deletion_vector;
mod dv;
mod errors;
mod row_group_filter;
mod rowexpr;
mod schema;
mod snapshot;
mod stats;
mod storage;
mod table;
mod transaction;

use errors::IntoPy;

/// The snapshot, file list and DML buffers are tens to hundreds of MB, allocated and dropped per
/// call; glibc maps and unmaps each one, so every call pays for zeroing fresh pages again (40% of
/// `files()` on 1M files). mimalloc reuses them (as deltalake does with jemalloc). Rust memory
/// only; `local_dynamic_tls` because this library is loaded with dlopen. `no_thp`: mimalloc would
/// ask for transparent huge pages on its regions, and where the kernel grants them on request
/// (`madvise`, the default of many distributions) each fault zeroes (and may first compact) 2 MiB,
/// again after every purge: a fresh process spent more time in the kernel than in the load
/// (BENCHMARKS.md, issue 45).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Canonical spelling of an isolation level name (any letter case); ValueError-compatible error.
#[pyfunction]
fn parse_isolation_level(text: &str) -> PyResult<&'static str> {
    delta_occ_core::IsolationLevel::parse(text)
        .py_err()
        .map(|l| l.as_str())
}

/// Every rule id of the core (conflict, pass and row-level fallback rules), in declaration order.
#[pyfunction]
fn rule_ids() -> Vec<&'static str> {
    delta_occ_core::rule_ids().collect()
}

/// The text `explain` gives for a rule or fallback id (the core owns it); None for an unknown id.
#[pyfunction]
fn rule_description(id: &str) -> Option<&'static str> {
    delta_occ_core::describe_rule(id)
}

/// Parse commit-file bytes; returns the number of actions. For tests and tools.
#[pyfunction]
fn parse_commit(py: Python<'_>, data: &[u8]) -> PyResult<usize> {
    let data = data.to_vec();
    py.detach(move || delta_occ_core::parse_actions(&data, "<bytes>", None))
        .py_err()
        .map(|a| a.len())
}

/// For each wanted table column (physical name, field id), the index of the file field (name,
/// parquet field id) holding it: the resolver the core's row-level checker uses, so the Python
/// reader finds the same columns. One call per file (or struct).
#[pyfunction]
fn file_column_indexes(
    fields: Vec<(String, Option<i64>)>,
    wanted: Vec<(String, Option<i64>)>,
) -> Vec<Option<usize>> {
    let fields: Vec<(&str, Option<i64>)> = fields.iter().map(|(n, id)| (n.as_str(), *id)).collect();
    wanted
        .iter()
        .map(|(physical, id)| delta_occ_core::file_column_index(&fields, physical, *id))
        .collect()
}

/// The columns `wanted` (physical name, parquet field id) of one data file, found as
/// `file_column_indexes` finds them, and the file's row count; None for a missing column. None
/// for the whole file when the core does not decode it (an INT96 timestamp inside a nested
/// column: the caller reads it with pyarrow). The GIL is released while reading.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn read_parquet_columns<'py>(
    py: Python<'py>,
    path: String,
    wanted: Vec<(String, Option<i64>)>,
) -> PyResult<Option<(Vec<Option<ArrowCapsules<'py>>>, u64)>> {
    let at = py
        .detach(|| delta_occ_core::Location::parse(&path, &Default::default()))
        .py_err()?;
    Ok(storage::read_columns(py, &at, wanted, None)?.map(|(arrays, rows, _)| (arrays, rows)))
}

/// The key Spark reports as `_metadata.file_path` for each absolute local path.
#[pyfunction]
fn spark_file_keys(paths: Vec<String>) -> Vec<String> {
    paths
        .iter()
        .map(|p| delta_occ_core::spark_file_key(p))
        .collect()
}

type ArrowCapsules<'py> = (
    Bound<'py, pyo3::types::PyCapsule>,
    Bound<'py, pyo3::types::PyCapsule>,
);

/// Whether values of Delta type `data` may be written to a column of Delta type `table` (types
/// as schema JSON): the same type, NULLs, or a type widening.
#[pyfunction]
fn type_writable_as(data: &str, table: &str) -> PyResult<bool> {
    delta_occ_core::type_writable_as(data, table).py_err()
}

/// The table schema a `schema_mode="merge"` write of data with schema `data` evolves `table`
/// to (schema JSON), or None when the data adds no column.
#[pyfunction]
fn merged_for_write(table: &str, data: &str) -> PyResult<Option<String>> {
    delta_occ_core::merged_for_write(table, data).py_err()
}

/// The canonical partition string (None for null) of every value of an Arrow array.
#[pyfunction]
fn partition_strings(array: ArrowCapsules<'_>) -> PyResult<Vec<Option<String>>> {
    let array = arrow::array_from_capsules(&array.0, &array.1)?;
    delta_occ_core::arrow_values::partition_strings(array.as_ref()).py_err()
}

/// The Z-order of a record batch's rows over all its columns (row indices in curve order, as an
/// Arrow uint32 array).
#[pyfunction]
fn zorder_permutation<'py>(
    py: Python<'py>,
    batch: &Bound<'py, PyAny>,
) -> PyResult<(
    Bound<'py, pyo3::types::PyCapsule>,
    Bound<'py, pyo3::types::PyCapsule>,
)> {
    let batch = rowexpr::import_batch(batch)?;
    let order = py
        .detach(|| delta_occ_core::zorder_permutation(batch.columns()))
        .py_err()?;
    arrow::array_to_capsules(py, &arrow_array::UInt32Array::from(order))
}

/// Every value of an Arrow array as a SQL literal the predicate parser reads back exactly.
#[pyfunction]
fn sql_literals(array: ArrowCapsules<'_>) -> PyResult<Vec<String>> {
    let array = arrow::array_from_capsules(&array.0, &array.1)?;
    (0..array.len())
        .map(|i| {
            delta_occ_core::arrow_values::scalar_at(array.as_ref(), i)
                .map(|s| delta_occ_core::arrow_values::sql_literal(&s))
        })
        .collect::<delta_occ_core::Result<Vec<_>>>()
        .py_err()
}

/// MERGE's read predicate from `(target column, "values" | "range", Arrow array)` per key and
/// the condition's target-only conjuncts.
#[pyfunction]
fn merge_read_predicate(
    keys: Vec<(String, String, ArrowCapsules<'_>)>,
    target_only: Vec<String>,
) -> PyResult<Option<String>> {
    use delta_occ_core::arrow_values::{merge_read_predicate, KeySummary};
    let arrays = keys
        .iter()
        .map(|(_, _, c)| arrow::array_from_capsules(&c.0, &c.1))
        .collect::<PyResult<Vec<_>>>()?;
    let mut summaries = Vec::with_capacity(keys.len());
    for ((column, kind, _), array) in keys.iter().zip(&arrays) {
        let summary = match kind.as_str() {
            "values" => KeySummary::Values(array.as_ref()),
            "range" => KeySummary::Range(array.as_ref()),
            other => {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "merge key summary kind must be 'values' or 'range', got {other:?}"
                )))
            }
        };
        summaries.push((column.clone(), summary));
    }
    merge_read_predicate(&summaries, &target_only).py_err()
}

/// Registered with Python's `atexit` when the module loads: the process is exiting, so the core
/// leaks its large structures rather than freeing them one by one (see the core's
/// `set_process_exiting`).
#[pyfunction]
fn at_exit() {
    delta_occ_core::set_process_exiting();
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // True only in the build the tests make for themselves (cargo feature `test-hooks`).
    m.add("TEST_HOOKS", delta_occ_core::test_hooks::ENABLED)?;
    // Only a function pointer: no thread or runtime is started here.
    delta_occ_core::set_io_idle_hook(storage::collect_memory);
    let at_exit = wrap_pyfunction!(at_exit, m)?;
    m.py()
        .import("atexit")?
        .call_method1("register", (at_exit.clone(),))?;
    m.add_function(at_exit)?;
    m.add_class::<table::TableHandle>()?;
    m.add_class::<snapshot::SnapshotHandle>()?;
    m.add_class::<deletion_vector::DeletionVector>()?;
    m.add_class::<transaction::TransactionHandle>()?;
    m.add_class::<storage::StorageHandle>()?;
    m.add_class::<rowexpr::PyRowExpr>()?;
    m.add_class::<row_group_filter::RowGroupFilter>()?;
    m.add_function(wrap_pyfunction!(rowexpr::conjuncts, m)?)?;
    m.add_function(wrap_pyfunction!(rowexpr::unqualified, m)?)?;
    m.add_function(wrap_pyfunction!(table::history_report, m)?)?;
    m.add_function(wrap_pyfunction!(zorder_permutation, m)?)?;
    m.add_function(wrap_pyfunction!(rowexpr::resolve_now, m)?)?;
    m.add_function(wrap_pyfunction!(rowexpr::referenced_columns, m)?)?;
    m.add_function(wrap_pyfunction!(parse_isolation_level, m)?)?;
    m.add_function(wrap_pyfunction!(parse_commit, m)?)?;
    m.add_function(wrap_pyfunction!(merged_for_write, m)?)?;
    m.add_function(wrap_pyfunction!(rule_ids, m)?)?;
    m.add_function(wrap_pyfunction!(rule_description, m)?)?;
    m.add_function(wrap_pyfunction!(spark_file_keys, m)?)?;
    m.add_function(wrap_pyfunction!(file_column_indexes, m)?)?;
    m.add_function(wrap_pyfunction!(read_parquet_columns, m)?)?;
    m.add("STATS_STRING_PREFIX", delta_occ_core::STRING_PREFIX)?;
    m.add("ROW_ID_RULE", delta_occ_core::ROW_ID_RULE)?;
    m.add(
        "ROW_COMMIT_VERSION_RULE",
        delta_occ_core::ROW_COMMIT_VERSION_RULE,
    )?;
    m.add_function(wrap_pyfunction!(stats::parquet_footer_stats, m)?)?;
    m.add_function(wrap_pyfunction!(stats::parquet_footer_stats_of, m)?)?;
    m.add_function(wrap_pyfunction!(stats::rows_stats, m)?)?;
    m.add_function(wrap_pyfunction!(stats::written_file_stats, m)?)?;
    m.add_function(wrap_pyfunction!(schema::logical_arrow_schema, m)?)?;
    m.add_function(wrap_pyfunction!(schema::physical_arrow_schema, m)?)?;
    m.add_function(wrap_pyfunction!(schema::spark_physical_schema_json, m)?)?;
    m.add_function(wrap_pyfunction!(schema::delta_schema_json, m)?)?;
    m.add_function(wrap_pyfunction!(schema::delta_type_json, m)?)?;
    m.add_function(wrap_pyfunction!(schema::delta_type_of_data, m)?)?;
    m.add_function(wrap_pyfunction!(partition_strings, m)?)?;
    m.add_function(wrap_pyfunction!(type_writable_as, m)?)?;
    m.add_function(wrap_pyfunction!(sql_literals, m)?)?;
    m.add_function(wrap_pyfunction!(merge_read_predicate, m)?)?;
    m.add_function(wrap_pyfunction!(dv::read_deletion_vector, m)?)?;
    m.add_function(wrap_pyfunction!(dv::write_deletion_vectors, m)?)?;
    m.add_function(wrap_pyfunction!(dv::serialize_bitmap, m)?)?;
    m.add_function(wrap_pyfunction!(dv::deserialize_bitmap, m)?)?;
    m.add_function(wrap_pyfunction!(dv::z85_encode, m)?)?;
    m.add_function(wrap_pyfunction!(dv::z85_decode, m)?)?;
    Ok(())
}
