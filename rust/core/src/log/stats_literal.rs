//! Finding an add's `stats` string literal at the end of a commit line without tokenizing it.
//!
//! Stats literals are most of a big commit's bytes, and they are dense with `\"` escapes, at each of
//! which a JSON tokenizer stops. Writers put `stats` last in `add` (delta-spark, delta-rs and
//! delta-occ all do), so the literal is usually the line's tail. [`split`] checks that tail with a
//! block test that handles a 16-byte run of `\"` pairs in a few instructions, and hands serde the
//! line with the literal replaced by `""`. serde stays the parser: the caller uses the literal only
//! if serde finds the add's stats exactly at that placeholder ([`Split::confirmed`]); otherwise it
//! parses the original line.

/// A line whose trailing stats literal was cut out.
pub(crate) struct Split<'l> {
    /// The literal, quotes and escapes included, as in the line.
    pub literal: &'l str,
    /// Where the `""` placeholder starts in the shortened line.
    at: usize,
}

impl Split<'_> {
    /// Whether serde, parsing `short`, found the add's stats to be the placeholder.
    pub fn confirmed(&self, short: &str, parsed: Option<&str>) -> bool {
        parsed.is_some_and(|p| {
            p == "\"\"" && p.as_ptr() as usize == short.as_ptr() as usize + self.at
        })
    }
}

/// Build the finder [`split`] takes once per batch of lines.
pub(crate) fn key_finder() -> memchr::memmem::Finder<'static> {
    memchr::memmem::Finder::new(KEY)
}

const KEY: &[u8] = b"\"stats\"";

/// Literals shorter than this are not worth the detour.
const MIN_LITERAL: usize = 48;

/// If `line` is an add whose last field is a stats string literal, write the line with that literal
/// replaced by `""` into `short` and return where the literal is.
pub(crate) fn split<'l>(
    line: &'l str,
    short: &mut String,
    key: &memchr::memmem::Finder,
) -> Option<Split<'l>> {
    let b = line.as_bytes();
    if !b.starts_with(b"{\"add\"") {
        return None;
    }
    let mut end = b.len();
    for _ in 0..2 {
        end = trim_back(b, end);
        if end == 0 || b[end - 1] != b'}' {
            return None;
        }
        end -= 1;
    }
    end = trim_back(b, end);
    let close = end.checked_sub(1).filter(|&c| b[c] == b'"')?;
    // Inside a string every quote is escaped, so an unescaped `"stats"` is a key (of the add, or
    // of a nested object: then the body check below or serde's confirmation fails).
    let key = key.find(&b[..close])?;
    let colon = trim_front(b, key + KEY.len());
    if b.get(colon) != Some(&b':') {
        return None;
    }
    let open = trim_front(b, colon + 1);
    if open >= close
        || b[open] != b'"'
        || close - open + 1 < MIN_LITERAL
        || !is_string_body(&b[open + 1..close])
    {
        return None;
    }
    short.clear();
    short.push_str(&line[..open]);
    short.push_str("\"\"");
    short.push_str(&line[close + 1..]);
    Some(Split {
        literal: &line[open..=close],
        at: open,
    })
}

fn is_ws(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

fn trim_back(b: &[u8], mut end: usize) -> usize {
    while end > 0 && is_ws(b[end - 1]) {
        end -= 1;
    }
    end
}

fn trim_front(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && is_ws(b[i]) {
        i += 1;
    }
    i
}

/// Whether `body` is the inside of a valid JSON string: no control characters, every quote
/// escaped, every escape valid. Blocks made only of plain bytes and `\"` pairs are accepted whole;
/// the first other block sends the rest to the byte-by-byte check.
pub(crate) fn is_string_body(body: &[u8]) -> bool {
    let mut pending = 0u32; // 1: the previous block ended with a backslash
    let mut i = 0;
    while i + 16 <= body.len() {
        let (quotes, slashes, controls) = masks(body[i..i + 16].try_into().expect("16 bytes"));
        if controls != 0 || quotes != ((slashes << 1) | pending) & 0xFFFF {
            break;
        }
        pending = slashes >> 15;
        i += 16;
    }
    bytewise(body, i - pending as usize)
}

/// Bit k of each mask: byte k is `"`, `\`, or below 0x20.
#[cfg(target_arch = "x86_64")]
fn masks(block: &[u8; 16]) -> (u32, u32, u32) {
    use std::arch::x86_64::*;
    // SAFETY: SSE2 is part of the x86_64 baseline, and the load reads exactly the 16 bytes of `block`.
    unsafe {
        let x = _mm_loadu_si128(block.as_ptr().cast());
        let eq = |c: u8| _mm_movemask_epi8(_mm_cmpeq_epi8(x, _mm_set1_epi8(c as i8))) as u32;
        let low = _mm_cmpeq_epi8(_mm_max_epu8(x, _mm_set1_epi8(0x1F)), _mm_set1_epi8(0x1F));
        (eq(b'"'), eq(b'\\'), _mm_movemask_epi8(low) as u32)
    }
}

#[cfg(not(target_arch = "x86_64"))]
use masks_portable as masks;

#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn masks_portable(block: &[u8; 16]) -> (u32, u32, u32) {
    let (mut q, mut s, mut c) = (0u32, 0u32, 0u32);
    for (k, &x) in block.iter().enumerate() {
        q |= ((x == b'"') as u32) << k;
        s |= ((x == b'\\') as u32) << k;
        c |= ((x < 0x20) as u32) << k;
    }
    (q, s, c)
}

