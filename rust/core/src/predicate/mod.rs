//! Read predicates: a `where` text compiled by the row evaluator ([`crate::rowexpr`], the one SQL
//! front end) against the table schema, the skipping form derived from it ([`derive`]), split
//! into partition-only and data conjuncts, evaluated on partition values and file statistics.

mod derive;
pub mod eval;
pub mod expr;
pub mod stats_layout;

use arrow_schema::{Field, Schema};

use crate::error::Result;
use crate::log::actions::{AddFile, RawStats};
use crate::partition::Scalar;
use crate::rowexpr::{self, scalar_json, Conjunct};
use crate::schema::{ColumnMappingMode, DataType, StructType};
use crate::schema_arrow::{arrow_type, Names};
pub use expr::{ColumnRef, Expr};

#[derive(Debug, Clone)]
pub struct Predicate {
    /// The text as given (`None` for "no predicate": every row).
    pub text: Option<String>,
    pub expr: Expr,
    pub columns: Vec<ColumnRef>,
    /// AND of the conjuncts that reference only partition columns; `None` when there are none.
    pub partition_expr: Option<Expr>,
    /// Whether some conjunct references a data column or cannot be evaluated.
    pub has_data_conjuncts: bool,
    /// Every top-level primitive column of the table: what the row evaluator resolves the text
    /// against (it also reads columns that skipping ignores, such as function arguments).
    pub table_columns: Vec<ColumnRef>,
}

impl Predicate {
    /// Every row (a scan without a predicate).
    pub fn all() -> Self {
        Predicate {
            text: None,
            expr: Expr::bool(true),
            columns: vec![],
            partition_expr: None,
            has_data_conjuncts: false,
            table_columns: vec![],
        }
    }

    pub fn parse(
        text: &str,
        schema: &StructType,
        mapping: ColumnMappingMode,
        partition_columns: &[String],
    ) -> Result<Self> {
        // The columns as the row evaluator sees them (a type Arrow cannot hold is left out: a
        // text naming it is an unknown column, as it is to the evaluator).
        let fields: Vec<Field> = schema
            .fields
            .iter()
            .filter_map(|f| {
                let t = arrow_type(&f.data_type, Names::Logical).ok()?;
                Some(Field::new(&f.name, t, true))
            })
            .collect();
        let compiled =
            rowexpr::compile_conjuncts(text, &Schema::new(fields), rowexpr::zone::DEFAULT)?;
        let mut d = derive::Deriver::new(schema, mapping, partition_columns);
        let parts: Vec<Expr> = compiled
            .iter()
            .map(|c| match c {
                Conjunct::Compiled(e) => d.conjunct(e),
                Conjunct::Lacking {
                    sql, deterministic, ..
                } => Expr::Opaque {
                    sql: sql.clone(),
                    columns: vec![],
                    deterministic: *deterministic,
                },
            })
            .collect();
        let expr = derive::flatten_and(parts);
        let columns = d.columns;
        let conjuncts = match &expr {
            Expr::And(v) => v.clone(),
            other => vec![other.clone()],
        };
        let (mut part, mut data) = (Vec::new(), false);
        for c in conjuncts {
            let mut cols = Vec::new();
            c.collect_columns(&mut cols);
            if !c.has_opaque() && cols.iter().all(|&i| columns[i].partition) {
                part.push(c);
            } else {
                data = true;
            }
        }
        let partition_expr = (!part.is_empty()).then(|| derive::flatten_and(part));
        let table_columns = schema
            .fields
            .iter()
            .filter(|f| matches!(f.data_type, DataType::Primitive(_) | DataType::Decimal(..)))
            .map(|f| ColumnRef {
                name: f.name.clone(),
                physical: f.physical_name(mapping).to_string(),
                field_id: f.field_id(mapping),
                data_type: f.data_type.clone(),
                partition: partition_columns
                    .iter()
                    .any(|p| p.eq_ignore_ascii_case(&f.name)),
            })
            .collect();
        Ok(Predicate {
            text: Some(text.to_string()),
            expr,
            columns,
            partition_expr,
            has_data_conjuncts: data,
            table_columns,
        })
    }

    pub fn is_all(&self) -> bool {
        self.text.is_none() || matches!(self.expr, Expr::Literal(Scalar::Boolean(true)))
    }

