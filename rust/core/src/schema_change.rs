//! Which schema replacements keep every existing data file readable under the new schema.
//!
//! A schema change rewrites no data, so the new schema must describe the old files: a column
//! may be dropped (or renamed, which is a drop and an add) only with column mapping, because
//! without it the name is the physical name and a later column of that name would read the old
//! values; types may not change (type widening is a table feature delta-occ does not write); a
//! column may not become NOT NULL; and a new column must be nullable, since old rows have none.

use crate::schema::{DataType, StructField, StructType};

/// Why replacing `old` by `new` is refused; `Ok` when it is allowed. With column mapping a
/// column may disappear only when `allow_drop` says the caller means it: a schema that merely
/// lacks a column (a rename written as a new schema) would lose its data silently.
pub fn check(
    old: &StructType,
    new: &StructType,
    column_mapping: bool,
    allow_drop: bool,
) -> Result<(), Refusal> {
    fields(
        old,
        new,
        Rules {
            column_mapping,
            allow_drop,
        },
        "",
    )
}

#[derive(Clone, Copy)]
struct Rules {
    column_mapping: bool,
    allow_drop: bool,
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
        _ if widens(o, n) => Err(Refusal::Unsupported(format!(
            "changing column `{path}` from {} to {} needs type widening (the typeWidening table feature), \
             which delta-occ does not write",
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
        match check(
            &schema(&old.join(",")),
            &schema(&new.join(",")),
            mapping,
            true,
        ) {
            Ok(()) => "ok",
            Err(Refusal::Invalid(_)) => "invalid",
            Err(Refusal::Unsupported(_)) => "unsupported",
            Err(Refusal::Dropped(_)) => "dropped",
        }
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
                check(&old, &new, true, false),
                Err(Refusal::Dropped(path.into()))
            );
            assert_eq!(check(&old, &new, true, true), Ok(()));
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
            false,
            false,
        )
        .unwrap_err();
        assert_eq!(
            err,
            Refusal::Invalid("column `a` cannot change type from long to string: the existing data files hold long values".into())
        );
    }
}
