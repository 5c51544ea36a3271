//! Delta log actions as stored in the snapshot, and their JSON forms (protocol-notes.md §2).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::unescape::{unescape, unescape_into};
use crate::dv::descriptor::DeletionVectorDescriptor;

/// Partition values in log order: `(column, value)`, `None` for null. Shared and immutable: a
/// table has few distinct partition tuples, so the log readers intern them (one allocation per
/// distinct tuple rather than three per file), and a verdict on a tuple can be cached by
/// [`PartitionValues::id`].
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct PartitionValues(Arc<[PartitionValue]>);

/// One partition column's physical name and serialized value (None for null).
pub type PartitionValue = (Box<str>, Option<Box<str>>);

impl PartitionValues {
    /// Identifies the shared tuple while `self` is alive (equal ids imply equal values).
    pub fn id(&self) -> usize {
        Arc::as_ptr(&self.0) as *const u8 as usize
    }
}

impl std::ops::Deref for PartitionValues {
    type Target = [(Box<str>, Option<Box<str>>)];
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl fmt::Debug for PartitionValues {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl From<Vec<(Box<str>, Option<Box<str>>)>> for PartitionValues {
    fn from(v: Vec<(Box<str>, Option<Box<str>>)>) -> Self {
        PartitionValues(v.into())
    }
}

impl<K: Into<Box<str>>, V: Into<Box<str>>> FromIterator<(K, Option<V>)> for PartitionValues {
    fn from_iter<I: IntoIterator<Item = (K, Option<V>)>>(iter: I) -> Self {
        PartitionValues(
            iter.into_iter()
                .map(|(k, v)| (k.into(), v.map(Into::into)))
                .collect(),
        )
    }
}

/// Interns partition tuples while one reader works through a commit or checkpoint part.
#[derive(Default)]
pub struct PartitionInterner {
    /// Keyed by the raw JSON text of a commit's `partitionValues` object.
    by_json: hashbrown::HashMap<Box<str>, PartitionValues>,
    /// Keyed by the values themselves.
    by_value: hashbrown::HashTable<PartitionValues>,
    hasher: hashbrown::DefaultHashBuilder,
}

impl PartitionInterner {
    /// The tuple of a `partitionValues` JSON object (raw text), parsed once per distinct text.
    pub fn json(&mut self, raw: &str) -> Result<PartitionValues, String> {
        if let Some(pv) = self.by_json.get(raw) {
            return Ok(pv.clone());
        }
        let parsed: PartitionValuesSeed =
            serde_json::from_str(raw).map_err(|e| format!("partitionValues: {e}"))?;
        let pv = self.values(parsed.0.iter().map(|(k, v)| (&**k, v.as_deref())));
        self.by_json.insert(raw.into(), pv.clone());
        Ok(pv)
    }

    /// The tuple with these `(column, value)` pairs.
    pub fn values<'a>(
        &mut self,
        pairs: impl Iterator<Item = (&'a str, Option<&'a str>)> + Clone,
    ) -> PartitionValues {
        let hash = hash_pairs(&self.hasher, pairs.clone());
        let same = |pv: &PartitionValues| {
            let mut it = pairs.clone();
            pv.iter().all(|(a, b)| {
                it.next()
                    .is_some_and(|(k, v)| &**a == k && b.as_deref() == v)
            }) && it.next().is_none()
        };
        if let Some(pv) = self.by_value.find(hash, same) {
            return pv.clone();
        }
        let pv: PartitionValues = pairs.collect();
        let hasher = &self.hasher;
        self.by_value.insert_unique(hash, pv.clone(), |p| {
            hash_pairs(hasher, p.iter().map(|(k, v)| (&**k, v.as_deref())))
        });
        pv
    }
}

fn hash_pairs<'a>(
    hasher: &hashbrown::DefaultHashBuilder,
    pairs: impl Iterator<Item = (&'a str, Option<&'a str>)>,
) -> u64 {
    use std::hash::{BuildHasher, Hash, Hasher};
    let mut h = hasher.build_hasher();
    for (k, v) in pairs {
        k.hash(&mut h);
        v.hash(&mut h);
    }
    h.finish()
}

