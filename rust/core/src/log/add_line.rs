//! A fast path for the commonest line of a big commit: a plain `add` action.
//!
//! serde_json spends about 220 ns on each such line of a million-add commit, half of opening it
//! (measured on the `single_commit` bench table), most of it on generic machinery: field-name
//! dispatch, `Option` and `Box` moves, raw-value scans. Lines written by delta-spark, delta-rs and
//! delta-occ mostly share one flat shape with no whitespace or escapes outside `stats`:
//!
//! `{"add":{"path":"…","partitionValues":{…},"size":N,"modificationTime":N,"dataChange":B,"stats":"…"}}`
//!
//! [`parse`] reads exactly such lines, fields in any order, and returns `None` for anything else
//! (whitespace, escapes in the path, another field, a duplicate, a number that is not a plain
//! integer, stats not last). The caller then parses the line with serde as before. The accepted
//! grammar is a strict subset of JSON in which every line means the same as to serde; a test
//! holds the two to that on many generated lines.

use super::actions::{Actions, AddFile, PartitionInterner, StatsSink};
use super::stats_literal::is_string_body;

/// The fields of a plain add line, borrowed from it.
#[derive(Debug, PartialEq)]
pub(crate) struct PlainAdd<'l> {
    pub path: &'l str,
    /// The raw `partitionValues` object.
    pub partition_values: &'l str,
    pub size: i64,
    pub modification_time: i64,
    pub data_change: bool,
    /// The stats string literal, quotes and escapes kept; `None` for null or absent.
    pub stats: Option<&'l str>,
}

impl PlainAdd<'_> {
    /// Push the add onto `out`, as `JsonLine::into_actions` does for the same line.
    pub(crate) fn push_onto(
        self,
        out: &mut Actions,
        interner: &mut PartitionInterner,
        sink: &mut StatsSink,
    ) -> Result<(), String> {
        let stats = sink.take(self.stats, out.adds.len());
        out.adds.push(AddFile {
            path: self.path.into(),
            partition_values: interner.json(self.partition_values)?,
            size: self.size,
            modification_time: self.modification_time,
            data_change: self.data_change,
            stats,
            deletion_vector: None,
            extra: None,
        });
        Ok(())
    }
}

const PREFIX: &[u8] = b"{\"add\":{";
const SUFFIX: &[u8] = b"}}";

const PATH: u8 = 1;
const PARTITION_VALUES: u8 = 2;
const SIZE: u8 = 4;
const MODIFICATION_TIME: u8 = 8;
const DATA_CHANGE: u8 = 16;
const STATS: u8 = 32;
const REQUIRED: u8 = PATH | PARTITION_VALUES | SIZE | MODIFICATION_TIME | DATA_CHANGE;

/// The add of `line` if it has the plain shape described above.
pub(crate) fn parse(line: &str) -> Option<PlainAdd<'_>> {
    let b = line.as_bytes();
    if !b.starts_with(PREFIX) || !b.ends_with(SUFFIX) {
        return None;
    }
    let mut add = PlainAdd {
        path: "",
        partition_values: "",
        size: 0,
        modification_time: 0,
        data_change: false,
        stats: None,
    };
    let mut seen = 0u8;
    let mut i = PREFIX.len();
    loop {
        let after = plain_string(b, i)?;
        let key = &b[i + 1..after - 1];
        i = after;
        if b.get(i) != Some(&b':') {
            return None;
        }
        i += 1;
        let bit = match key {
            b"path" => {
                let after = plain_string(b, i)?;
                add.path = &line[i + 1..after - 1];
                i = after;
                PATH
            }
            b"partitionValues" => {
                let after = plain_object(b, i)?;
                add.partition_values = &line[i..after];
                i = after;
                PARTITION_VALUES
            }
            b"size" => {
                (add.size, i) = integer(b, i)?;
                SIZE
            }
            b"modificationTime" => {
                (add.modification_time, i) = integer(b, i)?;
                MODIFICATION_TIME
            }
            b"dataChange" => {
                (add.data_change, i) = boolean(b, i)?;
                DATA_CHANGE
            }
            b"stats" => {
                (add.stats, i) = stats(line, i)?;
                STATS
            }
            _ => return None,
        };
        if seen & bit != 0 {
            return None;
        }
        seen |= bit;
        match b.get(i) {
            Some(b',') => i += 1,
            Some(b'}') => break,
            _ => return None,
        }
    }
    (i + SUFFIX.len() == b.len() && seen & REQUIRED == REQUIRED).then_some(add)
}

