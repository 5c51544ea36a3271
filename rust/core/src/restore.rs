//! RESTORE: a transaction that makes the table's data what it was at an earlier version.
//!
//! It removes every live file (path and deletion vector) the target version did not have and
//! re-adds, with `dataChange: true`, every file of the target that is not live now — a file whose
//! deletion vector changed since is removed and re-added with the old one. The metadata goes back
//! to the target's too (schema, partitioning, properties, constraints: restored rows must agree
//! with them), except what must never move backwards: the table id, identity high-water marks
//! (values are never reused) and the in-commit-timestamp settings. The protocol is kept.
//!
//! The clustering domain goes back with the schema (a clustering column the target did not have
//! must not stay named).
//!
//! RESTORE depends on every file of the table, so it reads the whole table and never resolves
//! at row level: a concurrent commit that changed or removed data conflicts, as the
//! write-conflict rules say for a whole-table read (re-applying a winner's deletions on top would
//! not give the target's rows). A concurrent blind append conflicts only under Serializable;
//! under WriteSerializable the RESTORE is ordered before it and its rows stay.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use crate::error::{Error, Result};
use crate::log::actions::{remove_of, AddFile};
use crate::schema::StructType;
use crate::snapshot::Snapshot;
use crate::transaction::Transaction;

/// What a staged RESTORE changes (delta-spark's operation metric names).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Restored {
    pub num_removed_files: i64,
    pub num_restored_files: i64,
    pub removed_files_size: i64,
    pub restored_files_size: i64,
    pub num_of_files_after_restore: i64,
    pub table_size_after_restore: i64,
}

