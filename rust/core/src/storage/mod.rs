//! The one storage layer. Every file the core reads or writes (commits, checkpoints,
//! `_last_checkpoint`, DV files, data files' footers and rows) is a [`Location`]: a key in a
//! [`Storage`]. A local disk ([`local`]) and the object stores S3, Azure and GCS ([`object`],
//! through `object_store`) are its implementations; the rest of the core does not know which one
//! it talks to.

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;

mod local;
mod object;
mod options;
pub mod probe;
mod process;
pub use process::{process_exiting, set_io_idle_hook, set_process_exiting};
mod reader;

pub use reader::FileReader;

/// Bytes of an object fetched when it is opened for ranged reads: a parquet footer in one request.
pub const FOOTER_TAIL: u64 = 64 << 10;

use crate::error::{problem_of, StorageFault};

/// An object found by a listing: its name relative to the listed directory, its size, and when
/// it was last modified (milliseconds since the epoch; `None` where the store does not say).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub size: u64,
    pub modified: Option<i64>,
}

/// A small synchronous interface to a file system or an object store. Keys are the store's own
/// (an absolute path on a local disk, an object key under the bucket). Errors are `io::Error`s
/// whose kind says what happened (`NotFound`, `AlreadyExists`, `PermissionDenied`, ...); a
/// [`StorageFault`] inside carries what cannot be retried away.
pub trait Storage: Send + Sync + fmt::Debug {
    /// The URI of `key` as users and messages see it (never with a secret).
    fn uri(&self, key: &str) -> String;
    /// The path Hadoop (Spark) opens `key` at: a URI string whose path is the key as it is, not
    /// quoted (Hadoop's `Path(String)` quotes it itself); `s3a` for S3.
    fn hadoop_path(&self, key: &str) -> String;
    /// The URI Hadoop shows for `key` (`Path.toUri()`, Spark's `_metadata.file_path`): the path
    /// quoted as `java.net.URI` quotes it.
    fn hadoop_uri(&self, key: &str) -> String;
    /// `rel` (a `/`-separated relative path) under `key`.
    fn join(&self, key: &str, rel: &str) -> String;
    /// The objects under directory `dir`, in name order: directly in it, or at any depth when
    /// `recursive` (names then hold `/`). Only names after `start_after` when given.
    fn list(&self, dir: &str, start_after: Option<&str>, recursive: bool)
        -> io::Result<Vec<Entry>>;
    fn get(&self, key: &str) -> io::Result<Bytes>;
    fn get_range(&self, key: &str, range: Range<u64>) -> io::Result<Bytes>;
    /// Several ranges of one object; a store may merge close ones into one request.
    fn get_ranges(&self, key: &str, ranges: &[Range<u64>]) -> io::Result<Vec<Bytes>> {
        ranges
            .iter()
            .map(|r| self.get_range(key, r.clone()))
            .collect()
    }
    /// Whole objects, fetched concurrently where the store gains from it; in order.
    fn get_many(&self, keys: &[&str]) -> Vec<io::Result<Bytes>> {
        keys.iter().map(|k| self.get(k)).collect()
    }
    /// The size of the object.
    fn head(&self, key: &str) -> io::Result<u64>;
    /// Create the object unless it exists, atomically: `Ok(false)` when it exists (another writer
    /// created it first). Never a partial object.
    fn put_if_absent(&self, key: &str, bytes: &[u8]) -> io::Result<bool>;
    /// Create or replace the object whole (readers see the old or the new bytes, nothing else).
    fn put(&self, key: &str, bytes: &[u8]) -> io::Result<()>;
    /// Remove the object; an absent object is not an error.
    fn delete(&self, key: &str) -> io::Result<()>;
    /// A reader for ranges of the object, with its last `tail` bytes already fetched where that
    /// saves a request (an object store; the whole object when it is no larger).
    fn open(self: Arc<Self>, key: &str, tail: u64) -> io::Result<FileReader>;
    /// The key of an absolute URI or path found in the log (`add.path`, a DV's path), or why it
    /// is not in this store.
    fn key_of(&self, absolute: &str) -> Result<String, String>;
    /// Check, once per process, that conditional creates work under the log directory
    /// `log_dir` before the first commit (a store that ignored them would let two writers
    /// publish one version).
    fn check_conditional_creates(&self, log_dir: &str) -> io::Result<()> {
        let _ = log_dir;
        Ok(())
    }
    /// The local path of `key` when this is a local file system.
    fn local_path(&self, key: &str) -> Option<std::path::PathBuf> {
        let _ = key;
        None
    }
    /// Whether a put that failed, and whose object is absent when read back, may still land
    /// later (a request still in flight or retried by the store). Not on a local disk: the
    /// failed call published nothing and nothing is left in flight.
    fn failed_puts_may_land_later(&self) -> bool {
        true
    }
}

