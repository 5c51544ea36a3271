//! The one map between Delta types and Arrow types, both ways, and the table schema as Arrow
//! schemas: logical (the names users see) and physical (the names and parquet field ids the data
//! files hold, column mapping applied at every level). Every engine of delta-occ (the Python
//! reader and writer, the Spark engine, the row-level checker) asks here.

use std::collections::BTreeMap;
use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{DataType as A, Field, Fields, Schema, TimeUnit};
use parquet::arrow::PARQUET_FIELD_ID_META_KEY;
use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::schema::{ColumnMappingMode, DataType, StructField, StructType, PRIMITIVES};

/// The Arrow type of a primitive Delta type (timestamps are microseconds, zoned ones labelled
/// UTC); `variant` has none.
fn primitive_arrow(p: &str) -> Option<A> {
    Some(match p {
        "string" => A::Utf8,
        "long" => A::Int64,
        "integer" => A::Int32,
        "short" => A::Int16,
        "byte" => A::Int8,
        "float" => A::Float32,
        "double" => A::Float64,
        "boolean" => A::Boolean,
        "binary" => A::Binary,
        "date" => A::Date32,
        "timestamp" => A::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        "timestamp_ntz" => A::Timestamp(TimeUnit::Microsecond, None),
        "void" => A::Null,
        _ => return None,
    })
}

/// The Arrow type a primitive or decimal Delta type is read and evaluated as (`None` for nested
/// types, `void` and `variant`).
pub fn primitive_arrow_type(t: &DataType) -> Option<A> {
    match t {
        DataType::Primitive(p) if p != "void" => primitive_arrow(p),
        DataType::Decimal(p, s) => Some(A::Decimal128(*p, *s)),
        _ => None,
    }
}

/// Which names (and parquet field ids) an Arrow schema of the table carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Names {
    /// The names users see, no field metadata.
    Logical,
    /// The names in data files under this column mapping mode, and the parquet field id of every
    /// field in id mode.
    Physical(ColumnMappingMode),
}

/// The Arrow type of a Delta type at any depth (list items are `element`, map entries
/// `key`/`value` with nullable values, as pyarrow and Spark write them). A type delta-occ does
/// not read (`variant`) is an UnsupportedFeature error.
pub fn arrow_type(t: &DataType, names: Names) -> Result<A> {
    Ok(match t {
        DataType::Primitive(p) => primitive_arrow(p).ok_or_else(|| Error::UnsupportedFeature {
            table: "the table schema".into(),
            version: None,
            what: "column type".into(),
            detail: format!("{p:?} is not supported by delta-occ's reader"),
        })?,
        DataType::Decimal(p, s) => A::Decimal128(*p, *s),
        DataType::Array(e, contains_null) => A::List(Arc::new(Field::new(
            "element",
            arrow_type(e, names)?,
            *contains_null,
        ))),
        DataType::Map(k, v, _) => {
            let entries = Fields::from(vec![
                Field::new("key", arrow_type(k, names)?, false),
                Field::new("value", arrow_type(v, names)?, true),
            ]);
            A::Map(
                Arc::new(Field::new("entries", A::Struct(entries), false)),
                false,
            )
        }
        DataType::Struct(s) => A::Struct(arrow_fields(s, names)?),
    })
}

fn arrow_field(f: &StructField, names: Names) -> Result<Field> {
    let t = arrow_type(&f.data_type, names)?;
    Ok(match names {
        Names::Logical => Field::new(&f.name, t, f.nullable),
        Names::Physical(mode) => {
            let field = Field::new(f.physical_name(mode), t, f.nullable);
            match f.field_id(mode) {
                Some(id) => field.with_metadata(HashMap::from([(
                    PARQUET_FIELD_ID_META_KEY.to_string(),
                    id.to_string(),
                )])),
                None => field,
            }
        }
    })
}

fn arrow_fields(s: &StructType, names: Names) -> Result<Fields> {
    s.fields
        .iter()
        .map(|f| arrow_field(f, names))
        .collect::<Result<Vec<_>>>()
        .map(Fields::from)
}

