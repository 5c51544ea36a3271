//! Reading checkpoints: classic and multi-part V1 parquet, V2 (parquet or JSON) with sidecars.
//! Only the columns replay needs are decoded (`stats_parsed`/`partitionValues_parsed` are skipped).

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, BooleanArray, MapArray, RecordBatch, StructArray};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader,
    ParquetRecordBatchReaderBuilder, RowSelection, RowSelector,
};
use parquet::arrow::ProjectionMask;
use parquet::file::metadata::PageIndexPolicy;

use super::actions::*;
use super::deferred::Deferred;
use super::path::{LogFile, LogFileKind};
use super::segment::CheckpointFiles;
use crate::dv::DeletionVectorDescriptor;
use crate::error::{Error, Result};
use crate::storage::{FileReader, Location};

const TOP_LEVEL: &[&str] = &[
    "add",
    "remove",
    "metaData",
    "protocol",
    "txn",
    "domainMetadata",
    "sidecar",
    "checkpointMetadata",
];

/// All actions of a checkpoint, sidecars expanded, the list of adds with room for `later` more
/// (the commits after it, which then append without growing and copying a million files).
pub fn read(log_dir: &Location, cp: &CheckpointFiles, later: usize) -> Result<Actions> {
    let single = cp.files.len() == 1;
    let parts = crate::parallel::map(&cp.files, |f| {
        read_file(f, cp.version, if single { later } else { 0 })
    });
    let actions = Actions::concat(parts.into_iter().collect::<Result<_>>()?, later);
    let sidecars: Vec<Location> = actions
        .other
        .iter()
        .filter_map(|a| match a {
            Action::Sidecar(s) => Some(sidecar_path(log_dir, &s.path)),
            _ => None,
        })
        .collect();
    // One sidecar after the other, each read on all cores: a few sidecars spread over the
    // threads would leave some idle (5 sidecars on 2 cores: 3 and 2).
    let mut all = vec![actions];
    for p in &sidecars {
        all.push(read_parquet(p, cp.version, 0)?);
    }
    Ok(Actions::concat(all, later))
}

fn sidecar_path(log_dir: &Location, path: &str) -> Location {
    let dir = log_dir.join("_sidecars");
    dir.resolve(path).unwrap_or_else(|_| dir.join(path))
}

fn read_file(f: &LogFile, version: i64, later: usize) -> Result<Actions> {
    match f.kind {
        LogFileKind::UuidCheckpoint { json: true } => {
            let bytes = f.path.read().map_err(|e| Error::io(&f.path, e))?;
            super::json::parse_actions(&bytes, &f.path, Some(version))
        }
        _ => read_parquet(&f.path, version, later),
    }
}

