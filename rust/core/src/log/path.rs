//! Names of the files in `_delta_log/` (protocol-notes.md §1).

use crate::storage::Location;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogFileKind {
    Commit,
    /// `<v>.checkpoint.parquet`
    ClassicCheckpoint,
    /// `<v>.checkpoint.<part>.<parts>.parquet`
    MultiPartCheckpoint {
        part: u32,
        parts: u32,
    },
    /// `<v>.checkpoint.<uuid>.json|parquet`
    UuidCheckpoint {
        json: bool,
    },
    /// `<x>.<y>.compacted.json` (optional; replay does not need it)
    Compaction {
        end: i64,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogFile {
    pub version: i64,
    pub kind: LogFileKind,
    pub path: Location,
    pub size: u64,
    /// When the store says it was last written (epoch ms); `None` when it does not say, or when
    /// the file was found by name rather than listed.
    pub modified: Option<i64>,
}

pub fn commit_file_name(version: i64) -> String {
    format!("{version:020}.json")
}

pub fn checkpoint_file_name(version: i64) -> String {
    format!("{version:020}.checkpoint.parquet")
}

pub fn commit_path(log_dir: &Location, version: i64) -> Location {
    log_dir.join(&commit_file_name(version))
}

fn version_prefix(name: &str) -> Option<(i64, &str)> {
    if name.len() < 21
        || !name.as_bytes()[..20].iter().all(u8::is_ascii_digit)
        || name.as_bytes()[20] != b'.'
    {
        return None;
    }
    Some((name[..20].parse().ok()?, &name[21..]))
}

fn is_digits(s: &str, n: usize) -> bool {
    s.len() == n && s.bytes().all(|b| b.is_ascii_digit())
}

/// The version of a checksum file `<v>.crc` (optional; `parse_name` leaves it out).
pub fn checksum_version(name: &str) -> Option<i64> {
    match version_prefix(name)? {
        (version, "crc") => Some(version),
        _ => None,
    }
}

/// Classify a file name; `None` for anything that is not part of the log (crc, temp files, ...).
pub fn parse_name(name: &str) -> Option<(i64, LogFileKind)> {
    let (version, rest) = version_prefix(name)?;
    let kind = match rest {
        "json" => LogFileKind::Commit,
        "checkpoint.parquet" => LogFileKind::ClassicCheckpoint,
        _ => {
            if let Some(cp) = rest.strip_prefix("checkpoint.") {
                let parts: Vec<&str> = cp.split('.').collect();
                match parts.as_slice() {
                    [a, b, "parquet"] if is_digits(a, 10) && is_digits(b, 10) => {
                        let (part, parts) = (a.parse().ok()?, b.parse().ok()?);
                        if part == 0 || part > parts {
                            return None;
                        }
                        LogFileKind::MultiPartCheckpoint { part, parts }
                    }
                    [u, ext @ ("json" | "parquet")] if uuid::Uuid::parse_str(u).is_ok() => {
                        LogFileKind::UuidCheckpoint {
                            json: *ext == "json",
                        }
                    }
                    _ => return None,
                }
            } else if let Some(c) = rest.strip_suffix(".compacted.json") {
                if !is_digits(c, 20) {
                    return None;
                }
                LogFileKind::Compaction {
                    end: c.parse().ok()?,
                }
            } else {
                return None;
            }
        }
    };
    Some((version, kind))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(
            parse_name("00000000000000000010.json"),
            Some((10, LogFileKind::Commit))
        );
        assert_eq!(
            parse_name("00000000000000000010.checkpoint.parquet"),
            Some((10, LogFileKind::ClassicCheckpoint))
        );
        assert_eq!(
            parse_name("00000000000000000001.checkpoint.0000000002.0000000003.parquet"),
            Some((1, LogFileKind::MultiPartCheckpoint { part: 2, parts: 3 }))
        );
        assert_eq!(
            parse_name("00000000000000000002.checkpoint.6374b053-df23-479b-b2cf-c9c550132b49.json"),
            Some((2, LogFileKind::UuidCheckpoint { json: true }))
        );
        assert_eq!(parse_name("00000000000000000010.crc"), None);
        assert_eq!(parse_name(".00000000000000000010.json.crc"), None);
        assert_eq!(parse_name("_last_checkpoint"), None);
        assert_eq!(parse_name("0000000000000000001.json"), None);
    }
}
