//! DeletionVectorDescriptor: where a DV lives and how to find it (protocol-notes.md §5.2–5.3).

use serde::{Deserialize, Serialize};

use super::z85;
use crate::storage::Location;

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeletionVectorDescriptor {
    pub storage_type: String,
    pub path_or_inline_dv: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<i32>,
    pub size_in_bytes: i32,
    pub cardinality: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_row_index: Option<i64>,
}

/// Where the serialized bitmap is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DvLocation {
    Inline(Vec<u8>),
    File { path: Location, offset: u64 },
}

impl DeletionVectorDescriptor {
    /// The logical-file key component: storageType + pathOrInlineDv [+ "@" + offset].
    pub fn unique_id(&self) -> String {
        match self.offset {
            Some(o) => format!("{}{}@{}", self.storage_type, self.path_or_inline_dv, o),
            None => format!("{}{}", self.storage_type, self.path_or_inline_dv),
        }
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    /// Resolve against the table root. Errors are plain text; the caller adds the file context.
    pub fn location(&self, table_root: &Location) -> Result<DvLocation, String> {
        let offset = u64::try_from(self.offset.unwrap_or(0))
            .map_err(|_| format!("negative DV offset {:?}", self.offset))?;
        match self.storage_type.as_str() {
            "i" => {
                let mut bytes = z85::decode(&self.path_or_inline_dv)?;
                let size = usize::try_from(self.size_in_bytes)
                    .map_err(|_| "negative sizeInBytes".to_string())?;
                if size > bytes.len() {
                    return Err(format!(
                        "inline DV holds {} bytes, sizeInBytes says {size}",
                        bytes.len()
                    ));
                }
                bytes.truncate(size);
                Ok(DvLocation::Inline(bytes))
            }
            "u" => {
                let s = &self.path_or_inline_dv;
                if s.len() < 20 || !s.is_char_boundary(s.len() - 20) {
                    return Err(format!(
                        "pathOrInlineDv {s:?} is shorter than a 20-character Z85 UUID"
                    ));
                }
                let (prefix, encoded) = s.split_at(s.len() - 20);
                let uuid =
                    uuid::Uuid::from_slice(&z85::decode(encoded)?).map_err(|e| e.to_string())?;
                let name = format!("deletion_vector_{uuid}.bin");
                let path = if prefix.is_empty() {
                    table_root.join(&name)
                } else {
                    table_root.join(prefix).join(&name)
                };
                Ok(DvLocation::File { path, offset })
            }
            "p" => {
                let path = table_root
                    .resolve(&self.path_or_inline_dv)
                    .map_err(|e| format!("absolute DV path {:?}: {e}", self.path_or_inline_dv))?;
                Ok(DvLocation::File { path, offset })
            }
            other => Err(format!(
                "unsupported DV storage type {other:?} (expected 'u', 'i' or 'p')"
            )),
        }
    }

    /// A `u` descriptor for a DV stored at `offset` of `deletion_vector_<uuid>.bin` under `prefix`.
    pub fn for_uuid_file(
        prefix: &str,
        uuid: uuid::Uuid,
        offset: i32,
        size: i32,
        cardinality: i64,
    ) -> Self {
        DeletionVectorDescriptor {
            storage_type: "u".into(),
            path_or_inline_dv: format!("{prefix}{}", z85::encode(uuid.as_bytes())),
            offset: Some(offset),
            size_in_bytes: size,
            cardinality,
            max_row_index: None,
        }
    }

    /// An inline descriptor (`i`) holding the serialized bitmap itself.
    pub fn inline(serialized: &[u8], cardinality: i64) -> Self {
        DeletionVectorDescriptor {
            storage_type: "i".into(),
            path_or_inline_dv: z85::encode(serialized),
            offset: None,
            size_in_bytes: serialized.len() as i32,
            cardinality,
            max_row_index: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_id_and_path() {
        let d = DeletionVectorDescriptor {
            storage_type: "u".into(),
            path_or_inline_dv: "ab^-aqEH.-t@S}K{vb[*k^".into(),
            offset: Some(4),
            size_in_bytes: 40,
            cardinality: 6,
            max_row_index: None,
        };
        assert_eq!(d.unique_id(), "uab^-aqEH.-t@S}K{vb[*k^@4");
        let root = Location::local("/t");
        let loc = d.location(&root).unwrap();
        assert_eq!(
            loc,
            DvLocation::File {
                path: root.join("ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin"),
                offset: 4
            }
        );
    }

    #[test]
    fn bad_descriptors_are_errors() {
        let mut d = DeletionVectorDescriptor {
            storage_type: "u".into(),
            path_or_inline_dv: "short".into(),
            offset: None,
            size_in_bytes: 1,
            cardinality: 1,
            max_row_index: None,
        };
        assert!(d.location(&Location::local("/t")).is_err());
        d.storage_type = "x".into();
        assert!(d.location(&Location::local("/t")).is_err());
        d.storage_type = "i".into();
        d.path_or_inline_dv = "0000".into();
        assert!(d.location(&Location::local("/t")).is_err());
    }
}
