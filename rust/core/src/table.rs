//! Opening, refreshing, time travel, history and creation of a table.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::commit::committer;
use crate::commit::options::CommitOptions;
use crate::error::{Error, Result};
use crate::isolation::{self, IsolationLevel};
use crate::load;
use crate::log::actions::{Format, Metadata};
use crate::log::json as json_log;
use crate::log::segment;
use crate::parallel;
use crate::schema::{assign_column_mapping, check_columns, ColumnMappingMode, StructType};
use crate::snapshot::Snapshot;
use crate::storage::Location;
use crate::transaction::Transaction;

#[derive(Debug, Clone)]
pub struct Table {
    root: Location,
    latest: Arc<Snapshot>,
    /// The last snapshot time travel made, while someone still holds it: the next time travel a
    /// few versions past it applies the commits in between to a copy of it, instead of replaying
    /// the log from a checkpoint (a reader of a range of versions may ask for one version after
    /// another; the change feed asks for all of them at once, [`Table::snapshots`]). As with a refresh, such a snapshot has the live files,
    /// metadata, protocol and domains of a replay; a checkpoint in between would have dropped
    /// expired tombstones and app transactions that it keeps, and its files are in another order.
    travelled: Arc<std::sync::Mutex<std::sync::Weak<Snapshot>>>,
    /// Commits this process wrote to the table after the latest known version, by version
    /// ([`Table::adopt_commit`]): the next refresh takes them from here instead of reading them
    /// back (on an object store, a round trip per transaction).
    own_commits: BTreeMap<i64, bytes::Bytes>,
}

/// Own commits kept for the next refresh, at most (the newest), and their bytes at most: a table
/// that is never refreshed holds no more.
const OWN_COMMITS_KEPT: usize = 16;
const OWN_BYTES_KEPT: usize = 32 << 20;

/// Versions past the last time-travel snapshot that are read commit by commit rather than
/// replayed from a checkpoint.
const TRAVEL_STEPS: i64 = 64;

impl Table {
    /// Open the table at `location` (a local path, a `file:` URI or an object-store URI) with
    /// `storage_options` (deltalake's key names; ignored for local paths).
    pub fn open(location: &str, storage_options: &BTreeMap<String, String>) -> Result<Self> {
        let root = Location::parse(location, storage_options)?;
        if let Some(dir) = root.local_path() {
            let reason = if dir.is_file() {
                "it is a file, not a table directory"
            } else if !dir.is_dir() {
                "the directory does not exist"
            } else {
                ""
            };
            if !reason.is_empty() {
                return Err(Error::TableNotFound {
                    path: root.to_string(),
                    reason: reason.into(),
                });
            }
        }
        let latest = Arc::new(load::snapshot(&root, None)?);
        Ok(Self::with_latest(root, latest))
    }

    fn with_latest(root: Location, latest: Arc<Snapshot>) -> Self {
        Table {
            root,
            latest,
            travelled: Default::default(),
            own_commits: BTreeMap::new(),
        }
    }

    pub fn root(&self) -> &Location {
        &self.root
    }

    pub fn latest(&self) -> Arc<Snapshot> {
        self.latest.clone()
    }

    pub fn version(&self) -> i64 {
        self.latest.version()
    }

    /// Read only the commits newer than the latest known version. Returns the new latest version.
    pub fn refresh(&mut self) -> Result<i64> {
        let own = std::mem::take(&mut self.own_commits);
        load::refresh(&self.root, &mut self.latest, &own)?;
        Ok(self.latest.version())
    }

    /// Keep the bytes `txn` (a transaction of this table that has committed) wrote as its commit
    /// ([`Transaction::take_written_commit`]) for the next refresh, which uses them when the
    /// listing shows a commit file of their size at that version, and otherwise reads the file.
    /// Nothing is kept for a transaction of another table or storage, or for a version the table
    /// already knows (and the transaction keeps no commit too large for a refresh to take whole).
    pub fn adopt_commit(&mut self, txn: &mut Transaction) {
        if *txn.root() != self.root {
            return;
        }
        let Some((version, bytes)) = txn.take_written_commit() else {
            return;
        };
        if version <= self.latest.version() {
            return;
        }
        self.own_commits.insert(version, bytes);
        let held = |own: &BTreeMap<i64, bytes::Bytes>| own.values().map(|b| b.len()).sum::<usize>();
        while self.own_commits.len() > OWN_COMMITS_KEPT || held(&self.own_commits) > OWN_BYTES_KEPT
        {
            self.own_commits.pop_first();
        }
    }

