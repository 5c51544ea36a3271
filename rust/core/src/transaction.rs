//! An optimistic transaction (concurrency.md §1): a pinned snapshot, what was read, and the
//! staged actions. [`crate::commit::committer`] validates and commits it.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::conflict::ReadSet;
use crate::dv::DeletionBitmap;
use crate::error::{Error, Result};
use crate::isolation::{self, IsolationLevel};
use crate::log::actions::{
    remove_of, AddExtra, AddFile, CdcFile, DomainMetadata, Metadata, PartitionValues, Protocol,
    RemoveFile,
};
use crate::predicate::Predicate;
use crate::protocol;
use crate::schema::{self, ColumnMappingMode, StructType};
use crate::schema_change::{Refusal, Rules};
use crate::snapshot::Snapshot;
use crate::storage::Location;

#[derive(Debug, Clone)]
pub struct TxnOptions {
    /// Requested level; `None` = the table's level.
    pub isolation_level: Option<IsolationLevel>,
    /// Row-level concurrency (concurrency.md §4) where the table has deletion vectors; file
    /// level when false or elsewhere.
    pub row_level: bool,
    /// Conflict-time data skipping with file statistics (§3.5).
    pub data_skipping: bool,
}

impl Default for TxnOptions {
    fn default() -> Self {
        TxnOptions {
            isolation_level: None,
            row_level: true,
            data_skipping: true,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnState {
    Open,
    Committed(i64),
    Aborted,
}

#[derive(Debug)]
pub struct Transaction {
    pub(crate) root: Location,
    /// `None` when this transaction creates the table (read version -1).
    pub(crate) snapshot: Option<Arc<Snapshot>>,
    pub read_version: i64,
    pub(crate) level: IsolationLevel,
    pub(crate) opts: TxnOptions,
    pub(crate) read: ReadSet,
    pub(crate) adds: Vec<AddFile>,
    pub(crate) removes: Vec<RemoveFile>,
    /// Change-data files (tables with the change data feed): written next to the data changes.
    pub(crate) cdc: Vec<CdcFile>,
    pub(crate) dv_deletes: BTreeMap<Box<str>, DeletionBitmap>,
    pub(crate) txns: BTreeMap<String, i64>,
    pub(crate) domains: BTreeMap<String, DomainMetadata>,
    pub(crate) metadata: Option<Metadata>,
    pub(crate) protocol: Option<Protocol>,
    /// Operation metrics the writing engine knows (rows deleted, updated, ...), merged into
    /// `commitInfo.operationMetrics` under the ones the commit computes itself.
    pub(crate) operation_metrics: BTreeMap<String, String>,
    pub(crate) state: TxnState,
    /// When the transaction began (ms since the epoch): every file it writes is newer, which
    /// tells the commit whether a VACUUM may have taken one (`commit::committer`).
    pub(crate) began_ms: i64,
    /// A DROP FEATURE downgrade: the commit checkpoints itself and deletes the log before it.
    pub(crate) truncates_history: bool,
    /// The schema was replaced outright ([`Transaction::replace_schema`]): the commit must
    /// remove every live file, since none was checked against the new schema.
    pub(crate) replaces_schema: bool,
    /// The `clusteringProvider` of adds staged from now on (OPTIMIZE of a clustered table).
    pub(crate) clustering_provider: Option<Box<str>>,
    /// What the writer says about how this commit was made (host, process, engine,
    /// re-executions), written into `commitInfo.deltaOcc` under the core's own keys.
    pub(crate) commit_note: serde_json::Map<String, serde_json::Value>,
    /// The bytes this transaction's own put wrote as its commit, once it landed: the table it
    /// came from takes them ([`Transaction::take_written_commit`]) and, refreshing, uses them
    /// instead of reading its own commit back from storage.
    pub(crate) own_commit: Option<bytes::Bytes>,
}

impl Transaction {
    pub fn begin(snapshot: Arc<Snapshot>, opts: TxnOptions) -> Result<Self> {
        let table_level = snapshot.isolation_level()?;
        let level = match opts.isolation_level {
            None => table_level,
            Some(IsolationLevel::SnapshotIsolation) => {
                return Err(Error::invalid(
                    "SnapshotIsolation cannot be requested: delta-occ uses it by itself for commits whose file actions all have dataChange=false",
                ))
            }
            Some(l) if l < table_level => {
                return Err(Error::invalid(format!(
                    "isolation level {} is weaker than the table's level {}; a transaction may only ask for a stronger one",
                    l.as_str(),
                    table_level.as_str()
                )))
            }
            Some(l) => l,
        };
        Ok(Self::new(
            snapshot.root.clone(),
            snapshot.version(),
            Some(snapshot),
            level,
            opts,
        ))
    }

    fn new(
        root: Location,
        read_version: i64,
        snapshot: Option<Arc<Snapshot>>,
        level: IsolationLevel,
        opts: TxnOptions,
    ) -> Self {
        Transaction {
            root,
            snapshot,
            read_version,
            level,
            opts,
            read: ReadSet::default(),
            adds: Vec::new(),
            removes: Vec::new(),
            cdc: Vec::new(),
            dv_deletes: BTreeMap::new(),
            txns: BTreeMap::new(),
            domains: BTreeMap::new(),
            metadata: None,
            protocol: None,
            operation_metrics: BTreeMap::new(),
            state: TxnState::Open,
            began_ms: chrono::Utc::now().timestamp_millis(),
            truncates_history: false,
            replaces_schema: false,
            clustering_provider: None,
            commit_note: serde_json::Map::new(),
            own_commit: None,
        }
    }

    /// A transaction that creates the table: it read "no table" (version -1) and stages the
    /// protocol and metadata of version 0.
    pub fn begin_create(root: &Location, metadata: Metadata, protocol: Protocol) -> Result<Self> {
        let level = IsolationLevel::of_table(&metadata.configuration)?;
        let mut txn = Self::new(root.clone(), -1, None, level, TxnOptions::default());
        txn.metadata = Some(metadata);
        txn.protocol = Some(protocol);
        Ok(txn)
    }

    /// Facts for `commitInfo.deltaOcc` that only the writer knows (its host, process, engine,
    /// which execution of a re-run operation this is): `delta-occ timeline` draws them. The
    /// core's keys (`attempt`, `readTime`, `checkedWinners`, ...) are written over any of these.
    pub fn set_commit_note(
        &mut self,
        note: serde_json::Map<String, serde_json::Value>,
    ) -> Result<()> {
        self.open()?;
        self.commit_note = note;
        Ok(())
    }

    pub fn root(&self) -> &Location {
        &self.root
    }

    pub fn snapshot(&self) -> Option<&Arc<Snapshot>> {
        self.snapshot.as_ref()
    }

    /// A transaction that creates the table: the table as its version 0 will define it (the
    /// staged protocol and metadata, no files), at version -1. An engine lays out the data it
    /// writes into the new table with it, so the table and its first rows are one commit.
    /// `None` for a transaction that read a table.
    pub fn created_snapshot(&self) -> Result<Option<Snapshot>> {
        if self.snapshot.is_some() {
            return Ok(None);
        }
        let mut state = crate::log::replay::LogState::new();
        state.protocol = Some(self.current_protocol()?);
        state.metadata = Some(self.current_metadata()?);
        Snapshot::from_state(&self.root, state).map(Some)
    }

    pub fn state(&self) -> TxnState {
        self.state
    }

    /// The version this transaction committed and the bytes its put wrote there, once. `None`
    /// before it commits, after the first call, and when its commit was found in the log after
    /// a put whose answer was lost (the bytes there are then an earlier attempt's).
    pub fn take_written_commit(&mut self) -> Option<(i64, bytes::Bytes)> {
        match self.state {
            TxnState::Committed(v) => self.own_commit.take().map(|b| (v, b)),
            _ => None,
        }
    }

    pub fn isolation_level(&self) -> IsolationLevel {
        self.level
    }

    pub fn options(&self) -> &TxnOptions {
        &self.opts
    }

    pub fn read_set(&self) -> &ReadSet {
        &self.read
    }

    fn open(&self) -> Result<()> {
        match self.state {
            TxnState::Open => Ok(()),
            TxnState::Committed(v) => Err(Error::invalid(format!(
                "the transaction already committed version {v}"
            ))),
            TxnState::Aborted => Err(Error::invalid("the transaction was aborted")),
        }
    }

    fn snap(&self) -> Result<&Arc<Snapshot>> {
        self.snapshot.as_ref().ok_or_else(|| {
            Error::invalid("the table does not exist yet (this transaction creates it)")
        })
    }

    pub fn parse_predicate(&self, text: &str) -> Result<Predicate> {
        self.snap()?.parse_predicate(text)
    }

    /// Record reading exactly these live files (no predicate): what a compaction depends on.
    pub fn record_files_read(&mut self, paths: &[String]) -> Result<()> {
        self.open()?;
        let snap = self.snap()?.clone();
        for p in paths {
            let f = snap.file(p).ok_or_else(|| {
                Error::invalid(format!(
                    "{p} is not a live file of version {}",
                    snap.version()
                ))
            })?;
            self.read.files.insert(f.path.as_ref().into());
        }
        Ok(())
    }

    /// Record a read with this predicate (`None`: all rows) and return the live files that may
    /// hold matching rows (partition pruning and statistics).
    pub fn scan(&mut self, text: Option<&str>) -> Result<Vec<usize>> {
        self.open()?;
        let predicate = match text {
            Some(t) => self.parse_predicate(t)?,
            None => Predicate::all(),
        };
        let snap = self.snap()?.clone();
        let files = snap.files();
        let hits = crate::predicate::select_files(&predicate, files);
        for &i in &hits {
            self.read.files.insert(files[i].path.as_ref().into());
        }
        self.read.predicates.push(predicate);
        Ok(hits)
    }

    pub fn read_whole_table(&mut self) -> Result<()> {
        self.open()?;
        self.read.whole_table = true;
        Ok(())
    }

    /// The application's last committed version (-1 if never set), recorded as a dependency.
    pub fn app_version(&mut self, app_id: &str) -> Result<i64> {
        self.open()?;
        self.read.app_ids.insert(app_id.to_string());
        Ok(self
            .snapshot
            .as_ref()
            .and_then(|s| s.state.txns.get(app_id))
            .map(|t| t.version)
            .unwrap_or(-1))
    }

    /// Stage an `add`. `partition_values` use logical column names.
    #[allow(clippy::too_many_arguments)]
    pub fn add_file(
        &mut self,
        path: &str,
        partition_values: Vec<(String, Option<String>)>,
        size: i64,
        stats: Option<String>,
        data_change: bool,
        tags: Option<BTreeMap<String, Option<String>>>,
        modification_time: Option<i64>,
    ) -> Result<()> {
        self.open()?;
        let (schema, mapping, partition_columns) = self.layout()?;
        let rel = relative_data_path(&self.root, path)?;
        if size < 0 {
            return Err(Error::invalid(format!(
                "add_file({path:?}): size must be >= 0, got {size}"
            )));
        }
        let pv = physical_partition_values(
            &schema,
            mapping,
            &partition_columns,
            partition_values,
            path,
        )?;
        // Only the table's indexed columns keep statistics, whichever engine computed them: the
        // stats are parsed once, to check them and to drop the others (written again only then).
        let stats = match stats {
            None => None,
            Some(s) => {
                let mut value = serde_json::from_str::<serde_json::Value>(&s)
                    .ok()
                    .filter(|v| v.is_object())
                    .ok_or_else(|| {
                        Error::invalid(format!("add_file({path:?}): stats must be a JSON object"))
                    })?;
                let config = match &self.metadata {
                    Some(m) => &m.configuration,
                    None => &self.snap()?.metadata().configuration,
                };
                let indexed =
                    crate::stats::indexed_columns(&schema, mapping, &partition_columns, config);
                Some(match crate::stats::keep_indexed(&mut value, &indexed) {
                    true => value.to_string(),
                    false => s,
                })
            }
        };
        let log_path: Box<str> = crate::uri::encode_log_path(&rel).into();
        if self.adds.iter().any(|a| *a.path == *log_path) {
            return Err(Error::invalid(format!(
                "add_file({path:?}): the transaction already adds this path"
            )));
        }
        if self
            .snapshot
            .as_ref()
            .is_some_and(|s| s.state.file_index(&log_path).is_some())
        {
            return Err(Error::invalid(format!(
                "add_file({path:?}): the table already has a live file with this path; data files must never be overwritten"
            )));
        }
        self.adds.push(AddFile {
            path: log_path.into(),
            partition_values: pv,
            size,
            modification_time: modification_time
                .unwrap_or_else(|| chrono::Utc::now().timestamp_millis()),
            data_change,
            stats: stats.map(Into::into),
            deletion_vector: None,
            extra: AddExtra {
                tags,
                clustering_provider: self.clustering_provider.clone(),
                ..Default::default()
            }
            .boxed(),
        });
        Ok(())
    }

    /// Stage a `cdc` action: a change-data file already written under `_change_data/` (rows of
    /// the data columns plus `_change_type`; partition values as for `add_file`).
    pub fn add_cdc_file(
        &mut self,
        path: &str,
        partition_values: Vec<(String, Option<String>)>,
        size: i64,
    ) -> Result<()> {
        self.open()?;
        let (schema, mapping, partition_columns) = self.layout()?;
        let rel = relative_data_path(&self.root, path)?;
        if !rel.starts_with("_change_data/") {
            return Err(Error::invalid(format!(
                "add_cdc_file({path:?}): change-data files live under _change_data/ of {}",
                self.root
            )));
        }
        if size < 0 {
            return Err(Error::invalid(format!(
                "add_cdc_file({path:?}): size must be >= 0, got {size}"
            )));
        }
        let pv = physical_partition_values(
            &schema,
            mapping,
            &partition_columns,
            partition_values,
            path,
        )?;
        let log_path: Box<str> = crate::uri::encode_log_path(&rel).into();
        if self.cdc.iter().any(|c| c.path == log_path) {
            return Err(Error::invalid(format!(
                "add_cdc_file({path:?}): the transaction already has this change-data file"
            )));
        }
        self.cdc.push(CdcFile {
            path: log_path,
            partition_values: pv,
            size,
            data_change: false,
            tags: None,
        });
        Ok(())
    }

    /// The schema, mapping mode and partition columns in effect (the new metadata if staged).
    fn layout(&self) -> Result<(StructType, ColumnMappingMode, Vec<String>)> {
        if let Some(m) = &self.metadata {
            let schema = StructType::parse(&m.schema_string).map_err(Error::invalid)?;
            let mode = mapping_mode(m)?;
            return Ok((schema, mode, m.partition_columns.clone()));
        }
        let s = self.snap()?;
        Ok((
            s.schema.clone(),
            s.mapping,
            s.partition_columns.iter().map(|c| c.name.clone()).collect(),
        ))
    }

    /// Stage a `remove` of a live file of the read snapshot.
    pub fn remove_file(&mut self, path: &str, data_change: bool) -> Result<()> {
        self.open()?;
        let snap = self.snap()?.clone();
        let f = snap.file(path).ok_or_else(|| {
            Error::invalid(format!(
                "remove_file({path:?}): not a live file of {} at version {}",
                self.root,
                snap.version()
            ))
        })?;
        if self.removes.iter().any(|r| *r.path == *f.path) || self.dv_deletes.contains_key(&*f.path)
        {
            return Err(Error::invalid(format!(
                "remove_file({path:?}): the transaction already removes or changes this file"
            )));
        }
        self.removes.push(remove_of(f, data_change));
        Ok(())
    }

    /// Delete rows of a live file through its deletion vector (union with the current DV).
    pub fn delete_rows(&mut self, path: &str, positions: &[u64]) -> Result<()> {
        let rows =
            DeletionBitmap::from_positions(positions.iter().copied()).map_err(Error::invalid)?;
        self.delete_rows_bitmap(path, rows)
    }

    /// [`Self::delete_rows`] of the positions of a bitmap (what callers that already hold the
    /// rows as bits pass: no value per row on the way).
    pub fn delete_rows_bitmap(&mut self, path: &str, rows: DeletionBitmap) -> Result<()> {
        self.open()?;
        let snap = self.snap()?.clone();
        if !snap.deletion_vectors_enabled() {
            return Err(Error::invalid(format!(
                "delete_rows needs deletion vectors: {} does not have delta.enableDeletionVectors=true with the deletionVectors feature",
                self.root
            )));
        }
        let f = snap.file(path).ok_or_else(|| {
            Error::invalid(format!(
                "delete_rows({path:?}): not a live file of {} at version {}",
                self.root,
                snap.version()
            ))
        })?;
        if self.removes.iter().any(|r| *r.path == *f.path) {
            return Err(Error::invalid(format!(
                "delete_rows({path:?}): the transaction already removes this file"
            )));
        }
        if let (Some(n), Some(bad)) = (f.num_records()?, rows.max()) {
            if bad >= n as u64 {
                return Err(Error::invalid(format!(
                    "delete_rows({path:?}): row {bad} is beyond the file's {n} rows"
                )));
            }
        }
        let entry = self.dv_deletes.entry(f.path.as_ref().into()).or_default();
        *entry = entry.union(&rows);
        Ok(())
    }

    /// Stage a `txn` action. It also records the read of the app's version (as
    /// [`Self::app_version`] does): a concurrent commit of the same app id then conflicts
    /// (§3 check 4), so two writers of one app id never both commit a version.
    pub fn set_app_version(&mut self, app_id: &str, version: i64) -> Result<()> {
        self.open()?;
        if app_id.is_empty() {
            return Err(Error::invalid(
                "set_app_version: the application id must not be empty",
            ));
        }
        self.read.app_ids.insert(app_id.to_string());
        self.txns.insert(app_id.to_string(), version);
        Ok(())
    }

    /// Stage a domain metadata action. System domains (`delta.*`) are refused.
    pub fn set_domain_metadata(
        &mut self,
        domain: &str,
        configuration: &str,
        removed: bool,
    ) -> Result<()> {
        self.open()?;
        if domain.starts_with("delta.") {
            return Err(Error::invalid(format!(
                "domain {domain:?} is system-controlled; user domains must not start with 'delta.'"
            )));
        }
        self.domains.insert(
            domain.to_string(),
            DomainMetadata {
                domain: domain.to_string(),
                configuration: configuration.to_string(),
                removed,
            },
        );
        Ok(())
    }

    /// The metadata this transaction commits: the staged one, else the read snapshot's.
    pub fn current_metadata(&self) -> Result<Metadata> {
        match &self.metadata {
            Some(m) => Ok(m.clone()),
            None => Ok(self.snap()?.metadata().clone()),
        }
    }

    fn current_protocol(&self) -> Result<Protocol> {
        match &self.protocol {
            Some(p) => Ok(p.clone()),
            None => Ok(self.snap()?.protocol().clone()),
        }
    }

    /// Merge table properties (a metadata change). The isolation level is validated and written
    /// in its canonical spelling; the protocol is upgraded when a property needs a feature.
    pub fn set_properties(&mut self, props: BTreeMap<String, String>) -> Result<()> {
        self.open()?;
        let mut m = self.current_metadata()?;
        for (k, v) in props {
            let v = if k.eq_ignore_ascii_case(isolation::PROPERTY) {
                match IsolationLevel::parse(&v) {
                    Ok(IsolationLevel::SnapshotIsolation) | Err(_) => {
                        return Err(Error::invalid(format!(
                            "{} = {v:?} is not valid: expected Serializable or WriteSerializable",
                            isolation::PROPERTY
                        )))
                    }
                    Ok(l) => l.as_str().to_string(),
                }
            } else {
                v
            };
            let key = if k.eq_ignore_ascii_case(isolation::PROPERTY) {
                isolation::PROPERTY.to_string()
            } else {
                k
            };
            crate::properties::check(&key, &v)?;
            let v = if key == "delta.columnMapping.mode" {
                self.change_column_mapping(&mut m, &v)?
            } else {
                v
            };
            m.configuration.insert(key, v);
        }
        self.stage_metadata(m)
    }

    /// `delta.columnMapping.mode` set to `to` on `m`: the same mode is kept; `none` -> `name` on
    /// an existing table (as delta-spark's upgrade) gives each field its current name as
    /// physical name and an id, and the protocol gains the feature when `m` is staged. Any other
    /// change would need the data rewritten: refused. Returns the mode's spelling to store.
    fn change_column_mapping(&self, m: &mut Metadata, to: &str) -> Result<String> {
        let key = "delta.columnMapping.mode";
        let from = mapping_mode(m)?;
        let wanted = ColumnMappingMode::from_config(Some(to))?;
        if from == wanted {
            return Ok(to.to_string());
        }
        if from != ColumnMappingMode::None || wanted != ColumnMappingMode::Name {
            return Err(Error::UnsupportedFeature {
                table: self.root.to_string(),
                version: Some(self.read_version),
                what: "table property change".into(),
                detail: format!(
                    "changing {key} from {} to {to:?} on an existing table is not supported (only none -> name: the data files keep their column names)",
                    m.configuration.get(key).map_or("none", String::as_str)
                ),
            });
        }
        let mut value: serde_json::Value = serde_json::from_str(&m.schema_string)
            .map_err(|e| Error::invalid(format!("schema JSON: {e}")))?;
        schema::name_physical_as_logical(&mut value);
        assign_new_ids(m, &mut value);
        m.schema_string = value.to_string();
        Ok("name".into())
    }

    pub fn unset_properties(&mut self, keys: &[String]) -> Result<()> {
        self.open()?;
        let mut m = self.current_metadata()?;
        for k in keys {
            m.configuration.remove(k);
        }
        self.stage_metadata(m)
    }

    /// Replace the schema (a metadata change). Partition columns must stay, and existing data
    /// files must stay readable ([`crate::schema_change`]). Fields that already existed keep
    /// their Delta metadata (column mapping, identity, generation, comments) unless the new
    /// schema sets a key; with column mapping, new fields get ids and physical names.
    pub fn set_schema(&mut self, schema_json: &str, allow_drop: bool) -> Result<()> {
        let value: serde_json::Value = serde_json::from_str(schema_json)
            .map_err(|e| Error::invalid(format!("schema JSON: {e}")))?;
        self.set_schema_value(value, allow_drop)
    }

    /// Replace the schema outright, for an overwrite of the whole table (`schema_mode=
    /// "overwrite"`, delta-spark's `overwriteSchema`): columns may go, change type or be
    /// renamed, since the commit must remove every live file (checked when it commits).
    /// Partition columns stay and must be in the new schema; with column mapping every field
    /// gets a new id and physical name, as new columns do.
    pub fn replace_schema(&mut self, schema_json: &str) -> Result<()> {
        self.open()?;
        let mut m = self.current_metadata()?;
        let mut value: serde_json::Value = serde_json::from_str(schema_json)
            .map_err(|e| Error::invalid(format!("schema JSON: {e}")))?;
        let proposed = StructType::parse(&value.to_string()).map_err(Error::invalid)?;
        schema::check_columns(&proposed, &m.partition_columns)?;
        // A column that stays keeps what was declared on it (comment, invariant, generation
        // expression, default, identity); a rule or clustering that names a removed column
        // would be left dangling: refused, as drop_columns refuses it.
        let old = StructType::parse(&m.schema_string).map_err(Error::invalid)?;
        for gone in old.fields.iter().filter(|o| {
            !proposed
                .fields
                .iter()
                .any(|f| f.name.eq_ignore_ascii_case(&o.name))
        }) {
            self.refuse_referenced(&m, &gone.name, "schema_mode=\"overwrite\" removing")?;
        }
        schema::carry_field_metadata(&mut value, &old);
        if mapping_mode(&m)? != ColumnMappingMode::None {
            schema::strip_column_mapping(&mut value);
            assign_new_ids(&mut m, &mut value);
        }
        m.schema_string = value.to_string();
        self.replaces_schema = true;
        self.stage_metadata(m)
    }

    /// RENAME COLUMN `path` (dotted for a nested field) TO `new_name`: the field keeps its
    /// column-mapping id and physical name, so the data stays. Needs column mapping. A column a
    /// CHECK constraint or a generation expression names, or a clustering column, is refused
    /// (change those first), as delta-spark does.
    pub fn rename_column(&mut self, path: &str, new_name: &str) -> Result<()> {
        let (mut m, mut value) = self.current_schema()?;
        self.needs_column_mapping(&m, "renaming a column")?;
        if new_name.is_empty() || new_name.contains('.') {
            return Err(Error::invalid(format!(
                "rename_column({path:?}, {new_name:?}): the new name must be non-empty and without dots"
            )));
        }
        let (parents, leaf) = split_path(path);
        self.refuse_referenced(&m, path, "rename_column")?;
        let fields = fields_at(&mut value, &parents)
            .ok_or_else(|| self.no_such_column("rename_column", path))?;
        if fields.iter().any(|f| {
            f["name"]
                .as_str()
                .is_some_and(|n| n.eq_ignore_ascii_case(new_name) && !n.eq_ignore_ascii_case(leaf))
        }) {
            return Err(Error::invalid(format!(
                "rename_column({path:?}, {new_name:?}) on {}: a column named {new_name:?} already exists",
                self.root
            )));
        }
        let field = fields
            .iter_mut()
            .find(|f| f["name"].as_str() == Some(leaf))
            .ok_or_else(|| self.no_such_column("rename_column", path))?;
        field["name"] = serde_json::Value::String(new_name.to_string());
        if parents.is_empty() {
            for c in m.partition_columns.iter_mut().filter(|c| *c == leaf) {
                *c = new_name.to_string();
            }
        }
        let proposed = StructType::parse(&value.to_string()).map_err(Error::invalid)?;
        schema::check_columns(&proposed, &m.partition_columns)?;
        m.schema_string = value.to_string();
        self.stage_metadata(m)
    }

    /// DROP COLUMNS `paths` (dotted for nested fields): the data files keep the values, no
    /// reader sees them. Needs column mapping; partition, clustering and referenced columns are
    /// refused.
    pub fn drop_columns(&mut self, paths: &[String]) -> Result<()> {
        let (m, mut value) = self.current_schema()?;
        self.needs_column_mapping(&m, "dropping a column")?;
        for path in paths {
            let (parents, leaf) = split_path(path);
            if parents.is_empty() && m.partition_columns.iter().any(|c| c == leaf) {
                return Err(Error::invalid(format!(
                    "drop_columns on {}: {path:?} is a partition column",
                    self.root
                )));
            }
            self.refuse_referenced(&m, path, "drop_columns")?;
            let fields = fields_at(&mut value, &parents)
                .ok_or_else(|| self.no_such_column("drop_columns", path))?;
            let before = fields.len();
            fields.retain(|f| f["name"].as_str() != Some(leaf));
            if fields.len() == before {
                return Err(self.no_such_column("drop_columns", path));
            }
            if fields.is_empty() {
                return Err(Error::invalid(format!(
                    "drop_columns on {}: dropping {path:?} would leave a struct without fields",
                    self.root
                )));
            }
        }
        self.set_schema_value(value, true)
    }

    /// ADD COLUMNS: each of `fields_json` (a Delta struct field; a dotted name adds a field to
    /// the struct column it names) appended where it belongs; then as [`Self::set_schema`].
    pub fn add_columns(&mut self, fields_json: &str) -> Result<()> {
        let (_, mut value) = self.current_schema()?;
        let new: Vec<serde_json::Value> = serde_json::from_str(fields_json)
            .map_err(|e| Error::invalid(format!("fields JSON: {e}")))?;
        for mut f in new {
            let path = f["name"].as_str().unwrap_or_default().to_string();
            let (parents, leaf) = split_path(&path);
            let leaf = leaf.to_string();
            let fields = fields_at(&mut value, &parents).ok_or_else(|| {
                Error::invalid(format!(
                    "add_columns on {}: {path:?} is not inside a struct column of the table",
                    self.root
                ))
            })?;
            if fields.iter().any(|g| {
                g["name"]
                    .as_str()
                    .is_some_and(|n| n.eq_ignore_ascii_case(&leaf))
            }) {
                return Err(Error::invalid(format!(
                    "add_columns on {}: a column named {path:?} already exists",
                    self.root
                )));
            }
            f["name"] = serde_json::Value::String(leaf);
            fields.push(f);
        }
        self.set_schema_value(value, false)
    }

    /// ALTER COLUMN `path` TYPE `to` (a Delta type in JSON) as a type widening: the table gets
    /// `delta.enableTypeWidening` and the typeWidening feature, the field its new type and a
    /// `delta.typeChanges` entry; no data is rewritten (readers convert old files' values). Only
    /// the protocol's widenings are allowed; a partition column is refused.
    pub fn widen_column(&mut self, path: &str, to_json: &str) -> Result<()> {
        let to: serde_json::Value = serde_json::from_str(to_json)
            .map_err(|e| Error::invalid(format!("widen_column({path:?}): type JSON: {e}")))?;
        let (_, mut value) = self.current_schema()?;
        let (parents, leaf) = split_path(path);
        let current = fields_at(&mut value, &parents)
            .and_then(|fs| fs.iter().find(|f| f["name"].as_str() == Some(leaf)))
            .map(|f| f["type"].clone())
            .ok_or_else(|| self.no_such_column("widen_column", path))?;
        if current == to {
            return Err(Error::invalid(format!(
                "widen_column({path:?}, {to}) on {}: the column is already of that type",
                self.root
            )));
        }
        let staged = self.metadata.clone();
        let mut m = self.current_metadata()?;
        m.configuration
            .insert("delta.enableTypeWidening".into(), "true".into());
        self.metadata = Some(m);
        let done = self.change_field("widen_column", path, |f| f["type"] = to);
        if done.is_err() {
            self.metadata = staged;
        }
        done
    }

    /// Append a `delta.typeChanges` entry to each field whose type `proposed` widens from `old`
    /// (already checked to be a widening the table allows).
    fn record_type_changes(
        &self,
        value: &mut serde_json::Value,
        old: &StructType,
        proposed: &StructType,
        partition_columns: &[String],
    ) -> Result<()> {
        let changes = crate::schema_change::type_changes(old, proposed)
            .map_err(|why| Error::invalid(format!("schema change on {}: {why}", self.root)))?;
        for c in changes {
            if c.field.len() == 1
                && partition_columns
                    .iter()
                    .any(|p| p.eq_ignore_ascii_case(&c.field[0]))
            {
                return Err(Error::invalid(format!(
                    "changing the type of partition column `{}` on {} is not supported: its values are in every file's path",
                    c.field[0], self.root
                )));
            }
            let path = c.field.join(".");
            let names: Vec<&str> = c.field.iter().map(String::as_str).collect();
            let (leaf, parents) = names.split_last().unwrap_or((&"", &[]));
            let field = fields_at(value, parents)
                .and_then(|fs| fs.iter_mut().find(|f| f["name"].as_str() == Some(leaf)))
                .ok_or_else(|| self.no_such_column("schema change", &path))?;
            let mut entry = serde_json::json!({"fromType": c.from, "toType": c.to});
            if !c.field_path.is_empty() {
                entry["fieldPath"] = serde_json::Value::String(c.field_path);
            }
            let meta = &mut field["metadata"];
            if !meta.is_object() {
                *meta = serde_json::json!({});
            }
            match meta["delta.typeChanges"].as_array_mut() {
                Some(list) => list.push(entry),
                None => meta["delta.typeChanges"] = serde_json::json!([entry]),
            }
        }
        Ok(())
    }

    /// ALTER COLUMN `path` COMMENT `comment` (the field's `comment` metadata).
    pub fn set_column_comment(&mut self, path: &str, comment: &str) -> Result<()> {
        self.change_field("set_column_comment", path, |f| {
            f["metadata"]["comment"] = serde_json::Value::String(comment.to_string());
        })
    }

    /// ALTER COLUMN `path` DROP NOT NULL. Making a column NOT NULL is refused, as in Delta:
    /// rows already in the table may hold nulls.
    pub fn set_nullable(&mut self, path: &str, nullable: bool) -> Result<()> {
        if !nullable {
            return Err(Error::invalid(format!(
                "set_nullable({path:?}, False) on {}: a column cannot become NOT NULL, since rows already in the table may hold nulls (Delta refuses it too); add a CHECK constraint `{path} IS NOT NULL` instead",
                self.root
            )));
        }
        self.change_field("set_nullable", path, |f| {
            f["nullable"] = serde_json::Value::Bool(true);
        })
    }

    /// Edit the field at `path` of the current schema and stage the result as a schema change.
    fn change_field(
        &mut self,
        call: &str,
        path: &str,
        edit: impl FnOnce(&mut serde_json::Value),
    ) -> Result<()> {
        let (_, mut value) = self.current_schema()?;
        let (parents, leaf) = split_path(path);
        let field = fields_at(&mut value, &parents)
            .and_then(|fs| fs.iter_mut().find(|f| f["name"].as_str() == Some(leaf)))
            .ok_or_else(|| self.no_such_column(call, path))?;
        edit(field);
        self.set_schema_value(value, false)
    }

    /// The metadata this transaction would commit, and its schema as JSON to edit.
    fn current_schema(&mut self) -> Result<(Metadata, serde_json::Value)> {
        self.open()?;
        let m = self.current_metadata()?;
        let value = serde_json::from_str(&m.schema_string)
            .map_err(|e| Error::invalid(format!("schema JSON: {e}")))?;
        Ok((m, value))
    }

    fn needs_column_mapping(&self, m: &Metadata, what: &str) -> Result<()> {
        if mapping_mode(m)? == ColumnMappingMode::None {
            return Err(Error::UnsupportedFeature {
                table: self.root.to_string(),
                version: Some(self.read_version),
                what: what.into(),
                detail: "needs column mapping (delta.columnMapping.mode = 'name', set when the table is created): without it data files store columns by name".into(),
            });
        }
        Ok(())
    }

    fn no_such_column(&self, call: &str, path: &str) -> Error {
        Error::invalid(format!(
            "{call} on {} (version {}): no column {path:?}",
            self.root, self.read_version
        ))
    }

    /// Refuse changing a column that a CHECK constraint or a generation expression names (by a
    /// whole-word match of its top-level name: a false match refuses, never loses a rule), or a
    /// clustering column.
    fn refuse_referenced(&self, m: &Metadata, path: &str, call: &str) -> Result<()> {
        let top = path.split('.').next().unwrap_or(path);
        let mentions = |text: &str| {
            text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .any(|w| w.eq_ignore_ascii_case(top))
        };
        let generated = m.schema_string.contains("delta.generationExpression")
            && StructType::parse(&m.schema_string)
                .map_err(Error::invalid)?
                .fields
                .iter()
                .filter_map(|f| f.metadata.get("delta.generationExpression"))
                .any(|e| e.as_str().is_some_and(mentions));
        let constraint = m
            .configuration
            .iter()
            .find(|(k, v)| k.starts_with("delta.constraints.") && mentions(v));
        if let Some((k, v)) = constraint {
            return Err(Error::invalid(format!(
                "{call}({path:?}) on {}: the constraint {} = {v:?} names the column; drop it first",
                self.root,
                &k["delta.constraints.".len()..]
            )));
        }
        if generated {
            return Err(Error::invalid(format!(
                "{call}({path:?}) on {}: a generated column's expression names the column",
                self.root
            )));
        }
        let clustering = match self.domains.get(crate::clustering::DOMAIN) {
            Some(_) => None,
            None => crate::clustering::columns(self.snap()?)?,
        };
        if clustering
            .unwrap_or_default()
            .iter()
            .any(|c| c.eq_ignore_ascii_case(top))
        {
            return Err(Error::invalid(format!(
                "{call}({path:?}) on {}: it is a clustering column; set_clustering without it first",
                self.root
            )));
        }
        Ok(())
    }

    fn set_schema_value(&mut self, mut value: serde_json::Value, allow_drop: bool) -> Result<()> {
        self.open()?;
        let mut m = self.current_metadata()?;
        let mode = mapping_mode(&m)?;
        let old = StructType::parse(&m.schema_string).map_err(Error::invalid)?;
        let proposed = StructType::parse(&value.to_string()).map_err(Error::invalid)?;
        schema::check_columns(&proposed, &m.partition_columns)?;
        if self.read_version >= 0 {
            // Rows already in the table have no generated values: an identity column is
            // declared when the table is created (delta-spark refuses adding one likewise).
            if let Some(f) = proposed.fields.iter().find(|f| {
                f.is_identity()
                    && !old
                        .fields
                        .iter()
                        .any(|o| o.name == f.name && o.is_identity())
            }) {
                return Err(Error::invalid(format!(
                    "set_schema on {} (version {}): column {} cannot become an identity column; \
                     identity columns are declared when the table is created",
                    self.root, self.read_version, f.name
                )));
            }
            // Rows already in the table have no generated value and were written without the
            // default: delta-spark refuses declaring either on an existing column likewise.
            for key in [
                crate::schema_arrow::GENERATION_EXPRESSION,
                crate::schema_arrow::CURRENT_DEFAULT,
            ] {
                if let Some(f) = proposed.fields.iter().find(|f| {
                    f.metadata.get(key).is_some()
                        && old
                            .fields
                            .iter()
                            .find(|o| o.name == f.name)
                            .is_none_or(|o| o.metadata.get(key) != f.metadata.get(key))
                }) {
                    return Err(Error::invalid(format!(
                        "set_schema on {} (version {}): column {} cannot get {key} on an existing table; \
                         generated columns and defaults are declared when the table is created",
                        self.root, self.read_version, f.name
                    )));
                }
            }
            // A clustering column must stay (as delta-spark refuses dropping one): change the
            // clustering first.
            let clustering = match self.domains.get(crate::clustering::DOMAIN) {
                Some(_) => None, // changed in this transaction: checked when it was staged
                None => crate::clustering::columns(self.snap()?)?,
            };
            for c in clustering.unwrap_or_default() {
                if !proposed
                    .fields
                    .iter()
                    .any(|f| f.name.eq_ignore_ascii_case(&c))
                {
                    return Err(Error::invalid(format!(
                        "set_schema on {} (version {}): {c:?} is a clustering column; \
                         set_clustering without it first",
                        self.root, self.read_version
                    )));
                }
            }
        }
        let rules = Rules {
            column_mapping: mode != ColumnMappingMode::None,
            allow_drop,
            type_widening: protocol::is_true(&m.configuration, "delta.enableTypeWidening"),
        };
        crate::schema_change::check(&old, &proposed, rules)
            .map_err(|r| match r {
                Refusal::Dropped(column) => Error::SchemaMismatch {
                    table: self.root.to_string(),
                    version: self.read_version,
                    detail: format!(
                        "the new schema lacks column `{column}`, and its data would be lost: rename it with \
                         rename_column, drop it with drop_columns, or pass allow_drop=True"
                    ),
                    column,
                },
                Refusal::Invalid(why) => Error::invalid(format!(
                    "set_schema on {} (version {}): {why}",
                    self.root, self.read_version
                )),
                Refusal::Unsupported(why) => Error::UnsupportedFeature {
                    table: self.root.to_string(),
                    version: Some(self.read_version),
                    what: "schema change".into(),
                    detail: why,
                },
            })?;
        schema::carry_field_metadata(&mut value, &old);
        self.record_type_changes(&mut value, &old, &proposed, &m.partition_columns)?;
        if mode != ColumnMappingMode::None {
            assign_new_ids(&mut m, &mut value);
        }
        let text = value.to_string();
        m.schema_string = text;
        self.stage_metadata(m)
    }

    fn stage_metadata(&mut self, mut m: Metadata) -> Result<()> {
        IsolationLevel::of_table(&m.configuration)?;
        crate::row_tracking::name_materialized_columns(&mut m.configuration);
        let schema = StructType::parse(&m.schema_string).map_err(Error::invalid)?;
        let current = self.current_protocol()?;
        if let Some(p) = protocol::upgrade_for(&current, &m.configuration, &schema)? {
            self.protocol = Some(p);
        }
        // Readers of a table with row tracking enabled rely on every live file having row ids.
        if crate::row_tracking::enabled(&m.configuration) {
            self.backfill_row_ids()?;
        }
        self.metadata = Some(m);
        Ok(())
    }

    /// The row-tracking backfill, in the commit that enables row tracking: every live file
    /// without row ids is added again as it is (dataChange=false, its DV kept; an add replaces
    /// the live add of its path, and a remove of the same path and DV in the same commit would
    /// drop it for delta-kernel-rs), so the commit hands it ids like any new file and readers
    /// never see the table enabled with a file lacking them. It depends on the whole table:
    /// row-level resolution is off and any concurrent data change conflicts (file-level checks
    /// 5-6).
    fn backfill_row_ids(&mut self) -> Result<()> {
        let Some(snap) = self.snapshot.clone() else {
            return Ok(());
        };
        let lacking: Vec<&AddFile> = snap
            .files()
            .iter()
            .filter(|f| f.base_row_id().is_none())
            .collect();
        let staged: std::collections::HashSet<&str> = self
            .adds
            .iter()
            .filter(|a| !a.data_change)
            .map(|a| &*a.path)
            .collect();
        if lacking.iter().all(|f| staged.contains(&*f.path)) {
            return Ok(()); // nothing to backfill, or staged already
        }
        if !self.adds.is_empty() || !self.removes.is_empty() || !self.dv_deletes.is_empty() {
            return Err(Error::invalid(format!(
                "enabling row tracking on {} (version {}) re-commits its {} files without row ids: do it in a transaction of its own",
                self.root,
                self.read_version,
                lacking.len()
            )));
        }
        self.read_whole_table()?;
        self.opts.row_level = false;
        for f in lacking {
            let mut a = f.clone();
            a.data_change = false;
            self.adds.push(a);
        }
        Ok(())
    }

    /// Stage a protocol change (never a downgrade).
    pub fn set_protocol(&mut self, p: Protocol) -> Result<()> {
        self.open()?;
        let current = self.current_protocol()?;
        if p.min_reader_version < current.min_reader_version
            || p.min_writer_version < current.min_writer_version
        {
            return Err(Error::invalid(format!(
                "protocol ({}, {}) would downgrade the table's ({}, {})",
                p.min_reader_version,
                p.min_writer_version,
                current.min_reader_version,
                current.min_writer_version
            )));
        }
        protocol::check_writable(&p, &self.root.to_string(), self.read_version + 1)?;
        self.protocol = Some(p);
        Ok(())
    }

    pub fn set_operation_metrics(&mut self, metrics: BTreeMap<String, String>) -> Result<()> {
        self.open()?;
        self.operation_metrics = metrics;
        Ok(())
    }

    /// Stage DROP FEATURE's last step: the protocol without `feature`, in a commit that then
    /// truncates the log before itself (see [`crate::drop_feature`]). FeatureDropPending while
    /// the feature is in use or was used too recently (at `now_ms`). Nothing else may be staged.
    pub fn drop_feature(&mut self, feature: &str, now_ms: i64) -> Result<()> {
        use crate::drop_feature::{status, DropStatus};
        self.open()?;
        if self.num_staged() > 0 {
            return Err(Error::invalid(
                "dropping a feature must be the only change of its transaction",
            ));
        }
        let snap = self.snap()?.clone();
        let pending = |ready_at_ms: Option<i64>, detail: String| Error::FeatureDropPending {
            table: self.root.to_string(),
            version: snap.version(),
            feature: feature.to_string(),
            ready_at_ms,
            detail,
        };
        match status(&snap, feature, now_ms)? {
            DropStatus::InUse(why) => Err(pending(
                None,
                format!("it is still in use ({})", why.join("; ")),
            )),
            DropStatus::Wait {
                last_trace_version,
                last_trace_ms,
                ready_at_ms,
            } => Err(pending(
                Some(ready_at_ms),
                format!(
                    "version {last_trace_version} (committed at {}) still uses it; run again after {} \
                     (delta.dropFeatureTruncateHistory.retentionDuration after it), when the log \
                     before the downgrade is truncated",
                    fmt_ms(last_trace_ms),
                    fmt_ms(ready_at_ms)
                ),
            )),
            DropStatus::Ready(p) => {
                self.read_whole_table()?;
                self.protocol = Some(p);
                self.truncates_history = true;
                Ok(())
            }
        }
    }

    /// Cluster the table by `columns` (ALTER TABLE CLUSTER BY; empty: CLUSTER BY NONE): the
    /// `delta.clustering` domain, and the writer features it needs (see [`crate::clustering`]).
    /// Concurrent writers of the domain conflict (check 3).
    pub fn set_clustering(&mut self, columns: &[String]) -> Result<()> {
        self.open()?;
        let (schema, mode, partition_columns) = self.layout()?;
        let domain = crate::clustering::domain_for(&schema, mode, &partition_columns, columns)?;
        let current = self.current_protocol()?;
        if let Some(p) = protocol::with_writer_features(&current, crate::clustering::FEATURES) {
            protocol::check_writable(&p, &self.root.to_string(), self.read_version + 1)?;
            self.protocol = Some(p);
        }
        self.domains.insert(domain.domain.clone(), domain);
        Ok(())
    }

    /// Mark the adds staged from now on as clustered (`clusteringProvider: "liquid"`; the
    /// OPTIMIZE of a clustered table), or no longer.
    pub fn mark_clustered(&mut self, clustered: bool) -> Result<()> {
        self.open()?;
        self.clustering_provider = clustered.then(|| crate::clustering::PROVIDER.into());
        Ok(())
    }

    pub fn abort(&mut self) {
        if self.state == TxnState::Open {
            self.state = TxnState::Aborted;
        }
    }

    pub fn num_staged(&self) -> usize {
        self.adds.len()
            + self.removes.len()
            + self.cdc.len()
            + self.dv_deletes.len()
            + self.txns.len()
            + self.domains.len()
    }
}

/// A data path relative to the table root, without URI encoding: a relative path as given, or
/// an absolute path or URI inside the table's directory.
fn relative_data_path(root: &Location, path: &str) -> Result<String> {
    let bad = |why: &str| Error::invalid(format!("add_file({path:?}): {why}"));
    if path.is_empty() {
        return Err(bad("the path is empty"));
    }
    let absolute = path.contains("://") || path.starts_with("file:") || path.starts_with('/');
    let text = if absolute {
        let key = root.storage().key_of(path).map_err(|m| bad(&m))?;
        let inside = if root.key().is_empty() {
            Some(key.as_str())
        } else {
            key.strip_prefix(root.key())
                .and_then(|r| r.strip_prefix('/'))
        };
        inside
            .ok_or_else(|| {
                bad(&format!(
                    "the file must be inside the table directory {root}"
                ))
            })?
            .to_string()
    } else {
        path.to_string()
    };
    if text.split('/').any(|c| c == "..") {
        return Err(bad("the path must not contain '..'"));
    }
    if text.starts_with("_delta_log/") {
        return Err(bad("data files cannot live in _delta_log"));
    }
    Ok(text)
}

/// Validate logical partition values and key them by physical name, in partition-column order.
fn physical_partition_values(
    schema: &StructType,
    mapping: ColumnMappingMode,
    partition_columns: &[String],
    values: Vec<(String, Option<String>)>,
    path: &str,
) -> Result<PartitionValues> {
    let mut out = Vec::with_capacity(partition_columns.len());
    for col in partition_columns {
        let field = schema.field(col).ok_or_else(|| {
            Error::invalid(format!("partition column {col:?} is not in the schema"))
        })?;
        let value = values
            .iter()
            .find(|(k, _)| k == col)
            .or_else(|| values.iter().find(|(k, _)| k.eq_ignore_ascii_case(col)))
            .ok_or_else(|| Error::invalid(format!("add_file({path:?}): missing a value for partition column {col:?} (use None for null)")))?;
        crate::partition::parse(value.1.as_deref(), &field.data_type).map_err(|m| {
            Error::invalid(format!("add_file({path:?}): partition column {col:?}: {m}"))
        })?;
        out.push((
            field.physical_name(mapping).into(),
            value.1.clone().map(Into::into),
        ));
    }
    for (k, _) in &values {
        if !partition_columns.iter().any(|c| c.eq_ignore_ascii_case(k)) {
            return Err(Error::invalid(format!(
                "add_file({path:?}): {k:?} is not a partition column (partition columns: {})",
                partition_columns.join(", ")
            )));
        }
    }
    Ok(out.into())
}

fn fmt_ms(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|d| d.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_else(|| ms.to_string())
}

/// A dotted column path as (the struct columns leading to it, its own name).
/// The column mapping mode `m` configures.
fn mapping_mode(m: &Metadata) -> Result<ColumnMappingMode> {
    ColumnMappingMode::from_config(
        m.configuration
            .get("delta.columnMapping.mode")
            .map(String::as_str),
    )
}

/// Give the fields of `schema` that have none a column-mapping id and physical name, counting on
/// from `m`'s `delta.columnMapping.maxColumnId`, which moves to the last id handed out.
fn assign_new_ids(m: &mut Metadata, schema: &mut serde_json::Value) {
    let key = "delta.columnMapping.maxColumnId";
    let mut next: i64 = m
        .configuration
        .get(key)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    schema::assign_column_mapping(schema, &mut next);
    m.configuration.insert(key.into(), next.to_string());
}

fn split_path(path: &str) -> (Vec<&str>, &str) {
    let mut parts: Vec<&str> = path.split('.').collect();
    let leaf = parts.pop().unwrap_or_default();
    (parts, leaf)
}

/// The `fields` array of the struct reached through the struct columns `parents` of a schema.
fn fields_at<'v>(
    schema: &'v mut serde_json::Value,
    parents: &[&str],
) -> Option<&'v mut Vec<serde_json::Value>> {
    let mut cur = schema;
    for p in parents {
        let field = cur["fields"]
            .as_array_mut()?
            .iter_mut()
            .find(|f| f["name"].as_str() == Some(p))?;
        cur = &mut field["type"];
        if cur["type"].as_str() != Some("struct") {
            return None;
        }
    }
    cur["fields"].as_array_mut()
}
