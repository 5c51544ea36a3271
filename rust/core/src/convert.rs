//! CONVERT TO DELTA: adopt a directory of parquet files as a Delta table in place. Version 0
//! lists every visible file (hidden `_x` / `.x` paths skipped, as readers skip them) with the
//! statistics of its footer and the partition values of its `column=value` directories; no data
//! is read or rewritten. The schema is the union of the files' schemas (a column two files give
//! different types is refused, never guessed), then the partition columns.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::commit::committer::{self, CommitResult};
use crate::commit::options::CommitOptions;
use crate::error::{Error, Result};
use crate::storage::{Entry, Location};
use crate::table::{new_table_transaction, refuse_existing_table};

/// Hive's directory name for a null partition value.
const NULL_PARTITION: &str = "__HIVE_DEFAULT_PARTITION__";

/// A partition column to convert with: its name and, if the caller gave one, its Delta type
/// (JSON); without one the type is inferred from the directory names (`integer` or `long` when
/// every value is an integer that fits, else `string`, as pyarrow's and Spark's discovery do).
pub struct PartitionColumn {
    pub name: String,
    pub data_type: Option<Value>,
}

/// Convert the parquet directory at `location` (its files' partition directories in the order
/// of `partition_by`) and commit version 0; the committed version's result.
pub fn convert(
    location: &str,
    storage_options: &BTreeMap<String, String>,
    partition_by: &[PartitionColumn],
    properties: BTreeMap<String, String>,
) -> Result<CommitResult> {
    let root = Location::parse(location, storage_options)?;
    refuse_existing_table(&root)?;
    let listed = root.list(None, true).map_err(|e| Error::io(&root, e))?;
    let files: Vec<&Entry> = listed
        .iter()
        .filter(|e| crate::vacuum::is_visible_data(&e.name))
        .collect();
    if files.is_empty() {
        return Err(Error::invalid(format!(
            "convert_to_delta: {root} holds no data files to convert"
        )));
    }
    let names: Vec<&str> = partition_by.iter().map(|c| c.name.as_str()).collect();
    let mapped = crate::schema::ColumnMappingMode::from_config(
        properties
            .get("delta.columnMapping.mode")
            .map(String::as_str),
    )? != crate::schema::ColumnMappingMode::None;
    let values = files
        .iter()
        .map(|f| partition_values(&root, &f.name, &names))
        .collect::<Result<Vec<_>>>()?;
    let footers = crate::parallel::map(&files, |f| {
        crate::parquet_stats::footer_schema_and_stats(&root.join(&f.name))
    });
    let mut fields: Vec<Value> = Vec::new();
    let mut first_seen: Vec<&str> = Vec::new();
    let mut stats = Vec::with_capacity(files.len());
    for (file, footer) in files.iter().zip(footers) {
        let (schema, file_stats, _) = footer?;
        for f in crate::schema_arrow::delta_schema(&schema)?["fields"]
            .as_array()
            .cloned()
            .unwrap_or_default()
        {
            let name = f["name"].as_str().unwrap_or_default();
            if names.iter().any(|p| p.eq_ignore_ascii_case(name)) {
                return Err(Error::invalid(format!(
                    "convert_to_delta: {root}: file {:?} holds partition column {name:?} as data; a partition column's values must come from the directory names only",
                    file.name
                )));
            }
            match fields.iter().position(|g| g["name"] == f["name"]) {
                Some(i) if fields[i]["type"] != f["type"] => {
                    return Err(Error::invalid(format!(
                        "convert_to_delta: {root}: column {name:?} is {} in {:?} but {} in {:?}; cast the files to one type first",
                        fields[i]["type"], first_seen[i], f["type"], file.name
                    )))
                }
                Some(_) => {}
                None => {
                    first_seen.push(&file.name);
                    // Rows of a file without the column read it as NULL. Of the metadata a
                    // file's schema carries only a comment is adopted: a rule (generation
                    // expression, default, identity, invariant) was never checked on its rows.
                    let mut metadata = json!({});
                    if let Some(c) = f["metadata"].get("comment") {
                        metadata["comment"] = c.clone();
                    }
                    fields.push(json!({"name": f["name"], "type": f["type"], "nullable": true, "metadata": metadata}));
                }
            }
        }
        stats.push(file_stats);
    }
    for (i, column) in partition_by.iter().enumerate() {
        let data_type = match &column.data_type {
            Some(t) => t.clone(),
            None => json!(infer_type(values.iter().map(|v| v[i].as_deref()))),
        };
        fields.push(
            json!({"name": column.name, "type": data_type, "nullable": true, "metadata": {}}),
        );
    }
    let mut schema = json!({"type": "struct", "fields": fields});
    if mapped {
        // The physical names are the names the files (and partition directories) hold, at
        // every depth; ids are handed out as for a new table.
        crate::schema::name_physical_as_logical(&mut schema);
    }
    let schema = schema.to_string();
    let mut txn = new_table_transaction(
        &root,
        &schema,
        names.iter().map(|s| s.to_string()).collect(),
        properties,
        None,
    )?;
    for ((file, pv), file_stats) in files.iter().zip(values).zip(stats) {
        let pv = names.iter().map(|n| n.to_string()).zip(pv).collect();
        let size = i64::try_from(file.size).unwrap_or(i64::MAX);
        txn.add_file(
            &file.name,
            pv,
            size,
            Some(file_stats),
            true,
            None,
            file.modified,
        )?;
    }
    let params = BTreeMap::from([
        ("numFiles".to_string(), files.len().to_string()),
        (
            "partitionedBy".to_string(),
            serde_json::to_string(&names).unwrap_or_default(),
        ),
        ("collectStats".to_string(), "true".to_string()),
    ]);
    committer::commit(&mut txn, "CONVERT", &params, &CommitOptions::default())
}