/// The file names of the sidecars one checkpoint file names (none for a V1 checkpoint). Reads
/// only the `sidecar` column of a parquet checkpoint, so a large classic checkpoint costs little.
pub fn sidecar_names(f: &LogFile) -> Result<Vec<String>> {
    let base = |p: &str| p.rsplit('/').next().unwrap_or(p).to_string();
    if let LogFileKind::UuidCheckpoint { json: true } = f.kind {
        let bytes = f.path.read().map_err(|e| Error::io(&f.path, e))?;
        let actions = super::json::parse_actions(&bytes, &f.path, Some(f.version))?;
        return Ok(actions
            .other
            .iter()
            .filter_map(|a| match a {
                Action::Sidecar(s) => Some(base(&s.path)),
                _ => None,
            })
            .collect());
    }
    let (file, meta) = open(&f.path, f.version)?;
    let Some(root) = meta
        .schema()
        .fields()
        .iter()
        .position(|c| c.name() == "sidecar")
    else {
        return Ok(Vec::new());
    };
    let mask = ProjectionMask::roots(meta.parquet_schema(), [root]);
    let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(file, meta)
        .with_projection(mask)
        .build()
        .map_err(|e| corrupt(&f.path, f.version, &e))?;
    let mut out = Vec::new();
    for batch in reader {
        let batch = batch.map_err(|e| corrupt(&f.path, f.version, &e))?;
        let Some(s) = batch.column(0).as_struct_opt() else {
            continue;
        };
        if let Some(paths) = str_col(s, "path") {
            for i in 0..s.len() {
                if s.is_valid(i) {
                    if let Some(p) = paths.get(i) {
                        out.push(base(p));
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Rows per thread below which a checkpoint part is read on one thread.
const ROWS_PER_THREAD: usize = 50_000;

/// One unit of parallel work: rows `start..end` of row group `group`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct RowRange {
    group: usize,
    start: usize,
    end: usize,
}

/// Read one parquet checkpoint part or sidecar on all cores: whole row groups per thread when
/// there are enough of them, otherwise each row group split into row ranges (writers such as
/// delta-rs put a million adds in one row group; the page index lets a range skip other pages).
/// The list of adds has room for `later` more.
pub fn read_parquet(path: &Location, version: i64, later: usize) -> Result<Actions> {
    crate::error::no_panic(
        || read_parquet_split(path, version, None, later),
        |msg| {
            Error::corrupt(
                path,
                Some(version),
                format!("unreadable checkpoint parquet (the parquet reader failed: {msg})"),
            )
        },
    )
}

/// [`read_parquet`] split over `threads` work units (None: as many as the rows are worth).
fn read_parquet_split(
    path: &Location,
    version: i64,
    threads: Option<usize>,
    later: usize,
) -> Result<Actions> {
    let (file, meta) = open(path, version)?;
    let len = file.len();
    let groups: Vec<usize> = meta
        .metadata()
        .row_groups()
        .iter()
        .map(|g| g.num_rows().max(0) as usize)
        .collect();
    let rows: usize = groups.iter().sum();
    let threads = threads.unwrap_or_else(|| crate::parallel::threads_for(rows, ROWS_PER_THREAD));
    let units = work_units(&groups, threads);
    let descr = meta.parquet_schema();
    let leaf = |name: &str| {
        descr
            .columns()
            .iter()
            .position(|c| c.path().parts() == ["add", name])
    };
    let stats_leaf = leaf("stats");
    let add_rows = add_rows(meta.metadata(), leaf("path"));
    let never_set = never_set_leaves(meta.metadata());
    // Checkpoints written with writeStatsAsJson=false carry only `stats_parsed`: read it eagerly
    // then (rare); otherwise the JSON stats column is read on first use.
    let leaves: Vec<usize> = descr
        .columns()
        .iter()
        .enumerate()
        .filter(|(i, c)| {
            let parts = c.path().parts();
            TOP_LEVEL.contains(&parts[0].as_str())
                && !(parts[0] == "add"
                    && parts.len() > 1
                    && (parts[1] == "partitionValues_parsed"
                        || parts[1] == "stats_parsed" && stats_leaf.is_some()))
                && Some(*i) != stats_leaf
                && !never_set.contains(i)
        })
        .map(|(i, _)| i)
        .collect();
    let source = Arc::new(ReadSource {
        path: path.clone(),
        file,
        version,
        meta,
        groups,
        units,
    });
    let deferred = stats_leaf.map(|leaf| {
        let counts = source.units.iter().map(|_| AtomicUsize::new(0)).collect();
        Arc::new(DeferredPart {
            bytes: source.units.iter().map(|u| source.bytes(u, leaf)).collect(),
            source: source.clone(),
            leaf,
            counts,
            stats: Deferred::new(path, version, len),
        })
    });
    // Room for each unit's adds up front (growing the list copies it, and touches fresh pages
    // each time), and in the first unit for all of them, so joining the units moves only the rest.
    let room: Vec<usize> = source
        .units
        .iter()
        .map(|unit| {
            unit.iter()
                .map(|r| (r.end - r.start).min(add_rows[r.group]))
                .sum()
        })
        .collect();
    let results = crate::parallel::map(&(0..source.units.len()).collect::<Vec<_>>(), |&u| {
        let room = if u == 0 {
            room.iter().sum::<usize>() + later
        } else {
            room[u]
        };
        let deferred = deferred.as_ref().map(|part| {
            Arc::new(DeferredStats {
                part: part.clone(),
                unit: u,
            })
        });
        let out = read_unit(&source, u, &leaves, deferred.as_ref(), room)?;
        if let Some(d) = &deferred {
            d.part.counts[u].store(out.adds.len(), Ordering::Relaxed);
        }
        Ok(out)
    });
    Ok(Actions::concat(
        results.into_iter().collect::<Result<_>>()?,
        later,
    ))
}

/// For each struct that is null on a row exactly when this leaf is: the struct's path and the
/// leaf's name. The Delta protocol requires the field on every such action (writers may still
/// mark it optional in parquet), so it is null only where the action is absent.
const STRUCT_KEYS: &[(&[&str], &str)] = &[
    (&["remove"], "path"),
    (&["txn"], "appId"),
    (&["domainMetadata"], "domain"),
    (&["sidecar"], "path"),
    (&["checkpointMetadata"], "version"),
    (&["add", "deletionVector"], "storageType"),
    (&["remove", "deletionVector"], "storageType"),
];

/// Optional fields outside any list or map, null wherever they are unset.
const OPTIONAL_SCALARS: &[&[&str]] = &[
    &["add", "baseRowId"],
    &["add", "defaultRowCommitVersion"],
    &["add", "clusteringProvider"],
];

/// Per row group, the rows that can hold an add: all but those the footer counts null in
/// `add.path` (a leaf every add has), or every row when the footer does not say.
fn add_rows(
    meta: &parquet::file::metadata::ParquetMetaData,
    path_leaf: Option<usize>,
) -> Vec<usize> {
    meta.row_groups()
        .iter()
        .map(|g| {
            let rows = g.num_rows().max(0) as usize;
            let nulls = path_leaf
                .and_then(|l| g.column(l).statistics())
                .and_then(|s| s.null_count_opt());
            rows.saturating_sub(nulls.unwrap_or(0) as usize)
        })
        .collect()
}

/// Leaves the footer shows to be null on every row (each row group's null count equals its row
/// count): every leaf of an action struct the part holds none of (a checkpoint without
/// tombstones has a million null `remove` rows) and optional add fields never set. Decoding them
/// would only produce nulls, so they are not read. A group without a null count skips nothing.
fn never_set_leaves(meta: &parquet::file::metadata::ParquetMetaData) -> Vec<usize> {
    let columns = meta.file_metadata().schema_descr().columns();
    let all_null = |leaf: usize| {
        meta.row_groups().iter().all(|g| {
            let nulls = g.column(leaf).statistics().and_then(|s| s.null_count_opt());
            nulls == Some(g.num_rows().max(0) as u64)
        })
    };
    let under = |i: usize, prefix: &[&str]| {
        let parts = columns[i].path().parts();
        parts.len() >= prefix.len() && parts.iter().zip(prefix).all(|(a, b)| a == b)
    };
    let find = |path: &[&str]| {
        (0..columns.len())
            .find(|&i| under(i, path) && columns[i].path().parts().len() == path.len())
    };
    let mut out = Vec::new();
    for (prefix, key) in STRUCT_KEYS {
        let key_path: Vec<&str> = prefix.iter().copied().chain([*key]).collect();
        if find(&key_path).is_some_and(all_null) {
            out.extend((0..columns.len()).filter(|&i| under(i, prefix)));
        }
    }
    out.extend(
        OPTIONAL_SCALARS
            .iter()
            .filter_map(|p| find(p))
            .filter(|&i| all_null(i)),
    );
    out
}

/// Where the rows of one parquet part are and how they are split into read units.
struct ReadSource {
    path: Location,
    file: FileReader,
    version: i64,
    meta: ArrowReaderMetadata,
    groups: Vec<usize>,
    units: Vec<Vec<RowRange>>,
}

impl ReadSource {
    /// A reader of `leaves` over the rows of unit `u`.
    fn reader(&self, u: usize, leaves: &[usize]) -> Result<ParquetRecordBatchReader> {
        let units = &self.units[u];
        // Each unit fetches (from an object store) only its own column chunks, in few requests.
        let file = self.file.view();
        file.prefetch(&chunk_ranges(&self.meta, &self.groups, units, leaves))
            .map_err(|e| Error::io(&self.path, e))?;
        let builder = ParquetRecordBatchReaderBuilder::new_with_metadata(file, self.meta.clone());
        let mask = ProjectionMask::leaves(builder.parquet_schema(), leaves.iter().copied());
        let mut builder = builder
            .with_projection(mask)
            .with_row_groups(units.iter().map(|r| r.group).collect());
        if units
            .iter()
            .any(|r| r.start > 0 || r.end < self.groups[r.group])
        {
            builder = builder.with_row_selection(selection(&self.groups, units));
        }
        builder
            .with_batch_size(16 * 1024)
            .build()
            .map_err(|e| self.corrupt(&e))
    }

    fn corrupt(&self, e: &dyn std::fmt::Display) -> Error {
        corrupt(&self.path, self.version, e)
    }

    /// The uncompressed bytes of column `leaf` in the rows of `unit`, from the footer (a row
    /// range's share of its group's).
    fn bytes(&self, unit: &[RowRange], leaf: usize) -> u64 {
        let groups = self.meta.metadata().row_groups();
        unit.iter()
            .map(|r| {
                let size = groups[r.group].column(leaf).uncompressed_size().max(0) as u64;
                size * (r.end - r.start) as u64 / self.groups[r.group].max(1) as u64
            })
            .sum()
    }
}

/// The `add.stats` column of a checkpoint part, read for all its files the first time any of
/// them is asked for (most snapshots never need stats: a million of them are half of a
/// checkpoint's bytes).
pub struct DeferredStats {
    part: Arc<DeferredPart>,
    unit: usize,
}

struct DeferredPart {
    source: Arc<ReadSource>,
    leaf: usize,
    /// Adds per unit, as counted by the first read (the deferred read must find as many).
    counts: Vec<AtomicUsize>,
    /// Per unit, the footer's uncompressed size of the stats in its rows (to size buffers).
    bytes: Vec<u64>,
    /// Per unit, the stats of its adds in read order.
    stats: Deferred<Vec<UnitStats>>,
}

/// The stats of one unit's adds as the reader decoded them: the stats column of each batch (not
/// copied into one array) and, per add, its batch and row.
struct UnitStats {
    columns: Vec<ArrayRef>,
    at: Vec<(u32, u32)>,
}

impl UnitStats {
    fn len(&self) -> usize {
        self.at.len()
    }

    /// The stats of the unit's `i`-th add (None when null).
    fn get(&self, i: usize) -> Option<&str> {
        let (batch, row) = self.at[i];
        Str::new(&self.columns[batch as usize])?.get(row as usize)
    }
}

impl DeferredStats {
    fn out_of_range(&self) -> Error {
        corrupt(
            &self.part.source.path,
            self.part.source.version,
            &"a stats row out of range",
        )
    }

    /// The stats text of this unit's `row`-th add (None when null).
    pub fn get(&self, row: u32) -> Result<Option<&str>> {
        let part = &*self.part;
        let unit = &part.stats.get(|| part.in_memory(None), || part.load())?[self.unit];
        let row = row as usize;
        if row >= unit.len() {
            return Err(self.out_of_range());
        }
        Ok(unit.get(row))
    }
}

impl StatsSource for DeferredStats {
    fn raw(&self, row: u32) -> Result<Option<RawStats<'_>>> {
        Ok(self.get(row)?.map(RawStats::Plain))
    }

    /// The unit's share per add of its stats bytes in the footer (plain encoding adds four
    /// bytes of length per value; other rows' nulls add nothing much).
    fn len_hint(&self, _row: u32) -> usize {
        let part = &*self.part;
        let adds = part.counts[self.unit].load(Ordering::Relaxed).max(1) as u64;
        (part.bytes[self.unit] / adds) as usize
    }

    /// Not loaded yet: read this unit's stats for the call and drop them after.
    fn visit(&self, rows: &[Option<u32>], f: &mut VisitStats<'_>) -> Result<()> {
        let part = &*self.part;
        if part.stats.loaded().is_some() || rows.len() < STREAM_MIN {
            return visit_each(self, rows, f);
        }
        let ascending = rows
            .iter()
            .flatten()
            .try_fold(None, |last, &r| (last < Some(r)).then_some(Some(r)))
            .is_some();
        if !ascending {
            let stats = part.stats.reread(
                || part.in_memory(Some(self.unit)),
                || part.load_unit(self.unit),
            )?;
            return rows
                .iter()
                .try_for_each(|&row| match row.map(|r| r as usize) {
                    Some(row) if row >= stats.len() => Err(self.out_of_range()),
                    Some(row) => f(stats.get(row).map(RawStats::Plain)),
                    None => f(None),
                });
        }
        // In order: each batch's stats are handed on and dropped before the next is decoded (its
        // buffers are reused rather than fresh pages touched).
        let mut next = 0;
        let mut failed = None;
        part.stats.reread(
            || part.in_memory(Some(self.unit)),
            || {
                part.stream_unit(self.unit, &mut |add, text| {
                    while let Some(&row) = rows.get(next) {
                        let step = match row {
                            None => f(None),
                            Some(r) if r as usize == add => f(text.map(RawStats::Plain)),
                            Some(_) => break,
                        };
                        next += 1;
                        if let Err(e) = step {
                            failed = Some(e);
                            return false;
                        }
                        if row.is_some() {
                            break;
                        }
                    }
                    next < rows.len()
                })
            },
        )?;
        if let Some(e) = failed {
            return Err(e);
        }
        for &row in &rows[next..] {
            match row {
                None => f(None)?,
                Some(_) => return Err(self.out_of_range()),
            }
        }
        Ok(())
    }
}

/// Below this many rows, [`StatsSource::visit`] loads the whole part's stats (and keeps them)
/// rather than reading a unit for a few.
const STREAM_MIN: usize = 1024;

impl DeferredPart {
    /// Whether reading the stats of unit `u` (of every unit when None) again needs no request:
    /// a small checkpoint on an object store came whole with the tail fetched at load.
    fn in_memory(&self, u: Option<usize>) -> bool {
        let units = match u {
            Some(u) => u..u + 1,
            None => 0..self.source.units.len(),
        };
        let s = &self.source;
        let ranges: Vec<_> = units
            .flat_map(|u| chunk_ranges(&s.meta, &s.groups, &s.units[u], &[self.leaf]))
            .collect();
        s.file.holds(&ranges)
    }

    fn load(&self) -> std::result::Result<Vec<UnitStats>, String> {
        let units: Vec<usize> = (0..self.source.units.len()).collect();
        crate::parallel::map(&units, |&u| self.load_unit(u))
            .into_iter()
            .collect()
    }

    /// Hand each batch of unit `u`'s stats to `f`: the adds struct and its stats column (checked
    /// to be a string column), until `f` returns false. Fails when the whole unit, read to its end,
    /// no longer holds as many adds as the first read counted (a read stopped early checks only
    /// the file's size, in [`Deferred::reread`]).
    fn each_batch(
        &self,
        u: usize,
        f: &mut dyn FnMut(&StructArray, &ArrayRef) -> bool,
    ) -> std::result::Result<(), String> {
        let reader = self
            .source
            .reader(u, &[self.leaf])
            .map_err(|e| e.to_string())?;
        let mut adds = 0;
        for batch in reader {
            let batch = batch.map_err(|e| format!("reading add.stats again: {e}"))?;
            let Some(add) = batch.column_by_name("add").and_then(|c| c.as_struct_opt()) else {
                continue;
            };
            let stats = child(add, "stats")
                .filter(|c| Str::new(c).is_some())
                .ok_or("add.stats is not a string column")?;
            if !f(add, stats) {
                return Ok(());
            }
            adds += add.len() - add.null_count();
        }
        let expected = self.counts[u].load(Ordering::Relaxed);
        if adds != expected {
            return Err(format!("the checkpoint changed since it was loaded: {adds} adds with stats, expected {expected}"));
        }
        Ok(())
    }

    /// Hand the stats of unit `u`'s adds, in order, to `f` (add index, text), one batch at a
    /// time, until `f` returns false.
    fn stream_unit(
        &self,
        u: usize,
        f: &mut dyn FnMut(usize, Option<&str>) -> bool,
    ) -> std::result::Result<(), String> {
        let mut add = 0;
        self.each_batch(u, &mut |adds, stats| {
            let stats = Str::new(stats).expect("checked by each_batch");
            for i in (0..adds.len()).filter(|&i| adds.is_valid(i)) {
                if !f(add, stats.get(i)) {
                    return false;
                }
                add += 1;
            }
            true
        })
    }

    fn load_unit(&self, u: usize) -> std::result::Result<UnitStats, String> {
        let mut out = UnitStats {
            columns: Vec::new(),
            at: Vec::with_capacity(self.counts[u].load(Ordering::Relaxed)),
        };
        self.each_batch(u, &mut |adds, stats| {
            let b = out.columns.len() as u32;
            out.columns.push(stats.clone());
            out.at.extend(
                (0..adds.len())
                    .filter(|&i| adds.is_valid(i))
                    .map(|i| (b, i as u32)),
            );
            true
        })?;
        Ok(out)
    }
}

/// The footer and, when the writer stored one, the offset index (so a row range reads only its pages).
fn open(path: &Location, version: i64) -> Result<(FileReader, ArrowReaderMetadata)> {
    let file = path.open().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound if crate::error::problem_of(&e).is_none() => Error::corrupt(
            path,
            Some(version),
            "checkpoint file (or sidecar) is missing",
        ),
        _ => Error::io(path, e),
    })?;
    let options = ArrowReaderOptions::new().with_offset_index_policy(PageIndexPolicy::Optional);
    let meta = ArrowReaderMetadata::load(&file, options).map_err(|e| corrupt(path, version, &e))?;
    Ok((file, meta))
}

/// The byte ranges of the column chunks of `leaves` that `unit` reads: whole chunks, or with an
/// offset index only the pages holding its rows (and what precedes the first page: the
/// dictionary).
fn chunk_ranges(
    meta: &ArrowReaderMetadata,
    groups: &[usize],
    unit: &[RowRange],
    leaves: &[usize],
) -> Vec<Range<u64>> {
    let md = meta.metadata();
    let mut out = Vec::new();
    for r in unit {
        let group = md.row_group(r.group);
        let whole = r.start == 0 && r.end >= groups[r.group];
        for &leaf in leaves {
            let (start, len) = group.column(leaf).byte_range();
            let page_index = md.page_index_for_row_group(r.group);
            let pages = page_index
                .page_locations(leaf)
                .filter(|p| !p.is_empty() && !whole);
            let Some(pages) = pages else {
                out.push(start..start + len);
                continue;
            };
            let first = pages[0].offset as u64;
            if first > start {
                out.push(start..first);
            }
            for (i, p) in pages.iter().enumerate() {
                let rows_end = pages
                    .get(i + 1)
                    .map_or(groups[r.group], |n| n.first_row_index as usize);
                if rows_end > r.start && (p.first_row_index as usize) < r.end {
                    let at = p.offset as u64;
                    out.push(at..at + p.compressed_page_size as u64);
                }
            }
        }
    }
    out
}

fn corrupt(path: &Location, version: i64, e: &dyn std::fmt::Display) -> Error {
    Error::corrupt(
        path,
        Some(version),
        format!("unreadable checkpoint parquet: {e}"),
    )
}

/// Split row groups (given by their row counts) over `threads`: whole groups round-robin when
/// there are at least as many groups as threads, else every group cut into `threads` ranges.
fn work_units(groups: &[usize], threads: usize) -> Vec<Vec<RowRange>> {
    if threads <= 1 || groups.len() >= threads {
        let threads = threads.max(1);
        return (0..threads)
            .map(|t| {
                (t..groups.len())
                    .step_by(threads)
                    .map(|g| RowRange {
                        group: g,
                        start: 0,
                        end: groups[g],
                    })
                    .collect()
            })
            .filter(|u: &Vec<RowRange>| !u.is_empty())
            .collect();
    }
    (0..threads)
        .map(|t| {
            groups
                .iter()
                .enumerate()
                .map(|(g, &n)| RowRange {
                    group: g,
                    start: n * t / threads,
                    end: n * (t + 1) / threads,
                })
                .filter(|r| r.end > r.start)
                .collect()
        })
        .filter(|u: &Vec<RowRange>| !u.is_empty())
        .collect()
}

/// The selection of `units` within the concatenation of their row groups.
fn selection(groups: &[usize], units: &[RowRange]) -> RowSelection {
    let mut sel = Vec::new();
    for u in units {
        if u.start > 0 {
            sel.push(RowSelector::skip(u.start));
        }
        sel.push(RowSelector::select(u.end - u.start));
        if groups[u.group] > u.end {
            sel.push(RowSelector::skip(groups[u.group] - u.end));
        }
    }
    sel.into()
}

fn read_unit(
    source: &ReadSource,
    u: usize,
    leaves: &[usize],
    deferred: Option<&Arc<DeferredStats>>,
    room: usize,
) -> Result<Actions> {
    let mut out = Actions::default();
    out.adds.reserve_exact(room);
    let mut interner = PartitionInterner::default();
    for batch in source.reader(u, leaves)? {
        let batch = batch.map_err(|e| source.corrupt(&e))?;
        decode_batch(&batch, &mut out, &mut interner, deferred)
            .map_err(|m| Error::corrupt(&source.path, Some(source.version), m))?;
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Typed column accessors, prepared once per batch.

enum Str<'a> {
    Utf8(&'a arrow_array::StringArray),
    Large(&'a arrow_array::LargeStringArray),
    View(&'a arrow_array::StringViewArray),
}

impl<'a> Str<'a> {
    fn new(a: &'a ArrayRef) -> Option<Self> {
        match a.data_type() {
            DataType::Utf8 => Some(Str::Utf8(a.as_string::<i32>())),
            DataType::LargeUtf8 => Some(Str::Large(a.as_string::<i64>())),
            DataType::Utf8View => Some(Str::View(a.as_string_view())),
            _ => None,
        }
    }
    fn get(&self, i: usize) -> Option<&'a str> {
        match self {
            Str::Utf8(a) => a.is_valid(i).then(|| a.value(i)),
            Str::Large(a) => a.is_valid(i).then(|| a.value(i)),
            Str::View(a) => a.is_valid(i).then(|| a.value(i)),
        }
    }
}

enum Int<'a> {
    I32(&'a arrow_array::Int32Array),
    I64(&'a arrow_array::Int64Array),
}

impl<'a> Int<'a> {
    fn new(a: &'a ArrayRef) -> Option<Self> {
        match a.data_type() {
            DataType::Int32 => Some(Int::I32(a.as_primitive::<Int32Type>())),
            DataType::Int64 => Some(Int::I64(a.as_primitive::<Int64Type>())),
            _ => None,
        }
    }
    fn get(&self, i: usize) -> Option<i64> {
        match self {
            Int::I32(a) => a.is_valid(i).then(|| a.value(i) as i64),
            Int::I64(a) => a.is_valid(i).then(|| a.value(i)),
        }
    }
}

struct StrMap<'a> {
    map: &'a MapArray,
    keys: Str<'a>,
    values: Str<'a>,
}

impl<'a> StrMap<'a> {
    fn new(a: &'a ArrayRef) -> Option<Self> {
        let map = a.as_map_opt()?;
        Some(StrMap {
            map,
            keys: Str::new(map.keys())?,
            values: Str::new(map.values())?,
        })
    }
    /// The entries of row `i` (None when the map is null); entries with a null key are skipped.
    fn entries(
        &self,
        i: usize,
    ) -> Option<impl Iterator<Item = (&'a str, Option<&'a str>)> + Clone + '_> {
        if self.map.is_null(i) {
            return None;
        }
        let offsets = self.map.value_offsets();
        let (start, end) = (offsets[i] as usize, offsets[i + 1] as usize);
        Some((start..end).filter_map(|j| Some((self.keys.get(j)?, self.values.get(j)))))
    }

    fn get(&self, i: usize) -> Option<Vec<(&'a str, Option<&'a str>)>> {
        self.entries(i).map(Iterator::collect)
    }
}

fn child<'a>(s: &'a StructArray, name: &str) -> Option<&'a ArrayRef> {
    s.column_by_name(name)
}

fn str_col<'a>(s: &'a StructArray, name: &str) -> Option<Str<'a>> {
    child(s, name).and_then(Str::new)
}

