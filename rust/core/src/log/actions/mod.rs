//! Delta log actions as stored in the snapshot, and their JSON forms (protocol-notes.md §2):
//! the actions themselves here; partition tuples, stats text, parsing commit lines and writing
//! actions in modules of their own.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize};

use crate::dv::descriptor::DeletionVectorDescriptor;

mod json_line;
mod json_write;
mod partition_values;
mod stats_text;

pub(crate) use json_line::{JsonLine, StatsSink};
pub use partition_values::{PartitionInterner, PartitionValues};
#[cfg(test)]
pub(crate) use stats_text::visited_stats;
pub(crate) use stats_text::{visit_each, visit_stats, StatsSource, VisitStats};
pub use stats_text::{RawStats, StatsText};

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
        // Field by field: building a default to compare with cost 2% of a checkpoint's load.
        let AddExtra {
            tags,
            base_row_id,
            default_row_commit_version,
            clustering_provider,
        } = &self;
        let none = tags.is_none()
            && base_row_id.is_none()
            && default_row_commit_version.is_none()
            && clustering_provider.is_none();
        (!none).then(|| Box::new(self))
    }
}

impl AddFile {
    pub fn tags(&self) -> Option<&BTreeMap<String, Option<String>>> {
        self.extra.as_ref()?.tags.as_ref()
    }

    pub fn base_row_id(&self) -> Option<i64> {
        self.extra.as_ref()?.base_row_id
    }

    /// The rarely present fields, created empty on first use.
    pub fn extra_mut(&mut self) -> &mut AddExtra {
        self.extra.get_or_insert_with(Default::default)
    }

    pub fn default_row_commit_version(&self) -> Option<i64> {
        self.extra.as_ref()?.default_row_commit_version
    }

    pub fn clustering_provider(&self) -> Option<&str> {
        self.extra.as_ref()?.clustering_provider.as_deref()
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

/// A `cdc` action: a change-data file (rows with `_change_type`) of one commit. Readers of the
/// change feed use a commit's cdc files instead of its adds and removes; they are never table
/// data, so replay and the conflict checks pass them by.
#[derive(Debug, Clone, PartialEq)]
pub struct CdcFile {
    pub path: Box<str>,
    pub partition_values: PartitionValues,
    pub size: i64,
    pub data_change: bool,
    pub tags: Option<BTreeMap<String, Option<String>>>,
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
    Cdc(CdcFile),
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

    /// The parts in order as one set; the adds are moved on all cores (or into the first part,
    /// when its reader reserved room for all), with room for `later` adds (`parallel::concat`).
    pub fn concat(parts: Vec<Actions>, later: usize) -> Actions {
        let mut adds = Vec::with_capacity(parts.len());
        let mut other = Vec::new();
        for mut p in parts {
            adds.push(p.adds);
            other.append(&mut p.other);
        }
        Actions {
            adds: crate::parallel::concat(adds, later),
            other,
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

fn string_map_dropping_nulls<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, String>, D::Error> {
    let m = Option::<BTreeMap<String, Option<String>>>::deserialize(d)?;
    Ok(m.unwrap_or_default()
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect())
}