    /// The snapshot at `version` (latest known when `None`).
    pub fn snapshot(&self, version: Option<i64>) -> Result<Arc<Snapshot>> {
        let Some(v) = version.filter(|&v| (0..self.latest.version()).contains(&v)) else {
            return load::snapshot_from(&self.root, &self.latest, version);
        };
        let travelled = || self.travelled.lock().unwrap_or_else(|p| p.into_inner());
        // A table recreated at the same path has a new id: its commits never apply to a snapshot
        // of the old one.
        let near = travelled().upgrade().filter(|base| {
            (0..=TRAVEL_STEPS).contains(&(v - base.version()))
                && base.metadata().id == self.latest.metadata().id
        });
        // Any failure reading the commits in between (one removed by log cleanup, say) leaves
        // it to the full replay, which reports what is wrong.
        let snap = match near.map(|base| load::forward_by_name(&self.root, &base, v)) {
            Some(Ok(snap)) => snap,
            _ => load::snapshot_from(&self.root, &self.latest, version)?,
        };
        *travelled() = Arc::downgrade(&snap);
        Ok(snap)
    }

    /// The snapshots at `versions` (ascending, no repeats), as [`Table::snapshot`] of each would
    /// give them, made in as few walks as `snapshot`'s rule allows: a version before the latest
    /// known one and at most [`TRAVEL_STEPS`] past the one before it is reached by applying the
    /// commits in between (fetched together, in batches) to a copy of that one; any other is
    /// made by `snapshot`. A failure of a walk leaves its versions to `snapshot`, which reports
    /// what is wrong. The change feed asks for every version it needs this way.
    pub fn snapshots(&self, versions: &[i64]) -> Result<Vec<Arc<Snapshot>>> {
        if versions.windows(2).any(|w| w[0] >= w[1]) {
            return Err(Error::invalid(format!(
                "snapshots of {}: versions must be ascending without repeats, got {versions:?}",
                self.root
            )));
        }
        let latest = self.latest.version();
        let mut out: Vec<Arc<Snapshot>> = Vec::with_capacity(versions.len());
        let mut rest = versions;
        while let Some((&first, after)) = rest.split_first() {
            let base = self.snapshot(Some(first))?;
            // The versions this walk reaches: each before the latest and near the one before.
            let mut prev = first;
            let n = after
                .iter()
                .take_while(|&&v| {
                    let near = first < latest && v < latest && v - prev <= TRAVEL_STEPS;
                    prev = v;
                    near
                })
                .count();
            let (walked, later) = after.split_at(n);
            out.push(base.clone());
            match load::forward_walk(&self.root, &base, walked) {
                Ok(snaps) => out.extend(snaps),
                Err(_) => {
                    for &v in walked {
                        out.push(self.snapshot(Some(v))?);
                    }
                }
            }
            if let (Some(last), false) = (out.last(), walked.is_empty()) {
                *self.travelled.lock().unwrap_or_else(|p| p.into_inner()) = Arc::downgrade(last);
            }
            rest = later;
        }
        Ok(out)
    }

    /// The version current at `ts_ms` (epoch milliseconds), at most the latest known one
    /// (see [`crate::time_travel`]).
    pub fn version_at(&self, ts_ms: i64) -> Result<i64> {
        crate::time_travel::version_at(&self.latest, ts_ms)
    }

    /// commitInfo of recent commits, newest first: `(version, commitInfo JSON or None)`; a
    /// commit that cannot be read (corrupt JSON, a failed read) is its own error in its place, so
    /// that the commits around it are still shown.
    pub fn history(&self, limit: Option<usize>) -> Result<Vec<(i64, Result<Option<String>>)>> {
        // With a limit, only the newest commits are listed (an object store lists from there);
        // the table may have moved past the version this handle knows, which is still listed.
        let start = limit.map_or(0, |l| (self.latest.version() + 1 - l as i64).max(0));
        log_history(&self.root, start, limit)
    }

    /// Create a table: commit version 0 with commitInfo, protocol and metaData.
    pub fn create(
        location: &str,
        storage_options: &BTreeMap<String, String>,
        schema_string: &str,
        partition_by: Vec<String>,
        properties: BTreeMap<String, String>,
        name: Option<String>,
    ) -> Result<Self> {
        Self::create_clustered(
            location,
            storage_options,
            schema_string,
            partition_by,
            &[],
            properties,
            name,
        )
    }

