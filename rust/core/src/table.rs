//! Opening, refreshing, time travel, history and creation of a table.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::commit::committer::{self, CommitOptions};
use crate::error::{Error, Result};
use crate::isolation::{self, IsolationLevel};
use crate::log::actions::{Format, Metadata};
use crate::log::replay::LogState;
use crate::log::segment::{self, log_dir, Listing};
use crate::log::{checkpoint, json as json_log};
use crate::parallel;
use crate::schema::{assign_column_mapping, check_columns, ColumnMappingMode, StructType};
use crate::snapshot::Snapshot;
use crate::transaction::Transaction;

pub const ENGINE_INFO: &str = concat!("delta-occ/", env!("CARGO_PKG_VERSION"));

/// Commits parsed concurrently before being applied, to bound peak memory.
const COMMIT_BATCH: usize = 64;

#[allow(clippy::large_enum_variant)] // short-lived, one per refresh
enum Forward {
    /// No commits after the latest known version.
    Current,
    Advanced(Snapshot),
    /// The wanted version is above the newest commit, which is this one.
    Beyond(i64),
    /// The wanted commits are not all there.
    Gap,
}

#[derive(Debug, Clone)]
pub struct Table {
    root: PathBuf,
    latest: Arc<Snapshot>,
}

pub fn resolve_location(location: &str) -> Result<PathBuf> {
    crate::uri::to_local_path(location).map_err(Error::invalid)
}

/// Replay the log up to `version` (latest when `None`).
pub fn load(root: &Path, version: Option<i64>) -> Result<Snapshot> {
    let listing = segment::list(root, 0)?;
    load_from_listing(root, &listing, version)
}

fn load_from_listing(root: &Path, listing: &Listing, version: Option<i64>) -> Result<Snapshot> {
    let seg = listing.segment(root, version)?;
    let mut state = LogState::new();
    if let Some(cp) = &seg.checkpoint {
        let actions = checkpoint::read(&log_dir(root), cp)?;
        state.apply_checkpoint(cp.version, actions);
    }
    apply_commits(&mut state, &seg.commits)?;
    Snapshot::from_state(root, state)
}

/// Commits larger than this are read in ranges, one per thread, instead of whole.
const LARGE_COMMIT: u64 = 16 << 20;

fn apply_commits(state: &mut LogState, commits: &[crate::log::path::LogFile]) -> Result<()> {
    let mut rest = commits;
    while let Some(first) = rest.first() {
        if first.size > LARGE_COMMIT {
            let mut parts = json_log::read_large_commit(&first.path, first.version, first.size)?;
            // Room for all the adds in the first part, which becomes the live-file list of an
            // empty state: the other parts are then appended without regrowing it.
            let others: usize = parts.iter().skip(1).map(|p| p.adds.len()).sum();
            parts[0].adds.reserve(others);
            state.begin_commit();
            for actions in parts {
                state.apply(actions);
            }
            state.end_commit(first.version);
            rest = &rest[1..];
            continue;
        }
        let n = rest
            .iter()
            .take(COMMIT_BATCH)
            .take_while(|f| f.size <= LARGE_COMMIT)
            .count();
        let (batch, tail) = rest.split_at(n);
        let parsed = parallel::map(batch, |f| json_log::read_commit(&f.path, f.version));
        for (f, actions) in batch.iter().zip(parsed) {
            state.apply_commit(f.version, actions?);
        }
        rest = tail;
    }
    Ok(())
}

impl Table {
    pub fn open(location: &str) -> Result<Self> {
        let root = resolve_location(location)?;
        if !root.is_dir() {
            return Err(Error::TableNotFound {
                path: root.display().to_string(),
                reason: "the directory does not exist".into(),
            });
        }
        let latest = Arc::new(load(&root, None)?);
        Ok(Table { root, latest })
    }

    pub fn root(&self) -> &Path {
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
        self.latest = match self.forward(None)? {
            Forward::Current => return Ok(self.latest.version()),
            Forward::Advanced(snap) => Arc::new(snap),
            // Something unusual (a gap, or a log rewritten underneath us): replay from scratch.
            Forward::Gap | Forward::Beyond(_) => Arc::new(load(&self.root, None)?),
        };
        Ok(self.latest.version())
    }

