//! Action reconciliation (protocol-notes.md §3): the logical file key is `(path, dvUniqueId)`, the
//! newest action per key wins, and the live set holds at most one add per path, so it is indexed
//! by path alone.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::OnceLock;

use hashbrown::{DefaultHashBuilder, HashTable};

use super::actions::*;

/// Adds per batch above which path hashes are computed on all cores before the (sequential)
/// index inserts.
const PARALLEL_HASH_ABOVE: usize = 20_000;

/// One index slot: 32 bits of the path's hash (so growing the table never re-reads a path, which
/// would be a cache miss per file) and the file's position in `files`.
#[derive(Debug, Clone, Copy)]
struct Slot {
    tag: u32,
    file: u32,
}

/// One seed per process, so hashes computed on worker threads match the index's.
fn path_hash(path: &str) -> u32 {
    static HASHER: OnceLock<DefaultHashBuilder> = OnceLock::new();
    (HASHER
        .get_or_init(DefaultHashBuilder::default)
        .hash_one(path)
        >> 32) as u32
}

/// Spread a 32-bit tag over the 64 bits hashbrown uses (low bits pick the bucket, the top 7 are
/// the control byte).
fn table_hash(tag: u32) -> u64 {
    (tag as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

#[derive(Debug, Clone, Default)]
pub struct LogState {
    pub version: i64,
    pub protocol: Option<Protocol>,
    pub metadata: Option<Metadata>,
    /// Live files, in no particular order.
    pub files: Vec<AddFile>,
    index: HashTable<Slot>,
    /// Tombstones keyed by `(path, dvUniqueId)`.
    pub tombstones: HashMap<(Box<str>, Option<String>), RemoveFile>,
    pub txns: HashMap<String, Txn>,
    pub domains: HashMap<String, DomainMetadata>,
    /// commitInfo JSON of `version` (None when it came from a checkpoint or had none).
    pub commit_info: Option<Box<str>>,
    pub checkpoint_version: Option<i64>,
}

/// A process about to exit leaks its live-file sets instead of dropping them: the OS takes the
/// memory back at once, while dropping a million files one by one is a noticeable part of a short
/// job (BENCHMARKS.md, issue 45). Nothing else is skipped.
impl Drop for LogState {
    fn drop(&mut self) {
        if crate::storage::process_exiting() {
            std::mem::forget(std::mem::take(&mut self.files));
            std::mem::forget(std::mem::take(&mut self.index));
            std::mem::forget(std::mem::take(&mut self.tombstones));
        }
    }
}

impl LogState {
    pub fn new() -> Self {
        let mut state = LogState::default();
        state.version = -1;
        state
    }

    /// Apply the actions of one checkpoint (the state must be empty).
    pub fn apply_checkpoint(&mut self, version: i64, actions: Actions) {
        self.apply(actions);
        self.version = version;
        self.checkpoint_version = Some(version);
        self.commit_info = None;
    }

    /// Apply the actions of commit `version` (must be the next version).
    pub fn apply_commit(&mut self, version: i64, actions: Actions) {
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

    /// Apply a commit's (or checkpoint's) actions: its adds first, then the rest in log order.
    /// Within one commit the order does not matter: a valid commit never adds and removes the same
    /// `(path, dvUniqueId)`, and an add replacing a live file by path (a new DV) and a remove of
    /// the old key give the same state either way.
    pub fn apply(&mut self, actions: Actions) {
        self.add_all(actions.adds);
        for action in actions.other {
            match action {
                Action::Add(a) => self.add_all(vec![a]),
                Action::Remove(r) => self.remove(r),
                Action::Metadata(m) => self.metadata = Some(*m),
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
                Action::Sidecar(_) | Action::CheckpointMetadata | Action::Cdc(_) => {}
            }
        }
    }

    /// Append `adds` to the live files in one move, then index them. An add whose path is already
    /// live replaces that file (the older entry is dropped afterwards).
    fn add_all(&mut self, mut adds: Vec<AddFile>) {
        if adds.is_empty() {
            return;
        }
        if !self.tombstones.is_empty() {
            for a in &adds {
                self.tombstones
                    .remove(&(a.path.as_ref().into(), a.dv_unique_id()));
            }
        }
        let tags = path_tags(&adds);
        let base = self.files.len();
        if base == 0 {
            self.files = adds;
        } else {
            self.files.append(&mut adds);
        }
        assert!(
            self.files.len() <= u32::MAX as usize,
            "more than 4 billion live files"
        );
        self.index.reserve(tags.len(), |s| table_hash(s.tag));
        let mut replaced = Vec::new();
        for (k, tag) in tags.into_iter().enumerate() {
            let i = base + k;
            let files = &self.files;
            match self.index.find_mut(table_hash(tag), |s| {
                s.tag == tag && files[s.file as usize].path == files[i].path
            }) {
                Some(slot) => {
                    replaced.push(slot.file as usize);
                    slot.file = i as u32;
                }
                None => {
                    self.index.insert_unique(
                        table_hash(tag),
                        Slot {
                            tag,
                            file: i as u32,
                        },
                        |s| table_hash(s.tag),
                    );
                }
            }
        }
        // Highest first, so the last file (moved into each hole) is never one of them.
        replaced.sort_unstable();
        for i in replaced.into_iter().rev() {
            self.swap_remove(i);
        }
    }

    fn remove(&mut self, remove: RemoveFile) {
        let dv_id = remove.dv_unique_id();
        let tag = path_hash(&remove.path);
        let files = &self.files;
        let found = self.index.find_entry(table_hash(tag), |s| {
            s.tag == tag && *files[s.file as usize].path == *remove.path
        });
        if let Ok(entry) = found {
            let i = entry.get().file as usize;
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
            let tag = path_hash(&self.files[last].path);
            if let Some(slot) = self
                .index
                .find_mut(table_hash(tag), |s| s.file as usize == last)
            {
                slot.file = i as u32;
            }
        }
        self.files.swap_remove(i);
    }

    /// The live file with this log path.
    pub fn file_index(&self, path: &str) -> Option<usize> {
        let tag = path_hash(path);
        self.index
            .find(table_hash(tag), |s| {
                s.tag == tag && &*self.files[s.file as usize].path == path
            })
            .map(|s| s.file as usize)
    }
}

/// The path hash of every add, on all cores for large batches.
fn path_tags(adds: &[AddFile]) -> Vec<u32> {
    let tag = |a: &AddFile| path_hash(&a.path);
    if adds.len() <= PARALLEL_HASH_ABOVE {
        adds.iter().map(tag).collect()
    } else {
        crate::parallel::map(adds, tag)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dv::DeletionVectorDescriptor;

    fn add(path: &str, dv: Option<&str>) -> Action {
        Action::Add(AddFile {
            path: path.into(),
            partition_values: Default::default(),
            size: 1,
            modification_time: 0,
            data_change: true,
            stats: None,
            deletion_vector: dv.map(|d| Box::new(dv_desc(d))),
            extra: None,
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
            s.apply_commit(0, vec![add("p", None), add("q", None)].into());
            let mut c1 = vec![add("p", Some("a")), remove("p", None)];
            let mut c2 = vec![add("p", Some("b")), remove("p", Some("a"))];
            if flip {
                c1.reverse();
                c2.reverse();
            }
            s.apply_commit(1, c1.into());
            s.apply_commit(2, c2.into());
            assert_eq!(s.files.len(), 2);
            let p = &s.files[s.file_index("p").unwrap()];
            assert_eq!(p.dv_unique_id().as_deref(), Some("ib"));
            assert_eq!(s.tombstones.len(), 2);
        }
    }

    #[test]
    fn remove_then_readd_and_swap_index() {
        let mut s = LogState::new();
        s.apply_commit(
            0,
            vec![add("a", None), add("b", None), add("c", None)].into(),
        );
        s.apply_commit(1, vec![remove("a", None)].into());
        assert_eq!(s.files.len(), 2);
        assert!(s.file_index("a").is_none());
        assert_eq!(&*s.files[s.file_index("c").unwrap()].path, "c");
        s.apply_commit(2, vec![add("a", None)].into());
        assert!(s.tombstones.is_empty());
        assert_eq!(s.files.len(), 3);
        // A remove with a different DV id does not remove the live file.
        s.apply_commit(3, vec![remove("b", Some("zz"))].into());
        assert!(s.file_index("b").is_some());
    }

    #[test]
    fn bulk_adds_replace_by_path_and_keep_the_index_consistent() {
        let mut s = LogState::new();
        // A duplicate inside one batch keeps the later entry; the index stays one slot per path.
        let mut first = add("a", None);
        if let Action::Add(f) = &mut first {
            f.size = 7;
        }
        s.apply_commit(
            0,
            vec![first, add("b", None), add("a", Some("x")), add("c", None)].into(),
        );
        assert_eq!(s.files.len(), 3);
        assert_eq!(
            s.files[s.file_index("a").unwrap()]
                .dv_unique_id()
                .as_deref(),
            Some("ix")
        );
        // A later commit re-adding live paths replaces them in place of duplicates.
        s.apply_commit(
            1,
            vec![add("c", Some("y")), add("b", Some("z")), add("d", None)].into(),
        );
        assert_eq!(s.files.len(), 4);
        for (p, dv) in [
            ("a", Some("ix")),
            ("b", Some("iz")),
            ("c", Some("iy")),
            ("d", None),
        ] {
            let i = s.file_index(p).unwrap_or_else(|| panic!("{p} missing"));
            assert_eq!(&*s.files[i].path, p);
            assert_eq!(s.files[i].dv_unique_id().as_deref(), dv);
        }
        s.apply_commit(2, vec![remove("a", Some("x")), remove("d", None)].into());
        let mut live: Vec<&str> = s.files.iter().map(|f| &*f.path).collect();
        live.sort();
        assert_eq!(live, ["b", "c"]);
        assert!(s.file_index("a").is_none() && s.file_index("d").is_none());
    }
}
