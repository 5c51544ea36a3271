//! One commit attempt's content: what is fixed for the whole loop (`Prepared`), the file actions
//! with their DV files written (`Materialized`), and the commit file's bytes.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use serde_json::{json, Map, Value};

use crate::commit::check_record::CheckRecord;
use crate::conflict::{self, DvChange, Staged};
use crate::dv::{self, DeletionBitmap};
use crate::error::{Error, Result};
use crate::isolation::IsolationLevel;
use crate::log::actions::{remove_of, AddFile, DomainMetadata, Metadata, Protocol, RemoveFile};
use crate::protocol::{self, is_true};
use crate::snapshot::Snapshot;
use crate::storage::Location;
use crate::transaction::Transaction;

/// `commitInfo.engineInfo` of every commit delta-occ writes.
pub const ENGINE_INFO: &str = concat!("delta-occ/", env!("CARGO_PKG_VERSION"));

/// Everything fixed for the whole loop.
pub(super) struct Prepared {
    /// The staged actions before any rebase.
    pub(super) staged: Staged,
    pub(super) level: IsolationLevel,
    pub(super) is_blind_append: bool,
    pub(super) domains: BTreeSet<String>,
    pub(super) metadata: Option<Metadata>,
    pub(super) protocol: Option<Protocol>,
    pub(super) ict_enabled: bool,
    pub(super) ict_newly_enabled: bool,
    /// `Some(exact)` on a table with deletion vectors: winners are checked one by one with the
    /// row-level rules (`exact`) or file-level rules plus compaction remapping (§4 rule 5).
    pub(super) dv_table: Option<bool>,
    pub(super) txn_id: String,
    /// On a table that assigns row ids (`row_tracking`): the high-water mark as read.
    pub(super) row_id_mark: Option<i64>,
}

/// The file actions of one attempt, with DV files written.
pub(super) struct Materialized {
    pub(super) adds: Vec<AddFile>,
    pub(super) removes: Vec<RemoveFile>,
    pub(super) metrics: BTreeMap<String, String>,
    /// The DV file this materialization wrote (referenced only if its attempt lands).
    pub(super) dv_file: Option<Location>,
    /// Which adds take fresh row ids at each attempt (`row_tracking::fresh`).
    pub(super) fresh_row_ids: Vec<bool>,
    /// The `delta.rowTracking` domain of this attempt, when it handed out ids.
    pub(super) row_id_domain: Option<DomainMetadata>,
}

pub(super) fn previous_ict(txn: &Transaction) -> Result<Option<i64>> {
    let Some(snap) = &txn.snapshot else {
        return Ok(None);
    };
    Ok(snap
        .commit_info()
        .ok()
        .flatten()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|v| v.get("inCommitTimestamp").and_then(Value::as_i64)))
}

