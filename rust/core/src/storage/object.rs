//! S3, Azure Blob / ADLS Gen2 and GCS as a [`Storage`], through the `object_store` crate. A commit
//! is a conditional create (`PutMode::Create`: `If-None-Match: *` on S3 and Azure,
//! `x-goog-if-generation-match: 0` on GCS), checked once per process against the store before
//! the first commit. Requests run on this process's runtime ([`super::process`]); clients are
//! made per process and shared by every table of one store and configuration.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path as ObjectPath;
use object_store::{
    GetOptions, GetRange, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload,
};

use super::options::{self, Cloud, CloudUri, Options};
use super::process::{block_on, PerProcess};
use super::{Entry, FileReader, Location, Storage};
use crate::error::{StorageFault, StorageProblem};

/// Whole objects fetched at once by `get_many` (commits of a log replay, winners of a retry).
const CONCURRENT_GETS: usize = 32;

pub(super) struct ObjectStorage {
    uri: CloudUri,
    options: Options,
    secrets: Vec<String>,
    client: PerProcess<Result<Arc<dyn ObjectStore>, String>>,
    checked: PerProcess<AtomicBool>,
    /// The store as Hadoop names it (see `hadoop_base`), worked out once.
    hadoop_base: String,
}

impl std::fmt::Debug for ObjectStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the options: they hold credentials.
        write!(f, "ObjectStorage({})", self.uri.base)
    }
}

/// The location of a table in an object store. Every table of one store and configuration
/// shares one storage (and its connections).
pub(super) fn root(uri: CloudUri, options: Options) -> Result<Location, StorageFault> {
    type Registry = Mutex<HashMap<(String, Options, Vec<(String, String)>), Arc<ObjectStorage>>>;
    static REGISTRY: PerProcess<Registry> = PerProcess::new();
    let env: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| {
            ["AWS_", "AZURE_", "AZURITE_", "GOOGLE_"]
                .iter()
                .any(|p| k.starts_with(p))
        })
        .collect();
    let id = (
        format!("{}#{}", uri.base, uri.store_id),
        options.clone(),
        env,
    );
    let registry = REGISTRY.get_or_init(Default::default);
    let mut known = registry.lock().unwrap_or_else(|p| p.into_inner());
    let storage = match known.get(&id) {
        Some(s) => s.clone(),
        None => {
            let secrets = options.secrets(uri.cloud);
            // Built once here so that a bad option fails now; each process builds its own.
            build(&uri, &options).map_err(|m| {
                StorageFault::new(
                    Some(StorageProblem::InvalidOptions),
                    options::redact(&format!("{}: {m}", uri.base), &secrets),
                )
            })?;
            let uri = CloudUri {
                key: String::new(),
                ..uri.clone()
            };
            let s = Arc::new(ObjectStorage {
                hadoop_base: hadoop_base(&uri, &options),
                uri,
                options,
                secrets,
                client: PerProcess::new(),
                checked: PerProcess::new(),
            });
            known.insert(id, s.clone());
            s
        }
    };
    Ok(Location::new(storage, uri.key))
}

/// The store as Hadoop names it: `s3a://bucket` for S3; for Azure the ABFS form
/// `abfss://container@account.dfs.core.windows.net` (the account from the URI or the
/// options); `gs://bucket` as it is.
fn hadoop_base(uri: &CloudUri, options: &Options) -> String {
    let (scheme, rest) = uri.base.split_once("://").unwrap_or(("", &uri.base));
    match (uri.cloud, scheme) {
        (Cloud::S3, _) => format!("s3a://{rest}"),
        (Cloud::Azure, "abfs" | "abfss") => uri.base.clone(),
        (Cloud::Azure, _) => {
            let account = ["azure_storage_account_name", "account_name"]
                .iter()
                .find_map(|k| options.values.get(*k).cloned())
                .or_else(|| std::env::var("AZURE_STORAGE_ACCOUNT_NAME").ok());
            match account {
                Some(a) => format!("abfss://{rest}@{a}.dfs.core.windows.net"),
                None => uri.base.clone(),
            }
        }
        (Cloud::Gcs, _) => uri.base.clone(),
    }
}

