//! Random access to one file of a storage, for the parquet reader (checkpoints, data files) and
//! for ranged reads of large commits. A local file is read with `pread`; an object is read with
//! ranged GETs, from what [`FileReader::prefetch`] fetched (the column chunks a read needs, close
//! ones merged into one request) and the tail fetched when it was opened (the footer).

use std::io::{self, Read};
use std::ops::Range;
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use super::Storage;

enum Source {
    Local(std::fs::File),
    Remote {
        storage: Arc<dyn Storage>,
        key: String,
    },
}

struct Inner {
    uri: String,
    len: u64,
    source: Arc<Source>,
    /// Byte ranges of a remote object already fetched, by start offset.
    cache: Mutex<Vec<(u64, Bytes)>>,
}

/// A file opened for ranged reads. Cheap to clone (clones share what was fetched).
#[derive(Clone)]
pub struct FileReader(Arc<Inner>);

impl std::fmt::Debug for FileReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FileReader({}, {} bytes)", self.0.uri, self.0.len)
    }
}

/// Fill `buf` from `offset` as far as the file allows; returns the bytes read.
pub(crate) fn read_at(file: &std::fs::File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    use std::os::unix::fs::FileExt;
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

impl FileReader {
    pub(crate) fn local(file: std::fs::File, path: &str) -> io::Result<Self> {
        let len = file.metadata()?.len();
        Ok(Self::with(
            path.to_string(),
            len,
            Source::Local(file),
            Vec::new(),
        ))
    }

    /// An object of `len` bytes, with `tail` (its last bytes, from `offset`) already fetched.
    pub(crate) fn remote(
        storage: Arc<dyn Storage>,
        key: &str,
        len: u64,
        tail: Option<(u64, Bytes)>,
    ) -> Self {
        let uri = storage.uri(key);
        let source = Source::Remote {
            storage,
            key: key.to_string(),
        };
        Self::with(uri, len, source, tail.into_iter().collect())
    }

    fn with(uri: String, len: u64, source: Source, cache: Vec<(u64, Bytes)>) -> Self {
        FileReader(Arc::new(Inner {
            uri,
            len,
            source: Arc::new(source),
            cache: Mutex::new(cache),
        }))
    }

    /// Another reader of the same file, sharing nothing fetched after this call: a unit of work
    /// that prefetches its own ranges frees them when it is done.
    pub fn view(&self) -> Self {
        let cache = self.cache().clone();
        FileReader(Arc::new(Inner {
            uri: self.0.uri.clone(),
            len: self.0.len,
            source: self.0.source.clone(),
            cache: Mutex::new(cache),
        }))
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, Vec<(u64, Bytes)>> {
        self.0.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn len(&self) -> u64 {
        self.0.len
    }

    pub fn is_empty(&self) -> bool {
        self.0.len == 0
    }

    pub fn uri(&self) -> &str {
        &self.0.uri
    }

    pub fn is_local(&self) -> bool {
        matches!(*self.0.source, Source::Local(_))
    }

    /// The fetched chunk holding byte `pos`: its start and bytes (the cache is sorted by start).
    fn chunk_at(&self, pos: u64) -> Option<(u64, Bytes)> {
        let cache = self.cache();
        let i = cache
            .partition_point(|(start, _)| *start <= pos)
            .checked_sub(1)?;
        let (start, b) = &cache[i];
        (pos < start + b.len() as u64).then(|| (*start, b.clone()))
    }

    /// Bytes `range` from what was fetched: a slice of one chunk, or the pieces of touching
    /// chunks copied together (a column chunk that runs into the tail fetched at open).
    fn cached(&self, range: &Range<u64>) -> Option<Bytes> {
        let (start, b) = self.chunk_at(range.start)?;
        let end = start + b.len() as u64;
        if range.end <= end {
            return Some(b.slice((range.start - start) as usize..(range.end - start) as usize));
        }
        let mut joined = Vec::with_capacity((range.end - range.start) as usize);
        joined.extend_from_slice(&b[(range.start - start) as usize..]);
        let mut pos = end;
        while pos < range.end {
            let (start, b) = self.chunk_at(pos)?;
            let take = (range.end.min(start + b.len() as u64) - pos) as usize;
            let from = (pos - start) as usize;
            joined.extend_from_slice(&b[from..from + take]);
            pos += take as u64;
        }
        Some(Bytes::from(joined))
    }

    /// The fetched bytes from `pos` to the end of the chunk holding it.
    fn cached_from(&self, pos: u64) -> Option<Bytes> {
        let (start, b) = self.chunk_at(pos)?;
        Some(b.slice((pos - start) as usize..))
    }

    /// Bytes `range` of the file (cut at its end).
    pub fn bytes(&self, range: Range<u64>) -> io::Result<Bytes> {
        let range = range.start.min(self.0.len)..range.end.min(self.0.len);
        match &*self.0.source {
            Source::Local(file) => {
                let mut buf = vec![0u8; (range.end - range.start) as usize];
                let n = read_at(file, &mut buf, range.start)?;
                buf.truncate(n);
                Ok(Bytes::from(buf))
            }
            Source::Remote { storage, key } => match self.cached(&range) {
                Some(b) => Ok(b),
                None if range.is_empty() => Ok(Bytes::new()),
                None => storage.get_range(key, range),
            },
        }
    }

    /// Fill `buf` from `offset` as far as the file allows; returns the bytes read.
    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        if let Source::Local(file) = &*self.0.source {
            return read_at(file, buf, offset);
        }
        let b = self.bytes(offset..offset.saturating_add(buf.len() as u64))?;
        buf[..b.len()].copy_from_slice(&b);
        Ok(b.len())
    }

    /// Whether every byte of `ranges` of a remote object was fetched already (reading them makes
    /// no request); never for a local file, which is read each time.
    pub fn holds(&self, ranges: &[Range<u64>]) -> bool {
        !self.is_local() && self.missing(ranges).is_empty()
    }

    /// The parts of `ranges` (merged, cut at the file's end) not fetched yet.
    fn missing(&self, ranges: &[Range<u64>]) -> Vec<Range<u64>> {
        let cache = self.cache();
        merge(ranges)
            .into_iter()
            .map(|r| r.start.min(self.0.len)..r.end.min(self.0.len))
            .flat_map(|r| gaps(&cache, r))
            .collect()
    }

    /// Fetch `ranges` of a remote object ahead of the reads that need them (nothing for a local
    /// file): the store merges close ranges and fetches them concurrently.
    pub fn prefetch(&self, ranges: &[Range<u64>]) -> io::Result<()> {
        let Source::Remote { storage, key } = &*self.0.source else {
            return Ok(());
        };
        // Only the bytes not fetched yet: the column chunks of a small file run into the tail
        // fetched at open, and asking for them whole read those bytes twice.
        let missing = self.missing(ranges);
        if missing.is_empty() {
            return Ok(());
        }
        let got = storage.get_ranges(key, &missing)?;
        let mut cache = self.cache();
        cache.extend(missing.iter().map(|r| r.start).zip(got));
        cache.sort_by_key(|(start, _)| *start);
        Ok(())
    }
}

/// The parts of `range` that no chunk of `cache` (sorted by start) holds.
fn gaps(cache: &[(u64, Bytes)], range: Range<u64>) -> Vec<Range<u64>> {
    let mut out = Vec::new();
    let mut pos = range.start;
    for (start, b) in cache {
        let end = start + b.len() as u64;
        if end <= pos {
            continue;
        }
        if *start >= range.end {
            break;
        }
        if *start > pos {
            out.push(pos..*start);
        }
        pos = end;
        if pos >= range.end {
            break;
        }
    }
    if pos < range.end {
        out.push(pos..range.end);
    }
    out
}

/// Sorted ranges with overlapping or touching ones merged.
fn merge(ranges: &[Range<u64>]) -> Vec<Range<u64>> {
    let mut sorted: Vec<Range<u64>> = ranges.to_vec();
    sorted.sort_by_key(|r| r.start);
    let mut out: Vec<Range<u64>> = Vec::with_capacity(sorted.len());
    for r in sorted {
        match out.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

/// A `Read` from an offset of a [`FileReader`] (page headers; their pages come as `get_bytes`).
pub struct Cursor {
    reader: FileReader,
    pos: u64,
    /// Bytes fetched ahead of `pos`.
    buffered: Bytes,
}

/// Bytes read ahead by a [`Cursor`] when they are not in the cache: enough for a page header.
const READ_AHEAD: u64 = 16 << 10;

impl Read for Cursor {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.buffered.is_empty() {
            self.buffered = if self.reader.is_local() {
                self.reader
                    .bytes(self.pos..self.pos + out.len().max(8 << 10) as u64)?
            } else if let Some(b) = self.reader.cached_from(self.pos) {
                b // a page header inside a prefetched column chunk
            } else {
                self.reader
                    .bytes(self.pos..self.pos + READ_AHEAD.max(out.len() as u64))?
            };
        }
        let n = out.len().min(self.buffered.len());
        out[..n].copy_from_slice(&self.buffered[..n]);
        self.buffered = self.buffered.slice(n..);
        self.pos += n as u64;
        Ok(n)
    }
}

impl parquet::file::reader::Length for FileReader {
    fn len(&self) -> u64 {
        self.0.len
    }
}

impl parquet::file::reader::ChunkReader for FileReader {
    type T = Cursor;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Cursor> {
        Ok(Cursor {
            reader: self.clone(),
            pos: start,
            buffered: Bytes::new(),
        })
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        let b = self.bytes(start..start + length as u64)?;
        if b.len() != length {
            return Err(parquet::errors::ParquetError::EOF(format!(
                "{}: expected {length} bytes at offset {start}, the file has {}",
                self.0.uri,
                b.len()
            )));
        }
        Ok(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_ranges() {
        assert_eq!(
            merge(&[5..7, 0..2, 1..3, 7..9, 20..21]),
            [0..3, 5..9, 20..21]
        );
        assert!(merge(&[]).is_empty());
    }

    #[test]
    fn gaps_of_a_range() {
        let c = |s: u64, n: usize| (s, Bytes::from(vec![0u8; n]));
        let cache = [c(10, 5), c(20, 10)];
        assert_eq!(gaps(&cache, 0..40), [0..10, 15..20, 30..40]);
        assert_eq!(gaps(&cache, 12..25), vec![15..20]);
        assert!(gaps(&cache, 21..29).is_empty());
        assert_eq!(gaps(&[], 3..4), vec![3..4]);
    }

    /// An object in memory that records the ranges asked of it.
    #[derive(Debug)]
    struct Recorded {
        data: Vec<u8>,
        asked: Mutex<Vec<Range<u64>>>,
    }

    impl Storage for Recorded {
        fn uri(&self, key: &str) -> String {
            format!("mem://{key}")
        }
        fn hadoop_path(&self, key: &str) -> String {
            self.uri(key)
        }
        fn hadoop_uri(&self, key: &str) -> String {
            self.uri(key)
        }
        fn join(&self, key: &str, rel: &str) -> String {
            format!("{key}/{rel}")
        }
        fn list(&self, _: &str, _: Option<&str>, _: bool) -> io::Result<Vec<super::super::Entry>> {
            Ok(Vec::new())
        }
        fn get(&self, _: &str) -> io::Result<Bytes> {
            self.get_range("", 0..self.data.len() as u64)
        }
        fn get_range(&self, _: &str, range: Range<u64>) -> io::Result<Bytes> {
            self.asked.lock().unwrap().push(range.clone());
            Ok(Bytes::copy_from_slice(
                &self.data[range.start as usize..range.end as usize],
            ))
        }
        fn head(&self, _: &str) -> io::Result<u64> {
            Ok(self.data.len() as u64)
        }
        fn put_if_absent(&self, _: &str, _: &[u8]) -> io::Result<bool> {
            Ok(false)
        }
        fn put(&self, _: &str, _: &[u8]) -> io::Result<()> {
            Ok(())
        }
        fn delete(&self, _: &str) -> io::Result<()> {
            Ok(())
        }
        fn open(self: Arc<Self>, _: &str, tail: u64) -> io::Result<FileReader> {
            let len = self.data.len() as u64;
            let start = len.saturating_sub(tail);
            let bytes = self.get_range("", start..len)?;
            Ok(FileReader::remote(self, "k", len, Some((start, bytes))))
        }
        fn key_of(&self, absolute: &str) -> Result<String, String> {
            Ok(absolute.to_string())
        }
    }

    #[test]
    fn prefetch_asks_only_for_bytes_not_fetched() {
        let data: Vec<u8> = (0..40u8).collect();
        let store = Arc::new(Recorded {
            data: data.clone(),
            asked: Mutex::new(Vec::new()),
        });
        let r = store.clone().open("k", 8).unwrap(); // the tail: bytes 32..40
                                                     // A column chunk running into the tail, and one inside it.
        r.prefetch(&[4..36, 33..38]).unwrap();
        assert_eq!(*store.asked.lock().unwrap(), [32..40, 4..32]);
        // Reads across the two fetched pieces come from memory, whole.
        assert_eq!(&r.bytes(4..36).unwrap()[..], &data[4..36]);
        assert_eq!(&r.bytes(30..40).unwrap()[..], &data[30..40]);
        let mut c = parquet::file::reader::ChunkReader::get_read(&r, 28).unwrap();
        let mut got = Vec::new();
        c.read_to_end(&mut got).unwrap();
        assert_eq!(got, &data[28..]);
        assert_eq!(store.asked.lock().unwrap().len(), 2);
        // Nothing new to fetch: no request.
        r.prefetch(&[10..20, 35..40]).unwrap();
        assert_eq!(store.asked.lock().unwrap().len(), 2);
        assert!(r.holds(&[4..40, 50..60]));
        assert!(!r.holds(&[0..8, 8..9]));
    }

    #[test]
    fn local_reads_and_cursor() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"0123456789").unwrap();
        let r = FileReader::local(std::fs::File::open(&p).unwrap(), "f").unwrap();
        assert_eq!(r.len(), 10);
        assert_eq!(&r.bytes(3..6).unwrap()[..], b"345");
        assert_eq!(&r.bytes(8..20).unwrap()[..], b"89");
        let mut c = parquet::file::reader::ChunkReader::get_read(&r, 4).unwrap();
        let mut s = String::new();
        c.read_to_string(&mut s).unwrap();
        assert_eq!(s, "456789");
        assert!(parquet::file::reader::ChunkReader::get_bytes(&r, 8, 5).is_err());
        assert!(!r.holds(&[0..1, 1..2]), "a local file is read each time");
    }
}
