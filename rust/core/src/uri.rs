//! Paths in the log are RFC 2396 URI-encoded (resolving them against a table is
//! [`crate::storage::Location::resolve`]); the keys Spark gives local files.

use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};

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
///
/// An object-store URI (`s3://bucket/key`) gets the same quoting of its path, under the scheme
/// Hadoop reads it with (`s3a` for `s3`).
pub fn spark_file_key(path: &str) -> String {
    if let Some((scheme, rest)) = path.split_once("://").filter(|_| !path.starts_with('/')) {
        // An object-store URI as the core shows it is quoted by these rules already.
        return format!("{}://{rest}", if scheme == "s3" { "s3a" } else { scheme });
    }
    let mut out = String::with_capacity(path.len() + 8);
    out.push_str("file:");
    quote_java_path(path, &mut out);
    out
}

/// `path` quoted as `java.net.URI`'s multi-argument constructors quote a path (see
/// [`spark_file_key`]), appended to `out`: how object-store URIs are shown, so that Spark's
/// `_metadata.file_path` and the core's URI of a file are one string.
pub(crate) fn quote_java_path(path: &str, out: &mut String) {
    use std::fmt::Write;
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
    fn object_store_keys_are_the_uri_shown() {
        assert_eq!(
            spark_file_key("s3://b/t/p=a%20b%2525c/f.parquet"),
            "s3a://b/t/p=a%20b%2525c/f.parquet"
        );
        assert_eq!(spark_file_key("gs://b/t/f"), "gs://b/t/f");
    }

    #[test]
    fn encode_once() {
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
