//! `add.stats` as the log readers leave it: kept as stored, read on first use.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use super::super::unescape::{unescape, unescape_into};
use super::AddFile;

/// `add.stats` as stored: either the JSON string literal exactly as a commit holds it (quotes and
/// escapes kept: most callers never look at the stats, so they are unescaped on use), the plain
/// text, or a reference to stats in a checkpoint or a large commit that are read on first use. A
/// stored text starting with `"` is always a literal, so plain text that itself starts with a quote
/// is stored escaped.
#[derive(Clone)]
pub struct StatsText(Repr);

#[derive(Clone)]
enum Repr {
    Text(Box<str>),
    /// The stats of the `i`-th add of a source: a checkpoint read unit (its stats may turn out to
    /// be null) or a range of a large JSON commit.
    Deferred(Arc<dyn StatsSource>, u32),
}

/// Stats a log reader left in its file, read back the first time any of them is asked for: the
/// `add.stats` column of a checkpoint part (`checkpoint::DeferredStats`) or the stats literals
/// of a large commit (`json::DeferredStats`). The readers implement it, so this module, which
/// they build on, does not depend on them.
pub(crate) trait StatsSource: Send + Sync {
    /// The stats of the source's `i`-th add as stored; None when they are null.
    fn raw(&self, i: u32) -> crate::error::Result<Option<RawStats<'_>>>;

    /// About how many bytes the text of the `i`-th add's stats takes, without reading them (to
    /// size a buffer).
    fn len_hint(&self, i: u32) -> usize;

    /// Hand the stats of adds `ks` (in that order; None for a file without stats) to `f` without
    /// keeping them: a source not read yet may read them straight from its file, once, instead
    /// of loading and keeping all of it.
    fn visit(&self, ks: &[Option<u32>], f: &mut VisitStats<'_>) -> crate::error::Result<()> {
        visit_each(self, ks, f)
    }
}

/// The stats of `files`, in order, handed to `f`. A run of deferred stats from one source (files
/// without stats do not end it) is one [`StatsSource::visit`], so a large commit's or a
/// checkpoint's stats are read once for the run and not kept.
pub(crate) fn visit_stats(files: &[&AddFile], f: &mut VisitStats<'_>) -> crate::error::Result<()> {
    let mut rest = files;
    while let Some(first) = rest.first() {
        let Some((from, _)) = first.stats_source() else {
            f(first.raw_stats()?)?;
            rest = &rest[1..];
            continue;
        };
        let ks: Vec<Option<u32>> = rest
            .iter()
            .map_while(|a| match a.stats_source() {
                _ if a.stats.is_none() => Some(None),
                Some((_, k)) if a.shares_stats_source(first) => Some(Some(k)),
                _ => None,
            })
            .collect();
        from.visit(&ks, f)?;
        rest = &rest[ks.len()..];
    }
    Ok(())
}

/// The stats text of `adds` through [`visit_stats`] (for tests of the sources).
#[cfg(test)]
pub(crate) fn visited_stats(adds: &[AddFile]) -> crate::error::Result<Vec<Option<String>>> {
    let refs: Vec<&AddFile> = adds.iter().collect();
    let mut out = Vec::new();
    visit_stats(&refs, &mut |raw| {
        out.push(raw.map(|r| r.text().into_owned()));
        Ok(())
    })?;
    Ok(out)
}

/// [`StatsSource::visit`] through [`StatsSource::raw`].
pub(crate) fn visit_each<S: StatsSource + ?Sized>(
    source: &S,
    ks: &[Option<u32>],
    f: &mut VisitStats<'_>,
) -> crate::error::Result<()> {
    for &k in ks {
        f(match k {
            Some(k) => source.raw(k)?,
            None => None,
        })?;
    }
    Ok(())
}

/// What [`StatsSource::visit`] calls for each add.
pub(crate) type VisitStats<'f> = dyn FnMut(Option<RawStats<'_>>) -> crate::error::Result<()> + 'f;

impl StatsText {
    pub fn plain(text: &str) -> Self {
        if text.starts_with('"') {
            StatsText(Repr::Text(
                serde_json::to_string(text).unwrap_or_default().into(),
            ))
        } else {
            StatsText(Repr::Text(text.into()))
        }
    }

