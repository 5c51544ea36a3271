//! Row-level concurrency with deletion vectors (concurrency.md §4). For every file that a winner
//! changed and the transaction read or changed, the decision is made on row positions:
//! W (rows the winner deleted), C (rows the transaction deletes), R (rows matching the
//! transaction's read predicate). Surviving checks rebase the transaction's staged actions: its
//! DV deltas move onto the winner's version of the file, or through compaction provenance onto
//! the compacted output.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use crate::dv::{DeletionBitmap, DeletionVectorDescriptor};
use crate::error::{Error, Result};
use crate::log::actions::{remove_of, AddFile, PartitionValues, RemoveFile};
use crate::predicate::Predicate;

use super::checker::{self, Passed, ReadSet, TxnView};
use super::row_ids;
use super::rows::{compiled, live_rows, matching_rows, physical_rows, ColumnCache};
use super::staged::{
    fallback, fallback_reason, or_fallback, read_dv, removed_file, DvChange, Ours, Rebase,
    RowContext, Staged, Why,
};
use super::WinningCommit;
use crate::error::ConflictKind;
use crate::rule::{Fallback, Rule};

/// `add.tags` key on a compacted output file: the input files it holds, in order, as a JSON list
/// of `[path, liveRows]`. Output row `k` is the k-th live row of the inputs taken in this order
/// (each input's live rows in ascending position), so positions map between inputs and output.
pub const PROVENANCE_TAG: &str = "delta-occ.compactedFrom";

/// What checking one winner decided: why it passed, the rebased actions (`None` when nothing
/// changed), and how many file pairs were resolved at row level.
pub struct Verdict {
    pub passed: Passed,
    pub rebased: Option<Staged>,
    pub rows_resolved: u64,
}

/// A compaction output and the inputs it holds.
struct Bin<'a> {
    output: &'a AddFile,
    inputs: Vec<(String, u64)>,
    /// Per input, the DV the compaction read it with, when the tag records it (a third element:
    /// the descriptor, or null for no DV). Older tags have two elements; then it is unknown.
    read_dvs: Vec<Option<Option<DeletionVectorDescriptor>>>,
}

type Provenance = (
    Vec<(String, u64)>,
    Vec<Option<Option<DeletionVectorDescriptor>>>,
);

fn provenance(a: &AddFile) -> Option<Provenance> {
    let text = a.tags()?.get(PROVENANCE_TAG)?.as_ref()?;
    let entries: Vec<Vec<serde_json::Value>> = serde_json::from_str(text).ok()?;
    let mut inputs = Vec::with_capacity(entries.len());
    let mut read_dvs = Vec::with_capacity(entries.len());
    for e in entries {
        let (path, rows) = (e.first()?.as_str()?, e.get(1)?.as_u64()?);
        inputs.push((decode(path), rows));
        read_dvs.push(match e.get(2) {
            None => None,
            Some(serde_json::Value::Null) => Some(None),
            Some(d) => Some(Some(serde_json::from_value(d.clone()).ok()?)),
        });
    }
    Some((inputs, read_dvs))
}

fn decode(p: &str) -> String {
    percent_encoding::percent_decode_str(p)
        .decode_utf8()
        .map(|c| c.into_owned())
        .unwrap_or_else(|_| p.to_string())
}

/// Input path (decoded) → (bin, index of the input in the bin), for compaction outputs.
fn bins(adds: &[AddFile]) -> (Vec<Bin<'_>>, HashMap<String, (usize, usize)>) {
    let mut out = Vec::new();
    let mut index = HashMap::new();
    for a in adds.iter().filter(|a| !a.data_change) {
        if let Some((inputs, read_dvs)) = provenance(a) {
            for (k, (p, _)) in inputs.iter().enumerate() {
                index.insert(p.clone(), (out.len(), k));
            }
            out.push(Bin {
                output: a,
                inputs,
                read_dvs,
            });
        }
    }
    (out, index)
}

