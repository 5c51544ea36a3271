//! Where a table lives (a local path, or an object-store URI) and the options that reach it:
//! deltalake's key names (`AWS_ACCESS_KEY_ID`, `AZURE_STORAGE_ACCOUNT_KEY`, ...), any letter case,
//! checked here so that a typo fails when the table is opened, not at its first commit.

use std::collections::BTreeMap;
use std::path::PathBuf;

use percent_encoding::percent_decode_str;

use crate::error::{StorageFault, StorageProblem};

/// The object stores delta-occ commits to atomically (conditional creates).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Cloud {
    S3,
    Azure,
    Gcs,
}

impl Cloud {
    pub fn name(self) -> &'static str {
        match self {
            Cloud::S3 => "S3",
            Cloud::Azure => "Azure",
            Cloud::Gcs => "GCS",
        }
    }
}

/// A parsed table location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Parsed {
    Local(PathBuf),
    Cloud(CloudUri),
}

/// An object-store URI split into its store (scheme and bucket) and the key under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CloudUri {
    pub cloud: Cloud,
    /// `s3://bucket`, `gs://bucket`, `abfss://container@account.dfs.core.windows.net`, ... as the
    /// user wrote it: the prefix of every URI shown for this store.
    pub base: String,
    /// What identifies the store whatever the spelling (`s3a` = `s3`): bucket, or
    /// `account/container` for Azure (the account may come from the options instead).
    pub store_id: String,
    /// The key under the bucket, decoded, without leading or trailing `/` (empty: the bucket).
    pub key: String,
}

fn bad(location: &str, problem: StorageProblem, why: impl std::fmt::Display) -> StorageFault {
    StorageFault::new(Some(problem), format!("{location}: {why}"))
}

/// The scheme of a URI-looking location: letters, digits, `+-.` before a `:` and a `/` (one
/// letter before `:` is a Windows drive, not a scheme).
fn scheme_of(location: &str) -> Option<&str> {
    let (scheme, rest) = location.split_once(':')?;
    let ok = scheme.len() > 1
        && scheme.as_bytes()[0].is_ascii_alphabetic()
        && scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
        && rest.starts_with('/');
    ok.then_some(scheme)
}

fn decode(location: &str, s: &str) -> Result<String, StorageFault> {
    let location = &shown(location);
    percent_decode_str(s)
        .decode_utf8()
        .map(|c| c.into_owned())
        .map_err(|e| {
            bad(
                location,
                StorageProblem::InvalidLocation,
                format!("not UTF-8 after decoding: {e}"),
            )
        })
}

/// `location` as messages may show it: a URI without its query and fragment (a SAS token pasted
/// into it) and without a password in its authority. Local paths as they are.
pub(crate) fn shown(location: &str) -> String {
    let Some((scheme, rest)) = location.split_once("://") else {
        return location.to_string();
    };
    let cut = rest.find(['?', '#']).unwrap_or(rest.len());
    let (mut rest, dropped) = (rest[..cut].to_string(), cut < rest.len());
    let authority_end = rest.find('/').unwrap_or(rest.len());
    if let Some(at) = rest[..authority_end].rfind('@') {
        if let Some(colon) = rest[..at].find(':') {
            rest.replace_range(colon + 1..at, "***");
        }
    }
    format!("{scheme}://{rest}{}", if dropped { "?..." } else { "" })
}