pub(super) fn prepare(txn: &Transaction) -> Result<Prepared> {
    let table = txn.root.to_string();
    let snap = txn.snapshot.as_deref();
    let protocol_now = txn
        .protocol
        .as_ref()
        .or(snap.map(Snapshot::protocol))
        .expect("a protocol is staged or read");
    protocol::check_writable(protocol_now, &table, txn.read_version + 1)?;
    let config = txn
        .metadata
        .as_ref()
        .or(snap.map(Snapshot::metadata))
        .expect("metadata is staged or read")
        .configuration
        .clone();
    if let (true, Some(s)) = (txn.replaces_schema, snap) {
        let removed: HashSet<&str> = txn.removes.iter().map(|r| &*r.path).collect();
        let kept = s
            .files()
            .iter()
            .filter(|f| !removed.contains(&*f.path))
            .count();
        if kept > 0 {
            return Err(Error::invalid(format!(
                "{table}: replacing the schema (schema_mode=\"overwrite\") needs an overwrite of the whole table, but {kept} live file(s) are not removed"
            )));
        }
    }
    let data_removal = txn.removes.iter().any(|r| r.data_change) || !txn.dv_deletes.is_empty();
    // Append-only binds the table as this commit finds it: a staged metadata (a RESTORE of an
    // older version's) can neither lift it nor impose it on the commit that stages it.
    let read_config = snap.map_or(&config, |s| &s.metadata().configuration);
    if data_removal && is_true(read_config, "delta.appendOnly") {
        return Err(Error::invalid(format!(
            "{table} is append-only (delta.appendOnly=true): this transaction removes data"
        )));
    }
    // A change-feed reader derives a commit without cdc files from its adds and removes, which
    // is right for whole files only: rows marked in a deletion vector would be missed.
    if !txn.dv_deletes.is_empty()
        && txn.cdc.is_empty()
        && (is_true(&config, "delta.enableChangeDataFeed")
            || is_true(read_config, "delta.enableChangeDataFeed"))
    {
        return Err(Error::invalid(format!(
            "{table} has delta.enableChangeDataFeed=true: a commit that deletes rows through deletion vectors must record them in cdc files (delta-occ's DELETE, UPDATE, MERGE and overwrite do)"
        )));
    }
    let mut dv = BTreeMap::new();
    for (path, rows) in &txn.dv_deletes {
        let snap = snap.expect("delete_rows needs a snapshot");
        let f = snap.file(path).ok_or_else(|| {
            Error::invalid(format!(
                "{path} is not a live file at version {}",
                snap.version()
            ))
        })?;
        dv.insert(
            path.clone(),
            DvChange {
                base: f.clone(),
                rows: rows.clone(),
            },
        );
    }
    let has_file_actions = !txn.adds.is_empty() || !txn.removes.is_empty() || !dv.is_empty();
    let only_rearranging = has_file_actions
        && dv.is_empty()
        && txn.adds.iter().all(|a| !a.data_change)
        && txn.removes.iter().all(|r| !r.data_change)
        && txn.metadata.is_none()
        && txn.protocol.is_none()
        && txn.txns.is_empty()
        && txn.domains.is_empty();
    let level = if only_rearranging {
        IsolationLevel::SnapshotIsolation
    } else {
        txn.level
    };
    let mut read = txn.read.clone();
    if let (Some(new), Some(old)) = (&txn.metadata, snap.map(Snapshot::metadata)) {
        // Files written under the old schema or layout must not slip in: treat a schema or
        // partitioning change as a read of the whole table.
        if !crate::schema::same_but_identity_marks(&new.schema_string, &old.schema_string)
            || new.partition_columns != old.partition_columns
        {
            read.whole_table = true;
        }
    }
    let is_blind_append = read.is_empty() && txn.removes.is_empty() && dv.is_empty();
    let ict_enabled = is_true(&config, "delta.enableInCommitTimestamps");
    let ict_newly_enabled = ict_enabled
        && !snap.is_some_and(|s| {
            is_true(
                &s.metadata().configuration,
                "delta.enableInCommitTimestamps",
            )
        });
    let dv_table = snap.filter(|s| s.deletion_vectors_enabled());
    let row_id_mark = if crate::row_tracking::assigns_ids(protocol_now, &config) {
        Some(crate::row_tracking::high_water_mark(
            snap.and_then(|s| s.state.domains.get(crate::row_tracking::DOMAIN)),
            &table,
        )?)
    } else {
        None
    };
    Ok(Prepared {
        staged: Staged {
            adds: txn.adds.clone(),
            removes: txn.removes.clone(),
            dv,
            read,
            ..Default::default()
        },
        domains: txn.domains.keys().cloned().collect(),
        level,
        is_blind_append,
        metadata: txn.metadata.clone(),
        protocol: txn.protocol.clone(),
        ict_enabled,
        ict_newly_enabled: ict_newly_enabled && txn.read_version >= 0,
        dv_table: dv_table.map(|_| txn.opts.row_level),
        txn_id: uuid::Uuid::new_v4().to_string(),
        row_id_mark,
    })
}