#[derive(Debug, Clone, PartialEq)]
pub struct AddFile {
    /// As written in the log: URI-encoded, relative to the table root or absolute.
    pub path: Arc<str>,
    pub partition_values: PartitionValues,
    pub size: i64,
    pub modification_time: i64,
    pub data_change: bool,
    /// The stats JSON text, kept unparsed (and, from a JSON commit, still escaped) until a caller
    /// needs it.
    pub stats: Option<StatsText>,
    /// Boxed: most files have none, and the descriptor is larger than the rest of the struct.
    pub deletion_vector: Option<Box<DeletionVectorDescriptor>>,
    /// The fields most files lack, boxed together (`None` when all are absent): a million live
    /// files then take a third less memory than with the fields inline.
    pub extra: Option<Box<AddExtra>>,
}

/// The rarely present fields of an add.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AddExtra {
    pub tags: Option<BTreeMap<String, Option<String>>>,
    pub base_row_id: Option<i64>,
    pub default_row_commit_version: Option<i64>,
    pub clustering_provider: Option<Box<str>>,
}

impl AddExtra {
    /// Boxed, or `None` when every field is absent.
    pub fn boxed(self) -> Option<Box<Self>> {
        (self != Self::default()).then(|| Box::new(self))
    }
}

impl AddFile {
    pub fn tags(&self) -> Option<&BTreeMap<String, Option<String>>> {
        self.extra.as_ref()?.tags.as_ref()
    }

    pub fn base_row_id(&self) -> Option<i64> {
        self.extra.as_ref()?.base_row_id
    }

    pub fn default_row_commit_version(&self) -> Option<i64> {
        self.extra.as_ref()?.default_row_commit_version
    }