/// `retry_timeout`: seconds, or a number with `ms`, `s` or `m`.
fn duration(key: &str, v: &str) -> Result<Duration, String> {
    let v = v.trim();
    let (num, scale) = if let Some(n) = v.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = v.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = v.strip_suffix('m') {
        (n, 60.0)
    } else {
        (v, 1.0)
    };
    num.trim()
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && *x >= 0.0)
        .map(|x| Duration::from_secs_f64(x * scale))
        .ok_or_else(|| format!("storage option {key}={v:?} is not a duration (e.g. 30s)"))
}

fn build(uri: &CloudUri, options: &Options) -> Result<Arc<dyn ObjectStore>, String> {
    let mut retry = object_store::RetryConfig::default();
    let mut rest: BTreeMap<&str, &str> = BTreeMap::new();
    for (k, v) in &options.values {
        match k.as_str() {
            options::MAX_RETRIES => {
                retry.max_retries = v
                    .trim()
                    .parse()
                    .map_err(|_| format!("storage option {k}={v:?} is not a number of retries"))?
            }
            options::RETRY_TIMEOUT => retry.retry_timeout = duration(k, v)?,
            _ => {
                rest.insert(k, v);
            }
        }
    }
    let unknown = |k: &str| {
        format!(
            "unknown storage option {k:?} for {} (deltalake's key names, e.g. {})",
            uri.cloud.name(),
            match uri.cloud {
                Cloud::S3 => "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_ENDPOINT_URL, AWS_ALLOW_HTTP",
                Cloud::Azure => "AZURE_STORAGE_ACCOUNT_NAME, AZURE_STORAGE_ACCOUNT_KEY, AZURE_STORAGE_SAS_TOKEN",
                Cloud::Gcs => "GOOGLE_SERVICE_ACCOUNT, GOOGLE_SERVICE_ACCOUNT_KEY, GOOGLE_BEARER_TOKEN",
            }
        )
    };
    let url = format!("{}/", uri.base);
    // The three builders share no trait: one recipe, written once.
    macro_rules! build_with {
        ($builder:ty) => {{
            let mut b = <$builder>::from_env().with_url(url).with_retry(retry);
            for (k, v) in rest {
                b = b.with_config(k.parse().map_err(|_| unknown(k))?, v);
            }
            Arc::new(b.build().map_err(|e| e.to_string())?) as Arc<dyn ObjectStore>
        }};
    }
    let store = match uri.cloud {
        Cloud::S3 => build_with!(object_store::aws::AmazonS3Builder),
        Cloud::Azure => build_with!(object_store::azure::MicrosoftAzureBuilder),
        Cloud::Gcs => build_with!(object_store::gcp::GoogleCloudStorageBuilder),
    };
    Ok(store)
}

fn contains_any(text: &str, needles: &[&str]) -> bool {
    needles.iter().any(|n| text.contains(n))
}

impl ObjectStorage {
    fn client(&self) -> io::Result<&Arc<dyn ObjectStore>> {
        self.client
            .get_or_init(|| build(&self.uri, &self.options))
            .as_ref()
            .map_err(|m| {
                StorageFault::new(
                    Some(StorageProblem::InvalidOptions),
                    options::redact(m, &self.secrets),
                )
                .into_io(io::ErrorKind::InvalidInput)
            })
    }

