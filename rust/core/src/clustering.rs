//! Liquid clustering (protocol "Clustered Table"): the clustering columns live in the system
//! domain `delta.clustering` as `{"clusteringColumns": [["<physical name>"], ...]}` (one path per
//! column, as delta-spark and Delta Kernel write it), the table needs the `clustering` and
//! `domainMetadata` writer features, and files that OPTIMIZE clustered carry
//! `clusteringProvider: "liquid"`.

use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::log::actions::DomainMetadata;
use crate::schema::{ColumnMappingMode, DataType, StructType};
use crate::snapshot::Snapshot;

pub const DOMAIN: &str = "delta.clustering";
/// The `clusteringProvider` of files clustered by OPTIMIZE.
pub const PROVIDER: &str = "liquid";
/// Writer features a clustered table needs.
pub const FEATURES: &[&str] = &["clustering", "domainMetadata"];

/// The clustering columns of `snap` (logical names; empty after CLUSTER BY NONE), or `None`
/// when the table was never clustered. Only top-level columns are mapped back; a nested path
/// is returned with its physical parts joined by dots.
pub fn columns(snap: &Snapshot) -> Result<Option<Vec<String>>> {
    let Some(d) = snap.state.domains.get(DOMAIN).filter(|d| !d.removed) else {
        return Ok(None);
    };
    let bad = |why: String| {
        Error::corrupt(
            snap.root.join("_delta_log"),
            Some(snap.version()),
            format!("domain {DOMAIN}: {why}"),
        )
    };
    let config: Value = serde_json::from_str(&d.configuration).map_err(|e| bad(e.to_string()))?;
    let Some(list) = config.get("clusteringColumns").and_then(Value::as_array) else {
        return Err(bad("no clusteringColumns array".into()));
    };
    let mut out = Vec::with_capacity(list.len());
    for c in list {
        // delta-spark: a path (array of names); the protocol text shows plain names too.
        let path: Vec<&str> = match c {
            Value::String(s) => vec![s.as_str()],
            Value::Array(parts) => parts
                .iter()
                .map(|p| {
                    p.as_str()
                        .ok_or_else(|| bad(format!("bad column path {c}")))
                })
                .collect::<Result<_>>()?,
            other => return Err(bad(format!("bad column {other}"))),
        };
        let logical = match path.as_slice() {
            [one] => snap
                .schema
                .fields
                .iter()
                .find(|f| f.physical_name(snap.mapping) == *one)
                .map(|f| f.name.clone())
                .unwrap_or_else(|| one.to_string()),
            parts => parts.join("."),
        };
        out.push(logical);
    }
    Ok(Some(out))
}

/// The `delta.clustering` domain action for clustering by `columns` (logical, top-level, any
/// letter case): refused for a partitioned table, an unknown or repeated column, or a column of
/// a type without an order (struct, array, map).
pub fn domain_for(
    schema: &StructType,
    mode: ColumnMappingMode,
    partition_columns: &[String],
    columns: &[String],
) -> Result<DomainMetadata> {
    if !partition_columns.is_empty() && !columns.is_empty() {
        return Err(Error::invalid(format!(
            "a partitioned table (partitioned by {partition_columns:?}) cannot be clustered: use partition_by or cluster_by, not both"
        )));
    }
    let mut physical: Vec<Value> = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for c in columns {
        let f = schema
            .fields
            .iter()
            .find(|f| f.name.eq_ignore_ascii_case(c))
            .ok_or_else(|| {
                Error::invalid(format!(
                    "cluster_by: no column {c:?} in the table (columns: {:?})",
                    schema.fields.iter().map(|f| &f.name).collect::<Vec<_>>()
                ))
            })?;
        if seen.contains(&f.name.as_str()) {
            return Err(Error::invalid(format!(
                "cluster_by: {:?} given twice",
                f.name
            )));
        }
        seen.push(&f.name);
        let kind = match &f.data_type {
            DataType::Primitive(_) | DataType::Decimal(..) => None,
            DataType::Array(..) => Some("an array"),
            DataType::Map(..) => Some("a map"),
            DataType::Struct(_) => Some("a struct"),
        };
        if let Some(kind) = kind {
            return Err(Error::invalid(format!(
                "cluster_by: {:?} is {kind} column; clustering columns must be of a type with an order",
                f.name
            )));
        }
        physical.push(json!([f.physical_name(mode)]));
    }
    Ok(DomainMetadata {
        domain: DOMAIN.into(),
        configuration: json!({ "clusteringColumns": physical }).to_string(),
        removed: false,
    })
}
