//! Delta log actions as stored in the snapshot, and their JSON forms (protocol-notes.md §2).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::fmt;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::dv::descriptor::DeletionVectorDescriptor;

/// Partition values in log order: `(column, value)`, `None` for null. A small vector is cheaper
/// than a map per file and partition columns are few.
pub type PartitionValues = Vec<(Box<str>, Option<Box<str>>)>;

#[derive(Debug, Clone, PartialEq)]
pub struct AddFile {
    /// As written in the log: URI-encoded, relative to the table root or absolute.
    pub path: Box<str>,
    pub partition_values: PartitionValues,
    pub size: i64,
    pub modification_time: i64,
    pub data_change: bool,
    /// The stats JSON text, kept unparsed until a caller needs it.
    pub stats: Option<Box<str>>,
    pub tags: Option<Box<BTreeMap<String, Option<String>>>>,
    /// Boxed: most files have none, and the descriptor is larger than the rest of the struct.
    pub deletion_vector: Option<Box<DeletionVectorDescriptor>>,
    pub base_row_id: Option<i64>,
    pub default_row_commit_version: Option<i64>,
    pub clustering_provider: Option<Box<str>>,
}

impl AddFile {
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

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Format {
    pub provider: String,
    #[serde(default)]
    pub options: HashMap<String, Option<String>>,
}

impl Default for Format {
    fn default() -> Self {
        Format { provider: "parquet".into(), options: HashMap::new() }
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
    Metadata(Metadata),
    Protocol(Protocol),
    Txn(Txn),
    Domain(DomainMetadata),
    /// Raw JSON text of the commitInfo object.
    CommitInfo(Box<str>),
    Sidecar(Sidecar),
    CheckpointMetadata,
}

// ---------------------------------------------------------------------------------------------
// JSON line parsing. Borrowed strings keep the 1M-add path allocation-light.

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct JsonLine<'a> {
    #[serde(borrow, default)]
    add: Option<JsonAdd<'a>>,
    #[serde(borrow, default)]
    remove: Option<JsonRemove<'a>>,
    #[serde(default)]
    meta_data: Option<Metadata>,
    #[serde(default)]
    protocol: Option<Protocol>,
    #[serde(default)]
    txn: Option<Txn>,
    #[serde(default)]
    domain_metadata: Option<DomainMetadata>,
    #[serde(borrow, default)]
    commit_info: Option<&'a RawValue>,
    #[serde(default)]
    sidecar: Option<Sidecar>,
    #[serde(borrow, default)]
    checkpoint_metadata: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct JsonAdd<'a> {
    #[serde(borrow)]
    path: Cow<'a, str>,
    #[serde(deserialize_with = "partition_values")]
    partition_values: PartitionValues,
    size: i64,
    modification_time: i64,
    data_change: bool,
    #[serde(borrow, default)]
    stats: Option<Cow<'a, str>>,
    #[serde(default)]
    tags: Option<BTreeMap<String, Option<String>>>,
    #[serde(default)]
    deletion_vector: Option<DeletionVectorDescriptor>,
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
    #[serde(default, deserialize_with = "opt_partition_values")]
    partition_values: Option<PartitionValues>,
    #[serde(default)]
    size: Option<i64>,
    #[serde(default)]
    deletion_vector: Option<DeletionVectorDescriptor>,
    #[serde(default)]
    base_row_id: Option<i64>,
    #[serde(default)]
    default_row_commit_version: Option<i64>,
}

impl<'a> JsonLine<'a> {
    /// Push this line's actions (normally exactly one) onto `out`.
    pub(crate) fn into_actions(self, out: &mut Vec<Action>) {
        if let Some(a) = self.add {
            out.push(Action::Add(AddFile {
                path: a.path.into(),
                partition_values: a.partition_values,
                size: a.size,
                modification_time: a.modification_time,
                data_change: a.data_change,
                stats: a.stats.map(Into::into),
                tags: a.tags.map(Box::new),
                deletion_vector: a.deletion_vector.map(Box::new),
                base_row_id: a.base_row_id,
                default_row_commit_version: a.default_row_commit_version,
                clustering_provider: a.clustering_provider.map(Into::into),
            }));
        }
        if let Some(r) = self.remove {
            out.push(Action::Remove(RemoveFile {
                path: r.path.into(),
                deletion_timestamp: r.deletion_timestamp,
                data_change: r.data_change,
                extended_file_metadata: r.extended_file_metadata,
                partition_values: r.partition_values,
                size: r.size,
                deletion_vector: r.deletion_vector.map(Box::new),
                base_row_id: r.base_row_id,
                default_row_commit_version: r.default_row_commit_version,
            }));
        }
        if let Some(m) = self.meta_data {
            out.push(Action::Metadata(m));
        }
        if let Some(p) = self.protocol {
            out.push(Action::Protocol(p));
        }
        if let Some(t) = self.txn {
            out.push(Action::Txn(t));
        }
        if let Some(d) = self.domain_metadata {
            out.push(Action::Domain(d));
        }
        if let Some(c) = self.commit_info {
            out.push(Action::CommitInfo(c.get().into()));
        }
        if let Some(s) = self.sidecar {
            out.push(Action::Sidecar(s));
        }
        if self.checkpoint_metadata.is_some() {
            out.push(Action::CheckpointMetadata);
        }
    }
}

struct PartitionValuesVisitor;

impl<'de> Visitor<'de> for PartitionValuesVisitor {
    type Value = PartitionValues;

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

fn partition_values<'de, D: Deserializer<'de>>(d: D) -> Result<PartitionValues, D::Error> {
    d.deserialize_map(PartitionValuesVisitor)
}

fn opt_partition_values<'de, D: Deserializer<'de>>(d: D) -> Result<Option<PartitionValues>, D::Error> {
    Option::<PartitionValuesSeed>::deserialize(d).map(|o| o.map(|s| s.0))
}

struct PartitionValuesSeed(PartitionValues);

impl<'de> Deserialize<'de> for PartitionValuesSeed {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(PartitionValuesVisitor).map(PartitionValuesSeed)
    }
}

fn string_map_dropping_nulls<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, String>, D::Error> {
    let m = Option::<BTreeMap<String, Option<String>>>::deserialize(d)?;
    Ok(m.unwrap_or_default().into_iter().filter_map(|(k, v)| v.map(|v| (k, v))).collect())
}

// ---------------------------------------------------------------------------------------------
// JSON writing (commits written by delta-occ).

pub fn partition_values_json(pv: &PartitionValues) -> serde_json::Value {
    let mut m = serde_json::Map::new();
    for (k, v) in pv {
        m.insert(k.to_string(), v.as_deref().map(|s| serde_json::Value::String(s.into())).unwrap_or(serde_json::Value::Null));
    }
    serde_json::Value::Object(m)
}

impl AddFile {
    pub fn to_json(&self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        m.insert("path".into(), self.path.as_ref().into());
        m.insert("partitionValues".into(), partition_values_json(&self.partition_values));
        m.insert("size".into(), self.size.into());
        m.insert("modificationTime".into(), self.modification_time.into());
        m.insert("dataChange".into(), self.data_change.into());
        if let Some(s) = &self.stats {
            m.insert("stats".into(), s.as_ref().into());
        }
        if let Some(t) = &self.tags {
            m.insert("tags".into(), serde_json::to_value(t).unwrap_or_default());
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
        if let Some(c) = &self.clustering_provider {
            m.insert("clusteringProvider".into(), c.as_ref().into());
        }
        serde_json::json!({ "add": m })
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
