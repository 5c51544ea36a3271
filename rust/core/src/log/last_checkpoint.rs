//! `_delta_log/_last_checkpoint`: an advisory hint. Missing, empty, corrupt or stale files are
//! tolerated; listing is what decides.

use std::path::Path;

use serde::Deserialize;

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct LastCheckpoint {
    pub version: i64,
    #[serde(default)]
    pub size: Option<i64>,
    #[serde(default)]
    pub parts: Option<u32>,
}

/// `Ok(None)` when the file is absent or unusable (the reason is returned for diagnostics).
pub fn read(log_dir: &Path) -> (Option<LastCheckpoint>, Option<String>) {
    let path = log_dir.join("_last_checkpoint");
    match std::fs::read(&path) {
        Ok(bytes) => match serde_json::from_slice::<LastCheckpoint>(&bytes) {
            Ok(lc) if lc.version >= 0 => (Some(lc), None),
            Ok(lc) => (None, Some(format!("negative version {}", lc.version))),
            Err(e) => (
                None,
                Some(format!(
                    "{} is not valid JSON ({e}); listing the log instead",
                    path.display()
                )),
            ),
        },
        Err(_) => (None, None),
    }
}
