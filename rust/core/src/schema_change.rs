//! Which schema replacements keep every existing data file readable under the new schema.
//!
//! A schema change rewrites no data, so the new schema must describe the old files: a column
//! may be dropped (or renamed, which is a drop and an add) only with column mapping, because
//! without it the name is the physical name and a later column of that name would read the old
//! values; a type may only widen, and only with the typeWidening table feature (readers then
//! convert the old files' values); a column may not become NOT NULL; and a new column must be
//! nullable, since old rows have none.

use crate::schema::{DataType, StructField, StructType};

/// Why replacing `old` by `new` is refused; `Ok` when it is allowed. With column mapping a
/// column may disappear only when `allow_drop` says the caller means it: a schema that merely
/// lacks a column (a rename written as a new schema) would lose its data silently.
pub fn check(old: &StructType, new: &StructType, rules: Rules) -> Result<(), Refusal> {
    fields(old, new, rules, "")
}

/// What the table allows a schema change to do to existing columns.
#[derive(Clone, Copy, Default)]
pub struct Rules {
    /// Column mapping is on: columns may be dropped and renamed.
    pub column_mapping: bool,
    /// The caller means to drop the columns the new schema lacks.
    pub allow_drop: bool,
    /// `delta.enableTypeWidening` is on: a type may widen ([`type_changes`] records how).
    pub type_widening: bool,
}

#[derive(Debug, PartialEq)]
pub enum Refusal {
    /// Never valid for the table's existing data.
    Invalid(String),
    /// Valid in Delta with a table feature delta-occ does not write (type widening).
    Unsupported(String),
    /// The new schema lacks an existing column (its path) and dropping was not asked for.
    Dropped(String),
}

fn fields(old: &StructType, new: &StructType, rules: Rules, prefix: &str) -> Result<(), Refusal> {
    for o in &old.fields {
        let path = format!("{prefix}{}", o.name);
        match new.fields.iter().find(|n| n.name == o.name) {
            Some(n) => field(o, n, rules, &path)?,
            None if rules.column_mapping && rules.allow_drop => {}
            None if rules.column_mapping => return Err(Refusal::Dropped(path)),
            None => {
                let renamed = new
                    .fields
                    .iter()
                    .find(|n| n.name.eq_ignore_ascii_case(&o.name));
                let what = match renamed {
                    Some(n) => format!("renames column `{path}` to `{prefix}{}`", n.name),
                    None => format!("drops column `{path}`"),
                };
                return Err(Refusal::Invalid(format!(
                    "the new schema {what}; without column mapping (delta.columnMapping.mode = 'name') \
                     data files store columns by name, so a column cannot be dropped or renamed"
                )));
            }
        }
    }
    for n in new
        .fields
        .iter()
        .filter(|n| !old.fields.iter().any(|o| o.name == n.name))
    {
        if !n.nullable {
            return Err(Refusal::Invalid(format!(
                "new column `{prefix}{}` is NOT NULL, but the rows already in the table have no value for it",
                n.name
            )));
        }
    }
    Ok(())
}

fn field(o: &StructField, n: &StructField, rules: Rules, path: &str) -> Result<(), Refusal> {
    if o.nullable && !n.nullable {
        return Err(Refusal::Invalid(format!(
            "column `{path}` cannot become NOT NULL: existing rows may hold nulls"
        )));
    }
    types(&o.data_type, &n.data_type, rules, path)
}

fn types(o: &DataType, n: &DataType, rules: Rules, path: &str) -> Result<(), Refusal> {
    match (o, n) {
        (DataType::Struct(a), DataType::Struct(b)) => fields(a, b, rules, &format!("{path}.")),
        (DataType::Array(a, a_null), DataType::Array(b, b_null)) => {
            if *a_null && !b_null {
                return Err(Refusal::Invalid(format!("array column `{path}` cannot stop containing nulls")));
            }
            types(a, b, rules, &format!("{path}.element"))
        }
        (DataType::Map(ak, av, a_null), DataType::Map(bk, bv, b_null)) => {
            if *a_null && !b_null {
                return Err(Refusal::Invalid(format!("map column `{path}` cannot stop containing null values")));
            }
            types(ak, bk, rules, &format!("{path}.key"))?;
            types(av, bv, rules, &format!("{path}.value"))
        }
        _ if o == n => Ok(()),
        _ if widens(o, n) && rules.type_widening => Ok(()),
        _ if widens(o, n) => Err(Refusal::Unsupported(format!(
            "changing column `{path}` from {} to {} needs type widening (the typeWidening table feature): \
             call widen_column({path:?}, ...), or set delta.enableTypeWidening = true first",
            spell(o),
            spell(n)
        ))),
        _ => Err(Refusal::Invalid(format!(
            "column `{path}` cannot change type from {} to {}: the existing data files hold {} values",
            spell(o),
            spell(n),
            spell(o)
        ))),
    }
}