/// A string literal at `i` with no escapes or control characters: the index after its closing
/// quote.
fn plain_string(b: &[u8], i: usize) -> Option<usize> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let rest = &b[i + 1..];
    let end = memchr::memchr2(b'"', b'\\', rest)?;
    let body = &rest[..end];
    if rest[end] != b'"' || body.iter().any(|&c| c < 0x20) {
        return None;
    }
    Some(i + end + 2)
}

/// `{}` or an object of plain keys to plain strings or `null`, at `i`: the index after it.
fn plain_object(b: &[u8], mut i: usize) -> Option<usize> {
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    if b.get(i) == Some(&b'}') {
        return Some(i + 1);
    }
    loop {
        i = plain_string(b, i)?;
        if b.get(i) != Some(&b':') {
            return None;
        }
        i += 1;
        i = if b[i..].starts_with(b"null") {
            i + 4
        } else {
            plain_string(b, i)?
        };
        match b.get(i) {
            Some(b',') => i += 1,
            Some(b'}') => return Some(i + 1),
            _ => return None,
        }
    }
}

/// A JSON integer at `i` of at most 18 digits (so it fits an i64 without checks): its value and
/// the index after it. Fractions and exponents end the number where they start, so the caller
/// rejects them as a bad separator.
fn integer(b: &[u8], mut i: usize) -> Option<(i64, usize)> {
    let negative = b.get(i) == Some(&b'-');
    i += negative as usize;
    let start = i;
    let mut value = 0i64;
    while let Some(d @ b'0'..=b'9') = b.get(i) {
        value = value * 10 + (d - b'0') as i64;
        i += 1;
    }
    let digits = i - start;
    // JSON forbids leading zeros.
    if digits == 0 || digits > 18 || (b[start] == b'0' && digits > 1) {
        return None;
    }
    Some((if negative { -value } else { value }, i))
}

fn boolean(b: &[u8], i: usize) -> Option<(bool, usize)> {
    if b[i..].starts_with(b"true") {
        Some((true, i + 4))
    } else if b[i..].starts_with(b"false") {
        Some((false, i + 5))
    } else {
        None
    }
}