/// The table schema as an Arrow schema with `names`.
pub fn arrow_schema(s: &StructType, names: Names) -> Result<Schema> {
    Ok(Schema::new(arrow_fields(s, names)?))
}

/// The table schema in Spark's JSON form with the physical names at every level and, in id mode,
/// the field id as `parquet.field.id` (the metadata key Spark's parquet writer puts into files):
/// what a Spark writer hands to Spark.
pub fn spark_physical_schema_json(s: &StructType, mode: ColumnMappingMode) -> Value {
    fn ty(t: &DataType, mode: ColumnMappingMode) -> Value {
        match t {
            DataType::Primitive(p) => json!(p),
            DataType::Decimal(p, s) => json!(format!("decimal({p},{s})")),
            DataType::Array(e, n) => {
                json!({"type": "array", "elementType": ty(e, mode), "containsNull": n})
            }
            DataType::Map(k, v, n) => json!({
                "type": "map", "keyType": ty(k, mode), "valueType": ty(v, mode),
                "valueContainsNull": n,
            }),
            DataType::Struct(s) => struct_json(s, mode),
        }
    }
    fn struct_json(s: &StructType, mode: ColumnMappingMode) -> Value {
        let fields: Vec<Value> = s
            .fields
            .iter()
            .map(|f| {
                let metadata = match f.field_id(mode) {
                    Some(id) => json!({"parquet.field.id": id}),
                    None => json!({}),
                };
                json!({
                    "name": f.physical_name(mode), "type": ty(&f.data_type, mode),
                    "nullable": f.nullable, "metadata": metadata,
                })
            })
            .collect();
        json!({"type": "struct", "fields": fields})
    }
    struct_json(s, mode)
}

/// Why an Arrow type has no Delta type.
fn no_delta_type(t: &A) -> Error {
    Error::invalid(format!(
        "Arrow type {t} has no Delta equivalent (unsigned integers, durations, times and nulls \
         must be cast first)"
    ))
}

/// The Delta type (schema JSON) of an Arrow type: the inverse of [`arrow_type`] over every Arrow
/// type of the same family (large and view strings, any timestamp unit, dictionaries by their
/// values, ...). Unsigned integers, nulls and other types Delta cannot hold are errors.
pub fn delta_type(t: &A) -> Result<Value> {
    let same_family = match t {
        A::Dictionary(_, v) => return delta_type(v),
        A::LargeUtf8 | A::Utf8View => A::Utf8,
        A::LargeBinary | A::FixedSizeBinary(_) => A::Binary,
        A::Date64 => A::Date32,
        A::Timestamp(_, tz) => {
            A::Timestamp(TimeUnit::Microsecond, tz.as_ref().map(|_| "UTC".into()))
        }
        A::Decimal32(p, s) | A::Decimal64(p, s) | A::Decimal128(p, s) | A::Decimal256(p, s) => {
            if *p > 38 {
                return Err(Error::invalid(format!(
                    "decimal precision {p} exceeds Delta's maximum of 38"
                )));
            }
            return Ok(json!(format!("decimal({p},{s})")));
        }
        A::Struct(fields) => {
            let fields = fields
                .iter()
                .map(|f| delta_field(f))
                .collect::<Result<Vec<_>>>()?;
            return Ok(json!({"type": "struct", "fields": fields}));
        }
        A::Map(entries, _) => {
            let A::Struct(kv) = entries.data_type() else {
                return Err(no_delta_type(t));
            };
            let (Some(k), Some(v)) = (kv.first(), kv.get(1)) else {
                return Err(no_delta_type(t));
            };
            return Ok(json!({
                "type": "map", "keyType": delta_type(k.data_type())?,
                "valueType": delta_type(v.data_type())?, "valueContainsNull": v.is_nullable(),
            }));
        }
        A::List(item) | A::LargeList(item) | A::FixedSizeList(item, _) => {
            return Ok(json!({
                "type": "array", "elementType": delta_type(item.data_type())?,
                "containsNull": item.is_nullable(),
            }));
        }
        A::Null => return Err(no_delta_type(t)),
        other => other.clone(),
    };
    PRIMITIVES
        .iter()
        .find(|p| primitive_arrow(p).as_ref() == Some(&same_family))
        .map(|p| json!(p))
        .ok_or_else(|| no_delta_type(t))
}

