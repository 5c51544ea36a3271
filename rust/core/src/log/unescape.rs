//! The text of the JSON string literals a log reader kept as found (stats literals). Stats escape
//! a quote every few bytes, so the common case, `\"` and `\/` only, is squeezed 16 bytes at a
//! time; other escapes take a general path.

use std::borrow::Cow;
use std::fmt;

/// The text of a JSON string literal that parsed when it was read (so this cannot fail).
pub(crate) fn unescape(literal: &str) -> Cow<'_, str> {
    let body = &literal[1..literal.len() - 1];
    if memchr::memchr(b'\\', body.as_bytes()).is_none() {
        return Cow::Borrowed(body);
    }
    // Squeezed straight into the String's bytes (not through the reused buffer and a copy).
    let mut bytes = Vec::new();
    if let Some(n) = squeeze(body.as_bytes(), &mut bytes) {
        bytes.truncate(n);
        // SAFETY: `body` is UTF-8 and squeeze only dropped ASCII bytes (see `squeeze`).
        return Cow::Owned(unsafe { String::from_utf8_unchecked(bytes) });
    }
    let mut text = String::with_capacity(body.len());
    unescape_body(body, &mut text);
    Cow::Owned(text)
}

/// Write the text of a validated JSON string literal to `out` in one write: serde_json would
/// allocate a String per literal; this unescapes into one reused buffer.
pub(crate) fn unescape_into(literal: &str, out: &mut impl fmt::Write) -> fmt::Result {
    thread_local! {
        static BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let body = &literal[1..literal.len() - 1];
    if memchr::memchr(b'\\', body.as_bytes()).is_none() {
        return out.write_str(body);
    }
    BUF.with_borrow_mut(|buf| {
        if let Some(n) = squeeze(body.as_bytes(), buf) {
            // SAFETY: `body` is UTF-8 and squeeze only dropped ASCII bytes (see `squeeze`).
            return out.write_str(unsafe { std::str::from_utf8_unchecked(&buf[..n]) });
        }
        let mut text = String::with_capacity(body.len());
        unescape_body(body, &mut text);
        out.write_str(&text)
    })
}

/// `body` without the backslash of each `\"` and `\/`, written to the start of `buf` (which only
/// grows, so a reused one is not zeroed again); returns the length. None when `body` has another
/// escape (or a trailing backslash), for [`unescape_body`]. Only ASCII backslashes are removed,
/// each followed by an ASCII byte, and the bytes kept keep their order: an ASCII byte is never
/// part of a multi-byte UTF-8 sequence, so the result of a UTF-8 `body` is UTF-8 (the callers rely
/// on this to skip a second validation).
fn squeeze(body: &[u8], buf: &mut Vec<u8>) -> Option<usize> {
    // Room for the 16-byte stores of the block loop, which may run past the text written.
    if buf.len() < body.len() + 16 {
        buf.resize(body.len() + 16, 0);
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("ssse3") {
        // SAFETY: SSSE3 is available (checked just above), and `buf` holds `body.len() + 16`
        // bytes, as `squeeze_blocks` requires.
        let (read, written, pending) = unsafe { squeeze_blocks(body, buf) }?;
        return squeeze_tail(body, read, pending, buf, written);
    }
    squeeze_tail(body, 0, false, buf, 0)
}

/// Byte by byte from `read` (writing at `write`); `pending`: the byte at `read` follows a
/// backslash already dropped.
fn squeeze_tail(
    body: &[u8],
    mut read: usize,
    mut pending: bool,
    buf: &mut [u8],
    mut write: usize,
) -> Option<usize> {
    while read < body.len() {
        let c = body[read];
        read += 1;
        if c == b'\\' && !pending {
            pending = true;
            continue;
        }
        if pending && c != b'"' && c != b'/' {
            return None;
        }
        pending = false;
        buf[write] = c;
        write += 1;
    }
    (!pending).then_some(write)
}

#[cfg(target_arch = "x86_64")]
/// For each mask of the bytes to drop from 8: the indices (plus `offset`) of the bytes kept, in
/// order, for `pshufb` (0x80 makes a zero byte).
const fn keep_table(offset: u8) -> [[u8; 16]; 256] {
    let mut t = [[0x80u8; 16]; 256];
    let mut mask = 0;
    while mask < 256 {
        let (mut i, mut k) = (0, 0);
        while i < 8 {
            if mask & (1 << i) == 0 {
                t[mask][k] = i as u8 + offset;
                k += 1;
            }
            i += 1;
        }
        mask += 1;
    }
    t
}

#[cfg(target_arch = "x86_64")]
static KEEP_LOW: [[u8; 16]; 256] = keep_table(0);
#[cfg(target_arch = "x86_64")]
static KEEP_HIGH: [[u8; 16]; 256] = keep_table(8);

/// The whole 16-byte blocks of `body`: each backslash must be followed by `"` or `/` (None
/// otherwise) and is dropped by a shuffle of each half of the block. Returns the bytes read and
/// written, and whether the last block ended with a backslash.
///
/// # Safety
/// The CPU has SSSE3, and `buf.len() >= body.len() + 16`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "ssse3")]
unsafe fn squeeze_blocks(body: &[u8], buf: &mut [u8]) -> Option<(usize, usize, bool)> {
    use std::arch::x86_64::*;
    let (mut read, mut write, mut pending) = (0usize, 0usize, 0u32);
    while read + 16 <= body.len() {
        // SAFETY: `read + 16 <= body.len()`; a store at `write <= read + 8` ends within
        // `body.len() + 8 < buf.len()`.
        unsafe {
            let v = _mm_loadu_si128(body.as_ptr().add(read).cast());
            let eq = |c: u8| _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(c as i8))) as u32;
            let slashes = eq(b'\\');
            let escaped = ((slashes << 1) | pending) & 0xFFFF;
            if escaped & !(eq(b'"') | eq(b'/')) != 0 {
                return None;
            }
            pending = slashes >> 15;
            for (half, table) in [(slashes & 0xFF, &KEEP_LOW), (slashes >> 8, &KEEP_HIGH)] {
                let order = _mm_loadu_si128(table[half as usize].as_ptr().cast());
                let kept = _mm_shuffle_epi8(v, order);
                _mm_storeu_si128(buf.as_mut_ptr().add(write).cast(), kept);
                write += 8 - half.count_ones() as usize;
            }
        }
        read += 16;
    }
    Some((read, write, pending == 1))
}