    /// [`Table::create`], clustered by `cluster_by` when it is not empty (liquid clustering).
    pub fn create_clustered(
        location: &str,
        storage_options: &BTreeMap<String, String>,
        schema_string: &str,
        partition_by: Vec<String>,
        cluster_by: &[String],
        properties: BTreeMap<String, String>,
        name: Option<String>,
    ) -> Result<Self> {
        let mut txn = begin_create(
            location,
            storage_options,
            schema_string,
            partition_by.clone(),
            properties.clone(),
            name,
            None,
        )?;
        let params = BTreeMap::from([
            (
                "partitionBy".to_string(),
                serde_json::to_string(&partition_by).unwrap_or_default(),
            ),
            (
                "properties".to_string(),
                serde_json::to_string(&txn.metadata.as_ref().map(|m| &m.configuration))
                    .unwrap_or_default(),
            ),
        ]);
        let mut params = params;
        if !cluster_by.is_empty() {
            txn.set_clustering(cluster_by)?;
            params.insert(
                "clusterBy".to_string(),
                serde_json::to_string(cluster_by).unwrap_or_default(),
            );
        }
        committer::commit(&mut txn, "CREATE TABLE", &params, &CommitOptions::default())?;
        let root = txn.root().clone();
        let latest = Arc::new(load::snapshot(&root, None)?);
        Ok(Self::with_latest(root, latest))
    }

    /// A table handle whose latest known snapshot is `snap`.
    pub fn from_snapshot(snap: Arc<Snapshot>) -> Self {
        Self::with_latest(snap.root.clone(), snap)
    }
}

/// The transaction that creates a table (read version -1). Committing it when another writer
/// created the table first raises ProtocolChangedException with the empty-directory hint.
/// `name` and `description`: the table's, in its metadata.
pub fn begin_create(
    location: &str,
    storage_options: &BTreeMap<String, String>,
    schema_string: &str,
    partition_by: Vec<String>,
    properties: BTreeMap<String, String>,
    name: Option<String>,
    description: Option<String>,
) -> Result<Transaction> {
    let root = Location::parse(location, storage_options)?;
    refuse_existing_table(&root)?;
    refuse_data_files(&root)?;
    let mut txn = new_table_transaction(&root, schema_string, partition_by, properties, name)?;
    if let Some(m) = txn.metadata.as_mut() {
        m.description = description;
    }
    Ok(txn)
}

/// Refuse a location that is a file or already holds a Delta table (a commit in its log).
pub(crate) fn refuse_existing_table(root: &Location) -> Result<()> {
    if let Some(dir) = root.local_path() {
        if dir.is_file() {
            return Err(Error::invalid(format!(
                "cannot create a table at {root}: it is a file, not a directory"
            )));
        }
    }
    match segment::list(root, 0) {
        Ok(listing) => {
            if let Some(v) = listing.latest_version() {
                return Err(Error::TableAlreadyExists {
                    path: root.to_string(),
                    found: format!("a Delta table at version {v}"),
                });
            }
            Ok(())
        }
        // A missing bucket, refused credentials: say so now, before anything is planned.
        Err(e @ Error::Storage { .. }) => Err(e),
        Err(_) => Ok(()),
    }
}

/// The transaction that commits version 0 of a table at `root` (already checked to be free).
pub(crate) fn new_table_transaction(
    root: &Location,
    schema_string: &str,
    partition_by: Vec<String>,
    properties: BTreeMap<String, String>,
    name: Option<String>,
) -> Result<Transaction> {
    let (schema_value, mut properties) = prepare_schema(schema_string, properties)?;
    crate::row_tracking::name_materialized_columns(&mut properties);
    let schema_string = schema_value.to_string();
    let schema = StructType::parse(&schema_string).map_err(Error::invalid)?;
    check_columns(&schema, &partition_by)?;
    let protocol = crate::protocol::for_new_table(&properties, &schema)?;
    IsolationLevel::of_table(&properties)?;
    for (k, v) in &properties {
        crate::properties::check(k, v)?;
    }
    let metadata = Metadata {
        id: uuid::Uuid::new_v4().to_string(),
        name,
        description: None,
        format: Format::default(),
        schema_string,
        partition_columns: partition_by,
        created_time: Some(chrono::Utc::now().timestamp_millis()),
        configuration: properties,
    };
    if let Some(dir) = root.local_path() {
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(root, e))?;
    }
    Transaction::begin_create(root, metadata, protocol)
}

