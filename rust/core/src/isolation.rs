//! Isolation levels (concurrency.md §2): the three levels, their names and their order.
//!
//! A level is a plain value here, so that a write conflict ([`crate::error::Conflict`]) can carry
//! one. Reading a level from text or from a table's properties can fail with an
//! [`crate::error::Error`]; [`IsolationLevel::parse`] and [`IsolationLevel::of_table`] are therefore
//! in `properties.rs`, with the other checks of table properties.

/// The table property that sets the table's level.
pub const PROPERTY: &str = "delta.isolationLevel";

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum IsolationLevel {
    /// Only for dataChange=false commits; never a table level.
    SnapshotIsolation,
    WriteSerializable,
    Serializable,
}

impl IsolationLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            IsolationLevel::Serializable => "Serializable",
            IsolationLevel::WriteSerializable => "WriteSerializable",
            IsolationLevel::SnapshotIsolation => "SnapshotIsolation",
        }
    }
}