/// The table schema (JSON) a write with `schema_mode="merge"` evolves to: `table` with every
/// column of `data` it lacks (names compared in any letter case) appended as a nullable column,
/// at any depth (a struct column, or the struct elements of an array, gain the fields the data's
/// have); `None` when the data adds nothing. Types of existing columns never change here: the
/// write then checks them as any write does.
pub fn merged_for_write(table: &str, data: &str) -> crate::Result<Option<String>> {
    let parse = |s: &str, what: &str| {
        serde_json::from_str::<serde_json::Value>(s)
            .map_err(|e| crate::Error::invalid(format!("{what} schema JSON: {e}")))
    };
    let (mut t, d) = (parse(table, "table")?, parse(data, "data")?);
    Ok(merge_struct(&mut t, &d).then(|| t.to_string()))
}

/// Add to the struct type `t` the fields of the struct type `d` it lacks; whether any was added.
fn merge_struct(t: &mut serde_json::Value, d: &serde_json::Value) -> bool {
    let mut changed = false;
    let Some(d_fields) = d["fields"].as_array() else {
        return false;
    };
    for df in d_fields {
        let name = df["name"].as_str().unwrap_or_default();
        let Some(fields) = t["fields"].as_array_mut() else {
            return changed;
        };
        match fields.iter_mut().find(|f| {
            f["name"]
                .as_str()
                .is_some_and(|n| n.eq_ignore_ascii_case(name))
        }) {
            Some(f) => changed |= merge_type(&mut f["type"], &df["type"]),
            None => {
                let mut added = df.clone();
                added["nullable"] = serde_json::Value::Bool(true);
                fields.push(added);
                changed = true;
            }
        }
    }
    changed
}

fn merge_type(t: &mut serde_json::Value, d: &serde_json::Value) -> bool {
    let kind = |v: &serde_json::Value| v["type"].as_str().map(str::to_string);
    match (kind(t).as_deref(), kind(d).as_deref()) {
        (Some("struct"), Some("struct")) => merge_struct(t, d),
        (Some("array"), Some("array")) => merge_type(&mut t["elementType"], &d["elementType"]),
        (Some("map"), Some("map")) => merge_type(&mut t["valueType"], &d["valueType"]),
        _ => false,
    }
}

/// A widening of one column between two schemas that [`check`] allowed: the struct field it
/// belongs to (names from the top level), where in that field's type (`fieldPath` of
/// `delta.typeChanges`: empty for the field itself, else `element`, `key`, `value` joined by
/// dots) and the two types as Delta spells them.
#[derive(Debug, PartialEq)]
pub struct TypeChange {
    pub field: Vec<String>,
    pub field_path: String,
    pub from: String,
    pub to: String,
}

/// Every type that differs between same-named fields of `old` and `new`, at any depth; `Err`
/// names a change inside a struct that is itself inside an array or map, which `delta.typeChanges`
/// cannot place (delta-occ refuses it rather than record it wrongly).
pub fn type_changes(old: &StructType, new: &StructType) -> Result<Vec<TypeChange>, String> {
    let mut out = Vec::new();
    struct_changes(old, new, &mut Vec::new(), &mut out)?;
    Ok(out)
}

fn struct_changes(
    old: &StructType,
    new: &StructType,
    at: &mut Vec<String>,
    out: &mut Vec<TypeChange>,
) -> Result<(), String> {
    for n in &new.fields {
        if let Some(o) = old.fields.iter().find(|o| o.name == n.name) {
            at.push(n.name.clone());
            type_change(&o.data_type, &n.data_type, at, "", out)?;
            at.pop();
        }
    }
    Ok(())
}