    /// The snapshot at `version` (latest known when `None`).
    pub fn snapshot(&self, version: Option<i64>) -> Result<Arc<Snapshot>> {
        match version {
            None => Ok(self.latest.clone()),
            Some(v) if v == self.latest.version() => Ok(self.latest.clone()),
            Some(v) if v > self.latest.version() => {
                let table = self.root.display().to_string();
                let beyond = |latest: i64| Error::VersionNotFound {
                    table: table.clone(),
                    version: v,
                    reason: format!("the latest version is {latest}"),
                };
                match self.forward(Some(v))? {
                    Forward::Advanced(snap) => Ok(Arc::new(snap)),
                    Forward::Current => Err(beyond(self.latest.version())),
                    Forward::Beyond(newest) => Err(beyond(newest)),
                    Forward::Gap => Err(Error::VersionNotFound {
                        table,
                        version: v,
                        reason: "the log has no contiguous commits up to it".into(),
                    }),
                }
            }
            Some(v) => Ok(Arc::new(load(&self.root, Some(v))?)),
        }
    }

    /// Apply the commits after the latest known version (up to `upto`, or all) to a copy of its
    /// state, listing and reading only those commits.
    fn forward(&self, upto: Option<i64>) -> Result<Forward> {
        let from = self.latest.version() + 1;
        let listing = segment::list(&self.root, from)?;
        let Some(newest) = listing.commits.keys().next_back().copied() else {
            return Ok(Forward::Current);
        };
        let target = upto.unwrap_or(newest);
        if target > newest {
            return Ok(Forward::Beyond(newest));
        }
        if !(from..=target).all(|v| listing.commits.contains_key(&v)) {
            return Ok(Forward::Gap);
        }
        let commits: Vec<_> = listing
            .commits
            .range(..=target)
            .map(|(_, f)| f.clone())
            .collect();
        let mut state = self.latest.state.clone();
        apply_commits(&mut state, &commits)?;
        Ok(Forward::Advanced(Snapshot::from_state(&self.root, state)?))
    }

    /// commitInfo of recent commits, newest first: `(version, commitInfo JSON or None)`.
    pub fn history(&self, limit: Option<usize>) -> Result<Vec<(i64, Option<String>)>> {
        let listing = segment::list(&self.root, 0)?;
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
        let infos = parallel::map(&versions, |f| read_commit_info(&f.path, f.version));
        versions
            .iter()
            .zip(infos)
            .map(|(f, i)| Ok((f.version, i?)))
            .collect()
    }

    /// Create a table: commit version 0 with commitInfo, protocol and metaData.
    pub fn create(
        location: &str,
        schema_string: &str,
        partition_by: Vec<String>,
        properties: BTreeMap<String, String>,
        name: Option<String>,
    ) -> Result<Self> {
        let mut txn = begin_create(
            location,
            schema_string,
            partition_by.clone(),
            properties.clone(),
            name,
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
        committer::commit(&mut txn, "CREATE TABLE", &params, &CommitOptions::default())?;
        let root = txn.root().to_path_buf();
        let latest = Arc::new(load(&root, None)?);
        Ok(Table { root, latest })
    }

    /// A table handle whose latest known snapshot is `snap`.
    pub fn from_snapshot(snap: Arc<Snapshot>) -> Self {
        Table {
            root: snap.root.clone(),
            latest: snap,
        }
    }
}

/// The transaction that creates a table (read version -1). Committing it when another writer
/// created the table first raises ProtocolChangedException with the empty-directory hint.
pub fn begin_create(
    location: &str,
    schema_string: &str,
    partition_by: Vec<String>,
    properties: BTreeMap<String, String>,
    name: Option<String>,
) -> Result<Transaction> {
    let root = resolve_location(location)?;
    if let Ok(listing) = segment::list(&root, 0) {
        if let Some(v) = listing.latest_version() {
            return Err(Error::TableAlreadyExists {
                path: root.display().to_string(),
                found: format!("version {v}"),
            });
        }
    }
    let (schema_value, properties) = prepare_schema(schema_string, properties)?;
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
    std::fs::create_dir_all(&root).map_err(|e| Error::io(&root, e))?;
    Transaction::begin_create(&root, metadata, protocol)
}

pub(crate) fn read_commit_info(path: &Path, version: i64) -> Result<Option<String>> {
    #[derive(serde::Deserialize)]
    struct Line<'a> {
        #[serde(borrow, rename = "commitInfo", default)]
        commit_info: Option<&'a serde_json::value::RawValue>,
    }
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let parsed: Line = serde_json::from_slice(line).map_err(|e| {
            Error::corrupt(
                path,
                Some(version),
                format!("line {}: invalid action JSON: {e}", i + 1),
            )
        })?;
        if let Some(c) = parsed.commit_info {
            return Ok(Some(c.get().to_string()));
        }
    }
    Ok(None)
}

/// Normalise properties and, with column mapping, give every field an id and a physical name.
fn prepare_schema(
    schema_string: &str,
    mut props: BTreeMap<String, String>,
) -> Result<(Value, BTreeMap<String, String>)> {
    let mut schema: Value = serde_json::from_str(schema_string)
        .map_err(|e| Error::invalid(format!("schema JSON: {e}")))?;
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
