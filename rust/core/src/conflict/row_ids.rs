//! §4 rule 5 by row ids: on a table whose rows keep their ids (`delta.enableRowTracking=true`),
//! a compaction that recorded no provenance (delta-spark's or Databricks's OPTIMIZE, any Z-order)
//! still wrote every live row of its inputs with the row's id (the materialized row-id column,
//! else the output's `baseRowId` plus the row's position). The rows this transaction changed or
//! read in a compacted input are looked up by id in the compaction's outputs and its changes
//! move there, as they move through a provenance tag.

use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, HashMap, HashSet};

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, Int64Array};

use crate::data_file;
use crate::dv::DeletionBitmap;
use crate::error::Result;
use crate::log::actions::{AddFile, PartitionValues, RemoveFile};
use crate::row_tracking;
use crate::rule::{Fallback, Rule};
use crate::storage::Location;

use super::checker::TxnView;
use super::rows::{data_path, live_rows, physical_rows};
use super::staged::{
    fallback, or_fallback, read_dv, removed_file, DvChange, Ours, Rebase, RowContext, Staged, Why,
};
use super::WinningCommit;

/// The materialized row-id column of the table the transaction read, when its rows keep their
/// ids (row tracking enabled and the column named).
pub(super) fn column<'a>(t: &TxnView<'a>) -> Option<&'a str> {
    let config = &t.read_snapshot?.metadata().configuration;
    row_tracking::enabled(config)
        .then(|| config.get(row_tracking::MATERIALIZED_ID))
        .flatten()
        .map(String::as_str)
}

/// Whether the winner's removal of a file is one to follow by row ids: a compaction's
/// (dataChange=false, not re-added with a DV) that wrote outputs.
pub(super) fn followable(w: &WinningCommit, r: &RemoveFile, readded: bool) -> bool {
    !r.data_change && !readded && w.adds.iter().any(|a| !a.data_change)
}

/// The row ids of a file's physical rows, by the core's one rule ([`row_tracking::row_ids`]):
/// the materialized id where the file has one, else `base` plus the position (`None` where
/// neither is known). Computed for the positions asked, so a file without materialized ids
/// costs its footer only.
struct RowIds {
    materialized: Option<Int64Array>,
    base: Option<i64>,
    rows: u64,
}

impl RowIds {
    fn at(&self, positions: &[u64]) -> Result<Vec<Option<i64>>> {
        let inside: Vec<u64> = positions.iter().map(|&p| p.min(self.rows)).collect();
        let gathered = self.materialized.as_ref().map(|a| {
            inside
                .iter()
                .map(|&p| {
                    (p < a.len() as u64 && a.is_valid(p as usize)).then(|| a.value(p as usize))
                })
                .collect::<Int64Array>()
        });
        let ids = row_tracking::row_ids(gathered.as_ref(), self.base, &inside)?;
        Ok(positions
            .iter()
            .enumerate()
            .map(|(i, &p)| (p < self.rows && ids.is_valid(i)).then(|| ids.value(i)))
            .collect())
    }
}

fn ids_of(root: &Location, file: &AddFile, base: Option<i64>, column: &str) -> Result<RowIds> {
    let read = data_file::read_columns(&data_path(root, file)?, &[(column, None)])?;
    let materialized = read
        .arrays
        .into_iter()
        .next()
        .flatten()
        .and_then(|a| a.as_primitive_opt::<Int64Type>().cloned());
    Ok(RowIds {
        materialized,
        base,
        rows: read.rows,
    })
}

/// The rows at `positions` of `file`, by id, into `wanted` (id → `tag` and position); a row
/// without an id is the reason row-level resolution cannot follow it.
fn want<T: Copy>(
    ids: &RowIds,
    positions: &DeletionBitmap,
    tag: T,
    path: &str,
    wanted: &mut HashMap<i64, (T, u64)>,
) -> std::result::Result<(), Why> {
    let ps: Vec<u64> = positions.0.iter().collect();
    let found = ids
        .at(&ps)
        .map_err(|e| (Fallback::Unreadable, e.to_string()))?;
    for (p, id) in ps.into_iter().zip(found) {
        let Some(id) = id else {
            return Err((
                Fallback::NoProvenance,
                format!("row {p} of {path} has no row id (no baseRowId, no materialized id)"),
            ));
        };
        if wanted.insert(id, (tag, p)).is_some() {
            return Err((
                Fallback::NoProvenance,
                format!("row id {id} appears twice among the compacted rows"),
            ));
        }
    }
    Ok(())
}