/// A file or object: a key in a storage. Cheap to clone.
#[derive(Clone)]
pub struct Location {
    storage: Arc<dyn Storage>,
    key: Arc<str>,
}

impl Location {
    pub fn new(storage: Arc<dyn Storage>, key: impl Into<Arc<str>>) -> Self {
        Location {
            storage,
            key: key.into(),
        }
    }

    /// The table root named by `location` (a local path, a `file:` URI or an object-store URI)
    /// with `options` (deltalake's key names; the environment fills in what they leave out).
    /// Local paths take no options.
    pub fn parse(location: &str, options: &BTreeMap<String, String>) -> crate::Result<Self> {
        let as_error = |f: StorageFault| crate::Error::from_fault(&options::shown(location), f);
        match options::parse(location).map_err(as_error)? {
            options::Parsed::Local(path) => Ok(local::root(path)),
            options::Parsed::Cloud(uri) => {
                let opts = options::Options::new(options, &uri.base).map_err(as_error)?;
                object::root(uri, opts).map_err(as_error)
            }
        }
    }

    /// A local path as a location.
    pub fn local(path: impl AsRef<std::path::Path>) -> Self {
        local::root(path.as_ref().to_path_buf())
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.storage
    }

    /// `rel` (`/`-separated) under this location.
    pub fn join(&self, rel: &str) -> Location {
        Location {
            storage: self.storage.clone(),
            key: self.storage.join(&self.key, rel).into(),
        }
    }

    /// The last segment of the key.
    pub fn name(&self) -> &str {
        self.key.rsplit('/').next().unwrap_or(&self.key)
    }

    /// A location in the same storage: a relative path (URI-encoded, as in `add.path`) under this
    /// one, or an absolute URI or path of this storage.
    pub fn resolve(&self, log_path: &str) -> Result<Location, String> {
        if log_path.contains("://") || log_path.starts_with("file:") {
            // A URI: decoded by the storage, once.
            let key = self.storage.key_of(log_path)?;
            return Ok(Location::new(self.storage.clone(), key));
        }
        let decoded = percent_encoding::percent_decode_str(log_path)
            .decode_utf8()
            .map_err(|e| format!("{log_path:?} is not UTF-8 after decoding: {e}"))?;
        if decoded.starts_with('/') {
            // An absolute path written without a scheme (still URI-encoded, as every log path).
            let key = self.storage.key_of(&decoded)?;
            return Ok(Location::new(self.storage.clone(), key));
        }
        Ok(self.join(&decoded))
    }

    /// A plain (not URI-encoded) path: relative under this location (`/`-separated, without
    /// `..`), or an absolute path or URI of this storage.
    pub fn locate(&self, path: &str) -> Result<Location, String> {
        if path.contains("://") || path.starts_with("file:") || path.starts_with('/') {
            let key = self.storage.key_of(path)?;
            return Ok(Location::new(self.storage.clone(), key));
        }
        if path.is_empty() {
            return Ok(self.clone());
        }
        if path.split('/').any(|s| s == "..") {
            return Err("a relative path must not contain '..'".into());
        }
        Ok(self.join(path))
    }

    /// The path Hadoop (Spark) reads and writes this file at (see [`Storage::hadoop_path`]).
    pub fn hadoop_path(&self) -> String {
        self.storage.hadoop_path(&self.key)
    }

    /// The URI Spark reports for this file as `_metadata.file_path` (see [`Storage::hadoop_uri`]).
    pub fn hadoop_uri(&self) -> String {
        self.storage.hadoop_uri(&self.key)
    }

    /// The path on the local disk, when the storage is one.
    pub fn local_path(&self) -> Option<std::path::PathBuf> {
        self.storage.local_path(&self.key)
    }

    pub fn is_local(&self) -> bool {
        self.local_path().is_some()
    }

    /// See [`Storage::failed_puts_may_land_later`].
    pub fn failed_puts_may_land_later(&self) -> bool {
        self.storage.failed_puts_may_land_later()
    }

    /// The same storage (the same object, for the same key).
    pub fn same_storage(&self, other: &Location) -> bool {
        std::ptr::addr_eq(Arc::as_ptr(&self.storage), Arc::as_ptr(&other.storage))
    }

    pub fn read(&self) -> io::Result<Bytes> {
        self.storage.get(&self.key)
    }

    pub fn read_range(&self, range: Range<u64>) -> io::Result<Bytes> {
        self.storage.get_range(&self.key, range)
    }

