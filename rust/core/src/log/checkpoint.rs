//! Reading checkpoints: classic and multi-part V1 parquet, V2 (parquet or JSON) with sidecars.
//! Only the columns replay needs are decoded (`stats_parsed`/`partitionValues_parsed` are skipped).

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, BooleanArray, MapArray, RecordBatch, StructArray};
use arrow_schema::DataType;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;

use super::actions::*;
use super::path::{LogFile, LogFileKind};
use super::segment::CheckpointFiles;
use crate::dv::DeletionVectorDescriptor;
use crate::error::{Error, Result};

const TOP_LEVEL: &[&str] = &["add", "remove", "metaData", "protocol", "txn", "domainMetadata", "sidecar", "checkpointMetadata"];

/// All actions of a checkpoint, sidecars expanded.
pub fn read(log_dir: &Path, cp: &CheckpointFiles) -> Result<Actions> {
    let parts = crate::parallel::map(&cp.files, |f| read_file(f, cp.version));
    let mut actions = Actions::default();
    for p in parts {
        actions.append(p?);
    }
    let sidecars: Vec<PathBuf> = actions
        .other
        .iter()
        .filter_map(|a| match a {
            Action::Sidecar(s) => Some(sidecar_path(log_dir, &s.path)),
            _ => None,
        })
        .collect();
    if !sidecars.is_empty() {
        for part in crate::parallel::map(&sidecars, |p| read_parquet(p, cp.version)) {
            actions.append(part?);
        }
    }
    Ok(actions)
}

fn sidecar_path(log_dir: &Path, path: &str) -> PathBuf {
    match crate::uri::resolve_data_path(&log_dir.join("_sidecars"), path) {
        Ok(p) => p,
        Err(_) => log_dir.join("_sidecars").join(path),
    }
}

fn read_file(f: &LogFile, version: i64) -> Result<Actions> {
    match f.kind {
        LogFileKind::UuidCheckpoint { json: true } => {
            let bytes = std::fs::read(&f.path).map_err(|e| Error::io(&f.path, e))?;
            super::json::parse_actions(&bytes, &f.path, Some(version))
        }
        _ => read_parquet(&f.path, version),
    }
}

/// Read one parquet checkpoint part or sidecar, row groups spread over scoped threads.
pub fn read_parquet(path: &Path, version: i64) -> Result<Actions> {
    let corrupt = |e: &dyn std::fmt::Display| Error::corrupt(path, Some(version), format!("unreadable checkpoint parquet: {e}"));
    let file = File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Error::corrupt(path, Some(version), "checkpoint file (or sidecar) is missing"),
        _ => Error::io(path, e),
    })?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| corrupt(&e))?;
    let row_groups = builder.metadata().num_row_groups();
    let rows = builder.metadata().file_metadata().num_rows().max(0) as usize;
    let threads = crate::parallel::threads_for(rows, 50_000).min(row_groups.max(1));
    drop(builder);
    let groups: Vec<Vec<usize>> = if threads <= 1 {
        vec![(0..row_groups).collect()]
    } else {
        (0..threads).map(|t| (0..row_groups).filter(|g| g % threads == t).collect()).collect()
    };
    let results = crate::parallel::map(&groups, |g| read_row_groups(path, version, g));
    let mut out = Actions::default();
    for r in results {
        out.append(r?);
    }
    Ok(out)
}

fn read_row_groups(path: &Path, version: i64, groups: &[usize]) -> Result<Actions> {
    let corrupt = |e: &dyn std::fmt::Display| Error::corrupt(path, Some(version), format!("unreadable checkpoint parquet: {e}"));
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| corrupt(&e))?;
    let descr = builder.parquet_schema();
    // Checkpoints written with writeStatsAsJson=false carry only `stats_parsed`: read it then.
    let has_json_stats = descr.columns().iter().any(|c| {
        let p = c.path().parts();
        p.len() == 2 && p[0] == "add" && p[1] == "stats"
    });
    let leaves: Vec<usize> = descr
        .columns()
        .iter()
        .enumerate()
        .filter(|(_, c)| {
            let parts = c.path().parts();
            TOP_LEVEL.contains(&parts[0].as_str())
                && !(parts[0] == "add"
                    && parts.len() > 1
                    && (parts[1] == "partitionValues_parsed" || parts[1] == "stats_parsed" && has_json_stats))
        })
        .map(|(i, _)| i)
        .collect();
    let mask = ProjectionMask::leaves(descr, leaves);
    let reader = builder
        .with_projection(mask)
        .with_row_groups(groups.to_vec())
        .with_batch_size(16 * 1024)
        .build()
        .map_err(|e| corrupt(&e))?;
    let mut out = Actions::default();
    let mut interner = PartitionInterner::default();
    for batch in reader {
        let batch = batch.map_err(|e| corrupt(&e))?;
        decode_batch(&batch, &mut out, &mut interner).map_err(|m| Error::corrupt(path, Some(version), m))?;
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
        Some(StrMap { map, keys: Str::new(map.keys())?, values: Str::new(map.values())? })
    }
    /// The entries of row `i` (None when the map is null); entries with a null key are skipped.
    fn entries(&self, i: usize) -> Option<impl Iterator<Item = (&'a str, Option<&'a str>)> + Clone + '_> {
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
    Some((0..values.len()).filter_map(|j| strs.get(j).map(String::from)).collect())
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
            path_or_inline_dv: required(self.path.get(i), "deletionVector", "pathOrInlineDv", i)?.into(),
            offset: self.offset.as_ref().and_then(|o| o.get(i)).map(|o| o as i32),
            size_in_bytes: required(self.size.get(i), "deletionVector", "sizeInBytes", i)? as i32,
            cardinality: required(self.cardinality.get(i), "deletionVector", "cardinality", i)?,
            max_row_index: None,
        })))
    }
}