impl Restored {
    pub fn metrics(&self) -> BTreeMap<String, String> {
        [
            ("numRemovedFiles", self.num_removed_files),
            ("numRestoredFiles", self.num_restored_files),
            ("removedFilesSize", self.removed_files_size),
            ("restoredFilesSize", self.restored_files_size),
            ("numOfFilesAfterRestore", self.num_of_files_after_restore),
            ("tableSizeAfterRestore", self.table_size_after_restore),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }
}

fn key(f: &AddFile) -> (&str, Option<String>) {
    (&f.path, f.deletion_vector.as_ref().map(|d| d.unique_id()))
}

/// Stage in `txn` (open, reading the latest snapshot, nothing staged yet) the restore of `target`,
/// an earlier snapshot of the same table; its operation metrics are set too.
pub fn restore(txn: &mut Transaction, target: &Snapshot) -> Result<Restored> {
    let r = stage(txn, target)?;
    txn.set_operation_metrics(r.metrics())?;
    Ok(r)
}

fn stage(txn: &mut Transaction, target: &Snapshot) -> Result<Restored> {
    let current = txn.snapshot().cloned().ok_or_else(|| {
        Error::invalid("RESTORE needs an existing table (this transaction creates one)")
    })?;
    let table = current.root.to_string();
    if target.version() > current.version() {
        return Err(Error::invalid(format!(
            "cannot restore {table} to version {}: its latest version is {}",
            target.version(),
            current.version()
        )));
    }
    if txn.num_staged() > 0 {
        return Err(Error::invalid(
            "RESTORE must be the only change of its transaction",
        ));
    }
    txn.read_whole_table()?;
    txn.opts.row_level = false;

    let wanted: HashMap<_, &AddFile> = target.files().iter().map(|f| (key(f), f)).collect();
    let live: HashMap<_, &AddFile> = current.files().iter().map(|f| (key(f), f)).collect();
    let mut out = Restored::default();
    for f in current.files() {
        if !wanted.contains_key(&key(f)) {
            txn.removes.push(remove_of(f, true));
            out.num_removed_files += 1;
            out.removed_files_size += f.size;
        }
    }
    let mut adds: Vec<AddFile> = Vec::new();
    for f in target.files() {
        if !live.contains_key(&key(f)) {
            let mut a = f.clone();
            a.data_change = true;
            out.num_restored_files += 1;
            out.restored_files_size += a.size;
            adds.push(a);
        }
    }
    check_present(&current, &adds, target.version())?;
    txn.adds = adds;
    out.num_of_files_after_restore = target.files().len() as i64;
    out.table_size_after_restore = target.files().iter().map(|f| f.size).sum();

    let mut metadata = target.metadata().clone();
    let now = current.metadata();
    metadata.id = now.id.clone();
    // In-commit timestamp settings stay exactly as they are now.
    metadata.configuration.retain(|k, _| !is_ict_key(k));
    metadata.configuration.extend(
        now.configuration
            .iter()
            .filter(|(k, _)| is_ict_key(k))
            .map(|(k, v)| (k.clone(), v.clone())),
    );
    metadata.schema_string = keep_identity_marks(&metadata.schema_string, &current.schema)?;
    // The same schema written differently (key order) is no change: a metadata action would
    // fail every concurrent writer for nothing.
    if same_json(&metadata.schema_string, &now.schema_string) {
        metadata.schema_string = now.schema_string.clone();
    }
    if &metadata != now {
        txn.metadata = Some(metadata);
    }
    let domain = crate::clustering::DOMAIN;
    let wanted = target.state.domains.get(domain).filter(|d| !d.removed);
    let live = current.state.domains.get(domain).filter(|d| !d.removed);
    match (wanted, live) {
        (Some(w), Some(l)) if w.configuration == l.configuration => {}
        (Some(w), _) => {
            txn.domains.insert(domain.into(), w.clone());
        }
        (None, Some(l)) => {
            let mut gone = l.clone();
            gone.removed = true;
            txn.domains.insert(domain.into(), gone);
        }
        (None, None) => {}
    }
    Ok(out)
}

fn is_ict_key(k: &str) -> bool {
    k.starts_with("delta.inCommitTimestamp") || k == "delta.enableInCommitTimestamps"
}

fn same_json(a: &str, b: &str) -> bool {
    match (
        serde_json::from_str::<Value>(a),
        serde_json::from_str::<Value>(b),
    ) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

/// The target schema with each identity column's high-water mark set to the current one (marks
/// only grow, so the current one is the higher). Columns are matched by their column-mapping
/// id when they have one (a renamed column is the same column), else by name. Identity columns
/// are top-level columns.
fn keep_identity_marks(target_schema: &str, current: &StructType) -> Result<String> {
    const MARK: &str = "delta.identity.highWaterMark";
    const ID: &str = "delta.columnMapping.id";
    let key = |name: &str, meta: &serde_json::Map<String, Value>| match meta.get(ID) {
        Some(id) => format!("id:{id}"),
        None => format!("name:{name}"),
    };
    let marks: HashMap<String, &Value> = current
        .fields
        .iter()
        .filter_map(|f| f.metadata.get(MARK).map(|m| (key(&f.name, &f.metadata), m)))
        .collect();
    if marks.is_empty() {
        return Ok(target_schema.to_string());
    }
    let bad = |e: String| Error::invalid(format!("the schema of the version to restore: {e}"));
    let mut schema: Value = serde_json::from_str(target_schema).map_err(|e| bad(e.to_string()))?;
    let fields = schema
        .get_mut("fields")
        .and_then(Value::as_array_mut)
        .ok_or_else(|| bad("no fields".into()))?;
    for f in fields {
        let Some(name) = f.get("name").and_then(Value::as_str).map(str::to_string) else {
            continue;
        };
        let Some(meta) = f.get_mut("metadata").and_then(Value::as_object_mut) else {
            continue;
        };
        if let Some(now) = marks.get(&key(&name, meta)) {
            if meta.contains_key("delta.identity.start") {
                meta.insert(MARK.into(), (*now).clone());
            }
        }
    }
    Ok(schema.to_string())
}

/// Every file a restore re-adds (and its deletion vector) must still exist: VACUUM may have
/// deleted what the target version referenced.
fn check_present(current: &Snapshot, adds: &[AddFile], version: i64) -> Result<()> {
    match current.first_missing(adds)? {
        None => Ok(()),
        Some(at) => Err(Error::VersionNotFound {
            table: current.root.to_string(),
            version,
            reason: format!(
                "cannot restore it: its file {} no longer exists (removed by VACUUM?)",
                at.name()
            ),
        }),
    }
}
