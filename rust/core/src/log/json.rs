//! Newline-delimited JSON commits (and JSON V2 checkpoints).

use std::fmt::Display;
use std::sync::{Arc, OnceLock};

use super::actions::{
    visit_each, Actions, JsonLine, PartitionInterner, RawStats, StatsSink, StatsSource, StatsText,
    VisitStats,
};
use super::add_line;
use super::deferred::Deferred;
use super::stats_literal;
use crate::error::{Error, Result};
use crate::storage::{FileReader, Location};

/// Parse one commit file's bytes. Large files are split at line boundaries and parsed on scoped
/// threads (no global pool: safe in forked children).
pub fn parse_actions(bytes: &[u8], file: impl Display, version: Option<i64>) -> Result<Actions> {
    let threads = crate::parallel::threads_for(bytes.len(), 4 << 20);
    let chunks = split_lines(bytes, threads);
    let results = crate::parallel::map(&chunks, |c| parse_chunk(c).map_err(PartError::Line));
    let mut out = Actions::default();
    for part in join_parts(results, file, version)? {
        out.append(part);
    }
    Ok(out)
}

/// The parts in file order, or the first failure with its line numbered from the line counts of
/// the parts before it (each part counts its own lines as it is parsed; numbers are only needed
/// for an error message).
fn join_parts(
    results: Vec<std::result::Result<(Actions, usize), PartError>>,
    file: impl Display,
    version: Option<i64>,
) -> Result<Vec<Actions>> {
    let mut parts = Vec::with_capacity(results.len());
    let mut line = 1;
    for r in results {
        match r {
            Ok((actions, lines)) => {
                parts.push(actions);
                line += lines;
            }
            Err(PartError::Line(LineError { line: l, message })) => {
                return Err(Error::corrupt(
                    &file,
                    version,
                    format!("line {}: {message}", line + l),
                ));
            }
            Err(PartError::Io(e)) => return Err(Error::io(&file, e)),
        }
    }
    Ok(parts)
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

/// Adds that `bytes` of commit lines may hold, to reserve for rather than grow (and copy) a list:
/// typical add lines are 300-500 bytes, and room not used is never touched.
pub(crate) fn room_for_adds(bytes: u64) -> usize {
    (bytes / 300) as usize + 1
}

/// Parse one chunk (whole lines); returns its actions and its number of lines.
fn parse_chunk(bytes: &[u8]) -> std::result::Result<(Actions, usize), LineError> {
    let mut out = Actions {
        adds: Vec::with_capacity(room_for_adds(bytes.len() as u64)),
        other: Vec::new(),
    };
    let lines = parse_lines_into(
        bytes,
        &mut out,
        &mut PartitionInterner::default(),
        &mut StatsSink::Keep,
    )?;
    Ok((out, lines))
}

/// Parse whole lines onto `out`; returns the number of lines.
fn parse_lines_into(
    bytes: &[u8],
    out: &mut Actions,
    interner: &mut PartitionInterner,
    sink: &mut StatsSink,
) -> std::result::Result<usize, LineError> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let valid = &bytes[..e.valid_up_to()];
        let line_start = valid.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
        LineError {
            line: valid.iter().filter(|&&b| b == b'\n').count(),
            message: format!(
                "not UTF-8 (at byte {} of the line)",
                valid.len() - line_start
            ),
        }
    })?;
    let mut lines = 0;
    let (mut short, key) = (String::new(), stats_literal::key_finder());
    for (i, line) in split_terminator(text).enumerate() {
        lines = i + 1;
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let invalid = |e: String| LineError {
            line: i,
            message: format!("invalid action JSON: {e}"),
        };
        if let Some(add) = add_line::parse(line) {
            add.push_onto(out, interner, sink).map_err(invalid)?;
            continue;
        }
        // A trailing stats literal is cut out before serde sees the line (see stats_literal).
        if let Some(split) = stats_literal::split(line, &mut short, &key) {
            if let Ok(parsed) = serde_json::from_str::<JsonLine>(&short) {
                if split.confirmed(&short, parsed.add_stats()) {
                    parsed
                        .into_actions(Some(split.literal), out, interner, sink)
                        .map_err(invalid)?;
                    continue;
                }
            }
        }
        let parsed: JsonLine = serde_json::from_str(line).map_err(|e| invalid(e.to_string()))?;
        parsed
            .into_actions(None, out, interner, sink)
            .map_err(invalid)?;
    }
    Ok(lines)
}

