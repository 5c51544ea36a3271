//! A commit that landed after the transaction's read version, summarised for the checks.

use crate::storage::Location;

use serde_json::Value;

use crate::error::Result;
use crate::log::actions::{
    Action, Actions, AddFile, CdcFile, DomainMetadata, Metadata, PartitionValues, Protocol,
    RemoveFile, StatsText, Txn,
};
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
    /// The version its writer read (`commitInfo.readVersion`), where it says.
    pub read_version: Option<i64>,
    pub adds: Vec<AddFile>,
    /// The distinct partition tuples of the dataChange adds: partition-only checks judge these
    /// instead of every file.
    pub data_partitions: DistinctPartitions,
    /// How many of `adds` have dataChange=true.
    pub num_data_adds: usize,
    pub removes: Vec<RemoveFile>,
    pub metadata: Option<Metadata>,
    pub protocol: Option<Protocol>,
    pub txns: Vec<Txn>,
    pub domains: Vec<DomainMetadata>,
    /// Change-data files: not table data, so no check reads them; kept for the change feed.
    pub cdc: Vec<CdcFile>,
}

impl WinningCommit {
    pub fn read(log_dir: &Location, version: i64) -> Result<Self> {
        let actions = json::read_commit(&commit_path(log_dir, version), version)?;
        Ok(Self::from_actions(version, actions))
    }

    /// The commits of `versions`, in order, `None` where the commit file does not exist: fetched
    /// concurrently from an object store (one GET each, no HEAD), parsed on all cores. For
    /// readers of many commits (timeline, change feed), where one request after another would
    /// cost a round trip each.
    pub fn read_many(log_dir: &Location, versions: &[i64]) -> Vec<Result<Option<Self>>> {
        let paths: Vec<Location> = versions.iter().map(|&v| commit_path(log_dir, v)).collect();
        let fetched: Vec<(i64, &Location, std::io::Result<bytes::Bytes>)> =
            // Local files are read on all cores (the storage layer itself stays single-threaded).
            if paths.iter().all(Location::is_local) {
                crate::parallel::map(&paths, Location::read)
            } else {
                Location::read_many(&paths.iter().collect::<Vec<_>>())
            }
            .into_iter()
                .zip(versions.iter().zip(&paths))
                .map(|(b, (&v, p))| (v, p, b))
                .collect();
        crate::parallel::map(&fetched, |(v, path, bytes)| match bytes {
            Ok(b) => {
                json::parse_actions(b, path, Some(*v)).map(|a| Some(Self::from_actions(*v, a)))
            }
            Err(e) if crate::storage::is_missing(e) => Ok(None),
            Err(e) => Err(crate::error::Error::io(path, crate::error::clone_io(e))),
        })
    }

    /// Unescape the adds' stats once, for a transaction whose checks will read them (data
    /// skipping with data predicates); otherwise they stay escaped and cost nothing.
    pub fn unescape_stats(&mut self) {
        for a in &mut self.adds {
            a.stats = a.stats.take().map(StatsText::into_plain);
        }
    }

    pub fn from_actions(version: i64, actions: Actions) -> Self {
        let mut w = WinningCommit {
            version,
            adds: actions.adds,
            ..Default::default()
        };
        for a in actions.other {
            match a {
                Action::Add(_) => unreachable!("Actions keeps adds apart"),
                Action::Remove(x) => w.removes.push(x),
                Action::Metadata(x) => w.metadata = Some(*x),
                Action::Protocol(x) => w.protocol = Some(x),
                Action::Txn(x) => w.txns.push(x),
                Action::Domain(x) => w.domains.push(x),
                Action::CommitInfo(c) => w.commit_info = Some(c.into()),
                Action::Cdc(x) => w.cdc.push(x),
                Action::Sidecar(_) | Action::CheckpointMetadata => {}
            }
        }
        w.data_partitions = DistinctPartitions::of(&w.adds);
        w.num_data_adds = w.adds.iter().filter(|a| a.data_change).count();
        let info: Option<Value> = w
            .commit_info
            .as_deref()
            .and_then(|c| serde_json::from_str(c).ok());
        let get = |k: &str| info.as_ref().and_then(|i| i.get(k));
        w.operation = get("operation")
            .and_then(Value::as_str)
            .unwrap_or("TRANSACTION")
            .to_string();
        w.txn_id = get("txnId").and_then(Value::as_str).map(String::from);
        w.in_commit_timestamp = get("inCommitTimestamp").and_then(Value::as_i64);
        w.read_version = get("readVersion").and_then(Value::as_i64);
        w.is_blind_append = match get("isBlindAppend").and_then(Value::as_bool) {
            Some(b) => b,
            // delta-occ extension (concurrency.md §2): deltalake never writes the flag; its appends
            // are WRITE with mode Append and only dataChange adds.
            None => {
                let mode = get("operationParameters")
                    .and_then(|p| p.get("mode"))
                    .and_then(Value::as_str);
                w.operation == "WRITE"
                    && mode == Some("Append")
                    && w.removes.is_empty()
                    && w.metadata.is_none()
                    && w.protocol.is_none()
                    && w.num_data_adds == w.adds.len()
            }
        };
        w
    }

