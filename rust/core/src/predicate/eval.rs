//! Evaluating a predicate against one file: exactly on partition values, conservatively on
//! column statistics. The answer "may match" is true whenever the evaluator cannot prove that no
//! row of the file satisfies the predicate.

use std::cmp::Ordering;

use super::expr::{compare, like, like_prefix, CmpOp, ColumnRef, Expr};
use super::stats_layout::{Bounds, Located};
use crate::log::actions::PartitionValues;
use crate::partition::{self, Scalar};
use crate::schema::DataType;

use crate::stats::STRING_PREFIX;

/// What is known about one column within one file.
#[derive(Debug, Clone)]
pub enum Domain {
    /// Every row has this value (partition columns).
    Exact(Scalar),
    Range(ColumnStats),
    Unknown,
}

#[derive(Debug, Clone, Default)]
pub struct ColumnStats {
    pub min: Option<Scalar>,
    pub max: Option<Scalar>,
    pub null_count: Option<i64>,
    pub num_records: Option<i64>,
}

/// SQL three-valued result: `None` is NULL.
pub type Tri = Option<bool>;

/// The value of a partition column for a file; `Err` when the log value does not parse.
pub fn partition_value(pv: &PartitionValues, column: &ColumnRef) -> Result<Scalar, String> {
    partition::parse(
        partition::raw_value(pv, &column.physical),
        &column.data_type,
    )
}

/// Domains for every column the predicate references. `with_stats` false leaves data columns
/// unknown (no data skipping).
pub fn domains(
    columns: &[ColumnRef],
    pv: &PartitionValues,
    stats: Option<&str>,
    with_stats: bool,
) -> Vec<Domain> {
    let mut s = Scratch::default();
    domains_into(columns, pv, stats, with_stats, &mut s);
    s.domains
}

/// Buffers reused across files when judging many of them (no allocation per file). One
/// `Scratch` serves one column list: the stats layout it learns refers to those columns.
#[derive(Debug, Default)]
pub struct Scratch {
    located: Located,
    domains: Vec<Domain>,
    /// Per column, which of min, max and nullCount [`may_match`] can use (bits 0, 1, 2); empty
    /// means all. A stat left out only makes the file "may match" where it would not have been.
    needs: Vec<u8>,
}

const MIN: u8 = 1;
const MAX: u8 = 2;
const NULLS: u8 = 4;

impl Scratch {
    /// Buffers for judging files against `expr` over `columns` columns, parsing only the stats
    /// `expr` can use.
    pub fn for_expr(expr: &Expr, columns: usize) -> Self {
        let mut needs = vec![0; columns];
        stats_needed(expr, &mut needs);
        Scratch {
            needs,
            ..Default::default()
        }
    }
}

/// Mark in `needs` the stats [`may_match`] reads for `expr`; it must mirror that function.
fn stats_needed(expr: &Expr, needs: &mut [u8]) {
    match expr {
        Expr::And(v) | Expr::Or(v) => v.iter().for_each(|e| stats_needed(e, needs)),
        Expr::Column(i) => needs[*i] |= MIN | MAX | NULLS,
        Expr::Cmp(op, l, r) => {
            if let (Expr::Column(i), Expr::Literal(v)) = (&**l, &**r) {
                needs[*i] |= NULLS
                    | match op {
                        _ if *v == Scalar::Null => 0,
                        CmpOp::Lt | CmpOp::Le => MIN,
                        CmpOp::Gt | CmpOp::Ge => MAX,
                        CmpOp::Eq | CmpOp::NullSafeEq | CmpOp::Ne => MIN | MAX,
                    };
            }
        }
        Expr::IsNull(e, _) => {
            if let Expr::Column(i) = &**e {
                needs[*i] |= NULLS;
            }
        }
        Expr::In(e, ..) | Expr::Like { expr: e, .. } => {
            if let Expr::Column(i) = &**e {
                needs[*i] |= MIN | MAX | NULLS;
            }
        }
        Expr::Literal(_) | Expr::Opaque { .. } => {}
    }
}