    pub fn clustering_provider(&self) -> Option<&str> {
        self.extra.as_ref()?.clustering_provider.as_deref()
    }
}

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
    fn literal(raw: &str) -> Self {
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

#[derive(Debug, Clone, PartialEq)]
pub struct RemoveFile {
    pub path: Box<str>,
    pub deletion_timestamp: Option<i64>,
    pub data_change: bool,
    pub extended_file_metadata: Option<bool>,
    pub partition_values: Option<PartitionValues>,
    pub size: Option<i64>,
    pub deletion_vector: Option<Box<DeletionVectorDescriptor>>,
    pub base_row_id: Option<i64>,
    pub default_row_commit_version: Option<i64>,
}

impl RemoveFile {
    pub fn dv_unique_id(&self) -> Option<String> {
        self.deletion_vector.as_ref().map(|d| d.unique_id())
    }
}

/// A remove for a live file, carrying its extended metadata.
pub fn remove_of(f: &AddFile, data_change: bool) -> RemoveFile {
    RemoveFile {
        path: f.path.as_ref().into(),
        deletion_timestamp: Some(chrono::Utc::now().timestamp_millis()),
        data_change,
        extended_file_metadata: Some(true),
        partition_values: Some(f.partition_values.clone()),
        size: Some(f.size),
        deletion_vector: f.deletion_vector.clone(),
        base_row_id: f.base_row_id(),
        default_row_commit_version: f.default_row_commit_version(),
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Format {
    pub provider: String,
    #[serde(default)]
    pub options: HashMap<String, Option<String>>,
}

impl Default for Format {
    fn default() -> Self {
        Format {
            provider: "parquet".into(),
            options: HashMap::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default)]
    pub format: Format,
    pub schema_string: String,
    #[serde(default)]
    pub partition_columns: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_time: Option<i64>,
    #[serde(default, deserialize_with = "string_map_dropping_nulls")]
    pub configuration: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Protocol {
    pub min_reader_version: i32,
    pub min_writer_version: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reader_features: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writer_features: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Txn {
    pub app_id: String,
    pub version: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_updated: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DomainMetadata {
    pub domain: String,
    pub configuration: String,
    #[serde(default)]
    pub removed: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Sidecar {
    pub path: String,
    #[serde(default)]
    pub size_in_bytes: Option<i64>,
    #[serde(default)]
    pub modification_time: Option<i64>,
}

/// One action of a commit or checkpoint, in the form replay consumes.
#[derive(Debug, Clone)]
pub enum Action {
    Add(AddFile),
    Remove(RemoveFile),
    /// Boxed: rare, and much larger than an add.
    Metadata(Box<Metadata>),
    Protocol(Protocol),
    Txn(Txn),
    Domain(DomainMetadata),
    /// Raw JSON text of the commitInfo object.
    CommitInfo(Box<str>),
    Sidecar(Sidecar),
    CheckpointMetadata,
}

/// Parsed actions of a commit, a checkpoint, or a part of one. Adds are kept apart: they are
/// nearly all of a large log, and replay moves them in bulk. The other actions keep log order.
#[derive(Debug, Default)]
pub struct Actions {
    pub adds: Vec<AddFile>,
    pub other: Vec<Action>,
}

impl Actions {
    pub fn len(&self) -> usize {
        self.adds.len() + self.other.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn push(&mut self, action: Action) {
        match action {
            Action::Add(a) => self.adds.push(a),
            other => self.other.push(other),
        }
    }

    pub fn append(&mut self, mut more: Actions) {
        if self.adds.is_empty() {
            self.adds = more.adds;
        } else {
            self.adds.append(&mut more.adds);
        }
        self.other.append(&mut more.other);
    }
}

impl From<Vec<Action>> for Actions {
    fn from(v: Vec<Action>) -> Self {
        let mut out = Actions::default();
        for a in v {
            out.push(a);
        }
        out
    }
}

// ---------------------------------------------------------------------------------------------
// JSON line parsing. Borrowed strings keep the 1M-add path allocation-light.

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
/// Rare or large parts are boxed: serde builds and moves this struct once per line.
pub(crate) struct JsonLine<'a> {
    #[serde(borrow, default)]
    add: Option<Box<JsonAdd<'a>>>,
    #[serde(borrow, default)]
    remove: Option<Box<JsonRemove<'a>>>,
    #[serde(default)]
    meta_data: Option<Box<Metadata>>,
    #[serde(default)]
    protocol: Option<Box<Protocol>>,
    #[serde(default)]
    txn: Option<Box<Txn>>,
    #[serde(default)]
    domain_metadata: Option<Box<DomainMetadata>>,
    #[serde(borrow, default)]
    commit_info: Option<&'a RawValue>,
    #[serde(default)]
    sidecar: Option<Box<Sidecar>>,
    #[serde(borrow, default)]
    checkpoint_metadata: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct JsonAdd<'a> {
    #[serde(borrow)]
    path: Cow<'a, str>,
    #[serde(borrow)]
    partition_values: &'a RawValue,
    size: i64,
    modification_time: i64,
    data_change: bool,
    #[serde(borrow, default, deserialize_with = "stats_literal")]
    stats: Option<&'a RawValue>,
    #[serde(default)]
    tags: Option<BTreeMap<String, Option<String>>>,
    #[serde(default)]
    deletion_vector: Option<Box<DeletionVectorDescriptor>>,
    #[serde(default)]
    base_row_id: Option<i64>,
    #[serde(default)]
    default_row_commit_version: Option<i64>,
    #[serde(default)]
    clustering_provider: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct JsonRemove<'a> {
    #[serde(borrow)]
    path: Cow<'a, str>,
    #[serde(default)]
    deletion_timestamp: Option<i64>,
    data_change: bool,
    #[serde(default)]
    extended_file_metadata: Option<bool>,
    #[serde(borrow, default)]
    partition_values: Option<&'a RawValue>,
    #[serde(default)]
    size: Option<i64>,
    #[serde(default)]
    deletion_vector: Option<Box<DeletionVectorDescriptor>>,
    #[serde(default)]
    base_row_id: Option<i64>,
    #[serde(default)]
    default_row_commit_version: Option<i64>,
}

/// What becomes of the `add.stats` literals of parsed lines.
pub(crate) enum StatsSink<'s> {
    /// Copied into each add.
    Keep,
    /// Left in the file: each literal's `(add index, file offset, length)` is pushed onto `found`
    /// (`base` is the address of the text at file offset `offset`); the caller fills the adds'
    /// stats in afterwards.
    Locate {
        base: usize,
        offset: u64,
        found: &'s mut Vec<(usize, u64, u32)>,
    },
}

impl StatsSink<'_> {
    /// What to store as the stats of the add that becomes `out.adds[index]`, whose stats literal
    /// (if any) is `literal`.
    pub(crate) fn take(&mut self, literal: Option<&str>, index: usize) -> Option<StatsText> {
        match (literal, self) {
            (None, _) => None,
            (Some(literal), StatsSink::Keep) => Some(StatsText::literal(literal)),
            (
                Some(literal),
                StatsSink::Locate {
                    base,
                    offset,
                    found,
                },
            ) => {
                found.push((
                    index,
                    *offset + (literal.as_ptr() as usize - *base) as u64,
                    literal.len() as u32,
                ));
                None
            }
        }
    }
}

impl<'a> JsonLine<'a> {
    /// The add's stats literal as parsed.
    pub(crate) fn add_stats(&self) -> Option<&str> {
        self.add.as_ref().and_then(|a| a.stats).map(RawValue::get)
    }

    /// Push this line's actions (normally exactly one) onto `out`. `stats`, if given, replaces
    /// the add's parsed stats literal (which was a placeholder).
    pub(crate) fn into_actions(
        self,
        stats: Option<&str>,
        out: &mut Actions,
        interner: &mut PartitionInterner,
        sink: &mut StatsSink,
    ) -> Result<(), String> {
        if let Some(a) = self.add {
            let stats = sink.take(stats.or(a.stats.map(RawValue::get)), out.adds.len());
            out.adds.push(AddFile {
                path: a.path.into(),
                partition_values: interner.json(a.partition_values.get())?,
                size: a.size,
                modification_time: a.modification_time,
                data_change: a.data_change,
                stats,
                deletion_vector: a.deletion_vector,
                extra: AddExtra {
                    tags: a.tags,
                    base_row_id: a.base_row_id,
                    default_row_commit_version: a.default_row_commit_version,
                    clustering_provider: a.clustering_provider.map(Into::into),
                }
                .boxed(),
            });
        }
        if let Some(r) = self.remove {
            out.push(Action::Remove(RemoveFile {
                path: r.path.into(),
                deletion_timestamp: r.deletion_timestamp,
                data_change: r.data_change,
                extended_file_metadata: r.extended_file_metadata,
                // serde gives `None` for a JSON null.
                partition_values: r
                    .partition_values
                    .map(|raw| interner.json(raw.get()))
                    .transpose()?,
                size: r.size,
                deletion_vector: r.deletion_vector,
                base_row_id: r.base_row_id,
                default_row_commit_version: r.default_row_commit_version,
            }));
        }
        if let Some(m) = self.meta_data {
            out.push(Action::Metadata(m));
        }
        if let Some(p) = self.protocol {
            out.push(Action::Protocol(*p));
        }
        if let Some(t) = self.txn {
            out.push(Action::Txn(*t));
        }
        if let Some(d) = self.domain_metadata {
            out.push(Action::Domain(*d));
        }
        if let Some(c) = self.commit_info {
            out.push(Action::CommitInfo(c.get().into()));
        }
        if let Some(s) = self.sidecar {
            out.push(Action::Sidecar(*s));
        }
        if self.checkpoint_metadata.is_some() {
            out.push(Action::CheckpointMetadata);
        }
        Ok(())
    }
}

struct PartitionValuesVisitor;

impl<'de> Visitor<'de> for PartitionValuesVisitor {
    type Value = Vec<(Box<str>, Option<Box<str>>)>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map of partition column to string or null")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
        let mut out = Vec::with_capacity(map.size_hint().unwrap_or(0));
        while let Some((k, v)) = map.next_entry::<Cow<'de, str>, Option<Cow<'de, str>>>()? {
            out.push((k.into(), v.map(Into::into)));
        }
        Ok(out)
    }
}

struct PartitionValuesSeed(Vec<(Box<str>, Option<Box<str>>)>);

impl<'de> Deserialize<'de> for PartitionValuesSeed {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(PartitionValuesVisitor)
            .map(PartitionValuesSeed)
    }
}

/// `add.stats`: a string or null, borrowed as the raw literal (not unescaped).
fn stats_literal<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    let raw = Option::<&'de RawValue>::deserialize(d)?;
    // serde gives `None` for a JSON null.
    match raw {
        Some(r) if !r.get().starts_with('"') => Err(serde::de::Error::custom(
            "add.stats must be a string or null",
        )),
        r => Ok(r),
    }
}

fn string_map_dropping_nulls<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, String>, D::Error> {
    let m = Option::<BTreeMap<String, Option<String>>>::deserialize(d)?;
    Ok(m.unwrap_or_default()
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect())
}

// ---------------------------------------------------------------------------------------------
// JSON writing (commits written by delta-occ).

pub fn partition_values_json(pv: &PartitionValues) -> serde_json::Value {
    let mut m = serde_json::Map::new();
    for (k, v) in pv.iter() {
        m.insert(
            k.to_string(),
            v.as_deref()
                .map(|s| serde_json::Value::String(s.into()))
                .unwrap_or(serde_json::Value::Null),
        );
    }
    serde_json::Value::Object(m)
}

impl AddFile {
    pub fn to_json(&self) -> crate::error::Result<serde_json::Value> {
        let mut m = serde_json::Map::new();
        m.insert("path".into(), self.path.as_ref().into());
        m.insert(
            "partitionValues".into(),
            partition_values_json(&self.partition_values),
        );
        m.insert("size".into(), self.size.into());
        m.insert("modificationTime".into(), self.modification_time.into());
        m.insert("dataChange".into(), self.data_change.into());
        if let Some(s) = self.stats_text()? {
            m.insert("stats".into(), s.into_owned().into());
        }
        if let Some(t) = self.tags() {
            m.insert("tags".into(), serde_json::to_value(t).unwrap_or_default());
        }
        if let Some(dv) = &self.deletion_vector {
            m.insert("deletionVector".into(), dv.to_json());
        }
        if let Some(v) = self.base_row_id() {
            m.insert("baseRowId".into(), v.into());
        }
        if let Some(v) = self.default_row_commit_version() {
            m.insert("defaultRowCommitVersion".into(), v.into());
        }
        if let Some(c) = self.clustering_provider() {
            m.insert("clusteringProvider".into(), c.into());
        }
        Ok(serde_json::json!({ "add": m }))
    }
}

impl RemoveFile {
    pub fn to_json(&self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        m.insert("path".into(), self.path.as_ref().into());
        if let Some(t) = self.deletion_timestamp {
            m.insert("deletionTimestamp".into(), t.into());
        }
        m.insert("dataChange".into(), self.data_change.into());
        if let Some(e) = self.extended_file_metadata {
            m.insert("extendedFileMetadata".into(), e.into());
        }
        if let Some(pv) = &self.partition_values {
            m.insert("partitionValues".into(), partition_values_json(pv));
        }
        if let Some(s) = self.size {
            m.insert("size".into(), s.into());
        }
        if let Some(dv) = &self.deletion_vector {
            m.insert("deletionVector".into(), dv.to_json());
        }
        if let Some(v) = self.base_row_id {
            m.insert("baseRowId".into(), v.into());
        }
        if let Some(v) = self.default_row_commit_version {
            m.insert("defaultRowCommitVersion".into(), v.into());
        }
        serde_json::json!({ "remove": m })
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

    #[test]
    fn add_stats_must_be_a_string_or_null() {
        let line = |stats: &str| {
            format!(
                r#"{{"add":{{"path":"p","partitionValues":{{}},"size":1,"modificationTime":2,"dataChange":true,"stats":{stats}}}}}"#
            )
        };
        let parse = |l: &str| {
            serde_json::from_str::<JsonLine>(l).map(|j| {
                let mut out = Actions::default();
                j.into_actions(
                    None,
                    &mut out,
                    &mut PartitionInterner::default(),
                    &mut StatsSink::Keep,
                )
                .unwrap();
                out.adds
                    .pop()
                    .unwrap()
                    .stats_text()
                    .unwrap()
                    .map(|c| c.into_owned())
            })
        };
        assert_eq!(parse(&line("null")).unwrap(), None);
        assert_eq!(
            parse(&line(r#""{\"numRecords\":1}""#)).unwrap().as_deref(),
            Some(r#"{"numRecords":1}"#)
        );
        assert!(parse(&line("{}"))
            .unwrap_err()
            .to_string()
            .contains("stats must be a string"));
        assert!(parse(&line("12")).is_err());
    }

    #[test]
    fn interned_partition_tuples_are_shared_and_exact() {
        let mut i = PartitionInterner::default();
        let a = i.json(r#"{"p":"1","q":null}"#).unwrap();
        let b = i.json(r#"{"p":"1","q":null}"#).unwrap();
        let c = i.values([("p", Some("1")), ("q", None)].into_iter());
        assert_eq!(a.id(), b.id());
        assert_eq!(a.id(), c.id());
        assert_eq!(&*a, &[("p".into(), Some("1".into())), ("q".into(), None)]);
        let d = i.values([("p", Some("1")), ("q", Some("1"))].into_iter());
        let e = i.values([("p", Some("1"))].into_iter());
        assert!(d.id() != a.id() && e.id() != a.id() && d != a && e != a);
        assert_eq!(i.json(r#"{"p":"\u0031"}"#).unwrap().id(), e.id());
        assert!(i
            .json(r#"{"p":1}"#)
            .unwrap_err()
            .contains("partitionValues"));
    }
}
