//! The typed expression a `where` text resolves to, kept in negation normal form so that data
//! skipping only ever needs "can this leaf be true for some row of the file".

use std::cmp::Ordering;

use crate::partition::Scalar;
use crate::schema::DataType;

pub use crate::rowexpr::CmpOp;

/// A column the predicate references (top-level columns only).
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnRef {
    pub name: String,
    /// Name in partition values and statistics (differs with column mapping).
    pub physical: String,
    /// Parquet field id in id mapping mode (see [`crate::schema::file_column_index`]).
    pub field_id: Option<i64>,
    pub data_type: DataType,
    pub partition: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Literal(Scalar),
    Column(usize),
    Cmp(CmpOp, Box<Expr>, Box<Expr>),
    And(Vec<Expr>),
    Or(Vec<Expr>),
    IsNull(Box<Expr>, bool),
    /// `e [NOT] IN (literals)`.
    In(Box<Expr>, Vec<Scalar>, bool),
    /// `e [NOT] LIKE pattern`, case-insensitive for ILIKE.
    Like {
        expr: Box<Expr>,
        pattern: String,
        negated: bool,
        case_insensitive: bool,
    },
    /// Something the evaluator cannot decide (functions, arithmetic, nested fields, subqueries):
    /// always "may match". `deterministic` is false for non-deterministic functions.
    Opaque {
        sql: String,
        columns: Vec<usize>,
        deterministic: bool,
    },
}

impl Expr {
    pub fn bool(b: bool) -> Expr {
        Expr::Literal(Scalar::Boolean(b))
    }

    /// `NOT self`, pushed down to the leaves (valid under SQL three-valued logic for filtering:
    /// a row is kept only when the predicate is TRUE).
    pub fn negate(self) -> Expr {
        match self {
            Expr::Literal(Scalar::Boolean(b)) => Expr::bool(!b),
            Expr::Literal(Scalar::Null) => Expr::Literal(Scalar::Null),
            Expr::Column(i) => Expr::Cmp(
                CmpOp::Eq,
                Box::new(Expr::Column(i)),
                Box::new(Expr::bool(false)),
            ),
            Expr::Cmp(op, l, r) => match op.negate() {
                Some(n) => Expr::Cmp(n, l, r),
                None => {
                    let sql = format!("NOT ({})", Expr::Cmp(op, l.clone(), r.clone()).sql_hint());
                    let mut columns = Vec::new();
                    l.collect_columns(&mut columns);
                    r.collect_columns(&mut columns);
                    Expr::Opaque {
                        sql,
                        columns,
                        deterministic: true,
                    }
                }
            },
            Expr::And(v) => Expr::Or(v.into_iter().map(Expr::negate).collect()),
            Expr::Or(v) => Expr::And(v.into_iter().map(Expr::negate).collect()),
            Expr::IsNull(e, n) => Expr::IsNull(e, !n),
            Expr::In(e, list, n) => Expr::In(e, list, !n),
            Expr::Like {
                expr,
                pattern,
                negated,
                case_insensitive,
            } => Expr::Like {
                expr,
                pattern,
                negated: !negated,
                case_insensitive,
            },
            Expr::Opaque {
                sql,
                columns,
                deterministic,
            } => Expr::Opaque {
                sql: format!("NOT ({sql})"),
                columns,
                deterministic,
            },
            Expr::Literal(other) => Expr::Opaque {
                sql: format!("NOT {other:?}"),
                columns: vec![],
                deterministic: true,
            },
        }
    }

    pub fn collect_columns(&self, out: &mut Vec<usize>) {
        match self {
            Expr::Column(i) => {
                if !out.contains(i) {
                    out.push(*i)
                }
            }
            Expr::Literal(_) => {}
            Expr::Cmp(_, l, r) => {
                l.collect_columns(out);
                r.collect_columns(out);
            }
            Expr::And(v) | Expr::Or(v) => v.iter().for_each(|e| e.collect_columns(out)),
            Expr::IsNull(e, _) | Expr::In(e, _, _) | Expr::Like { expr: e, .. } => {
                e.collect_columns(out)
            }
            Expr::Opaque { columns, .. } => columns.iter().for_each(|i| {
                if !out.contains(i) {
                    out.push(*i)
                }
            }),
        }
    }

    pub fn has_opaque(&self) -> bool {
        match self {
            Expr::Opaque { .. } => true,
            Expr::Cmp(_, l, r) => l.has_opaque() || r.has_opaque(),
            Expr::And(v) | Expr::Or(v) => v.iter().any(Expr::has_opaque),
            Expr::IsNull(e, _) | Expr::In(e, _, _) | Expr::Like { expr: e, .. } => e.has_opaque(),
            Expr::Literal(_) | Expr::Column(_) => false,
        }
    }

    pub fn is_deterministic(&self) -> bool {
        match self {
            Expr::Opaque { deterministic, .. } => *deterministic,
            Expr::Cmp(_, l, r) => l.is_deterministic() && r.is_deterministic(),
            Expr::And(v) | Expr::Or(v) => v.iter().all(Expr::is_deterministic),
            Expr::IsNull(e, _) | Expr::In(e, _, _) | Expr::Like { expr: e, .. } => {
                e.is_deterministic()
            }
            Expr::Literal(_) | Expr::Column(_) => true,
        }
    }