/// [`domains`] into reused buffers.
pub fn domains_into<'s>(
    columns: &[ColumnRef],
    pv: &PartitionValues,
    stats: Option<&str>,
    with_stats: bool,
    s: &'s mut Scratch,
) -> &'s [Domain] {
    let stats = stats.filter(|_| with_stats && columns.iter().any(|c| !c.partition));
    let parsed = stats.filter(|text| s.located.locate(text, columns));
    s.domains.resize_with(columns.len(), || Domain::Unknown);
    for (i, c) in columns.iter().enumerate() {
        let d = &mut s.domains[i];
        if c.partition {
            *d = partition_value(pv, c)
                .map(Domain::Exact)
                .unwrap_or(Domain::Unknown);
            continue;
        }
        let Some(text) = parsed else {
            *d = Domain::Unknown;
            continue;
        };
        // Filled field by field where the column had stats before: one file after another,
        // building a whole new domain on the stack and moving it cost more than the parse.
        if !matches!(d, Domain::Range(_)) {
            *d = Domain::Range(ColumnStats::default());
        }
        let Domain::Range(cs) = d else {
            unreachable!("set just above")
        };
        let needs = s.needs.get(i).copied().unwrap_or(MIN | MAX | NULLS);
        fill_column_stats(
            cs,
            text,
            &s.located.bounds[i],
            s.located.num_records,
            c,
            needs,
        );
    }
    &s.domains
}

fn fill_column_stats(
    cs: &mut ColumnStats,
    text: &str,
    bounds: &Bounds,
    num_records: Option<i64>,
    c: &ColumnRef,
    needs: u8,
) {
    let raw = |k: usize| {
        bounds[k]
            .filter(|_| needs & (1 << k) != 0)
            .map(|(a, b)| &text[a..b])
    };
    cs.min = raw(0).and_then(|r| stat_value(r, &c.data_type, Bound::Min));
    cs.max = raw(1).and_then(|r| stat_value(r, &c.data_type, Bound::Max));
    cs.null_count = raw(2).and_then(|r| r.parse::<i64>().ok());
    cs.num_records = num_records;
}

/// Can some row of a file with these column domains satisfy `expr`?
pub fn may_match(expr: &Expr, d: &[Domain]) -> bool {
    match expr {
        Expr::Literal(Scalar::Boolean(b)) => *b,
        Expr::Literal(_) => false,
        Expr::Column(i) => leaf_cmp(CmpOp::Eq, &d[*i], &Scalar::Boolean(true)),
        Expr::And(v) => v.iter().all(|e| may_match(e, d)),
        Expr::Or(v) => v.iter().any(|e| may_match(e, d)),
        Expr::Cmp(op, l, r) => match (&**l, &**r) {
            (Expr::Column(i), Expr::Literal(v)) => leaf_cmp(*op, &d[*i], v),
            (Expr::Column(i), Expr::Column(j)) => match (&d[*i], &d[*j]) {
                (Domain::Exact(a), Domain::Exact(b)) => exact_cmp(*op, a, b) == Some(true),
                _ => true,
            },
            _ => true,
        },
        Expr::IsNull(e, negated) => match &**e {
            Expr::Column(i) => match &d[*i] {
                Domain::Exact(v) => (*v == Scalar::Null) != *negated,
                Domain::Range(s) => {
                    if s.num_records == Some(0) {
                        false
                    } else if *negated {
                        !(s.null_count.is_some() && s.null_count == s.num_records)
                    } else {
                        s.null_count != Some(0)
                    }
                }
                Domain::Unknown => true,
            },
            _ => true,
        },
        Expr::In(e, list, negated) => match &**e {
            Expr::Column(i) => match &d[*i] {
                Domain::Exact(v) => exact_in(v, list, *negated) == Some(true),
                dom @ Domain::Range(_) if !negated => {
                    list.iter().any(|x| leaf_cmp(CmpOp::Eq, dom, x))
                }
                _ => true,
            },
            _ => true,
        },
        Expr::Like {
            expr,
            pattern,
            negated,
            case_insensitive,
        } => match &**expr {
            Expr::Column(i) => match &d[*i] {
                Domain::Exact(Scalar::String(s)) => like(s, pattern, *case_insensitive) != *negated,
                Domain::Exact(_) => false,
                Domain::Range(s) if !negated && !case_insensitive => {
                    like_range_may_match(s, pattern)
                }
                _ => true,
            },
            _ => true,
        },
        Expr::Opaque { .. } => true,
    }
}

