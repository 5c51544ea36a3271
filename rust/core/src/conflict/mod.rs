//! Conflict detection between a transaction and the commits that won the race (concurrency.md §3).
//! The conflict errors of §6 it raises are [`crate::error::Conflict`].

pub mod checker;
pub mod row_ids;
pub mod row_level;
pub mod rows;
pub mod staged;
pub mod winner;

pub use checker::{check_all, check_head, check_identity, Passed, ReadSet, TxnView};
pub use staged::{DvChange, RowContext, Staged};
pub use winner::WinningCommit;
