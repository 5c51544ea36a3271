//! Row tracking (protocol "Row Tracking"): on a table whose protocol lists the `rowTracking`
//! writer feature, every add a commit brings gets a `baseRowId` (row `i` of the file has the
//! fresh row id `baseRowId + i`) and a `defaultRowCommitVersion` (the commit's version), and the
//! commit records the highest id handed out in the `delta.rowTracking` domain.
//!
//! Ids are handed out per commit attempt, from the newest high-water mark the attempt knows: a
//! commit that retries after other writers won takes ids above theirs and the version it really
//! lands at (delta-spark's `reassignOverlappingRowIds` / `reassignRowCommitVersions`). An add
//! that re-commits a live file (its deletion vector grew) keeps the file's values.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, Int64Array, RecordBatch};
use arrow_schema::{DataType as ArrowType, Field, Schema};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::log::actions::{AddFile, DomainMetadata, Protocol};
use crate::protocol::{has_writer_feature, is_true};
use std::collections::BTreeMap;

/// The row-id rule (protocol "Row Tracking"): a row's id is its materialized value where its
/// file holds one, else the file's baseRowId plus the row's physical position; its commit
/// version is the materialized one, else the file's defaultRowCommitVersion (NULL where neither
/// is known). Written once, as row expressions over [`RULE_INPUTS`]: the conflict checker and the
/// embedded engine evaluate them with the core's evaluator, and Spark builds its columns from the
/// same compiled tree, so every engine follows rows by the same ids.
pub const ROW_ID_RULE: &str = "coalesce(materialized_row_id, base_row_id + row_position)";
pub const ROW_COMMIT_VERSION_RULE: &str =
    "coalesce(materialized_row_commit_version, default_row_commit_version)";
/// The rules' inputs (all BIGINT, NULL where unknown).
pub const RULE_INPUTS: [&str; 5] = [
    "materialized_row_id",
    "base_row_id",
    "row_position",
    "materialized_row_commit_version",
    "default_row_commit_version",
];

/// The schema the rules are compiled against.
pub fn rule_schema() -> Schema {
    Schema::new(
        RULE_INPUTS
            .iter()
            .map(|n| Field::new(*n, ArrowType::Int64, true))
            .collect::<Vec<_>>(),
    )
}

/// [`ROW_ID_RULE`] for the rows of one file at `positions`: `materialized` its materialized ids
/// at those positions (None: the file has none), `base` its baseRowId.
pub fn row_ids(
    materialized: Option<&Int64Array>,
    base: Option<i64>,
    positions: &[u64],
) -> Result<Int64Array> {
    static RULE: std::sync::LazyLock<crate::rowexpr::RowExpr> = std::sync::LazyLock::new(|| {
        crate::rowexpr::RowExpr::compile(ROW_ID_RULE, &rule_schema(), &[])
            .expect("the row-id rule compiles")
    });
    // Only the columns the rule reads (by name).
    let n = positions.len();
    let fields = ["materialized_row_id", "base_row_id", "row_position"]
        .map(|c| Field::new(c, ArrowType::Int64, true));
    let columns: Vec<ArrayRef> = vec![
        match materialized {
            Some(m) => Arc::new(m.clone()),
            None => Arc::new(Int64Array::new_null(n)),
        },
        Arc::new(Int64Array::from(vec![base; n])),
        Arc::new(Int64Array::from_iter_values(
            positions.iter().map(|&p| p as i64),
        )),
    ];
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields.to_vec())), columns)
        .map_err(|e| Error::invalid(format!("row ids: {e}")))?;
    let ids = RULE.evaluate(&batch)?;
    Ok(ids.as_primitive::<Int64Type>().clone())
}

/// The domain holding the high-water mark.
pub const DOMAIN: &str = "delta.rowTracking";
const MARK: &str = "rowIdHighWaterMark";

/// Whether writers of a table with this protocol and configuration must assign row ids:
/// the feature is supported and not suspended.
pub fn assigns_ids(p: &Protocol, config: &BTreeMap<String, String>) -> bool {
    has_writer_feature(p, "rowTracking") && !is_true(config, "delta.rowTrackingSuspended")
}

/// Whether readers may rely on every file having row ids, so writers must keep a row's id when
/// they copy it (`delta.enableRowTracking=true`).
pub fn enabled(config: &BTreeMap<String, String>) -> bool {
    is_true(config, "delta.enableRowTracking")
}

/// The configuration keys naming the hidden columns a copied row keeps its id and commit version
/// in. Readers and writers of an enabled table (delta-spark among them) need both names.
pub const MATERIALIZED_ID: &str = "delta.rowTracking.materializedRowIdColumnName";
pub const MATERIALIZED_VERSION: &str = "delta.rowTracking.materializedRowCommitVersionColumnName";

