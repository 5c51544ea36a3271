//! Reading the Delta log: file names, commits, checkpoints, and replay into a snapshot.

pub mod actions;
mod add_line;
pub mod checkpoint;
mod deferred;
pub mod json;
pub mod path;
pub mod replay;
pub mod segment;
pub mod stats_json;
mod stats_literal;
mod unescape;