fn type_change(
    o: &DataType,
    n: &DataType,
    at: &mut Vec<String>,
    inner: &str,
    out: &mut Vec<TypeChange>,
) -> Result<(), String> {
    let deeper = |step: &str| match inner {
        "" => step.to_string(),
        _ => format!("{inner}.{step}"),
    };
    match (o, n) {
        (DataType::Struct(a), DataType::Struct(b)) if inner.is_empty() => {
            struct_changes(a, b, at, out)
        }
        (DataType::Struct(_), DataType::Struct(_)) if o != n => Err(format!(
            "a field of the struct inside `{}` ({inner}) changes type; widening inside a struct \
             nested in an array or map is not supported",
            at.join(".")
        )),
        (DataType::Array(a, _), DataType::Array(b, _)) => {
            type_change(a, b, at, &deeper("element"), out)
        }
        (DataType::Map(ak, av, _), DataType::Map(bk, bv, _)) => {
            type_change(ak, bk, at, &deeper("key"), out)?;
            type_change(av, bv, at, &deeper("value"), out)
        }
        _ if o != n => {
            out.push(TypeChange {
                field: at.clone(),
                field_path: inner.to_string(),
                from: spell(o),
                to: spell(n),
            });
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Whether values of type `data` may be written to a column of type `table` unchanged (schema
/// enforcement, docs/guide.md "Policies"): the same type, NULLs (`void`), or one of Delta's type
/// widenings. Nested types need the same field names (any case, Unicode lowercase) in the same
/// order and writable children; nullability is checked on the values, not here.
pub fn writable_as(data: &DataType, table: &DataType) -> bool {
    use DataType::{Array, Map, Primitive, Struct};
    if data == table || matches!(data, Primitive(p) if p == "void") {
        return true;
    }
    match (data, table) {
        (Array(a, _), Array(b, _)) => writable_as(a, b),
        (Map(k1, v1, _), Map(k2, v2, _)) => writable_as(k1, k2) && writable_as(v1, v2),
        (Struct(a), Struct(b)) => {
            a.fields.len() == b.fields.len()
                && a.fields.iter().zip(&b.fields).all(|(x, y)| {
                    x.name.to_lowercase() == y.name.to_lowercase()
                        && writable_as(&x.data_type, &y.data_type)
                })
        }
        _ => widens(data, table),
    }
}

/// [`writable_as`] for types in their JSON form.
pub fn type_writable_as(data: &str, table: &str) -> crate::Result<bool> {
    let parse = |t: &str| {
        DataType::from_json(t).map_err(|m| crate::Error::invalid(format!("type {t}: {m}")))
    };
    Ok(writable_as(&parse(data)?, &parse(table)?))
}

/// Delta's type-widening changes (protocol typeWidening feature).
fn widens(o: &DataType, n: &DataType) -> bool {
    use DataType::{Decimal, Primitive};
    let int_digits = |p: &str| match p {
        "byte" => Some(3),
        "short" => Some(5),
        "integer" => Some(10),
        "long" => Some(20),
        _ => None,
    };
    match (o, n) {
        (Primitive(a), Primitive(b)) => matches!(
            (a.as_str(), b.as_str()),
            ("byte", "short" | "integer" | "long" | "double")
                | ("short", "integer" | "long" | "double")
                | ("integer", "long" | "double")
                | ("float", "double")
                | ("date", "timestamp_ntz")
        ),
        (Primitive(a), Decimal(p, s)) => int_digits(a).is_some_and(|d| *p as i32 - *s as i32 >= d),
        (Decimal(p1, s1), Decimal(p2, s2)) => {
            p2 >= p1 && s2 >= s1 && (*p2 as i32 - *s2 as i32) >= (*p1 as i32 - *s1 as i32)
        }
        _ => false,
    }
}

/// A type as Delta spells it in messages.
pub fn spell(t: &DataType) -> String {
    match t {
        DataType::Primitive(p) => p.clone(),
        DataType::Decimal(p, s) => format!("decimal({p},{s})"),
        DataType::Array(e, _) => format!("array<{}>", spell(e)),
        DataType::Map(k, v, _) => format!("map<{},{}>", spell(k), spell(v)),
        DataType::Struct(s) => {
            let inner: Vec<String> = s
                .fields
                .iter()
                .map(|f| format!("{}:{}", f.name, spell(&f.data_type)))
                .collect();
            format!("struct<{}>", inner.join(","))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The writes docs/guide.md "Policies" accepts (Delta's type widening table, applied to data)
    /// and some it refuses.
    #[test]
    fn writable_as_follows_the_widening_table() {
        let arr = |t: &str| format!(r#"{{"type":"array","elementType":{t},"containsNull":true}}"#);
        let st = |name: &str, t: &str| {
            format!(
                r#"{{"type":"struct","fields":[{{"name":"{name}","type":{t},"nullable":true,"metadata":{{}}}}]}}"#
            )
        };
        let cases: Vec<(String, String, bool)> = [
            (r#""byte""#, r#""short""#, true),
            (r#""short""#, r#""long""#, true),
            (r#""integer""#, r#""long""#, true),
            (r#""long""#, r#""integer""#, false),
            (r#""integer""#, r#""double""#, true),
            (r#""long""#, r#""double""#, false),
            (r#""float""#, r#""double""#, true),
            (r#""double""#, r#""float""#, false),
            (r#""integer""#, r#""decimal(10,0)""#, true),
            (r#""integer""#, r#""decimal(10,1)""#, false),
            (r#""decimal(5,2)""#, r#""decimal(7,3)""#, true),
            (r#""decimal(5,2)""#, r#""decimal(6,3)""#, true),
            (r#""decimal(5,2)""#, r#""decimal(5,3)""#, false),
            (r#""date""#, r#""timestamp_ntz""#, true),
            (r#""date""#, r#""timestamp""#, false),
            (r#""string""#, r#""long""#, false),
            (r#""void""#, r#""string""#, true),
            (r#""timestamp""#, r#""timestamp""#, true),
        ]
        .into_iter()
        .map(|(a, b, w)| (a.to_string(), b.to_string(), w))
        .chain([
            (arr(r#""integer""#), arr(r#""long""#), true),
            (arr(r#""long""#), arr(r#""integer""#), false),
            (st("A", r#""integer""#), st("a", r#""long""#), true),
            (st("É", r#""integer""#), st("é", r#""integer""#), true),
            (st("a", r#""integer""#), st("b", r#""integer""#), false),
            (arr(r#""integer""#), r#""integer""#.to_string(), false),
        ])
        .collect();
        for (data, table, want) in cases {
            assert_eq!(
                type_writable_as(&data, &table).unwrap(),
                want,
                "{data} -> {table}"
            );
        }
        assert!(type_writable_as("{", r#""long""#).is_err());
    }

    fn schema(fields: &str) -> StructType {
        StructType::parse(&format!(r#"{{"type":"struct","fields":[{fields}]}}"#)).unwrap()
    }

    fn f(name: &str, ty: &str, nullable: bool) -> String {
        let ty = if ty.starts_with('{') {
            ty.to_string()
        } else {
            format!("{ty:?}")
        };
        format!(r#"{{"name":"{name}","type":{ty},"nullable":{nullable},"metadata":{{}}}}"#)
    }

    /// With dropping allowed: the table below is about what each change does to the data.
    fn verdict(old: &[String], new: &[String], mapping: bool) -> &'static str {
        let rules = Rules {
            column_mapping: mapping,
            allow_drop: true,
            type_widening: false,
        };
        match check(&schema(&old.join(",")), &schema(&new.join(",")), rules) {
            Ok(()) => "ok",
            Err(Refusal::Invalid(_)) => "invalid",
            Err(Refusal::Unsupported(_)) => "unsupported",
            Err(Refusal::Dropped(_)) => "dropped",
        }
    }

    fn mapped(allow_drop: bool) -> Rules {
        Rules {
            column_mapping: true,
            allow_drop,
            type_widening: false,
        }
    }

    /// Issue 44: a widening passes only with the typeWidening rule, and is listed where
    /// `delta.typeChanges` records it (the protocol's typeWidening section: the field's own
    /// metadata, `fieldPath` for array elements and map keys / values).
    #[test]
    fn widenings_need_the_rule_and_are_listed_where_they_happen() {
        let arr =
            |t: &str| format!(r#"{{"type":"array","elementType":"{t}","containsNull":true}}"#);
        let map = |k: &str, v: &str| {
            format!(
                r#"{{"type":"map","keyType":"{k}","valueType":"{v}","valueContainsNull":true}}"#
            )
        };
        let st = |inner: &str| format!(r#"{{"type":"struct","fields":[{inner}]}}"#);
        let old = schema(
            &[
                f("a", "integer", true),
                f("l", &arr("short"), true),
                f("m", &map("integer", "float"), true),
                f("s", &st(&f("d", "decimal(5,2)", true)), true),
                f("same", "long", true),
            ]
            .join(","),
        );
        let new = schema(
            &[
                f("a", "long", true),
                f("l", &arr("integer"), true),
                f("m", &map("long", "double"), true),
                f("s", &st(&f("d", "decimal(7,3)", true)), true),
                f("same", "long", true),
            ]
            .join(","),
        );
        assert!(
            matches!(check(&old, &new, Rules::default()), Err(Refusal::Unsupported(m)) if m.contains("widen_column(\"a\""))
        );
        let widening = Rules {
            type_widening: true,
            ..Rules::default()
        };
        assert_eq!(check(&old, &new, widening), Ok(()));
        let got: Vec<String> = type_changes(&old, &new)
            .unwrap()
            .iter()
            .map(|c| {
                format!(
                    "{} [{}] {} -> {}",
                    c.field.join("."),
                    c.field_path,
                    c.from,
                    c.to
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                "a [] integer -> long",
                "l [element] short -> integer",
                "m [key] integer -> long",
                "m [value] float -> double",
                "s.d [] decimal(5,2) -> decimal(7,3)",
            ]
        );
        // A narrowing is never a widening, whatever the rule.
        assert!(matches!(
            check(&new, &old, widening),
            Err(Refusal::Invalid(_))
        ));
        // A struct inside an array cannot carry a typeChanges entry for its field's parent.
        let (o, n) = (
            schema(&f(
                "l",
                &format!(
                    r#"{{"type":"array","elementType":{},"containsNull":true}}"#,
                    st(&f("x", "integer", true))
                ),
                true,
            )),
            schema(&f(
                "l",
                &format!(
                    r#"{{"type":"array","elementType":{},"containsNull":true}}"#,
                    st(&f("x", "long", true))
                ),
                true,
            )),
        );
        assert!(type_changes(&o, &n).unwrap_err().contains("`l` (element)"));
    }

    /// Issue 44: schema_mode="merge" adds the data's new columns at any depth, nullable, and
    /// leaves existing columns (and their types) alone.
    #[test]
    fn merged_for_write_adds_what_the_data_has() {
        let st = |inner: &str| format!(r#"{{"type":"struct","fields":[{inner}]}}"#);
        let arr = |t: &str| format!(r#"{{"type":"array","elementType":{t},"containsNull":true}}"#);
        let table = st(&[
            f("id", "long", false),
            f("s", &st(&f("a", "long", true)), true),
            f("l", &arr(&st(&f("x", "long", true))), true),
        ]
        .join(","));
        let data = st(&[
            f("ID", "integer", true),
            f(
                "s",
                &st(&[f("A", "long", true), f("b", "string", false)].join(",")),
                true,
            ),
            f(
                "l",
                &arr(&st(
                    &[f("x", "long", true), f("y", "double", true)].join(",")
                )),
                true,
            ),
            f("n", "string", false),
        ]
        .join(","));
        let got: serde_json::Value =
            serde_json::from_str(&merged_for_write(&table, &data).unwrap().unwrap()).unwrap();
        let want: serde_json::Value = serde_json::from_str(&st(&[
            f("id", "long", false),
            f(
                "s",
                &st(&[f("a", "long", true), f("b", "string", true)].join(",")),
                true,
            ),
            f(
                "l",
                &arr(&st(
                    &[f("x", "long", true), f("y", "double", true)].join(",")
                )),
                true,
            ),
            f("n", "string", true),
        ]
        .join(",")))
        .unwrap();
        assert_eq!(got, want);
        assert_eq!(merged_for_write(&table, &table).unwrap(), None);
        assert!(merged_for_write("{", &table).is_err());
    }

    /// Issue 44: a schema that lacks a column (a rename written as a new schema) is refused on a
    /// column-mapping table unless dropping was asked for, at any depth.
    #[test]
    fn a_missing_column_needs_allow_drop() {
        let inner = |fields: &str| {
            f(
                "s",
                &format!(r#"{{"type":"struct","fields":[{fields}]}}"#),
                true,
            )
        };
        let (x, y) = (f("x", "long", true), f("y", "long", true));
        for (old, new, path) in [
            (
                vec![f("a", "long", true), x.clone()],
                vec![f("b", "long", true), x.clone()],
                "a",
            ),
            (
                vec![inner(&[x.clone(), y.clone()].join(","))],
                vec![inner(&x)],
                "s.y",
            ),
        ] {
            let (old, new) = (schema(&old.join(",")), schema(&new.join(",")));
            assert_eq!(
                check(&old, &new, mapped(false)),
                Err(Refusal::Dropped(path.into()))
            );
            assert_eq!(check(&old, &new, mapped(true)), Ok(()));
        }
    }

    #[test]
    fn table_of_changes() {
        let a = || f("a", "long", true);
        let nested = |inner: &str| {
            f(
                "s",
                &format!(r#"{{"type":"struct","fields":[{inner}]}}"#),
                true,
            )
        };
        #[allow(clippy::type_complexity)]
        let cases: Vec<(&str, Vec<String>, Vec<String>, bool, &str)> = vec![
            ("same", vec![a()], vec![a()], false, "ok"),
            (
                "add nullable",
                vec![a()],
                vec![a(), f("b", "string", true)],
                false,
                "ok",
            ),
            (
                "add not null",
                vec![a()],
                vec![a(), f("b", "string", false)],
                false,
                "invalid",
            ),
            (
                "drop",
                vec![a(), f("b", "string", true)],
                vec![a()],
                false,
                "invalid",
            ),
            (
                "drop with mapping",
                vec![a(), f("b", "string", true)],
                vec![a()],
                true,
                "ok",
            ),
            (
                "rename by case",
                vec![a()],
                vec![f("A", "long", true)],
                false,
                "invalid",
            ),
            (
                "relax nullability",
                vec![f("a", "long", false)],
                vec![a()],
                false,
                "ok",
            ),
            (
                "tighten nullability",
                vec![a()],
                vec![f("a", "long", false)],
                false,
                "invalid",
            ),
            (
                "int to long",
                vec![f("a", "integer", true)],
                vec![a()],
                false,
                "unsupported",
            ),
            (
                "long to int",
                vec![a()],
                vec![f("a", "integer", true)],
                false,
                "invalid",
            ),
            (
                "long to string",
                vec![a()],
                vec![f("a", "string", true)],
                false,
                "invalid",
            ),
            (
                "decimal widening",
                vec![f("a", "decimal(10,2)", true)],
                vec![f("a", "decimal(12,3)", true)],
                false,
                "unsupported",
            ),
            (
                "decimal scale only",
                vec![f("a", "decimal(10,2)", true)],
                vec![f("a", "decimal(10,3)", true)],
                false,
                "invalid",
            ),
            (
                "int to decimal(10,0)",
                vec![f("a", "integer", true)],
                vec![f("a", "decimal(10,0)", true)],
                false,
                "unsupported",
            ),
            (
                "int to decimal(9,0)",
                vec![f("a", "integer", true)],
                vec![f("a", "decimal(9,0)", true)],
                false,
                "invalid",
            ),
            (
                "nested add",
                vec![nested(&f("x", "long", true))],
                vec![nested(
                    &[f("x", "long", true), f("y", "long", true)].join(","),
                )],
                false,
                "ok",
            ),
            (
                "nested drop",
                vec![nested(
                    &[f("x", "long", true), f("y", "long", true)].join(","),
                )],
                vec![nested(&f("x", "long", true))],
                false,
                "invalid",
            ),
            (
                "nested type",
                vec![nested(&f("x", "long", true))],
                vec![nested(&f("x", "string", true))],
                true,
                "invalid",
            ),
        ];
        for (name, old, new, mapping, want) in cases {
            assert_eq!(verdict(&old, &new, mapping), want, "{name}");
        }
    }

    #[test]
    fn messages_name_the_column_and_types() {
        let err = check(
            &schema(&f("a", "long", true)),
            &schema(&f("a", "string", true)),
            Rules::default(),
        )
        .unwrap_err();
        assert_eq!(
            err,
            Refusal::Invalid("column `a` cannot change type from long to string: the existing data files hold long values".into())
        );
    }
}
