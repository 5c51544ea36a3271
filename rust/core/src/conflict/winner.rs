//! A commit that landed after the transaction's read version, summarised for the checks.

use std::path::Path;

use serde_json::Value;

use crate::error::Result;
use crate::log::actions::{Action, Actions, AddFile, StatsText, DomainMetadata, Metadata, Protocol, RemoveFile, Txn};
use crate::log::json;
use crate::log::path::commit_path;

#[derive(Debug, Clone, Default)]
pub struct WinningCommit {
    pub version: i64,
    pub commit_info: Option<String>,
    pub operation: String,
    pub is_blind_append: bool,
    pub txn_id: Option<String>,
    pub in_commit_timestamp: Option<i64>,
    pub adds: Vec<AddFile>,
    pub removes: Vec<RemoveFile>,
    pub metadata: Option<Metadata>,
    pub protocol: Option<Protocol>,
    pub txns: Vec<Txn>,
    pub domains: Vec<DomainMetadata>,
}

impl WinningCommit {
    pub fn read(log_dir: &Path, version: i64) -> Result<Self> {
        let actions = json::read_commit(&commit_path(log_dir, version), version)?;
        Ok(Self::from_actions(version, actions))
    }

    pub fn from_actions(version: i64, actions: Actions) -> Self {
        let mut w = WinningCommit { version, adds: actions.adds, ..Default::default() };
        // A winner's stats are read by every data-skipping check against it: unescape them once.
        for a in &mut w.adds {
            a.stats = a.stats.take().map(StatsText::into_plain);
        }
        for a in actions.other {
            match a {
                Action::Add(x) => w.adds.push(x),
                Action::Remove(x) => w.removes.push(x),
                Action::Metadata(x) => w.metadata = Some(*x),
                Action::Protocol(x) => w.protocol = Some(x),
                Action::Txn(x) => w.txns.push(x),
                Action::Domain(x) => w.domains.push(x),
                Action::CommitInfo(c) => w.commit_info = Some(c.into()),
                Action::Sidecar(_) | Action::CheckpointMetadata => {}
            }
        }
        let info: Option<Value> = w.commit_info.as_deref().and_then(|c| serde_json::from_str(c).ok());
        let get = |k: &str| info.as_ref().and_then(|i| i.get(k));
        w.operation = get("operation").and_then(Value::as_str).unwrap_or("TRANSACTION").to_string();
        w.txn_id = get("txnId").and_then(Value::as_str).map(String::from);
        w.in_commit_timestamp = get("inCommitTimestamp").and_then(Value::as_i64);
        w.is_blind_append = match get("isBlindAppend").and_then(Value::as_bool) {
            Some(b) => b,
            // delta-occ extension (concurrency.md §2): deltalake never writes the flag; its appends
            // are WRITE with mode Append and only dataChange adds.
            None => {
                let mode = get("operationParameters").and_then(|p| p.get("mode")).and_then(Value::as_str);
                w.operation == "WRITE"
                    && mode == Some("Append")
                    && w.removes.is_empty()
                    && w.metadata.is_none()
                    && w.protocol.is_none()
                    && w.adds.iter().all(|a| a.data_change)
            }
        };
        w
    }

    /// Number of actions the checks look at (for throughput figures).
    pub fn num_actions(&self) -> usize {
        self.adds.len()
            + self.removes.len()
            + self.txns.len()
            + self.domains.len()
            + self.metadata.is_some() as usize
            + self.protocol.is_some() as usize
    }
}
