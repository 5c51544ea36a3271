//! Actions as JSON, for the commits delta-occ writes.

use super::{AddFile, CdcFile, PartitionValues, RemoveFile};

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

impl CdcFile {
    pub fn to_json(&self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        m.insert("path".into(), self.path.as_ref().into());
        m.insert(
            "partitionValues".into(),
            partition_values_json(&self.partition_values),
        );
        m.insert("size".into(), self.size.into());
        m.insert("dataChange".into(), self.data_change.into());
        if let Some(t) = &self.tags {
            m.insert("tags".into(), serde_json::to_value(t).unwrap_or_default());
        }
        serde_json::json!({ "cdc": m })
    }
}
