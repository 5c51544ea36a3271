//! A validated, immutable view of the table at one version.

use crate::dv::{self, DeletionBitmap};
use crate::error::{Error, Result};
use crate::isolation::IsolationLevel;
use crate::log::actions::{AddFile, Metadata, Protocol};
use crate::log::replay::LogState;
use crate::partition::{self, Scalar};
use crate::protocol;
use crate::schema::{ColumnMappingMode, DataType, StructType};
use crate::storage::Location;

#[derive(Debug, Clone)]
pub struct PartitionColumn {
    pub name: String,
    pub physical: String,
    pub data_type: DataType,
}

#[derive(Debug, Clone)]
pub struct Snapshot {
    pub root: Location,
    pub state: LogState,
    pub schema: StructType,
    pub mapping: ColumnMappingMode,
    pub partition_columns: Vec<PartitionColumn>,
}

impl Snapshot {
    pub fn from_state(root: &Location, state: LogState) -> Result<Self> {
        let table = root.to_string();
        let log = root.join("_delta_log");
        let protocol = state.protocol.as_ref().ok_or_else(|| {
            Error::corrupt(
                &log,
                Some(state.version),
                "No protocol found: the log up to this version has no protocol action",
            )
        })?;
        protocol::check_readable(protocol, &table, state.version)?;
        let metadata = state.metadata.as_ref().ok_or_else(|| {
            Error::corrupt(
                &log,
                Some(state.version),
                "No metadata found: the log up to this version has no metaData action",
            )
        })?;
        let schema = StructType::parse(&metadata.schema_string).map_err(|m| {
            Error::corrupt(
                &log,
                Some(state.version),
                format!("metaData.schemaString: {m}"),
            )
        })?;
        let mapping = ColumnMappingMode::from_config(
            metadata
                .configuration
                .get("delta.columnMapping.mode")
                .map(String::as_str),
        )?;
        let mut partition_columns = Vec::with_capacity(metadata.partition_columns.len());
        for name in &metadata.partition_columns {
            let field = schema.field(name).ok_or_else(|| {
                Error::corrupt(
                    &log,
                    Some(state.version),
                    format!("partition column {name:?} is not in the schema"),
                )
            })?;
            partition_columns.push(PartitionColumn {
                name: field.name.clone(),
                physical: field.physical_name(mapping).to_string(),
                data_type: field.data_type.clone(),
            });
        }
        Ok(Snapshot {
            root: root.clone(),
            state,
            schema,
            mapping,
            partition_columns,
        })
    }

    pub fn version(&self) -> i64 {
        self.state.version
    }

    pub fn protocol(&self) -> &Protocol {
        self.state
            .protocol
            .as_ref()
            .expect("validated in from_state")
    }

    pub fn metadata(&self) -> &Metadata {
        self.state
            .metadata
            .as_ref()
            .expect("validated in from_state")
    }

    /// Whether writers put deletion vectors in this table (and so row-level concurrency applies):
    /// the `deletionVectors` writer feature and `delta.enableDeletionVectors=true`. The one place
    /// this rule is written.
    pub fn deletion_vectors_enabled(&self) -> bool {
        protocol::has_writer_feature(self.protocol(), "deletionVectors")
            && protocol::is_true(
                &self.metadata().configuration,
                "delta.enableDeletionVectors",
            )
    }

    /// `text` (a `where`) resolved against this version's schema, column mapping and partition
    /// columns: what file skipping, row-group skipping and a transaction's reads judge by.
    pub fn parse_predicate(&self, text: &str) -> Result<crate::Predicate> {
        let parts: Vec<String> = self
            .partition_columns
            .iter()
            .map(|c| c.name.clone())
            .collect();
        crate::Predicate::parse(text, &self.schema, self.mapping, &parts)
    }

    /// This version's commitInfo JSON: kept from the load, else read from its commit file (None:
    /// the commit has none).
    pub fn commit_info(&self) -> Result<Option<String>> {
        if let Some(c) = &self.state.commit_info {
            return Ok(Some(c.to_string()));
        }
        let v = self.version();
        let path = crate::log::path::commit_path(&crate::log::segment::log_dir(&self.root), v);
        crate::log::json::read_commit_info(&path, v)
    }

    pub fn files(&self) -> &[AddFile] {
        &self.state.files
    }