/// One found row: its tag and position where it was wanted, the output holding it (index into
/// `outputs`) and its position there.
type Found<T> = (T, u64, usize, u64);

/// Scan `outputs` for the `wanted` ids (removing each one found), reading each output's row ids
/// once and stopping when all are found.
fn find<T: Copy>(
    root: &Location,
    outputs: &[&AddFile],
    column: &str,
    wanted: &mut HashMap<i64, (T, u64)>,
) -> Result<Vec<Found<T>>> {
    let mut found = Vec::with_capacity(wanted.len());
    for (o, out) in outputs.iter().enumerate() {
        if wanted.is_empty() {
            break;
        }
        let ids = ids_of(root, out, out.base_row_id(), column)?;
        let all: Vec<u64> = (0..ids.rows).collect();
        let of_all = ids.at(&all)?;
        for (q, id) in all.into_iter().zip(of_all) {
            if let Some((tag, p)) = id.and_then(|id| wanted.remove(&id)) {
                found.push((tag, p, o, q));
            }
        }
    }
    Ok(found)
}

/// One compacted input: its remove, its partition, the positions this transaction changes in it
/// (relative to the deletion vector the compaction read it with), whether it read the file, and
/// where each changed row went: (output index, position in the output).
struct Input<'r> {
    r: &'r RemoveFile,
    partition: PartitionValues,
    changed: DeletionBitmap,
    read: bool,
    found: Vec<(usize, u64)>,
}

