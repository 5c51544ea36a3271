//! Action reconciliation (protocol-notes.md §3): the logical file key is `(path, dvUniqueId)`, the
//! newest action per key wins, and the live set holds at most one add per path, so it is indexed
//! by path alone.

use std::collections::HashMap;
use std::hash::BuildHasher;

use hashbrown::{DefaultHashBuilder, HashTable};

use super::actions::*;

#[derive(Debug, Clone, Default)]
pub struct LogState {
    pub version: i64,
    pub protocol: Option<Protocol>,
    pub metadata: Option<Metadata>,
    /// Live files, in no particular order.
    pub files: Vec<AddFile>,
    index: HashTable<usize>,
    hasher: DefaultHashBuilder,
    /// Tombstones keyed by `(path, dvUniqueId)`.
    pub tombstones: HashMap<(Box<str>, Option<String>), RemoveFile>,
    pub txns: HashMap<String, Txn>,
    pub domains: HashMap<String, DomainMetadata>,
    /// commitInfo JSON of `version` (None when it came from a checkpoint or had none).
    pub commit_info: Option<Box<str>>,
    pub checkpoint_version: Option<i64>,
}

impl LogState {
    pub fn new() -> Self {
        LogState { version: -1, ..Default::default() }
    }

    /// Apply the actions of one checkpoint (the state must be empty).
    pub fn apply_checkpoint(&mut self, version: i64, actions: Vec<Action>) {
        self.apply(actions);
        self.version = version;
        self.checkpoint_version = Some(version);
        self.commit_info = None;
    }

    /// Apply the actions of commit `version` (must be the next version).
    pub fn apply_commit(&mut self, version: i64, actions: Vec<Action>) {
        self.begin_commit();
        self.apply(actions);
        self.end_commit(version);
    }

    /// A commit applied in parts (large commits are parsed in windows): `begin_commit`, any
    /// number of `apply` calls (order within a commit does not matter), then `end_commit`.
    pub fn begin_commit(&mut self) {
        self.commit_info = None;
    }

    pub fn end_commit(&mut self, version: i64) {
        self.version = version;
    }

    pub fn apply(&mut self, actions: Vec<Action>) {
        // Size the index once: growing it rehashes every path (a cache miss each).
        let adds = actions.iter().filter(|a| matches!(a, Action::Add(_))).count();
        self.files.reserve(adds);
        let (files, hasher) = (&self.files, &self.hasher);
        self.index.reserve(adds, |&i| hasher.hash_one(&*files[i].path));
        for action in actions {
            match action {
                Action::Add(a) => self.add(a),
                Action::Remove(r) => self.remove(r),
                Action::Metadata(m) => self.metadata = Some(m),
                Action::Protocol(p) => self.protocol = Some(p),
                Action::Txn(t) => {
                    self.txns.insert(t.app_id.clone(), t);
                }
                Action::Domain(d) => {
                    if d.removed {
                        self.domains.remove(&d.domain);
                    } else {
                        self.domains.insert(d.domain.clone(), d);
                    }
                }
                Action::CommitInfo(c) => self.commit_info = Some(c),
                Action::Sidecar(_) | Action::CheckpointMetadata => {}
            }
        }
    }

    fn add(&mut self, add: AddFile) {
        if !self.tombstones.is_empty() {
            self.tombstones.remove(&(add.path.clone(), add.dv_unique_id()));
        }
        let hash = self.hasher.hash_one(&*add.path);
        let files = &mut self.files;
        match self.index.find(hash, |&i| files[i].path == add.path) {
            Some(&i) => files[i] = add,
            None => {
                files.push(add);
                let hasher = &self.hasher;
                self.index.insert_unique(hash, files.len() - 1, |&i| hasher.hash_one(&*files[i].path));
            }
        }
    }