/// The DV a winner's compaction had applied to input `path` when it read it. Its provenance counts
/// the rows it wrote from the input; the input's DV can only have grown since, because a
/// compaction that rebased over DML carries those deletions in its output's DV and removes the
/// input with the newer DV (`latest`). Known exactly when the count is the physical row count (no
/// DV), or that minus `latest` or minus the DV in the snapshot this transaction read; otherwise
/// the rows cannot be matched and the caller falls back to file level.
fn compacted_dv(
    t: &TxnView,
    cx: &RowContext,
    path: &str,
    written: u64,
    latest: &DeletionBitmap,
    read: Option<&Option<DeletionVectorDescriptor>>,
) -> std::result::Result<DeletionBitmap, Why> {
    // The tag names the DV the compaction read: exact, whatever happened to the file since.
    if let Some(read) = read {
        let dv = or_fallback(read_dv(cx.root, read.as_ref()))?;
        if dv.0.is_subset(&latest.0) {
            return Ok(dv);
        }
    }
    let Some(file) = t.read_snapshot.and_then(|s| s.file(path)) else {
        return Err((
            Fallback::Unreadable,
            format!("{path} is not a file of the snapshot this transaction read"),
        ));
    };
    let physical = or_fallback(super::rows::physical_rows(cx.root, file))?;
    if written == physical {
        return Ok(DeletionBitmap::default());
    }
    if written + latest.len() == physical {
        return Ok(latest.clone());
    }
    let ours = or_fallback(read_dv(cx.root, file.deletion_vector.as_deref()))?;
    if written + ours.len() == physical && ours.0.is_subset(&latest.0) {
        return Ok(ours);
    }
    Err((
        Fallback::NoProvenance,
        format!(
            "the concurrent compaction wrote {written} rows of {path}, which has {physical} rows and {} deleted now; \
             the rows it left out cannot be identified",
            latest.len()
        ),
    ))
}

/// Map rows of input `k` of a bin (positions in that input, `input_dv` its DV when compacted)
/// to positions in the bin's output.
fn remap(bin: &Bin, k: usize, input_dv: &DeletionBitmap, rows: &DeletionBitmap) -> DeletionBitmap {
    let offset: u64 = bin.inputs[..k].iter().map(|(_, n)| n).sum();
    let mut out = DeletionBitmap::default();
    for p in rows.0.iter().filter(|p| !input_dv.0.contains(*p)) {
        out.0.insert(offset + p - input_dv.0.rank(p));
    }
    out
}

fn unevaluable(preds: &[&Predicate], cache: &ColumnCache) -> Option<Why> {
    preds.iter().find_map(|p| {
        let e = compiled(p, cache).err()?;
        Some((
            Fallback::Predicate,
            format!(
                "the read predicate `{}` cannot be decided on rows ({e})",
                p.text.as_deref().unwrap_or("")
            ),
        ))
    })
}

const OUT_OF_TIME: &str = "the time budget for row-level resolution of this commit attempt ran out";

fn read_predicates(read: &ReadSet) -> Vec<&Predicate> {
    static ALL: std::sync::LazyLock<Predicate> = std::sync::LazyLock::new(Predicate::all);
    if read.whole_table {
        vec![&*ALL]
    } else {
        read.predicates.iter().collect()
    }
}