/// `text.split_terminator('\n')`, with memchr finding each end many bytes at a time (`str::split`
/// tests a char at a time).
fn split_terminator(mut rest: &str) -> impl Iterator<Item = &str> {
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = memchr::memchr(b'\n', rest.as_bytes()).unwrap_or(rest.len());
        let line = &rest[..end];
        rest = rest.get(end + 1..).unwrap_or("");
        Some(line)
    })
}

/// Bytes each thread reads at a time from a large commit.
const CHUNK: usize = 8 << 20;

/// Read and parse a large commit file: each thread reads and parses its own byte range of the
/// file a chunk at a time (so reading is parallel too, and the text is never in memory whole).
/// Returns the actions in file order, one part per range; the first has room for the adds of all
/// and of `later` bytes of commits more.
pub fn read_large_commit(
    path: &Location,
    version: i64,
    size: u64,
    later: u64,
) -> Result<Vec<Actions>> {
    let threads = crate::parallel::threads_for(size as usize, 4 << 20);
    read_ranges(path, version, size, threads, CHUNK, later)
}

fn read_ranges(
    path: &Location,
    version: i64,
    size: u64,
    threads: usize,
    chunk: usize,
    later: u64,
) -> Result<Vec<Actions>> {
    let file = path.open().map_err(|e| open_error(path, version, e))?;
    let n = threads.max(1) as u64;
    let commit = Arc::new(DeferredCommit {
        stats: Deferred::new(path, version, size),
        spans: (0..n).map(|_| OnceLock::new()).collect(),
    });
    let ranges: Vec<usize> = (0..n as usize).collect();
    let results = crate::parallel::map(&ranges, |&i| {
        let (start, end) = (size * i as u64 / n, size * (i as u64 + 1) / n);
        // The first range makes room for the whole file's adds, so joining the ranges moves only
        // the later ones (`parallel::concat`).
        let room = if i == 0 { size + later } else { end - start };
        parse_range(&file, &commit, i, start, end, chunk, room)
    });
    join_parts(results, path, Some(version))
}

enum PartError {
    Line(LineError),
    Io(std::io::Error),
}

/// Parse the lines that start in bytes `start..end` of the file (the last one may run past
/// `end`); returns their actions and number of lines.
fn parse_range(
    file: &FileReader,
    commit: &Arc<DeferredCommit>,
    range: usize,
    start: u64,
    end: u64,
    chunk: usize,
    room: u64,
) -> std::result::Result<(Actions, usize), PartError> {
    if start >= end {
        return Ok((Actions::default(), 0));
    }
    let mut out = Actions {
        adds: Vec::with_capacity(room_for_adds(room)),
        other: Vec::new(),
    };
    let mut interner = PartitionInterner::default();
    let mut found = Vec::new();
    let mut lines = 0;
    // buf[..len] holds unparsed bytes; buf only grows (zeroed once), for a line longer than a chunk.
    let mut buf: Vec<u8> = Vec::new();
    let mut len = 0;
    // File offset of buf[0], and of the next byte to read.
    let (mut pos, mut next) = (start, start);
    // A range not at a line start leaves that line to the range before.
    let mut skip_partial = start > 0 && {
        let mut b = [0u8];
        file.read_at(&mut b, start - 1).map_err(PartError::Io)? == 1 && b[0] != b'\n'
    };
    let newline = |bytes: &[u8]| bytes.iter().position(|&b| b == b'\n');
    loop {
        if buf.len() < len + chunk {
            buf.resize(len + chunk, 0);
        }
        let got = file
            .read_at(&mut buf[len..len + chunk], next)
            .map_err(PartError::Io)?;
        len += got;
        next += got as u64;
        let eof = got == 0;
        if skip_partial {
            let Some(p) = newline(&buf[..len]) else {
                pos += len as u64;
                len = 0;
                if eof {
                    break;
                }
                continue;
            };
            buf.copy_within(p + 1..len, 0);
            len -= p + 1;
            pos += p as u64 + 1;
            skip_partial = false;
        }
        if pos >= end {
            break;
        }
        // Whole lines in buf, then only those starting before `end`.
        let whole = if eof {
            len
        } else {
            buf[..len]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |p| p + 1)
        };
        let limit = (end - pos) as usize;
        let cut = if limit < whole {
            newline(&buf[limit - 1..whole]).map_or(whole, |p| limit + p)
        } else {
            whole
        };
        let mut sink = StatsSink::Locate {
            base: buf.as_ptr() as usize,
            offset: pos,
            found: &mut found,
        };
        let n = parse_lines_into(&buf[..cut], &mut out, &mut interner, &mut sink).map_err(|e| {
            PartError::Line(LineError {
                line: lines + e.line,
                message: e.message,
            })
        })?;
        lines += n;
        buf.copy_within(cut..len, 0);
        len -= cut;
        pos += cut as u64;
        if eof || pos >= end {
            break;
        }
    }
    if !found.is_empty() {
        let stats = Arc::new(DeferredStats {
            commit: commit.clone(),
            range,
        });
        for (k, &(i, _, _)) in found.iter().enumerate() {
            out.adds[i].stats = Some(StatsText::deferred(stats.clone(), k as u32));
        }
        let _ = commit.spans[range].set(found.into_iter().map(|(_, o, l)| (o, l)).collect());
    }
    Ok((out, lines))
}

