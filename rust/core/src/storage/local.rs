//! The local file system as a [`Storage`]: keys are absolute paths. Put-if-absent writes a unique
//! hidden temporary next to the target, fsyncs it and publishes it with `link(2)` (which fails if
//! the target exists and never exposes a partial file); put replaces with `rename(2)`.

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use bytes::Bytes;

use super::{Entry, FileReader, Location, Storage};
use crate::test_hooks::Faults;

#[derive(Debug)]
struct LocalStorage;

/// The location of a local path (one storage for every local table).
pub(super) fn root(path: PathBuf) -> Location {
    static LOCAL: OnceLock<Arc<dyn Storage>> = OnceLock::new();
    let storage = LOCAL.get_or_init(|| Arc::new(LocalStorage)).clone();
    let text = path.to_string_lossy();
    // One spelling per directory: `/t/` and `/t` are one table.
    let key = match text.trim_end_matches('/') {
        "" => "/",
        trimmed => trimmed,
    };
    Location::new(storage, key.to_string())
}

fn parent(path: &Path) -> &Path {
    path.parent().unwrap_or(Path::new("/"))
}

/// A unique hidden temporary next to `target`.
fn temporary(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("file");
    parent(target).join(format!(".{name}.{}.tmp", uuid::Uuid::new_v4()))
}

