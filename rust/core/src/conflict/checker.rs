//! The file-level checks of concurrency.md §3, in their order. Each check of one winner either
//! fails with the conflict it found or returns the rule that let the winner pass and a sentence
//! saying why, so every decision can be explained afterwards (by rule id, not by the sentence).

use std::collections::{BTreeSet, HashSet};

use crate::error::{Error, Result};
use crate::isolation::IsolationLevel;
use crate::log::actions::{AddFile, PartitionValues, RemoveFile};
use crate::predicate::{FileJudge, Predicate};
use crate::protocol;
use crate::rule::Rule;
use crate::snapshot::{PartitionColumn, Snapshot};
use crate::test_hooks::worded;

use super::WinningCommit;
use crate::error::{Conflict, ConflictKind};

const EMPTY_DIRECTORY_HINT: &str =
    "This happens when multiple writers are writing to an empty directory. \
Creating the table ahead of time will avoid this conflict.";

/// Why a winner did not conflict: the rules that let it pass (most specific first) and the
/// sentences saying so for humans.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passed {
    pub rules: Vec<Rule>,
    pub why: String,
}

impl Passed {
    pub fn new(rule: Rule, why: impl Into<String>) -> Self {
        Passed::from_notes(vec![(rule, why.into())])
    }

    /// One record from the notes of several checks of one winner.
    pub fn from_notes(notes: Vec<(Rule, String)>) -> Self {
        let mut rules: Vec<Rule> = notes.iter().map(|(r, _)| *r).collect();
        rules.sort();
        rules.dedup();
        if rules.is_empty() {
            rules.push(Rule::PassNoCheckFailed);
        }
        let why = notes
            .into_iter()
            .map(|(_, w)| w)
            .collect::<Vec<_>>()
            .join("; ");
        Passed { rules, why }
    }
}

/// What a transaction read (concurrency.md §1 step 1).
#[derive(Debug, Clone, Default)]
pub struct ReadSet {
    pub predicates: Vec<Predicate>,
    /// Log paths of the files its scans returned.
    pub files: HashSet<Box<str>>,
    pub whole_table: bool,
    /// Application ids whose version it asked for.
    pub app_ids: BTreeSet<String>,
}

impl ReadSet {
    pub fn is_empty(&self) -> bool {
        self.predicates.is_empty() && self.files.is_empty() && !self.whole_table
    }
}

/// The transaction as the checks see it.
pub struct TxnView<'a> {
    pub table: &'a str,
    pub read_version: i64,
    /// The level the commit runs at (SnapshotIsolation for dataChange=false-only commits).
    pub level: IsolationLevel,
    pub metadata_changed: bool,
    pub is_blind_append: bool,
    pub read: &'a ReadSet,
    pub removed_paths: &'a HashSet<Box<str>>,
    pub domains: &'a BTreeSet<String>,
    pub adds_data: bool,
    pub identity_columns: bool,
    /// Conflict-time data skipping (§3.5, on by default).
    pub data_skipping: bool,
    pub partition_columns: &'a [PartitionColumn],
    /// The snapshot the txn read (`None` when it creates the table): partition values of files
    /// it read, when a winner's remove lacks them.
    pub read_snapshot: Option<&'a Snapshot>,
}

impl TxnView<'_> {
    fn conflict(&self, kind: ConflictKind, rule: Rule, w: &WinningCommit, reason: String) -> Error {
        debug_assert_eq!(rule.kind(), Some(kind), "{rule:?}");
        Error::Conflict(Box::new(Conflict {
            kind,
            rule,
            fallback: None,
            table: self.table.to_string(),
            winning_version: w.version,
            winning_operation: w.operation.clone(),
            isolation_level: self.level,
            partition_hint: None,
            conflicting_file: None,
            winning_commit_info: w.commit_info.clone(),
            overlapping_rows: None,
            reason: worded(reason),
        }))
    }

    pub(crate) fn file_conflict(
        &self,
        kind: ConflictKind,
        rule: Rule,
        w: &WinningCommit,
        path: &str,
        pv: Option<&PartitionValues>,
        reason: String,
    ) -> Error {
        let mut e = self.conflict(kind, rule, w, reason);
        if let Error::Conflict(c) = &mut e {
            c.conflicting_file = Some(path.to_string());
            c.partition_hint = pv.and_then(|pv| self.hint(pv));
        }
        e
    }

    /// Partition values by logical column name; `None` for an unpartitioned table.
    fn hint(&self, pv: &PartitionValues) -> Option<Vec<(String, Option<String>)>> {
        if self.partition_columns.is_empty() {
            return None;
        }
        Some(
            self.partition_columns
                .iter()
                .map(|c| {
                    (
                        c.name.clone(),
                        crate::partition::raw_value(pv, &c.physical).map(String::from),
                    )
                })
                .collect(),
        )
    }
}

