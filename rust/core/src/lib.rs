//! delta-occ core: Delta Lake log replay, deletion vectors and optimistic concurrency
//! control, in pure Rust with no Python dependency.

pub mod arrow_values;
pub mod commit;
pub mod conflict;
pub mod dv;
pub mod error;
pub mod files_batch;
pub mod isolation;
pub mod load;
pub mod log;
pub mod parallel;
pub mod parquet_stats;
pub mod partition;
pub mod predicate;
pub mod properties;
pub mod protocol;
pub mod rowexpr;
pub mod schema;
pub mod schema_change;
pub mod snapshot;
pub mod stats;
pub mod table;
pub mod transaction;
pub mod uri;

#[cfg(test)]
mod test_rng;

pub use error::{Error, Result};
pub use isolation::IsolationLevel;
pub use snapshot::Snapshot;
pub use table::Table;
