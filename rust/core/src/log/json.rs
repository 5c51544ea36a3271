//! Newline-delimited JSON commits (and JSON V2 checkpoints).

use std::path::Path;

use super::actions::{Actions, JsonLine};
use crate::error::{Error, Result};

/// Parse one commit file's bytes. Large files are split at line boundaries and parsed on scoped
/// threads (no global pool: safe in forked children).
pub fn parse_actions(bytes: &[u8], file: &Path, version: Option<i64>) -> Result<Actions> {
    let mut out = Actions::default();
    for part in parse_parts(bytes, 1, file, version)? {
        out.append(part);
    }
    Ok(out)
}

/// Parse in parts, one per thread, in file order; `first_line` numbers the first line of `bytes`.
fn parse_parts(bytes: &[u8], first_line: usize, file: &Path, version: Option<i64>) -> Result<Vec<Actions>> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| Error::corrupt(file, version, format!("not UTF-8 at byte {}", e.valid_up_to())))?;
    let threads = crate::parallel::threads_for(bytes.len(), 4 << 20);
    if threads <= 1 {
        return Ok(vec![parse_chunk(text, first_line, file, version)?]);
    }
    let chunks: Vec<(usize, &str)> =
        split_lines(text, threads).into_iter().map(|(l, c)| (l + first_line - 1, c)).collect();
    crate::parallel::map(&chunks, |&(first_line, chunk)| parse_chunk(chunk, first_line, file, version))
        .into_iter()
        .collect()
}

/// Split into about `n` chunks ending on newlines; each with the 1-based number of its first line.
fn split_lines(text: &str, n: usize) -> Vec<(usize, &str)> {
    let target = text.len() / n + 1;
    let mut chunks = Vec::with_capacity(n);
    let mut start = 0;
    let mut line = 1;
    while start < text.len() {
        let mut end = (start + target).min(text.len());
        if end < text.len() {
            end = match text.as_bytes()[end..].iter().position(|&b| b == b'\n') {
                Some(p) => end + p + 1,
                None => text.len(),
            };
        }
        let chunk = &text[start..end];
        chunks.push((line, chunk));
        line += count_newlines(chunk.as_bytes());
        start = end;
    }
    chunks
}

fn count_newlines(b: &[u8]) -> usize {
    b.iter().filter(|&&c| c == b'\n').count()
}

fn parse_chunk(text: &str, first_line: usize, file: &Path, version: Option<i64>) -> Result<Actions> {
    // Typical add lines are 300-500 bytes: reserve for that rather than grow (and copy) the list.
    let mut out = Actions { adds: Vec::with_capacity(text.len() / 300 + 1), other: Vec::new() };
    for (i, line) in text.split('\n').enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let parsed: JsonLine = serde_json::from_str(line).map_err(|e| {
            Error::corrupt(file, version, format!("line {}: invalid action JSON: {e}", first_line + i))
        })?;
        parsed.into_actions(&mut out);
    }
    Ok(out)
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
            for part in parse_parts(&buf[..cut], line, path, Some(version))? {
                sink(part);
            }
            line += count_newlines(&buf[..cut]);
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
        let chunks = split_lines(&text, 4);
        let joined: String = chunks.iter().map(|c| c.1).collect();
        assert_eq!(joined, text);
        let last = chunks.last().unwrap();
        assert_eq!(&last.1[..4], "line");
        assert_eq!(last.1.split('\n').next().unwrap(), format!("line{}", last.0 - 1));
    }
}