    /// From a JSON string literal (with its quotes), as found in a commit line.
    pub(super) fn literal(raw: &str) -> Self {
        if raw.contains('\\') {
            StatsText(Repr::Text(raw.into()))
        } else {
            StatsText::plain(&raw[1..raw.len() - 1])
        }
    }

    /// The stats of the `i`-th add of `source`, read on first use.
    pub(crate) fn deferred(source: Arc<dyn StatsSource>, i: u32) -> Self {
        StatsText(Repr::Deferred(source, i))
    }

    /// The source and index of deferred stats.
    pub(crate) fn source(&self) -> Option<(&Arc<dyn StatsSource>, u32)> {
        match &self.0 {
            Repr::Deferred(source, i) => Some((source, *i)),
            Repr::Text(_) => None,
        }
    }

    /// About how many bytes the text takes (at most, for text at hand), without reading it.
    pub(crate) fn len_hint(&self) -> usize {
        match &self.0 {
            Repr::Text(t) if t.starts_with('"') => t.len() - 2,
            Repr::Text(t) => t.len(),
            Repr::Deferred(source, i) => source.len_hint(*i),
        }
    }

    /// The same stats as plain text (unescaped now rather than on every use).
    pub fn into_plain(self) -> Self {
        match &self.0 {
            Repr::Text(t) if t.starts_with('"') => StatsText::plain(&unescape(t)),
            _ => self,
        }
    }

    /// The stats as stored (see [`RawStats`]); None when a deferred checkpoint row has null stats.
    pub fn raw(&self) -> crate::error::Result<Option<RawStats<'_>>> {
        Ok(match &self.0 {
            Repr::Text(t) if t.starts_with('"') => Some(RawStats::Literal(t)),
            Repr::Text(t) => Some(RawStats::Plain(t)),
            Repr::Deferred(source, i) => source.raw(*i)?,
        })
    }

    /// The stats JSON text, unescaped; None when a deferred checkpoint row has null stats. Fails
    /// only when the file holding deferred stats can no longer be read.
    pub fn text(&self) -> crate::error::Result<Option<Cow<'_, str>>> {
        Ok(self.raw()?.map(RawStats::text))
    }
}

/// Stats as stored: plain JSON text, or a JSON string literal (quotes and escapes kept) as found
/// in a commit line. Reading them this way avoids unescaping into a new allocation per file.
#[derive(Debug, Clone, Copy)]
pub enum RawStats<'a> {
    Plain(&'a str),
    Literal(&'a str),
}

impl<'a> RawStats<'a> {
    /// `numRecords`: read straight from the text when it is the first key (as delta-spark and
    /// delta-rs write it), else from a parse of the stats.
    pub fn num_records(&self) -> Option<i64> {
        let (prefix, body) = match self {
            RawStats::Plain(s) => (r#"{"numRecords":"#, *s),
            RawStats::Literal(s) => (r#""{\"numRecords\":"#, *s),
        };
        if let Some(rest) = body.strip_prefix(prefix) {
            let end = rest.find([',', '}']).unwrap_or(rest.len());
            if let Ok(n) = rest[..end].parse::<i64>() {
                return Some(n);
            }
        }
        crate::stats::num_records(Some(&self.text()))
    }

    pub fn text(self) -> Cow<'a, str> {
        match self {
            RawStats::Plain(s) => Cow::Borrowed(s),
            RawStats::Literal(s) => unescape(s),
        }
    }

    /// Write the unescaped text (for an Arrow string builder, without an intermediate String).
    pub fn write_text(&self, out: &mut impl fmt::Write) -> fmt::Result {
        match self {
            RawStats::Plain(s) => out.write_str(s),
            RawStats::Literal(s) => unescape_into(s, out),
        }
    }
}

impl PartialEq for StatsText {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Repr::Text(a), Repr::Text(b)) => a == b,
            _ => matches!((self.text(), other.text()), (Ok(a), Ok(b)) if a == b),
        }
    }
}

impl fmt::Debug for StatsText {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self.text() {
            Ok(t) => fmt::Debug::fmt(&t, f),
            Err(e) => write!(f, "<stats unreadable: {e}>"),
        }
    }
}