    /// Do the file's partition values satisfy the partition-only conjuncts (exactly; NULL never
    /// satisfies a comparison)? A partition value that does not parse counts as a match.
    pub fn partition_matches(&self, file: &AddFile) -> bool {
        let Some(e) = &self.partition_expr else {
            return true;
        };
        let mut values = Vec::with_capacity(self.columns.len());
        for c in &self.columns {
            if !c.partition {
                values.push(Scalar::Null);
                continue;
            }
            match eval::partition_value(&file.partition_values, c) {
                Ok(v) => values.push(v),
                Err(_) => return true,
            }
        }
        eval::eval(e, &values) == Some(true)
    }

    /// Can some row of the file satisfy the whole predicate, judging by partition values and
    /// (when `use_stats`) statistics?
    pub fn file_may_match(&self, file: &AddFile, use_stats: bool) -> bool {
        if self.is_all() {
            return true;
        }
        // Stats that cannot be read (a deferred checkpoint gone since load) prune nothing.
        let stats = if use_stats && self.has_data_conjuncts {
            file.stats_text().ok().flatten()
        } else {
            None
        };
        let d = eval::domains(
            &self.columns,
            &file.partition_values,
            stats.as_deref(),
            use_stats,
        );
        eval::may_match(&self.expr, &d)
    }

    /// Whether some row of a part of a data file (a parquet row group) whose Delta stats JSON is
    /// `stats` may satisfy the predicate. Partition columns count as unknown (not as NULL, as
    /// in a file without their values): the file was judged by them already.
    pub fn stats_may_match(&self, stats: &str) -> bool {
        if self.is_all() || !self.has_data_conjuncts {
            return true;
        }
        let pv = crate::log::actions::PartitionValues::default();
        let mut d = eval::domains(&self.columns, &pv, Some(stats), true);
        for (domain, c) in d.iter_mut().zip(&self.columns) {
            if c.partition {
                *domain = eval::Domain::Unknown;
            }
        }
        eval::may_match(&self.expr, &d)
    }

    /// Exactly deterministic, and free of nested/complex references (row-level evaluation).
    pub fn is_deterministic(&self) -> bool {
        self.expr.is_deterministic()
    }
}

/// The indexes of `files` that may hold rows matching `pred`: partition pruning, then stats
/// skipping. The stats of the files whose partition can match are read in one pass (a
/// checkpoint's or a large commit's are streamed and not kept); when some cannot be read, files
/// are judged one by one, and unreadable stats prune nothing.
pub fn select_files(pred: &Predicate, files: &[AddFile]) -> Vec<usize> {
    let mut judge = FileJudge::new(pred, true);
    let streamed = if judge.by_partition() {
        None
    } else {
        judge_streamed(&mut judge, files)
    };
    streamed.unwrap_or_else(|| {
        files
            .iter()
            .enumerate()
            .filter(|(_, f)| judge.may_match(f))
            .map(|(i, _)| i)
            .collect()
    })
}

/// The indexes of `files` that `judge` keeps, the stats of those whose tuple passes read through
/// [`crate::log::actions::visit_stats`]. None when some stats cannot be read.
fn judge_streamed<'a>(judge: &mut FileJudge<'a>, files: &'a [AddFile]) -> Option<Vec<usize>> {
    let candidates: Vec<usize> = if judge.prunes_by_tuple() {
        (0..files.len())
            .filter(|&i| judge.tuple_passes(&files[i]))
            .collect()
    } else {
        (0..files.len()).collect()
    };
    let all: Vec<&AddFile> = candidates.iter().map(|&i| &files[i]).collect();
    let mut hits = Vec::new();
    let mut k = 0;
    crate::log::actions::visit_stats(&all, &mut |raw| {
        if judge.may_match_raw(all[k], raw) {
            hits.push(candidates[k]);
        }
        k += 1;
        Ok(())
    })
    .ok()?;
    Some(hits)
}

/// Judges many files against one predicate: the partition part once per distinct partition
/// tuple, statistics only for files whose partition can match, buffers reused between files.
/// Files must outlive the judge, since tuples are recognised by their shared allocation.
pub struct FileJudge<'a> {
    pred: &'a Predicate,
    use_stats: bool,
    by_tuple: hashbrown::HashMap<usize, bool>,
    by_key: hashbrown::HashMap<Box<[u8]>, bool>,
    scratch: eval::Scratch,
    /// Unescaped stats of the file being judged, reused (a String per file was a fifth of a
    /// 1M-file scan).
    text: String,
}

