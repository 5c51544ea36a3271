//! Writing a classic (single-file, V1) parquet checkpoint and `_last_checkpoint`
//! (protocol-notes.md §4, §7). Actions are serialised as JSON lines and decoded into the
//! checkpoint schema by `arrow-json`, so the JSON and parquet forms cannot drift apart.

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

pub fn schema() -> Schema {
    use DataType::*;
    let f = |n: &str, t: DataType| Field::new(n, t, true);
    Schema::new(vec![
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
    ])
}

/// The checkpoint's actions as JSON lines, and how many adds they hold.
fn action_lines(snap: &Snapshot, now_ms: i64) -> Result<(Vec<u8>, usize, usize)> {
    // A value another writer left unreadable keeps the default here (a checkpoint never fails
    // on it); VACUUM refuses it instead.
    let retention =
        crate::vacuum::configured_retention_ms(snap).unwrap_or(crate::vacuum::DEFAULT_RETENTION_MS);
    let mut out = Vec::new();
    let mut n = 0;
    let mut push = |v: serde_json::Value, out: &mut Vec<u8>| {
        serde_json::to_writer(&mut *out, &v).expect("JSON values serialize");
        out.push(b'\n');
        n += 1;
    };
    push(json!({ "protocol": snap.protocol() }), &mut out);
    push(json!({ "metaData": snap.metadata() }), &mut out);
    let mut txns: Vec<_> = snap.state.txns.values().collect();
    txns.sort_by(|a, b| a.app_id.cmp(&b.app_id));
    for t in txns {
        push(json!({ "txn": t }), &mut out);
    }
    let mut domains: Vec<_> = snap.state.domains.values().collect();
    domains.sort_by(|a, b| a.domain.cmp(&b.domain));
    for d in domains {
        push(json!({ "domainMetadata": d }), &mut out);
    }
    for a in snap.files() {
        let mut v = a.to_json()?;
        v["add"]["dataChange"] = json!(false);
        push(v, &mut out);
    }
    let adds = snap.files().len();
    for r in snap.state.tombstones.values() {
        // A remove without a timestamp cannot be aged; keep it (the conservative side).
        if r.deletion_timestamp.is_some_and(|t| t < now_ms - retention) {
            continue;
        }
        let mut r = r.clone();
        r.data_change = false;
        push(r.to_json(), &mut out);
    }
    Ok((out, n, adds))
}

/// Write `<version>.checkpoint.parquet` for the snapshot and point `_last_checkpoint` at it.
pub fn write(snap: &Snapshot) -> Result<()> {
    let dir = log_dir(&snap.root);
    let version = snap.version();
    let name = checkpoint_file_name(version);
    let path = dir.join(&name);
    let now = chrono::Utc::now().timestamp_millis();
    let (lines, size, adds) = action_lines(snap, now)?;
    let schema = Arc::new(schema());
    let arrow_err =
        |e: arrow_schema::ArrowError| Error::invalid(format!("building checkpoint {name}: {e}"));
    let mut decoder = arrow_json::ReaderBuilder::new(schema.clone())
        .with_batch_size(8192)
        .build_decoder()
        .map_err(arrow_err)?;
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .build();
    let mut buf = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut buf, schema, Some(props))
        .map_err(|e| Error::invalid(format!("writing checkpoint {name}: {e}")))?;
    let mut rest = &lines[..];
    while !rest.is_empty() {
        let used = decoder.decode(rest).map_err(arrow_err)?;
        rest = &rest[used..];
        if let Some(batch) = decoder.flush().map_err(arrow_err)? {
            writer
                .write(&batch)
                .map_err(|e| Error::invalid(format!("writing checkpoint {name}: {e}")))?;
        }
    }
    if let Some(batch) = decoder.flush().map_err(arrow_err)? {
        writer
            .write(&batch)
            .map_err(|e| Error::invalid(format!("writing checkpoint {name}: {e}")))?;
    }
    writer
        .close()
        .map_err(|e| Error::invalid(format!("writing checkpoint {name}: {e}")))?;
    log_store::put_replace(&path, &buf)?;
    let last = json!({ "version": version, "size": size, "sizeInBytes": buf.len(), "numOfAddFiles": adds });
    log_store::put_replace(&dir.join("_last_checkpoint"), last.to_string().as_bytes())
}