/// Check the transaction against winners in version order: the explanations of all, or the first
/// conflict. The per-winner checks are pure, so they run in parallel and the first failure in
/// version order decides, exactly as a sequential walk would.
pub fn check_all(t: &TxnView, winners: &[WinningCommit]) -> Result<Vec<Passed>> {
    let adds: usize = winners.iter().map(|w| w.adds.len() + w.removes.len()).sum();
    if crate::parallel::threads_for(adds, 20_000) <= 1 {
        let mut j = Judges::new(t);
        return winners.iter().map(|w| check_with(t, w, &mut j)).collect();
    }
    crate::parallel::map_with(winners, || Judges::new(t), |j, w| check_with(t, w, j))
        .into_iter()
        .collect()
}

/// One judge per read predicate, kept across the winners one thread checks, so a partition
/// tuple is judged once per content.
pub struct Judges<'a>(Vec<FileJudge<'a>>);

impl<'a> Judges<'a> {
    pub fn new(t: &TxnView<'a>) -> Self {
        Judges(
            t.read
                .predicates
                .iter()
                .map(|p| FileJudge::new(p, t.data_skipping))
                .collect(),
        )
    }
}

fn check_with<'a>(
    t: &TxnView<'a>,
    w: &'a WinningCommit,
    judges: &mut Judges<'a>,
) -> Result<Passed> {
    check_head(t, w)?;
    let appends = check_appends_with(t, w, judges)?;
    check_deletes(t, w)?;
    check_identity(t, w)?;
    Ok(Passed::new(appends.0, appends.1))
}

/// Checks 1–4 (protocol, metadata, domains, application ids): the same at file and row level.
pub fn check_head(t: &TxnView, w: &WinningCommit) -> Result<()> {
    check_protocol(t, w)?;
    if w.metadata.is_some() {
        return Err(t.conflict(
            ConflictKind::MetadataChanged,
            Rule::MetadataChanged,
            w,
            "Metadata changes (schema, partitioning, table properties, isolation level) fail every concurrent write.".into(),
        ));
    }
    for d in &w.domains {
        if d.domain != "delta.rowTracking" && t.domains.contains(&d.domain) {
            return Err(t.conflict(
                ConflictKind::ConcurrentTransaction,
                Rule::SameDomain,
                w,
                format!("A conflicting metadata domain {} is added.", d.domain),
            ));
        }
    }
    for x in &w.txns {
        if t.read.app_ids.contains(&x.app_id) {
            return Err(t.conflict(
                ConflictKind::ConcurrentTransaction,
                Rule::AppIdRead,
                w,
                format!(
                    "It set the version of application id {:?}, which this transaction read.",
                    x.app_id
                ),
            ));
        }
    }
    Ok(())
}

/// Check 8: identity columns.
pub fn check_identity(t: &TxnView, w: &WinningCommit) -> Result<()> {
    if t.identity_columns && t.adds_data && w.num_data_adds > 0 {
        return Err(t.conflict(
            ConflictKind::ConcurrentWrite,
            Rule::IdentityColumns,
            w,
            "Tables with identity columns do not support concurrent transactions that both add data.".into(),
        ));
    }
    Ok(())
}

fn check_protocol(t: &TxnView, w: &WinningCommit) -> Result<()> {
    let Some(p) = &w.protocol else { return Ok(()) };
    protocol::check_writable(p, t.table, w.version)?;
    let (rule, reason) = if t.read_version < 0 {
        (
            Rule::BothCreatedTable,
            format!("Both transactions created the table. {EMPTY_DIRECTORY_HINT}"),
        )
    } else {
        (
            Rule::ProtocolChanged,
            "A protocol change fails every concurrent writer.".to_string(),
        )
    };
    Err(t.conflict(ConflictKind::ProtocolChanged, rule, w, reason))
}

/// §3 check 5, with the §2 table deciding which added files are candidates.
pub(crate) fn check_appends(t: &TxnView, w: &WinningCommit) -> Result<(Rule, String)> {
    check_appends_with(t, w, &mut Judges::new(t))
}