/// Write `bytes` to a new temporary next to `target` and fsync it; removed again on failure.
fn write_temporary(target: &Path, bytes: &[u8], faults: &Faults) -> io::Result<PathBuf> {
    std::fs::create_dir_all(parent(target))?;
    let tmp = temporary(target);
    let written = (|| {
        let mut f = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        faults.step();
        let half = bytes.len() / 2;
        f.write_all(&bytes[..half])?;
        faults.step();
        f.write_all(&bytes[half..])?;
        faults.step();
        f.sync_all()
    })();
    match written {
        Ok(()) => Ok(tmp),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

fn sync_dir(dir: &Path) {
    // Durability of the directory entry; failure here does not undo the write.
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

impl Storage for LocalStorage {
    fn failed_puts_may_land_later(&self) -> bool {
        false
    }

    fn uri(&self, key: &str) -> String {
        key.to_string()
    }

    fn hadoop_path(&self, key: &str) -> String {
        format!("file://{key}")
    }

    fn hadoop_uri(&self, key: &str) -> String {
        crate::uri::spark_file_key(key)
    }

    fn join(&self, key: &str, rel: &str) -> String {
        Path::new(key).join(rel).to_string_lossy().into_owned()
    }

    fn list(
        &self,
        dir: &str,
        start_after: Option<&str>,
        recursive: bool,
    ) -> io::Result<Vec<Entry>> {
        let mut out = Vec::new();
        walk(Path::new(dir), "", recursive, start_after, &mut out)?;
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    fn get(&self, key: &str) -> io::Result<Bytes> {
        std::fs::read(key).map(Bytes::from)
    }

    fn get_range(&self, key: &str, range: Range<u64>) -> io::Result<Bytes> {
        let file = std::fs::File::open(key)?;
        let mut buf = vec![0u8; (range.end.saturating_sub(range.start)) as usize];
        let n = reader::read_at(&file, &mut buf, range.start)?;
        buf.truncate(n);
        Ok(Bytes::from(buf))
    }

    fn head(&self, key: &str) -> io::Result<u64> {
        let m = std::fs::metadata(key)?;
        if m.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                "a directory, not a file",
            ));
        }
        Ok(m.len())
    }

    fn put_if_absent(&self, key: &str, bytes: &[u8]) -> io::Result<bool> {
        let target = Path::new(key);
        // The test faults are for publishing commits, not for DV files (also created new).
        let is_commit = parent(target).ends_with("_delta_log");
        let faults = if is_commit {
            Faults::from_env()
        } else {
            Faults::none()
        };
        if let Some(kind) = faults.publish_error {
            return Err(io::Error::new(kind, "injected fault: publish failed"));
        }
        // A writer that lost a race often tries a version that is taken by then: the link
        // would fail anyway, so skip writing and fsyncing a temporary for it.
        if target.exists() {
            return Ok(false);
        }
        let tmp = write_temporary(target, bytes, &faults)?;
        faults.step();
        let linked = std::fs::hard_link(&tmp, target);
        faults.step();
        let _ = std::fs::remove_file(&tmp);
        match linked {
            Ok(()) => {
                sync_dir(parent(target));
                if faults.ack_lost {
                    return Err(io::Error::other(
                        "injected fault: publish acknowledgement lost",
                    ));
                }
                Ok(true)
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn put(&self, key: &str, bytes: &[u8]) -> io::Result<()> {
        let target = Path::new(key);
        let tmp = write_temporary(target, bytes, &Faults::none())?;
        if let Err(e) = std::fs::rename(&tmp, target) {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        Ok(())
    }

    fn delete(&self, key: &str) -> io::Result<()> {
        match std::fs::remove_file(key) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            r => r,
        }
    }

    fn open(self: Arc<Self>, key: &str, _tail: u64) -> io::Result<FileReader> {
        FileReader::local(std::fs::File::open(key)?, key)
    }

    fn key_of(&self, absolute: &str) -> Result<String, String> {
        match super::options::parse(absolute) {
            Ok(super::options::Parsed::Local(p)) => Ok(p.to_string_lossy().into_owned()),
            Ok(super::options::Parsed::Cloud(c)) => Err(format!(
                "{absolute}: a file in {} storage, not on the local disk of this table",
                c.cloud.name()
            )),
            Err(e) => Err(e.message),
        }
    }

    fn local_path(&self, key: &str) -> Option<PathBuf> {
        Some(PathBuf::from(key))
    }
}

/// Files under `dir` (at `prefix` relative to the listed directory), not hidden ones' contents.
/// The files under `dir` (named `prefix` + name), only those named after `after` when given.
fn walk(
    dir: &Path,
    prefix: &str,
    recursive: bool,
    after: Option<&str>,
    out: &mut Vec<Entry>,
) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let rel = format!("{prefix}{name}");
        let kind = entry.file_type()?;
        if kind.is_dir() {
            if recursive {
                walk(&entry.path(), &format!("{rel}/"), true, after, out)?;
            }
            continue;
        }
        // Filtered before the stat below: a listing from a recent version of a long log looks
        // at the few newest entries, not at every file's metadata.
        if after.is_some_and(|a| rel.as_str() <= a) {
            continue;
        }
        // A file that vanished between the listing and this look is not listed.
        let Ok(meta) = entry.metadata() else { continue };
        let modified = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .and_then(|d| i64::try_from(d.as_millis()).ok());
        out.push(Entry {
            name: rel,
            size: meta.len(),
            modified,
        });
    }
    Ok(())
}

use super::reader;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_writer_loses_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let t = root(dir.path().to_path_buf()).join("00000000000000000000.json");
        assert!(t.put_if_absent(b"one\n").unwrap());
        assert!(!t.put_if_absent(b"two\n").unwrap());
        assert_eq!(&t.read().unwrap()[..], b"one\n");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[test]
    fn racing_threads_exactly_one_wins() {
        let dir = tempfile::tempdir().unwrap();
        let t = root(dir.path().to_path_buf()).join("5.json");
        let wins: usize = std::thread::scope(|s| {
            let hs: Vec<_> = (0..8)
                .map(|i| {
                    let t = t.clone();
                    s.spawn(move || t.put_if_absent(format!("{i}\n").as_bytes()).unwrap() as usize)
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(wins, 1);
    }

    #[test]
    fn list_ranges_put_and_delete() {
        let dir = tempfile::tempdir().unwrap();
        let r = root(dir.path().to_path_buf());
        r.join("b/2.bin").put(b"0123456789").unwrap();
        r.join("a.bin").put(b"x").unwrap();
        r.join("b/1.bin").put(b"yy").unwrap();
        let names = |es: Vec<Entry>| es.into_iter().map(|e| (e.name, e.size)).collect::<Vec<_>>();
        assert_eq!(names(r.list(None, false).unwrap()), [("a.bin".into(), 1)]);
        assert_eq!(
            names(r.list(None, true).unwrap()),
            [
                ("a.bin".into(), 1),
                ("b/1.bin".into(), 2),
                ("b/2.bin".into(), 10)
            ]
        );
        assert_eq!(
            names(r.list(Some("b/1.bin"), true).unwrap()),
            [("b/2.bin".into(), 10)]
        );
        assert_eq!(&r.join("b/2.bin").read_range(2..5).unwrap()[..], b"234");
        // Replacing is whole: the new bytes, no temporary left.
        r.join("b/2.bin").put(b"new").unwrap();
        assert_eq!(&r.join("b/2.bin").read().unwrap()[..], b"new");
        assert_eq!(std::fs::read_dir(dir.path().join("b")).unwrap().count(), 2);
        r.join("b/2.bin").delete().unwrap();
        r.join("b/2.bin").delete().unwrap();
        assert!(!r.join("b/2.bin").exists().unwrap());
        assert!(r.join("missing").list(None, false).is_err());
    }
}