fn int_col<'a>(s: &'a StructArray, name: &str) -> Option<Int<'a>> {
    child(s, name).and_then(Int::new)
}

fn bool_col<'a>(s: &'a StructArray, name: &str) -> Option<&'a BooleanArray> {
    child(s, name).and_then(|a| a.as_boolean_opt())
}

fn bool_at(a: Option<&BooleanArray>, i: usize) -> Option<bool> {
    a.and_then(|a| a.is_valid(i).then(|| a.value(i)))
}

fn map_col<'a>(s: &'a StructArray, name: &str) -> Option<StrMap<'a>> {
    child(s, name).and_then(StrMap::new)
}

fn str_list_at(s: &StructArray, name: &str, i: usize) -> Option<Vec<String>> {
    let a = child(s, name)?;
    let list = a.as_list_opt::<i32>()?;
    if list.is_null(i) {
        return None;
    }
    let values = list.value(i);
    let strs = Str::new(&values)?;
    Some(
        (0..values.len())
            .filter_map(|j| strs.get(j).map(String::from))
            .collect(),
    )
}

fn required<T>(v: Option<T>, action: &str, field: &str, row: usize) -> Result<T, String> {
    v.ok_or_else(|| format!("row {row}: {action}.{field} is missing or null"))
}

struct DvCols<'a> {
    s: &'a StructArray,
    storage: Str<'a>,
    path: Str<'a>,
    offset: Option<Int<'a>>,
    size: Int<'a>,
    cardinality: Int<'a>,
}