impl<'a> FileJudge<'a> {
    pub fn new(pred: &'a Predicate, use_stats: bool) -> Self {
        let scratch = eval::Scratch::for_expr(&pred.expr, pred.columns.len());
        FileJudge {
            pred,
            use_stats,
            by_tuple: Default::default(),
            by_key: Default::default(),
            scratch,
            text: String::new(),
        }
    }

    pub fn predicate(&self) -> &'a Predicate {
        self.pred
    }

    /// Whether a file's verdict depends on its partition tuple alone.
    pub fn by_partition(&self) -> bool {
        self.pred.is_all() || !self.use_stats || !self.pred.has_data_conjuncts
    }

    /// [`Predicate::file_may_match`], with the judge's `use_stats`.
    pub fn may_match(&mut self, file: &'a AddFile) -> bool {
        self.may_match_with(file, |f| f.raw_stats().ok().flatten())
    }

    /// [`FileJudge::may_match`] with the file's stats as given (read by the caller, for many
    /// files at once: [`crate::log::actions::visit_stats`]); None prunes nothing by stats.
    pub(crate) fn may_match_raw(&mut self, file: &'a AddFile, raw: Option<RawStats<'_>>) -> bool {
        self.may_match_with(file, |_| raw)
    }

    /// Whether `file`'s partition tuple lets it match (once per tuple). A file it rules out needs
    /// no stats; for a judge [`by_partition`](Self::by_partition) it is the whole verdict.
    pub(crate) fn tuple_passes(&mut self, file: &'a AddFile) -> bool {
        if !self.prunes_by_tuple() {
            return true;
        }
        let id = file.partition_values.id();
        if let Some(v) = self.by_tuple.get(&id) {
            return *v;
        }
        let v = self.tuple_verdict(file);
        self.by_tuple.insert(id, v);
        v
    }

    /// Whether [`tuple_passes`](Self::tuple_passes) can be false (not so without a
    /// partition-only conjunct when stats are used).
    pub(crate) fn prunes_by_tuple(&self) -> bool {
        self.by_partition() || self.pred.partition_expr.is_some()
    }

    fn may_match_with<'s>(
        &mut self,
        file: &'a AddFile,
        stats_of: impl FnOnce(&'a AddFile) -> Option<RawStats<'s>>,
    ) -> bool {
        let tuple = self.tuple_passes(file);
        if self.by_partition() || !tuple {
            return tuple;
        }
        // Unreadable stats prune nothing.
        let stats = match stats_of(file) {
            Some(RawStats::Plain(text)) => Some(text),
            Some(raw) => {
                self.text.clear();
                raw.write_text(&mut self.text)
                    .ok()
                    .map(|()| self.text.as_str())
            }
            None => None,
        };
        let d = eval::domains_into(
            &self.pred.columns,
            &file.partition_values,
            stats,
            true,
            &mut self.scratch,
        );
        eval::may_match(&self.pred.expr, d)
    }

    /// The verdict of a judge [`by_partition`](Self::by_partition) for `file`, whose partition
    /// tuple has the content key `key`: judged once per distinct content.
    pub fn tuple_may_match(&mut self, file: &'a AddFile, key: &[u8]) -> bool {
        debug_assert!(self.by_partition());
        if let Some(v) = self.by_key.get(key) {
            return *v;
        }
        let v = self.tuple_verdict(file);
        self.by_key.insert(key.into(), v);
        v
    }

    /// Without data conjuncts (or stats) the whole verdict is the tuple's; otherwise a false
    /// partition part already rules the file out.
    /// Without statistics only the partition-only conjuncts count (delta-spark ignores data
    /// predicates there), so a data conjunct inside an OR cannot rule a file out.
    fn tuple_verdict(&self, file: &AddFile) -> bool {
        if self.use_stats && self.by_partition() {
            self.pred.file_may_match(file, true)
        } else {
            self.pred.partition_matches(file)
        }
    }
}

