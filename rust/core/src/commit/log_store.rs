//! Put-if-absent for commit files on a local file system (concurrency.md §1): write a unique
//! hidden temporary in `_delta_log/`, fsync it, publish it with `link(2)` (fails if the target
//! exists, and never exposes a partial file), then drop the temporary.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};
use crate::log::path::commit_path;

/// Fault injection for reliability tests, from `DELTA_OCC_FAULTS` (comma-separated):
/// `pause_ms=N` sleeps N ms between the steps of a put (so a SIGKILL lands inside it), and
/// `ack_lost` reports an I/O error after a successful publish (an ambiguous outcome), and
/// `publish_error=eacces|erofs|enospc|eio` fails the publish before anything is written with that
/// error (a permission problem, a read-only or full file system, or a transient I/O error).
struct Faults {
    pause: Option<std::time::Duration>,
    ack_lost: bool,
    publish_error: Option<std::io::ErrorKind>,
}

fn faults() -> Faults {
    let spec = std::env::var("DELTA_OCC_FAULTS").unwrap_or_default();
    let mut f = Faults {
        pause: None,
        ack_lost: false,
        publish_error: None,
    };
    for part in spec.split(',').map(str::trim) {
        if let Some(ms) = part
            .strip_prefix("pause_ms=")
            .and_then(|v| v.parse::<u64>().ok())
        {
            f.pause = Some(std::time::Duration::from_millis(ms));
        } else if part == "ack_lost" {
            f.ack_lost = true;
        } else if let Some(kind) = part.strip_prefix("publish_error=") {
            use std::io::ErrorKind as K;
            f.publish_error = match kind {
                "eacces" => Some(K::PermissionDenied),
                "erofs" => Some(K::ReadOnlyFilesystem),
                "enospc" => Some(K::StorageFull),
                "eio" => Some(K::Other),
                _ => None,
            };
        }
    }
    f
}

/// An I/O error that retrying cannot cure: fail the commit at once instead of backing off.
pub fn is_permanent(e: &std::io::Error) -> bool {
    use std::io::ErrorKind as K;
    matches!(
        e.kind(),
        K::PermissionDenied
            | K::ReadOnlyFilesystem
            | K::StorageFull
            | K::QuotaExceeded
            | K::FileTooLarge
            | K::NotADirectory
            | K::IsADirectory
            | K::InvalidInput
            | K::Unsupported
    )
}

impl Faults {
    fn step(&self) {
        if let Some(p) = self.pause {
            std::thread::sleep(p);
        }
    }
}

/// Write `bytes` as commit `version` unless it exists. `Ok(false)` means another writer won.
pub fn put_if_absent(log_dir: &Path, version: i64, bytes: &[u8]) -> Result<bool> {
    let faults = faults();
    if let Some(kind) = faults.publish_error {
        return Err(Error::io(
            log_dir,
            std::io::Error::new(kind, "injected fault: publish failed"),
        ));
    }
    std::fs::create_dir_all(log_dir).map_err(|e| Error::io(log_dir, e))?;
    let target = commit_path(log_dir, version);
    let tmp = log_dir.join(format!(".{version:020}.json.{}.tmp", uuid::Uuid::new_v4()));
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
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(Error::io(&tmp, e));
    }
    faults.step();
    let linked = std::fs::hard_link(&tmp, &target);
    faults.step();
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => {
            sync_dir(log_dir);
            if faults.ack_lost {
                return Err(Error::io(
                    &target,
                    std::io::Error::other("injected fault: publish acknowledgement lost"),
                ));
            }
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(Error::io(&target, e)),
    }
}

fn sync_dir(dir: &Path) {
    // Durability of the directory entry; failure here does not undo the commit.
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Write a file that may be replaced (checkpoints, `_last_checkpoint`): temp + rename.
pub fn put_replace(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("file"),
        uuid::Uuid::new_v4()
    ));
    let written = (|| {
        let mut f = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(Error::io(path, e));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_writer_loses_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        assert!(put_if_absent(dir.path(), 0, b"one\n").unwrap());
        assert!(!put_if_absent(dir.path(), 0, b"two\n").unwrap());
        assert_eq!(std::fs::read(commit_path(dir.path(), 0)).unwrap(), b"one\n");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[test]
    fn racing_threads_exactly_one_wins() {
        let dir = tempfile::tempdir().unwrap();
        let wins: usize = std::thread::scope(|s| {
            let hs: Vec<_> = (0..8)
                .map(|i| {
                    let d = dir.path();
                    s.spawn(move || {
                        put_if_absent(d, 5, format!("{i}\n").as_bytes()).unwrap() as usize
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(wins, 1);
    }
}