/// Arrow field metadata that becomes Delta column metadata (string values): a column comment,
/// an invariant (`{"expression":{"expression":"<SQL>"}}`, the protocol's `invariants`), a
/// generation expression (`generatedColumns`) and a column default (`allowColumnDefaults`), both
/// SQL text the engines apply (`delta_occ.generated`). Identity keys are carried typed
/// ([`identity_metadata`]). Anything else (parquet field ids, pandas metadata) is not carried.
const CARRIED_FIELD_METADATA: &[&str] = &[
    "comment",
    "delta.invariants",
    GENERATION_EXPRESSION,
    CURRENT_DEFAULT,
];

pub(crate) const GENERATION_EXPRESSION: &str = "delta.generationExpression";
pub(crate) const CURRENT_DEFAULT: &str = "CURRENT_DEFAULT";

const IDENTITY_START: &str = "delta.identity.start";
const IDENTITY_STEP: &str = "delta.identity.step";
const IDENTITY_EXPLICIT: &str = "delta.identity.allowExplicitInsert";
const IDENTITY_MARK: &str = "delta.identity.highWaterMark";

/// The Delta metadata of an identity column declared through Arrow field metadata (any
/// `delta.identity.*` key): `start` and `step` as JSON numbers (default 1 each, step not 0),
/// `allowExplicitInsert` as a boolean (default false: GENERATED ALWAYS), as the protocol and
/// delta-spark store them. Only `long` columns can be identity columns, and the high-water mark is
/// the writers' to keep: a schema that sets it is refused.
fn identity_metadata(f: &Field, out: &mut serde_json::Map<String, Value>) -> Result<()> {
    let meta: BTreeMap<String, String> = f
        .metadata()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let type_name = f.data_type().to_string();
    if let Some(typed) =
        identity_declaration(f.name(), *f.data_type() == A::Int64, &type_name, &meta)?
    {
        out.extend(typed);
    }
    Ok(())
}

/// The one rule for declaring an identity column, whether through Arrow field metadata or a
/// Delta JSON schema (a Spark StructType): the typed metadata to store, `None` when `meta` has
/// no `delta.identity.*` key. Values come as text (JSON numbers and booleans as written).
pub(crate) fn identity_declaration(
    name: &str,
    is_long: bool,
    type_name: &str,
    meta: &BTreeMap<String, String>,
) -> Result<Option<serde_json::Map<String, Value>>> {
    let keys: Vec<&String> = meta
        .keys()
        .filter(|k| k.starts_with("delta.identity."))
        .collect();
    if keys.is_empty() {
        return Ok(None);
    }
    let bad = |why: String| Error::invalid(format!("identity column {name}: {why}"));
    if let Some(k) = keys
        .iter()
        .find(|k| ![IDENTITY_START, IDENTITY_STEP, IDENTITY_EXPLICIT].contains(&k.as_str()))
    {
        return Err(bad(if k.as_str() == IDENTITY_MARK {
            format!("{IDENTITY_MARK} is kept by the writers that generate values and cannot be declared")
        } else {
            format!(
                "unknown key {k} (declare {IDENTITY_START}, {IDENTITY_STEP}, {IDENTITY_EXPLICIT})"
            )
        }));
    }
    if !is_long {
        return Err(bad(format!(
            "identity columns must be long (int64), not {type_name}"
        )));
    }
    let long = |key: &str| -> Result<i64> {
        match meta.get(key) {
            None => Ok(1),
            Some(v) => v
                .trim()
                .parse::<i64>()
                .map_err(|_| bad(format!("{key} must be a long integer, got {v:?}"))),
        }
    };
    let start = long(IDENTITY_START)?;
    let step = long(IDENTITY_STEP)?;
    if step == 0 {
        return Err(bad(format!("{IDENTITY_STEP} must not be 0")));
    }
    let explicit = match meta
        .get(IDENTITY_EXPLICIT)
        .map(|v| v.trim().to_ascii_lowercase())
    {
        None => false,
        Some(v) if v == "true" => true,
        Some(v) if v == "false" => false,
        Some(v) => {
            return Err(bad(format!(
                "{IDENTITY_EXPLICIT} must be true or false, got {v:?}"
            )))
        }
    };
    let mut out = serde_json::Map::new();
    out.insert(IDENTITY_START.into(), json!(start));
    out.insert(IDENTITY_STEP.into(), json!(step));
    out.insert(IDENTITY_EXPLICIT.into(), json!(explicit));
    Ok(Some(out))
}