/// §3 checks 5–7 replaced by §4 rules 1–5 for one winner.
pub fn check_winner(
    t: &TxnView,
    st: &Staged,
    w: &WinningCommit,
    cx: &RowContext,
) -> Result<Verdict> {
    let mut next = Rebase {
        base: st,
        next: None,
    };
    let mut resolved = 0u64;
    let removed: HashMap<&str, &RemoveFile> = w.removes.iter().map(|r| (&*r.path, r)).collect();
    let readded: HashMap<&str, &AddFile> = w
        .adds
        .iter()
        .filter(|a| removed.contains_key(&*a.path))
        .map(|a| (&*a.path, a))
        .collect();
    let mut notes = vec![if cx.exact {
        appends(t, st, w, cx, &removed)?
    } else {
        checker::check_appends(t, w)?
    }];
    let (w_bins, w_index) = bins(&w.adds);
    let (our_bins, our_index) = bins(&st.adds);
    let mut dropped: Vec<usize> = Vec::new();

    let compaction = st.is_compaction();
    let ours_idx = Ours::new(st);
    let id_column = row_ids::column(t);
    let mut by_id: Vec<&RemoveFile> = Vec::new();
    let mut carried: Vec<(&RemoveFile, Option<&AddFile>)> = Vec::new();
    let mut dropped_parts: Vec<PartitionValues> = Vec::new();
    // Our removes to change, applied in one pass after the loop: per path, the dataChange of the
    // remove to change and what replaces it (None: dropped). Rule 5 makes them: a deleted file
    // the winner compacted (its rows remapped onto the output), and an input of this compaction
    // the winner changed.
    let mut edits: HashMap<&str, (bool, Option<RemoveFile>)> = HashMap::new();
    for r in &w.removes {
        let path: &str = &r.path;
        let key = decode(path);
        // Rule 5: a compaction depends on the files it replaces, not on the others it read to
        // choose its bins (those of a bin it dropped included).
        let replaces = ours_idx.removes(path);
        let we_read =
            (st.read.whole_table || st.read.files.contains(path)) && (!compaction || replaces);
        let ours = our_index
            .get(&key)
            .copied()
            .filter(|_| ours_idx.compacts(path));
        if !we_read && !ours_idx.changes_file(path) && ours.is_none() {
            continue;
        }
        if Instant::now() > cx.deadline {
            return Err(fallback(
                t,
                w,
                r,
                Rule::DeleteRead,
                (Fallback::TimeBudget, OUT_OF_TIME.into()),
            ));
        }
        // Rule 5 for this compaction when it recorded no provenance (a Z-order: one bin per
        // partition, its outputs mixing the inputs' rows).
        if ours.is_none() && compaction && ours_idx.compacts(path) {
            if !r.data_change {
                // Another compaction replaced this input first: the partition's bin is dropped.
                let Some(file) = removed_file(t, r) else {
                    return Err(untagged_compaction(t, w, r));
                };
                if !dropped_parts.contains(&file.partition_values) {
                    dropped_parts.push(file.partition_values);
                }
                continue;
            }
            if id_column.is_some() {
                // DML changed an input: its deletions are carried onto the outputs by row id.
                carried.push((r, readded.get(path).copied()));
                resolved += 1;
                continue;
            }
        }
        // Rule 5: the winner compacted this file.
        if let (false, Some(&(b, k))) = (r.data_change, w_index.get(&key)) {
            let bin = &w_bins[b];
            if let Some((ob, _)) = ours {
                if !dropped.contains(&ob) {
                    dropped.push(ob);
                }
                continue;
            }
            let latest = or_fallback(read_dv(cx.root, r.deletion_vector.as_deref()))
                .map_err(|why| fallback(t, w, r, Rule::DeleteDelete, why))?;
            let input_dv = compacted_dv(
                t,
                cx,
                path,
                bin.inputs[k].1,
                &latest,
                bin.read_dvs[k].as_ref(),
            )
            .map_err(|why| fallback(t, w, r, Rule::DeleteDelete, why))?;
            let s = next.edit();
            let mut moved = s.dv.remove(path).map(|ch| ch.rows).unwrap_or_default();
            if ours_idx.deletes(path) {
                edits.insert(path, (true, None));
                let n = bin.inputs[k].1 + input_dv.len();
                moved = moved.union(&live_rows(n, &input_dv));
            }
            if !moved.is_empty() {
                let mapped = remap(bin, k, &input_dv, &moved);
                let e =
                    s.dv.entry(bin.output.path.as_ref().into())
                        .or_insert_with(|| DvChange {
                            base: bin.output.clone(),
                            rows: DeletionBitmap::default(),
                        });
                e.rows = e.rows.union(&mapped);
                resolved += 1;
            }
            if st.read.files.contains(path) {
                s.read.files.insert(bin.output.path.as_ref().into());
            }
            notes.push((
                Rule::PassRemappedOntoCompaction,
                format!(
                    "it compacted {path}; this transaction's changes were remapped onto {}",
                    bin.output.path
                ),
            ));
            continue;
        }
        // Rule 5: this transaction compacts the file and lost to DML (or to a compaction
        // without provenance).
        if let Some((ob, k)) = ours {
            if !r.data_change {
                if !dropped.contains(&ob) {
                    dropped.push(ob);
                }
                continue;
            }
            let bin = &our_bins[ob];
            // The DV this compaction read (its remove may since carry a winner's newer DV).
            let read_file = t.read_snapshot.and_then(|snap| snap.file(path));
            let Some(read_file) = read_file else {
                return Err(fallback(
                    t,
                    w,
                    r,
                    Rule::DeleteRead,
                    (
                        Fallback::Unreadable,
                        format!("{path} is not a file of the snapshot this compaction read"),
                    ),
                ));
            };
            let base_dv = or_fallback(read_dv(cx.root, read_file.deletion_vector.as_deref()))
                .map_err(|why| fallback(t, w, r, Rule::DeleteRead, why))?;
            let gone = match readded.get(path) {
                Some(a) => {
                    let new = or_fallback(read_dv(cx.root, a.deletion_vector.as_deref()))
                        .map_err(|why| fallback(t, w, r, Rule::DeleteRead, why))?;
                    DeletionBitmap(&new.0 - &base_dv.0)
                }
                None => {
                    let n = bin.inputs[k].1 + base_dv.len();
                    live_rows(n, &base_dv)
                }
            };
            let mapped = remap(bin, k, &base_dv, &gone);
            let s = next.edit();
            let e = s
                .own_dvs
                .entry(bin.output.path.as_ref().into())
                .or_default();
            *e = e.union(&mapped);
            edits.insert(
                path,
                (false, readded.get(path).map(|a| remove_of(a, false))),
            );
            resolved += 1;
            notes.push((Rule::PassCompactionCarries, format!("it deleted {} rows of {path}, which this compaction carries to {}; they stay deleted there", gone.len(), bin.output.path)));
            continue;
        }
        // Rule 5 by row ids: a compaction without provenance on a table whose rows keep ids.
        if id_column.is_some()
            && !ours_idx.compacts(path)
            && row_ids::followable(w, r, readded.contains_key(path))
            && (ours_idx.changes_file(path) || !all_rows_deleted(t, cx, r))
        {
            by_id.push(r);
            resolved += 1;
            continue;
        }
        if !cx.exact {
            checker::check_deletes_of(t, w, std::slice::from_ref(r))?;
            continue;
        }
        notes.push(rows_of_file(
            t,
            &ours_idx,
            &mut next,
            w,
            r,
            readded.get(path).copied(),
            cx,
        )?);
        resolved += 1;
    }
    if let (Some(col), false) = (id_column, by_id.is_empty()) {
        notes.extend(row_ids::follow(
            t, &ours_idx, &mut next, w, &by_id, col, cx,
        )?);
    }
    if let (Some(col), false) = (id_column, carried.is_empty()) {
        notes.extend(row_ids::carry(t, st, &mut next, w, &carried, col, cx)?);
        for (r, readded) in &carried {
            edits.insert(&r.path, (false, readded.map(|a| remove_of(a, false))));
        }
    }
    // The inputs of every dropped bin, so that our removes are filtered in one pass.
    // The inputs and outputs of every dropped bin, so that our actions are filtered in one pass.
    let mut replaced: HashSet<&str> = HashSet::new();
    let mut outputs: HashSet<&str> = HashSet::new();
    for &ob in &dropped {
        let bin = &our_bins[ob];
        replaced.extend(bin.inputs.iter().map(|(p, _)| p.as_str()));
        outputs.insert(&bin.output.path);
        notes.push((
            Rule::PassBinDropped,
            format!(
                "a concurrent compaction already replaced inputs of {}; that bin was dropped",
                bin.output.path
            ),
        ));
    }
    if !outputs.is_empty() {
        let s = next.edit();
        s.adds.retain(|a| !outputs.contains(&*a.path));
        s.own_dvs.retain(|p, _| !outputs.contains(&**p));
        s.dropped_bins += dropped.len() as u64;
    }
    if !edits.is_empty() || !replaced.is_empty() {
        let s = next.edit();
        s.removes = std::mem::take(&mut s.removes)
            .into_iter()
            .filter_map(|x| {
                let edited = matches!(edits.get(&*x.path), Some((dc, _)) if *dc == x.data_change);
                let x = if edited {
                    edits.remove(&*x.path).and_then(|(_, new)| new)?
                } else {
                    x
                };
                let input = !x.data_change
                    && !replaced.is_empty()
                    && replaced.contains(decode(&x.path).as_str());
                (!input).then_some(x)
            })
            .collect();
    }
    if !dropped_parts.is_empty() {
        // The dropped partitions' outputs and inputs (an untagged compaction's bins).
        let s = next.edit();
        let of = |p: Option<&PartitionValues>| p.is_some_and(|p| dropped_parts.contains(p));
        let outputs: HashSet<Box<str>> = s
            .adds
            .iter()
            .filter(|a| !a.data_change && of(Some(&a.partition_values)))
            .map(|a| a.path.as_ref().into())
            .collect();
        s.adds.retain(|a| !outputs.contains(&*a.path));
        s.own_dvs.retain(|p, _| !outputs.contains(p));
        s.removes
            .retain(|x| x.data_change || !of(x.partition_values.as_ref()));
        s.dropped_bins += dropped_parts.len() as u64;
        notes.push((
            Rule::PassBinDropped,
            format!(
                "a concurrent compaction already replaced inputs of this compaction in {} partition(s); their bins were dropped",
                dropped_parts.len()
            ),
        ));
    }
    Ok(Verdict {
        passed: Passed::from_notes(notes),
        rebased: next.next,
        rows_resolved: resolved,
    })
}