/// The `add.stats` literals of one range of a large commit. They stay in the file and are read for
/// the whole commit the first time any of them is asked for: a million of them are a third of such
/// a commit's bytes, and most snapshots never look at them.
pub struct DeferredStats {
    commit: Arc<DeferredCommit>,
    range: usize,
}

struct DeferredCommit {
    /// Per range: the literals (still escaped, as in the file), concatenated, and where each ends.
    stats: Deferred<Vec<(String, Vec<usize>)>>,
    /// Per range: file offset and length of each literal, in file order.
    spans: Vec<OnceLock<Vec<(u64, u32)>>>,
}

impl DeferredStats {
    /// The `k`-th stats literal of this range (a JSON string, quotes and escapes kept).
    pub fn get(&self, k: u32) -> Result<&str> {
        let commit = &*self.commit;
        let (text, ends) = &commit.stats.get(|| false, || commit.load())?[self.range];
        let k = k as usize;
        Ok(&text[if k == 0 { 0 } else { ends[k - 1] }..ends[k]])
    }
}

impl StatsSource for DeferredStats {
    fn raw(&self, k: u32) -> Result<Option<RawStats<'_>>> {
        Ok(Some(RawStats::Literal(self.get(k)?)))
    }

    /// The literal's length: what its text takes at most once unescaped.
    fn len_hint(&self, k: u32) -> usize {
        self.spans()
            .get(k as usize)
            .map_or(0, |&(_, n)| (n as usize).saturating_sub(2))
    }

    /// Not loaded yet: read the literals asked for straight from the commit and keep nothing.
    /// Literals close together are read a window at a time, scattered ones one by one.
    fn visit(&self, ks: &[Option<u32>], f: &mut VisitStats<'_>) -> Result<()> {
        let commit = &*self.commit;
        if commit.stats.loaded().is_some() {
            return visit_each(self, ks, f);
        }
        let spans = self.spans();
        let mut failed = None;
        commit.stats.reread(
            || false,
            || {
                let mut window = Window::open(commit.stats.path())?;
                for (j, &k) in ks.iter().enumerate() {
                    let literal = match k {
                        Some(k) => {
                            let &(offset, n) = spans
                                .get(k as usize)
                                .ok_or("a stats literal out of range")?;
                            let text =
                                window.text(offset, n as usize, || reach(spans, &ks[j..]))?;
                            Some(RawStats::Literal(text))
                        }
                        None => None,
                    };
                    if let Err(e) = f(literal) {
                        failed = Some(e);
                        break;
                    }
                }
                Ok(())
            },
        )?;
        failed.map_or(Ok(()), Err)
    }
}

