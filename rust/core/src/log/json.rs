//! Newline-delimited JSON commits (and JSON V2 checkpoints).

use std::path::Path;

use super::actions::{Actions, JsonLine, PartitionInterner};
use crate::error::{Error, Result};

/// Parse one commit file's bytes. Large files are split at line boundaries and parsed on scoped
/// threads (no global pool: safe in forked children).
pub fn parse_actions(bytes: &[u8], file: &Path, version: Option<i64>) -> Result<Actions> {
    let mut out = Actions::default();
    for part in parse_parts(bytes, 1, file, version)?.0 {
        out.append(part);
    }
    Ok(out)
}

/// Parse in parts, one per thread, in file order; `first_line` numbers the first line of `bytes`.
/// Also returns the number of lines parsed.
fn parse_parts(bytes: &[u8], first_line: usize, file: &Path, version: Option<i64>) -> Result<(Vec<Actions>, usize)> {
    let threads = crate::parallel::threads_for(bytes.len(), 4 << 20);
    let chunks = split_lines(bytes, threads);
    let results = crate::parallel::map(&chunks, |c| parse_chunk(c));
    // Line numbers are only needed for an error message: count them per chunk as it is parsed,
    // and number the failing line from the counts of the chunks before it.
    let mut parts = Vec::with_capacity(results.len());
    let mut line = first_line;
    for r in results {
        match r {
            Ok((actions, lines)) => {
                parts.push(actions);
                line += lines;
            }
            Err(LineError { line: l, message }) => {
                return Err(Error::corrupt(file, version, format!("line {}: {message}", line + l)));
            }
        }
    }
    Ok((parts, line - first_line))
}

/// Split into about `n` chunks ending on newlines.
fn split_lines(bytes: &[u8], n: usize) -> Vec<&[u8]> {
    let target = bytes.len() / n.max(1) + 1;
    let mut chunks = Vec::with_capacity(n);
    let mut start = 0;
    while start < bytes.len() {
        let mut end = (start + target).min(bytes.len());
        if end < bytes.len() {
            end = match bytes[end..].iter().position(|&b| b == b'\n') {
                Some(p) => end + p + 1,
                None => bytes.len(),
            };
        }
        chunks.push(&bytes[start..end]);
        start = end;
    }
    chunks
}

/// A parse failure at a 0-based line of a chunk.
struct LineError {
    line: usize,
    message: String,
}

/// Parse one chunk (whole lines); returns its actions and its number of lines.
fn parse_chunk(bytes: &[u8]) -> std::result::Result<(Actions, usize), LineError> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let valid = &bytes[..e.valid_up_to()];
        let line_start = valid.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
        LineError {
            line: valid.iter().filter(|&&b| b == b'\n').count(),
            message: format!("not UTF-8 (at byte {} of the line)", valid.len() - line_start),
        }
    })?;
    // Typical add lines are 300-500 bytes: reserve for that rather than grow (and copy) the list.
    let mut out = Actions { adds: Vec::with_capacity(bytes.len() / 300 + 1), other: Vec::new() };
    let mut lines = 0;
    let mut interner = PartitionInterner::default();
    for (i, line) in text.split_terminator('\n').enumerate() {
        lines = i + 1;
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let parsed: JsonLine = serde_json::from_str(line)
            .map_err(|e| LineError { line: i, message: format!("invalid action JSON: {e}") })?;
        parsed
            .into_actions(&mut out, &mut interner)
            .map_err(|e| LineError { line: i, message: format!("invalid action JSON: {e}") })?;
    }
    Ok((out, lines))
}

/// Bytes per window when streaming a large commit.
pub const WINDOW: usize = 64 << 20;

/// Parse a commit file window by window (windows end on line boundaries), handing each window's
/// actions to `sink`, so a huge commit never sits in memory both as text and as actions.
pub fn stream_commit(path: &Path, version: i64, mut sink: impl FnMut(Actions)) -> Result<()> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut buf: Vec<u8> = Vec::with_capacity(WINDOW + (1 << 20));
    let mut line = 1;
    loop {
        let before = buf.len();
        (&mut f).take(WINDOW as u64).read_to_end(&mut buf).map_err(|e| Error::io(path, e))?;
        let eof = buf.len() == before;
        let cut = if eof {
            buf.len()
        } else {
            match buf.iter().rposition(|&b| b == b'\n') {
                Some(p) => p + 1,
                None => continue, // a line longer than a window: read more
            }
        };
        if cut > 0 {
            let (parts, lines) = parse_parts(&buf[..cut], line, path, Some(version))?;
            parts.into_iter().for_each(&mut sink);
            line += lines;
            buf.drain(..cut);
        }
        if eof {
            return Ok(());
        }
    }
}