/// The file actions of an attempt. One DV file holds the new DV of every file with staged row
/// deletions (`remove(F, oldDv)` + `add(F, newDv)`) and of added files that carry deletions.
pub(super) fn materialize(root: &Location, st: &Staged) -> Result<Materialized> {
    let mut adds = st.adds.clone();
    let mut removes = st.removes.clone();
    let mut metrics = BTreeMap::new();
    let mut bitmaps = Vec::new();
    let mut changed: Vec<&AddFile> = Vec::new();
    let mut newly = 0u64;
    for ch in st.dv.values() {
        let current = conflict::staged::read_dv(root, ch.base.deletion_vector.as_deref())?;
        let union = current.union(&ch.rows);
        if union.len() == current.len() {
            continue;
        }
        newly += union.len() - current.len();
        changed.push(&ch.base);
        bitmaps.push(union);
    }
    let own: Vec<(usize, &DeletionBitmap)> = st
        .own_dvs
        .iter()
        .filter(|(_, b)| !b.is_empty())
        .filter_map(|(p, b)| adds.iter().position(|a| *a.path == **p).map(|i| (i, b)))
        .collect();
    let mut refs: Vec<&DeletionBitmap> = bitmaps.iter().collect();
    refs.extend(own.iter().map(|(_, b)| *b));
    let descriptors = if refs.is_empty() {
        Vec::new()
    } else {
        dv::file::write(root, "", &refs)?
    };
    let dv_file = descriptors.first().and_then(|d| match d.location(root) {
        Ok(dv::descriptor::DvLocation::File { path, .. }) => Some(path),
        _ => None,
    });
    let mut d = descriptors.into_iter();
    for f in &changed {
        removes.push(remove_of(f, true));
        let mut a = (*f).clone();
        a.deletion_vector = Some(Box::new(d.next().expect("one descriptor per bitmap")));
        a.data_change = true;
        a.modification_time = chrono::Utc::now().timestamp_millis();
        a.stats = a.stats_text()?.as_deref().map(|s| loosen_bounds(s).into());
        adds.push(a);
    }
    for (i, _) in &own {
        adds[*i].deletion_vector = Some(Box::new(d.next().expect("one descriptor per bitmap")));
        adds[*i].stats = adds[*i]
            .stats_text()?
            .as_deref()
            .map(|s| loosen_bounds(s).into());
    }
    if !changed.is_empty() {
        metrics.insert("numDeletionVectorsAdded".into(), changed.len().to_string());
        metrics.insert("numDeletedRows".into(), newly.to_string());
    }
    if st.dropped_bins > 0 {
        metrics.insert("numDroppedBins".into(), st.dropped_bins.to_string());
    }
    metrics.insert("numAddedFiles".into(), adds.len().to_string());
    metrics.insert("numRemovedFiles".into(), removes.len().to_string());
    metrics.insert(
        "numAddedBytes".into(),
        adds.iter().map(|a| a.size).sum::<i64>().to_string(),
    );
    metrics.insert(
        "numRemovedBytes".into(),
        removes
            .iter()
            .filter_map(|r| r.size)
            .sum::<i64>()
            .to_string(),
    );
    if let Some(n) = adds
        .iter()
        .map(|a| a.num_records())
        .sum::<Result<Option<i64>>>()?
    {
        metrics.insert("numOutputRows".into(), n.to_string());
    }
    Ok(Materialized {
        fresh_row_ids: crate::row_tracking::fresh(&adds),
        adds,
        removes,
        metrics,
        dv_file,
        row_id_domain: None,
    })
}