/// Both compacted the same file and this compaction (a Z-order: its outputs mix inputs) records
/// no provenance, so its bins cannot be dropped one by one: committing it would copy the file's
/// rows a second time.
fn untagged_compaction(t: &TxnView, w: &WinningCommit, r: &RemoveFile) -> Error {
    fallback(
        t,
        w,
        r,
        Rule::DeleteDelete,
        (
            Fallback::NoProvenance,
            "both compacted this file and this compaction recorded no row provenance".into(),
        ),
    )
}

/// Whether the remove's DV covers every row of its file (false when that cannot be told).
fn all_rows_deleted(t: &TxnView, cx: &RowContext, r: &RemoveFile) -> bool {
    let Some(d) = r.deletion_vector.as_deref() else {
        return false;
    };
    removed_file(t, r)
        .and_then(|f| physical_rows(cx.root, &f).ok())
        .is_some_and(|n| n > 0 && d.cardinality as u64 == n)
}

/// Rules 1–3 for one file the winner changed (DV update or removal) and the transaction read or
/// changed.
fn rows_of_file(
    t: &TxnView,
    ours: &Ours,
    next: &mut Rebase,
    w: &WinningCommit,
    r: &RemoveFile,
    readded: Option<&AddFile>,
    cx: &RowContext,
) -> Result<(Rule, String)> {
    let (st, path): (&Staged, &str) = (ours.st, &r.path);
    let fb = |rule: Rule, why: Why| fallback(t, w, r, rule, why);
    if !r.data_change && readded.is_none() {
        // A compaction drops a file whose rows are all deleted without writing an output (and
        // so without provenance): it removed no live row, whatever this transaction read.
        if !ours.changes_file(path) && all_rows_deleted(t, cx, r) {
            return Ok((
                Rule::PassAllRowsDeleted,
                format!("it dropped {path}, whose rows were all deleted already"),
            ));
        }
        let rule = if ours.changes_file(path) {
            Rule::DeleteDelete
        } else {
            Rule::DeleteRead
        };
        return Err(fb(
            rule,
            (
                Fallback::NoProvenance,
                "the concurrent compaction recorded no row provenance".into(),
            ),
        ));
    }
    let base_dv = or_fallback(read_dv(cx.root, r.deletion_vector.as_deref()))
        .map_err(|e| fb(Rule::DeleteRead, e))?;
    let file = readded.cloned().or_else(|| removed_file(t, r));
    let Some(file) = file else {
        return Err(fb(
            Rule::DeleteRead,
            (
                Fallback::Unreadable,
                format!("{path} is not a file of the snapshot this transaction read"),
            ),
        ));
    };
    let w_rows = match readded {
        Some(a) => {
            let new = or_fallback(read_dv(cx.root, a.deletion_vector.as_deref()))
                .map_err(|e| fb(Rule::DeleteRead, e))?;
            DeletionBitmap(&new.0 - &base_dv.0)
        }
        None => {
            let n =
                or_fallback(physical_rows(cx.root, &file)).map_err(|e| fb(Rule::DeleteRead, e))?;
            live_rows(n, &base_dv)
        }
    };
    let pv = Some(file.partition_values.clone());
    // Rule 1: the same row modified twice.
    let c_rows = if let Some(ch) = st.dv.get(path) {
        Some(DeletionBitmap(&ch.rows.0 - &base_dv.0))
    } else if ours.deletes(path) {
        let n =
            or_fallback(physical_rows(cx.root, &file)).map_err(|e| fb(Rule::DeleteDelete, e))?;
        Some(live_rows(n, &base_dv))
    } else {
        None
    };
    if let Some(c) = &c_rows {
        let both = &c.0 & &w_rows.0;
        if !both.is_empty() {
            let mut e = t.file_conflict(
                ConflictKind::ConcurrentDeleteDelete,
                Rule::RowDeleteDelete,
                w,
                path,
                pv.as_ref(),
                format!(
                    "Both transactions deleted or updated the same {} row(s) of this file.",
                    both.len()
                ),
            );
            if let Error::Conflict(x) = &mut e {
                x.overlapping_rows = Some(both.len());
            }
            return Err(e);
        }
    }
    // Rule 2: the winner changed a row this transaction read.
    if st.read.whole_table || st.read.files.contains(path) {
        let preds = read_predicates(&st.read);
        if let Some(why) = unevaluable(&preds, cx.cache) {
            return Err(fb(Rule::DeleteRead, why));
        }
        let hit = or_fallback(matching_rows(cx.root, &file, &preds, &w_rows, cx.cache))
            .map_err(|e| fb(Rule::DeleteRead, e))?;
        if !hit.is_empty() {
            let mut e = t.file_conflict(
                ConflictKind::ConcurrentDeleteRead,
                Rule::RowDeleteRead,
                w,
                path,
                pv.as_ref(),
                format!("It deleted or updated {} row(s) of this file that match this transaction's read predicate.", hit.len()),
            );
            if let Error::Conflict(x) = &mut e {
                x.overlapping_rows = Some(hit.len());
            }
            return Err(e);
        }
    }
    // Rule 3: rebase onto the winner's version of the file.
    if next.get().dv.contains_key(path) {
        let s = next.edit();
        match readded {
            Some(a) => s.dv.get_mut(path).expect("checked").base = a.clone(),
            None => {
                s.dv.remove(path);
            }
        }
    }
    Ok((
        Rule::PassDisjointRows,
        format!(
            "it changed {} row(s) of {path}, none of which this transaction read or changes",
            w_rows.len()
        ),
    ))
}