/// Follow the rows of `removed` (inputs of the winner's compaction) by id onto its outputs and
/// rebase this transaction's changes there. Conflicts (file level, §4 rule 6) when a row cannot
/// be found, or was deleted in the output.
pub(super) fn follow(
    t: &TxnView,
    ours: &Ours,
    next: &mut Rebase,
    w: &WinningCommit,
    removed: &[&RemoveFile],
    column: &str,
    cx: &RowContext,
) -> Result<Vec<(Rule, String)>> {
    let st = ours.st;
    let mut inputs: Vec<Input> = Vec::with_capacity(removed.len());
    // Row id → (input, position): every row to find.
    let mut wanted: HashMap<i64, (usize, u64)> = HashMap::new();
    for (i, r) in removed.iter().copied().enumerate() {
        let path: &str = &r.path;
        let rule = if ours.changes_file(path) {
            Rule::DeleteDelete
        } else {
            Rule::DeleteRead
        };
        let fb = |why: Why| fallback(t, w, r, rule, why);
        let file = removed_file(t, r).ok_or_else(|| {
            fb((
                Fallback::Unreadable,
                format!("{path} is not a file of the snapshot this transaction read"),
            ))
        })?;
        let base_dv = or_fallback(read_dv(cx.root, r.deletion_vector.as_deref())).map_err(fb)?;
        let changed = if let Some(ch) = st.dv.get(path) {
            DeletionBitmap(&ch.rows.0 - &base_dv.0)
        } else if ours.deletes(path) {
            let n = or_fallback(physical_rows(cx.root, &file)).map_err(fb)?;
            live_rows(n, &base_dv)
        } else {
            DeletionBitmap::default()
        };
        // Only the changed rows are looked up: rows merely read are unchanged by a compaction
        // (dataChange=false), and the read moves to every output of the file's partition.
        if !changed.is_empty() {
            let base = file.base_row_id().or(r.base_row_id);
            let ids = or_fallback(ids_of(cx.root, &file, base, column)).map_err(fb)?;
            want(&ids, &changed, i, path, &mut wanted).map_err(fb)?;
        }
        inputs.push(Input {
            r,
            partition: file.partition_values.clone(),
            changed,
            read: st.read.whole_table || st.read.files.contains(path),
            found: Vec::new(),
        });
    }
    let gone: HashSet<&str> = w.removes.iter().map(|r| &*r.path).collect();
    let outputs: Vec<&AddFile> = w
        .adds
        .iter()
        .filter(|a| !a.data_change && !gone.contains(&*a.path))
        .collect();
    let first_input = inputs[0].r;
    let first = |why: Why| fallback(t, w, first_input, Rule::DeleteRead, why);
    let found = or_fallback(find(cx.root, &outputs, column, &mut wanted)).map_err(first)?;
    let mut output_dvs: HashMap<usize, DeletionBitmap> = HashMap::new();
    for (i, p, o, q) in found {
        let out = outputs[o];
        let dv = match output_dvs.entry(o) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => e.insert(
                or_fallback(read_dv(cx.root, out.deletion_vector.as_deref())).map_err(first)?,
            ),
        };
        if dv.0.contains(q) {
            let r = inputs[i].r;
            return Err(fallback(
                t,
                w,
                r,
                Rule::DeleteDelete,
                (
                    Fallback::NoProvenance,
                    format!(
                        "row {p} of {} is deleted in the compaction's output {}",
                        r.path, out.path
                    ),
                ),
            ));
        }
        inputs[i].found.push((o, q));
    }
    if let Some(&(i, _)) = wanted.values().next() {
        let missing = wanted.values().filter(|(j, _)| *j == i).count();
        let r = inputs[i].r;
        let rule = if ours.changes_file(&r.path) {
            Rule::DeleteDelete
        } else {
            Rule::DeleteRead
        };
        return Err(fallback(
            t,
            w,
            r,
            rule,
            (
                Fallback::NoProvenance,
                format!(
                    "{missing} of the rows of {} were not found by row id in the concurrent compaction's {} output file(s)",
                    r.path,
                    outputs.len()
                ),
            ),
        ));
    }
    let mut notes = Vec::with_capacity(inputs.len());
    let s = next.edit();
    // This transaction's deletes of the inputs become DVs on the outputs (one pass over removes).
    let deleting: HashSet<&str> = inputs
        .iter()
        .filter(|x| !x.changed.is_empty())
        .map(|x| &*x.r.path)
        .collect();
    s.removes
        .retain(|x| !(x.data_change && deleting.contains(&*x.path)));
    for input in &inputs {
        let path: &str = &input.r.path;
        let mut onto: BTreeSet<&str> = BTreeSet::new();
        if !input.changed.is_empty() {
            s.dv.remove(path);
        }
        for &(o, q) in &input.found {
            let out = outputs[o];
            onto.insert(&out.path);
            let e =
                s.dv.entry(out.path.as_ref().into())
                    .or_insert_with(|| DvChange {
                        base: out.clone(),
                        rows: DeletionBitmap::default(),
                    });
            e.rows.0.insert(q);
        }
        let mut also_read = 0;
        if input.read {
            for out in outputs
                .iter()
                .filter(|o| o.partition_values == input.partition)
            {
                also_read += 1;
                s.read.files.insert(out.path.as_ref().into());
            }
        }
        let onto: Vec<&str> = onto.into_iter().collect();
        let moved = if onto.is_empty() {
            String::new()
        } else {
            format!(
                "; the {} row(s) this transaction changes there were found by row id in {}",
                input.changed.len(),
                onto.join(", ")
            )
        };
        let read = if input.read {
            format!("; it reads the {also_read} output file(s) of that partition instead")
        } else {
            String::new()
        };
        notes.push((
            Rule::PassFollowedByRowId,
            format!(
                "it compacted {path} without row provenance (row tracking keeps ids){moved}{read}"
            ),
        ));
    }
    Ok(notes)
}

