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
        if self.layout_for == key && self.layout.usable && self.layout.matches(text, &mut self.bounds, &mut self.num_records) {
            return true;
        }
        for b in &mut self.bounds {
            *b = [None; 3];
        }
        self.num_records = None;
        self.layout_for = key;
        self.layout.learn_from(text);
        let seed = Top { names: columns, base: text.as_ptr() as usize, out: self };
        let ok = seed.deserialize(&mut serde_json::Deserializer::from_str(text)).is_ok();
        self.layout.usable &= ok;
        ok
    }
}

/// The fixed fragments of a learned stats text and, between them, its scalar values.
#[derive(Debug, Default)]
struct Layout {
    text: String,
    slots: Vec<Slot>,
    usable: bool,
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
        self.slots.push(Slot { start, end: start + raw.len(), kind, role });
    }

    /// Match `text` against the layout, filling `bounds` and `num_records` as serde would.
    fn matches(&self, text: &str, bounds: &mut [Bounds], num_records: &mut Option<i64>) -> bool {
        let (t, s) = (self.text.as_bytes(), text.as_bytes());
        let (mut tp, mut sp) = (0, 0);
        for slot in &self.slots {
            let fragment = &t[tp..slot.start];
            if !s[sp..].starts_with(fragment) {
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
                    if !s[sp..].starts_with(literal) {
                        return false;
                    }
                    sp + literal.len()
                }
            };
            match slot.role {
                Role::NumRecords => match &text[sp..end] {
                    "null" => *num_records = None,
                    n => match n.parse() {
                        Ok(n) => *num_records = Some(n),
                        Err(_) => return false,
                    },
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

/// The end (after the closing quote) of a string token starting at `at`, when it holds no
/// escape and no control character.
fn string_end(s: &[u8], at: usize) -> Option<usize> {
    if s.get(at) != Some(&b'"') {
        return None;
    }
    let close = at + 1 + memchr::memchr(b'"', &s[at + 1..])?;
    s[at + 1..close].iter().all(|&c| c != b'\\' && c >= 0x20).then_some(close + 1)
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
                    self.out.num_records = match raw {
                        "null" => None,
                        n => Some(n.parse().map_err(|_| serde::de::Error::custom("numRecords is not a long"))?),
                    };
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
            m.next_value_seed(Section { names: self.names, stat, base: self.base, out: &mut *self.out })?;
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
            let role = match self.names.iter().position(|c| !c.partition && c.physical == *k) {
                Some(column) => {
                    let start = raw.as_ptr() as usize - self.base;
                    self.out.bounds[column][self.stat] = Some((start, start + raw.len()));
                    Role::Bound { column, stat: self.stat }
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

    /// A small deterministic generator (xorshift), so failures reproduce.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
        fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
            xs[self.below(xs.len() as u64) as usize]
        }
    }

    fn columns() -> Vec<ColumnRef> {
        let c = |name: &str, partition| ColumnRef {
            name: name.into(),
            physical: name.into(),
            data_type: DataType::Primitive("long".into()),
            partition,
        };
        vec![c("x", false), c("s", false), c("p", true), c("a\"b", false)]
    }

    /// What serde alone locates: a fresh `Located` has no layout.
    fn by_serde(text: &str, cols: &[ColumnRef]) -> (bool, Vec<[Option<String>; 3]>, Option<i64>) {
        view(&mut Located::default(), text, cols)
    }

    fn view(l: &mut Located, text: &str, cols: &[ColumnRef]) -> (bool, Vec<[Option<String>; 3]>, Option<i64>) {
        let ok = l.locate(text, cols);
        let bounds = l.bounds.iter().map(|b| b.map(|r| r.map(|(a, z)| text[a..z].to_string()))).collect();
        (ok, bounds, if ok { l.num_records } else { None })
    }

    fn value(rng: &mut Rng) -> String {
        match rng.below(150) {
            0 => "null".into(),
            1 => rng.pick(&["true", "false"]).into(),
            2 => format!("\"{}\"", rng.pick(&["abc", "", "x y", "a\\\"b", "\\u00e9", "é", "}", ",\\\"x\\\":1"])),
            3 => rng.pick(&["1.5", "-0", "1e3", "-2.5E-3", "01", "1.", "-", "+1", ".5", "1e", "9223372036854775808"]).into(),
            4 => "{\"y\": 1}".into(),
            5 => "[1, 2]".into(),
            _ => (rng.below(2_000_000) as i64 - 1_000_000).to_string(),
        }
    }

    /// A stats text: keys in a random order and spacing, some sections missing or odd.
    fn stats(rng: &mut Rng) -> String {
        let sp = |rng: &mut Rng| rng.pick(&["", " ", "  ", "\n"]).to_string();
        let mut parts = Vec::new();
        for key in ["numRecords", "minValues", "maxValues", "nullCount", "tightBounds", "other"] {
            if rng.below(if key == "other" { 8 } else { 1 }) != 0 || rng.below(6) == 0 {
                continue; // Delta writes no other keys; an object there is left to serde
            }
            let v = if key == "numRecords" || key == "tightBounds" || rng.below(12) == 0 {
                value(rng)
            } else {
                let mut cols = Vec::new();
                for c in ["x", "s", "p", "a\\\"b", "z"] {
                    if rng.below(4) != 0 {
                        cols.push(format!("\"{c}\":{}{}", sp(rng), value(rng)));
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
        format!("{}{{{}}}{}", sp(rng), parts.join(", "), rng.pick(&["", "", " ", "x", "}"]))
    }

    /// Same layout, other values: what the layout path actually sees most of the time. Now and
    /// then a byte is corrupted.
    fn revalue(rng: &mut Rng, text: &str) -> String {
        let mut out = String::new();
        let mut rest = text;
        while let Some(c) = rest.chars().next() {
            let number = c == '-' || c.is_ascii_digit();
            if number && !out.ends_with(|p: char| p.is_ascii_alphanumeric() || p == '"') {
                let n = rest.find(|d: char| !matches!(d, '0'..='9' | '-' | '+' | '.' | 'e' | 'E')).unwrap_or(rest.len());
                out.push_str(&if rng.below(2) == 0 { value(rng) } else { rest[..n].to_string() });
                rest = &rest[n..];
                continue;
            }
            if rng.below(3000) == 0 {
                out.push(rng.pick(&["\"", "\\", ",", "}", " ", "1"]).chars().next().unwrap());
            } else {
                out.push(c);
            }
            rest = &rest[c.len_utf8()..];
        }
        out
    }

    #[test]
    fn layout_path_locates_exactly_what_serde_does() {
        let cols = columns();
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let (mut via_layout, mut total) = (0, 0);
        for _ in 0..3000 {
            let base = stats(&mut rng);
            let mut l = Located::default();
            for _ in 0..16 {
                let text = if rng.below(8) == 0 { stats(&mut rng) } else { revalue(&mut rng, &base) };
                let reused = l.layout.usable && l.layout_for == (cols.as_ptr() as usize, cols.len());
                let expected = by_serde(&text, &cols);
                let got = view(&mut l, &text, &cols);
                assert_eq!(got, expected, "{text:?}");
                total += 1;
                via_layout += usize::from(reused && got.0 && l.layout.text != text);
            }
        }
        assert!(via_layout > total / 4, "the layout path must be exercised: {via_layout} of {total}");
    }

    #[test]
    fn typical_commit_matches_its_layout() {
        let cols = columns();
        let mut l = Located::default();
        let text = |n: i64| format!(r#"{{"numRecords": 100, "minValues": {{"id": {n}, "x": {}}}, "maxValues": {{"id": {}, "x": "z{n}"}}, "nullCount": {{"id": 0, "x": 0}}}}"#, n % 7, n + 99);
        assert!(l.locate(&text(1), &cols));
        for n in 2..50 {
            let t = text(n * 1237);
            assert!(l.layout.matches(&t, &mut vec![[None; 3]; cols.len()], &mut None), "{t}");
            assert_eq!(view(&mut l, &t, &cols), by_serde(&t, &cols));
        }
        assert!(!l.layout.matches(&text(1).replace("100", "1.5"), &mut vec![[None; 3]; cols.len()], &mut None));
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