/// Refuse to create a table over files the table would not list: they would be invisible to
/// every reader, and `vacuum` would delete them once they are older than its retention.
/// Hidden files (`.x`, `_SUCCESS`, ...) and an empty `_delta_log/` are allowed, as in delta-spark.
fn refuse_data_files(root: &Location) -> Result<()> {
    let listed = match root.list(None, true) {
        Ok(l) => l,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(root, e)),
    };
    let visible: Vec<&str> = listed
        .iter()
        .map(|e| e.name.as_str())
        .filter(|n| crate::vacuum::is_visible_data(n))
        .collect();
    match visible.first() {
        None => Ok(()),
        Some(first) => Err(Error::TableAlreadyExists {
            path: root.to_string(),
            found: format!(
                "{} file(s) that are not part of a Delta table, such as {first:?}: a table created here would not list them, and vacuum would delete them; choose an empty location",
                visible.len()
            ),
        }),
    }
}

/// Normalise properties and, with column mapping, give every field an id and a physical name.
fn prepare_schema(
    schema_string: &str,
    mut props: BTreeMap<String, String>,
) -> Result<(Value, BTreeMap<String, String>)> {
    let mut schema: Value = serde_json::from_str(schema_string)
        .map_err(|e| Error::invalid(format!("schema JSON: {e}")))?;
    crate::schema_arrow::declare_identity_json(&mut schema)?;
    if let Some(v) = props.get(isolation::PROPERTY).cloned() {
        let level =
            IsolationLevel::of_table(&BTreeMap::from([(isolation::PROPERTY.to_string(), v)]))?;
        props.insert(isolation::PROPERTY.into(), level.as_str().into());
    }
    let mode =
        ColumnMappingMode::from_config(props.get("delta.columnMapping.mode").map(String::as_str))?;
    if mode != ColumnMappingMode::None {
        let mut next_id = 0i64;
        assign_column_mapping(&mut schema, &mut next_id);
        props.insert(
            "delta.columnMapping.mode".into(),
            if mode == ColumnMappingMode::Name {
                "name"
            } else {
                "id"
            }
            .into(),
        );
        props.insert(
            "delta.columnMapping.maxColumnId".into(),
            next_id.to_string(),
        );
    }
    Ok((schema, props))
}

/// The history of the log at `location` without loading a snapshot (its newest commit may be the
/// one that cannot be read): as [`Table::history`], the whole log listed. No commit at all is a
/// `TableNotFound`.
pub fn history_of(
    location: &str,
    storage_options: &BTreeMap<String, String>,
    limit: Option<usize>,
) -> Result<Vec<(i64, Result<Option<String>>)>> {
    let root = Location::parse(location, storage_options)?;
    let entries = log_history(&root, 0, limit)?;
    if entries.is_empty() {
        return Err(Error::TableNotFound {
            path: root.to_string(),
            reason: "no commit in its _delta_log".into(),
        });
    }
    Ok(entries)
}

