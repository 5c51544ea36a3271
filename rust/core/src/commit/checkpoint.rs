//! Writing a checkpoint and `_last_checkpoint` (protocol-notes.md §4, §7): a classic single-file
//! V1 parquet checkpoint, or for tables with `v2Checkpoint` a UUID-named V2 one whose adds and
//! removes sit in parquet sidecars (written in parallel, read back in parallel). Actions are
//! serialised as JSON lines and decoded into the checkpoint schema by `arrow-json`, so the JSON
//! and parquet forms cannot drift apart.

use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use serde_json::json;

use crate::commit::log_store;
use crate::error::{Error, Result};
use crate::log::path::checkpoint_file_name;
use crate::log::segment::log_dir;
use crate::snapshot::Snapshot;
use crate::storage::Location;

/// File actions per sidecar: enough to keep per-file overhead small, few enough that a
/// million-file table spreads over several sidecars that are written and read in parallel.
pub const SIDECAR_ACTIONS: usize = 200_000;

/// `delta.checkpointInterval` (default 10).
pub fn interval(config: &std::collections::BTreeMap<String, String>) -> i64 {
    config
        .get("delta.checkpointInterval")
        .and_then(|v| v.trim().parse::<i64>().ok())
        .filter(|v| *v > 0)
        .unwrap_or(10)
}

fn map_type() -> DataType {
    let entries = Field::new(
        "key_value",
        DataType::Struct(Fields::from(vec![
            Field::new("key", DataType::Utf8, false),
            Field::new("value", DataType::Utf8, true),
        ])),
        false,
    );
    DataType::Map(Arc::new(entries), false)
}

fn list_type() -> DataType {
    DataType::List(Arc::new(Field::new("element", DataType::Utf8, true)))
}

fn strct(fields: Vec<Field>) -> DataType {
    DataType::Struct(Fields::from(fields))
}

fn dv_type() -> DataType {
    strct(vec![
        Field::new("storageType", DataType::Utf8, true),
        Field::new("pathOrInlineDv", DataType::Utf8, true),
        Field::new("offset", DataType::Int32, true),
        Field::new("sizeInBytes", DataType::Int32, true),
        Field::new("cardinality", DataType::Int64, true),
        Field::new("maxRowIndex", DataType::Int64, true),
    ])
}

/// The V1 checkpoint schema.
pub fn schema() -> Schema {
    Schema::new(fields())
}

/// A V2 top-level checkpoint: the V1 columns (its adds and removes are in sidecars, so theirs
/// stay null) plus `checkpointMetadata` and `sidecar`.
fn v2_schema() -> Schema {
    use DataType::*;
    let f = |n: &str, t: DataType| Field::new(n, t, true);
    let mut fields = fields();
    fields.push(f(
        "checkpointMetadata",
        strct(vec![f("version", Int64), f("tags", map_type())]),
    ));
    fields.push(f(
        "sidecar",
        strct(vec![
            f("path", Utf8),
            f("sizeInBytes", Int64),
            f("modificationTime", Int64),
            f("tags", map_type()),
        ]),
    ));
    Schema::new(fields)
}

/// A sidecar holds only `add` and `remove` columns (protocol-notes.md §1).
fn sidecar_schema() -> Schema {
    Schema::new(
        fields()
            .into_iter()
            .filter(|f| f.name() == "add" || f.name() == "remove")
            .collect::<Vec<_>>(),
    )
}

fn fields() -> Vec<Field> {
    use DataType::*;
    let f = |n: &str, t: DataType| Field::new(n, t, true);
    vec![
        f(
            "txn",
            strct(vec![
                f("appId", Utf8),
                f("version", Int64),
                f("lastUpdated", Int64),
            ]),
        ),
        f(
            "add",
            strct(vec![
                f("path", Utf8),
                f("partitionValues", map_type()),
                f("size", Int64),
                f("modificationTime", Int64),
                f("dataChange", Boolean),
                f("stats", Utf8),
                f("tags", map_type()),
                f("deletionVector", dv_type()),
                f("baseRowId", Int64),
                f("defaultRowCommitVersion", Int64),
                f("clusteringProvider", Utf8),
            ]),
        ),
        f(
            "remove",
            strct(vec![
                f("path", Utf8),
                f("deletionTimestamp", Int64),
                f("dataChange", Boolean),
                f("extendedFileMetadata", Boolean),
                f("partitionValues", map_type()),
                f("size", Int64),
                f("deletionVector", dv_type()),
                f("baseRowId", Int64),
                f("defaultRowCommitVersion", Int64),
            ]),
        ),
        f(
            "metaData",
            strct(vec![
                f("id", Utf8),
                f("name", Utf8),
                f("description", Utf8),
                f(
                    "format",
                    strct(vec![f("provider", Utf8), f("options", map_type())]),
                ),
                f("schemaString", Utf8),
                f("partitionColumns", list_type()),
                f("createdTime", Int64),
                f("configuration", map_type()),
            ]),
        ),
        f(
            "protocol",
            strct(vec![
                f("minReaderVersion", Int32),
                f("minWriterVersion", Int32),
                f("readerFeatures", list_type()),
                f("writerFeatures", list_type()),
            ]),
        ),
        f(
            "domainMetadata",
            strct(vec![
                f("domain", Utf8),
                f("configuration", Utf8),
                f("removed", Boolean),
            ]),
        ),
    ]
}