impl DeferredStats {
    /// File offset and length of each literal of this range.
    fn spans(&self) -> &[(u64, u32)] {
        self.commit.spans[self.range]
            .get()
            .map_or(&[][..], Vec::as_slice)
    }
}

/// Literals further apart than this are read separately rather than through one window.
const GAP: u64 = 64 << 10;

/// Where one read for the spans of `ks` (in order, the first one first) should end: after the
/// last of them that follows the one before within [`GAP`] bytes and ends within [`CHUNK`] bytes
/// of the first.
fn reach(spans: &[(u64, u32)], ks: &[Option<u32>]) -> u64 {
    let mut wanted = ks.iter().flatten().map_while(|&k| spans.get(k as usize));
    let Some(&(start, n)) = wanted.next() else {
        return 0;
    };
    let mut end = start + n as u64;
    for &(offset, n) in wanted {
        let next = offset + n as u64;
        if offset < end || offset - end > GAP || next - start > CHUNK as u64 {
            break;
        }
        end = next;
    }
    end
}

/// Reads byte spans of a file through a window, for spans in mostly ascending order (the stats
/// literals of a commit, in file order).
struct Window {
    file: FileReader,
    bytes: Vec<u8>,
    at: u64,
}

impl Window {
    fn open(path: &Location) -> std::result::Result<Self, String> {
        let file = path.open().map_err(|e| again(&e))?;
        Ok(Window {
            file,
            bytes: Vec::new(),
            at: 0,
        })
    }

    /// The text of bytes `offset..offset + n` of the file. When the window does not hold them it
    /// is read again from `offset` up to `until()` (at least the span).
    fn text(
        &mut self,
        offset: u64,
        n: usize,
        until: impl FnOnce() -> u64,
    ) -> std::result::Result<&str, String> {
        let end = offset + n as u64;
        if offset < self.at || end > self.at + self.bytes.len() as u64 {
            self.bytes.resize((until().max(end) - offset) as usize, 0);
            let got = self
                .file
                .read_at(&mut self.bytes, offset)
                .map_err(|e| again(&e))?;
            self.bytes.truncate(got);
            self.at = offset;
            if got < n {
                return Err("the commit is shorter than when it was loaded".into());
            }
        }
        let start = (offset - self.at) as usize;
        std::str::from_utf8(&self.bytes[start..start + n]).map_err(|e| again(&e))
    }
}

fn again(e: &dyn std::fmt::Display) -> String {
    format!("reading add.stats again: {e}")
}

impl DeferredCommit {
    fn load(&self) -> std::result::Result<Vec<(String, Vec<usize>)>, String> {
        let empty = Vec::new();
        let spans: Vec<&Vec<(u64, u32)>> = self
            .spans
            .iter()
            .map(|s| s.get().unwrap_or(&empty))
            .collect();
        crate::parallel::map(&spans, |s| self.load_range(s))
            .into_iter()
            .collect()
    }

    fn load_range(
        &self,
        spans: &[(u64, u32)],
    ) -> std::result::Result<(String, Vec<usize>), String> {
        let mut window = Window::open(self.stats.path())?;
        let mut text = String::with_capacity(spans.iter().map(|&(_, n)| n as usize).sum());
        let mut ends = Vec::with_capacity(spans.len());
        for &(offset, n) in spans {
            text.push_str(window.text(offset, n as usize, || offset + CHUNK as u64)?);
            ends.push(text.len());
        }
        Ok((text, ends))
    }
}

/// Read and parse a commit file.
pub fn read_commit(path: &Location, version: i64) -> Result<Actions> {
    let bytes = path.read().map_err(|e| open_error(path, version, e))?;
    parse_actions(&bytes, path, Some(version))
}

/// Read and parse commit files (none of them large), in order: on a local disk each thread reads
/// and parses its own; from an object store they are fetched concurrently first.
pub fn read_commits(files: &[(i64, Location)]) -> Vec<Result<Actions>> {
    if files.iter().all(|(_, p)| p.is_local()) {
        return crate::parallel::map(files, |(v, p)| read_commit(p, *v));
    }
    let locations: Vec<&Location> = files.iter().map(|(_, p)| p).collect();
    parse_commits(files, Location::read_many(&locations))
}