    /// The live files at `indices` (positions in [`Snapshot::files`]), in that order; all of
    /// them when None.
    pub fn files_at(&self, indices: Option<&[usize]>) -> Result<Vec<&AddFile>> {
        let files = self.files();
        let Some(indices) = indices else {
            return Ok(files.iter().collect());
        };
        self.check_indices(indices)?;
        Ok(indices.iter().map(|&i| &files[i]).collect())
    }

    /// An error naming the first of `indices` that is not a position in [`Snapshot::files`].
    pub fn check_indices(&self, indices: &[usize]) -> Result<()> {
        let n = self.files().len();
        match indices.iter().find(|&&i| i >= n) {
            Some(i) => Err(Error::invalid(format!(
                "file index {i} is out of range: version {} has {n} live files",
                self.version()
            ))),
            None => Ok(()),
        }
    }

    pub fn isolation_level(&self) -> Result<IsolationLevel> {
        IsolationLevel::of_table(&self.metadata().configuration)
    }

    /// Look a live file up by its log path, or by its decoded path.
    pub fn file(&self, path: &str) -> Option<&AddFile> {
        if let Some(i) = self.state.file_index(path) {
            return Some(&self.state.files[i]);
        }
        let encoded = crate::uri::encode_log_path(path);
        if let Some(i) = self.state.file_index(&encoded) {
            return Some(&self.state.files[i]);
        }
        self.state.files.iter().find(|f| {
            percent_encoding::percent_decode_str(&f.path)
                .decode_utf8()
                .map(|d| d == path)
                .unwrap_or(false)
        })
    }

    /// Row positions deleted from this file by its DV (empty when it has none).
    pub fn deleted_rows(&self, path: &str) -> Result<DeletionBitmap> {
        let file = self.file(path).ok_or_else(|| {
            Error::invalid(format!(
                "{path:?} is not a live file of {} at version {}",
                self.root,
                self.version()
            ))
        })?;
        self.deleted_rows_of(file)
    }

    pub fn deleted_rows_of(&self, file: &AddFile) -> Result<DeletionBitmap> {
        match &file.deletion_vector {
            None => Ok(DeletionBitmap::default()),
            Some(d) => dv::file::read(&self.root, d).map_err(|e| match e {
                Error::DeletionVector { file: f, message } => Error::DeletionVector {
                    file: f,
                    message: format!(
                        "{message} (DV of data file {} at version {})",
                        file.path,
                        self.version()
                    ),
                },
                other => other,
            }),
        }
    }

    /// The raw (string) value of a partition column for a file, by logical column.
    pub fn raw_partition_value<'a>(
        &self,
        file: &'a AddFile,
        column: &PartitionColumn,
    ) -> Option<&'a str> {
        partition::raw_value(&file.partition_values, &column.physical)
    }

    pub fn typed_partition_value(
        &self,
        file: &AddFile,
        column: &PartitionColumn,
    ) -> Result<Scalar> {
        partition::parse(self.raw_partition_value(file, column), &column.data_type).map_err(|m| {
            Error::corrupt(
                self.root.join("_delta_log"),
                Some(self.version()),
                format!("file {}: partition column {}: {m}", file.path, column.name),
            )
        })
    }

    /// The first of `adds`' data files and deletion-vector files that does not exist, if any
    /// (a VACUUM may have deleted it); asked concurrently (16 requests at once on object
    /// stores).
    pub fn first_missing<'a>(
        &self,
        adds: impl IntoIterator<Item = &'a AddFile>,
    ) -> Result<Option<Location>> {
        let mut locations: Vec<Location> = Vec::new();
        for a in adds {
            locations.push(self.data_path(a)?);
            if let Some(d) = &a.deletion_vector {
                if let Ok(crate::dv::descriptor::DvLocation::File { path, .. }) =
                    d.location(&self.root)
                {
                    locations.push(path);
                }
            }
        }
        let threads = if locations.iter().all(Location::is_local) {
            crate::parallel::available()
        } else {
            16
        };
        let found = crate::parallel::map_on(&locations, threads, |l| l.exists());
        for (at, ok) in locations.into_iter().zip(found) {
            if !ok.map_err(|e| Error::io(&at, e))? {
                return Ok(Some(at));
            }
        }
        Ok(None)
    }

    pub fn data_path(&self, file: &AddFile) -> Result<Location> {
        self.root.resolve(&file.path).map_err(|m| {
            Error::corrupt(
                self.root.join("_delta_log"),
                Some(self.version()),
                format!("add.path {}: {m}", file.path),
            )
        })
    }
}
