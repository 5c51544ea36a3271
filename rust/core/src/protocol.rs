//! What this client can read and write, and the protocol a new table needs.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::log::actions::Protocol;
use crate::schema::StructType;

/// Reader features whose data this client interprets correctly.
pub const SUPPORTED_READER_FEATURES: &[&str] = &[
    "deletionVectors",
    "columnMapping",
    "v2Checkpoint",
    "timestampNtz",
    "vacuumProtocolCheck",
    // Old files are read in the table's (wider) type: every reader casts to the table schema.
    "typeWidening",
    "typeWidening-preview",
];

pub fn check_readable(p: &Protocol, table: &str, version: i64) -> Result<()> {
    let unsupported = |what: &str, detail: String| Error::UnsupportedFeature {
        table: table.to_string(),
        version: Some(version),
        what: what.to_string(),
        detail,
    };
    match p.min_reader_version {
        1 | 2 => Ok(()),
        3 => {
            let features = p.reader_features.as_deref().unwrap_or_default();
            let unknown: Vec<&str> = features
                .iter()
                .map(String::as_str)
                .filter(|f| !SUPPORTED_READER_FEATURES.contains(f))
                .collect();
            if unknown.is_empty() {
                Ok(())
            } else {
                Err(unsupported(
                    "reader feature",
                    format!(
                        "{} (delta-occ reads {})",
                        unknown.join(", "),
                        SUPPORTED_READER_FEATURES.join(", ")
                    ),
                ))
            }
        }
        v => Err(unsupported(
            "Delta protocol reader version",
            format!(
                "minReaderVersion {v} (delta-occ reads versions 1 to 3); reader features: {:?}",
                p.reader_features.as_deref().unwrap_or_default()
            ),
        )),
    }
}

pub fn has_reader_feature(p: &Protocol, f: &str) -> bool {
    p.reader_features
        .as_ref()
        .is_some_and(|v| v.iter().any(|x| x == f))
}

pub fn has_writer_feature(p: &Protocol, f: &str) -> bool {
    p.writer_features
        .as_ref()
        .is_some_and(|v| v.iter().any(|x| x == f))
}