/// The expression as JSON, for the Spark integration, which builds a Spark column from it (the
/// embedded engine evaluates rows with [`crate::rowexpr`]). Literals carry their kind; dates are days, timestamps µs.
impl Predicate {
    pub fn to_json(&self) -> serde_json::Value {
        expr_json(&self.expr, &self.columns)
    }
}

fn expr_json(e: &Expr, cols: &[ColumnRef]) -> serde_json::Value {
    use serde_json::json;
    let all = |v: &[Expr]| v.iter().map(|x| expr_json(x, cols)).collect::<Vec<_>>();
    match e {
        Expr::Literal(v) => scalar_json(v),
        Expr::Column(i) => json!({"col": cols[*i].name}),
        Expr::Cmp(op, l, r) => {
            json!({"op": op.as_str(), "left": expr_json(l, cols), "right": expr_json(r, cols)})
        }
        Expr::And(v) => json!({"op": "and", "args": all(v)}),
        Expr::Or(v) => json!({"op": "or", "args": all(v)}),
        Expr::IsNull(x, n) => {
            json!({"op": if *n { "is_not_null" } else { "is_null" }, "arg": expr_json(x, cols)})
        }
        Expr::In(x, list, n) => {
            json!({"op": "in", "negated": n, "arg": expr_json(x, cols), "values": list.iter().map(scalar_json).collect::<Vec<_>>()})
        }
        Expr::Like {
            expr,
            pattern,
            negated,
            case_insensitive,
        } => {
            json!({"op": "like", "arg": expr_json(expr, cols), "pattern": pattern, "negated": negated, "case_insensitive": case_insensitive})
        }
        Expr::Opaque { sql, .. } => json!({"op": "opaque", "sql": sql}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::actions::PartitionValues;
    use crate::rowexpr::RowExpr;

    fn schema() -> StructType {
        StructType::parse(
            r#"{"type":"struct","fields":[
            {"name":"p","type":"integer","nullable":true,"metadata":{}},
            {"name":"d","type":"date","nullable":true,"metadata":{}},
            {"name":"x","type":"long","nullable":true,"metadata":{}},
            {"name":"s","type":"string","nullable":true,"metadata":{}},
            {"name":"t","type":"timestamp","nullable":true,"metadata":{}}]}"#,
        )
        .unwrap()
    }

    fn pred(text: &str) -> Predicate {
        Predicate::parse(
            text,
            &schema(),
            ColumnMappingMode::None,
            &["p".to_string(), "d".to_string()],
        )
        .unwrap()
    }

    /// A row group is judged by its stats alone: a partition column is unknown there, never
    /// NULL (`p IS NOT NULL` must not rule a group out), and a data bound still does.
    #[test]
    fn row_group_stats_judge_data_columns_only() {
        let stats =
            r#"{"numRecords":2,"minValues":{"x":1},"maxValues":{"x":50},"nullCount":{"x":0}}"#;
        for (text, may) in [
            ("x > 10", true),
            ("x > 50", false),
            ("x > 10 AND p IS NOT NULL", true),
            ("x > 10 AND p IS NULL", true),
            ("x > 50 AND p = 3", false),
            ("x > 50 OR p = 3", true),
            ("x IS NULL", false),
            ("p = 3", true),
        ] {
            assert_eq!(pred(text).stats_may_match(stats), may, "{text}");
        }
    }

    fn file(p: Option<&str>, stats: Option<&str>) -> AddFile {
        let pv: PartitionValues = vec![
            ("p".into(), p.map(Into::into)),
            ("d".into(), Some("2024-01-01".into())),
        ]
        .into();
        AddFile {
            path: "f".into(),
            partition_values: pv,
            size: 1,
            modification_time: 0,
            data_change: true,
            stats: stats.map(Into::into),
            deletion_vector: None,
            extra: None,
        }
    }

    #[test]
    fn partition_split() {
        let p = pred("p = 1 AND x > 5");
        assert!(p.partition_expr.is_some() && p.has_data_conjuncts);
        let p = pred("p = 1 OR x > 5");
        assert!(p.partition_expr.is_none() && p.has_data_conjuncts);
        let p = pred("p >= 2 AND d = '2024-01-01'");
        assert!(p.partition_expr.is_some() && !p.has_data_conjuncts);
        assert!(p.partition_matches(&file(Some("2"), None)));
        assert!(!p.partition_matches(&file(Some("1"), None)));
        assert!(
            !p.partition_matches(&file(None, None)),
            "NULL never satisfies a comparison"
        );
        assert!(pred("p IS NULL").partition_matches(&file(None, None)));
        assert!(pred("NOT (p = 1)").partition_matches(&file(Some("2"), None)));
        assert!(!pred("NOT (p = 1)").partition_matches(&file(None, None)));
        assert!(pred("p IN (1, 3)").partition_matches(&file(Some("3"), None)));
        assert!(!pred("p NOT IN (1, NULL)").partition_matches(&file(Some("3"), None)));
        assert!(pred("p BETWEEN 1 AND 3").partition_matches(&file(Some("3"), None)));
        assert!(pred("d > DATE '2023-12-31'").partition_matches(&file(Some("3"), None)));
    }

    /// A literal of the wrong kind is refused in both directions, naming the column, its type
    /// and the literal; literals Spark reads as the column's type keep working.
    #[test]
    fn literal_types_are_checked_both_ways() {
        let refused = [
            ("s = 5", "column s of type string with the number 5"),
            (
                "s IN ('a', 2.5)",
                "column s of type string with the number 2.5",
            ),
            ("5 < s", "column s of type string with the number 5"),
            ("x = 'abc'", "column x of type long with the string \"abc\""),
            ("d = 5", "column d of type date with a number"),
        ];
        for (text, why) in refused {
            let err = Predicate::parse(text, &schema(), ColumnMappingMode::None, &[])
                .expect_err(text)
                .to_string();
            assert!(
                err.contains(&format!("cannot compare {why}")),
                "{text}: {err}"
            );
        }
        for text in [
            "x = 5",
            "x = 5.5",
            "x = '5'",
            "s = '5'",
            "d = '2024-01-01'",
            "t > '2024-01-01'",
            "p BETWEEN 1 AND 2",
        ] {
            pred(text);
        }
    }

    #[test]
    fn stats_skipping() {
        let stats = r#"{"numRecords":10,"minValues":{"x":1,"s":"apple","t":"2024-01-01T00:00:00.000Z"},"maxValues":{"x":10,"s":"melon","t":"2024-01-01T00:00:01.000Z"},"nullCount":{"x":0,"s":2}}"#;
        let f = file(Some("1"), Some(stats));
        let cases = [
            ("x > 100", false),
            ("x > 5", true),
            ("x = 10", true),
            ("x < 1", false),
            ("x <= 1", true),
            ("x IS NULL", false),
            ("s IS NULL", true),
            ("x IN (20, 30)", false),
            ("x IN (20, 3)", true),
            ("p = 1 AND x > 100", false),
            ("p = 2 OR x > 5", true),
            ("p = 2 OR x > 50", false),
            ("s LIKE 'b%'", true),
            ("s LIKE 'z%'", false),
            ("s LIKE 'aa%'", false),
            ("t > TIMESTAMP '2024-01-01 00:00:01'", true),
            ("t > TIMESTAMP '2024-01-01 00:00:02'", false),
            ("abs(x) > 100", true),
            ("x + 1 > 100", true),
        ];
        for (text, want) in cases {
            assert_eq!(pred(text).file_may_match(&f, true), want, "{text}");
            assert!(
                pred(text).file_may_match(&file(Some("1"), None), true)
                    || text.starts_with("p = 2 OR")
                    || text.contains("p = 1 AND"),
                "{text} without stats"
            );
        }
        assert!(
            pred("x > 100").file_may_match(&f, false),
            "stats off means may match"
        );
    }

    /// A judge parses only the stats its predicate can use; its verdicts equal those from every
    /// stat parsed, file by file.
    #[test]
    fn judge_parses_only_needed_stats_without_changing_verdicts() {
        let texts = [
            "x > 5",
            "x >= 10",
            "x < 3",
            "x <= 1",
            "x = 4",
            "x <> 4",
            "x <=> NULL",
            "x = NULL",
            "x IS NULL",
            "x IS NOT NULL",
            "x IN (1, 20)",
            "x NOT IN (1, 2)",
            "s LIKE 'b%'",
            "s > 'c'",
            "NOT (x > 5)",
            "p = 1 AND x > 7",
            "p = 2 OR x < 2",
            "x BETWEEN 3 AND 6",
            "(x > 8 OR s = 'apple') AND t < TIMESTAMP '2024-01-01 00:00:00'",
            "abs(x) > 3",
            "x + 1 > 3",
            "x > 5 AND x < 3",
        ];
        let mut rng = crate::test_rng::Rng(0x2545_f491_4f6c_dd1d);
        let files: Vec<AddFile> = (0..400)
            .map(|_| {
                let (lo, records) = (rng.below(10), rng.below(4));
                let nulls = rng.below(records + 1);
                let opt = |v: String, rng: &mut crate::test_rng::Rng| if rng.below(5) == 0 { "null".to_string() } else { v };
                let stats = format!(
                    r#"{{"numRecords":{records},"minValues":{{"x":{},"s":"{}"}},"maxValues":{{"x":{},"s":"{}","t":"2023-12-31T23:59:59.999Z"}},"nullCount":{{"x":{},"s":0}}}}"#,
                    opt(lo.to_string(), &mut rng),
                    ["apple", "b", "cherry"][rng.below(3) as usize],
                    opt((lo + rng.below(5)).to_string(), &mut rng),
                    ["banana", "d", "zz"][rng.below(3) as usize],
                    opt(nulls.to_string(), &mut rng),
                );
                file(Some(&rng.below(3).to_string()), Some(&stats))
            })
            .collect();
        for text in texts {
            let p = pred(text);
            let mut judge = FileJudge::new(&p, true);
            for f in &files {
                assert_eq!(
                    judge.may_match(f),
                    p.file_may_match(f, true),
                    "{text} on {:?}",
                    f.stats
                );
            }
            // The streamed selection (tuple first, then stats) keeps the same files.
            let want: Vec<usize> = (0..files.len())
                .filter(|&i| p.file_may_match(&files[i], true))
                .collect();
            assert_eq!(select_files(&p, &files), want, "{text}");
        }
    }

    /// Skipping is derived from the row evaluator's tree: widened columns keep their stats,
    /// constants are folded by the evaluator, and a conjunct the evaluator lacks stays opaque
    /// without hiding the others (or its columns' existence).
    #[test]
    fn derived_from_the_row_evaluators_tree() {
        let stats = r#"{"numRecords":3,"minValues":{"x":1,"s":"apple"},"maxValues":{"x":10,"s":"melon"},"nullCount":{"x":0,"s":0}}"#;
        let f = file(Some("1"), Some(stats));
        for (text, want) in [
            ("x > 9.5", true),
            ("x > 10.5", false),
            ("p = 1.5", false),
            ("1 = 0", false),
            ("1 = 1 AND x > 100", false),
            ("NULL", false),
            ("upper(s) = 'A' AND x > 100", false),
            ("upper(s) = 'A' OR x > 100", true),
            ("rand() < 0.5 AND p = 2", false),
            ("NOT (s LIKE 'a%') AND x < 1", false),
        ] {
            assert_eq!(pred(text).file_may_match(&f, true), want, "{text}");
        }
        let p = pred("rand() < 0.5 AND p = 1");
        assert!(!p.is_deterministic() && p.partition_expr.is_some() && p.has_data_conjuncts);
        assert!(pred("frob(x) = 1").is_deterministic());
        match Predicate::parse("frob(nope) = 1", &schema(), ColumnMappingMode::None, &[]) {
            Err(crate::Error::Predicate { problem, .. }) => {
                assert_eq!(problem, crate::error::PredicateProblem::UnknownColumn)
            }
            other => panic!("{other:?}"),
        }
    }

    /// The reference model of skipping: a file whose rows the row evaluator selects must be kept
    /// (statistics computed from those rows), for random conditions over random files.
    #[test]
    fn skipping_never_drops_a_file_the_row_evaluator_selects() {
        use arrow_array::{Int64Array, RecordBatch, StringArray};
        use std::sync::Arc;

        let mut rng = crate::test_rng::Rng(0x9e37_79b9_7f4a_7c15);
        let leaves = [
            "x > 5",
            "x >= 2.5",
            "x = 3",
            "x <> 4",
            "x < -1",
            "x IS NULL",
            "x IS NOT NULL",
            "x IN (1, 7)",
            "x BETWEEN 2 AND 4",
            "x + 1 > 6",
            "abs(x) < 2",
            "x <=> NULL",
            "s = 'b'",
            "s > 'c'",
            "s LIKE 'a%'",
            "s ILIKE 'B%'",
            "s IS NULL",
            "upper(s) = 'B'",
            "coalesce(x, 0) = 0",
            "CAST(x AS STRING) = '3'",
            "p = 1",
            "p > 0",
        ];
        let arrow = arrow_schema::Schema::new(vec![
            arrow_schema::Field::new("p", arrow_schema::DataType::Int32, true),
            arrow_schema::Field::new("x", arrow_schema::DataType::Int64, true),
            arrow_schema::Field::new("s", arrow_schema::DataType::Utf8, true),
        ]);
        let mut checked = 0;
        for _ in 0..3000 {
            let mut text = leaves[rng.below(leaves.len() as u64) as usize].to_string();
            for _ in 0..rng.below(3) {
                let leaf = leaves[rng.below(leaves.len() as u64) as usize];
                text = match rng.below(3) {
                    0 => format!("({text}) AND {leaf}"),
                    1 => format!("({text}) OR {leaf}"),
                    _ => format!("NOT ({text}) OR {leaf}"),
                };
            }
            let n = 1 + rng.below(3) as usize;
            let xs: Vec<Option<i64>> = (0..n)
                .map(|_| (rng.below(4) > 0).then(|| rng.below(12) as i64 - 2))
                .collect();
            let ss: Vec<Option<&str>> = (0..n)
                .map(|_| ["a", "b", "c", "d"].get(rng.below(5) as usize).copied())
                .collect();
            let part = rng.below(3) as i32;
            let batch = RecordBatch::try_new(
                Arc::new(arrow.clone()),
                vec![
                    Arc::new(arrow_array::Int32Array::from(vec![part; n])),
                    Arc::new(Int64Array::from(xs.clone())),
                    Arc::new(StringArray::from(ss.clone())),
                ],
            )
            .unwrap();
            let rows = RowExpr::compile(&text, &arrow, &[]).unwrap();
            if !rows.mask(&batch).unwrap().values().iter().any(|b| b) {
                continue;
            }
            let (xv, sv): (Vec<i64>, Vec<&str>) = (
                xs.iter().flatten().copied().collect(),
                ss.iter().flatten().copied().collect(),
            );
            let bound = |v: Option<String>| v.unwrap_or_else(|| "null".into());
            let stats = format!(
                r#"{{"numRecords":{n},"minValues":{{"x":{},"s":{}}},"maxValues":{{"x":{},"s":{}}},"nullCount":{{"x":{},"s":{}}}}}"#,
                bound(xv.iter().min().map(|v| v.to_string())),
                bound(sv.iter().min().map(|v| format!("\"{v}\""))),
                bound(xv.iter().max().map(|v| v.to_string())),
                bound(sv.iter().max().map(|v| format!("\"{v}\""))),
                n - xv.len(),
                n - sv.len(),
            );
            let skip =
                Predicate::parse(&text, &schema(), ColumnMappingMode::None, &["p".into()]).unwrap();
            assert!(
                skip.file_may_match(&file(Some(&part.to_string()), Some(&stats)), true),
                "{text} dropped a file with a selected row: {stats}"
            );
            checked += 1;
        }
        assert!(checked > 500, "{checked}");
    }

    #[test]
    fn bad_text_names_position() {
        let err = |t: &str| match Predicate::parse(t, &schema(), ColumnMappingMode::None, &[]) {
            Err(crate::Error::Predicate {
                position, reason, ..
            }) => (position, reason),
            other => panic!("{t}: {other:?}"),
        };
        let (pos, reason) = err("x > 5 AND nope = 1");
        assert_eq!(pos, 11, "{reason}");
        assert!(reason.contains("nope"));
        let (pos, reason) = err("x > ");
        assert!(pos >= 4, "{pos} {reason}");
        let (pos, _) = err("x > 5 5");
        assert_eq!(pos, 7);
        let (_, reason) = err("p = 'abc'");
        assert!(reason.contains("integer"), "{reason}");
        err("");
    }
}
