//! The one row evaluator: SQL expression text (parsed with `sqlparser`) compiled against an Arrow
//! schema and evaluated on record batches with arrow-rs kernels, with Spark SQL semantics (ANSI
//! mode): three-valued logic, NaN equal to itself and above every other value, -0.0 = 0.0,
//! strings by bytes, checked arithmetic, division by zero an error, strict casts.
//!
//! It serves reads (`to_pyarrow(where=)`), DML conditions and SET values, MERGE conditions and
//! the row-level conflict checker, so every one of them selects the same rows.

mod cmp;
mod compile;
mod evaluate;
mod export;
mod functions;
mod now;
mod parse;
mod pattern;
mod regex_java;
pub mod types;
mod value;
pub mod zone;

use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch};
use arrow_schema::{DataType, Schema};

use crate::error::{Error, PredicateProblem, Result};

pub use cmp::CmpOp;
pub use compile::{
    compile_conjuncts, conjuncts, referenced_columns, unqualified, Conjunct, Referenced, Scope,
};
pub use export::scalar_json;
pub use now::resolve_now;
pub use parse::{offset, parse_sql};
pub use pattern::{like, like_prefix};

/// A compiled expression: columns bound by name to the schema it was compiled against.
#[derive(Debug, Clone)]
pub struct RowExpr {
    text: String,
    node: Node,
    /// Names (as in the compile schema) of the columns the expression reads, each once.
    columns: Vec<String>,
    /// The type each column is evaluated in (input arrays of another type are cast).
    column_types: Vec<DataType>,
    /// The SQL session time zone the text was compiled in.
    time_zone: String,
}

#[derive(Debug, Clone)]
pub(crate) struct Node {
    kind: Kind,
    ty: DataType,
    /// 1-based character position of the expression in the text (for messages).
    at: usize,
}

impl Node {
    pub(crate) fn kind(&self) -> &Kind {
        &self.kind
    }

    pub(crate) fn data_type(&self) -> &DataType {
        &self.ty
    }

    /// The node's one value when it reads no column; None when it reads one, or when evaluating
    /// it fails (the rows will raise that error).
    pub(crate) fn constant(&self) -> Option<ArrayRef> {
        if self.reads_columns() {
            return None;
        }
        evaluate::evaluate(self, &[], 1).ok()
    }