    fn path(&self, key: &str) -> io::Result<ObjectPath> {
        ObjectPath::parse(key).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{}: not a valid object key: {e}", self.uri(key)),
            )
        })
    }

    /// An `object_store` error as an I/O error naming `key`, without any secret.
    fn fault(&self, key: &str, e: object_store::Error) -> io::Error {
        use io::ErrorKind as K;
        use object_store::Error as E;
        let mut text = options::redact(&e.to_string(), &self.secrets);
        if text.len() > 600 {
            let mut cut = 600;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            text.push_str(" ...");
        }
        let bucket_gone = contains_any(
            &text,
            &[
                "NoSuchBucket",
                "ContainerNotFound",
                "The specified bucket does not exist",
                "bucket does not exist",
                "Bucket not found",
            ],
        );
        let bad_key = contains_any(
            &text,
            &[
                "SignatureDoesNotMatch",
                "InvalidAccessKeyId",
                "AuthenticationFailed",
                "InvalidSecurity",
                "invalid_grant",
                "AuthorizationFailure",
                "Server failed to authenticate",
            ],
        );
        // Errors of listings and multi-step requests arrive as Generic: their status tells.
        let forbidden = contains_any(&text, &["403 Forbidden", "401 Unauthorized"]);
        // The instance metadata service is asked only when no other credentials are there.
        let no_credentials = contains_any(&text, &["169.254.169.254", "latest/api/token"]);
        let (kind, problem) = match &e {
            _ if bucket_gone => (K::NotFound, Some(StorageProblem::BucketNotFound)),
            _ if no_credentials => (K::PermissionDenied, Some(StorageProblem::Unauthenticated)),
            E::NotFound { .. } => (K::NotFound, None),
            E::AlreadyExists { .. } | E::Precondition { .. } => (K::AlreadyExists, None),
            E::Unauthenticated { .. } => {
                (K::PermissionDenied, Some(StorageProblem::Unauthenticated))
            }
            E::PermissionDenied { .. } if bad_key => {
                (K::PermissionDenied, Some(StorageProblem::Unauthenticated))
            }
            E::PermissionDenied { .. } => {
                (K::PermissionDenied, Some(StorageProblem::PermissionDenied))
            }
            E::NotSupported { .. } | E::NotImplemented { .. } => (K::Unsupported, None),
            _ if bad_key => (K::PermissionDenied, Some(StorageProblem::Unauthenticated)),
            _ if forbidden => (K::PermissionDenied, Some(StorageProblem::PermissionDenied)),
            _ => (K::Other, None),
        };
        let what = match problem {
            Some(StorageProblem::BucketNotFound) => {
                format!(
                    "{}: the bucket or container does not exist: {text}",
                    self.uri.base
                )
            }
            Some(StorageProblem::Unauthenticated) if no_credentials => format!(
                "{}: no credentials: none in storage_options or the environment (AWS_ACCESS_KEY_ID, \
                 AWS_SECRET_ACCESS_KEY, ...), and no instance metadata service answered: {text}",
                self.uri(key)
            ),
            Some(StorageProblem::Unauthenticated) => format!(
                "{}: the credentials were refused (a wrong or expired key?): {text}",
                self.uri(key)
            ),
            Some(StorageProblem::PermissionDenied) => format!(
                "{}: permission denied (a read-only credential?): {text}",
                self.uri(key)
            ),
            _ => format!("{}: {text}", self.uri(key)),
        };
        StorageFault::new(problem, what).into_io(kind)
    }

    fn no_conditional_creates(&self, detail: &str) -> io::Error {
        let (how, header) = match self.uri.cloud {
            Cloud::S3 => ("PutObject with If-None-Match: *", "AWS S3 has it since 2024, as do MinIO, Ceph RGW and Cloudflare R2; check the store's version and that no proxy drops the header"),
            Cloud::Azure => ("Put Blob with If-None-Match: *", "every Azure Blob Storage and ADLS Gen2 account has it"),
            Cloud::Gcs => ("an upload with x-goog-if-generation-match: 0", "every GCS bucket has it"),
        };
        StorageFault::new(
            Some(StorageProblem::NoConditionalWrites),
            format!(
                "{} does not honour conditional creates ({how}): {detail}. Two writers could then \
                 publish the same version, so delta-occ does not commit here ({header}; there is \
                 no lock-table fallback)",
                self.uri.base
            ),
        )
        .into_io(io::ErrorKind::Unsupported)
    }

    fn create(&self, key: &str, bytes: &[u8]) -> io::Result<bool> {
        let client = self.client()?;
        let path = self.path(key)?;
        let opts = PutOptions {
            mode: PutMode::Create,
            ..Default::default()
        };
        let payload = PutPayload::from(Bytes::copy_from_slice(bytes));
        match block_on(client.put_opts(&path, payload, opts)) {
            Ok(_) => Ok(true),
            Err(object_store::Error::AlreadyExists { .. }) => Ok(false),
            Err(object_store::Error::NotImplemented { .. }) => Err(self.no_conditional_creates(
                "conditional creates are disabled in this configuration (aws_conditional_put)",
            )),
            Err(e) => Err(self.fault(key, e)),
        }
    }
}