/// commitInfo of the commits from `start` on, newest first, at most `limit`, stopping at the
/// first gap (older commits were cleaned up); each commit read on its own.
fn log_history(
    root: &Location,
    start: i64,
    limit: Option<usize>,
) -> Result<Vec<(i64, Result<Option<String>>)>> {
    let mut listing = segment::list(root, start)?;
    // A hole between listed commits is looked for again (Listing::confirm) before history
    // stops at it as cleaned up.
    listing.confirm_listed(root, None)?;
    let mut versions: Vec<_> = listing.commits.values().rev().cloned().collect();
    // Stop at the first gap: older commits were cleaned up.
    let mut expected = versions.first().map(|f| f.version);
    versions.retain(|f| {
        let keep = Some(f.version) == expected;
        if keep {
            expected = Some(f.version - 1);
        }
        keep
    });
    if let Some(l) = limit {
        versions.truncate(l);
    }
    let infos = if versions.iter().all(|f| f.path.is_local()) {
        parallel::map(&versions, |f| {
            json_log::read_commit_info(&f.path, f.version)
        })
    } else {
        // From an object store: fetched concurrently, then only the commitInfo line parsed.
        let locations: Vec<&Location> = versions.iter().map(|f| &f.path).collect();
        Location::read_many(&locations)
            .into_iter()
            .zip(&versions)
            .map(|(bytes, f)| {
                let bytes = bytes.map_err(|e| Error::io(&f.path, e))?;
                json_log::commit_info_of(&bytes, &f.path, f.version)
            })
            .collect()
    };
    Ok(versions
        .iter()
        .zip(infos)
        .map(|(f, i)| (f.version, i))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCHEMA: &str =
        r#"{"type":"struct","fields":[{"name":"x","type":"long","nullable":true,"metadata":{}}]}"#;

    fn commit(dir: &std::path::Path, version: i64, lines: &[String]) {
        let path = dir.join(format!("_delta_log/{version:020}.json"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, lines.join("\n") + "\n").unwrap();
    }

    fn add(name: &str) -> String {
        format!(
            r#"{{"add":{{"path":"{name}","partitionValues":{{}},"size":1,"modificationTime":1,"dataChange":true}}}}"#
        )
    }

    fn remove(name: &str) -> String {
        format!(r#"{{"remove":{{"path":"{name}","dataChange":true,"deletionTimestamp":1}}}}"#)
    }

    fn paths(s: &Snapshot) -> Vec<String> {
        let mut p: Vec<String> = s.files().iter().map(|f| f.path.to_string()).collect();
        p.sort();
        p
    }

    /// What a snapshot of a version is (a refresh-made one differs from a replay only in
    /// tombstones and app transactions a checkpoint expired, and in file order).
    type Key = (
        i64,
        Vec<String>,
        String,
        String,
        std::collections::BTreeMap<String, String>,
        String,
        Vec<String>,
    );

    fn key(s: &Snapshot) -> Key {
        let mut domains: Vec<String> = s.state.domains.keys().cloned().collect();
        domains.sort();
        (
            s.version(),
            paths(s),
            s.metadata().id.clone(),
            s.metadata().schema_string.clone(),
            s.metadata().configuration.clone(),
            format!("{:?}", s.protocol()),
            domains,
        )
    }

    /// Versions 0-6 with adds, removes, a checkpoint at 2, a schema change and a domain at 3; the
    /// table opened at 6 and, per version 0-5, a replay of the log to it (the reference).
    fn six_versions(root: &std::path::Path) -> (Table, Vec<Key>) {
        let t0 = Table::create(
            root.to_str().unwrap(),
            &Default::default(),
            SCHEMA,
            vec![],
            Default::default(),
            None,
        )
        .unwrap();
        commit(root, 1, &[add("a"), add("b")]);
        commit(root, 2, &[remove("a"), add("c")]);
        let t2 = Table::open(root.to_str().unwrap(), &Default::default()).unwrap();
        crate::create_checkpoint(&t2.latest()).unwrap();
        let wider = SCHEMA.replace(
            "]}",
            r#",{"name":"y","type":"string","nullable":true,"metadata":{}}]}"#,
        );
        // The table's own id: a schema change keeps it.
        let metadata = format!(
            r#"{{"metaData":{{"id":"{}","format":{{"provider":"parquet","options":{{}}}},"schemaString":{},"partitionColumns":[],"configuration":{{"k":"v"}},"createdTime":1}}}}"#,
            t0.latest().metadata().id,
            serde_json::to_string(&wider).unwrap()
        );
        let domain = r#"{"domainMetadata":{"domain":"d","configuration":"{}","removed":false}}"#;
        commit(root, 3, &[add("d"), metadata, domain.to_string()]);
        commit(root, 4, &[remove("b"), remove("c")]);
        commit(root, 5, &[add("b")]);
        commit(root, 6, &[add("e")]);
        let t = Table::open(root.to_str().unwrap(), &Default::default()).unwrap();
        assert_eq!(t.version(), 6);
        let reference = (0..6)
            .map(|v| key(&load::snapshot(&Location::local(root), Some(v)).unwrap()))
            .collect();
        (t, reference)
    }

    fn break_checkpoint(root: &std::path::Path) {
        std::fs::write(
            root.join(format!("_delta_log/{:020}.checkpoint.parquet", 2)),
            b"not parquet",
        )
        .unwrap();
    }

    /// Time travel to one version after another applies the commits in between to the last
    /// snapshot it made; each must equal a replay of the log to that version (the reference), and
    /// it must not need the checkpoint the replay reads (broken below once the walk has begun).
    #[test]
    fn time_travel_forward_equals_a_replay() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let (t, reference) = six_versions(root);
        let mut held = Vec::new();
        held.push(t.snapshot(Some(1)).unwrap());
        // From here on a replay of versions 2-5 would read the checkpoint of version 2.
        break_checkpoint(root);
        for v in [2, 3, 4, 5] {
            held.push(t.snapshot(Some(v)).unwrap());
        }
        for s in &held {
            assert_eq!(key(s), reference[s.version() as usize]);
        }
        // Back in time (older than the last one made) it is a replay, which meets the broken
        // checkpoint: the walk above did not read it.
        assert!(t.snapshot(Some(3)).is_err());
    }

    /// The walk itself (no fallback to `snapshot`): from a replay of version 1 to versions 2, 4
    /// and 5 with the checkpoint at 2 broken; each equals the replay to its version.
    #[test]
    fn forward_walk_equals_replays_without_the_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let (_t, reference) = six_versions(root);
        let base = Arc::new(load::snapshot(&Location::local(root), Some(1)).unwrap());
        break_checkpoint(root);
        let snaps = load::forward_walk(&Location::local(root), &base, &[2, 4, 5]).unwrap();
        let versions: Vec<i64> = snaps.iter().map(|s| s.version()).collect();
        assert_eq!(versions, [2, 4, 5]);
        for s in &snaps {
            assert_eq!(key(s), reference[s.version() as usize]);
        }
    }

    /// `snapshots` of several versions in one walk: each equals the replay to its version (the
    /// latest, 6, is the table's own), none needs the checkpoint at 2 (broken first: version 1
    /// is before it); versions out of order are refused.
    #[test]
    fn snapshots_in_one_walk_equal_replays() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let (t, reference) = six_versions(root);
        let latest = key(&t.latest());
        break_checkpoint(root);
        let snaps = t.snapshots(&[1, 2, 4, 5, 6]).unwrap();
        let versions: Vec<i64> = snaps.iter().map(|s| s.version()).collect();
        assert_eq!(versions, [1, 2, 4, 5, 6]);
        for s in &snaps[..4] {
            assert_eq!(key(s), reference[s.version() as usize]);
        }
        assert_eq!(key(&snaps[4]), latest);
        assert!(t.snapshots(&[]).unwrap().is_empty());
        assert!(matches!(
            t.snapshots(&[2, 1]),
            Err(Error::InvalidArgument(_))
        ));
        assert!(t.snapshots(&[3, 3]).is_err());
        // Commit 4 gone: the walk fails, and so does the replay it leaves version 5 to (it meets
        // the broken checkpoint), which is the error reported.
        drop(snaps);
        std::fs::remove_file(root.join(format!("_delta_log/{:020}.json", 4))).unwrap();
        assert!(t.snapshots(&[1, 5]).is_err());
    }

    /// A commit above the large-commit size applies the same whether the state is empty (its
    /// ranges gathered in parallel) or already holds files (appended range by range).
    #[test]
    fn large_commit_after_other_files_equals_a_fresh_load() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let mut t = Table::create(
            root.to_str().unwrap(),
            &Default::default(),
            SCHEMA,
            vec![],
            Default::default(),
            None,
        )
        .unwrap();
        commit(root, 1, &[add("a"), add("b")]);
        let pad = "x".repeat(400);
        let big: Vec<String> = (0..45_000)
            .map(|i| add(&format!("big-{i}-{pad}")))
            .chain([remove("a")])
            .collect();
        commit(root, 2, &big);
        assert!(
            std::fs::metadata(root.join(format!("_delta_log/{:020}.json", 2)))
                .unwrap()
                .len()
                > 16 << 20
        );
        t.refresh().unwrap();
        let fresh = Table::open(root.to_str().unwrap(), &Default::default())
            .unwrap()
            .latest();
        assert_eq!(t.latest().files().len(), 45_001);
        assert_eq!(paths(&t.latest()), paths(&fresh));
        assert!(
            paths(&fresh).contains(&"b".to_string()) && !paths(&fresh).contains(&"a".to_string())
        );
    }

    /// A refresh with no other holder advances the snapshot in place; it must equal a fresh load,
    /// leave a snapshot someone holds untouched, and leave the table as it was when a new commit
    /// cannot be read.
    #[test]
    fn refresh_in_place_equals_a_fresh_load_and_fails_atomically() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let mut t = Table::create(
            root.to_str().unwrap(),
            &Default::default(),
            SCHEMA,
            vec![],
            Default::default(),
            None,
        )
        .unwrap();
        commit(root, 1, &[add("a"), add("b")]);
        let wider = SCHEMA.replace(
            "]}",
            r#",{"name":"y","type":"string","nullable":true,"metadata":{}}]}"#,
        );
        let metadata = format!(
            r#"{{"metaData":{{"id":"m","format":{{"provider":"parquet","options":{{}}}},"schemaString":{},"partitionColumns":[],"configuration":{{}},"createdTime":1}}}}"#,
            serde_json::to_string(&wider).unwrap()
        );
        commit(root, 2, &[remove("a"), add("c"), metadata]);
        assert_eq!(t.refresh().unwrap(), 2);
        let fresh = Table::open(root.to_str().unwrap(), &Default::default())
            .unwrap()
            .latest();
        assert_eq!(paths(&t.latest()), paths(&fresh));
        assert_eq!(paths(&fresh), ["b", "c"]);
        assert_eq!(t.latest().schema.fields.len(), 2);
        assert_eq!(t.latest().metadata().schema_string, wider);

        // Unreadable commit 3: an error, and the table still at 2 with its files.
        commit(root, 3, &[add("d"), "{not json".into()]);
        assert!(t.refresh().is_err());
        assert_eq!(t.version(), 2);
        assert_eq!(paths(&t.latest()), ["b", "c"]);
        commit(root, 3, &[add("d")]);
        assert_eq!(t.refresh().unwrap(), 3);
        assert_eq!(paths(&t.latest()), ["b", "c", "d"]);

        // A held snapshot is never changed: the refresh copies instead.
        let held = t.latest();
        commit(root, 4, &[remove("b")]);
        assert_eq!(t.refresh().unwrap(), 4);
        assert_eq!(
            (held.version(), paths(&held)),
            (3, vec!["b".into(), "c".into(), "d".into()])
        );
        assert_eq!(paths(&t.latest()), ["c", "d"]);
    }

    /// A table that adopts the commit its transaction wrote takes that commit from the bytes at
    /// the next refresh, not from storage: a file of the same size but other content at that
    /// version is not seen (the only way to tell on a local disk), one of another size is read.
    /// Another handle's transaction on the same table gives its commit too; a transaction of
    /// another table, or one not yet committed, gives nothing.
    #[test]
    fn a_refresh_takes_an_adopted_commit_from_its_bytes_when_the_size_matches() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let location = root.to_str().unwrap();
        let mut t = Table::create(
            location,
            &Default::default(),
            SCHEMA,
            vec![],
            Default::default(),
            None,
        )
        .unwrap();
        let staged = |t: &mut Table, name: &str| {
            std::fs::write(root.join(name), b"x").unwrap();
            let mut txn = Transaction::begin(t.latest(), Default::default()).unwrap();
            txn.add_file(name, vec![], 1, None, true, None, None)
                .unwrap();
            txn
        };
        let commit_file = |v: i64| root.join(format!("_delta_log/{v:020}.json"));
        let params = BTreeMap::new();

        // Committed and adopted, then replaced on disk by a commit of the same size naming
        // another file: the refresh sees the transaction's own file.
        let mut txn = staged(&mut t, "a1");
        let mut not_yet = staged(&mut t, "zz");
        t.adopt_commit(&mut not_yet);
        assert!(
            not_yet.take_written_commit().is_none(),
            "open: nothing written"
        );
        committer::commit(&mut txn, "WRITE", &params, &CommitOptions::default()).unwrap();
        t.adopt_commit(&mut txn);
        let written = std::fs::read_to_string(commit_file(1)).unwrap();
        std::fs::write(commit_file(1), written.replace("a1", "b1")).unwrap();
        assert_eq!(t.refresh().unwrap(), 1);
        assert_eq!(paths(&t.latest()), ["a1"]);
        assert!(txn.take_written_commit().is_none(), "taken once");

        // Adopted, but the file at that version has another size: it is read.
        let mut txn = staged(&mut t, "a2");
        committer::commit(&mut txn, "WRITE", &params, &CommitOptions::default()).unwrap();
        t.adopt_commit(&mut txn);
        let written = std::fs::read_to_string(commit_file(2)).unwrap();
        std::fs::write(commit_file(2), written.replace("a2", "longer2")).unwrap();
        assert_eq!(t.refresh().unwrap(), 2);
        assert_eq!(paths(&t.latest()), ["a1", "longer2"]);

        // Another handle's transaction on this table: its bytes are this table's commit too.
        let mut other = Table::open(location, &Default::default()).unwrap();
        let mut txn = staged(&mut other, "a3");
        committer::commit(&mut txn, "WRITE", &params, &CommitOptions::default()).unwrap();
        t.adopt_commit(&mut txn);
        let written = std::fs::read_to_string(commit_file(3)).unwrap();
        std::fs::write(commit_file(3), written.replace("a3", "b3")).unwrap();
        assert_eq!(t.refresh().unwrap(), 3);
        assert_eq!(paths(&t.latest()), ["a1", "a3", "longer2"]);

        // A transaction of another table is not taken from.
        let dir2 = tempfile::tempdir().unwrap();
        let mut t2 = Table::create(
            dir2.path().to_str().unwrap(),
            &Default::default(),
            SCHEMA,
            vec![],
            Default::default(),
            None,
        )
        .unwrap();
        std::fs::write(dir2.path().join("x"), b"x").unwrap();
        let mut txn = Transaction::begin(t2.latest(), Default::default()).unwrap();
        txn.add_file("x", vec![], 1, None, true, None, None)
            .unwrap();
        committer::commit(&mut txn, "WRITE", &params, &CommitOptions::default()).unwrap();
        t.adopt_commit(&mut txn);
        assert!(txn.take_written_commit().is_some(), "left to its own table");
        t2.adopt_commit(&mut Transaction::begin(t2.latest(), Default::default()).unwrap());
        assert_eq!(t2.refresh().unwrap(), 1);

        // Two transactions of this table and another writer's commit between theirs (the second
        // lands after it, at 6), refreshed at once with the snapshot held (so applied to a copy):
        // each own one from its bytes, the other read.
        let held = t.latest();
        let mut first = staged(&mut t, "a4");
        let mut second = staged(&mut t, "a6");
        committer::commit(&mut first, "WRITE", &params, &CommitOptions::default()).unwrap();
        other.refresh().unwrap();
        let mut theirs = staged(&mut other, "o5");
        committer::commit(&mut theirs, "WRITE", &params, &CommitOptions::default()).unwrap();
        let landed = committer::commit(&mut second, "WRITE", &params, &CommitOptions::default());
        assert_eq!(landed.unwrap().version, 6);
        t.adopt_commit(&mut first);
        t.adopt_commit(&mut second);
        for v in [4, 6] {
            let written = std::fs::read_to_string(commit_file(v)).unwrap();
            std::fs::write(commit_file(v), written.replace("\"a", "\"b")).unwrap();
        }
        assert_eq!(t.refresh().unwrap(), 6);
        assert_eq!(
            paths(&t.latest()),
            ["a1", "a3", "a4", "a6", "longer2", "o5"]
        );
        assert_eq!(held.version(), 3);
    }

    /// What a table keeps for its next refresh is bounded: the 16 newest own commits and 32 MiB,
    /// the oldest dropped first; a version it already knows is not kept.
    #[test]
    fn adopted_commits_are_bounded_by_count_and_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = Table::create(
            dir.path().to_str().unwrap(),
            &Default::default(),
            SCHEMA,
            vec![],
            Default::default(),
            None,
        )
        .unwrap();
        let adopt = |t: &mut Table, version: i64, len: usize| {
            let mut txn = Transaction::begin(t.latest(), Default::default()).unwrap();
            txn.state = crate::transaction::TxnState::Committed(version);
            txn.own_commit = Some(bytes::Bytes::from(vec![b'x'; len]));
            t.adopt_commit(&mut txn);
        };
        adopt(&mut t, 0, 10);
        assert!(t.own_commits.is_empty(), "version 0 is known already");
        for v in 1..=20 {
            adopt(&mut t, v, 10);
        }
        assert_eq!(
            t.own_commits.keys().copied().collect::<Vec<_>>(),
            (5..=20).collect::<Vec<_>>()
        );
        for v in 21..=23 {
            adopt(&mut t, v, 15 << 20);
        }
        assert_eq!(t.own_commits.keys().copied().collect::<Vec<_>>(), [22, 23]);
    }
}
