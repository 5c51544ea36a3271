//! What a commit records of each winner it was checked against and passed (written into
//! `commitInfo.deltaOcc.checkedWinners` for `delta-occ explain`).

use crate::conflict::{Passed, WinningCommit};
use crate::rule::Rule;
use crate::test_hooks::worded;

/// Why one winner did not conflict: the rules that let it pass (most specific first; what
/// programs read) and `outcome`, the sentence for humans.
#[derive(Debug, Clone)]
pub struct CheckRecord {
    pub version: i64,
    pub operation: String,
    pub rules: Vec<Rule>,
    pub outcome: String,
}

impl CheckRecord {
    pub(super) fn passed(w: &WinningCommit, p: Passed) -> Self {
        CheckRecord {
            version: w.version,
            operation: w.operation.clone(),
            rules: p.rules,
            outcome: worded(format!("no conflict: {}", p.why)),
        }
    }
}
