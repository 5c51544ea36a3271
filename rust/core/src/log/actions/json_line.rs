//! Parsing one line of a JSON commit into actions. Borrowed strings keep the 1M-add path
//! allocation-light.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use super::{
    Action, Actions, AddExtra, AddFile, CdcFile, DomainMetadata, Metadata, PartitionInterner,
    Protocol, RemoveFile, Sidecar, StatsText, Txn,
};
use crate::dv::descriptor::DeletionVectorDescriptor;

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
    #[serde(borrow, default)]
    cdc: Option<Box<JsonCdc<'a>>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct JsonCdc<'a> {
    #[serde(borrow)]
    path: Cow<'a, str>,
    #[serde(borrow)]
    partition_values: &'a RawValue,
    size: i64,
    #[serde(default)]
    data_change: bool,
    #[serde(default)]
    tags: Option<BTreeMap<String, Option<String>>>,
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
        if let Some(c) = self.cdc {
            out.push(Action::Cdc(CdcFile {
                path: c.path.into(),
                partition_values: interner.json(c.partition_values.get())?,
                size: c.size,
                data_change: c.data_change,
                tags: c.tags,
            }));
        }
        Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

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

    /// A `cdc` line as delta-spark writes it (protocol "Add CDC File") parses into a cdc action
    /// and is written back with the same fields.
    #[test]
    fn cdc_action_round_trips() {
        let text = r#"{"cdc":{"path":"_change_data/p=x/cdc-00000-a.c000.snappy.parquet","partitionValues":{"p":"x"},"size":928,"dataChange":false}}"#;
        let j: JsonLine = serde_json::from_str(text).unwrap();
        let mut out = Actions::default();
        j.into_actions(
            None,
            &mut out,
            &mut PartitionInterner::default(),
            &mut StatsSink::Keep,
        )
        .unwrap();
        let [Action::Cdc(c)] = out.other.as_slice() else {
            panic!("one cdc action expected, got {:?}", out.other)
        };
        assert_eq!(&*c.path, "_change_data/p=x/cdc-00000-a.c000.snappy.parquet");
        assert_eq!(c.size, 928);
        assert!(!c.data_change);
        let back = c.to_json();
        assert_eq!(
            back,
            serde_json::from_str::<serde_json::Value>(text).unwrap()
        );
    }
}
