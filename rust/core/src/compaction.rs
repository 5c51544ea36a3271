//! OPTIMIZE's bin-packing: which live files are compacted together.

use std::collections::HashMap;

use crate::error::Result;
use crate::log::actions::AddFile;
use crate::snapshot::Snapshot;

/// The bins of an OPTIMIZE with target file size `target` bytes, as indices into
/// [`Snapshot::files`], over the files at `candidates` (all when None). Per partition (in order of
/// first appearance), the small files (below `target`) and the files with a deletion vector are
/// packed in order into bins that close once they reach `target` bytes. A bin of one file without
/// a deletion vector is left out: rewriting it changes nothing. An index out of range is an
/// error.
pub fn plan_bins(
    snap: &Snapshot,
    candidates: Option<&[usize]>,
    target: i64,
) -> Result<Vec<Vec<usize>>> {
    let files = snap.files();
    if let Some(c) = candidates {
        snap.check_indices(c)?;
    }
    let candidates: Box<dyn Iterator<Item = usize>> = match candidates {
        Some(c) => Box::new(c.iter().copied()),
        None => Box::new(0..files.len()),
    };
    // Partitions in order of first appearance among all candidates, keyed by the raw values in
    // partition-column order (the log's own order may differ between writers); a shared tuple is
    // keyed once.
    let mut by_tuple: HashMap<usize, usize> = HashMap::new();
    let mut by_values: HashMap<Vec<Option<&str>>, usize> = HashMap::new();
    let mut members: Vec<Vec<usize>> = Vec::new();
    for i in candidates {
        let f = &files[i];
        let g = *by_tuple.entry(f.partition_values.id()).or_insert_with(|| {
            let key = snap
                .partition_columns
                .iter()
                .map(|c| snap.raw_partition_value(f, c))
                .collect();
            *by_values.entry(key).or_insert_with(|| {
                members.push(Vec::new());
                members.len() - 1
            })
        });
        if f.size < target || has_dv(f) {
            members[g].push(i);
        }
    }
    let mut bins = Vec::new();
    for group in members {
        let (mut current, mut size) = (Vec::new(), 0i64);
        for i in group {
            current.push(i);
            size = size.saturating_add(files[i].size);
            if size >= target {
                bins.push(std::mem::take(&mut current));
                size = 0;
            }
        }
        if !current.is_empty() {
            bins.push(current);
        }
    }
    bins.retain(|b| b.len() > 1 || has_dv(&files[b[0]]));
    Ok(bins)
}

fn has_dv(f: &AddFile) -> bool {
    f.deletion_vector
        .as_ref()
        .is_some_and(|d| d.cardinality > 0)
}