/// A checkpoint's actions as JSON lines: the non-file actions and the file actions (adds, then
/// the removes still inside the retention window), each with its number of lines.
struct Lines {
    other: Vec<u8>,
    other_count: usize,
    files: Vec<u8>,
    file_count: usize,
    adds: usize,
}

fn push_line(v: &serde_json::Value, out: &mut Vec<u8>) {
    serde_json::to_writer(&mut *out, v).expect("JSON values serialize");
    out.push(b'\n');
}

fn action_lines(snap: &Snapshot, now_ms: i64) -> Result<Lines> {
    // A value another writer left unreadable keeps the default here (a checkpoint never fails
    // on it); VACUUM refuses it instead.
    let retention =
        crate::vacuum::configured_retention_ms(snap).unwrap_or(crate::vacuum::DEFAULT_RETENTION_MS);
    let mut other = Vec::new();
    let mut other_count = 0;
    let mut push = |v: serde_json::Value| {
        push_line(&v, &mut other);
        other_count += 1;
    };
    push(json!({ "protocol": snap.protocol() }));
    push(json!({ "metaData": snap.metadata() }));
    let mut txns: Vec<_> = snap.state.txns.values().collect();
    txns.sort_by(|a, b| a.app_id.cmp(&b.app_id));
    for t in txns {
        push(json!({ "txn": t }));
    }
    let mut domains: Vec<_> = snap.state.domains.values().collect();
    domains.sort_by(|a, b| a.domain.cmp(&b.domain));
    for d in domains {
        push(json!({ "domainMetadata": d }));
    }
    let mut files = Vec::new();
    let mut file_count = 0;
    for a in snap.files() {
        let mut v = a.to_json()?;
        v["add"]["dataChange"] = json!(false);
        push_line(&v, &mut files);
        file_count += 1;
    }
    let adds = snap.files().len();
    for r in snap.state.tombstones.values() {
        // A remove without a timestamp cannot be aged; keep it (the conservative side).
        if r.deletion_timestamp.is_some_and(|t| t < now_ms - retention) {
            continue;
        }
        let mut r = r.clone();
        r.data_change = false;
        push_line(&r.to_json(), &mut files);
        file_count += 1;
    }
    Ok(Lines {
        other,
        other_count,
        files,
        file_count,
        adds,
    })
}

/// Decode JSON action lines into `schema` and write them as one ZSTD parquet file.
fn encode(name: &str, schema: Schema, parts: &[&[u8]]) -> Result<Vec<u8>> {
    let schema = Arc::new(schema);
    let arrow_err =
        |e: arrow_schema::ArrowError| Error::invalid(format!("building checkpoint {name}: {e}"));
    let write_err = |e: parquet::errors::ParquetError| {
        Error::invalid(format!("writing checkpoint {name}: {e}"))
    };
    let mut decoder = arrow_json::ReaderBuilder::new(schema.clone())
        .with_batch_size(8192)
        .build_decoder()
        .map_err(arrow_err)?;
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .build();
    let mut buf = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut buf, schema, Some(props)).map_err(write_err)?;
    for part in parts {
        let mut rest = *part;
        while !rest.is_empty() {
            let used = decoder.decode(rest).map_err(arrow_err)?;
            rest = &rest[used..];
            if let Some(batch) = decoder.flush().map_err(arrow_err)? {
                writer.write(&batch).map_err(write_err)?;
            }
        }
    }
    if let Some(batch) = decoder.flush().map_err(arrow_err)? {
        writer.write(&batch).map_err(write_err)?;
    }
    writer.close().map_err(write_err)?;
    Ok(buf)
}

/// Split JSON lines into chunks of at most `per` lines (each chunk ends at a line end).
fn chunks(lines: &[u8], per: usize) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut count = 0;
    for i in memchr::memchr_iter(b'\n', lines) {
        count += 1;
        if count == per {
            out.push(&lines[start..=i]);
            start = i + 1;
            count = 0;
        }
    }
    if start < lines.len() {
        out.push(&lines[start..]);
    }
    out
}