/// Parse commit files whose bytes (or read errors) were fetched already, in order.
pub fn parse_commits(
    files: &[(i64, Location)],
    bytes: Vec<std::io::Result<bytes::Bytes>>,
) -> Vec<Result<Actions>> {
    let fetched: Vec<(i64, &Location, std::io::Result<bytes::Bytes>)> = files
        .iter()
        .zip(bytes)
        .map(|((v, p), b)| (*v, p, b))
        .collect();
    crate::parallel::map(&fetched, |(v, p, bytes)| match bytes {
        Ok(b) => parse_actions(b, p, Some(*v)),
        Err(e) => Err(open_error(p, *v, crate::error::clone_io(e))),
    })
}

/// The commitInfo of a commit file as JSON text (None when it has none), without parsing its
/// other actions.
pub(crate) fn read_commit_info(path: &Location, version: i64) -> Result<Option<String>> {
    let bytes = path.read().map_err(|e| Error::io(path, e))?;
    commit_info_of(&bytes, path, version)
}

/// [`read_commit_info`] of a commit's bytes.
pub(crate) fn commit_info_of(
    bytes: &[u8],
    path: &Location,
    version: i64,
) -> Result<Option<String>> {
    #[derive(serde::Deserialize)]
    struct Line<'a> {
        #[serde(borrow, rename = "commitInfo", default)]
        commit_info: Option<&'a serde_json::value::RawValue>,
    }
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let parsed: Line = serde_json::from_slice(line).map_err(|e| {
            Error::corrupt(
                path,
                Some(version),
                format!("line {}: invalid action JSON: {e}", i + 1),
            )
        })?;
        if let Some(c) = parsed.commit_info {
            return Ok(Some(c.get().to_string()));
        }
    }
    Ok(None)
}