    /// The dataChange adds in order.
    pub fn data_adds(&self) -> impl Iterator<Item = (usize, &AddFile)> {
        self.adds.iter().enumerate().filter(|(_, a)| a.data_change)
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

/// The distinct partition tuples among a commit's dataChange adds, each with its first file and
/// its content as one byte string. The bytes sit together in memory, so a check recognises a
/// tuple it has judged before (in this winner or an earlier one) without touching the files.
#[derive(Debug, Clone, Default)]
pub struct DistinctPartitions {
    /// Per tuple, in order of first appearance: index in `adds` of its first file, and end of
    /// its key in `keys`.
    entries: Vec<(u32, u32)>,
    keys: Vec<u8>,
}

impl DistinctPartitions {
    /// The log readers share one tuple among the files of a partition within a parsed part of a
    /// commit, so the shared allocation identifies it while reading (a commit parsed in several
    /// parts may list a tuple more than once; the judges' cache by content absorbs that).
    fn of(adds: &[AddFile]) -> Self {
        let mut seen = hashbrown::HashSet::new();
        let mut out = DistinctPartitions::default();
        for (i, a) in adds.iter().enumerate() {
            if a.data_change && seen.insert(a.partition_values.id()) {
                encode_key(&a.partition_values, &mut out.keys);
                out.entries.push((i as u32, out.keys.len() as u32));
            }
        }
        out
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// `(index in adds of the tuple's first file, the tuple's key)` in order of first appearance.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &[u8])> {
        let starts = std::iter::once(0).chain(self.entries.iter().map(|e| e.1 as usize));
        self.entries
            .iter()
            .zip(starts)
            .map(|(&(i, end), start)| (i as usize, &self.keys[start..end as usize]))
    }
}

/// An unambiguous byte string of a tuple: per pair, length-prefixed key, then a null marker or a
/// length-prefixed value.
fn encode_key(pv: &PartitionValues, out: &mut Vec<u8>) {
    let mut put = |b: &[u8]| {
        out.extend_from_slice(&(b.len() as u32).to_le_bytes());
        out.extend_from_slice(b);
    };
    for (k, v) in pv.iter() {
        put(k.as_bytes());
        match v {
            None => put(&[0]),
            Some(v) => {
                put(&[1]);
                put(v.as_bytes());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(pairs: &[(&str, Option<&str>)]) -> Vec<u8> {
        let pv: PartitionValues = pairs
            .iter()
            .map(|(k, v)| (Box::from(*k), v.map(Box::from)))
            .collect::<Vec<_>>()
            .into();
        let mut out = Vec::new();
        encode_key(&pv, &mut out);
        out
    }

    #[test]
    fn read_many_gives_each_version_in_order_and_none_for_a_missing_one() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("_delta_log");
        std::fs::create_dir(&log).unwrap();
        let add = |p: &str| {
            format!(
                r#"{{"add":{{"path":"{p}","partitionValues":{{}},"size":1,"modificationTime":0,"dataChange":true}}}}"#
            )
        };
        let info = |op: &str| format!(r#"{{"commitInfo":{{"operation":"{op}"}}}}"#);
        for (v, text) in [
            (0, format!("{}\n{}\n", info("CREATE TABLE"), add("a"))),
            (
                1,
                format!("{}\n{}\n{}\n", info("WRITE"), add("b"), add("c")),
            ),
            (3, format!("{}\n", info("OPTIMIZE"))),
            (4, "{not json\n".to_string()),
        ] {
            std::fs::write(log.join(format!("{v:020}.json")), text).unwrap();
        }
        let got = WinningCommit::read_many(&Location::local(&log), &[3, 0, 2, 1, 4]);
        let summary = |r: &Result<Option<WinningCommit>>| {
            r.as_ref()
                .unwrap()
                .as_ref()
                .map(|w| (w.version, w.operation.clone(), w.adds.len()))
        };
        assert_eq!(summary(&got[0]), Some((3, "OPTIMIZE".into(), 0)));
        assert_eq!(summary(&got[1]), Some((0, "CREATE TABLE".into(), 1)));
        assert_eq!(summary(&got[2]), None);
        assert_eq!(summary(&got[3]), Some((1, "WRITE".into(), 2)));
        let err = got[4]
            .as_ref()
            .expect_err("a corrupt commit is an error")
            .to_string();
        assert!(err.contains("00000000000000000004.json"), "{err}");
    }

    #[test]
    fn tuple_keys_are_unambiguous() {
        let keys = [
            key(&[("a", Some("bc"))]),
            key(&[("ab", Some("c"))]),
            key(&[("a", None)]),
            key(&[("a", Some(""))]),
            key(&[("a", Some("b")), ("c", None)]),
            key(&[("a", Some("b")), ("c", Some(""))]),
            key(&[]),
        ];
        for (i, a) in keys.iter().enumerate() {
            for b in &keys[i + 1..] {
                assert_ne!(a, b);
            }
        }
        assert_eq!(key(&[("a", Some("b"))]), key(&[("a", Some("b"))]));
    }

    #[test]
    fn distinct_partitions_of_data_adds() {
        let lines = [
            r#"{"add":{"path":"a","partitionValues":{"p":"1"},"size":1,"modificationTime":0,"dataChange":false}}"#,
            r#"{"add":{"path":"b","partitionValues":{"p":"2"},"size":1,"modificationTime":0,"dataChange":true}}"#,
            r#"{"add":{"path":"c","partitionValues":{"p":"1"},"size":1,"modificationTime":0,"dataChange":true}}"#,
            r#"{"add":{"path":"d","partitionValues":{"p":"2"},"size":1,"modificationTime":0,"dataChange":true}}"#,
        ];
        let actions = json::parse_actions(lines.join("\n").as_bytes(), "t.json", Some(1)).unwrap();
        let w = WinningCommit::from_actions(1, actions);
        let firsts: Vec<&str> = w
            .data_partitions
            .iter()
            .map(|(i, _)| &*w.adds[i].path)
            .collect();
        assert_eq!(
            firsts,
            ["b", "c"],
            "the first dataChange file of each tuple, in order"
        );
        assert_eq!(w.num_data_adds, 3);
    }
}
