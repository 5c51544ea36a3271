//! Writing to the log: put-if-absent, the commit loop, checkpoints.

pub mod checkpoint;
pub mod committer;
pub mod log_store;