/// Parse a table location: a local path (`~` expanded, made absolute), a `file:` URI, or an
/// `s3://`, `s3a://`, `gs://`, `az://`, `abfs[s]://`, `adl://`, `azure://` URI.
pub(crate) fn parse(location: &str) -> Result<Parsed, StorageFault> {
    let name = shown(location);
    if location.trim().is_empty() {
        return Err(bad(
            "''",
            StorageProblem::InvalidLocation,
            "a table location must not be empty",
        ));
    }
    let Some(scheme) = scheme_of(location) else {
        return Ok(Parsed::Local(local_path(location)));
    };
    let lower = scheme.to_ascii_lowercase();
    if lower == "file" {
        let rest = &location[scheme.len() + 1..];
        let rest = match rest.strip_prefix("//") {
            // file:///abs/path or file://localhost/abs/path
            Some(r) => r.strip_prefix("localhost").unwrap_or(r),
            None => rest,
        };
        return Ok(Parsed::Local(PathBuf::from(decode(location, rest)?)));
    }
    let cloud = match lower.as_str() {
        "s3" | "s3a" => Cloud::S3,
        "gs" => Cloud::Gcs,
        "az" | "abfs" | "abfss" | "adl" | "azure" => Cloud::Azure,
        "dbfs" => {
            return Err(bad(
                &name,
                StorageProblem::UnsupportedScheme,
                "dbfs: paths are not supported: use the URI of the storage behind the DBFS mount (s3://, abfss:// or gs://)",
            ))
        }
        _ => {
            return Err(bad(
                &name,
                StorageProblem::UnsupportedScheme,
                format!("'{scheme}:' locations are not supported (local paths, file://, s3://, s3a://, abfss://, az://, gs://)"),
            ))
        }
    };
    // Checked on the text: URL parsing would resolve `..` silently.
    let rest = &location[scheme.len() + 1..];
    let rest = rest.strip_prefix("//").unwrap_or(rest);
    let raw_path = rest.split_once('/').map_or("", |(_, p)| p);
    let raw_path = raw_path.split(['?', '#']).next().unwrap_or("");
    if raw_path.split('/').any(|s| s == "." || s == "..") {
        return Err(bad(
            &name,
            StorageProblem::InvalidLocation,
            "the path must not contain '.' or '..' segments",
        ));
    }
    let url =
        url::Url::parse(location).map_err(|e| bad(&name, StorageProblem::InvalidLocation, e))?;
    let host = url.host_str().unwrap_or_default();
    if host.is_empty() {
        return Err(bad(
            &name,
            StorageProblem::InvalidLocation,
            format!("no {} named after {scheme}://", bucket_word(cloud)),
        ));
    }
    if url.query().is_some() || url.fragment().is_some() {
        // A SAS token pasted into the URI would end up in every message: options carry secrets.
        return Err(bad(
            &name,
            StorageProblem::InvalidLocation,
            "a table URI takes no query or fragment (pass credentials such as a SAS token in storage_options)",
        ));
    }
    let authority = match url.username() {
        "" => host.to_string(),
        user => format!("{user}@{host}"),
    };
    let store_id = match (cloud, url.username()) {
        (Cloud::Azure, "") => host.to_string(),
        (Cloud::Azure, container) => {
            let account = host.split('.').next().unwrap_or(host);
            format!("{account}/{container}")
        }
        _ => host.to_string(),
    };
    let key = decode(location, url.path())?;
    let key = key.trim_matches('/').to_string();
    if key.split('/').any(|s| s == "." || s == "..") || key.contains("//") {
        return Err(bad(
            &name,
            StorageProblem::InvalidLocation,
            "the path must not contain empty, '.' or '..' segments",
        ));
    }
    Ok(Parsed::Cloud(CloudUri {
        cloud,
        base: format!("{scheme}://{authority}"),
        store_id,
        key,
    }))
}

fn bucket_word(cloud: Cloud) -> &'static str {
    match cloud {
        Cloud::Azure => "container",
        _ => "bucket",
    }
}

/// A local path: `~` expanded, made absolute against the working directory, `.` and `..`
/// resolved lexically (as Python's `os.path.abspath` does).
fn local_path(location: &str) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in absolute_path(location).components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

fn absolute_path(location: &str) -> PathBuf {
    let expanded = match location.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => match std::env::var_os("HOME") {
            Some(home) => {
                let mut p = PathBuf::from(home);
                p.push(rest.trim_start_matches('/'));
                p
            }
            None => PathBuf::from(location),
        },
        _ => PathBuf::from(location),
    };
    std::path::absolute(&expanded).unwrap_or(expanded)
}

/// Options (any letter case) the object store does not know but deltalake users pass.
const IGNORED: &[&str] = &[
    // delta-rs: allow writing without a lock. delta-occ never renames: it creates atomically.
    "aws_s3_allow_unsafe_rename",
];

/// Options for a lock table, which delta-occ refuses to use: its commits rely on the store's
/// conditional creates alone (docs/guide.md "Tables on S3, ADLS and GCS").
const LOCK_TABLE: &[&str] = &[
    "aws_s3_locking_provider",
    "delta_dynamo_table_name",
    "dynamo_lock_table_name",
];

/// Options delta-occ itself reads (retries of each request).
pub(crate) const MAX_RETRIES: &str = "max_retries";
pub(crate) const RETRY_TIMEOUT: &str = "retry_timeout";