impl<'a> DvCols<'a> {
    fn new(parent: &'a StructArray) -> Option<Self> {
        let s = child(parent, "deletionVector")?.as_struct_opt()?;
        Some(DvCols {
            s,
            storage: str_col(s, "storageType")?,
            path: str_col(s, "pathOrInlineDv")?,
            offset: int_col(s, "offset"),
            size: int_col(s, "sizeInBytes")?,
            cardinality: int_col(s, "cardinality")?,
        })
    }
    fn get(&self, i: usize) -> Result<Option<Box<DeletionVectorDescriptor>>, String> {
        if self.s.is_null(i) {
            return Ok(None);
        }
        Ok(Some(Box::new(DeletionVectorDescriptor {
            storage_type: required(self.storage.get(i), "deletionVector", "storageType", i)?.into(),
            path_or_inline_dv: required(self.path.get(i), "deletionVector", "pathOrInlineDv", i)?
                .into(),
            offset: self
                .offset
                .as_ref()
                .and_then(|o| o.get(i))
                .map(|o| o as i32),
            size_in_bytes: required(self.size.get(i), "deletionVector", "sizeInBytes", i)? as i32,
            cardinality: required(self.cardinality.get(i), "deletionVector", "cardinality", i)?,
            max_row_index: None,
        })))
    }
}