/// Name the materialized columns of a table that enables row tracking, as delta-spark does
/// (`_row-id-col-<uuid>`, `_row-commit-version-col-<uuid>`), unless named already.
pub fn name_materialized_columns(config: &mut BTreeMap<String, String>) {
    if !enabled(config) {
        return;
    }
    for (key, prefix) in [
        (MATERIALIZED_ID, "_row-id-col-"),
        (MATERIALIZED_VERSION, "_row-commit-version-col-"),
    ] {
        config
            .entry(key.to_string())
            .or_insert_with(|| format!("{prefix}{}", uuid::Uuid::new_v4()));
    }
}

/// The high-water mark a `delta.rowTracking` domain records (-1 without one: the first id is 0).
pub fn high_water_mark(domain: Option<&DomainMetadata>, table: &str) -> Result<i64> {
    let Some(d) = domain.filter(|d| !d.removed) else {
        return Ok(-1);
    };
    serde_json::from_str::<Value>(&d.configuration)
        .ok()
        .and_then(|v| v.get(MARK).and_then(Value::as_i64))
        .ok_or_else(|| Error::CorruptLog {
            file: format!("{table}/_delta_log"),
            version: None,
            message: format!(
                "the {DOMAIN} domain has no integer {MARK}: {}",
                d.configuration
            ),
        })
}

/// The domain action recording `mark`.
pub fn domain(mark: i64) -> DomainMetadata {
    DomainMetadata {
        domain: DOMAIN.into(),
        configuration: serde_json::json!({ MARK: mark }).to_string(),
        removed: false,
    }
}

/// Which adds take fresh ids: those that do not carry a `baseRowId` yet.
pub fn fresh(adds: &[AddFile]) -> Vec<bool> {
    adds.iter().map(|a| a.base_row_id().is_none()).collect()
}

/// Hand out ids above `mark` to the `fresh` adds, in order (each takes as many as its physical
/// rows, `stats.numRecords`), and give them `version`. Returns the new mark, or `None` when no
/// add was fresh.
pub fn assign(
    adds: &mut [AddFile],
    fresh: &[bool],
    mark: i64,
    version: i64,
    table: &str,
) -> Result<Option<i64>> {
    let mut next = mark + 1;
    let mut any = false;
    for (a, _) in adds.iter_mut().zip(fresh).filter(|(_, f)| **f) {
        let n = a.num_records()?.ok_or_else(|| {
            Error::invalid(format!(
                "{table} has row tracking: the add of {} needs stats with numRecords to take row ids",
                a.path
            ))
        })?;
        let extra = a.extra_mut();
        extra.base_row_id = Some(next);
        extra.default_row_commit_version = Some(version);
        next += n;
        any = true;
    }
    Ok(any.then_some(next - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(path: &str, rows: Option<i64>) -> AddFile {
        let stats = rows.map(|n| format!(r#"{{"numRecords":{n}}}"#));
        let line = serde_json::json!({"add": {"path": path, "partitionValues": {}, "size": 1,
            "modificationTime": 1, "dataChange": true, "stats": stats}});
        let actions = crate::parse_actions(line.to_string().as_bytes(), "test", Some(0)).unwrap();
        actions.adds.into_iter().next().unwrap()
    }

    /// delta-spark's rule (protocol-notes §6): the first file of a table takes id 0, each next
    /// file starts one above the previous mark, which moves by the file's physical rows.
    #[test]
    fn ids_follow_the_mark_in_order() {
        let mut adds = vec![add("a", Some(3)), add("b", Some(0)), add("c", Some(2))];
        let fresh = fresh(&adds);
        assert_eq!(assign(&mut adds, &fresh, -1, 7, "t").unwrap(), Some(4));
        let got: Vec<_> = adds
            .iter()
            .map(|a| (a.base_row_id(), a.default_row_commit_version()))
            .collect();
        assert_eq!(
            got,
            [(Some(0), Some(7)), (Some(3), Some(7)), (Some(3), Some(7))]
        );
        // A retry above a winner's mark of 10 at version 9: fresh ids again, the kept ones stay.
        let mut again = adds.clone();
        assert_eq!(assign(&mut again, &fresh, 10, 9, "t").unwrap(), Some(15));
        assert_eq!(again[0].base_row_id(), Some(11));
        assert_eq!(again[2].default_row_commit_version(), Some(9));
        assert!(!super::fresh(&again).iter().any(|f| *f));
    }

    #[test]
    fn marks_and_refusals() {
        assert_eq!(high_water_mark(None, "t").unwrap(), -1);
        assert_eq!(high_water_mark(Some(&domain(41)), "t").unwrap(), 41);
        let bad = DomainMetadata {
            domain: DOMAIN.into(),
            configuration: "{}".into(),
            removed: false,
        };
        assert!(high_water_mark(Some(&bad), "t").is_err());
        let mut no_stats = vec![add("a", None)];
        let e = assign(&mut no_stats, &[true], -1, 1, "t").unwrap_err();
        assert!(e.to_string().contains("numRecords"), "{e}");
        assert_eq!(assign(&mut [], &[], 5, 1, "t").unwrap(), None);
    }
}