/// Write the snapshot's checkpoint: V2 with sidecars when the table has `v2Checkpoint` (V1
/// checkpoints are not allowed to be multi-part there, and V2 is what its readers expect),
/// classic otherwise; then point `_last_checkpoint` at it.
pub fn write(snap: &Snapshot) -> Result<()> {
    if crate::protocol::has_writer_feature(snap.protocol(), "v2Checkpoint") {
        write_v2(snap)
    } else {
        write_classic(snap)
    }
}

/// A checkpoint asked for outside a commit (`Table.create_checkpoint`): only of a table this
/// client may write, since a checkpoint restates every action of the table.
pub fn create(snap: &Snapshot) -> Result<()> {
    crate::protocol::check_writable(snap.protocol(), &snap.root.to_string(), snap.version())?;
    write(snap)
}

fn write_last_checkpoint(dir: &Location, last: serde_json::Value) -> Result<()> {
    log_store::put_replace(&dir.join("_last_checkpoint"), last.to_string().as_bytes())
}

/// `<version>.checkpoint.<uuid>.parquet` holding the non-file actions, `checkpointMetadata` and
/// one `sidecar` action per `_sidecars/` file. Sidecars are written first, so a reader that
/// finds the top-level file finds everything it names; a writer that dies midway leaves only
/// unreferenced sidecars, which log cleanup deletes.
fn write_v2(snap: &Snapshot) -> Result<()> {
    let dir = log_dir(&snap.root);
    let version = snap.version();
    let now = chrono::Utc::now().timestamp_millis();
    let lines = action_lines(snap, now)?;
    let pieces = chunks(&lines.files, SIDECAR_ACTIONS);
    let n = pieces.len();
    let sidecar_dir = dir.join("_sidecars");
    let written = crate::parallel::map(&(0..n).collect::<Vec<_>>(), |&i| -> Result<_> {
        let name = format!(
            "{version:020}.checkpoint.{:010}.{n:010}.{}.parquet",
            i + 1,
            uuid::Uuid::new_v4()
        );
        let buf = encode(&name, sidecar_schema(), &[pieces[i]])?;
        log_store::put_replace(&sidecar_dir.join(&name), &buf)?;
        Ok(json!({ "sidecar": {
            "path": name,
            "sizeInBytes": buf.len(),
            "modificationTime": chrono::Utc::now().timestamp_millis(),
        }}))
    });
    let mut top = lines.other;
    push_line(
        &json!({ "checkpointMetadata": {
            "version": version,
            "tags": { "numOfAddFiles": lines.adds.to_string() },
        }}),
        &mut top,
    );
    for s in written {
        push_line(&s?, &mut top);
    }
    let name = format!("{version:020}.checkpoint.{}.parquet", uuid::Uuid::new_v4());
    let buf = encode(&name, v2_schema(), &[&top])?;
    log_store::put_replace(&dir.join(&name), &buf)?;
    let size = lines.other_count + 1 + n + lines.file_count;
    write_last_checkpoint(
        &dir,
        json!({ "version": version, "size": size, "sizeInBytes": buf.len(), "numOfAddFiles": lines.adds }),
    )
}

/// `<version>.checkpoint.parquet`.
fn write_classic(snap: &Snapshot) -> Result<()> {
    let dir = log_dir(&snap.root);
    let version = snap.version();
    let name = checkpoint_file_name(version);
    let now = chrono::Utc::now().timestamp_millis();
    let lines = action_lines(snap, now)?;
    let buf = encode(&name, schema(), &[&lines.other, &lines.files])?;
    log_store::put_replace(&dir.join(&name), &buf)?;
    let size = lines.other_count + lines.file_count;
    write_last_checkpoint(
        &dir,
        json!({ "version": version, "size": size, "sizeInBytes": buf.len(), "numOfAddFiles": lines.adds }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_end_at_line_ends() {
        let lines = b"a\nb\nc\nd\ne\n";
        assert_eq!(chunks(lines, 2), vec![&b"a\nb\n"[..], b"c\nd\n", b"e\n"]);
        assert_eq!(chunks(lines, 5), vec![&lines[..]]);
        assert_eq!(chunks(lines, 10), vec![&lines[..]]);
        assert!(chunks(b"", 3).is_empty());
    }

    #[test]
    fn sidecars_hold_only_file_actions() {
        let names: Vec<String> = sidecar_schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        assert_eq!(names, ["add", "remove"]);
        let v2 = v2_schema();
        assert!(v2.field_with_name("checkpointMetadata").is_ok());
        assert!(v2.field_with_name("sidecar").is_ok());
    }
}
