//! Writing to the log.

pub mod log_store;