/// Identity columns declared in a Delta JSON schema (top-level fields: a Spark StructType's
/// `json()`), checked and typed by [`identity_declaration`] as the Arrow path does.
pub(crate) fn declare_identity_json(schema: &mut Value) -> Result<()> {
    let Some(fields) = schema.get_mut("fields").and_then(Value::as_array_mut) else {
        return Ok(());
    };
    for field in fields {
        let name = field
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let type_name = match field.get("type") {
            Some(Value::String(t)) => t.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        };
        let Some(meta) = field.get_mut("metadata").and_then(Value::as_object_mut) else {
            continue;
        };
        let text: BTreeMap<String, String> = meta
            .iter()
            .filter(|(k, _)| k.starts_with("delta.identity."))
            .map(|(k, v)| {
                let t = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                (k.clone(), t)
            })
            .collect();
        if let Some(typed) = identity_declaration(&name, type_name == "long", &type_name, &text)? {
            meta.extend(typed);
        }
    }
    Ok(())
}

fn delta_field(f: &Field) -> Result<Value> {
    let mut metadata = serde_json::Map::new();
    for key in CARRIED_FIELD_METADATA {
        if let Some(v) = f.metadata().get(key) {
            if *key == "delta.invariants" {
                let parsed: Value = serde_json::from_str(v).ok().unwrap_or(Value::Null);
                if !parsed["expression"]["expression"].is_string() {
                    return Err(Error::invalid(format!(
                        "column {}: delta.invariants must be {{\"expression\":{{\"expression\":\"<SQL>\"}}}}, got {v}",
                        f.name()
                    )));
                }
            }
            metadata.insert(key.to_string(), json!(v));
        }
    }
    identity_metadata(f, &mut metadata)?;
    Ok(json!({
        "name": f.name(), "type": delta_type(f.data_type())?, "nullable": f.is_nullable(),
        "metadata": metadata,
    }))
}

/// The Delta schema JSON of an Arrow schema (at least one column).
pub fn delta_schema(s: &Schema) -> Result<Value> {
    if s.fields().is_empty() {
        return Err(Error::invalid("a Delta table needs at least one column"));
    }
    let fields = s
        .fields()
        .iter()
        .map(|f| delta_field(f))
        .collect::<Result<Vec<_>>>()?;
    Ok(json!({"type": "struct", "fields": fields}))
}