fn decode_batch(batch: &RecordBatch, out: &mut Actions, interner: &mut PartitionInterner) -> Result<(), String> {
    let col = |name: &str| batch.column_by_name(name).and_then(|c| c.as_struct_opt());
    if let Some(s) = col("add") {
        decode_adds(s, out, interner)?;
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
        let (r, w) = (int_col(s, "minReaderVersion"), int_col(s, "minWriterVersion"));
        for i in (0..s.len()).filter(|&i| s.is_valid(i)) {
            out.push(Action::Protocol(Protocol {
                min_reader_version: required(r.as_ref().and_then(|c| c.get(i)), "protocol", "minReaderVersion", i)? as i32,
                min_writer_version: required(w.as_ref().and_then(|c| c.get(i)), "protocol", "minWriterVersion", i)? as i32,
                reader_features: str_list_at(s, "readerFeatures", i),
                writer_features: str_list_at(s, "writerFeatures", i),
            }));
        }
    }
    if let Some(s) = col("txn") {
        let (app, ver, upd) = (str_col(s, "appId"), int_col(s, "version"), int_col(s, "lastUpdated"));
        for i in (0..s.len()).filter(|&i| s.is_valid(i)) {
            out.push(Action::Txn(Txn {
                app_id: required(app.as_ref().and_then(|c| c.get(i)), "txn", "appId", i)?.into(),
                version: required(ver.as_ref().and_then(|c| c.get(i)), "txn", "version", i)?,
                last_updated: upd.as_ref().and_then(|c| c.get(i)),
            }));
        }
    }
    if let Some(s) = col("domainMetadata") {
        let (d, c, r) = (str_col(s, "domain"), str_col(s, "configuration"), bool_col(s, "removed"));
        for i in (0..s.len()).filter(|&i| s.is_valid(i)) {
            out.push(Action::Domain(DomainMetadata {
                domain: required(d.as_ref().and_then(|c| c.get(i)), "domainMetadata", "domain", i)?.into(),
                configuration: c.as_ref().and_then(|c| c.get(i)).unwrap_or("").into(),
                removed: bool_at(r, i).unwrap_or(false),
            }));
        }
    }
    if let Some(s) = col("sidecar") {
        let (p, sz, mt) = (str_col(s, "path"), int_col(s, "sizeInBytes"), int_col(s, "modificationTime"));
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

fn decode_adds(s: &StructArray, out: &mut Actions, interner: &mut PartitionInterner) -> Result<(), String> {
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
    for i in (0..s.len()).filter(|&i| s.is_valid(i)) {
        out.adds.push(AddFile {
            path: required(path.get(i), "add", "path", i)?.into(),
            partition_values: pv.as_ref().and_then(|m| m.entries(i)).map(|e| interner.values(e)).unwrap_or_default(),
            size: required(size.as_ref().and_then(|c| c.get(i)), "add", "size", i)?,
            modification_time: mtime.as_ref().and_then(|c| c.get(i)).unwrap_or(0),
            data_change: bool_at(data_change, i).unwrap_or(false),
            stats: match stats.as_ref().and_then(|c| c.get(i)) {
                Some(text) => Some(text.into()),
                None => stats_parsed.and_then(|sp| super::stats_json::row_to_json(sp, i)).map(|v| v.to_string().into()),
            },
            tags: tags.as_ref().and_then(|m| m.get(i)).map(tags_map),
            deletion_vector: match &dv {
                Some(d) => d.get(i)?,
                None => None,
            },
            base_row_id: base_row_id.as_ref().and_then(|c| c.get(i)),
            default_row_commit_version: drcv.as_ref().and_then(|c| c.get(i)),
            clustering_provider: clustering.as_ref().and_then(|c| c.get(i)).map(Into::into),
        });
    }
    Ok(())
}

fn tags_map(pv: Vec<(&str, Option<&str>)>) -> Box<BTreeMap<String, Option<String>>> {
    Box::new(pv.into_iter().map(|(k, v)| (k.into(), v.map(Into::into))).collect())
}

fn decode_removes(s: &StructArray, out: &mut Actions, interner: &mut PartitionInterner) -> Result<(), String> {
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
            partition_values: pv.as_ref().and_then(|m| m.entries(i)).map(|e| interner.values(e)),
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
    let format = child(s, "format").and_then(|f| f.as_struct_opt()).and_then(|f| {
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