impl Storage for ObjectStorage {
    /// `base/key`, the key quoted as Hadoop quotes a path (space, `%`, `#`, `?`, ... escaped),
    /// so that parsing the URI gives the key back and Spark reports the same string.
    fn uri(&self, key: &str) -> String {
        quoted_under(&self.uri.base, key)
    }

    fn hadoop_path(&self, key: &str) -> String {
        format!("{}/{key}", self.hadoop_base)
    }

    fn hadoop_uri(&self, key: &str) -> String {
        quoted_under(&self.hadoop_base, key)
    }

    fn join(&self, key: &str, rel: &str) -> String {
        let rel = rel.trim_start_matches('/');
        if key.is_empty() {
            rel.to_string()
        } else {
            format!("{key}/{rel}")
        }
    }

    fn list(
        &self,
        dir: &str,
        start_after: Option<&str>,
        recursive: bool,
    ) -> io::Result<Vec<Entry>> {
        let client = self.client()?;
        let prefix = (!dir.is_empty()).then(|| self.path(dir)).transpose()?;
        let under = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        let offset = start_after
            .map(|a| self.path(&format!("{under}{a}")))
            .transpose()?;
        let stream = match &offset {
            Some(o) => client.list_with_offset(prefix.as_ref(), o),
            None => client.list(prefix.as_ref()),
        };
        let metas: Vec<object_store::ObjectMeta> =
            block_on(stream.try_collect()).map_err(|e| self.fault(dir, e))?;
        let mut out: Vec<Entry> = metas
            .into_iter()
            .filter_map(|m| {
                let name = m
                    .location
                    .as_ref()
                    .strip_prefix(under.as_str())?
                    .to_string();
                (recursive || !name.contains('/')).then_some(Entry {
                    name,
                    size: m.size,
                    modified: Some(m.last_modified.timestamp_millis()),
                })
            })
            // Some stores ignore the offset (Azurite): the listing must not depend on it.
            .filter(|e| start_after.is_none_or(|a| e.name.as_str() > a))
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    fn get(&self, key: &str) -> io::Result<Bytes> {
        let client = self.client()?;
        let path = self.path(key)?;
        block_on(async { client.get(&path).await?.bytes().await }).map_err(|e| self.fault(key, e))
    }

    fn get_range(&self, key: &str, range: Range<u64>) -> io::Result<Bytes> {
        if range.is_empty() {
            return Ok(Bytes::new());
        }
        let client = self.client()?;
        let path = self.path(key)?;
        block_on(client.get_range(&path, range)).map_err(|e| self.fault(key, e))
    }

    fn get_ranges(&self, key: &str, ranges: &[Range<u64>]) -> io::Result<Vec<Bytes>> {
        let client = self.client()?;
        let path = self.path(key)?;
        block_on(client.get_ranges(&path, ranges)).map_err(|e| self.fault(key, e))
    }

    fn get_many(&self, keys: &[&str]) -> Vec<io::Result<Bytes>> {
        let client = match self.client() {
            Ok(c) => c,
            Err(e) => {
                return keys
                    .iter()
                    .map(|_| Err(crate::error::clone_io(&e)))
                    .collect()
            }
        };
        block_on(
            futures::stream::iter(keys.iter().map(|&key| async move {
                let path = self.path(key)?;
                let got = async { client.get(&path).await?.bytes().await }.await;
                got.map_err(|e| self.fault(key, e))
            }))
            .buffered(CONCURRENT_GETS)
            .collect(),
        )
    }

    fn head(&self, key: &str) -> io::Result<u64> {
        let client = self.client()?;
        let path = self.path(key)?;
        block_on(client.head(&path))
            .map(|m| m.size)
            .map_err(|e| self.fault(key, e))
    }

    fn put_if_absent(&self, key: &str, bytes: &[u8]) -> io::Result<bool> {
        self.create(key, bytes)
    }

    fn put(&self, key: &str, bytes: &[u8]) -> io::Result<()> {
        let client = self.client()?;
        let path = self.path(key)?;
        let payload = PutPayload::from(Bytes::copy_from_slice(bytes));
        block_on(client.put(&path, payload))
            .map(|_| ())
            .map_err(|e| self.fault(key, e))
    }

    fn delete(&self, key: &str) -> io::Result<()> {
        let client = self.client()?;
        let path = self.path(key)?;
        match block_on(client.delete(&path)) {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.fault(key, e)),
        }
    }

