//! delta-occ core: Delta Lake log replay, deletion vectors and optimistic concurrency
//! control, in pure Rust with no Python dependency.
//!
//! The public face is the names re-exported below and four modules that are API as a whole
//! ([`arrow_values`], [`dv`], [`files_batch`], [`rowexpr`]). The Python binding (`rust/py`) and
//! the timing examples use nothing else; every other module is private to the crate, so the
//! Delta knowledge in it can move without breaking them.

mod arrow_stats;
mod clustering;
mod commit;
mod compaction;
mod conflict;
mod convert;
mod data_file;
mod drop_feature;
mod error;
mod isolation;
mod load;
mod log;
mod parallel;
mod parquet_stats;
mod partition;
mod predicate;
mod properties;
mod protocol;
mod restore;
mod row_tracking;
mod rule;
mod schema;
mod schema_arrow;
mod schema_change;
mod snapshot;
mod stats;
mod storage;
mod table;
pub mod test_hooks;
mod time_travel;
mod transaction;
mod uri;
mod vacuum;
mod zorder;

#[cfg(test)]
mod test_rng;

/// Arrow arrays read as Delta values (partition strings, SQL literals, a MERGE source's key
/// summary). Public as a whole: it is how the Python engine turns its Arrow data into the values
/// the core compares, so both sides read a value the same way.
pub mod arrow_values;
/// Deletion vectors: descriptors, Z85, Delta's RoaringBitmapArray and DV files. Public as a whole:
/// a self-contained codec of protocol formats, which the binding exposes function by function.
pub mod dv;
/// Arrow views of a snapshot's live files (one row per file, scan plans, DV positions). Public as
/// a whole: it exists to hand snapshots to the Python engine.
pub mod files_batch;
/// The one row evaluator (SQL text compiled against an Arrow schema). Public as a whole: the
/// engine's conditions and values, and the row-level conflict checker, evaluate rows with it.
pub mod rowexpr;

// Errors: the one error type, and the write conflict (concurrency.md §6) it carries.
pub use error::{Conflict, ConflictKind, Error, PredicateProblem, Result, StorageProblem};

// Rule identities: which rule of concurrency.md failed a conflict or let a winner pass.
pub use rule::{describe as describe_rule, ids as rule_ids, Fallback, Rule};

// Storage: where a table's files live (a local disk, S3, Azure, GCS).
pub use storage::{set_io_idle_hook, set_process_exiting, Entry, FileReader, Location, Storage};

// Tables and their snapshots.
pub use convert::{convert as convert_to_delta, PartitionColumn};
pub use isolation::IsolationLevel;
pub use schema::ColumnMappingMode;
pub use snapshot::Snapshot;
pub use table::{begin_create, history_of, Table};
// What a snapshot tells about its table (DESCRIBE DETAIL).
pub use protocol::supported_features;
pub use time_travel::commit_timestamp;

// The log: actions, commit files, and a commit as a concurrent writer sees it.
pub use conflict::WinningCommit;
pub use log::actions::{Action, AddFile, PartitionValues, Protocol};
pub use log::json::parse_actions;
pub use log::path::commit_path;

// Transactions and the commit loop (validate = check against the winners without committing).
pub use commit::check_record::CheckRecord;
pub use commit::committer::{commit, CommitResult};
// Checkpoints and log cleanup asked for outside a commit.
pub use commit::checkpoint::create as create_checkpoint;
pub use commit::log_cleanup::{cleanup as cleanup_log, Cleaned};
pub use commit::options::{CommitOptions, Interrupt};
pub use commit::winners::{validate, Validation};
pub use transaction::{Transaction, TxnOptions, TxnState};

// Read predicates and file skipping.
pub use compaction::plan_bins;
pub use predicate::{select_files, Predicate};

// Rules the Python engine applies to data files exactly as the core does.
pub use arrow_stats::{rows_stats, written_file_stats};
pub use clustering::columns as clustering_columns;
pub use data_file::{
    read_columns as read_data_file_columns, read_columns_where as read_data_file_columns_where,
    FileColumns, KeepRowGroup,
};
pub use parquet_stats::{footer_stats, footer_stats_of_bytes};
pub use restore::{restore, Restored};
pub use row_tracking::{rule_schema as row_rule_schema, ROW_COMMIT_VERSION_RULE, ROW_ID_RULE};
pub use schema::file_column_index;
pub use schema::StructType;
pub use schema_arrow::{
    arrow_schema, delta_schema, delta_type, delta_type_of_data, spark_physical_schema_json, Names,
};
pub use schema_change::{merged_for_write, type_writable_as};
pub use stats::STRING_PREFIX;
pub use uri::spark_file_key;
pub use vacuum::{configured_retention_ms, vacuum, VacuumReport, DEFAULT_RETENTION_MS};
pub use zorder::zorder_permutation;

// Internals the timing examples (rust/core/examples) drive directly.
pub use conflict::{check_all, TxnView};
pub use log::replay::LogState;
