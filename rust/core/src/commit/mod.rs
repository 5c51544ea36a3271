//! Writing to the log: put-if-absent, the commit loop, checkpoints.

mod attempt;
pub mod check_record;
pub mod checkpoint;
pub mod committer;
pub mod log_cleanup;
pub mod log_store;
pub mod options;
pub mod winners;
