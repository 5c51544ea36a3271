//! The file-skipping predicate, derived from the row evaluator's compiled tree: a condition is
//! parsed and typed once ([`crate::rowexpr`]), and skipping keeps what partition values and
//! statistics can decide — comparisons, IS NULL and LIKE of a column with a value; AND, OR, NOT —
//! and leaves the rest opaque ("may match"). Constant parts are evaluated by the row evaluator.

use arrow_array::{Array, ArrayRef, BooleanArray};
use arrow_schema::DataType as A;

use super::expr::{CmpOp, ColumnRef, Expr};
use crate::arrow_values::scalar_at;
use crate::partition::Scalar;
use crate::rowexpr::{Kind, Node, RowExpr};
use crate::schema::{ColumnMappingMode, DataType, StructType};

pub(super) struct Deriver<'a> {
    schema: &'a StructType,
    mapping: ColumnMappingMode,
    partition_columns: &'a [String],
    /// The columns the derived expressions reference (`Expr::Column` indexes).
    pub columns: Vec<ColumnRef>,
}

impl<'a> Deriver<'a> {
    pub fn new(
        schema: &'a StructType,
        mapping: ColumnMappingMode,
        partition_columns: &'a [String],
    ) -> Self {
        Deriver {
            schema,
            mapping,
            partition_columns,
            columns: Vec::new(),
        }
    }

    /// The skipping form of one compiled conjunct.
    pub fn conjunct(&mut self, e: &RowExpr) -> Expr {
        self.condition(e.tree(), e)
    }

    fn condition(&mut self, n: &Node, e: &RowExpr) -> Expr {
        // AND / OR / NOT fold through their parts (asking every level whether its whole subtree
        // is constant would walk long IN lists once per level).
        let connective = matches!(n.kind(), Kind::And(..) | Kind::Or(..) | Kind::Not(_));
        if let Some(v) = (!connective).then(|| n.constant()).flatten() {
            return match v.as_any().downcast_ref::<BooleanArray>() {
                Some(b) if b.is_valid(0) => Expr::bool(b.value(0)),
                _ => Expr::Literal(Scalar::Null),
            };
        }
        match n.kind() {
            Kind::Not(x) => self.condition(x, e).negate(),
            Kind::And(a, b) => flatten_and(vec![self.condition(a, e), self.condition(b, e)]),
            Kind::Or(a, b) => flatten_or(vec![self.condition(a, e), self.condition(b, e)]),
            Kind::Cmp(op, a, b) => match (self.value(a, e), self.value(b, e)) {
                (Some(x), Some(y)) => Expr::Cmp(*op, Box::new(x), Box::new(y)),
                _ => opaque(e),
            },
            Kind::IsNull(x, negated) => match self.value(x, e) {
                Some(v) => Expr::IsNull(Box::new(v), *negated),
                None => opaque(e),
            },
            Kind::Like {
                expr,
                pattern,
                case_insensitive,
            } => match self.value(expr, e) {
                Some(v @ Expr::Column(_)) => Expr::Like {
                    expr: Box::new(v),
                    pattern: pattern.clone(),
                    negated: false,
                    case_insensitive: *case_insensitive,
                },
                _ => opaque(e),
            },
            Kind::Column(_) => match self.value(n, e) {
                // A boolean column as a condition.
                Some(c) => Expr::Cmp(CmpOp::Eq, Box::new(c), Box::new(Expr::bool(true))),
                None => opaque(e),
            },
            _ => opaque(e),
        }
    }

    /// A column or a value that skipping can compare; None for anything computed from a column.
    fn value(&mut self, n: &Node, e: &RowExpr) -> Option<Expr> {
        if let Some(v) = n.constant() {
            return literal(&v).map(Expr::Literal);
        }
        match n.kind() {
            Kind::Column(i) => self.column(&e.columns()[*i]),
            // A column widened without loss keeps its order: its statistics still decide.
            Kind::Cast(x, _)
                if matches!(x.kind(), Kind::Column(_))
                    && exact_widening(x.data_type(), n.data_type()) =>
            {
                self.value(x, e)
            }
            _ => None,
        }
    }

    /// A top-level primitive column of the table; None for a struct, array or map.
    fn column(&mut self, name: &str) -> Option<Expr> {
        let field = self.schema.field(name)?;
        if !matches!(
            field.data_type,
            DataType::Primitive(_) | DataType::Decimal(..)
        ) {
            return None;
        }
        if let Some(i) = self.columns.iter().position(|c| c.name == field.name) {
            return Some(Expr::Column(i));
        }
        self.columns.push(ColumnRef {
            name: field.name.clone(),
            physical: field.physical_name(self.mapping).to_string(),
            field_id: field.field_id(self.mapping),
            data_type: field.data_type.clone(),
            partition: self
                .partition_columns
                .iter()
                .any(|p| p.eq_ignore_ascii_case(&field.name)),
        });
        Some(Expr::Column(self.columns.len() - 1))
    }
}

fn literal(v: &ArrayRef) -> Option<Scalar> {
    scalar_at(v.as_ref(), 0).ok()
}

fn opaque(e: &RowExpr) -> Expr {
    Expr::Opaque {
        sql: e.text().to_string(),
        columns: vec![],
        deterministic: true,
    }
}

/// Whether every value of `from` is exactly a value of `to`, in the same order (integers into
/// wider integers, into doubles up to 32 bits, into decimals with room; decimals into wider
/// ones). Not float into double: a float's statistics are written as its shortest decimal text,
/// which a double comparison would read as another number.
fn exact_widening(from: &A, to: &A) -> bool {
    let digits = |t: &A| -> Option<i16> {
        Some(match t {
            A::Int8 => 3,
            A::Int16 => 5,
            A::Int32 => 10,
            A::Int64 => 19,
            _ => return None,
        })
    };
    match (from, to) {
        _ if from == to => true,
        (A::Int8, A::Int16 | A::Int32 | A::Int64) | (A::Int16, A::Int32 | A::Int64) => true,
        (A::Int32, A::Int64) => true,
        (A::Int8 | A::Int16 | A::Int32, A::Float64) => true,
        (A::Decimal128(p1, s1), A::Decimal128(p2, s2)) => {
            s2 >= s1 && (*p2 as i16 - *s2 as i16) >= (*p1 as i16 - *s1 as i16)
        }
        (i, A::Decimal128(p, s)) => digits(i).is_some_and(|d| (*p as i16 - *s as i16) >= d),
        _ => false,
    }
}

pub fn flatten_and(parts: Vec<Expr>) -> Expr {
    let mut out = Vec::new();
    for p in parts {
        match p {
            Expr::And(v) => out.extend(v),
            other => out.push(other),
        }
    }
    if out.len() == 1 {
        out.pop().expect("one part")
    } else {
        Expr::And(out)
    }
}

pub fn flatten_or(parts: Vec<Expr>) -> Expr {
    let mut out = Vec::new();
    for p in parts {
        match p {
            Expr::Or(v) => out.extend(v),
            other => out.push(other),
        }
    }
    if out.len() == 1 {
        out.pop().expect("one part")
    } else {
        Expr::Or(out)
    }
}