    /// Whole objects, concurrently where that helps (all in one storage); in order. A missing
    /// object is an error that [`is_missing`] recognises.
    pub fn read_many(locations: &[&Location]) -> Vec<io::Result<Bytes>> {
        let Some(first) = locations.first() else {
            return Vec::new();
        };
        if locations.iter().all(|l| l.same_storage(first)) {
            let keys: Vec<&str> = locations.iter().map(|l| l.key()).collect();
            first.storage.get_many(&keys)
        } else {
            locations.iter().map(|l| l.read()).collect()
        }
    }

    pub fn size(&self) -> io::Result<u64> {
        self.storage.head(&self.key)
    }

    /// Whether the object exists (an error other than "not found" is an error).
    pub fn exists(&self) -> io::Result<bool> {
        match self.size() {
            Ok(_) => Ok(true),
            Err(e) if is_missing(&e) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// A reader for ranges of the file; on an object store its last 64 KiB come with the
    /// opening request (a parquet footer in one request).
    pub fn open(&self) -> io::Result<FileReader> {
        self.open_with_tail(FOOTER_TAIL)
    }

    /// [`Location::open`] fetching the last `tail` bytes with the opening request: a data file
    /// no larger than that comes whole in one request.
    pub fn open_with_tail(&self, tail: u64) -> io::Result<FileReader> {
        self.storage.clone().open(&self.key, tail)
    }

    /// The objects in this directory (see [`Storage::list`]).
    pub fn list(&self, start_after: Option<&str>, recursive: bool) -> io::Result<Vec<Entry>> {
        self.storage.list(&self.key, start_after, recursive)
    }

    pub fn put_if_absent(&self, bytes: &[u8]) -> io::Result<bool> {
        self.storage.put_if_absent(&self.key, bytes)
    }

    pub fn put(&self, bytes: &[u8]) -> io::Result<()> {
        self.storage.put(&self.key, bytes)
    }

    pub fn delete(&self) -> io::Result<()> {
        self.storage.delete(&self.key)
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.storage.uri(&self.key))
    }
}

impl fmt::Debug for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Location({})", self)
    }
}

impl PartialEq for Location {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key && self.same_storage(other)
    }
}

impl Eq for Location {}

impl std::hash::Hash for Location {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key.hash(state)
    }
}

/// Whether a read failed because the object does not exist (and not because access to it was
/// refused or the store could not be reached, which stores may also report as "not found").
pub fn is_missing(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound && problem_of(e).is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_paths_are_decoded_once() {
        // golden delta-rs/delta-0.8.0-special-partition: log path x=A%252FA → directory x=A%2FA
        let local = Location::local("/t");
        assert_eq!(
            local.resolve("x=A%252FA/p.parquet").unwrap().key(),
            "/t/x=A%2FA/p.parquet"
        );
        assert_eq!(local.resolve("file:///a%20b/f").unwrap().key(), "/a b/f");
        assert_eq!(
            local.resolve("/abs/a%20b.parquet").unwrap().key(),
            "/abs/a b.parquet"
        );
        assert_eq!(local.locate("x=A%2FA/p").unwrap().key(), "/t/x=A%2FA/p");
        assert!(local.locate("../etc").is_err());
        assert_eq!(local.join("f").hadoop_path(), "file:///t/f");
    }

    #[test]
    fn object_store_uris_give_their_keys_back() {
        let options = BTreeMap::from([("AWS_REGION".to_string(), "us-east-1".to_string())]);
        let root = Location::parse("s3://bucket/tables/t", &options).unwrap();
        assert_eq!(root.to_string(), "s3://bucket/tables/t");
        for raw in [
            "x=A%2FA/part 1.parquet",
            "_2=bar+%21/p.parquet",
            "special p@#h/f?.parquet",
            "é ü/[1]{2}/f",
        ] {
            let loc = root.join(raw);
            let shown = loc.to_string();
            assert!(!shown[5..].contains([' ', '#', '?']), "{shown}");
            assert_eq!(root.locate(&shown).unwrap(), loc, "{shown}");
            assert_eq!(loc.hadoop_path(), format!("s3a://bucket/tables/t/{raw}"));
            assert_eq!(loc.hadoop_uri(), shown.replacen("s3://", "s3a://", 1));
        }
        assert_eq!(
            root.resolve("x=A%252FA/p.parquet").unwrap().key(),
            "tables/t/x=A%2FA/p.parquet"
        );
        // s3a:// is the same bucket; another bucket is not this table's storage.
        assert_eq!(
            root.locate("s3a://bucket/tables/t/f").unwrap().key(),
            "tables/t/f"
        );
        assert!(root.locate("s3://other/tables/t/f").is_err());
        assert!(root.locate("/local/f").is_err());
    }
}