/// Read and parse a commit file from disk.
pub fn read_commit(path: &Path, version: i64) -> Result<Actions> {
    let bytes = std::fs::read(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::corrupt(path, Some(version), "commit file disappeared while reading the log"),
        _ => Error::io(path, e),
    })?;
    parse_actions(&bytes, path, Some(version))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_reports_line_numbers() {
        let text = br#"{"commitInfo":{"operation":"WRITE"}}
{"add":{"path":"a%20b","partitionValues":{"p":"1","q":null},"size":1,"modificationTime":2,"dataChange":true,"stats":"{\"numRecords\":3}"}}
{"remove":{"path":"c","dataChange":true,"deletionTimestamp":5}}
{"unknownAction":{"x":1}}
"#;
        let actions = parse_actions(text, Path::new("00.json"), Some(0)).unwrap();
        assert_eq!(actions.len(), 3);
        let a = &actions.adds[0];
        assert_eq!(&*a.path, "a%20b");
        assert_eq!(a.partition_values[1], ("q".into(), None));
        assert_eq!(a.stats_text().as_deref(), Some("{\"numRecords\":3}"));

        let err = parse_actions(b"{\"add\":{\"path\":\"x\"}}\n{\"add\":", Path::new("f.json"), Some(3)).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("f.json") && msg.contains("version 3") && msg.contains("line 1"), "{msg}");
    }

    #[test]
    fn streaming_matches_whole_file_and_keeps_line_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("0.json");
        let line = r#"{"add":{"path":"p","partitionValues":{},"size":1,"modificationTime":2,"dataChange":true}}"#;
        let n = WINDOW / line.len() + 500;
        let mut text: String = (0..n).map(|i| line.replace("\"p\"", &format!("\"p{i}\"")) + "\n").collect();
        std::fs::write(&p, &text).unwrap();
        let mut count = 0;
        stream_commit(&p, 0, |a| count += a.len()).unwrap();
        assert_eq!(count, n);
        text.push_str("{broken\n");
        std::fs::write(&p, &text).unwrap();
        let err = stream_commit(&p, 0, |_| {}).unwrap_err().to_string();
        assert!(err.contains(&format!("line {}", n + 1)), "{err}");
    }

    #[test]
    fn split_keeps_all_lines() {
        let text: String = (0..1000).map(|i| format!("line{i}\n")).collect();
        let chunks = split_lines(text.as_bytes(), 4);
        assert_eq!(chunks.len(), 4);
        assert_eq!(chunks.concat(), text.as_bytes());
        assert!(chunks.iter().all(|c| c.ends_with(b"\n") && c.starts_with(b"line")));
    }

    #[test]
    fn error_lines_are_numbered_across_threads() {
        // Big enough to be parsed by several threads; the bad line sits in a later chunk.
        let good = r#"{"add":{"path":"p","partitionValues":{},"size":1,"modificationTime":2,"dataChange":true}}"#;
        let n = (12 << 20) / good.len();
        let mut text: String = (0..n).map(|_| format!("{good}\n")).collect();
        text.push_str("{\"add\": nope}\n");
        text.push_str(&format!("{good}\n"));
        let err = parse_actions(text.as_bytes(), Path::new("c.json"), Some(1)).unwrap_err().to_string();
        assert!(err.contains(&format!("line {}:", n + 1)), "{err}");
        let mut bad = text.into_bytes();
        bad.truncate(good.len() * 3 + 3);
        bad[good.len() + 1 + 5] = 0xff;
        let err = parse_actions(&bad, Path::new("c.json"), Some(1)).unwrap_err().to_string();
        assert!(err.contains("line 2:") && err.contains("not UTF-8"), "{err}");
    }
}