/// Storage options, keys lowercased, sorted; checked against the store's key names by the builder.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub(crate) struct Options {
    pub values: BTreeMap<String, String>,
}

impl std::fmt::Debug for Options {
    /// The option names only: their values may be credentials.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.values.keys()).finish()
    }
}

impl Options {
    pub fn new(given: &BTreeMap<String, String>, location: &str) -> Result<Self, StorageFault> {
        let mut values = BTreeMap::new();
        for (k, v) in given {
            let key = k.trim().to_ascii_lowercase();
            if IGNORED.contains(&key.as_str()) {
                continue;
            }
            if LOCK_TABLE.contains(&key.as_str()) {
                return Err(bad(
                    location,
                    StorageProblem::InvalidOptions,
                    format!("storage option {k}: delta-occ uses no lock table; its commits are conditional creates (If-None-Match), which S3, ADLS and GCS provide"),
                ));
            }
            if values.insert(key, v.clone()).is_some() {
                return Err(bad(
                    location,
                    StorageProblem::InvalidOptions,
                    format!("storage option {k} is given twice (in different letter cases)"),
                ));
            }
        }
        Ok(Options { values })
    }

    /// The values to keep out of every message: options (and environment variables) whose name
    /// says they hold a credential.
    pub fn secrets(&self, cloud: Cloud) -> Vec<String> {
        let prefix = match cloud {
            Cloud::S3 => "AWS_",
            Cloud::Azure => "AZURE_",
            Cloud::Gcs => "GOOGLE_",
        };
        let env = std::env::vars().filter(|(k, _)| k.starts_with(prefix));
        let mut out: Vec<String> = self
            .values
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .chain(env.map(|(k, v)| (k.to_ascii_lowercase(), v)))
            .filter(|(k, v)| is_secret_name(k) && v.len() >= 4)
            .map(|(_, v)| v)
            .collect();
        // Longest first: a secret that contains another is replaced whole.
        out.sort_by_key(|s| std::cmp::Reverse(s.len()));
        out.dedup();
        out
    }
}

fn is_secret_name(key: &str) -> bool {
    [
        "secret",
        "key",
        "token",
        "sas",
        "password",
        "credential",
        "signature",
    ]
    .iter()
    .any(|w| key.contains(w))
}