/// The partition values of the file `name` (relative to the table root) from its `k=v`
/// directories, which must name exactly `columns` in order (any letter case, as Hive writes them).
fn partition_values(root: &Location, name: &str, columns: &[&str]) -> Result<Vec<Option<String>>> {
    let dirs: Vec<&str> = name.split('/').collect();
    let dirs = &dirs[..dirs.len() - 1];
    let found: Vec<(&str, &str)> = dirs.iter().filter_map(|d| d.split_once('=')).collect();
    let matches = found.len() == dirs.len()
        && found.len() == columns.len()
        && found
            .iter()
            .zip(columns)
            .all(|((k, _), c)| k.eq_ignore_ascii_case(c));
    if !matches {
        let layout: Vec<String> = columns.iter().map(|c| format!("{c}=<value>")).collect();
        let hint = if columns.is_empty() && !found.is_empty() {
            let keys: Vec<&str> = found.iter().map(|(k, _)| *k).collect();
            format!("; the directories look partitioned: pass partition_by={keys:?}")
        } else {
            String::new()
        };
        return Err(Error::invalid(format!(
            "convert_to_delta: {root}: file {name:?} is not under the partition directories {}{hint}",
            if layout.is_empty() { "(none: files directly in the table directory)".to_string() } else { layout.join("/") }
        )));
    }
    Ok(found
        .iter()
        .map(|(_, v)| {
            let v = percent_encoding::percent_decode_str(v)
                .decode_utf8_lossy()
                .into_owned();
            (v != NULL_PARTITION).then_some(v)
        })
        .collect())
}

/// The narrowest of `integer`, `long`, `string` that holds every (non-null) value; `string`
/// when every value is null.
fn infer_type<'a>(values: impl Iterator<Item = Option<&'a str>>) -> &'static str {
    let mut widest = "string";
    for v in values.flatten() {
        if widest == "string" {
            widest = "integer";
        }
        match v.parse::<i64>() {
            Ok(n) if i32::try_from(n).is_err() => widest = "long",
            Ok(_) => {}
            Err(_) => return "string",
        }
    }
    widest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_values_follow_the_directories() {
        let root = Location::local("/tmp/t");
        let pv = |name: &str, cols: &[&str]| partition_values(&root, name, cols);
        assert_eq!(
            pv("a=1/b=x%2Fy/f.parquet", &["a", "b"]).unwrap(),
            [Some("1".into()), Some("x/y".into())]
        );
        assert_eq!(
            pv("A=__HIVE_DEFAULT_PARTITION__/f.parquet", &["a"]).unwrap(),
            [None]
        );
        assert_eq!(pv("f.parquet", &[]).unwrap(), Vec::<Option<String>>::new());
        assert!(pv("plain/f.parquet", &[])
            .unwrap_err()
            .to_string()
            .contains("not under"));
        let e = pv("a=1/f.parquet", &[]).unwrap_err().to_string();
        assert!(e.contains("partition_by=[\"a\"]"), "{e}");
        assert!(pv("b=1/a=2/f.parquet", &["a", "b"]).is_err());
        assert!(pv("a=1/f.parquet", &["a", "b"]).is_err());
    }

    #[test]
    fn inferred_types_hold_every_value() {
        let t = |v: &[Option<&str>]| infer_type(v.iter().copied());
        assert_eq!(t(&[Some("1"), None, Some("-7")]), "integer");
        assert_eq!(t(&[Some("1"), Some("3000000000")]), "long");
        assert_eq!(t(&[Some("1"), Some("x")]), "string");
        assert_eq!(t(&[None]), "string");
    }
}