/// `null`, or a string literal that ends right before the line's closing `}}` (the literal is
/// taken whole after checking that its body is one valid JSON string; a literal anywhere else is
/// left to serde).
fn stats(line: &str, i: usize) -> Option<(Option<&str>, usize)> {
    let b = line.as_bytes();
    if b[i..].starts_with(b"null") {
        return Some((None, i + 4));
    }
    let close = b.len().checked_sub(SUFFIX.len() + 1)?;
    if b.get(i) != Some(&b'"') || close <= i || b[close] != b'"' {
        return None;
    }
    is_string_body(&b[i + 1..close]).then(|| (Some(&line[i..=close]), close + 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::Rng;

    /// What serde reads from `line` as an add, in the fast path's terms; None when it fails or is
    /// not exactly one add.
    fn serde_reads(line: &str) -> Option<PlainAdd<'_>> {
        use serde_json::value::RawValue;
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Line<'a> {
            #[serde(borrow)]
            add: Add<'a>,
        }
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        struct Add<'a> {
            path: String,
            #[serde(borrow)]
            partition_values: &'a RawValue,
            size: i64,
            modification_time: i64,
            data_change: bool,
            #[serde(borrow, default)]
            stats: Option<&'a RawValue>,
        }
        let parsed: Line = serde_json::from_str(line).ok()?;
        let a = parsed.add;
        // Borrow the path back out of the line so the two results compare as values.
        let at = line.find(&format!("\"{}\"", a.path))? + 1;
        Some(PlainAdd {
            path: &line[at..at + a.path.len()],
            partition_values: a.partition_values.get(),
            size: a.size,
            modification_time: a.modification_time,
            data_change: a.data_change,
            stats: a
                .stats
                .map(RawValue::get)
                .filter(|s| *s != "null")
                .map(|s| {
                    let at = s.as_ptr() as usize - line.as_ptr() as usize;
                    &line[at..at + s.len()]
                }),
        })
    }

    const STATS: &str = r#""{\"numRecords\":100,\"minValues\":{\"id\":0,\"s\":\"a\\\\b\"},\"maxValues\":{\"id\":99}}""#;

    fn plain_line() -> String {
        format!(
            r#"{{"add":{{"path":"part-0001.parquet","partitionValues":{{"d":"2024-01-01","e":null}},"size":103560670,"modificationTime":1704067195865,"dataChange":true,"stats":{STATS}}}}}"#
        )
    }

    #[test]
    fn reads_the_plain_shape() {
        let line = plain_line();
        let add = parse(&line).expect("plain add");
        assert_eq!(add.path, "part-0001.parquet");
        assert_eq!(add.partition_values, r#"{"d":"2024-01-01","e":null}"#);
        assert_eq!(
            (add.size, add.modification_time),
            (103560670, 1704067195865)
        );
        assert!(add.data_change);
        assert_eq!(add.stats, Some(STATS));
        assert_eq!(Some(add), serde_reads(&line));
    }

    #[test]
    fn leaves_every_other_shape_to_serde() {
        let line = plain_line();
        let others = [
            line.replace("{\"add\":{", "{\"add\": {"),
            line.replace("part-0001", "part\\u0030001"),
            line.replace("part-0001", "a\\\\b"),
            line.replace("part-0001", "a\tb"),
            line.replace("\"size\":103560670", "\"size\":103560670.0"),
            line.replace("\"size\":103560670", "\"size\":1e3"),
            line.replace("\"size\":103560670", "\"size\":0103560670"),
            line.replace("\"size\":103560670", "\"size\":9223372036854775807"),
            line.replace("\"size\":103560670", "\"size\":\"1\""),
            line.replace("\"size\":103560670,", ""),
            line.replace("\"dataChange\":true", "\"dataChange\":tru"),
            line.replace("\"dataChange\":true", "\"dataChange\":true,\"tags\":{}"),
            line.replace("\"dataChange\":true", "\"dataChange\":true,\"size\":1"),
            line.replace("\"e\":null", "\"e\":nul"),
            line.replace("\"e\":null", "\"e\":1"),
            line.replace(STATS, "\"x\\\"}}"),
            line.replace(STATS, "{}"),
            format!("{line} "),
            line.replace("}}", "},\"txn\":{}}"),
            line.replace("{\"add\"", "{\"remove\""),
        ];
        for other in others {
            assert_eq!(parse(&other), None, "{other}");
        }
        // Nothing may follow the add object (here without stats, so only the end check decides).
        let bare = r#"{"add":{"path":"p","partitionValues":{},"size":1,"modificationTime":2,"dataChange":true}}"#;
        assert!(parse(bare).is_some());
        let inner = &bare[7..bare.len() - 1];
        for other in [
            format!(r#"{{"add":{inner},"txn":{{}}}}"#),
            format!(r#"{{"add":{inner},"add":{inner}}}"#),
            format!(r#"{{"add":{inner}}}}}"#),
        ] {
            assert_eq!(parse(&other), None, "{other}");
        }
    }

    /// Lines built from pieces, plain and not: whatever the fast path accepts, serde reads the
    /// same way, and it accepts a good share of them (the test would be empty otherwise).
    #[test]
    fn agrees_with_serde_on_generated_lines() {
        let fields: [&[&str]; 6] = [
            &[
                r#""path":"p.parquet""#,
                r#""path":"a b%20c""#,
                r#""path":"q\"x""#,
                r#""path":"""#,
                "\"path\":\"a\tb\"",
            ],
            &[
                r#""partitionValues":{}"#,
                r#""partitionValues":{"d":"1","e":null}"#,
                r#""partitionValues":{"d":1}"#,
                r#""partitionValues":{"d":"}"}"#,
                r#""partitionValues": {}"#,
            ],
            &[
                r#""size":0"#,
                r#""size":-5"#,
                r#""size":123456789012345678"#,
                r#""size":00"#,
                r#""size":-"#,
            ],
            &[
                r#""modificationTime":17"#,
                r#""modificationTime":1.5"#,
                r#""modificationTime":1E2"#,
            ],
            &[
                r#""dataChange":true"#,
                r#""dataChange":false"#,
                r#""dataChange":null"#,
            ],
            &[
                r#""stats":null"#,
                &format!(r#""stats":{STATS}"#),
                r#""stats":"""#,
                r#""stats":"\q""#,
                r#""stats":"\u00e9""#,
            ],
        ];
        let mut rng = Rng(17);
        let mut accepted = 0;
        for _ in 0..20_000 {
            let mut picked: Vec<&str> = Vec::new();
            for opts in fields {
                if rng.below(12) != 0 {
                    // The first option, plain, most of the time.
                    let k = match rng.below(3) {
                        0 => rng.below(opts.len() as u64) as usize,
                        _ => 0,
                    };
                    picked.push(opts[k]);
                }
            }
            for k in (1..picked.len()).rev() {
                picked.swap(k, rng.below(k as u64 + 1) as usize);
            }
            if rng.below(20) == 0 {
                let dup = picked.first().copied().unwrap_or("\"x\":1");
                picked.push(dup);
            }
            let line = format!("{{\"add\":{{{}}}}}", picked.join(","));
            let fast = parse(&line);
            if fast.is_some() {
                accepted += 1;
                assert_eq!(fast, serde_reads(&line), "{line}");
            }
        }
        assert!(accepted > 2_000, "only {accepted} lines took the fast path");
    }
}