/// `text` with every secret replaced by `***`, and any URI query string (a SAS token, a
/// signature) cut off.
pub(crate) fn redact(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_string();
    for s in secrets {
        if out.contains(s.as_str()) {
            out = out.replace(s.as_str(), "***");
        }
        // A SAS token may appear percent-encoded, or without its leading '?'.
        let trimmed = s.trim_start_matches('?');
        if trimmed.len() >= 4 && out.contains(trimmed) {
            out = out.replace(trimmed, "***");
        }
    }
    for marker in [
        "sig=",
        "X-Amz-Signature=",
        "X-Amz-Credential=",
        "X-Amz-Security-Token=",
    ] {
        while let Some(i) = out.find(marker) {
            let end = out[i..]
                .find(|c: char| c == '&' || c.is_whitespace() || c == '"' || c == '\'' || c == ')')
                .map_or(out.len(), |e| i + e);
            out.replace_range(i..end, "***");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cloud(location: &str) -> CloudUri {
        match parse(location).unwrap() {
            Parsed::Cloud(c) => c,
            other => panic!("{location}: {other:?}"),
        }
    }

    #[test]
    fn locations() {
        let s3 = cloud("s3a://bucket/dir/my%20table/");
        assert_eq!(
            (
                s3.cloud,
                s3.base.as_str(),
                s3.store_id.as_str(),
                s3.key.as_str()
            ),
            (Cloud::S3, "s3a://bucket", "bucket", "dir/my table")
        );
        assert_eq!(cloud("s3://bucket").key, "");
        let az = cloud("abfss://data@acct.dfs.core.windows.net/t");
        assert_eq!(
            (
                az.cloud,
                az.base.as_str(),
                az.store_id.as_str(),
                az.key.as_str()
            ),
            (
                Cloud::Azure,
                "abfss://data@acct.dfs.core.windows.net",
                "acct/data",
                "t"
            )
        );
        assert_eq!(cloud("az://data/x/t").store_id, "data");
        assert_eq!(cloud("gs://b/t").cloud, Cloud::Gcs);
        assert_eq!(
            parse("file:///a%20b/").unwrap(),
            Parsed::Local(PathBuf::from("/a b/"))
        );
        assert_eq!(
            parse("file:/a/b").unwrap(),
            Parsed::Local(PathBuf::from("/a/b"))
        );
        assert_eq!(parse("/x/y").unwrap(), Parsed::Local(PathBuf::from("/x/y")));
        assert!(matches!(parse("rel/t").unwrap(), Parsed::Local(p) if p.is_absolute()));
        assert_eq!(
            parse("/a/./b/../c/").unwrap(),
            Parsed::Local(PathBuf::from("/a/c"))
        );
        for (bad_location, problem) in [
            ("dbfs:/x", StorageProblem::UnsupportedScheme),
            ("dbfs:///x", StorageProblem::UnsupportedScheme),
            ("hdfs://nn/x", StorageProblem::UnsupportedScheme),
            (
                "wasbs://c@a.blob.core.windows.net/x",
                StorageProblem::UnsupportedScheme,
            ),
            ("s3:///x", StorageProblem::InvalidLocation),
            ("s3:/x", StorageProblem::InvalidLocation),
            ("gs:/", StorageProblem::InvalidLocation),
            ("s3://b/a/../c", StorageProblem::InvalidLocation),
            ("az://c/t?sv=1&sig=abc", StorageProblem::InvalidLocation),
            (
                "https://acct.blob.core.windows.net/c/t?sv=1&sig=abc",
                StorageProblem::UnsupportedScheme,
            ),
            ("s3://b/a/../t?sig=abc", StorageProblem::InvalidLocation),
            (
                "wasbs://c@a.blob.core.windows.net/t#sig=abc",
                StorageProblem::UnsupportedScheme,
            ),
            ("", StorageProblem::InvalidLocation),
        ] {
            let e = parse(bad_location).unwrap_err();
            assert_eq!(e.problem, Some(problem), "{bad_location}: {e}");
            assert!(!e.message.contains("sig=abc"), "{e}");
        }
    }

    #[test]
    fn shown_locations_hold_no_secret() {
        assert_eq!(shown("/local/a#b?c"), "/local/a#b?c");
        assert_eq!(shown("az://c/t?sv=1&sig=abc"), "az://c/t?...");
        assert_eq!(shown("s3://key:secret@bucket/t"), "s3://key:***@bucket/t");
        assert_eq!(
            shown("abfss://data@acct.dfs.core.windows.net/t"),
            "abfss://data@acct.dfs.core.windows.net/t"
        );
    }

    #[test]
    fn options_and_secrets() {
        let given = BTreeMap::from([
            (
                "AWS_ACCESS_KEY_ID".to_string(),
                "AKIAEXAMPLEKEY".to_string(),
            ),
            (
                "aws_secret_access_key".to_string(),
                "s3cr3t/value+x".to_string(),
            ),
            ("AWS_REGION".to_string(), "us-east-1".to_string()),
            ("AWS_S3_ALLOW_UNSAFE_RENAME".to_string(), "true".to_string()),
        ]);
        let o = Options::new(&given, "s3://b/t").unwrap();
        assert_eq!(
            o.values.keys().collect::<Vec<_>>(),
            ["aws_access_key_id", "aws_region", "aws_secret_access_key"]
        );
        let secrets = o.secrets(Cloud::S3);
        assert!(secrets.contains(&"s3cr3t/value+x".to_string()));
        assert!(!secrets.contains(&"us-east-1".to_string()));
        let msg =
            "denied for AKIAEXAMPLEKEY with s3cr3t/value+x at https://h/b/k?se=1&sig=AbC%2F&sp=r";
        let r = redact(msg, &secrets);
        assert_eq!(r, "denied for *** with *** at https://h/b/k?se=1&***&sp=r");
        let lock = BTreeMap::from([("AWS_S3_LOCKING_PROVIDER".into(), "dynamodb".into())]);
        let e = Options::new(&lock, "s3://b/t").unwrap_err();
        assert_eq!(e.problem, Some(StorageProblem::InvalidOptions));
        let twice = BTreeMap::from([
            ("AWS_REGION".to_string(), "a".to_string()),
            ("aws_region".to_string(), "b".to_string()),
        ]);
        assert!(Options::new(&twice, "s3://b/t").is_err());
    }
}