fn check_appends_with<'a>(
    t: &TxnView<'a>,
    w: &'a WinningCommit,
    judges: &mut Judges<'a>,
) -> Result<(Rule, String)> {
    let n = w.num_data_adds;
    if n == 0 {
        return Ok((Rule::PassNoDataAdded, "it added no data files".into()));
    }
    if let Some(why) = appends_ignored(t, w, n) {
        return Ok(why);
    }
    if t.read.whole_table {
        let (_, a) = w.data_adds().next().expect("n > 0");
        return Err(t.file_conflict(
            ConflictKind::ConcurrentAppend,
            Rule::ConcurrentAppend,
            w,
            &a.path,
            None,
            "This transaction read the whole table.".into(),
        ));
    }
    if t.read.predicates.is_empty() {
        return Ok((
            Rule::PassNoReadPredicate,
            format!("this transaction recorded no read predicate; {n} added files cannot match"),
        ));
    }
    if let Some((a, p)) = first_appended_match(w, &mut judges.0) {
        let what = match &p.text {
            Some(text) => format!("The added file may contain rows matching this transaction's read predicate `{text}`."),
            None => "This transaction scanned the table without a predicate.".to_string(),
        };
        return Err(t.file_conflict(
            ConflictKind::ConcurrentAppend,
            Rule::ConcurrentAppend,
            w,
            &a.path,
            Some(&a.partition_values),
            what,
        ));
    }
    let (rule, how) = if t.data_skipping {
        (Rule::PassDataSkipping, "partition values and statistics")
    } else {
        (Rule::PassPartitions, "partition values")
    };
    Ok((
        rule,
        format!("none of the {n} added files can hold rows matching the read predicates ({how})"),
    ))
}

/// The first dataChange add (in commit order) that may hold rows matching a read predicate, with
/// the first such predicate. Predicates judged by partition alone look at one file per distinct
/// tuple; the others read statistics, and only of the files before the first tuple match.
fn first_appended_match<'a>(
    w: &'a WinningCommit,
    judges: &mut [FileJudge<'a>],
) -> Option<(&'a AddFile, &'a Predicate)> {
    let mut first = w
        .data_partitions
        .iter()
        .find(|(i, key)| {
            judges
                .iter_mut()
                .any(|j| j.by_partition() && j.tuple_may_match(&w.adds[*i], key))
        })
        .map(|(i, _)| i);
    if judges.iter().any(|j| !j.by_partition()) {
        let end = first.unwrap_or(w.adds.len());
        let mut by_stats = w.data_adds().take_while(|(i, _)| *i < end);
        if let Some((i, _)) = by_stats.find(|(_, a)| {
            judges
                .iter_mut()
                .any(|j| !j.by_partition() && j.may_match(a))
        }) {
            first = Some(i);
        }
    }
    let a = &w.adds[first?];
    let j = judges
        .iter_mut()
        .position(|j| j.may_match(a))
        .expect("some predicate matched this file");
    Some((a, judges[j].predicate()))
}

/// Whether the §2 table (or a blind-append txn) makes the winner's `n` added files irrelevant.
pub(crate) fn appends_ignored(t: &TxnView, w: &WinningCommit, n: usize) -> Option<(Rule, String)> {
    if t.is_blind_append {
        return Some((
            Rule::PassBlindAppend,
            format!(
                "this transaction is a blind append; the winner's {n} added files do not matter"
            ),
        ));
    }
    match t.level {
        IsolationLevel::SnapshotIsolation => Some((
            Rule::PassSnapshotIsolation,
            format!(
                "SnapshotIsolation (dataChange=false commit) ignores the winner's {n} added files"
            ),
        )),
        IsolationLevel::WriteSerializable if w.is_blind_append && !t.metadata_changed => Some((
            Rule::PassWriteSerializable,
            format!("WriteSerializable ignores the winner's blind append of {n} files"),
        )),
        _ => None,
    }
}

/// Partition values of a removed file: from the remove, else from the file the txn read.
pub(crate) fn removed_partition(t: &TxnView, r: &RemoveFile) -> Option<PartitionValues> {
    r.partition_values.clone().or_else(|| {
        t.read_snapshot
            .and_then(|s| s.file(&r.path))
            .map(|f| f.partition_values.clone())
    })
}

/// §3 checks 6 and 7.
fn check_deletes(t: &TxnView, w: &WinningCommit) -> Result<()> {
    check_deletes_of(t, w, &w.removes)
}