fn decode_batch(
    batch: &RecordBatch,
    out: &mut Actions,
    interner: &mut PartitionInterner,
    deferred: Option<&Arc<DeferredStats>>,
) -> Result<(), String> {
    let col = |name: &str| batch.column_by_name(name).and_then(|c| c.as_struct_opt());
    if let Some(s) = col("add") {
        decode_adds(s, out, interner, deferred)?;
    }
    if let Some(s) = col("remove") {
        decode_removes(s, out, interner)?;
    }
    if let Some(s) = col("metaData") {
        for i in (0..s.len()).filter(|&i| s.is_valid(i)) {
            out.push(Action::Metadata(Box::new(decode_metadata(s, i)?)));
        }
    }
    if let Some(s) = col("protocol") {
        let (r, w) = (
            int_col(s, "minReaderVersion"),
            int_col(s, "minWriterVersion"),
        );
        for i in (0..s.len()).filter(|&i| s.is_valid(i)) {
            out.push(Action::Protocol(Protocol {
                min_reader_version: required(
                    r.as_ref().and_then(|c| c.get(i)),
                    "protocol",
                    "minReaderVersion",
                    i,
                )? as i32,
                min_writer_version: required(
                    w.as_ref().and_then(|c| c.get(i)),
                    "protocol",
                    "minWriterVersion",
                    i,
                )? as i32,
                reader_features: str_list_at(s, "readerFeatures", i),
                writer_features: str_list_at(s, "writerFeatures", i),
            }));
        }
    }
    if let Some(s) = col("txn") {
        let (app, ver, upd) = (
            str_col(s, "appId"),
            int_col(s, "version"),
            int_col(s, "lastUpdated"),
        );
        for i in (0..s.len()).filter(|&i| s.is_valid(i)) {
            out.push(Action::Txn(Txn {
                app_id: required(app.as_ref().and_then(|c| c.get(i)), "txn", "appId", i)?.into(),
                version: required(ver.as_ref().and_then(|c| c.get(i)), "txn", "version", i)?,
                last_updated: upd.as_ref().and_then(|c| c.get(i)),
            }));
        }
    }
    if let Some(s) = col("domainMetadata") {
        let (d, c, r) = (
            str_col(s, "domain"),
            str_col(s, "configuration"),
            bool_col(s, "removed"),
        );
        for i in (0..s.len()).filter(|&i| s.is_valid(i)) {
            out.push(Action::Domain(DomainMetadata {
                domain: required(
                    d.as_ref().and_then(|c| c.get(i)),
                    "domainMetadata",
                    "domain",
                    i,
                )?
                .into(),
                configuration: c.as_ref().and_then(|c| c.get(i)).unwrap_or("").into(),
                removed: bool_at(r, i).unwrap_or(false),
            }));
        }
    }
    if let Some(s) = col("sidecar") {
        let (p, sz, mt) = (
            str_col(s, "path"),
            int_col(s, "sizeInBytes"),
            int_col(s, "modificationTime"),
        );
        for i in (0..s.len()).filter(|&i| s.is_valid(i)) {
            out.push(Action::Sidecar(Sidecar {
                path: required(p.as_ref().and_then(|c| c.get(i)), "sidecar", "path", i)?.into(),
                size_in_bytes: sz.as_ref().and_then(|c| c.get(i)),
                modification_time: mt.as_ref().and_then(|c| c.get(i)),
            }));
        }
    }
    if let Some(s) = col("checkpointMetadata") {
        for _ in (0..s.len()).filter(|&i| s.is_valid(i)) {
            out.push(Action::CheckpointMetadata);
        }
    }
    Ok(())
}