/// A boolean table property that is set to true (any letter case).
pub fn is_true(props: &BTreeMap<String, String>, key: &str) -> bool {
    props
        .get(key)
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

/// The protocol a new table needs for its properties and schema: legacy (1, 2) when nothing more
/// is asked for, table features (3, 7 or 1, 7) otherwise.
pub fn for_new_table(props: &BTreeMap<String, String>, schema: &StructType) -> Result<Protocol> {
    let mut reader: Vec<&str> = Vec::new();
    let mut writer: Vec<&str> = Vec::new();
    if is_true(props, "delta.enableDeletionVectors") {
        reader.push("deletionVectors");
    }
    if props
        .get("delta.columnMapping.mode")
        .is_some_and(|m| !m.eq_ignore_ascii_case("none"))
    {
        reader.push("columnMapping");
    }
    if schema.has_type("timestamp_ntz") {
        reader.push("timestampNtz");
    }
    if is_true(props, "delta.appendOnly") {
        writer.push("appendOnly");
    }
    if is_true(props, "delta.enableChangeDataFeed") {
        writer.push("changeDataFeed");
    }
    // A CHECK constraint binds every writer only when the protocol names it.
    if props
        .keys()
        .any(|k| k.to_ascii_lowercase().starts_with("delta.constraints."))
    {
        writer.push("checkConstraints");
    }
    if is_true(props, "delta.enableInCommitTimestamps") {
        writer.push("inCommitTimestamp");
    }
    // Identity values and their high-water mark bind every writer only when the protocol names it.
    if schema.has_identity_columns() {
        writer.push("identityColumns");
    }
    // So do generation expressions and column defaults.
    let declares = |key: &str| schema.fields.iter().any(|f| f.metadata.contains_key(key));
    if declares(crate::schema_arrow::GENERATION_EXPRESSION) {
        writer.push("generatedColumns");
    }
    if declares(crate::schema_arrow::CURRENT_DEFAULT) {
        writer.push("allowColumnDefaults");
    }
    // Row ids are handed out by the commit (`row_tracking`); their mark is a domain.
    if is_true(props, "delta.enableRowTracking") {
        if is_true(props, "delta.rowTrackingSuspended") {
            return Err(Error::invalid(
                "delta.enableRowTracking and delta.rowTrackingSuspended must not both be true",
            ));
        }
        writer.push("rowTracking");
        writer.push("domainMetadata");
    }
    // Readers must read old files in the widened type (`delta.typeChanges`).
    if is_true(props, "delta.enableTypeWidening") {
        reader.push("typeWidening");
    }
    // delta-spark's switch for V2 checkpoints; the feature is a reader feature too (old readers
    // must not meet a checkpoint they would misread).
    match props.get("delta.checkpointPolicy").map(|p| p.trim()) {
        None => {}
        Some(p) if p.eq_ignore_ascii_case("classic") => {}
        Some(p) if p.eq_ignore_ascii_case("v2") => reader.push("v2Checkpoint"),
        Some(p) => {
            return Err(Error::invalid(format!(
                "delta.checkpointPolicy must be 'classic' or 'v2', not {p:?}"
            )))
        }
    }
    if reader.is_empty() && writer.is_empty() {
        // legacy writer 2 implies column invariants
        return Ok(Protocol {
            min_reader_version: 1,
            min_writer_version: 2,
            reader_features: None,
            writer_features: None,
        });
    }
    // A column invariant binds every writer only when the protocol names it (table features).
    if schema
        .fields
        .iter()
        .any(|f| f.metadata.contains_key("delta.invariants"))
    {
        writer.push("invariants");
    }
    let mut all: Vec<String> = reader
        .iter()
        .chain(writer.iter())
        .map(|s| s.to_string())
        .collect();
    all.sort();
    all.dedup();
    Ok(Protocol {
        min_reader_version: if reader.is_empty() { 1 } else { 3 },
        min_writer_version: 7,
        reader_features: (!reader.is_empty())
            .then(|| reader.iter().map(|s| s.to_string()).collect()),
        writer_features: Some(all),
    })
}

/// Writer features whose rules delta-occ's commit path honours. Invariants, check constraints,
/// generated columns and column defaults are data rules: the engine that writes the files must
/// enforce them. The embedded engine does not yet, so it refuses to write new or changed rows to a
/// table that has any (deleting rows works); files added through the transaction API are the
/// caller's responsibility.
pub const SUPPORTED_WRITER_FEATURES: &[&str] = &[
    "appendOnly",
    "invariants",
    "checkConstraints",
    "generatedColumns",
    "allowColumnDefaults",
    "changeDataFeed",
    "identityColumns",
    "domainMetadata",
    "inCommitTimestamp",
    "deletionVectors",
    "columnMapping",
    "timestampNtz",
    "v2Checkpoint",
    "vacuumProtocolCheck",
    "clustering",
    "rowTracking",
    "typeWidening",
    "typeWidening-preview",
];

/// Refuse to write a table whose protocol this client cannot honour.
pub fn check_writable(p: &Protocol, table: &str, version: i64) -> Result<()> {
    check_readable(p, table, version)?;
    let unsupported = |detail: String| Error::UnsupportedFeature {
        table: table.to_string(),
        version: Some(version),
        what: "writer feature".to_string(),
        detail,
    };
    match p.min_writer_version {
        1..=6 => Ok(()),
        7 => {
            let features = p.writer_features.as_deref().unwrap_or_default();
            let unknown: Vec<&str> = features
                .iter()
                .map(String::as_str)
                .filter(|f| !SUPPORTED_WRITER_FEATURES.contains(f))
                .collect();
            if unknown.is_empty() {
                Ok(())
            } else {
                Err(unsupported(format!(
                    "{} (delta-occ writes tables with {})",
                    unknown.join(", "),
                    SUPPORTED_WRITER_FEATURES.join(", ")
                )))
            }
        }
        v => Err(unsupported(format!(
            "minWriterVersion {v} (delta-occ writes versions 1 to 7)"
        ))),
    }
}

/// Features a legacy (pre-table-features) protocol implies.
fn legacy_features(p: &Protocol) -> (Vec<&'static str>, Vec<&'static str>) {
    let mut reader = Vec::new();
    let mut writer = Vec::new();
    if p.min_reader_version >= 2 && p.min_reader_version < 3 {
        reader.push("columnMapping");
    }
    if p.min_writer_version < 7 {
        let w = p.min_writer_version;
        let steps: [(i32, &[&'static str]); 5] = [
            (2, &["appendOnly", "invariants"]),
            (3, &["checkConstraints"]),
            (4, &["changeDataFeed", "generatedColumns"]),
            (5, &["columnMapping"]),
            (6, &["identityColumns"]),
        ];
        for (min, feats) in steps {
            if w >= min {
                writer.extend_from_slice(feats);
            }
        }
    }
    (reader, writer)
}

/// Every feature the protocol supports, by name and sorted: its reader and writer features and
/// those its legacy versions imply (DESCRIBE DETAIL's `tableFeatures`).
pub fn supported_features(p: &Protocol) -> Vec<String> {
    let (legacy_r, legacy_w) = legacy_features(p);
    let mut all: Vec<String> = legacy_r
        .iter()
        .chain(&legacy_w)
        .map(|s| s.to_string())
        .collect();
    all.extend(p.reader_features.iter().flatten().cloned());
    all.extend(p.writer_features.iter().flatten().cloned());
    all.sort();
    all.dedup();
    all
}

/// `current` with the writer features `add` (table features: writer 7), or `None` if it
/// already supports them all.
pub fn with_writer_features(current: &Protocol, add: &[&str]) -> Option<Protocol> {
    let add: Vec<String> = add.iter().map(|s| s.to_string()).collect();
    with_features(current, &[], &add)
}

/// `current` with the reader(-writer) features `need_r` and writer features `need_w`, as table
/// features (3/7, or 1/7 without reader features), or `None` if it already supports them all
/// (legacy protocol versions count with the features they imply).
fn with_features(current: &Protocol, need_r: &[String], need_w: &[String]) -> Option<Protocol> {
    let (legacy_r, legacy_w) = legacy_features(current);
    let has_r = |f: &str| legacy_r.contains(&f) || has_reader_feature(current, f);
    let has_w = |f: &str| legacy_w.contains(&f) || has_writer_feature(current, f);
    if need_r.iter().all(|f| has_r(f)) && need_w.iter().all(|f| has_w(f)) {
        return None;
    }
    let mut reader: Vec<String> = current.reader_features.clone().unwrap_or_default();
    reader.extend(legacy_r.iter().map(|s| s.to_string()));
    reader.extend(need_r.iter().cloned());
    reader.sort();
    reader.dedup();
    let mut writer: Vec<String> = current.writer_features.clone().unwrap_or_default();
    writer.extend(legacy_w.iter().map(|s| s.to_string()));
    writer.extend(reader.iter().cloned());
    writer.extend(need_w.iter().cloned());
    writer.sort();
    writer.dedup();
    let reader_version = if reader.is_empty() {
        current.min_reader_version.max(1)
    } else {
        3
    };
    Some(Protocol {
        min_reader_version: reader_version,
        min_writer_version: 7,
        reader_features: (reader_version == 3).then_some(reader),
        writer_features: Some(writer),
    })
}

/// The protocol `current` must become for new properties/schema, or `None` if it already
/// supports everything they need. Upgrades go to table features (3/7 or 1/7).
pub fn upgrade_for(
    current: &Protocol,
    props: &BTreeMap<String, String>,
    schema: &StructType,
) -> Result<Option<Protocol>> {
    let needed = for_new_table(props, schema)?;
    Ok(with_features(
        current,
        needed.reader_features.as_deref().unwrap_or_default(),
        needed.writer_features.as_deref().unwrap_or_default(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proto(r: i32, feats: &[&str]) -> Protocol {
        Protocol {
            min_reader_version: r,
            min_writer_version: 7,
            reader_features: Some(feats.iter().map(|s| s.to_string()).collect()),
            writer_features: Some(feats.iter().map(|s| s.to_string()).collect()),
        }
    }

    #[test]
    fn supported_features_include_the_legacy_ones() {
        // Delta's legacy protocol versions imply these features (PROTOCOL.md "Table Features").
        let legacy = Protocol {
            min_reader_version: 2,
            min_writer_version: 5,
            reader_features: None,
            writer_features: None,
        };
        assert_eq!(
            supported_features(&legacy),
            [
                "appendOnly",
                "changeDataFeed",
                "checkConstraints",
                "columnMapping",
                "generatedColumns",
                "invariants"
            ]
        );
        assert_eq!(
            supported_features(&proto(3, &["deletionVectors"])),
            ["deletionVectors"]
        );
    }

    #[test]
    fn readability() {
        assert!(check_readable(&proto(3, &["deletionVectors", "columnMapping"]), "t", 0).is_ok());
        let e = check_readable(&proto(3, &["deletionVectors", "blahabl"]), "t", 4)
            .unwrap_err()
            .to_string();
        assert!(e.contains("blahabl") && e.contains("version 4"), "{e}");
        assert!(check_readable(&proto(99, &[]), "t", 0)
            .unwrap_err()
            .to_string()
            .contains("reader version"));
    }

    #[test]
    fn new_table_protocols() {
        let schema = StructType::default();
        let mut props = BTreeMap::new();
        assert_eq!(
            for_new_table(&props, &schema).unwrap().min_writer_version,
            2
        );
        props.insert("delta.enableDeletionVectors".into(), "true".into());
        let p = for_new_table(&props, &schema).unwrap();
        assert_eq!((p.min_reader_version, p.min_writer_version), (3, 7));
        assert_eq!(p.reader_features.unwrap(), vec!["deletionVectors"]);
        assert_eq!(p.writer_features.unwrap(), vec!["deletionVectors"]);
        // Row tracking: writer-only, with the domainMetadata feature its mark lives in.
        props.insert("delta.enableRowTracking".into(), "true".into());
        let p = for_new_table(&props, &schema).unwrap();
        assert_eq!(
            p.writer_features.unwrap(),
            vec!["deletionVectors", "domainMetadata", "rowTracking"]
        );
        props.insert("delta.rowTrackingSuspended".into(), "true".into());
        assert!(for_new_table(&props, &schema).is_err());
        props.remove("delta.rowTrackingSuspended");
        props.insert("delta.enableTypeWidening".into(), "true".into());
        let p = for_new_table(&props, &schema).unwrap();
        assert!(has_reader_feature(&p, "typeWidening") && has_writer_feature(&p, "typeWidening"));
        props.remove("delta.enableTypeWidening");
        // An identity column (protocol: `delta.identity.*` column metadata) asks for its feature.
        let identity = StructType::parse(
            r#"{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,
                "metadata":{"delta.identity.start":1,"delta.identity.step":1,
                            "delta.identity.allowExplicitInsert":false}}]}"#,
        )
        .unwrap();
        let p = for_new_table(&BTreeMap::new(), &identity).unwrap();
        assert_eq!((p.min_reader_version, p.min_writer_version), (1, 7));
        assert_eq!(p.writer_features.unwrap(), vec!["identityColumns"]);
    }

    #[test]
    fn a_check_constraint_needs_the_check_constraints_feature() {
        let schema = StructType::default();
        let legacy = Protocol {
            min_reader_version: 1,
            min_writer_version: 2,
            reader_features: None,
            writer_features: None,
        };
        let props = BTreeMap::from([("delta.constraints.Pos".to_string(), "id > 0".to_string())]);
        let up = upgrade_for(&legacy, &props, &schema).unwrap().unwrap();
        assert_eq!((up.min_reader_version, up.min_writer_version), (1, 7));
        // the legacy writer 2 features stay, checkConstraints joins them
        assert_eq!(
            up.writer_features.unwrap(),
            vec!["appendOnly", "checkConstraints", "invariants"]
        );
        // writer 3 (legacy) implies it already
        let w3 = Protocol {
            min_writer_version: 3,
            ..legacy
        };
        assert!(upgrade_for(&w3, &props, &schema).unwrap().is_none());
    }

    #[test]
    fn an_invariant_is_listed_once_the_table_uses_table_features() {
        let schema = StructType::parse(
            r#"{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,
                "metadata":{"delta.invariants":"{\"expression\":{\"expression\":\"id < 9\"}}"}}]}"#,
        )
        .unwrap();
        let plain = for_new_table(&BTreeMap::new(), &schema).unwrap();
        assert_eq!((plain.min_reader_version, plain.min_writer_version), (1, 2));
        let props = BTreeMap::from([(
            "delta.enableDeletionVectors".to_string(),
            "true".to_string(),
        )]);
        let dv = for_new_table(&props, &schema).unwrap();
        assert_eq!(
            dv.writer_features.unwrap(),
            vec!["deletionVectors", "invariants"]
        );
    }

    #[test]
    fn upgrades_and_writability() {
        let schema = StructType::default();
        let legacy = Protocol {
            min_reader_version: 1,
            min_writer_version: 2,
            reader_features: None,
            writer_features: None,
        };
        assert!(upgrade_for(&legacy, &BTreeMap::new(), &schema)
            .unwrap()
            .is_none());
        let props = BTreeMap::from([(
            "delta.enableDeletionVectors".to_string(),
            "true".to_string(),
        )]);
        let up = upgrade_for(&legacy, &props, &schema).unwrap().unwrap();
        assert_eq!((up.min_reader_version, up.min_writer_version), (3, 7));
        let w = up.writer_features.clone().unwrap();
        assert!(
            w.contains(&"appendOnly".to_string())
                && w.contains(&"invariants".to_string())
                && w.contains(&"deletionVectors".to_string())
        );
        assert!(upgrade_for(&up, &props, &schema).unwrap().is_none());
        assert!(check_writable(&up, "t", 1).is_ok());
        let mut rt = up.clone();
        rt.writer_features
            .as_mut()
            .unwrap()
            .push("icebergCompatV2".into());
        assert!(check_writable(&rt, "t", 1)
            .unwrap_err()
            .to_string()
            .contains("icebergCompatV2"));
    }
}