/// Append the unescaped `body` (a literal without its quotes) to `buf`.
fn unescape_body(mut rest: &str, buf: &mut String) {
    // `\\` is ASCII: every index memchr finds is a char boundary.
    while let Some(i) = memchr::memchr(b'\\', rest.as_bytes()) {
        buf.push_str(&rest[..i]);
        let esc = &rest[i + 1..];
        let Some(&kind) = esc.as_bytes().first() else {
            return; // a lone trailing backslash (never in a validated literal)
        };
        let (ch, used) = match kind {
            b'"' => ('"', 1),
            b'b' => ('\u{8}', 1),
            b'f' => ('\u{c}', 1),
            b'n' => ('\n', 1),
            b'r' => ('\r', 1),
            b't' => ('\t', 1),
            b'u' => escaped_unicode(esc),
            _ => esc
                .chars()
                .next()
                .map_or(('\u{fffd}', 1), |c| (c, c.len_utf8())),
        };
        buf.push(ch);
        rest = &esc[used..];
    }
    buf.push_str(rest);
}

/// `esc` starts after the backslash at `uXXXX`: the character and the bytes it used, joining a
/// surrogate pair `\uD83D\uDE00`.
fn escaped_unicode(esc: &str) -> (char, usize) {
    let hex = |s: &str| s.get(..4).and_then(|h| u32::from_str_radix(h, 16).ok());
    let Some(hi) = esc.get(1..).and_then(hex) else {
        return ('\u{fffd}', 1);
    };
    if (0xD800..0xDC00).contains(&hi) {
        let lo = esc
            .get(5..)
            .and_then(|r| r.strip_prefix("\\u"))
            .and_then(hex);
        if let Some(lo @ 0xDC00..0xE000) = lo {
            let c = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
            return (char::from_u32(c).unwrap_or('\u{fffd}'), 11);
        }
    }
    (char::from_u32(hi).unwrap_or('\u{fffd}'), 5)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::actions::RawStats;

    #[test]
    fn unescape_into_matches_serde_json() {
        let cases = [
            r#""plain""#,
            r#""{\"numRecords\":3,\"minValues\":{\"s\":\"a\\\\b\/c\"}}""#,
            r#""tab\there\nnew\r\b\f end""#,
            r#""\u00e9\u4e2d\ud83d\ude00 \u0041""#,
            r#""\"\"""#,
            r#""""#,
            r#""ünïcödé \\""#,
            r#""ü\"é\\\"x\/y\nz""#,
            r#""\/\/\\""#,
        ];
        for lit in cases {
            let want: String = serde_json::from_str(lit).unwrap();
            let mut got = String::new();
            unescape_into(lit, &mut got).unwrap();
            assert_eq!(got, want, "{lit}");
            assert_eq!(RawStats::Literal(lit).text(), want);
        }
    }

    /// Every string serde_json escapes (quotes, backslashes, control characters, non-ASCII)
    /// comes back as it was, whichever path unescapes it.
    #[test]
    fn unescape_round_trips_serde_json_escaping() {
        let alphabet = [
            'a', '"', '\\', '/', 'é', '中', '\n', '\u{1}', '😀', '{', ':',
        ];
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        for len in 0..600 {
            // Longer than a block or two as well, so the block loop and its tail both run.
            let text: String = (0..len % 60)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    alphabet[(seed % alphabet.len() as u64) as usize]
                })
                .collect();
            let lit = serde_json::to_string(&text).unwrap();
            let mut got = String::new();
            unescape_into(&lit, &mut got).unwrap();
            assert_eq!(got, text, "{lit}");
            assert_eq!(unescape(&lit), text, "{lit}");
        }
    }

    /// The block loop and the byte loop agree on every arrangement of plain bytes, `\"`, `\/`
    /// and other escapes around the 16-byte block edges.
    #[test]
    fn squeeze_blocks_match_the_byte_loop() {
        let pieces: [&[u8]; 6] = [b"a", b"\\\"", b"\\/", b"\\\\", b"\\n", b"\xc3\xa9"];
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        for _ in 0..20_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let n = (seed % 48) as usize;
            let (mut body, mut only_quotes) = (Vec::new(), true);
            let mut s = seed;
            for _ in 0..n {
                s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                // Mostly plain bytes and quotes, as in stats.
                let k = match (s >> 60) as usize {
                    k if k < 8 => 0,
                    k if k < 12 => 1,
                    k => k - 10,
                };
                only_quotes &= k != 3 && k != 4;
                body.extend_from_slice(pieces[k]);
            }
            let (mut fast, mut slow) = (Vec::new(), vec![0; body.len() + 16]);
            let got = squeeze(&body, &mut fast).map(|n| fast[..n].to_vec());
            let want = squeeze_tail(&body, 0, false, &mut slow, 0).map(|n| slow[..n].to_vec());
            assert_eq!(got, want, "{}", String::from_utf8_lossy(&body));
            // Only `\"` and `\/` escapes: squeezed, never sent to the general path.
            assert_eq!(
                got.is_some(),
                only_quotes,
                "{}",
                String::from_utf8_lossy(&body)
            );
        }
    }
}