fn decode_adds(
    s: &StructArray,
    out: &mut Actions,
    interner: &mut PartitionInterner,
    deferred: Option<&Arc<DeferredStats>>,
) -> Result<(), String> {
    if s.null_count() == s.len() {
        return Ok(());
    }
    let path = str_col(s, "path").ok_or("add.path column missing or not a string")?;
    let pv = map_col(s, "partitionValues");
    let size = int_col(s, "size");
    let mtime = int_col(s, "modificationTime");
    let data_change = bool_col(s, "dataChange");
    let stats = str_col(s, "stats");
    let stats_parsed = child(s, "stats_parsed").and_then(|a| a.as_struct_opt());
    let tags = map_col(s, "tags");
    let dv = DvCols::new(s);
    let base_row_id = int_col(s, "baseRowId");
    let drcv = int_col(s, "defaultRowCommitVersion");
    let clustering = str_col(s, "clusteringProvider");
    out.adds.reserve(s.len() - s.null_count());
    for i in (0..s.len()).filter(|&i| s.is_valid(i)) {
        out.adds.push(AddFile {
            path: required(path.get(i), "add", "path", i)?.into(),
            partition_values: pv
                .as_ref()
                .and_then(|m| m.entries(i))
                .map(|e| interner.values(e))
                .unwrap_or_default(),
            size: required(size.as_ref().and_then(|c| c.get(i)), "add", "size", i)?,
            modification_time: mtime.as_ref().and_then(|c| c.get(i)).unwrap_or(0),
            data_change: bool_at(data_change, i).unwrap_or(false),
            stats: match (deferred, stats.as_ref().and_then(|c| c.get(i))) {
                (Some(d), _) => Some(StatsText::deferred(d.clone(), out.adds.len() as u32)),
                (None, Some(text)) => Some(text.into()),
                (None, None) => stats_parsed
                    .and_then(|sp| super::stats_json::row_to_json(sp, i))
                    .map(|v| v.to_string().into()),
            },
            deletion_vector: match &dv {
                Some(d) => d.get(i)?,
                None => None,
            },
            extra: AddExtra {
                tags: tags.as_ref().and_then(|m| m.get(i)).map(tags_map),
                base_row_id: base_row_id.as_ref().and_then(|c| c.get(i)),
                default_row_commit_version: drcv.as_ref().and_then(|c| c.get(i)),
                clustering_provider: clustering.as_ref().and_then(|c| c.get(i)).map(Into::into),
            }
            .boxed(),
        });
    }
    Ok(())
}

fn tags_map(pv: Vec<(&str, Option<&str>)>) -> BTreeMap<String, Option<String>> {
    pv.into_iter()
        .map(|(k, v)| (k.into(), v.map(Into::into)))
        .collect()
}

fn decode_removes(
    s: &StructArray,
    out: &mut Actions,
    interner: &mut PartitionInterner,
) -> Result<(), String> {
    if s.null_count() == s.len() {
        return Ok(());
    }
    let path = str_col(s, "path").ok_or("remove.path column missing or not a string")?;
    let ts = int_col(s, "deletionTimestamp");
    let data_change = bool_col(s, "dataChange");
    let ext = bool_col(s, "extendedFileMetadata");
    let pv = map_col(s, "partitionValues");
    let size = int_col(s, "size");
    let dv = DvCols::new(s);
    let base_row_id = int_col(s, "baseRowId");
    let drcv = int_col(s, "defaultRowCommitVersion");
    for i in (0..s.len()).filter(|&i| s.is_valid(i)) {
        out.push(Action::Remove(RemoveFile {
            path: required(path.get(i), "remove", "path", i)?.into(),
            deletion_timestamp: ts.as_ref().and_then(|c| c.get(i)),
            data_change: bool_at(data_change, i).unwrap_or(false),
            extended_file_metadata: bool_at(ext, i),
            partition_values: pv
                .as_ref()
                .and_then(|m| m.entries(i))
                .map(|e| interner.values(e)),
            size: size.as_ref().and_then(|c| c.get(i)),
            deletion_vector: match &dv {
                Some(d) => d.get(i)?,
                None => None,
            },
            base_row_id: base_row_id.as_ref().and_then(|c| c.get(i)),
            default_row_commit_version: drcv.as_ref().and_then(|c| c.get(i)),
        }));
    }
    Ok(())
}

