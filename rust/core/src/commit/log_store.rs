//! Publishing commit files (concurrency.md §1): put-if-absent through the table's storage, once
//! the storage has shown that its conditional creates work (an object store that ignored them
//! would let two writers publish one version).

use crate::error::{Error, Result};
use crate::log::path::commit_path;
use crate::storage::Location;

/// Write `bytes` as commit `version` unless it exists. `Ok(false)` means another writer won.
pub fn put_if_absent(log_dir: &Location, version: i64, bytes: &[u8]) -> Result<bool> {
    log_dir
        .storage()
        .check_conditional_creates(log_dir.key())
        .map_err(|e| Error::io(log_dir, e))?;
    let target = commit_path(log_dir, version);
    target
        .put_if_absent(bytes)
        .map_err(|e| Error::io(&target, e))
}

/// Write a file that may be replaced (checkpoints, `_last_checkpoint`): readers see the old bytes
/// or the new ones.
pub fn put_replace(path: &Location, bytes: &[u8]) -> Result<()> {
    path.put(bytes).map_err(|e| Error::io(path, e))
}