impl From<&str> for StatsText {
    fn from(s: &str) -> Self {
        StatsText::plain(s)
    }
}

impl From<String> for StatsText {
    fn from(s: String) -> Self {
        StatsText::plain(&s)
    }
}

impl AddFile {
    /// The stats JSON text, unescaped (None when the file has none). Fails only when the stats
    /// live in a checkpoint or large commit that can no longer be read (see [`StatsText`]).
    pub fn stats_text(&self) -> crate::error::Result<Option<Cow<'_, str>>> {
        self.stats.as_ref().map_or(Ok(None), StatsText::text)
    }

    /// The stats as stored, not unescaped (see [`RawStats`]).
    fn stats_source(&self) -> Option<(&Arc<dyn StatsSource>, u32)> {
        self.stats.as_ref()?.source()
    }

    /// Whether both files' stats are deferred to one source (one checkpoint unit, one range of a
    /// large commit).
    pub(crate) fn shares_stats_source(&self, other: &AddFile) -> bool {
        // By address: two `dyn` pointers to one value may carry different vtables.
        match (self.stats_source(), other.stats_source()) {
            (Some((a, _)), Some((b, _))) => std::ptr::addr_eq(Arc::as_ptr(a), Arc::as_ptr(b)),
            _ => false,
        }
    }

    /// See [`StatsText::len_hint`] (0 without stats).
    pub(crate) fn stats_len_hint(&self) -> usize {
        self.stats.as_ref().map_or(0, StatsText::len_hint)
    }

    pub fn raw_stats(&self) -> crate::error::Result<Option<RawStats<'_>>> {
        self.stats.as_ref().map_or(Ok(None), StatsText::raw)
    }

    /// `stats.numRecords` (None without stats or when they do not say).
    pub fn num_records(&self) -> crate::error::Result<Option<i64>> {
        Ok(self.raw_stats()?.and_then(|r| r.num_records()))
    }

    pub fn dv_unique_id(&self) -> Option<String> {
        self.deletion_vector.as_ref().map(|d| d.unique_id())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn num_records_fast_path_and_fallback() {
        let cases = [
            (
                RawStats::Plain(r#"{"numRecords":42,"minValues":{}}"#),
                Some(42),
            ),
            (RawStats::Plain(r#"{"numRecords":7}"#), Some(7)),
            (
                RawStats::Literal(r#""{\"numRecords\":9,\"x\":1}""#),
                Some(9),
            ),
            (
                RawStats::Plain(r#"{"minValues":{"a":1},"numRecords":5}"#),
                Some(5),
            ),
            (RawStats::Plain(r#"{"numRecords": 6}"#), Some(6)),
            (RawStats::Plain(r#"{"numRecords":null}"#), None),
            (RawStats::Plain(r#"{"numRecords":1.5}"#), None),
            (RawStats::Plain("garbage"), None),
            (
                RawStats::Literal(r#""{\"minValues\":{},\"numRecords\":3}""#),
                Some(3),
            ),
        ];
        for (raw, want) in cases {
            assert_eq!(raw.num_records(), want, "{raw:?}");
        }
    }

    #[test]
    fn stats_text_keeps_literals_and_plain_text_apart() {
        let text = |s: &StatsText| s.text().unwrap().unwrap().into_owned();
        let lit = StatsText::literal(r#""{\"numRecords\":3}""#);
        assert_eq!(text(&lit), r#"{"numRecords":3}"#);
        assert_eq!(text(&StatsText::literal(r#""abc""#)), "abc");
        assert_eq!(text(&StatsText::plain(r#"{"a":1}"#)), r#"{"a":1}"#);
        // Plain text that starts with a quote must not be mistaken for a literal.
        assert_eq!(text(&StatsText::plain(r#""quoted\""#)), r#""quoted\""#);
        assert_eq!(lit, StatsText::literal(r#""{\"numRecords\":3}""#));
        let plain = lit.clone().into_plain();
        assert_eq!(text(&plain), text(&lit));
        assert!(matches!(plain.text(), Ok(Some(Cow::Borrowed(_)))));
    }
}