fn like_range_may_match(s: &ColumnStats, pattern: &str) -> bool {
    if s.num_records == Some(0) || (s.null_count.is_some() && s.null_count == s.num_records) {
        return false;
    }
    let prefix = like_prefix(pattern);
    if prefix.is_empty() {
        return true;
    }
    if let Some(Scalar::String(max)) = &s.max {
        if max.as_bytes() < prefix.as_bytes() {
            return false;
        }
    }
    if let Some(Scalar::String(min)) = &s.min {
        let head = &min.as_bytes()[..min.len().min(prefix.len())];
        if head > prefix.as_bytes() {
            return false;
        }
    }
    true
}

fn exact_cmp(op: CmpOp, a: &Scalar, b: &Scalar) -> Tri {
    match (a, b) {
        (Scalar::Null, Scalar::Null) if op == CmpOp::NullSafeEq => Some(true),
        (Scalar::Null, _) | (_, Scalar::Null) if op == CmpOp::NullSafeEq => Some(false),
        (Scalar::Null, _) | (_, Scalar::Null) => None,
        _ => compare(a, b).map(|o| op.holds(o)),
    }
}

fn exact_in(v: &Scalar, list: &[Scalar], negated: bool) -> Tri {
    if *v == Scalar::Null {
        return None;
    }
    let mut saw_null = false;
    for x in list {
        match exact_cmp(CmpOp::Eq, v, x) {
            Some(true) => return Some(!negated),
            None => saw_null = true,
            Some(false) => {}
        }
    }
    if saw_null {
        None
    } else {
        Some(negated)
    }
}

fn leaf_cmp(op: CmpOp, d: &Domain, v: &Scalar) -> bool {
    match d {
        Domain::Exact(x) => exact_cmp(op, x, v) == Some(true),
        Domain::Unknown => true,
        Domain::Range(s) => range_cmp(op, s, v),
    }
}

fn range_cmp(op: CmpOp, s: &ColumnStats, v: &Scalar) -> bool {
    if s.num_records == Some(0) {
        return false;
    }
    let all_null = s.null_count.is_some() && s.null_count == s.num_records;
    if *v == Scalar::Null {
        return op == CmpOp::NullSafeEq && s.null_count != Some(0);
    }
    if all_null {
        return false;
    }
    let ord = |b: &Option<Scalar>| b.as_ref().and_then(|b| compare(b, v));
    let (lo, hi) = (ord(&s.min), ord(&s.max));
    match op {
        CmpOp::Eq | CmpOp::NullSafeEq => {
            lo != Some(Ordering::Greater) && hi != Some(Ordering::Less)
        }
        CmpOp::Ne => !(lo == Some(Ordering::Equal) && hi == Some(Ordering::Equal)),
        CmpOp::Lt => lo.is_none_or(|o| o == Ordering::Less),
        CmpOp::Le => lo.is_none_or(|o| o != Ordering::Greater),
        CmpOp::Gt => hi.is_none_or(|o| o == Ordering::Greater),
        CmpOp::Ge => hi.is_none_or(|o| o != Ordering::Less),
    }
}