/// The Delta type Arrow data counts as when it is written to a column (schema enforcement,
/// docs/guide.md "Policies"): its Delta type; NULLs as `void`; unsigned integers as the smallest
/// Delta integer holding every value (none for uint64); `None` for types Delta cannot hold.
pub fn delta_type_of_data(t: &A) -> Option<Value> {
    match t {
        A::Null => Some(json!("void")),
        A::UInt8 => Some(json!("short")),
        A::UInt16 => Some(json!("integer")),
        A::UInt32 => Some(json!("long")),
        _ => delta_type(t).ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(text: &str) -> StructType {
        StructType::parse(text).unwrap()
    }

    const MAPPED: &str = r#"{"type":"struct","fields":[
        {"name":"a","type":"long","nullable":false,"metadata":{"delta.columnMapping.id":1,"delta.columnMapping.physicalName":"col-a"}},
        {"name":"s","type":{"type":"struct","fields":[
            {"name":"x","type":"timestamp","nullable":true,"metadata":{"delta.columnMapping.id":3,"delta.columnMapping.physicalName":"col-x"}}]},
         "nullable":true,"metadata":{"delta.columnMapping.id":2,"delta.columnMapping.physicalName":"col-s"}}]}"#;

    #[test]
    fn comments_and_invariants_are_carried_into_the_table_schema() {
        let inv = r#"{"expression":{"expression":"id < 100"}}"#;
        let id = Field::new("id", A::Int64, true).with_metadata(HashMap::from([
            ("delta.invariants".to_string(), inv.to_string()),
            ("comment".to_string(), "the key".to_string()),
            ("PARQUET:field_id".to_string(), "7".to_string()),
        ]));
        let v = delta_schema(&Schema::new(vec![id])).unwrap();
        assert_eq!(
            v["fields"][0]["metadata"],
            json!({"delta.invariants": inv, "comment": "the key"})
        );
        let bad = Field::new("id", A::Int64, true).with_metadata(HashMap::from([(
            "delta.invariants".to_string(),
            "id < 100".to_string(),
        )]));
        let e = delta_schema(&Schema::new(vec![bad]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("column id") && e.contains("delta.invariants"),
            "{e}"
        );
    }

    fn identity(meta: &[(&str, &str)], t: A) -> Result<Value> {
        let f = Field::new("id", t, true).with_metadata(
            meta.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<HashMap<_, _>>(),
        );
        delta_schema(&Schema::new(vec![f])).map(|v| v["fields"][0]["metadata"].clone())
    }

    /// A Delta JSON schema (a Spark StructType) declares identity columns under the same rule as
    /// Arrow metadata: typed values, defaults filled, the same refusals.
    #[test]
    fn identity_in_a_json_schema_follows_the_same_rule() {
        let declare = |meta: Value, typ: &str| {
            let mut s = json!({"type": "struct", "fields": [
                {"name": "id", "type": typ, "nullable": true, "metadata": meta}]});
            declare_identity_json(&mut s).map(|_| s["fields"][0]["metadata"].clone())
        };
        assert_eq!(
            declare(
                json!({"delta.identity.start": 5, "delta.identity.step": "2"}),
                "long"
            )
            .unwrap(),
            json!({"delta.identity.start": 5, "delta.identity.step": 2,
                   "delta.identity.allowExplicitInsert": false})
        );
        for (meta, typ, why) in [
            (json!({"delta.identity.step": 0}), "long", "must not be 0"),
            (
                json!({"delta.identity.start": 1}),
                "integer",
                "must be long",
            ),
            (
                json!({"delta.identity.highWaterMark": 9}),
                "long",
                "cannot be declared",
            ),
            (
                json!({"delta.identity.allowExplicitInsert": "maybe"}),
                "long",
                "true or false",
            ),
        ] {
            let e = declare(meta, typ).unwrap_err().to_string();
            assert!(e.contains(why), "{e}");
        }
        assert_eq!(
            declare(json!({"comment": "x"}), "string").unwrap(),
            json!({"comment": "x"})
        );
    }

    #[test]
    fn identity_columns_are_declared_with_typed_metadata() {
        // Typed as delta-spark writes them: numbers and a boolean, defaults start 1 step 1 ALWAYS.
        assert_eq!(
            identity(&[("delta.identity.step", "-5")], A::Int64).unwrap(),
            json!({"delta.identity.start": 1, "delta.identity.step": -5,
                   "delta.identity.allowExplicitInsert": false})
        );
        assert_eq!(
            identity(
                &[
                    ("delta.identity.start", "100"),
                    ("delta.identity.allowExplicitInsert", "TRUE")
                ],
                A::Int64
            )
            .unwrap()["delta.identity.allowExplicitInsert"],
            json!(true)
        );
        for (meta, t, expect) in [
            (
                vec![("delta.identity.step", "0")],
                A::Int64,
                "must not be 0",
            ),
            (
                vec![("delta.identity.start", "x")],
                A::Int64,
                "long integer",
            ),
            (
                vec![("delta.identity.start", "1")],
                A::Int32,
                "must be long",
            ),
            (
                vec![("delta.identity.highWaterMark", "9")],
                A::Int64,
                "kept by the writers",
            ),
            (vec![("delta.identity.stat", "1")], A::Int64, "unknown key"),
            (
                vec![("delta.identity.allowExplicitInsert", "yes")],
                A::Int64,
                "true or false",
            ),
        ] {
            let e = identity(&meta, t).unwrap_err().to_string();
            assert!(
                e.contains("identity column id") && e.contains(expect),
                "{e}"
            );
        }
    }

    #[test]
    fn logical_and_physical_schemas() {
        let s = schema(MAPPED);
        let logical = arrow_schema(&s, Names::Logical).unwrap();
        assert_eq!(logical.field(0).name(), "a");
        assert!(!logical.field(0).is_nullable());
        assert!(logical.field(0).metadata().is_empty());
        let A::Struct(inner) = logical.field(1).data_type() else {
            panic!()
        };
        assert_eq!(inner[0].name(), "x");
        assert_eq!(
            inner[0].data_type(),
            &A::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
        );
        let name = arrow_schema(&s, Names::Physical(ColumnMappingMode::Name)).unwrap();
        assert_eq!(name.field(0).name(), "col-a");
        assert!(name.field(0).metadata().is_empty());
        let id = arrow_schema(&s, Names::Physical(ColumnMappingMode::Id)).unwrap();
        let A::Struct(inner) = id.field(1).data_type() else {
            panic!()
        };
        assert_eq!(inner[0].name(), "col-x");
        assert_eq!(inner[0].metadata()[PARQUET_FIELD_ID_META_KEY], "3");
        let none = arrow_schema(&s, Names::Physical(ColumnMappingMode::None)).unwrap();
        assert_eq!(none.field(1).name(), "s");
    }

    #[test]
    fn every_primitive_maps_back_to_itself() {
        for p in PRIMITIVES
            .iter()
            .filter(|p| !["void", "variant"].contains(*p))
        {
            let t = arrow_type(&DataType::Primitive(p.to_string()), Names::Logical).unwrap();
            assert_eq!(delta_type(&t).unwrap(), json!(p));
        }
        assert!(arrow_type(&DataType::Primitive("variant".into()), Names::Logical).is_err());
    }

    #[test]
    fn arrow_families_and_refusals() {
        let ns = A::Timestamp(TimeUnit::Nanosecond, Some("+01:00".into()));
        assert_eq!(delta_type(&ns).unwrap(), json!("timestamp"));
        assert_eq!(delta_type(&A::LargeUtf8).unwrap(), json!("string"));
        assert_eq!(
            delta_type(&A::Decimal128(10, 2)).unwrap(),
            json!("decimal(10,2)")
        );
        assert!(delta_type(&A::Decimal256(40, 2)).is_err());
        assert!(delta_type(&A::UInt32).is_err());
        assert!(delta_type(&A::Null).is_err());
        assert_eq!(delta_type_of_data(&A::UInt32), Some(json!("long")));
        assert_eq!(delta_type_of_data(&A::UInt64), None);
        assert_eq!(delta_type_of_data(&A::Null), Some(json!("void")));
    }

    #[test]
    fn spark_physical_json_names_and_ids() {
        let v = spark_physical_schema_json(&schema(MAPPED), ColumnMappingMode::Id);
        assert_eq!(v["fields"][0]["name"], "col-a");
        assert_eq!(v["fields"][0]["metadata"]["parquet.field.id"], 1);
        assert_eq!(v["fields"][1]["type"]["fields"][0]["name"], "col-x");
        let v = spark_physical_schema_json(&schema(MAPPED), ColumnMappingMode::Name);
        assert_eq!(v["fields"][1]["metadata"], json!({}));
    }
}
