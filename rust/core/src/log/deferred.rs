//! Data a log reader leaves in its file at load time and reads back, for the whole file, the
//! first time any of it is needed (the stats text of checkpoints and of large commits).

use std::sync::OnceLock;

use crate::error::{Error, Result};
use crate::storage::Location;

pub(crate) struct Deferred<T> {
    path: Location,
    version: i64,
    /// File size when it was first read: another size on the deferred read means the file was
    /// replaced, and what the first read recorded about it no longer holds.
    len: u64,
    loaded: OnceLock<std::result::Result<T, String>>,
}

impl<T> Deferred<T> {
    pub fn new(path: &Location, version: i64, len: u64) -> Self {
        Deferred {
            path: path.clone(),
            version,
            len,
            loaded: OnceLock::new(),
        }
    }

    pub fn path(&self) -> &Location {
        &self.path
    }

    /// The value if an earlier [`Deferred::get`] read it.
    pub fn loaded(&self) -> Option<&T> {
        self.loaded.get()?.as_ref().ok()
    }

    /// Read from the file with `read` without keeping what it returns: for a caller that wants
    /// the data once, in its own form. Fails like [`Deferred::get`]; `in_memory` as there.
    pub fn reread<R>(
        &self,
        in_memory: impl FnOnce() -> bool,
        read: impl FnOnce() -> std::result::Result<R, String>,
    ) -> Result<R> {
        self.unchanged(in_memory)
            .and_then(|()| read())
            .map_err(|m| self.corrupt(m))
    }

    /// Checked before reading again, unless `in_memory`: every byte the read needs was fetched
    /// with the first read (an object's tail) and is read from memory, so no change to the file
    /// since can show (and the check, a HEAD on an object store, would cost a round trip).
    fn unchanged(&self, in_memory: impl FnOnce() -> bool) -> std::result::Result<(), String> {
        if in_memory() {
            return Ok(());
        }
        let len = self
            .path
            .size()
            .map_err(|e| format!("reading add.stats again: {e}"))?;
        if len != self.len {
            return Err(format!(
                "the file changed since it was loaded ({len} bytes, {} before)",
                self.len
            ));
        }
        Ok(())
    }

    fn corrupt(&self, message: String) -> Error {
        Error::corrupt(&self.path, Some(self.version), message)
    }

    /// The value, read with `load` the first time. A failure (the file gone or changed, or
    /// `load`'s own error) is kept, and returned every time as a corrupt-log error naming the
    /// file and version. `in_memory` (asked on the first call only): `load` reads only bytes
    /// fetched with the first read (the file is then not checked for a change).
    pub fn get(
        &self,
        in_memory: impl FnOnce() -> bool,
        load: impl FnOnce() -> std::result::Result<T, String>,
    ) -> Result<&T> {
        let loaded = self
            .loaded
            .get_or_init(|| self.unchanged(in_memory).and_then(|()| load()));
        loaded.as_ref().map_err(|m| self.corrupt(m.clone()))
    }
}