fn bytewise(body: &[u8], mut i: usize) -> bool {
    while i < body.len() {
        match body[i] {
            b'"' => return false,
            c if c < 0x20 => return false,
            b'\\' => {
                let n = match body.get(i + 1) {
                    Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => 2,
                    Some(b'u')
                        if body
                            .get(i + 2..i + 6)
                            .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) =>
                    {
                        6
                    }
                    _ => return false,
                };
                i += n;
            }
            _ => i += 1,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What serde_json says: is `"body"` one valid JSON string?
    fn serde_says(body: &[u8]) -> bool {
        let mut text = vec![b'"'];
        text.extend_from_slice(body);
        text.push(b'"');
        std::str::from_utf8(&text).is_ok_and(|t| serde_json::from_str::<String>(t).is_ok())
    }

    #[test]
    fn string_body_agrees_with_serde() {
        let pieces: [&[u8]; 12] = [
            b"a",
            b"\\\"",
            b"\\\\",
            b"\\n",
            b"\\u00e9",
            b"\\u00g9",
            b"\\x",
            b"\"",
            b"\x01",
            b"\\",
            b"{\\\"id\\\":1}",
            b"       ",
        ];
        // Deterministic walk over many concatenations, so blocks straddle every kind of piece.
        let mut seed = 0x9e3779b97f4a7c15u64;
        for _ in 0..20_000 {
            let mut body = Vec::new();
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let mut s = seed;
            for _ in 0..(s % 40) {
                s = s.rotate_left(5).wrapping_mul(0x2545F4914F6CDD1D);
                // Mostly the common pieces, now and then a rare one.
                let k = if s.is_multiple_of(8) {
                    (s >> 8) as usize % pieces.len()
                } else {
                    [0, 1, 10, 11][(s >> 8) as usize % 4]
                };
                body.extend_from_slice(pieces[k]);
            }
            assert_eq!(
                is_string_body(&body),
                serde_says(&body),
                "{:?}",
                String::from_utf8_lossy(&body)
            );
        }
    }

    #[test]
    fn masks_match_the_portable_version() {
        let bytes: Vec<u8> = (0..=255u8)
            .chain(b"\\\"\\\"ab\x1f \x00\x7f\x80".iter().copied())
            .collect();
        for w in bytes.windows(16) {
            let block: &[u8; 16] = w.try_into().unwrap();
            assert_eq!(masks(block), masks_portable(block));
        }
    }

    #[test]
    fn split_cuts_only_a_trailing_add_stats_string() {
        let stats =
            r#""{\"numRecords\":1,\"minValues\":{\"a\":\"x\"},\"maxValues\":{\"a\":\"y\"}}""#;
        let line = format!(
            r#"{{"add":{{"path":"p","partitionValues":{{}},"size":1,"modificationTime":0,"dataChange":true,"stats": {stats} }} }}"#
        );
        let mut short = String::new();
        let s = split(&line, &mut short, &key_finder()).expect("trailing literal");
        assert_eq!(s.literal, stats);
        assert!(short.ends_with(r#""stats": "" } }"#), "{short}");
        // Not a trailing add string: stats null, tags after stats, a remove, an escaped last quote.
        for line in [
            r#"{"add":{"path":"p","stats":null}}"#.to_string(),
            format!(r#"{{"add":{{"path":"p","stats":{stats},"tags":{{"a":"b"}}}}}}"#),
            format!(r#"{{"remove":{{"path":"p","stats":{stats}}}}}"#),
            format!(
                r#"{{"add":{{"path":"p","stats":{}\"}}}}"#,
                &stats[..stats.len() - 1]
            ),
        ] {
            assert!(split(&line, &mut short, &key_finder()).is_none(), "{line}");
        }
    }

    #[test]
    fn confirmed_needs_the_placeholder_itself() {
        let stats = format!("\"{}\"", "\\\"x\\\"".repeat(20));
        let line = format!(
            r#"{{"add":{{"path":"p","partitionValues":{{}},"size":1,"modificationTime":0,"dataChange":true,"stats":{stats}}}}}"#
        );
        let mut short = String::new();
        let s = split(&line, &mut short, &key_finder()).expect("trailing literal");
        let at = short.find("\"\"}").unwrap();
        assert!(s.confirmed(&short, Some(&short[at..at + 2])));
        assert!(!s.confirmed(&short, Some(&short[at + 1..at + 3])));
        assert!(!s.confirmed(&short, None));
    }
}
