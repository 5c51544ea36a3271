//! Paths in the log are RFC 2396 URI-encoded; table locations may be `file://` URIs.

use std::path::{Path, PathBuf};

use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, CONTROLS};

/// Turn a local path or `file:` URI into a path. Other schemes are not supported yet.
pub fn to_local_path(location: &str) -> Result<PathBuf, String> {
    if let Some(rest) = location.strip_prefix("file://") {
        // file:///abs/path or file://localhost/abs/path
        let rest = rest.strip_prefix("localhost").unwrap_or(rest);
        return Ok(PathBuf::from(decode(rest)?));
    }
    if let Some(rest) = location.strip_prefix("file:") {
        return Ok(PathBuf::from(decode(rest)?));
    }
    if let Some((scheme, _)) = location.split_once("://") {
        if !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        {
            return Err(format!(
                "'{scheme}://' locations are not supported yet (local paths and file:// only)"
            ));
        }
    }
    Ok(PathBuf::from(location))
}

fn decode(s: &str) -> Result<String, String> {
    percent_decode_str(s)
        .decode_utf8()
        .map(|c| c.into_owned())
        .map_err(|e| format!("{s:?} is not UTF-8 after decoding: {e}"))
}

/// Resolve an `add.path` against the table root: decode exactly once; absolute URIs stand alone.
pub fn resolve_data_path(root: &Path, log_path: &str) -> Result<PathBuf, String> {
    if log_path.contains("://") || log_path.starts_with("file:") {
        return to_local_path(log_path);
    }
    let decoded = decode(log_path)?;
    if decoded.starts_with('/') {
        return Ok(PathBuf::from(decoded));
    }
    Ok(root.join(decoded))
}

/// Characters escaped when writing a relative path into the log (what Hadoop's Path.toUri does for
/// the characters that matter: space, %, and the URI delimiters).
const PATH_ESCAPE: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'%')
    .add(b'"')
    .add(b'#')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'`')
    .add(b'{')
    .add(b'}')
    .add(b'[')
    .add(b']')
    .add(b'^')
    .add(b'|')
    .add(b'\\');

pub fn encode_log_path(relative: &str) -> String {
    utf8_percent_encode(relative, PATH_ESCAPE).to_string()
}

/// The string Spark reports as `_metadata.file_path` for a local file: `file:` and the absolute
/// path quoted as `java.net.URI`'s multi-argument constructors quote a path (Hadoop's
/// `Path.toUri`). ASCII outside RFC 2396's path characters is escaped (space, `%`, `#`, `?`,
/// `[]{}`, ...); other characters stay, except Unicode space separators and controls. Escapes are
/// the UTF-8 bytes in upper-case hex. A wrong key silently resurrects deleted rows, so the Spark
/// layer checks every key it joins on.
pub fn spark_file_key(path: &str) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(path.len() + 8);
    out.push_str("file:");
    for c in path.chars() {
        if kept_in_java_uri_path(c) {
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                let _ = write!(out, "%{b:02X}");
            }
        }
    }
    out
}

fn kept_in_java_uri_path(c: char) -> bool {
    if c.is_ascii() {
        // unreserved (alphanumerics and marks), the pchar extras, and the segment separators
        c.is_ascii_alphanumeric() || "-_.!~*'()/;:@&=+$,".contains(c)
    } else {
        // java: !(Character.isSpaceChar(c) || Character.isISOControl(c)); for non-ASCII characters
        // Rust's White_Space set adds only controls to Java's space separators.
        !(c.is_whitespace() || c.is_control())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_once() {
        // golden delta-rs/delta-0.8.0-special-partition: log path x=A%252FA → directory x=A%2FA
        assert_eq!(
            resolve_data_path(Path::new("/t"), "x=A%252FA/p.parquet").unwrap(),
            PathBuf::from("/t/x=A%2FA/p.parquet")
        );
        assert_eq!(
            to_local_path("file:///a%20b/").unwrap(),
            PathBuf::from("/a b/")
        );
        assert_eq!(to_local_path("file:/a/b").unwrap(), PathBuf::from("/a/b"));
        assert!(to_local_path("s3://bucket/x").is_err());
        assert_eq!(
            encode_log_path("x=A%2FA/a b.parquet"),
            "x=A%252FA/a%20b.parquet"
        );
    }

    #[test]
    fn spark_keys() {
        // Facts measured with pyspark 4.3 (issue 15): space % # ? [ ] { } escaped; non-ASCII + * = kept.
        let cases = [
            ("/t/p=a b/f.parquet", "file:/t/p=a%20b/f.parquet"),
            ("/t/p=50%/f", "file:/t/p=50%25/f"),
            ("/t/p=#?/f", "file:/t/p=%23%3F/f"),
            ("/t/p=[1]{2}/f", "file:/t/p=%5B1%5D%7B2%7D/f"),
            ("/t/p=é+*=ü/f", "file:/t/p=é+*=ü/f"),
            ("/t/p=\u{a0}\u{3000}/f", "file:/t/p=%C2%A0%E3%80%80/f"),
            ("/t/p=\u{85}\t/f", "file:/t/p=%C2%85%09/f"),
            ("/t/p=\"<>`^|\\/f", "file:/t/p=%22%3C%3E%60%5E%7C%5C/f"),
            ("/t/p=!~'()&$,;:@/f", "file:/t/p=!~'()&$,;:@/f"),
        ];
        for (path, key) in cases {
            assert_eq!(spark_file_key(path), key, "{path:?}");
        }
    }
}