/// Rule 4: rows the winner added conflict only if one of them satisfies the read predicate.
fn appends(
    t: &TxnView,
    st: &Staged,
    w: &WinningCommit,
    cx: &RowContext,
    removed: &HashMap<&str, &RemoveFile>,
) -> Result<(Rule, String)> {
    let candidates: Vec<&AddFile> = w
        .adds
        .iter()
        .filter(|a| a.data_change && !removed.contains_key(&*a.path))
        .collect();
    let n = candidates.len();
    if n == 0 {
        return Ok((
            Rule::PassNoNewDataFiles,
            "it added no new data files".into(),
        ));
    }
    if let Some(why) = checker::appends_ignored(t, w, n) {
        return Ok(why);
    }
    if !st.read.whole_table && st.read.predicates.is_empty() {
        return Ok((
            Rule::PassNoReadPredicate,
            format!("this transaction recorded no read predicate; {n} added files cannot match"),
        ));
    }
    let preds = read_predicates(&st.read);
    for a in candidates {
        let may: Vec<&Predicate> = preds
            .iter()
            .copied()
            .filter(|p| p.file_may_match(a, true))
            .collect();
        if may.is_empty() {
            continue;
        }
        // Rule 4 with the rows that match, or check 5 when row-level resolution fell back.
        let conflict = |reason: String, rows: Option<u64>, fell_back: Option<Fallback>| {
            let rule = match fell_back {
                Some(_) => Rule::ConcurrentAppend,
                None => Rule::RowAppend,
            };
            let mut e = t.file_conflict(
                ConflictKind::ConcurrentAppend,
                rule,
                w,
                &a.path,
                Some(&a.partition_values),
                reason,
            );
            if let Error::Conflict(x) = &mut e {
                x.overlapping_rows = rows;
                x.fallback = fell_back;
            }
            e
        };
        if let Some((cause, why)) = unevaluable(&may, cx.cache) {
            return Err(conflict(fallback_reason(&why), None, Some(cause)));
        }
        if Instant::now() > cx.deadline {
            return Err(conflict(
                fallback_reason(OUT_OF_TIME),
                None,
                Some(Fallback::TimeBudget),
            ));
        }
        let hit = (|| -> Result<DeletionBitmap> {
            let deleted = read_dv(cx.root, a.deletion_vector.as_deref())?;
            let live = live_rows(physical_rows(cx.root, a)?, &deleted);
            matching_rows(cx.root, a, &may, &live, cx.cache)
        })();
        match hit {
            Ok(h) if h.is_empty() => {}
            Ok(h) => {
                let text = may[0]
                    .text
                    .as_deref()
                    .map(|t| format!("`{t}`"))
                    .unwrap_or_else(|| "(all rows)".into());
                return Err(conflict(
                    format!(
                        "{} added row(s) match this transaction's read predicate {text}.",
                        h.len()
                    ),
                    Some(h.len()),
                    None,
                ));
            }
            Err(e) => {
                return Err(conflict(
                    fallback_reason(&format!(
                        "a file needed for the row-level decision could not be read ({e})"
                    )),
                    None,
                    Some(Fallback::Unreadable),
                ))
            }
        }
    }
    Ok((
        Rule::PassNoAddedRowMatches,
        format!("none of the rows in the winner's {n} added files match the read predicates"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::actions::AddExtra;

    fn add(path: &str, tags: Option<&str>) -> AddFile {
        AddFile {
            path: path.into(),
            partition_values: Default::default(),
            size: 1,
            modification_time: 0,
            data_change: false,
            stats: None,
            deletion_vector: None,
            extra: AddExtra {
                tags: tags.map(|t| {
                    [(PROVENANCE_TAG.to_string(), Some(t.to_string()))]
                        .into_iter()
                        .collect()
                }),
                ..Default::default()
            }
            .boxed(),
        }
    }

    fn bits(v: &[u64]) -> DeletionBitmap {
        DeletionBitmap::from_positions(v.iter().copied()).unwrap()
    }

    #[test]
    fn remap_skips_rows_deleted_before_compaction() {
        // Input a: 5 physical rows, row 1 deleted (4 live); input b: 3 rows, none deleted.
        let out = add(
            "out.parquet",
            Some(r#"[["a%20x.parquet", 4], ["b.parquet", 3]]"#),
        );
        let (bins, index) = bins(std::slice::from_ref(&out));
        assert_eq!(
            index.get("a x.parquet"),
            Some(&(0, 0)),
            "paths are compared decoded"
        );
        let bin = &bins[0];
        // Row 3 of a is its third live row (0, 2, 3, 4) → output 2; row 1 was already deleted.
        assert_eq!(
            remap(bin, 0, &bits(&[1]), &bits(&[1, 3, 4])).to_vec(),
            vec![2, 3]
        );
        // Row 0 of b follows a's 4 live rows.
        assert_eq!(
            remap(bin, 1, &DeletionBitmap::default(), &bits(&[0, 2])).to_vec(),
            vec![4, 6]
        );
    }

    #[test]
    fn provenance_records_the_dv_each_input_was_read_with() {
        let tag = r#"[["a", 4, {"storageType": "i", "pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", "offset": null, "sizeInBytes": 21, "cardinality": 1}], ["b", 3, null], ["c", 2]]"#;
        let (inputs, read) = provenance(&add("out", Some(tag))).expect("parses");
        assert_eq!(
            inputs,
            vec![
                ("a".to_string(), 4),
                ("b".to_string(), 3),
                ("c".to_string(), 2)
            ]
        );
        assert!(matches!(&read[0], Some(Some(d)) if d.storage_type == "i" && d.cardinality == 1));
        assert_eq!(read[1], Some(None), "null: read without a DV");
        assert_eq!(read[2], None, "two-element entries (older tags): unknown");
        assert!(provenance(&add("out", Some(r#"[["a", 4, {"no": "descriptor"}]]"#))).is_none());
    }

    #[test]
    fn live_rows_excludes_deleted() {
        assert_eq!(live_rows(5, &bits(&[0, 3])).to_vec(), vec![1, 2, 4]);
        assert!(provenance(&add("x", Some("not json"))).is_none());
    }
}
