//! Isolation levels (concurrency.md §2).

use std::collections::BTreeMap;

use crate::error::{Error, Result};

pub const PROPERTY: &str = "delta.isolationLevel";

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum IsolationLevel {
    /// Only for dataChange=false commits; never a table level.
    SnapshotIsolation,
    WriteSerializable,
    Serializable,
}

impl IsolationLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            IsolationLevel::Serializable => "Serializable",
            IsolationLevel::WriteSerializable => "WriteSerializable",
            IsolationLevel::SnapshotIsolation => "SnapshotIsolation",
        }
    }

    /// Any letter case; underscores are accepted too (`write_serializable`).
    pub fn parse(text: &str) -> Result<Self> {
        match text.replace('_', "").to_ascii_lowercase().as_str() {
            "serializable" => Ok(IsolationLevel::Serializable),
            "writeserializable" => Ok(IsolationLevel::WriteSerializable),
            "snapshotisolation" => Ok(IsolationLevel::SnapshotIsolation),
            _ => Err(Error::invalid(format!(
                "invalid isolation level {text:?}: expected Serializable, WriteSerializable or SnapshotIsolation"
            ))),
        }
    }

    /// The table's level: WriteSerializable when the property is absent (the Azure Databricks
    /// default; open-source delta-spark assumes Serializable).
    pub fn of_table(config: &BTreeMap<String, String>) -> Result<Self> {
        match config.get(PROPERTY) {
            None => Ok(IsolationLevel::WriteSerializable),
            Some(v) => match IsolationLevel::parse(v)? {
                IsolationLevel::SnapshotIsolation => Err(Error::invalid(format!(
                    "{PROPERTY} = {v:?} is not a table level: expected Serializable or WriteSerializable"
                ))),
                level => Ok(level),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels() {
        let mut c = BTreeMap::new();
        assert_eq!(
            IsolationLevel::of_table(&c).unwrap(),
            IsolationLevel::WriteSerializable
        );
        c.insert(PROPERTY.to_string(), "serializable".to_string());
        assert_eq!(
            IsolationLevel::of_table(&c).unwrap(),
            IsolationLevel::Serializable
        );
        c.insert(PROPERTY.to_string(), "SnapshotIsolation".to_string());
        assert!(IsolationLevel::of_table(&c).is_err());
        let e = IsolationLevel::parse("strict").unwrap_err().to_string();
        assert!(e.contains("Serializable") && e.contains("WriteSerializable"));
    }
}