/// Stats of a file with a DV describe its physical rows: mark the bounds as not tight.
fn loosen_bounds(stats: &str) -> String {
    match serde_json::from_str::<Value>(stats) {
        Ok(Value::Object(mut m)) => {
            m.insert("tightBounds".into(), Value::Bool(false));
            Value::Object(m).to_string()
        }
        _ => stats.to_string(),
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn serialize(
    txn: &Transaction,
    p: &Prepared,
    m: &Materialized,
    operation: &str,
    parameters: &BTreeMap<String, String>,
    version: i64,
    now: i64,
    ict: Option<i64>,
    attempt: u32,
    checks: &[CheckRecord],
) -> Result<Vec<u8>> {
    let mut info = Map::new();
    info.insert("timestamp".into(), json!(ict.unwrap_or(now)));
    if let Some(t) = ict {
        info.insert("inCommitTimestamp".into(), json!(t));
    }
    info.insert("operation".into(), json!(operation));
    info.insert("operationParameters".into(), json!(parameters));
    if txn.read_version >= 0 {
        info.insert("readVersion".into(), json!(txn.read_version));
    }
    info.insert("isolationLevel".into(), json!(p.level.as_str()));
    info.insert("isBlindAppend".into(), json!(p.is_blind_append));
    info.insert("operationMetrics".into(), json!(m.metrics));
    info.insert("engineInfo".into(), json!(ENGINE_INFO));
    info.insert("txnId".into(), json!(p.txn_id));
    // How this commit got here, for `delta-occ explain`: the winners it was checked against,
    // each with the ids of the rules that let it pass (what explain reads) and the sentence.
    const MAX_RECORDED: usize = 100;
    let recorded: Vec<Value> = checks
        .iter()
        .take(MAX_RECORDED)
        .map(|c| {
            let rules: Vec<&str> = c.rules.iter().map(|r| r.id()).collect();
            json!({ "version": c.version, "operation": c.operation, "rules": rules, "outcome": c.outcome })
        })
        .collect();
    // With when the snapshot was read (ms since the epoch) and the writer's note, for
    // `delta-occ timeline`: a commit's span runs from its read to its commit.
    let mut occ = txn.commit_note.clone();
    occ.insert("readTime".into(), json!(txn.began_ms));
    occ.insert("attempt".into(), json!(attempt));
    occ.insert("checkedWinners".into(), Value::Array(recorded));
    occ.insert(
        "winnersNotRecorded".into(),
        json!(checks.len().saturating_sub(MAX_RECORDED)),
    );
    info.insert("deltaOcc".into(), Value::Object(occ));

    let mut out = Vec::new();
    let mut line = |v: Value| {
        serde_json::to_writer(&mut out, &v).expect("JSON values serialize");
        out.push(b'\n');
    };
    line(json!({ "commitInfo": info }));
    if let Some(pr) = &p.protocol {
        line(json!({ "protocol": pr }));
    }
    if let Some(m) = &p.metadata {
        let mut m = m.clone();
        if p.ict_newly_enabled {
            m.configuration.insert(
                "delta.inCommitTimestampEnablementVersion".into(),
                version.to_string(),
            );
            m.configuration.insert(
                "delta.inCommitTimestampEnablementTimestamp".into(),
                ict.unwrap_or(now).to_string(),
            );
        }
        line(json!({ "metaData": m }));
    }
    for (app_id, v) in &txn.txns {
        line(json!({ "txn": { "appId": app_id, "version": v, "lastUpdated": now } }));
    }
    for d in txn.domains.values() {
        line(json!({ "domainMetadata": d }));
    }
    if let Some(d) = &m.row_id_domain {
        line(json!({ "domainMetadata": d }));
    }
    for r in &m.removes {
        line(r.to_json());
    }
    for a in &m.adds {
        line(a.to_json()?);
    }
    for c in &txn.cdc {
        line(c.to_json());
    }
    Ok(out)
}

/// Whether an attempt would write only a `commitInfo`: no file, DV, application, domain,
/// metadata or protocol action (a DELETE that matched no row, an empty append, a transaction that
/// only read, an OPTIMIZE whose bins a concurrent one already compacted). delta-spark skips
/// recording such commits (`spark.databricks.delta.skipRecordingEmptyCommits`, on by default).
pub(super) fn is_empty_commit(txn: &Transaction, p: &Prepared, m: &Materialized) -> bool {
    m.adds.is_empty()
        && m.removes.is_empty()
        && txn.cdc.is_empty()
        && txn.txns.is_empty()
        && txn.domains.is_empty()
        && p.metadata.is_none()
        && p.protocol.is_none()
}
