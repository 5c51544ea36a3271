//! The table schema (Spark JSON, protocol-notes.md §10) and column mapping.

use serde_json::{json, Value};

use crate::error::{Error, Result};

#[derive(Debug, Clone, PartialEq)]
pub enum DataType {
    Primitive(String),
    Decimal(u8, i8),
    Array(Box<DataType>, bool),
    Map(Box<DataType>, Box<DataType>, bool),
    Struct(StructType),
}

#[derive(Debug, Clone, PartialEq)]
pub struct StructField {
    pub name: String,
    pub data_type: DataType,
    pub nullable: bool,
    pub metadata: serde_json::Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct StructType {
    pub fields: Vec<StructField>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnMappingMode {
    None,
    Name,
    Id,
}

impl ColumnMappingMode {
    pub fn from_config(value: Option<&str>) -> Result<Self> {
        match value.map(|v| v.to_ascii_lowercase()) {
            None => Ok(ColumnMappingMode::None),
            Some(v) if v == "none" => Ok(ColumnMappingMode::None),
            Some(v) if v == "name" => Ok(ColumnMappingMode::Name),
            Some(v) if v == "id" => Ok(ColumnMappingMode::Id),
            Some(v) => Err(Error::invalid(format!(
                "delta.columnMapping.mode is {v:?}; expected none, name or id"
            ))),
        }
    }
}

impl StructType {
    pub fn parse(schema_string: &str) -> Result<Self, String> {
        let v: Value = serde_json::from_str(schema_string)
            .map_err(|e| format!("schemaString is not JSON: {e}"))?;
        match parse_type(&v)? {
            DataType::Struct(s) => Ok(s),
            other => Err(format!("schemaString must be a struct, found {other:?}")),
        }
    }

    pub fn field(&self, name: &str) -> Option<&StructField> {
        self.fields.iter().find(|f| f.name == name).or_else(|| {
            self.fields
                .iter()
                .find(|f| f.name.eq_ignore_ascii_case(name))
        })
    }

    pub fn has_identity_columns(&self) -> bool {
        self.fields.iter().any(StructField::is_identity)
    }

    pub fn has_type(&self, primitive: &str) -> bool {
        fn walk(t: &DataType, p: &str) -> bool {
            match t {
                DataType::Primitive(n) => n == p,
                DataType::Decimal(..) => false,
                DataType::Array(e, _) => walk(e, p),
                DataType::Map(k, v, _) => walk(k, p) || walk(v, p),
                DataType::Struct(s) => s.fields.iter().any(|f| walk(&f.data_type, p)),
            }
        }
        self.fields.iter().any(|f| walk(&f.data_type, primitive))
    }
}

/// Where a table column is in a data file, in the one order every reader of delta-occ uses (the
/// Python reader, DML and the row-level conflict checker alike): by parquet field id in id
/// mapping mode, else by the physical name, else by that name in any letter case. `fields` are
/// the file's top-level fields as (name, parquet field id).
pub fn file_column_index(
    fields: &[(&str, Option<i64>)],
    physical: &str,
    field_id: Option<i64>,
) -> Option<usize> {
    let position =
        |hit: &dyn Fn(&str, Option<i64>) -> bool| fields.iter().position(|&(n, id)| hit(n, id));
    field_id
        .and_then(|want| position(&|_, id| id == Some(want)))
        .or_else(|| position(&|n, _| n == physical))
        .or_else(|| position(&|n, _| n.eq_ignore_ascii_case(physical)))
}

impl StructField {
    /// An identity column: any `delta.identity.*` key in its metadata (protocol).
    pub fn is_identity(&self) -> bool {
        self.metadata
            .keys()
            .any(|k| k.starts_with("delta.identity."))
    }

    /// The parquet field id of the column in id mapping mode (`delta.columnMapping.id`).
    pub fn field_id(&self, mode: ColumnMappingMode) -> Option<i64> {
        match mode {
            ColumnMappingMode::Id => self.metadata.get("delta.columnMapping.id")?.as_i64(),
            _ => None,
        }
    }

    /// The name used in parquet files, partition values and stats.
    pub fn physical_name(&self, mode: ColumnMappingMode) -> &str {
        match mode {
            ColumnMappingMode::None => &self.name,
            _ => self
                .metadata
                .get("delta.columnMapping.physicalName")
                .and_then(Value::as_str)
                .unwrap_or(&self.name),
        }
    }
}

impl DataType {
    /// A type from its JSON form in a Delta schema (`"long"`, `{"type": "array", ...}`).
    pub fn from_json(text: &str) -> Result<Self, String> {
        let v: Value = serde_json::from_str(text).map_err(|e| format!("type JSON: {e}"))?;
        parse_type(&v)
    }
}

/// The primitive (non-decimal) Delta types delta-occ knows.
pub(crate) const PRIMITIVES: [&str; 14] = [
    "string",
    "long",
    "integer",
    "short",
    "byte",
    "float",
    "double",
    "boolean",
    "binary",
    "date",
    "timestamp",
    "timestamp_ntz",
    "variant",
    "void",
];

fn parse_type(v: &Value) -> Result<DataType, String> {
    match v {
        Value::String(s) => parse_primitive(s),
        Value::Object(o) => match o.get("type").and_then(Value::as_str) {
            Some("struct") => {
                let fields = o
                    .get("fields")
                    .and_then(Value::as_array)
                    .ok_or("struct without fields")?;
                let fields = fields
                    .iter()
                    .map(parse_field)
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(DataType::Struct(StructType { fields }))
            }
            Some("array") => Ok(DataType::Array(
                Box::new(parse_type(
                    o.get("elementType").ok_or("array without elementType")?,
                )?),
                o.get("containsNull")
                    .and_then(Value::as_bool)
                    .unwrap_or(true),
            )),
            Some("map") => Ok(DataType::Map(
                Box::new(parse_type(o.get("keyType").ok_or("map without keyType")?)?),
                Box::new(parse_type(
                    o.get("valueType").ok_or("map without valueType")?,
                )?),
                o.get("valueContainsNull")
                    .and_then(Value::as_bool)
                    .unwrap_or(true),
            )),
            other => Err(format!("unknown complex type {other:?}")),
        },
        other => Err(format!("unexpected type description {other}")),
    }
}

fn parse_field(v: &Value) -> Result<StructField, String> {
    let o = v.as_object().ok_or("field is not an object")?;
    Ok(StructField {
        name: o
            .get("name")
            .and_then(Value::as_str)
            .ok_or("field without name")?
            .to_string(),
        data_type: parse_type(o.get("type").ok_or("field without type")?)?,
        nullable: o.get("nullable").and_then(Value::as_bool).unwrap_or(true),
        metadata: o
            .get("metadata")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default(),
    })
}

fn parse_primitive(s: &str) -> Result<DataType, String> {
    if let Some(inner) = s.strip_prefix("decimal(").and_then(|r| r.strip_suffix(')')) {
        let (p, sc) = inner
            .split_once(',')
            .ok_or_else(|| format!("bad decimal type {s:?}"))?;
        let p: u8 = p
            .trim()
            .parse()
            .map_err(|_| format!("bad decimal precision in {s:?}"))?;
        let sc: i8 = sc
            .trim()
            .parse()
            .map_err(|_| format!("bad decimal scale in {s:?}"))?;
        if p == 0 || p > 38 || sc < 0 || sc as u8 > p {
            return Err(format!("decimal type {s:?} is out of range"));
        }
        return Ok(DataType::Decimal(p, sc));
    }
    if s == "decimal" {
        return Ok(DataType::Decimal(10, 0));
    }
    if PRIMITIVES.contains(&s) {
        return Ok(DataType::Primitive(s.to_string()));
    }
    Err(format!("unknown primitive type {s:?}"))
}

/// Column names are unique in any letter case; partition columns are listed once, are in the
/// schema, have a primitive type, and leave at least one data column.
pub(crate) fn check_columns(schema: &StructType, partition_by: &[String]) -> Result<()> {
    let mut seen = std::collections::HashSet::new();
    for f in &schema.fields {
        if !seen.insert(f.name.to_lowercase()) {
            return Err(Error::invalid(format!(
                "duplicate column name {:?} (names are case-insensitive)",
                f.name
            )));
        }
    }
    let mut partitions = std::collections::HashSet::new();
    for p in partition_by {
        if !partitions.insert(p.to_lowercase()) {
            return Err(Error::invalid(format!(
                "partition column {p:?} is listed twice"
            )));
        }
        let field = schema.field(p).ok_or_else(|| {
            Error::invalid(format!("partition column {p:?} is not in the schema"))
        })?;
        if !matches!(
            field.data_type,
            DataType::Primitive(_) | DataType::Decimal(..)
        ) {
            return Err(Error::invalid(format!(
                "partition column {p:?} must have a primitive type"
            )));
        }
    }
    if !partition_by.is_empty() && partition_by.len() == schema.fields.len() {
        return Err(Error::invalid(
            "a table needs at least one column that is not a partition column",
        ));
    }
    Ok(())
}

/// Give fields that already existed (matched by name, recursively) the Delta metadata the new
/// schema does not set: column-mapping ids and physical names, identity, generation expressions,
/// comments. A schema from Arrow cannot spell these, and losing them would change the table.
/// Whether two schema strings differ only in identity columns' high-water marks (or not at all):
/// moving a mark changes which values writers generate next, not how data files are laid out
/// or read, so it is no schema change for the conflict checker.
pub(crate) fn same_but_identity_marks(a: &str, b: &str) -> bool {
    fn strip(text: &str) -> Option<Value> {
        let mut v: Value = serde_json::from_str(text).ok()?;
        for f in v.get_mut("fields")?.as_array_mut()? {
            if let Some(m) = f.get_mut("metadata").and_then(Value::as_object_mut) {
                m.remove("delta.identity.highWaterMark");
            }
        }
        Some(v)
    }
    a == b || matches!((strip(a), strip(b)), (Some(x), Some(y)) if x == y)
}

pub(crate) fn carry_field_metadata(new: &mut Value, old: &StructType) {
    carry(new, &DataType::Struct(old.clone()));
}

fn carry(t: &mut Value, old: &DataType) {
    use DataType as D;
    let Value::Object(o) = t else { return };
    match (o.get("type").and_then(Value::as_str), old) {
        (Some("struct"), D::Struct(old)) => {
            if let Some(Value::Array(fields)) = o.get_mut("fields") {
                for f in fields {
                    let Some(name) = f.get("name").and_then(Value::as_str).map(String::from) else {
                        continue;
                    };
                    let Some(prev) = old.fields.iter().find(|x| x.name == name) else {
                        continue;
                    };
                    if let Some(fo) = f.as_object_mut() {
                        let meta = fo.entry("metadata").or_insert_with(|| json!({}));
                        if let Some(m) = meta.as_object_mut() {
                            for (k, v) in &prev.metadata {
                                m.entry(k.clone()).or_insert_with(|| v.clone());
                            }
                        }
                        if let Some(ft) = fo.get_mut("type") {
                            carry(ft, &prev.data_type);
                        }
                    }
                }
            }
        }
        (Some("array"), D::Array(e, _)) => {
            if let Some(x) = o.get_mut("elementType") {
                carry(x, e);
            }
        }
        (Some("map"), D::Map(k, v, _)) => {
            if let Some(x) = o.get_mut("keyType") {
                carry(x, k);
            }
            if let Some(x) = o.get_mut("valueType") {
                carry(x, v);
            }
        }
        _ => {}
    }
}

/// Column mapping: give every field (recursively) that has none a `delta.columnMapping.id`,
/// counting on from `next_id`, and a physical name.
pub(crate) fn assign_column_mapping(t: &mut Value, next_id: &mut i64) {
    for_each_field(t, &mut |_, m| {
        if !m.contains_key("delta.columnMapping.id") {
            *next_id += 1;
            m.insert("delta.columnMapping.id".into(), json!(*next_id));
        }
        m.entry("delta.columnMapping.physicalName")
            .or_insert(json!(format!("col-{}", uuid::Uuid::new_v4())));
    });
}

/// Column mapping enabled on an existing table: every field's physical name is its current
/// name (the data files hold the columns by those names); ids follow as for new fields.
pub(crate) fn name_physical_as_logical(t: &mut Value) {
    for_each_field(t, &mut |name, m| {
        m.insert("delta.columnMapping.physicalName".into(), name);
    });
}

/// Remove every field's column-mapping id and physical name (at any depth).
pub(crate) fn strip_column_mapping(t: &mut Value) {
    for_each_field(t, &mut |_, m| {
        m.remove("delta.columnMapping.id");
        m.remove("delta.columnMapping.physicalName");
    });
}

/// `visit` with the name and the metadata object (created when missing) of every struct field
/// at any depth.
fn for_each_field(
    t: &mut Value,
    visit: &mut dyn FnMut(Value, &mut serde_json::Map<String, Value>),
) {
    if let Some(Value::Array(fields)) = t.get_mut("fields") {
        for f in fields {
            let name = f.get("name").cloned().unwrap_or(Value::Null);
            if let Some(Value::Object(m)) = f
                .as_object_mut()
                .map(|f| f.entry("metadata").or_insert_with(|| json!({})))
            {
                visit(name, m);
            }
        }
    }
    for_each_child_type(t, &mut |c| for_each_field(c, visit));
}

/// `visit` on each type directly inside `t`: a struct's field types, an array's element type, a
/// map's key and value types.
fn for_each_child_type(t: &mut Value, visit: &mut dyn FnMut(&mut Value)) {
    let Value::Object(o) = t else { return };
    match o.get("type").and_then(Value::as_str) {
        Some("struct") => {
            if let Some(Value::Array(fields)) = o.get_mut("fields") {
                for f in fields {
                    if let Some(ft) = f.get_mut("type") {
                        visit(ft);
                    }
                }
            }
        }
        Some("array") => {
            if let Some(e) = o.get_mut("elementType") {
                visit(e);
            }
        }
        Some("map") => {
            for k in ["keyType", "valueType"] {
                if let Some(e) = o.get_mut(k) {
                    visit(e);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn identity_marks_are_no_schema_change() {
        let with = |mark: &str| {
            format!(
                r#"{{"type":"struct","fields":[{{"name":"id","type":"long","nullable":true,"metadata":{{"delta.identity.start":1{mark}}}}}]}}"#
            )
        };
        assert!(same_but_identity_marks(
            &with(""),
            &with(r#","delta.identity.highWaterMark":5"#)
        ));
        assert!(!same_but_identity_marks(
            &with(""),
            &with(r#","delta.identity.step":2"#)
        ));
        assert!(!same_but_identity_marks(
            &with(""),
            &with("").replace("long", "integer")
        ));
    }

    #[test]
    fn file_column_index_prefers_field_id_then_name_then_any_case() {
        let f = [("col-a", Some(7)), ("B", None), ("c", Some(9))];
        let idx = |p, id| super::file_column_index(&f, p, id);
        assert_eq!(idx("nope", Some(9)), Some(2)); // field id wins over names
        assert_eq!(idx("col-a", Some(42)), Some(0)); // unknown id: the physical name
        assert_eq!(idx("b", None), Some(1)); // any letter case last
        assert_eq!(idx("d", None), None);
    }

    use super::*;

    #[test]
    fn parses_nested_and_mapping() {
        let s = r#"{"type":"struct","fields":[
            {"name":"a","type":"decimal(10,2)","nullable":true,"metadata":{"delta.columnMapping.physicalName":"col-1"}},
            {"name":"b","type":{"type":"array","elementType":{"type":"map","keyType":"string","valueType":"long","valueContainsNull":true},"containsNull":true},"nullable":false,"metadata":{}}]}"#;
        let t = StructType::parse(s).unwrap();
        assert_eq!(t.fields[0].data_type, DataType::Decimal(10, 2));
        assert_eq!(t.fields[0].physical_name(ColumnMappingMode::Name), "col-1");
        assert_eq!(t.fields[0].physical_name(ColumnMappingMode::None), "a");
        assert!(!t.fields[1].nullable);
        assert!(StructType::parse(
            "{\"type\":\"struct\",\"fields\":[{\"name\":\"x\",\"type\":\"wat\"}]}"
        )
        .is_err());
    }
}