    fn remove(&mut self, remove: RemoveFile) {
        let dv_id = remove.dv_unique_id();
        let hash = self.hasher.hash_one(&*remove.path);
        let files = &self.files;
        if let Ok(entry) = self.index.find_entry(hash, |&i| files[i].path == remove.path) {
            let i = *entry.get();
            if files[i].dv_unique_id() == dv_id {
                entry.remove();
                self.swap_remove(i);
            }
        }
        self.tombstones.insert((remove.path.clone(), dv_id), remove);
    }

    /// Remove file `i` by moving the last file into its slot and re-pointing the index.
    fn swap_remove(&mut self, i: usize) {
        let last = self.files.len() - 1;
        if i != last {
            let hash = self.hasher.hash_one(&*self.files[last].path);
            let files = &self.files;
            if let Some(slot) = self.index.find_mut(hash, |&j| j == last && files[j].path == files[last].path) {
                *slot = i;
            }
        }
        self.files.swap_remove(i);
    }

    /// The live file with this log path.
    pub fn file_index(&self, path: &str) -> Option<usize> {
        let hash = self.hasher.hash_one(path);
        self.index.find(hash, |&i| &*self.files[i].path == path).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dv::DeletionVectorDescriptor;

    fn add(path: &str, dv: Option<&str>) -> Action {
        Action::Add(AddFile {
            path: path.into(),
            partition_values: vec![],
            size: 1,
            modification_time: 0,
            data_change: true,
            stats: None,
            tags: None,
            deletion_vector: dv.map(|d| Box::new(dv_desc(d))),
            base_row_id: None,
            default_row_commit_version: None,
            clustering_provider: None,
        })
    }

    fn dv_desc(id: &str) -> DeletionVectorDescriptor {
        DeletionVectorDescriptor {
            storage_type: "i".into(),
            path_or_inline_dv: id.into(),
            offset: None,
            size_in_bytes: 1,
            cardinality: 1,
            max_row_index: None,
        }
    }

    fn remove(path: &str, dv: Option<&str>) -> Action {
        Action::Remove(RemoveFile {
            path: path.into(),
            deletion_timestamp: None,
            data_change: true,
            extended_file_metadata: None,
            partition_values: None,
            size: None,
            deletion_vector: dv.map(|d| Box::new(dv_desc(d))),
            base_row_id: None,
            default_row_commit_version: None,
        })
    }

    #[test]
    fn dv_key_cases_in_either_order() {
        // Mirrors golden log-replay-dv-key-cases: each DELETE is add(p, new) + remove(p, old).
        for flip in [false, true] {
            let mut s = LogState::new();
            s.apply_commit(0, vec![add("p", None), add("q", None)]);
            let mut c1 = vec![add("p", Some("a")), remove("p", None)];
            let mut c2 = vec![add("p", Some("b")), remove("p", Some("a"))];
            if flip {
                c1.reverse();
                c2.reverse();
            }
            s.apply_commit(1, c1);
            s.apply_commit(2, c2);
            assert_eq!(s.files.len(), 2);
            let p = &s.files[s.file_index("p").unwrap()];
            assert_eq!(p.dv_unique_id().as_deref(), Some("ib"));
            assert_eq!(s.tombstones.len(), 2);
        }
    }

    #[test]
    fn remove_then_readd_and_swap_index() {
        let mut s = LogState::new();
        s.apply_commit(0, vec![add("a", None), add("b", None), add("c", None)]);
        s.apply_commit(1, vec![remove("a", None)]);
        assert_eq!(s.files.len(), 2);
        assert!(s.file_index("a").is_none());
        assert_eq!(&*s.files[s.file_index("c").unwrap()].path, "c");
        s.apply_commit(2, vec![add("a", None)]);
        assert!(s.tombstones.is_empty());
        assert_eq!(s.files.len(), 3);
        // A remove with a different DV id does not remove the live file.
        s.apply_commit(3, vec![remove("b", Some("zz"))]);
        assert!(s.file_index("b").is_some());
    }
}