    fn reads_columns(&self) -> bool {
        match &self.kind {
            Kind::Column(_) => true,
            Kind::Literal(_) => false,
            Kind::Not(x)
            | Kind::Neg(x)
            | Kind::IsNull(x, _)
            | Kind::Cast(x, _)
            | Kind::Field(x, _) => x.reads_columns(),
            Kind::Like { expr, .. } | Kind::RLike { expr, .. } => expr.reads_columns(),
            Kind::DateTrunc { arg, .. } => arg.reads_columns(),
            Kind::And(a, b) | Kind::Or(a, b) | Kind::Cmp(_, a, b) | Kind::Arith(_, a, b) => {
                a.reads_columns() || b.reads_columns()
            }
            Kind::Case { whens, otherwise } => {
                otherwise.reads_columns()
                    || whens
                        .iter()
                        .any(|(w, v)| w.reads_columns() || v.reads_columns())
            }
            Kind::Func(_, args) => args.iter().any(Node::reads_columns),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arith {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Func {
    Upper,
    Lower,
    Abs,
    Length,
    Trim,
    Round,
    Floor,
    Ceil,
    Coalesce,
    Concat,
    /// (DATE, INT) -> DATE
    DateAdd,
    DateSub,
    /// (end DATE, start DATE) -> INT days
    DateDiff,
    /// (DATE, INT months) -> DATE, the day clamped to the month's last
    AddMonths,
    Year,
    Month,
    Day,
    /// (STRING, INT pos[, INT len]) with Spark's 1-based and negative positions
    Substring,
    /// (TIMESTAMP or TIMESTAMP_NTZ, BIGINT µs): INTERVAL arithmetic of days and smaller units
    AddMicros,
}

/// `date_trunc` units (Spark's names; WEEK starts on Monday).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TruncUnit {
    Year,
    Quarter,
    Month,
    Week,
    Day,
    Hour,
    Minute,
    Second,
    Millisecond,
    Microsecond,
}

#[derive(Debug, Clone)]
pub(crate) enum Kind {
    /// Index into [`RowExpr::columns`].
    Column(usize),
    /// A one-value array.
    Literal(ArrayRef),
    Not(Box<Node>),
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    /// Both operands already of one type.
    Cmp(CmpOp, Box<Node>, Box<Node>),
    IsNull(Box<Node>, bool),
    Arith(Arith, Box<Node>, Box<Node>),
    Neg(Box<Node>),
    Like {
        expr: Box<Node>,
        pattern: String,
        case_insensitive: bool,
    },
    Case {
        whens: Vec<(Node, Node)>,
        otherwise: Box<Node>,
    },
    /// To the node's type; in the session zone (named) when the conversion depends on one.
    Cast(Box<Node>, Option<String>),
    Func(Func, Vec<Node>),
    /// A field of a struct value (index into its fields; NULL when the struct is).
    Field(Box<Node>, usize),
    /// `expr RLIKE pattern`: `pattern` as written (Java syntax), `regex` its Rust equivalent.
    RLike {
        expr: Box<Node>,
        pattern: String,
        regex: String,
    },
    DateTrunc {
        unit: TruncUnit,
        arg: Box<Node>,
        zone: String,
    },
}

impl RowExpr {
    /// Compile `text` against `schema`. Columns are found through `scopes` (see [`Scope`]; an
    /// empty list means the whole schema, unqualified names only).
    pub fn compile(text: &str, schema: &Schema, scopes: &[Scope]) -> Result<RowExpr> {
        compile::compile(text, schema, scopes, zone::DEFAULT)
    }

    /// [`compile`](Self::compile) in the SQL session time zone `time_zone` (an IANA name, `UTC`
    /// or an offset such as `+05:30`): zone-less timestamp texts are its wall clocks, and casts
    /// between TIMESTAMP and DATE, STRING or TIMESTAMP_NTZ, and the date functions on timestamps,
    /// use its calendar.
    pub fn compile_in(
        text: &str,
        schema: &Schema,
        scopes: &[Scope],
        time_zone: &str,
    ) -> Result<RowExpr> {
        zone::Zone::parse(time_zone).map_err(|m| Error::predicate(text, 1, m))?;
        compile::compile(text, schema, scopes, time_zone)
    }

    pub fn time_zone(&self) -> &str {
        &self.time_zone
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// Columns read, by their name in the compile schema.
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    pub fn data_type(&self) -> &DataType {
        &self.node.ty
    }

    /// The value on every row of `batch`, which must hold the columns the expression reads (by
    /// name; other columns are ignored).
    pub fn evaluate(&self, batch: &RecordBatch) -> Result<ArrayRef> {
        let inputs = self.inputs(batch)?;
        evaluate::evaluate(&self.node, &inputs, batch.num_rows()).map_err(|(at, m)| {
            Error::predicate_problem(&self.text, at, m, PredicateProblem::Evaluation)
        })
    }

    /// TRUE rows: NULL and FALSE are both "not selected".
    pub fn mask(&self, batch: &RecordBatch) -> Result<BooleanArray> {
        let inputs = self.inputs(batch)?;
        let v = evaluate::evaluate_condition(&self.node, &inputs, batch.num_rows()).map_err(
            |(at, m)| Error::predicate_problem(&self.text, at, m, PredicateProblem::Evaluation),
        )?;
        if v.data_type() == &DataType::Null {
            return Ok(BooleanArray::from(vec![false; v.len()])); // `WHERE NULL`
        }
        let b = v.as_any().downcast_ref::<BooleanArray>().ok_or_else(|| {
            Error::predicate(
                &self.text,
                1,
                format!(
                    "the condition is not a boolean expression (it is {})",
                    types::type_name(v.data_type())
                ),
            )
        })?;
        Ok(match b.nulls() {
            Some(n) if n.null_count() > 0 => BooleanArray::new(b.values() & n.inner(), None),
            _ => b.clone(),
        })
    }

    /// The compiled tree (file skipping is derived from it: `predicate`).
    pub(crate) fn tree(&self) -> &Node {
        &self.node
    }

    fn inputs(&self, batch: &RecordBatch) -> Result<Vec<ArrayRef>> {
        self.columns
            .iter()
            .zip(&self.column_types)
            .map(|(name, t)| {
                let a = batch.column_by_name(name).ok_or_else(|| {
                    Error::invalid(format!(
                        "evaluating {:?}: the rows have no column {name:?}",
                        self.text
                    ))
                })?;
                types::cast(a, t).map_err(|e| {
                    Error::invalid(format!(
                        "evaluating {:?}: column {name:?} cannot be read as {}: {e}",
                        self.text,
                        types::type_name(t)
                    ))
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;