/// This compaction recorded no provenance (a Z-order) and lost to DML on inputs it rewrote: the
/// rows the winner deleted (`carried`: its removes, and the files it re-added with a larger DV)
/// are found by id in this compaction's outputs and stay deleted there. The caller replaces the
/// compaction's removes of those inputs.
pub(super) fn carry(
    t: &TxnView,
    st: &Staged,
    next: &mut Rebase,
    w: &WinningCommit,
    carried: &[(&RemoveFile, Option<&AddFile>)],
    column: &str,
    cx: &RowContext,
) -> Result<Vec<(Rule, String)>> {
    // Row id → (input, position): every row the winner deleted.
    let mut wanted: HashMap<i64, (usize, u64)> = HashMap::new();
    let mut gone_of: Vec<u64> = Vec::with_capacity(carried.len());
    for (i, (r, readded)) in carried.iter().enumerate() {
        let path: &str = &r.path;
        let fb = |why: Why| fallback(t, w, r, Rule::DeleteRead, why);
        let Some(file) = t.read_snapshot.and_then(|s| s.file(path)) else {
            return Err(fb((
                Fallback::Unreadable,
                format!("{path} is not a file of the snapshot this compaction read"),
            )));
        };
        let base_dv = or_fallback(read_dv(cx.root, file.deletion_vector.as_deref())).map_err(fb)?;
        let gone = match readded {
            Some(a) => {
                let new =
                    or_fallback(read_dv(cx.root, a.deletion_vector.as_deref())).map_err(fb)?;
                DeletionBitmap(&new.0 - &base_dv.0)
            }
            None => {
                let n = or_fallback(physical_rows(cx.root, file)).map_err(fb)?;
                live_rows(n, &base_dv)
            }
        };
        let ids = or_fallback(ids_of(cx.root, file, file.base_row_id(), column)).map_err(fb)?;
        want(&ids, &gone, i, path, &mut wanted).map_err(fb)?;
        gone_of.push(gone.len());
    }
    let outputs: Vec<&AddFile> = st.adds.iter().filter(|a| !a.data_change).collect();
    let first = |why: Why| fallback(t, w, carried[0].0, Rule::DeleteRead, why);
    let hits = or_fallback(find(cx.root, &outputs, column, &mut wanted)).map_err(first)?;
    let mut found: HashMap<Box<str>, DeletionBitmap> = HashMap::new();
    for (_, _, o, q) in hits {
        found
            .entry(outputs[o].path.as_ref().into())
            .or_default()
            .0
            .insert(q);
    }
    if let Some(&(i, _)) = wanted.values().next() {
        let r = carried[i].0;
        return Err(fallback(
            t,
            w,
            r,
            Rule::DeleteRead,
            (
                Fallback::NoProvenance,
                format!(
                    "rows the winner deleted in {} were not found by row id in this compaction's outputs",
                    r.path
                ),
            ),
        ));
    }
    let s = next.edit();
    for (out, rows) in found {
        let e = s.own_dvs.entry(out).or_default();
        *e = e.union(&rows);
    }
    Ok(carried
        .iter()
        .zip(gone_of)
        .map(|((r, _), n)| {
            (
                Rule::PassCompactionCarries,
                format!(
                    "it deleted {n} rows of {}, which this compaction carries to its outputs (found by row id); they stay deleted there",
                    r.path
                ),
            )
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{ArrayRef, RecordBatch};
    use std::sync::Arc;

    fn file(dir: &std::path::Path, name: &str, ids: Option<Vec<Option<i64>>>, n: usize) -> AddFile {
        let mut cols: Vec<(&str, ArrayRef)> = vec![(
            "x",
            Arc::new(Int64Array::from((0..n as i64).collect::<Vec<_>>())) as ArrayRef,
        )];
        if let Some(ids) = ids {
            cols.push(("_row-id-col", Arc::new(Int64Array::from(ids)) as ArrayRef));
        }
        let batch = RecordBatch::try_from_iter(cols).unwrap();
        let f = std::fs::File::create(dir.join(name)).unwrap();
        let mut w = parquet::arrow::ArrowWriter::try_new(f, batch.schema(), None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        let line = serde_json::json!({"add": {"path": name, "partitionValues": {}, "size": 1,
            "modificationTime": 1, "dataChange": false}});
        let actions = crate::parse_actions(line.to_string().as_bytes(), "test", Some(0)).unwrap();
        actions.adds.into_iter().next().unwrap()
    }

    /// protocol-notes §6: a row's id is its materialized one, else baseRowId + position; with
    /// neither it is unknown (the caller falls back to file level).
    #[test]
    fn ids_are_materialized_else_base_plus_position() {
        let dir = tempfile::tempdir().unwrap();
        let root = Location::local(dir.path());
        let plain = file(dir.path(), "a.parquet", None, 3);
        let all = |f: &AddFile, base| {
            let ids = ids_of(&root, f, base, "_row-id-col").unwrap();
            ids.at(&(0..=ids.rows).collect::<Vec<_>>()).unwrap()
        };
        // (one past the last row: no id)
        assert_eq!(all(&plain, Some(10)), [Some(10), Some(11), Some(12), None]);
        assert_eq!(all(&plain, None), [None, None, None, None]);
        let copied = file(
            dir.path(),
            "b.parquet",
            Some(vec![Some(7), None, Some(2)]),
            3,
        );
        assert_eq!(all(&copied, Some(20)), [Some(7), Some(21), Some(2), None]);
        assert_eq!(all(&copied, None), [Some(7), None, Some(2), None]);
    }
}