    fn open(self: Arc<Self>, key: &str, tail: u64) -> io::Result<FileReader> {
        let client = self.client()?.clone();
        let path = self.path(key)?;
        if self.uri.cloud != Cloud::Azure {
            // One request: the tail (a parquet footer) and, with it, the size.
            let opts = GetOptions {
                range: Some(GetRange::Suffix(tail)),
                ..Default::default()
            };
            let got = block_on(async {
                let r = client.get_opts(&path, opts).await?;
                let (range, size) = (r.range.clone(), r.meta.size);
                Ok::<_, object_store::Error>((range.start, size, r.bytes().await?))
            });
            match got {
                Ok((start, size, bytes)) => {
                    return Ok(FileReader::remote(self, key, size, Some((start, bytes))))
                }
                // An empty object (416) or a store without suffix ranges: head, then a range.
                Err(object_store::Error::NotSupported { .. })
                | Err(object_store::Error::NotImplemented { .. }) => {}
                Err(e) if e.to_string().contains("416") => {}
                Err(e) => return Err(self.fault(key, e)),
            }
        }
        // Azure has no suffix ranges: the size first.
        let size = self.head(key)?;
        let start = size.saturating_sub(tail);
        let tail = self.get_range(key, start..size)?;
        Ok(FileReader::remote(self, key, size, Some((start, tail))))
    }

    fn key_of(&self, absolute: &str) -> Result<String, String> {
        match options::parse(absolute) {
            Ok(options::Parsed::Cloud(c))
                if c.cloud == self.uri.cloud && same_store(&c, &self.uri) =>
            {
                Ok(c.key)
            }
            Ok(_) => Err(format!(
                "{absolute} is not in {} (the table's storage)",
                self.uri.base
            )),
            Err(e) => Err(e.message),
        }
    }

    fn check_conditional_creates(&self, log_dir: &str) -> io::Result<()> {
        let checked = self.checked.get_or_init(|| AtomicBool::new(false));
        if checked.load(Ordering::Acquire) {
            return Ok(());
        }
        let probe = self.join(
            log_dir,
            &super::probe::name(chrono::Utc::now().timestamp_millis()),
        );
        let first = self.create(&probe, b"delta-occ checks conditional creates\n");
        let second = match first {
            Ok(true) => self.create(&probe, b"a second create must fail\n"),
            Ok(false) => Ok(false),
            Err(e) => return Err(e),
        };
        // A credential that may write but not delete leaves the hidden probe behind: harmless
        // (readers skip names starting with '.'), no reason to refuse commits, and removed by a
        // later log cleanup once stale (see `probe`), as is one whose process was killed here.
        let _ = self.delete(&probe);
        match second {
            Ok(false) => {}
            Ok(true) => {
                return Err(self.no_conditional_creates(
                    "a second conditional create of one new object succeeded",
                ))
            }
            Err(e) => return Err(e),
        }
        checked.store(true, Ordering::Release);
        Ok(())
    }
}

/// `base/key`, the key quoted as `java.net.URI` quotes a path.
fn quoted_under(base: &str, key: &str) -> String {
    let mut out = base.to_string();
    if !key.is_empty() {
        out.push('/');
        crate::uri::quote_java_path(key, &mut out);
    }
    out
}

/// The same bucket (`s3` and `s3a` alike) or Azure container; an Azure account counts where both
/// URIs name one (`az://container` takes the account from the options).
fn same_store(a: &CloudUri, b: &CloudUri) -> bool {
    match (
        a.cloud,
        a.store_id.split_once('/'),
        b.store_id.split_once('/'),
    ) {
        (Cloud::Azure, Some(_), Some(_)) => a.store_id == b.store_id,
        (Cloud::Azure, ..) => {
            let container = |id: &str| id.rsplit('/').next().unwrap_or(id).to_string();
            container(&a.store_id) == container(&b.store_id)
        }
        _ => a.store_id == b.store_id,
    }
}
