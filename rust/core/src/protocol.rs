//! What this client can read and write, and the protocol a new table needs.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::log::actions::Protocol;
use crate::schema::StructType;

/// Reader features whose data this client interprets correctly.
pub const SUPPORTED_READER_FEATURES: &[&str] =
    &["deletionVectors", "columnMapping", "v2Checkpoint", "timestampNtz", "vacuumProtocolCheck"];

/// Writer-only features a reader may ignore. (Writing tables with them is checked separately.)
pub const KNOWN_WRITER_FEATURES: &[&str] = &[
    "appendOnly", "invariants", "checkConstraints", "generatedColumns", "allowColumnDefaults", "changeDataFeed",
    "identityColumns", "rowTracking", "domainMetadata", "inCommitTimestamp", "icebergCompatV1", "icebergCompatV2",
    "clustering", "liquid", "deletionVectors", "columnMapping", "v2Checkpoint", "timestampNtz", "vacuumProtocolCheck",
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
            let unknown: Vec<&str> =
                features.iter().map(String::as_str).filter(|f| !SUPPORTED_READER_FEATURES.contains(f)).collect();
            if unknown.is_empty() {
                Ok(())
            } else {
                Err(unsupported(
                    "reader feature",
                    format!("{} (delta-occ reads {})", unknown.join(", "), SUPPORTED_READER_FEATURES.join(", ")),
                ))
            }
        }
        v => Err(unsupported(
            "Delta protocol reader version",
            format!("minReaderVersion {v} (delta-occ reads versions 1 to 3); reader features: {:?}", p.reader_features.as_deref().unwrap_or_default()),
        )),
    }
}

pub fn has_reader_feature(p: &Protocol, f: &str) -> bool {
    p.reader_features.as_ref().is_some_and(|v| v.iter().any(|x| x == f))
}

pub fn has_writer_feature(p: &Protocol, f: &str) -> bool {
    p.writer_features.as_ref().is_some_and(|v| v.iter().any(|x| x == f))
}

fn is_true(props: &BTreeMap<String, String>, key: &str) -> bool {
    props.get(key).is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

/// The protocol a new table needs for its properties and schema: legacy (1, 2) when nothing more
/// is asked for, table features (3, 7 or 1, 7) otherwise.
pub fn for_new_table(props: &BTreeMap<String, String>, schema: &StructType) -> Result<Protocol> {
    let mut reader: Vec<&str> = Vec::new();
    let mut writer: Vec<&str> = Vec::new();
    if is_true(props, "delta.enableDeletionVectors") {
        reader.push("deletionVectors");
    }
    if props.get("delta.columnMapping.mode").is_some_and(|m| !m.eq_ignore_ascii_case("none")) {
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
    if is_true(props, "delta.enableInCommitTimestamps") {
        writer.push("inCommitTimestamp");
    }
    for unsupported in ["delta.enableRowTracking", "delta.enableTypeWidening"] {
        if is_true(props, unsupported) {
            return Err(Error::UnsupportedFeature {
                table: "(new table)".into(),
                version: None,
                what: "table property".into(),
                detail: format!("{unsupported}=true is not supported by delta-occ yet"),
            });
        }
    }
    if props.get("delta.checkpointPolicy").is_some_and(|p| !p.eq_ignore_ascii_case("classic")) {
        return Err(Error::UnsupportedFeature {
            table: "(new table)".into(),
            version: None,
            what: "table property".into(),
            detail: "delta.checkpointPolicy other than 'classic' is not supported yet".into(),
        });
    }
    if reader.is_empty() && writer.is_empty() {
        return Ok(Protocol { min_reader_version: 1, min_writer_version: 2, reader_features: None, writer_features: None });
    }
    let mut all: Vec<String> = reader.iter().chain(writer.iter()).map(|s| s.to_string()).collect();
    all.sort();
    all.dedup();
    Ok(Protocol {
        min_reader_version: if reader.is_empty() { 1 } else { 3 },
        min_writer_version: 7,
        reader_features: (!reader.is_empty()).then(|| reader.iter().map(|s| s.to_string()).collect()),
        writer_features: Some(all),
    })
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
    fn readability() {
        assert!(check_readable(&proto(3, &["deletionVectors", "columnMapping"]), "t", 0).is_ok());
        let e = check_readable(&proto(3, &["deletionVectors", "blahabl"]), "t", 4).unwrap_err().to_string();
        assert!(e.contains("blahabl") && e.contains("version 4"), "{e}");
        assert!(check_readable(&proto(99, &[]), "t", 0).unwrap_err().to_string().contains("reader version"));
    }

    #[test]
    fn new_table_protocols() {
        let schema = StructType::default();
        let mut props = BTreeMap::new();
        assert_eq!(for_new_table(&props, &schema).unwrap().min_writer_version, 2);
        props.insert("delta.enableDeletionVectors".into(), "true".into());
        let p = for_new_table(&props, &schema).unwrap();
        assert_eq!((p.min_reader_version, p.min_writer_version), (3, 7));
        assert_eq!(p.reader_features.unwrap(), vec!["deletionVectors"]);
        assert_eq!(p.writer_features.unwrap(), vec!["deletionVectors"]);
        props.insert("delta.enableRowTracking".into(), "true".into());
        assert!(for_new_table(&props, &schema).is_err());
    }
}
