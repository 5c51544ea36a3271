//! Locating the statistics a predicate needs in a file's stats JSON.
//!
//! serde_json parses the text (a visitor that builds nothing and keeps byte ranges of the needed
//! values) and, as it goes, records where every scalar value sits. That record is a *layout*:
//! the text is the layout's fixed fragments (keys, punctuation, whitespace) with scalar values
//! between them. The files of one commit nearly always share a layout and differ only in the
//! numbers, so the next text is first matched against the last layout: every fragment must be
//! byte-identical and every value a complete JSON token of the same kind (a number, a string
//! without escapes, the same literal). Such a text has the same parse tree as the learned one,
//! so the value ranges and their meanings carry over exactly. Anything else goes to serde, which
//! learns the new layout. Checking conflicts with a data predicate reads stats of every added
//! file; matching a layout is several times faster than parsing (benches/bench_checker.py).

use std::borrow::Cow;

use serde::de::{DeserializeSeed, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::expr::ColumnRef;

/// Byte ranges in the stats text of one referenced column's min, max and nullCount.
pub type Bounds = [Option<(usize, usize)>; 3];

/// What was located: per referenced column its value ranges, and `numRecords`.
#[derive(Debug, Default)]
pub struct Located {
    pub bounds: Vec<Bounds>,
    pub num_records: Option<i64>,
    layout: Layout,
    /// The columns the layout's roles refer to (address and length of the slice).
    layout_for: (usize, usize),
}

impl Located {
    /// Locate `columns`' statistics in `text`; false when the text is not a stats object serde
    /// can read (the file's stats then prune nothing).
    pub fn locate(&mut self, text: &str, columns: &[ColumnRef]) -> bool {
        self.bounds.clear();
        self.bounds.resize(columns.len(), [None; 3]);
        self.num_records = None;
        let key = (columns.as_ptr() as usize, columns.len());
        if self.layout_for == key
            && self.layout.usable
            && self
                .layout
                .matches(text, &mut self.bounds, &mut self.num_records)
        {
            return true;
        }
        for b in &mut self.bounds {
            *b = [None; 3];
        }
        self.num_records = None;
        self.layout_for = key;
        self.layout.learn_from(text);
        let seed = Top {
            names: columns,
            base: text.as_ptr() as usize,
            out: self,
        };
        let ok = seed
            .deserialize(&mut serde_json::Deserializer::from_str(text))
            .is_ok();
        self.layout.usable &= ok;
        if self.layout.usable {
            self.layout.classify();
        }
        ok
    }
}

/// The fixed fragments of a learned stats text and, between them, its scalar values.
#[derive(Debug, Default)]
struct Layout {
    text: String,
    slots: Vec<Slot>,
    usable: bool,
    same_length: SameLength,
    /// Where the last text matched by [`matches_shifted`](Layout::matches_shifted) has each
    /// slot's value.
    found: Vec<(usize, usize)>,
    /// Texts in a row that only the shifted match took: after [`ADOPT_AFTER`] of them the
    /// learned text is replaced by the latest one, so the same-length path follows value
    /// lengths as they drift (ids and counters grow a digit now and then).
    shifted_in_a_row: u32,
}

const ADOPT_AFTER: u32 = 8;

/// For a text as long as the learned one with every value in the same place (numbers of the
/// same shape, strings of the same length; common for ids, timestamps and dates), one pass of
/// word-wide checks.
#[derive(Debug, Default)]
struct SameLength {
    words: Vec<WordCheck>,
    /// The same checks two words at a time, for SSE2.
    #[cfg(target_arch = "x86_64")]
    blocks: Vec<BlockCheck>,
    /// Whether some value is a string.
    strings: bool,
    /// First digits of multi-digit integer parts: JSON forbids a leading zero there.
    nonzero: Vec<usize>,
    /// The bound slots' ranges: `(column, stat, start, end)`.
    bounds: Vec<(usize, usize, usize, usize)>,
    /// The `numRecords` slots' ranges, in order (a repeated key: the last one counts).
    records: Vec<(usize, usize)>,
    /// Per byte of the learned text, what a candidate must have there.
    class: Vec<ByteClass>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum ByteClass {
    /// The learned text's byte.
    Fixed,
    Digit,
    /// String content without quote, backslash or control character.
    Plain,
}

/// One 8-byte word of the learned text (zero-padded past its end) and which of its bytes must
/// be equal in the candidate, which must be digits, which plain string content.
#[derive(Debug, Clone, Copy)]
struct WordCheck {
    text: u64,
    equal: u64,
    digit: u64,
    plain: u64,
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

impl SameLength {
    /// The checks of the learned text's 8 bytes from `at` (`text`); past its end the candidate is
    /// zero-padded like the learned text, so those bytes must be equal.
    fn check_at(&self, text: &[u8], at: usize) -> WordCheck {
        let mut w = WordCheck {
            text: 0,
            equal: !0,
            digit: 0,
            plain: 0,
        };
        for (k, p) in (at..(at + 8).min(text.len())).enumerate() {
            let bits = 0xffu64 << (8 * k);
            w.text |= u64::from(text[p]) << (8 * k);
            match self.class[p] {
                ByteClass::Fixed => continue,
                ByteClass::Digit => w.digit |= bits,
                ByteClass::Plain => w.plain |= bits,
            }
            w.equal &= !bits;
        }
        w
    }

    /// Whether `s` (as long as the learned text) breaks a check.
    fn violated(&self, s: &[u8]) -> bool {
        #[cfg(target_arch = "x86_64")]
        return if self.strings {
            sse2::violated::<true>(&self.blocks, s)
        } else {
            sse2::violated::<false>(&self.blocks, s)
        };
        #[cfg(not(target_arch = "x86_64"))]
        return self.violated_swar(s);
    }

    /// [`violated`](Self::violated) a word at a time in plain integer arithmetic. It may also
    /// flag a text that a check near a non-ASCII byte would pass: that text then takes the
    /// shifted path.
    #[cfg_attr(target_arch = "x86_64", allow(dead_code))]
    fn violated_swar(&self, s: &[u8]) -> bool {
        fn all<const STRINGS: bool>(words: &[WordCheck], s: &[u8]) -> u64 {
            let full = s.len() / 8;
            let mut violations = 0;
            for (i, check) in words[..full].iter().enumerate() {
                violations |= check.violations::<STRINGS>(u64::from_le_bytes(
                    s[8 * i..8 * i + 8].try_into().expect("8 bytes"),
                ));
            }
            if full < words.len() {
                violations |= words[full].violations::<STRINGS>(word(s, 8 * full));
            }
            violations
        }
        0 != if self.strings {
            all::<true>(&self.words, s)
        } else {
            all::<false>(&self.words, s)
        }
    }
}

/// Two [`WordCheck`]s side by side: one 16-byte block of the learned text and its masks.
#[cfg(target_arch = "x86_64")]
#[derive(Debug, Clone, Copy)]
#[repr(C, align(16))]
struct BlockCheck {
    text: [u64; 2],
    equal: [u64; 2],
    digit: [u64; 2],
    plain: [u64; 2],
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
    use std::arch::x86_64::*;

    use super::BlockCheck;

    /// Whether `s` breaks a check of `blocks` (exact: every byte is tested on its own). The
    /// blocks cover `s` at 16-byte steps; when its length is not a multiple of 16, the last one
    /// covers its last 16 bytes (overlapping the one before), or all of a shorter `s`
    /// zero-padded.
    pub(super) fn violated<const STRINGS: bool>(blocks: &[BlockCheck], s: &[u8]) -> bool {
        let full = s.len() / 16;
        assert!(full <= blocks.len() && s.len().div_ceil(16) == blocks.len());
        // SAFETY: SSE2 is part of the x86_64 baseline; every load reads 16 bytes inside `s`,
        // inside `short`, or inside a 16-aligned `BlockCheck` field.
        unsafe {
            let mut acc = _mm_setzero_si128();
            for (i, b) in blocks[..full].iter().enumerate() {
                acc = _mm_or_si128(
                    acc,
                    violations::<STRINGS>(_mm_loadu_si128(s.as_ptr().add(16 * i).cast()), b),
                );
            }
            if full < blocks.len() {
                let last = if full > 0 {
                    _mm_loadu_si128(s.as_ptr().add(s.len() - 16).cast())
                } else {
                    let mut short = [0u8; 16];
                    short[..s.len()].copy_from_slice(s);
                    _mm_loadu_si128(short.as_ptr().cast())
                };
                acc = _mm_or_si128(acc, violations::<STRINGS>(last, &blocks[full]));
            }
            _mm_movemask_epi8(_mm_cmpeq_epi8(acc, _mm_setzero_si128())) != 0xffff
        }
    }

    /// Per byte of `a`, nonzero where it breaks the block's checks.
    #[inline(always)]
    unsafe fn violations<const STRINGS: bool>(a: __m128i, b: &BlockCheck) -> __m128i {
        let load = |x: &[u64; 2]| _mm_load_si128(x.as_ptr().cast());
        let within = |lo: u8, hi: u8| {
            _mm_and_si128(
                _mm_cmpeq_epi8(_mm_max_epu8(a, _mm_set1_epi8(lo as i8)), a),
                _mm_cmpeq_epi8(_mm_min_epu8(a, _mm_set1_epi8(hi as i8)), a),
            )
        };
        let changed = _mm_and_si128(_mm_xor_si128(a, load(&b.text)), load(&b.equal));
        let out = _mm_or_si128(
            changed,
            _mm_andnot_si128(within(b'0', b'9'), load(&b.digit)),
        );
        if !STRINGS {
            return out;
        }
        let special = _mm_or_si128(
            _mm_cmpeq_epi8(a, _mm_set1_epi8(b'"' as i8)),
            _mm_cmpeq_epi8(a, _mm_set1_epi8(b'\\' as i8)),
        );
        let plain = _mm_andnot_si128(special, within(0x20, 0xff));
        _mm_or_si128(out, _mm_andnot_si128(plain, load(&b.plain)))
    }
}

impl WordCheck {
    /// Nonzero when word `a` of a candidate breaks the check. A flag may also be raised for a
    /// byte just above one that breaks it, which only sends the text down the shifted path.
    /// `STRINGS` false skips the string-content test, for texts whose values are all numbers.
    #[inline]
    fn violations<const STRINGS: bool>(&self, a: u64) -> u64 {
        let x = a ^ (ONES * u64::from(b'0'));
        let not_digit = (x.wrapping_add(ONES * 0x76) | x) & HIGH;
        let fixed = ((a ^ self.text) & self.equal) | (not_digit & self.digit);
        if !STRINGS {
            return fixed;
        }
        let below_space = a.wrapping_sub(ONES * 0x20) & !a & HIGH;
        let not_plain = zero_bytes(a ^ (ONES * u64::from(b'"')))
            | zero_bytes(a ^ (ONES * u64::from(b'\\')))
            | below_space;
        fixed | (not_plain & self.plain)
    }
}

/// The high bit of every byte of `x` that is zero (and maybe of a byte above one that is).
fn zero_bytes(x: u64) -> u64 {
    x.wrapping_sub(ONES) & !x & HIGH
}

/// The word of `b` at byte `at`, zero-padded past the end.
fn word(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    let n = (b.len() - at).min(8);
    w[..n].copy_from_slice(&b[at..at + n]);
    u64::from_le_bytes(w)
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    /// The value's byte range in the learned text; the fragment before it starts where the
    /// previous slot ends.
    start: usize,
    end: usize,
    kind: Kind,
    role: Role,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Number,
    String,
    /// `true`, `false` or `null`: the same literal must appear.
    Literal,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Role {
    NumRecords,
    Bound { column: usize, stat: usize },
    Ignored,
}

impl Layout {
    fn learn_from(&mut self, text: &str) {
        self.text.clear();
        self.text.push_str(text);
        self.slots.clear();
        self.usable = true;
        self.shifted_in_a_row = 0;
        self.same_length.words.clear();
        #[cfg(target_arch = "x86_64")]
        self.same_length.blocks.clear();
    }

    /// Record a scalar value met while serde parses the learned text, or mark the layout
    /// unusable for a nested value.
    fn value(&mut self, raw: &str, base: usize, role: Role) {
        let kind = match raw.as_bytes().first() {
            Some(b'"') => Kind::String,
            Some(b'-' | b'0'..=b'9') => Kind::Number,
            Some(b't' | b'f' | b'n') => Kind::Literal,
            _ => {
                self.usable = false;
                return;
            }
        };
        let start = raw.as_ptr() as usize - base;
        self.slots.push(Slot {
            start,
            end: start + raw.len(),
            kind,
            role,
        });
    }

    /// Build the [`SameLength`] checks of the learned text.
    fn classify(&mut self) {
        let t = self.text.as_bytes();
        let m = &mut self.same_length;
        m.class.clear();
        m.class.resize(t.len(), ByteClass::Fixed);
        m.nonzero.clear();
        m.strings = false;
        m.bounds.clear();
        m.records.clear();
        for slot in &self.slots {
            match slot.role {
                Role::Bound { column, stat } => m.bounds.push((column, stat, slot.start, slot.end)),
                Role::NumRecords => m.records.push((slot.start, slot.end)),
                Role::Ignored => {}
            }
            match slot.kind {
                Kind::Number => {
                    let int = slot.start + usize::from(t[slot.start] == b'-');
                    if int + 1 < slot.end && t[int + 1].is_ascii_digit() {
                        m.nonzero.push(int);
                    }
                    // A number's sign, point and exponent stay fixed bytes.
                    for p in (slot.start..slot.end).filter(|&p| t[p].is_ascii_digit()) {
                        m.class[p] = ByteClass::Digit;
                    }
                }
                Kind::String => {
                    m.strings = true;
                    m.class[slot.start + 1..slot.end - 1].fill(ByteClass::Plain);
                }
                Kind::Literal => {}
            }
        }
        let words: Vec<WordCheck> = (0..t.len())
            .step_by(8)
            .map(|at| m.check_at(t, at))
            .collect();
        m.words = words;
        #[cfg(target_arch = "x86_64")]
        {
            // 16-byte steps; a last block over the last 16 bytes (overlapping the one before),
            // or over all of a shorter text.
            let len = t.len();
            let starts = (0..len / 16)
                .map(|b| 16 * b)
                .chain((len % 16 != 0).then_some(len.saturating_sub(16)));
            let blocks = starts
                .map(|at| {
                    let (a, b) = (m.check_at(t, at), m.check_at(t, at + 8));
                    BlockCheck {
                        text: [a.text, b.text],
                        equal: [a.equal, b.equal],
                        digit: [a.digit, b.digit],
                        plain: [a.plain, b.plain],
                    }
                })
                .collect();
            m.blocks = blocks;
        }
    }

    /// Replace the learned text by `text`, which [`matches_shifted`](Self::matches_shifted)
    /// has just matched: the same fragments with values of the same kinds, so the slots keep
    /// their kinds and roles and move to where `text` has its values.
    fn adopt(&mut self, text: &str) {
        self.text.clear();
        self.text.push_str(text);
        for (slot, &(start, end)) in self.slots.iter_mut().zip(&self.found) {
            slot.start = start;
            slot.end = end;
        }
        self.classify();
    }

    /// [`matches`](Self::matches) for a text of the learned length with every value in place.
    fn matches_in_place(
        &self,
        s: &[u8],
        bounds: &mut [Bounds],
        num_records: &mut Option<i64>,
    ) -> bool {
        let m = &self.same_length;
        if s.len() != self.text.len() || m.words.is_empty() {
            return false;
        }
        if m.violated(s) || m.nonzero.iter().any(|&p| s[p] == b'0') {
            return false;
        }
        let mut records = None;
        for &(start, end) in &m.records {
            match num_records_value(&s[start..end]) {
                Some(n) => records = n,
                None => return false,
            }
        }
        *num_records = records;
        for &(column, stat, start, end) in &m.bounds {
            bounds[column][stat] = Some((start, end));
        }
        true
    }

    /// Match `text` against the layout, filling `bounds` and `num_records` as serde would.
    fn matches(
        &mut self,
        text: &str,
        bounds: &mut [Bounds],
        num_records: &mut Option<i64>,
    ) -> bool {
        if self.matches_in_place(text.as_bytes(), bounds, num_records) {
            self.shifted_in_a_row = 0;
            return true;
        }
        if !self.matches_shifted(text, bounds, num_records) {
            return false;
        }
        self.shifted_in_a_row += 1;
        if self.shifted_in_a_row >= ADOPT_AFTER {
            self.shifted_in_a_row = 0;
            self.adopt(text);
        }
        true
    }

    /// [`matches`](Self::matches) for values of any length: fragment by fragment.
    fn matches_shifted(
        &mut self,
        text: &str,
        bounds: &mut [Bounds],
        num_records: &mut Option<i64>,
    ) -> bool {
        let (t, s) = (self.text.as_bytes(), text.as_bytes());
        let (mut tp, mut sp) = (0, 0);
        self.found.clear();
        for slot in &self.slots {
            let fragment = &t[tp..slot.start];
            if !starts_with(&s[sp..], fragment) {
                return false;
            }
            sp += fragment.len();
            let end = match slot.kind {
                // The next fragment starts with a byte no number continues with, so a number
                // cut short here fails the fragment comparison.
                Kind::Number => match json_number_len(&s[sp..]) {
                    Some(n) => sp + n,
                    None => return false,
                },
                Kind::String => match string_end(s, sp) {
                    Some(e) => e,
                    None => return false,
                },
                Kind::Literal => {
                    let literal = &t[slot.start..slot.end];
                    if !starts_with(&s[sp..], literal) {
                        return false;
                    }
                    sp + literal.len()
                }
            };
            self.found.push((sp, end));
            match slot.role {
                Role::NumRecords => match num_records_value(&s[sp..end]) {
                    Some(n) => *num_records = n,
                    None => return false,
                },
                Role::Bound { column, stat } => bounds[column][stat] = Some((sp, end)),
                Role::Ignored => {}
            }
            sp = end;
            tp = slot.end;
        }
        t[tp..] == s[sp..]
    }
}

/// `s` starts with `prefix`, compared a word at a time inline: fragments are a few dozen bytes,
/// too short for a `memcmp` call to pay off.
#[inline]
fn starts_with(s: &[u8], prefix: &[u8]) -> bool {
    let n = prefix.len();
    if s.len() < n {
        return false;
    }
    let load = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
    if n < 8 {
        return s[..n].iter().zip(prefix).all(|(a, b)| a == b);
    }
    let mut at = 0;
    while at + 8 <= n {
        if load(s, at) != load(prefix, at) {
            return false;
        }
        at += 8;
    }
    // The last partial word, overlapping the one before.
    at == n || load(s, n - 8) == load(prefix, n - 8)
}

/// The value of a `numRecords` token: `Some(None)` for null; `None` when it is not a long (serde
/// then rejects the stats too).
fn num_records_value(raw: &[u8]) -> Option<Option<i64>> {
    let (negative, digits) = match raw.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, raw),
    };
    // Up to 18 digits cannot overflow; anything else (null, longer, not an integer) is rare.
    let slow = || {
        if raw == b"null" {
            Some(None)
        } else {
            std::str::from_utf8(raw).ok()?.parse().ok().map(Some)
        }
    };
    if digits.is_empty() || digits.len() > 18 {
        return slow();
    }
    let mut n = 0i64;
    for &d in digits {
        let v = d.wrapping_sub(b'0');
        if v > 9 {
            return slow();
        }
        n = n * 10 + i64::from(v);
    }
    Some(Some(if negative { -n } else { n }))
}

/// The end (after the closing quote) of a string token starting at `at`, when it holds no
/// escape and no control character.
fn string_end(s: &[u8], at: usize) -> Option<usize> {
    if s.get(at) != Some(&b'"') {
        return None;
    }
    let close = at + 1 + memchr::memchr(b'"', &s[at + 1..])?;
    s[at + 1..close]
        .iter()
        .all(|&c| c != b'\\' && c >= 0x20)
        .then_some(close + 1)
}

/// The length of the JSON number at the start of `t` (grammar
/// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`), or None when none starts there.
fn json_number_len(t: &[u8]) -> Option<usize> {
    let digits = |from: usize| from + t[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    let mut i = usize::from(t.first() == Some(&b'-'));
    i = match t.get(i)? {
        b'0' => i + 1,
        b'1'..=b'9' => digits(i + 1),
        _ => return None,
    };
    if t.get(i) == Some(&b'.') {
        let end = digits(i + 1);
        if end == i + 1 {
            return None;
        }
        i = end;
    }
    if matches!(t.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(t.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let end = digits(i);
        if end == i {
            return None;
        }
        i = end;
    }
    Some(i)
}

struct Top<'s> {
    names: &'s [ColumnRef],
    /// Address of the text's first byte: value ranges are offsets from it.
    base: usize,
    out: &'s mut Located,
}

impl<'de> DeserializeSeed<'de> for Top<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Top<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a stats object")
    }
    fn visit_map<M: MapAccess<'de>>(self, mut m: M) -> Result<(), M::Error> {
        while let Some(Key(k)) = m.next_key()? {
            let stat = match &*k {
                "numRecords" => {
                    let raw = m.next_value::<&'de RawValue>()?.get();
                    self.out.num_records = num_records_value(raw.as_bytes())
                        .ok_or_else(|| serde::de::Error::custom("numRecords is not a long"))?;
                    self.out.layout.value(raw, self.base, Role::NumRecords);
                    continue;
                }
                "minValues" => 0,
                "maxValues" => 1,
                "nullCount" => 2,
                _ => {
                    let raw = m.next_value::<&'de RawValue>()?.get();
                    self.out.layout.value(raw, self.base, Role::Ignored);
                    continue;
                }
            };
            m.next_value_seed(Section {
                names: self.names,
                stat,
                base: self.base,
                out: &mut *self.out,
            })?;
        }
        Ok(())
    }
}