    fn sql_hint(&self) -> String {
        format!("{self:?}")
    }
}

/// Total order used for comparisons between two non-null values of compatible types; `None` when
/// they cannot be compared (different kinds). Floating point follows Spark SQL: NaN equals NaN and
/// is above every other value.
pub fn compare(a: &Scalar, b: &Scalar) -> Option<Ordering> {
    use Scalar::*;
    match (a, b) {
        (Null, _) | (_, Null) => None,
        (String(x), String(y)) => Some(x.as_bytes().cmp(y.as_bytes())),
        (Long(x), Long(y)) => Some(x.cmp(y)),
        (Double(x), Double(y)) => Some(float_cmp(*x, *y)),
        (Long(x), Double(y)) => Some(float_cmp(*x as f64, *y)),
        (Double(x), Long(y)) => Some(float_cmp(*x, *y as f64)),
        (Decimal(x, sx), Decimal(y, sy)) => {
            Some(rescale(*x, *sx, *sy.max(sx)).cmp(&rescale(*y, *sy, *sx.max(sy))))
        }
        (Decimal(x, s), Long(y)) => Some(x.cmp(&rescale(*y as i128, 0, *s))),
        (Long(x), Decimal(y, s)) => Some(rescale(*x as i128, 0, *s).cmp(y)),
        (Decimal(x, s), Double(y)) => Some(float_cmp(*x as f64 / 10f64.powi(*s as i32), *y)),
        (Double(x), Decimal(y, s)) => Some(float_cmp(*x, *y as f64 / 10f64.powi(*s as i32))),
        (Boolean(x), Boolean(y)) => Some(x.cmp(y)),
        (Date(x), Date(y)) => Some(x.cmp(y)),
        (Timestamp(x), Timestamp(y)) | (TimestampNtz(x), TimestampNtz(y)) => Some(x.cmp(y)),
        (Binary(x), Binary(y)) => Some(x.cmp(y)),
        _ => None,
    }
}

/// Spark's order on doubles: NaN = NaN, NaN above everything; otherwise IEEE (-0.0 = 0.0).
fn float_cmp(x: f64, y: f64) -> Ordering {
    match (x.is_nan(), y.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => x.partial_cmp(&y).expect("neither is NaN"),
    }
}

fn rescale(v: i128, from: i8, to: i8) -> i128 {
    let d = (to - from).max(0) as u32;
    v.saturating_mul(10i128.saturating_pow(d))
}

pub use crate::rowexpr::{like, like_prefix};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_patterns() {
        assert!(like("abc", "a%", false));
        assert!(like("abc", "%c", false));
        assert!(like("abc", "a_c", false));
        assert!(!like("abc", "a_", false));
        assert!(like("a%c", "a\\%c", false));
        assert!(!like("abc", "a\\%c", false));
        assert!(like("ABC", "a%", true));
        assert!(like("", "%", false));
        assert!(like("aXbXc", "%b%c", false));
        assert_eq!(like_prefix("ab\\%c%d"), "ab%c");
    }

    #[test]
    fn mixed_numeric_compare() {
        assert_eq!(
            compare(&Scalar::Long(2), &Scalar::Double(2.5)),
            Some(Ordering::Less)
        );
        assert_eq!(
            compare(&Scalar::Decimal(150, 2), &Scalar::Long(1)),
            Some(Ordering::Greater)
        );
        assert_eq!(
            compare(&Scalar::Decimal(150, 2), &Scalar::Decimal(15, 1)),
            Some(Ordering::Equal)
        );
        assert_eq!(compare(&Scalar::Null, &Scalar::Long(1)), None);
        assert_eq!(compare(&Scalar::String("a".into()), &Scalar::Long(1)), None);
    }

    #[test]
    fn doubles_follow_sparks_nan_order() {
        let (nan, d) = (Scalar::Double(f64::NAN), Scalar::Double);
        assert_eq!(compare(&nan, &d(f64::NAN)), Some(Ordering::Equal));
        assert_eq!(compare(&nan, &d(f64::INFINITY)), Some(Ordering::Greater));
        assert_eq!(compare(&Scalar::Long(i64::MAX), &nan), Some(Ordering::Less));
        assert_eq!(compare(&d(-0.0), &d(0.0)), Some(Ordering::Equal));
    }

    #[test]
    fn negation_pushes_down() {
        let e = Expr::And(vec![
            Expr::Cmp(
                CmpOp::Lt,
                Box::new(Expr::Column(0)),
                Box::new(Expr::Literal(Scalar::Long(5))),
            ),
            Expr::IsNull(Box::new(Expr::Column(1)), false),
        ]);
        let n = e.negate();
        assert_eq!(
            n,
            Expr::Or(vec![
                Expr::Cmp(
                    CmpOp::Ge,
                    Box::new(Expr::Column(0)),
                    Box::new(Expr::Literal(Scalar::Long(5)))
                ),
                Expr::IsNull(Box::new(Expr::Column(1)), true),
            ])
        );
    }
}