/// Exact SQL evaluation with every referenced column known (partition values, or one row).
pub fn eval(expr: &Expr, values: &[Scalar]) -> Tri {
    match expr {
        Expr::Literal(Scalar::Boolean(b)) => Some(*b),
        Expr::Literal(_) => None,
        Expr::Column(i) => match &values[*i] {
            Scalar::Boolean(b) => Some(*b),
            _ => None,
        },
        Expr::And(v) => {
            let mut out = Some(true);
            for e in v {
                match eval(e, values) {
                    Some(false) => return Some(false),
                    None => out = None,
                    Some(true) => {}
                }
            }
            out
        }
        Expr::Or(v) => {
            let mut out = Some(false);
            for e in v {
                match eval(e, values) {
                    Some(true) => return Some(true),
                    None => out = None,
                    Some(false) => {}
                }
            }
            out
        }
        Expr::Cmp(op, l, r) => exact_cmp(*op, &operand(l, values)?, &operand(r, values)?),
        Expr::IsNull(e, negated) => Some((operand(e, values)? == Scalar::Null) != *negated),
        Expr::In(e, list, negated) => exact_in(&operand(e, values)?, list, *negated),
        Expr::Like {
            expr,
            pattern,
            negated,
            case_insensitive,
        } => match operand(expr, values)? {
            Scalar::String(s) => Some(like(&s, pattern, *case_insensitive) != *negated),
            _ => None,
        },
        // Callers only evaluate opaque-free expressions exactly; NULL keeps the row out.
        Expr::Opaque { .. } => None,
    }
}

fn operand(e: &Expr, values: &[Scalar]) -> Option<Scalar> {
    match e {
        Expr::Column(i) => Some(values[*i].clone()),
        Expr::Literal(v) => Some(v.clone()),
        _ => None,
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Bound {
    Min,
    Max,
}

/// A stats min/max JSON value as a bound of the column's type; `None` when it is not usable.
fn stat_value(text: &str, ty: &DataType, bound: Bound) -> Option<Scalar> {
    let p = match ty {
        DataType::Decimal(..) => {
            let n: serde_json::Number = serde_json::from_str(text).ok()?;
            let s = n.to_string();
            return partition::parse(Some(&s), ty)
                .ok()
                .or_else(|| n.as_f64().map(Scalar::Double));
        }
        DataType::Primitive(p) => p.as_str(),
        _ => return None,
    };
    match p {
        "long" | "integer" | "short" | "byte" => {
            if let Ok(n) = text.parse::<i64>() {
                return Some(Scalar::Long(n));
            }
            let n: serde_json::Number = serde_json::from_str(text).ok()?;
            n.as_i64()
                .map(Scalar::Long)
                .or_else(|| n.as_f64().map(Scalar::Double))
        }
        "float" | "double" => {
            let f: f64 = serde_json::from_str(text).ok()?;
            (!f.is_nan()).then_some(Scalar::Double(f))
        }
        "boolean" => serde_json::from_str::<bool>(text).ok().map(Scalar::Boolean),
        "string" => {
            let s: String = serde_json::from_str(text).ok()?;
            if bound == Bound::Max && s.chars().count() >= STRING_PREFIX {
                return None;
            }
            Some(Scalar::String(s))
        }
        "date" => {
            let s: String = serde_json::from_str(text).ok()?;
            partition::parse(Some(&s), ty).ok()
        }
        "timestamp" | "timestamp_ntz" => {
            let s: String = serde_json::from_str(text).ok()?;
            let micros = partition::parse_timestamp(&s)?;
            // Stats are truncated to milliseconds: widen the max to the end of its millisecond.
            let micros = if bound == Bound::Max {
                micros.saturating_add(999)
            } else {
                micros
            };
            Some(if p == "timestamp" {
                Scalar::Timestamp(micros)
            } else {
                Scalar::TimestampNtz(micros)
            })
        }
        _ => None,
    }
}