/// Checks 6 and 7 over some of the winner's removes (all of them at file level; one file at a
/// time on a DV table with row-level concurrency off).
pub(crate) fn check_deletes_of(
    t: &TxnView,
    w: &WinningCommit,
    removes: &[RemoveFile],
) -> Result<()> {
    for r in removes {
        if t.read.files.contains(&r.path) {
            let pv = removed_partition(t, r);
            return Err(t.file_conflict(
                ConflictKind::ConcurrentDeleteRead,
                Rule::DeleteRead,
                w,
                &r.path,
                pv.as_ref(),
                "It removed a file this transaction read.".into(),
            ));
        }
    }
    if t.read.whole_table {
        if let Some(r) = removes.first() {
            return Err(t.file_conflict(
                ConflictKind::ConcurrentDeleteRead,
                Rule::DeleteRead,
                w,
                &r.path,
                None,
                "This transaction read the whole table and the winner removed a file.".into(),
            ));
        }
    }
    for r in removes {
        if t.removed_paths.contains(&r.path) {
            let pv = removed_partition(t, r);
            return Err(t.file_conflict(
                ConflictKind::ConcurrentDeleteDelete,
                Rule::DeleteDelete,
                w,
                &r.path,
                pv.as_ref(),
                "Both transactions remove this file.".into(),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::log::json;
    use crate::schema::{ColumnMappingMode, StructType};

    use crate::test_rng::Rng;

    fn winner(version: i64, rng: &mut Rng) -> WinningCommit {
        let mut text = String::new();
        for i in 0..rng.below(40) {
            let p = match rng.below(6) {
                5 => "null".to_string(),
                n => format!("\"{n}\""),
            };
            let lo = rng.below(100);
            let stats = match rng.below(5) {
                0 => "null".to_string(),
                _ => format!(
                    r#""{{\"numRecords\":3,\"minValues\":{{\"x\":{lo}}},\"maxValues\":{{\"x\":{}}},\"nullCount\":{{\"x\":0}}}}""#,
                    lo + rng.below(20)
                ),
            };
            let data_change = rng.below(6) != 0;
            text.push_str(&format!(
                r#"{{"add":{{"path":"f{version}-{i}","partitionValues":{{"p":{p}}},"size":1,"modificationTime":0,"dataChange":{data_change},"stats":{stats}}}}}"#
            ));
            text.push('\n');
        }
        WinningCommit::from_actions(
            version,
            json::parse_actions(text.as_bytes(), "t.json", Some(version)).unwrap(),
        )
    }

    #[test]
    fn a_pass_lists_its_rules_most_specific_first_once() {
        let p = Passed::from_notes(vec![
            (Rule::PassNoNewDataFiles, "a".into()),
            (Rule::PassDisjointRows, "b".into()),
            (Rule::PassNoNewDataFiles, "c".into()),
            (Rule::PassBinDropped, "d".into()),
        ]);
        assert_eq!(
            p.rules,
            vec![
                Rule::PassBinDropped,
                Rule::PassDisjointRows,
                Rule::PassNoNewDataFiles
            ]
        );
        assert_eq!(p.why, "a; b; c; d", "the sentences keep their order");
        assert_eq!(
            Passed::from_notes(Vec::new()).rules,
            vec![Rule::PassNoCheckFailed]
        );
    }

    /// The judges (one tuple judged once per content, across winners; statistics only before the
    /// first tuple match) find the same first file and predicate as judging every file in turn.
    #[test]
    fn first_match_equals_file_by_file() {
        let schema = StructType::parse(
            r#"{"type":"struct","fields":[{"name":"p","type":"integer","nullable":true,"metadata":{}},{"name":"x","type":"long","nullable":true,"metadata":{}}]}"#,
        )
        .unwrap();
        let texts = [
            "p = 1",
            "x > 90",
            "p = 2 AND x < 10",
            "p IS NULL OR x = 7",
            "p IN (3, 4)",
            "x BETWEEN 40 AND 45",
            "p > 2 AND x > 100",
            "(p = 1 AND x > 3) OR (p = 2 AND x < 1)",
        ];
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for case in 0..300 {
            let preds: Vec<Predicate> = (0..1 + rng.below(3))
                .map(|_| {
                    Predicate::parse(
                        texts[rng.below(texts.len() as u64) as usize],
                        &schema,
                        ColumnMappingMode::None,
                        &["p".into()],
                    )
                    .unwrap()
                })
                .collect();
            let skipping = rng.below(2) == 0;
            let winners: Vec<WinningCommit> = (1..=4).map(|v| winner(v, &mut rng)).collect();
            let mut judges: Vec<FileJudge> =
                preds.iter().map(|p| FileJudge::new(p, skipping)).collect();
            for w in &winners {
                // The file-by-file rule: stats when skipping, else partition-only conjuncts.
                let matches = |p: &Predicate, a: &AddFile| {
                    if skipping {
                        p.file_may_match(a, true)
                    } else {
                        p.partition_matches(a)
                    }
                };
                let expected = w.data_adds().find_map(|(_, a)| {
                    preds
                        .iter()
                        .find(|p| matches(p, a))
                        .map(|p| (&a.path, &p.text))
                });
                let got = first_appended_match(w, &mut judges).map(|(a, p)| (&a.path, &p.text));
                assert_eq!(
                    got, expected,
                    "case {case}, version {}, skipping {skipping}",
                    w.version
                );
            }
        }
    }
}