/// One of `minValues`, `maxValues`, `nullCount` (`stat` is its index in [`Bounds`]).
struct Section<'s> {
    names: &'s [ColumnRef],
    stat: usize,
    base: usize,
    out: &'s mut Located,
}

impl<'de> DeserializeSeed<'de> for Section<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Section<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an object of column statistics")
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        self.out.layout.usable = false; // a null section: rare, left to serde
        Ok(())
    }
    fn visit_map<M: MapAccess<'de>>(self, mut m: M) -> Result<(), M::Error> {
        while let Some(Key(k)) = m.next_key()? {
            let raw = m.next_value::<&'de RawValue>()?.get();
            let role = match self
                .names
                .iter()
                .position(|c| !c.partition && c.physical == *k)
            {
                Some(column) => {
                    let start = raw.as_ptr() as usize - self.base;
                    self.out.bounds[column][self.stat] = Some((start, start + raw.len()));
                    Role::Bound {
                        column,
                        stat: self.stat,
                    }
                }
                None => Role::Ignored,
            };
            self.out.layout.value(raw, self.base, role);
        }
        Ok(())
    }
}

/// A map key borrowed from the text unless it holds escapes (serde's `Cow<str>` always copies).
struct Key<'de>(Cow<'de, str>);

impl<'de> serde::Deserialize<'de> for Key<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Key<'de>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a string")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
        Ok(Key(Cow::Owned(v.to_string())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::DataType;

    use crate::test_rng::Rng;

    fn columns() -> Vec<ColumnRef> {
        let c = |name: &str, partition| ColumnRef {
            name: name.into(),
            physical: name.into(),
            field_id: None,
            data_type: DataType::Primitive("long".into()),
            partition,
        };
        vec![c("x", false), c("s", false), c("p", true), c("a\"b", false)]
    }

    /// What serde alone locates: a fresh `Located` has no layout.
    fn by_serde(text: &str, cols: &[ColumnRef]) -> (bool, Vec<[Option<String>; 3]>, Option<i64>) {
        view(&mut Located::default(), text, cols)
    }

    fn view(
        l: &mut Located,
        text: &str,
        cols: &[ColumnRef],
    ) -> (bool, Vec<[Option<String>; 3]>, Option<i64>) {
        let ok = l.locate(text, cols);
        let bounds = l
            .bounds
            .iter()
            .map(|b| b.map(|r| r.map(|(a, z)| text[a..z].to_string())))
            .collect();
        (ok, bounds, if ok { l.num_records } else { None })
    }

    fn value(rng: &mut Rng) -> String {
        match rng.below(150) {
            0 => "null".into(),
            1 => rng.pick(&["true", "false"]).into(),
            2 => format!(
                "\"{}\"",
                rng.pick(&[
                    "abc",
                    "",
                    "x y",
                    "a\\\"b",
                    "\\u00e9",
                    "é",
                    "}",
                    ",\\\"x\\\":1"
                ])
            ),
            3 => rng
                .pick(&[
                    "1.5",
                    "-0",
                    "1e3",
                    "-2.5E-3",
                    "01",
                    "1.",
                    "-",
                    "+1",
                    ".5",
                    "1e",
                    "9223372036854775808",
                ])
                .into(),
            4 => "{\"y\": 1}".into(),
            5 => "[1, 2]".into(),
            _ => (rng.below(2_000_000) as i64 - 1_000_000).to_string(),
        }
    }

    /// A stats text: keys in a random order and spacing, some sections missing or odd.
    fn stats(rng: &mut Rng) -> String {
        let sp = |rng: &mut Rng| rng.pick(&["", " ", "  ", "\n"]).to_string();
        let mut parts = Vec::new();
        for key in [
            "numRecords",
            "minValues",
            "maxValues",
            "nullCount",
            "tightBounds",
            "other",
        ] {
            if rng.below(if key == "other" { 8 } else { 1 }) != 0 || rng.below(6) == 0 {
                continue; // Delta writes no other keys; an object there is left to serde
            }
            let v = if key == "numRecords" || key == "tightBounds" || rng.below(12) == 0 {
                value(rng)
            } else {
                let mut cols = Vec::new();
                for c in ["x", "s", "p", "a\\\"b", "z"] {
                    if rng.below(4) != 0 {
                        let v = if c == "s" && rng.below(2) == 0 {
                            format!("\"{}\"", rng.pick(&["abc", "hello world", "2024-01-01"]))
                        } else {
                            value(rng)
                        };
                        cols.push(format!("\"{c}\":{}{v}", sp(rng)));
                    }
                }
                format!("{{{}}}", cols.join(&format!(",{}", sp(rng))))
            };
            parts.push(format!("\"{key}\":{}{v}", sp(rng)));
        }
        if rng.below(10) == 0 && !parts.is_empty() {
            let i = rng.below(parts.len() as u64) as usize;
            parts.push(parts[i].clone()); // a duplicate key: the later one wins
        }
        format!(
            "{}{{{}}}{}",
            sp(rng),
            parts.join(", "),
            rng.pick(&["", "", " ", "x", "}"])
        )
    }

    /// Same layout, other values: what the layout path actually sees most of the time. Now and
    /// then a byte is corrupted.
    fn revalue(rng: &mut Rng, text: &str) -> String {
        let mut out = String::new();
        let mut rest = text;
        while let Some(c) = rest.chars().next() {
            let number = c == '-' || c.is_ascii_digit();
            if number && !out.ends_with(|p: char| p.is_ascii_alphanumeric() || p == '"') {
                let n = rest
                    .find(|d: char| !matches!(d, '0'..='9' | '-' | '+' | '.' | 'e' | 'E'))
                    .unwrap_or(rest.len());
                out.push_str(&if rng.below(2) == 0 {
                    value(rng)
                } else {
                    rest[..n].to_string()
                });
                rest = &rest[n..];
                continue;
            }
            if rng.below(3000) == 0 {
                out.push(
                    rng.pick(&["\"", "\\", ",", "}", " ", "1"])
                        .chars()
                        .next()
                        .unwrap(),
                );
            } else {
                out.push(c);
            }
            rest = &rest[c.len_utf8()..];
        }
        out
    }

    /// Same length, bytes swapped in place: digits for digits (leading zeros included), and
    /// letters (mostly inside string values) for letters or for bytes a string must not hold
    /// unescaped.
    fn swap_in_place(rng: &mut Rng, text: &str) -> String {
        let (mut out, mut in_value, mut after_colon) = (String::new(), false, false);
        for c in text.chars() {
            let odds = if in_value { 4 } else { 300 };
            out.push(match c {
                '0'..='9' if rng.below(3) == 0 => (b'0' + rng.below(10) as u8) as char,
                'a'..='z' if rng.below(odds) == 0 => rng
                    .pick(&["q", "\"", "\\", ",", "}", "\n", "\u{1}", "0", " "])
                    .chars()
                    .next()
                    .unwrap(),
                _ => c,
            });
            if c == '"' {
                in_value = !in_value && after_colon;
            }
            if !c.is_whitespace() {
                after_colon = c == ':';
            }
        }
        out
    }

    #[test]
    fn layout_path_locates_exactly_what_serde_does() {
        let cols = columns();
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let (mut via_layout, mut in_place, mut total, mut same_length, mut swar_agrees) =
            (0, 0, 0, 0, 0);
        for _ in 0..3000 {
            let base = stats(&mut rng);
            let mut l = Located::default();
            for _ in 0..16 {
                let text = match rng.below(8) {
                    _ if l.layout.text.is_empty() => base.clone(),
                    0 => stats(&mut rng),
                    1..=3 => swap_in_place(&mut rng, &base),
                    _ => revalue(&mut rng, &base),
                };
                let reused =
                    l.layout.usable && l.layout_for == (cols.as_ptr() as usize, cols.len());
                let expected = by_serde(&text, &cols);
                in_place += usize::from(
                    reused
                        && l.layout.matches_in_place(
                            text.as_bytes(),
                            &mut vec![[None; 3]; cols.len()],
                            &mut None,
                        ),
                );
                if reused && text.len() == l.layout.text.len() {
                    let m = &l.layout.same_length;
                    // The portable check never passes a text the exact one fails.
                    assert!(
                        m.violated(text.as_bytes()) <= m.violated_swar(text.as_bytes()),
                        "{text:?}"
                    );
                    swar_agrees += usize::from(
                        m.violated(text.as_bytes()) == m.violated_swar(text.as_bytes()),
                    );
                    same_length += 1;
                }
                let got = view(&mut l, &text, &cols);
                assert_eq!(got, expected, "{text:?}");
                total += 1;
                via_layout += usize::from(reused && got.0 && l.layout.text != text);
            }
        }
        assert!(
            in_place > total / 40,
            "the same-length path must be exercised: {in_place} of {total}"
        );
        assert!(
            swar_agrees * 10 > same_length * 9,
            "the portable check agrees nearly always: {swar_agrees} of {same_length}"
        );
        assert!(
            via_layout > total / 6,
            "the layout path must be exercised: {via_layout} of {total}"
        );
    }

    #[test]
    fn typical_commit_matches_its_layout() {
        let cols = columns();
        let mut l = Located::default();
        let text = |n: i64| {
            format!(
                r#"{{"numRecords": 100, "minValues": {{"id": {n}, "x": {}}}, "maxValues": {{"id": {}, "x": "z{n}"}}, "nullCount": {{"id": 0, "x": 0}}}}"#,
                n % 7,
                n + 99
            )
        };
        assert!(l.locate(&text(1), &cols));
        for n in 2..50 {
            let t = text(n * 1237);
            assert!(
                l.layout
                    .matches(&t, &mut vec![[None; 3]; cols.len()], &mut None),
                "{t}"
            );
            assert_eq!(view(&mut l, &t, &cols), by_serde(&t, &cols));
        }
        assert!(!l.layout.matches(
            &text(1).replace("100", "1.5"),
            &mut vec![[None; 3]; cols.len()],
            &mut None
        ));
    }

    /// Values that grow a digit now and then (row ids, counters): the learned text follows them,
    /// so most texts take the same-length path, and every text still locates what serde does.
    #[test]
    fn learned_text_follows_drifting_lengths() {
        let cols = columns();
        let mut l = Located::default();
        let text = |n: u64| {
            format!(
                r#"{{"numRecords":{},"minValues":{{"x":{n},"s":"k{}"}},"maxValues":{{"x":{},"s":"z"}},"nullCount":{{"x":0}}}}"#,
                n % 97 + 1,
                n % 10,
                n * 3 + 7
            )
        };
        let (mut in_place, mut total) = (0, 0);
        for n in (1..200_000).step_by(37) {
            let t = text(n);
            let reused = !l.layout.text.is_empty();
            in_place += usize::from(
                reused
                    && l.layout.matches_in_place(
                        t.as_bytes(),
                        &mut vec![[None; 3]; cols.len()],
                        &mut None,
                    ),
            );
            assert_eq!(view(&mut l, &t, &cols), by_serde(&t, &cols), "{t}");
            total += 1;
        }
        assert!(
            in_place > total * 3 / 4,
            "the learned text must follow the lengths: {in_place} of {total}"
        );
    }

    #[test]
    fn starts_with_is_slice_starts_with() {
        let hay = b"{\"numRecords\": 100, \"minValues\": {\"id\": 5}}";
        for n in 0..hay.len() {
            for from in 0..hay.len() {
                let mut prefix = hay[from..(from + n).min(hay.len())].to_vec();
                assert_eq!(
                    starts_with(&hay[from..], &prefix),
                    hay[from..].starts_with(&prefix)
                );
                if let Some(last) = prefix.last_mut() {
                    *last ^= 1;
                    assert!(!starts_with(&hay[from..], &prefix));
                }
                assert_eq!(
                    starts_with(&hay[..n], &hay[..(n + 1).min(hay.len())]),
                    n == hay.len()
                );
            }
        }
    }

    #[test]
    fn num_records_like_serde() {
        for raw in [
            "0",
            "-0",
            "7",
            "-12",
            "100",
            "999999999999999999",
            "9223372036854775807",
            "-9223372036854775808",
            "9223372036854775808",
            "1.5",
            "1e3",
            "null",
            "true",
            "\"5\"",
            "",
        ] {
            let serde = match raw {
                "null" => Some(None),
                n => n.parse::<i64>().ok().map(Some),
            };
            assert_eq!(num_records_value(raw.as_bytes()), serde, "{raw}");
        }
    }

    #[test]
    fn json_numbers() {
        let cases = [
            ("0", Some(1)),
            ("-0", Some(2)),
            ("12,", Some(2)),
            ("1.25}", Some(4)),
            ("1e9", Some(3)),
            ("-2.5E+3 ", Some(7)),
            ("01", Some(1)),
            ("1.", None),
            ("-", None),
            (".5", None),
            ("1e", None),
            ("+1", None),
            ("", None),
        ];
        for (t, len) in cases {
            assert_eq!(json_number_len(t.as_bytes()), len, "{t}");
        }
    }
}