/// A commit listed in the log segment is gone: the log changed under the reader (corrupt for
/// this snapshot), unlike other I/O errors.
fn open_error(path: &Location, version: i64, e: std::io::Error) -> Error {
    match e.kind() {
        _ if crate::storage::is_missing(&e) => Error::corrupt(
            path,
            Some(version),
            "commit file disappeared while reading the log",
        ),
        _ => Error::io(path, e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::actions::{visited_stats, AddFile};

    #[test]
    fn one_read_reaches_close_spans_only() {
        let gap = GAP + 1;
        let spans = [(0, 10), (12, 10), (22 + gap, 10), (5, 3)];
        let all = |ks: &[u32]| ks.iter().map(|&k| Some(k)).collect::<Vec<_>>();
        // Files without stats (None) are passed over.
        assert_eq!(reach(&spans, &[Some(0), None, Some(1), Some(2)]), 22);
        assert_eq!(reach(&spans, &all(&[2])), 32 + gap);
        // Not back to an earlier offset, nor past CHUNK bytes from the first span.
        assert_eq!(reach(&spans, &all(&[1, 3])), 22);
        let chain: Vec<(u64, u32)> = (0..200).map(|i| (i * GAP, 10)).collect();
        let ks: Vec<u32> = (0..200).collect();
        assert_eq!(reach(&chain, &all(&ks)), 127 * GAP + 10);
        assert!(127 * GAP + 10 <= CHUNK as u64 && 128 * GAP + 10 > CHUNK as u64);
        assert_eq!(reach(&spans, &[None]), 0);
    }

    #[test]
    fn lines_split_like_split_terminator() {
        for text in [
            "",
            "\n",
            "a",
            "a\n",
            "a\nb",
            "\n\na\n\n",
            "a\r\nb\r\n",
            "ü\n中",
        ] {
            let want: Vec<&str> = text.split_terminator('\n').collect();
            assert_eq!(split_terminator(text).collect::<Vec<_>>(), want, "{text:?}");
        }
    }

    #[test]
    fn parses_and_reports_line_numbers() {
        let text = br#"{"commitInfo":{"operation":"WRITE"}}
{"add":{"path":"a%20b","partitionValues":{"p":"1","q":null},"size":1,"modificationTime":2,"dataChange":true,"stats":"{\"numRecords\":3}"}}
{"remove":{"path":"c","dataChange":true,"deletionTimestamp":5}}
{"unknownAction":{"x":1}}
"#;
        let actions = parse_actions(text, "00.json", Some(0)).unwrap();
        assert_eq!(actions.len(), 3);
        let a = &actions.adds[0];
        assert_eq!(&*a.path, "a%20b");
        assert_eq!(a.partition_values[1], ("q".into(), None));
        assert_eq!(
            a.stats_text().unwrap().as_deref(),
            Some("{\"numRecords\":3}")
        );

        let err =
            parse_actions(b"{\"add\":{\"path\":\"x\"}}\n{\"add\":", "f.json", Some(3)).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("f.json") && msg.contains("version 3") && msg.contains("line 1"),
            "{msg}"
        );
    }

    #[test]
    fn ranges_match_whole_file_and_keep_line_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("0.json");
        // Lines of varying length (one longer than a chunk), some blank, CRLF on some.
        let mut text = String::new();
        for i in 0..400 {
            let pad = "x".repeat(if i == 150 { 700 } else { i % 37 });
            let stats = match i % 4 {
                0 => String::new(),
                1 => r#","stats":null"#.to_string(),
                2 => format!(
                    r#","stats":"{{\"numRecords\":{i},\"minValues\":{{\"s\":\"a\\\"b\\u00fc\"}}}}""#
                ),
                _ => format!(r#","stats":"{{\"numRecords\":{i}}}""#),
            };
            // Every third line is not in the plain shape (a space), so serde and the stats cut
            // (stats_literal::split) read it, alternating with add_line's fast path.
            let data_change = if i % 3 == 0 { " true" } else { "true" };
            text += &format!(
                r#"{{"add":{{"path":"p{i}{pad}","partitionValues":{{}},"size":{i},"modificationTime":2,"dataChange":{data_change}{stats}}}}}"#
            );
            text += if i % 9 == 0 { "\r\n" } else { "\n" };
            if i % 50 == 0 {
                text += "\n";
            }
        }
        std::fs::write(&p, &text).unwrap();
        let whole = parse_actions(text.as_bytes(), p.display(), Some(0)).unwrap();
        let paths = |parts: Vec<Actions>| {
            let adds = parts.into_iter().flat_map(|a| a.adds);
            adds.map(|a| {
                (
                    a.path.to_string(),
                    a.stats_text().unwrap().map(|s| s.into_owned()),
                )
            })
            .collect::<Vec<_>>()
        };
        let expected = paths(vec![whole]);
        assert_eq!(expected.len(), 400);
        assert_eq!(
            expected[2].1.as_deref(),
            Some(r#"{"numRecords":2,"minValues":{"s":"a\"b\u00fc"}}"#)
        );
        assert_eq!(expected[1].1, None);
        for threads in [1, 2, 3, 7, 64] {
            for chunk in [97, 512, 4096, 1 << 20] {
                let got = read_ranges(
                    &Location::local(&p),
                    0,
                    text.len() as u64,
                    threads,
                    chunk,
                    0,
                )
                .unwrap();
                assert_eq!(paths(got), expected, "{threads} threads, chunk {chunk}");
            }
        }
        // Stats read on first use fail clearly once the commit is gone or changed.
        let parts = read_ranges(&Location::local(&p), 0, text.len() as u64, 2, 4096, 0).unwrap();
        let again = read_ranges(&Location::local(&p), 0, text.len() as u64, 2, 4096, 0).unwrap();
        std::fs::rename(&p, dir.path().join("moved.json")).unwrap();
        let err = parts[1].adds[2].stats_text().unwrap_err().to_string();
        assert!(err.contains("0.json") && err.contains("version 0"), "{err}");
        std::fs::write(&p, &text[1..]).unwrap();
        let err = again[0].adds[2].stats_text().unwrap_err().to_string();
        assert!(err.contains("changed since it was loaded"), "{err}");
        // Without a final newline, and with a broken line numbered across ranges.
        let lines_before = text.lines().count();
        let mut broken = text.trim_end().to_string();
        broken += "\n{broken\n";
        broken += r#"{"add":{"path":"last","partitionValues":{},"size":1,"modificationTime":2,"dataChange":true}}"#;
        std::fs::write(&p, &broken).unwrap();
        for threads in [1, 3, 7] {
            let err = read_ranges(
                &Location::local(&p),
                0,
                broken.len() as u64,
                threads,
                333,
                0,
            )
            .unwrap_err()
            .to_string();
            assert!(
                err.contains(&format!("line {}:", lines_before + 1)),
                "{threads}: {err}"
            );
        }
    }

    #[test]
    fn visited_stats_equal_loaded_stats_and_are_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("0.json");
        let stats = |i: usize| match i % 5 {
            0 => None,
            1 => Some(format!(
                r#"{{"numRecords":{i},"minValues":{{"s":"a\"ü/"}}}}"#
            )),
            _ => Some(format!(r#"{{"numRecords":{i}}}"#)),
        };
        let text: String = (0..6000)
            .map(|i| {
                let literal = stats(i).map_or(String::new(), |s| {
                    format!(r#","stats":{}"#, serde_json::to_string(&s).unwrap())
                });
                // Every third line not plain (a space): serde and the stats cut read it.
                let data_change = if i % 3 == 0 { " true" } else { "true" };
                format!(
                    r#"{{"add":{{"path":"p{i}","partitionValues":{{}},"size":1,"modificationTime":2,"dataChange":{data_change}{literal}}}}}"#
                ) + "\n"
            })
            .collect();
        std::fs::write(&p, &text).unwrap();
        let expected: Vec<_> = (0..6000).map(stats).collect();
        let read = || {
            let parts =
                read_ranges(&Location::local(&p), 0, text.len() as u64, 3, 4096, 0).unwrap();
            parts.into_iter().flat_map(|a| a.adds).collect::<Vec<_>>()
        };
        let adds = read();
        assert_eq!(visited_stats(&adds).unwrap(), expected);
        let looked_up: Vec<_> = adds
            .iter()
            .map(|a| a.stats_text().unwrap().map(|t| t.into_owned()))
            .collect();
        assert_eq!(looked_up, expected);
        assert_eq!(visited_stats(&adds).unwrap(), expected);
        // A visit keeps nothing: once the commit is gone, a lookup has nothing to fall back on.
        let fresh = read();
        assert_eq!(visited_stats(&fresh).unwrap(), expected);
        // A few scattered files (runs far shorter than a range): read one by one, still right.
        let sparse: Vec<AddFile> = fresh.iter().step_by(997).cloned().collect();
        let want: Vec<_> = expected.iter().step_by(997).cloned().collect();
        assert_eq!(visited_stats(&sparse).unwrap(), want);
        std::fs::remove_file(&p).unwrap();
        assert!(fresh[1].stats_text().is_err());
        assert!(visited_stats(&fresh).is_err());
    }

    #[test]
    fn split_keeps_all_lines() {
        let text: String = (0..1000).map(|i| format!("line{i}\n")).collect();
        let chunks = split_lines(text.as_bytes(), 4);
        assert_eq!(chunks.len(), 4);
        assert_eq!(chunks.concat(), text.as_bytes());
        assert!(chunks
            .iter()
            .all(|c| c.ends_with(b"\n") && c.starts_with(b"line")));
    }

    #[test]
    fn error_lines_are_numbered_across_threads() {
        // Big enough to be parsed by several threads; the bad line sits in a later chunk.
        let good = r#"{"add":{"path":"p","partitionValues":{},"size":1,"modificationTime":2,"dataChange":true}}"#;
        let n = (12 << 20) / good.len();
        let mut text: String = (0..n).map(|_| format!("{good}\n")).collect();
        text.push_str("{\"add\": nope}\n");
        text.push_str(&format!("{good}\n"));
        let err = parse_actions(text.as_bytes(), "c.json", Some(1))
            .unwrap_err()
            .to_string();
        assert!(err.contains(&format!("line {}:", n + 1)), "{err}");
        let mut bad = text.into_bytes();
        bad.truncate(good.len() * 3 + 3);
        bad[good.len() + 1 + 5] = 0xff;
        let err = parse_actions(&bad, "c.json", Some(1))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("line 2:") && err.contains("not UTF-8"),
            "{err}"
        );
    }
}