fn decode_metadata(s: &StructArray, i: usize) -> Result<Metadata, String> {
    let get = |name: &str| str_col(s, name).and_then(|c| c.get(i)).map(String::from);
    let format = child(s, "format")
        .and_then(|f| f.as_struct_opt())
        .and_then(|f| {
            let provider = str_col(f, "provider")?.get(i)?.to_string();
            let options = map_col(f, "options")
                .and_then(|m| m.get(i))
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k.into(), v.map(Into::into)))
                .collect();
            Some(Format { provider, options })
        });
    Ok(Metadata {
        id: required(get("id"), "metaData", "id", i)?,
        name: get("name"),
        description: get("description"),
        format: format.unwrap_or_default(),
        schema_string: required(get("schemaString"), "metaData", "schemaString", i)?,
        partition_columns: str_list_at(s, "partitionColumns", i).unwrap_or_default(),
        created_time: int_col(s, "createdTime").and_then(|c| c.get(i)),
        configuration: map_col(s, "configuration")
            .and_then(|m| m.get(i))
            .unwrap_or_default()
            .into_iter()
            .filter_map(|(k, v)| Some((k.into(), v?.into())))
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::File;
    use std::path::{Path, PathBuf};

    fn loc(p: &Path) -> Location {
        Location::local(p)
    }
    use crate::log::actions::visited_stats;
    use parquet::arrow::ArrowWriter;
    use parquet::file::properties::WriterProperties;
    use std::sync::Arc;

    fn lines(adds: usize) -> String {
        lines_with(adds, adds)
    }

    /// `adds` adds (the 5th with a base row id), and a remove after every 11th below
    /// `removes_until`.
    fn lines_with(adds: usize, removes_until: usize) -> String {
        let mut out = String::from(concat!(
            r#"{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}"#,
            "\n",
            r#"{"metaData":{"id":"t","format":{"provider":"parquet","options":{}},"schemaString":"{}","partitionColumns":["p"],"configuration":{}}}"#,
            "\n"
        ));
        for i in 0..adds {
            let pv = if i % 7 == 0 {
                "null".to_string()
            } else {
                format!("\"{}\"", i % 5)
            };
            let stats = if i % 13 == 0 {
                "null".to_string()
            } else {
                format!(r#""{{\"numRecords\":{i}}}""#)
            };
            let row_id = if i == 5 { r#","baseRowId":5"# } else { "" };
            out += &format!(
                r#"{{"add":{{"path":"f{i}.parquet","partitionValues":{{"p":{pv}}},"size":{i},"modificationTime":1,"dataChange":false,"stats":{stats}{row_id}}}}}"#
            );
            out.push('\n');
            if i < removes_until && i % 11 == 0 {
                out += &format!(
                    r#"{{"remove":{{"path":"gone{i}.parquet","deletionTimestamp":5,"dataChange":false}}}}"#
                );
                out.push('\n');
            }
        }
        out
    }

    /// A checkpoint of `adds` adds written with small pages and `rows_per_group` rows per group.
    fn write(dir: &Path, adds: usize, rows_per_group: usize) -> PathBuf {
        let name = format!("{rows_per_group}.checkpoint.parquet");
        write_with(&dir.join(name), &lines(adds), rows_per_group, true)
    }

    /// A checkpoint at `path` of the actions of `lines`, with or without column statistics.
    fn write_with(path: &Path, lines: &str, rows_per_group: usize, statistics: bool) -> PathBuf {
        use parquet::file::properties::EnabledStatistics;
        let schema = Arc::new(crate::commit::checkpoint::schema());
        let mut decoder = arrow_json::ReaderBuilder::new(schema.clone())
            .with_batch_size(lines.len())
            .build_decoder()
            .unwrap();
        decoder.decode(lines.as_bytes()).unwrap();
        let batch = decoder.flush().unwrap().unwrap();
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(rows_per_group))
            .set_data_page_row_count_limit(16)
            .set_write_batch_size(16)
            .set_statistics_enabled(if statistics {
                EnabledStatistics::Page
            } else {
                EnabledStatistics::None
            })
            .build();
        let path = path.to_path_buf();
        let mut writer =
            ArrowWriter::try_new(File::create(&path).unwrap(), schema, Some(props)).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        path
    }

    #[allow(clippy::type_complexity)]
    fn summary(
        a: &Actions,
    ) -> (
        Vec<(
            String,
            Vec<(String, Option<String>)>,
            i64,
            Option<String>,
            Option<i64>,
        )>,
        Vec<String>,
    ) {
        let mut adds: Vec<_> = a
            .adds
            .iter()
            .map(|f| {
                let pv = f
                    .partition_values
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.as_deref().map(String::from)))
                    .collect();
                (
                    f.path.to_string(),
                    pv,
                    f.size,
                    f.stats_text().unwrap().map(|s| s.into_owned()),
                    f.base_row_id(),
                )
            })
            .collect();
        adds.sort();
        let mut other: Vec<_> = a.other.iter().map(|x| format!("{x:?}")).collect();
        other.sort();
        (adds, other)
    }

    /// The leaves skipped are exactly those the footer shows null on every row; without null
    /// counts none are, and either way the same actions are read.
    #[test]
    fn only_leaves_null_in_every_group_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let skipped = |path: &Path| {
            let (_, meta) = open(&loc(path), 3).unwrap();
            let cols = meta.parquet_schema().columns();
            let found: Vec<String> = never_set_leaves(meta.metadata())
                .into_iter()
                .map(|i| cols[i].path().string())
                .collect();
            found
        };
        let has = |found: &[String], prefix: &str| found.iter().any(|p| p.starts_with(prefix));
        // Removes in the first row group only (97 rows per group), a row id on one add.
        let some = write_with(&dir.path().join("some"), &lines_with(600, 80), 97, true);
        let found = skipped(&some);
        for never in [
            "add.deletionVector.",
            "add.defaultRowCommitVersion",
            "txn.",
            "domainMetadata.",
        ] {
            assert!(has(&found, never), "{never} not skipped: {found:?}");
        }
        for set in [
            "remove.path",
            "remove.dataChange",
            "add.path",
            "add.baseRowId",
            "metaData.",
            "protocol.",
        ] {
            assert!(!has(&found, set), "{set} skipped: {found:?}");
        }
        // No removes at all: the whole remove struct, maps included, is skipped.
        let none = write_with(&dir.path().join("none"), &lines_with(600, 0), 97, true);
        let found = skipped(&none);
        assert!(has(&found, "remove.path") && has(&found, "remove.partitionValues"));
        let read = read_parquet_split(&loc(&none), 3, Some(1), 0).unwrap();
        assert_eq!((read.adds.len(), read.other.len()), (600, 2));
        // Without statistics nothing is skipped, and the actions read are the same.
        let bare = write_with(&dir.path().join("bare"), &lines_with(600, 80), 97, false);
        assert_eq!(skipped(&bare), Vec::<String>::new());
        let read = |p: &Path| summary(&read_parquet_split(&loc(p), 3, Some(2), 0).unwrap());
        let (adds, other) = read(&some);
        assert_eq!((adds.len(), other.len()), (600, 2 + 80usize.div_ceil(11)));
        assert_eq!(adds.iter().filter(|a| a.4 == Some(5)).count(), 1);
        assert_eq!(read(&bare), (adds, other));
    }

    #[test]
    fn split_reads_equal_the_whole_read() {
        let dir = tempfile::tempdir().unwrap();
        for rows_per_group in [1000, 97, 5] {
            let path = write(dir.path(), 600, rows_per_group);
            let whole = read_parquet_split(&loc(&path), 3, Some(1), 0).unwrap();
            assert_eq!(whole.adds.len(), 600);
            assert_eq!(whole.other.len(), 2 + 600usize.div_ceil(11));
            let by_path = |p: &str| whole.adds.iter().find(|a| &*a.path == p).unwrap();
            assert_eq!(
                by_path("f7.parquet").stats_text().unwrap().as_deref(),
                Some(r#"{"numRecords":7}"#)
            );
            assert_eq!(by_path("f26.parquet").stats_text().unwrap(), None);
            assert_eq!(
                by_path("f599.parquet").stats_text().unwrap().as_deref(),
                Some(r#"{"numRecords":599}"#)
            );
            for threads in [2, 3, 8] {
                let split = read_parquet_split(&loc(&path), 3, Some(threads), 9).unwrap();
                assert_eq!(
                    summary(&split),
                    summary(&whole),
                    "{rows_per_group} rows per group, {threads} units"
                );
                // Room kept for the adds of the commits after the checkpoint.
                assert!(
                    split.adds.capacity() >= 600 + 9,
                    "{rows_per_group}, {threads}"
                );
            }
        }
    }

    #[test]
    fn deferred_stats_fail_clearly_when_the_checkpoint_is_gone_or_changed() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), 300, 1000);
        let gone = read_parquet_split(&loc(&path), 3, Some(2), 0).unwrap();
        let changed = read_parquet_split(&loc(&path), 3, Some(2), 0).unwrap();
        std::fs::remove_file(&path).unwrap();
        let err = gone.adds[0].stats_text().unwrap_err().to_string();
        assert!(
            err.contains("1000.checkpoint.parquet") && err.contains("version 3"),
            "{err}"
        );
        // Unreadable stats prune nothing.
        let schema = crate::schema::StructType::parse(r#"{"type":"struct","fields":[{"name":"x","type":"long","nullable":true,"metadata":{}}]}"#).unwrap();
        let pred = crate::predicate::Predicate::parse(
            "x > 5",
            &schema,
            crate::schema::ColumnMappingMode::None,
            &[],
        )
        .unwrap();
        assert!(pred.file_may_match(&gone.adds[0], true));
        std::fs::rename(write(dir.path(), 299, 1000), &path).unwrap();
        let err = changed.adds[5].stats_text().unwrap_err().to_string();
        assert!(err.contains("changed since it was loaded"), "{err}");
    }

    #[test]
    fn visited_stats_equal_loaded_stats_and_are_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), 12000, 1500);
        let expected = |adds: &[AddFile]| -> Vec<Option<String>> {
            adds.iter()
                .map(|a| {
                    let i: usize = a.path[1..a.path.len() - 8].parse().unwrap();
                    (i % 13 != 0).then(|| format!(r#"{{"numRecords":{i}}}"#))
                })
                .collect()
        };
        let read = || read_parquet_split(&loc(&path), 3, Some(2), 0).unwrap().adds;
        let adds = read();
        assert_eq!(visited_stats(&adds).unwrap(), expected(&adds));
        // Loaded (and kept) by a lookup, then visited from what was kept.
        let looked_up: Vec<_> = adds
            .iter()
            .map(|a| a.stats_text().unwrap().map(|t| t.into_owned()))
            .collect();
        assert_eq!(looked_up, expected(&adds));
        assert_eq!(visited_stats(&adds).unwrap(), expected(&adds));
        // A visit keeps nothing: once the file is gone, a lookup has nothing to fall back on.
        let fresh = read();
        assert_eq!(visited_stats(&fresh).unwrap(), expected(&fresh));
        // In order with gaps (streamed batch by batch), and out of order (read whole).
        let every_other: Vec<AddFile> = fresh.iter().step_by(2).cloned().collect();
        assert_eq!(visited_stats(&every_other).unwrap(), expected(&every_other));
        let reversed: Vec<AddFile> = fresh.iter().rev().cloned().collect();
        assert_eq!(visited_stats(&reversed).unwrap(), expected(&reversed));
        std::fs::remove_file(&path).unwrap();
        assert!(fresh[1].stats_text().is_err());
        assert!(visited_stats(&fresh).is_err());
    }

    #[test]
    fn work_units_cover_every_row_once() {
        for (groups, threads) in [
            (vec![10], 3),
            (vec![10, 4], 3),
            (vec![1, 1, 1, 1], 2),
            (vec![0, 5], 4),
            (vec![2], 5),
        ] {
            let units = work_units(&groups, threads);
            assert!(units.len() <= threads);
            let mut seen: Vec<Vec<bool>> = groups.iter().map(|&n| vec![false; n]).collect();
            #[allow(clippy::needless_range_loop)] // the row number is part of the message
            for unit in &units {
                for r in unit {
                    for row in r.start..r.end {
                        assert!(
                            !seen[r.group][row],
                            "{groups:?} / {threads}: row {row} of group {} twice",
                            r.group
                        );
                        seen[r.group][row] = true;
                    }
                }
            }
            assert!(
                seen.iter().flatten().all(|&s| s),
                "{groups:?} / {threads}: a row is missing"
            );
        }
    }
}
