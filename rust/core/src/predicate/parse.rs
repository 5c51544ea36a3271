//! `where` text → typed [`Expr`] over the table schema, with the `sqlparser` crate.

use sqlparser::ast::{self, BinaryOperator, UnaryOperator, Value as SqlValue};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Location, Span, Token};

use super::expr::{CmpOp, ColumnRef, Expr};
use crate::error::{Error, PredicateProblem, Result};
use crate::partition::{self, Scalar};
use crate::schema::{ColumnMappingMode, DataType, StructType};

/// Functions whose result may differ between evaluations.
const NON_DETERMINISTIC: &[&str] = &[
    "rand",
    "random",
    "randn",
    "uuid",
    "shuffle",
    "monotonically_increasing_id",
];

pub struct Resolver<'a> {
    pub text: &'a str,
    pub schema: &'a StructType,
    pub mapping: ColumnMappingMode,
    pub partition_columns: &'a [String],
    pub columns: Vec<ColumnRef>,
}

/// A literal before it meets a column type.
#[derive(Debug, Clone)]
enum Lit {
    Null,
    Number(String),
    Text(String),
    Bool(bool),
    Date(String),
    Timestamp(String),
}

enum Operand {
    Lit(Lit, Span),
    Expr(Expr),
}

pub fn parse_sql(text: &str) -> Result<ast::Expr> {
    let err = |e: ParserError| {
        let msg = match e {
            ParserError::TokenizerError(m) | ParserError::ParserError(m) => m,
            ParserError::RecursionLimitExceeded => "expression nested too deeply".into(),
        };
        let position = position_from_message(text, &msg).unwrap_or_else(|| {
            if msg.contains("EOF") {
                text.chars().count() + 1
            } else {
                1
            }
        });
        let reason = msg.split(" at Line:").next().unwrap_or(&msg).to_string();
        Error::predicate(text, position, reason)
    };
    if text.trim().is_empty() {
        return Err(Error::predicate(text, 1, "the predicate is empty"));
    }
    let mut parser = Parser::new(&GenericDialect {})
        .try_with_sql(text)
        .map_err(err)?;
    let expr = parser.parse_expr().map_err(err)?;
    let next = parser.peek_token();
    if next.token != Token::EOF {
        return Err(Error::predicate(
            text,
            offset(text, next.span.start),
            format!("unexpected {} after the end of the expression", next.token),
        ));
    }
    Ok(expr)
}

fn position_from_message(text: &str, msg: &str) -> Option<usize> {
    let line: u64 = msg
        .split("Line: ")
        .nth(1)?
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()?;
    let column: u64 = msg
        .split("Column: ")
        .nth(1)?
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()?;
    Some(offset(text, Location { line, column }))
}

/// 1-based character position of a line/column location in `text`.
pub fn offset(text: &str, loc: Location) -> usize {
    if loc.line == 0 {
        return 1;
    }
    let before: usize = text
        .split('\n')
        .take(loc.line as usize - 1)
        .map(|l| l.chars().count() + 1)
        .sum();
    before + loc.column.max(1) as usize
}

impl<'a> Resolver<'a> {
    pub fn new(
        text: &'a str,
        schema: &'a StructType,
        mapping: ColumnMappingMode,
        partition_columns: &'a [String],
    ) -> Self {
        Resolver {
            text,
            schema,
            mapping,
            partition_columns,
            columns: Vec::new(),
        }
    }

    fn error(&self, span: Span, reason: impl Into<String>) -> Error {
        Error::predicate(self.text, offset(self.text, span.start), reason)
    }

    fn unknown_column(&self, span: Span, reason: impl Into<String>) -> Error {
        let at = offset(self.text, span.start);
        Error::predicate_problem(self.text, at, reason, PredicateProblem::UnknownColumn)
    }

    fn span_of(e: &ast::Expr) -> Span {
        use sqlparser::ast::Spanned;
        e.span()
    }

    /// Resolve a boolean expression.
    pub fn boolean(&mut self, e: &ast::Expr) -> Result<Expr> {
        match self.operand(e)? {
            Operand::Expr(Expr::Column(i)) => {
                let c = &self.columns[i];
                if c.data_type != DataType::Primitive("boolean".into()) {
                    return Err(self.error(
                        Self::span_of(e),
                        format!("column {} is not boolean", c.name),
                    ));
                }
                Ok(Expr::Cmp(
                    CmpOp::Eq,
                    Box::new(Expr::Column(i)),
                    Box::new(Expr::bool(true)),
                ))
            }
            Operand::Expr(x) => Ok(x),
            Operand::Lit(Lit::Bool(b), _) => Ok(Expr::bool(b)),
            Operand::Lit(Lit::Null, _) => Ok(Expr::Literal(Scalar::Null)),
            Operand::Lit(_, span) => {
                Err(self.error(span, "expected a boolean expression, found a literal"))
            }
        }
    }

    fn column(&mut self, ident: &ast::Ident) -> Result<Operand> {
        let field = self.schema.field(&ident.value).ok_or_else(|| {
            let names: Vec<&str> = self.schema.fields.iter().map(|f| f.name.as_str()).collect();
            self.unknown_column(
                ident.span,
                format!(
                    "unknown column {:?} (columns: {})",
                    ident.value,
                    names.join(", ")
                ),
            )
        })?;
        let partition = self
            .partition_columns
            .iter()
            .any(|p| p.eq_ignore_ascii_case(&field.name));
        if !matches!(
            field.data_type,
            DataType::Primitive(_) | DataType::Decimal(..)
        ) {
            return Ok(Operand::Expr(Expr::Opaque {
                sql: ident.value.clone(),
                columns: vec![],
                deterministic: true,
            }));
        }
        let r = ColumnRef {
            name: field.name.clone(),
            physical: field.physical_name(self.mapping).to_string(),
            field_id: field.field_id(self.mapping),
            data_type: field.data_type.clone(),
            partition,
        };
        let i = match self.columns.iter().position(|c| c.name == r.name) {
            Some(i) => i,
            None => {
                self.columns.push(r);
                self.columns.len() - 1
            }
        };
        Ok(Operand::Expr(Expr::Column(i)))
    }

    fn opaque(&self, e: &ast::Expr, deterministic: bool) -> Operand {
        Operand::Expr(Expr::Opaque {
            sql: e.to_string(),
            columns: vec![],
            deterministic,
        })
    }

    fn operand(&mut self, e: &ast::Expr) -> Result<Operand> {
        use ast::Expr as E;
        Ok(match e {
            E::Identifier(id) => self.column(id)?,
            E::CompoundIdentifier(parts) => {
                // `t.col` (a qualifier) or `struct.field` (nested: opaque).
                if parts.len() == 2 && self.schema.field(&parts[0].value).is_none() {
                    self.column(&parts[1])?
                } else {
                    if let Some(first) = parts.first() {
                        if self.schema.field(&first.value).is_none() {
                            return Err(self.unknown_column(
                                first.span,
                                format!("unknown column {:?}", first.value),
                            ));
                        }
                    }
                    self.opaque(e, true)
                }
            }
            E::Nested(inner) => self.operand(inner)?,
            E::Value(v) => Operand::Lit(self.literal(&v.value, v.span)?, v.span),
            E::TypedString(ts) => {
                let span = ts.value.span;
                let text = match &ts.value.value {
                    SqlValue::SingleQuotedString(s) | SqlValue::DoubleQuotedString(s) => s.clone(),
                    other => {
                        return Err(
                            self.error(span, format!("expected a quoted string, found {other}"))
                        )
                    }
                };
                let lit = match ts.data_type {
                    ast::DataType::Date => Lit::Date(text),
                    ast::DataType::Timestamp(..)
                    | ast::DataType::Datetime(_)
                    | ast::DataType::TimestampNtz(_) => Lit::Timestamp(text),
                    _ => Lit::Text(text),
                };
                Operand::Lit(lit, span)
            }
            E::UnaryOp {
                op: UnaryOperator::Not,
                expr,
            } => Operand::Expr(self.boolean(expr)?.negate()),
            E::UnaryOp {
                op: UnaryOperator::Minus,
                expr,
            } => match self.operand(expr)? {
                Operand::Lit(Lit::Number(n), span) => {
                    Operand::Lit(Lit::Number(format!("-{n}")), span)
                }
                _ => self.opaque(e, true),
            },
            E::UnaryOp {
                op: UnaryOperator::Plus,
                expr,
            } => self.operand(expr)?,
            E::BinaryOp { left, op, right } => match op {
                BinaryOperator::And => {
                    Operand::Expr(flatten_and(vec![self.boolean(left)?, self.boolean(right)?]))
                }
                BinaryOperator::Or => {
                    Operand::Expr(flatten_or(vec![self.boolean(left)?, self.boolean(right)?]))
                }
                _ => match cmp_op(op) {
                    Some(op) => Operand::Expr(self.comparison(op, left, right)?),
                    None => {
                        // Arithmetic and the rest: check the columns exist, then leave it opaque.
                        self.operand(left)?;
                        self.operand(right)?;
                        self.opaque(e, true)
                    }
                },
            },
            E::IsNull(inner) => Operand::Expr(self.is_null(inner, false)?),
            E::IsNotNull(inner) => Operand::Expr(self.is_null(inner, true)?),
            E::IsTrue(inner) => {
                Operand::Expr(self.comparison_lit(CmpOp::Eq, inner, Lit::Bool(true))?)
            }
            E::IsFalse(inner) => {
                Operand::Expr(self.comparison_lit(CmpOp::Eq, inner, Lit::Bool(false))?)
            }
            E::IsNotTrue(inner) | E::IsNotFalse(inner) => {
                self.operand(inner)?;
                self.opaque(e, true)
            }
            E::InList {
                expr,
                list,
                negated,
            } => Operand::Expr(self.in_list(expr, list, *negated)?),
            E::Between {
                expr,
                negated,
                low,
                high,
            } => {
                let ge = self.comparison(CmpOp::Ge, expr, low)?;
                let le = self.comparison(CmpOp::Le, expr, high)?;
                let both = flatten_and(vec![ge, le]);
                Operand::Expr(if *negated { both.negate() } else { both })
            }
            E::Like {
                negated,
                any: false,
                expr,
                pattern,
                escape_char: None,
            } => Operand::Expr(self.like(expr, pattern, *negated, false)?),
            E::ILike {
                negated,
                any: false,
                expr,
                pattern,
                escape_char: None,
            } => Operand::Expr(self.like(expr, pattern, *negated, true)?),
            E::Function(f) => {
                let name = f.name.to_string().to_ascii_lowercase();
                self.opaque(e, !NON_DETERMINISTIC.contains(&name.as_str()))
            }
            E::Subquery(_) | E::Exists { .. } | E::InSubquery { .. } => {
                return Err(self.error(
                    Self::span_of(e),
                    "subqueries are not supported in a where text",
                ))
            }
            _ => self.opaque(e, true),
        })
    }

    fn literal(&self, v: &SqlValue, span: Span) -> Result<Lit> {
        Ok(match v {
            SqlValue::Number(n, _) => Lit::Number(n.to_string()),
            SqlValue::SingleQuotedString(s) => Lit::Text(s.clone()),
            SqlValue::Boolean(b) => Lit::Bool(*b),
            SqlValue::Null => Lit::Null,
            // Double quotes are string literals in Spark SQL.
            SqlValue::DoubleQuotedString(s) => Lit::Text(s.clone()),
            other => return Err(self.error(span, format!("unsupported literal {other}"))),
        })
    }

    fn is_null(&mut self, inner: &ast::Expr, negated: bool) -> Result<Expr> {
        Ok(match self.operand(inner)? {
            Operand::Expr(x) => Expr::IsNull(Box::new(x), negated),
            Operand::Lit(l, _) => Expr::bool(matches!(l, Lit::Null) != negated),
        })
    }

    fn comparison(&mut self, op: CmpOp, left: &ast::Expr, right: &ast::Expr) -> Result<Expr> {
        let l = self.operand(left)?;
        let r = self.operand(right)?;
        match (l, r) {
            (Operand::Expr(a), Operand::Expr(b)) => {
                if let (Expr::Column(i), Expr::Column(j)) = (&a, &b) {
                    let (ti, tj) = (&self.columns[*i].data_type, &self.columns[*j].data_type);
                    if !comparable(ti, tj) {
                        return Err(self.error(
                            Self::span_of(left),
                            format!("cannot compare a {ti:?} column with a {tj:?} column"),
                        ));
                    }
                }
                Ok(Expr::Cmp(op, Box::new(a), Box::new(b)))
            }
            (Operand::Expr(a), Operand::Lit(lit, span)) => self.typed_cmp(op, a, lit, span),
            (Operand::Lit(lit, span), Operand::Expr(b)) => self.typed_cmp(op.flip(), b, lit, span),
            (Operand::Lit(a, sa), Operand::Lit(b, _)) => {
                let (x, y) = (self.untyped(a, sa)?, self.untyped(b, sa)?);
                Ok(match (x, y) {
                    (Scalar::Null, _) | (_, Scalar::Null) if op != CmpOp::NullSafeEq => {
                        Expr::Literal(Scalar::Null)
                    }
                    (Scalar::Null, Scalar::Null) => Expr::bool(true),
                    (Scalar::Null, _) | (_, Scalar::Null) => Expr::bool(false),
                    (x, y) => match super::expr::compare(&x, &y) {
                        Some(o) => Expr::bool(op.holds(o)),
                        None => return Err(self.error(sa, "cannot compare these literals")),
                    },
                })
            }
        }
    }

    fn comparison_lit(&mut self, op: CmpOp, e: &ast::Expr, lit: Lit) -> Result<Expr> {
        let span = Self::span_of(e);
        match self.operand(e)? {
            Operand::Expr(x) => self.typed_cmp(op, x, lit, span),
            Operand::Lit(..) => Ok(Expr::Opaque {
                sql: e.to_string(),
                columns: vec![],
                deterministic: true,
            }),
        }
    }

    fn typed_cmp(&mut self, op: CmpOp, e: Expr, lit: Lit, span: Span) -> Result<Expr> {
        let value = match &e {
            Expr::Column(i) => {
                let c = self.columns[*i].clone();
                self.cast(lit, &c, span)?
            }
            _ => self.untyped(lit, span)?,
        };
        Ok(Expr::Cmp(op, Box::new(e), Box::new(Expr::Literal(value))))
    }

    /// A literal compared with something that is not a column: its natural type.
    fn untyped(&self, lit: Lit, span: Span) -> Result<Scalar> {
        Ok(match lit {
            Lit::Null => Scalar::Null,
            Lit::Bool(b) => Scalar::Boolean(b),
            Lit::Text(s) => Scalar::String(s),
            Lit::Number(n) => match n.parse::<i64>() {
                Ok(v) => Scalar::Long(v),
                Err(_) => Scalar::Double(
                    n.parse()
                        .map_err(|_| self.error(span, format!("bad number {n}")))?,
                ),
            },
            Lit::Date(d) => partition::parse(Some(&d), &DataType::Primitive("date".into()))
                .map_err(|m| self.error(span, m))?,
            Lit::Timestamp(t) => {
                partition::parse(Some(&t), &DataType::Primitive("timestamp".into()))
                    .map_err(|m| self.error(span, m))?
            }
        })
    }

    /// Cast a literal to the column's type (as Spark does for `col op literal`).
    fn cast(&self, lit: Lit, c: &ColumnRef, span: Span) -> Result<Scalar> {
        let ty = &c.data_type;
        let tname = match ty {
            DataType::Primitive(p) => p.as_str(),
            DataType::Decimal(..) => "decimal",
            _ => "complex",
        };
        let mismatch = |what: &str| {
            self.error(
                span,
                format!(
                    "cannot compare column {} of type {tname} with {what}",
                    c.name
                ),
            )
        };
        let numeric = matches!(
            tname,
            "long" | "integer" | "short" | "byte" | "float" | "double" | "decimal"
        );
        match lit {
            Lit::Null => Ok(Scalar::Null),
            Lit::Bool(b) if tname == "boolean" => Ok(Scalar::Boolean(b)),
            Lit::Bool(_) => Err(mismatch("a boolean")),
            Lit::Number(n) if numeric => partition::parse(Some(&n), ty)
                .or_else(|_| {
                    n.parse::<f64>()
                        .map(Scalar::Double)
                        .map_err(|_| format!("bad number {n}"))
                })
                .map_err(|m| self.error(span, m)),
            // Spark would cast the column to a number (a string that is no number becomes NULL
            // and silently matches nothing); like `id = 'abc'` on a number column, refuse it.
            Lit::Number(n) if tname == "string" => Err(mismatch(&format!("the number {n}"))),
            Lit::Number(_) => Err(mismatch("a number")),
            Lit::Date(d) if tname == "timestamp" || tname == "timestamp_ntz" => {
                partition::parse(Some(&d), ty).map_err(|m| self.error(span, m))
            }
            Lit::Date(_) | Lit::Timestamp(_)
                if !matches!(tname, "date" | "timestamp" | "timestamp_ntz" | "string") =>
            {
                Err(mismatch("a date/time literal"))
            }
            Lit::Date(s) | Lit::Timestamp(s) | Lit::Text(s) => {
                if numeric {
                    if let Ok(v) = partition::parse(Some(&s), ty) {
                        return Ok(v);
                    }
                    return s
                        .trim()
                        .parse::<f64>()
                        .map(Scalar::Double)
                        .map_err(|_| mismatch(&format!("the string {s:?}")));
                }
                if s.is_empty() && tname != "string" {
                    return Err(mismatch("an empty string"));
                }
                match tname {
                    "string" => Ok(Scalar::String(s)),
                    "binary" => Ok(Scalar::Binary(s.into_bytes())),
                    "date" => {
                        // A timestamp literal against a date column compares on its date part.
                        let day = s.get(..10).unwrap_or(&s).to_string();
                        partition::parse(Some(&day), ty)
                            .map_err(|_| mismatch(&format!("the string {s:?}")))
                    }
                    _ => partition::parse(Some(&s), ty)
                        .map_err(|_| mismatch(&format!("the string {s:?}"))),
                }
            }
        }
    }

    fn in_list(&mut self, expr: &ast::Expr, list: &[ast::Expr], negated: bool) -> Result<Expr> {
        let target = match self.operand(expr)? {
            Operand::Expr(x) => x,
            Operand::Lit(..) => {
                return Ok(Expr::Opaque {
                    sql: expr.to_string(),
                    columns: vec![],
                    deterministic: true,
                })
            }
        };
        let mut values = Vec::with_capacity(list.len());
        for item in list {
            match self.operand(item)? {
                Operand::Lit(l, span) => values.push(match &target {
                    Expr::Column(i) => {
                        let c = self.columns[*i].clone();
                        self.cast(l, &c, span)?
                    }
                    _ => self.untyped(l, span)?,
                }),
                Operand::Expr(_) => {
                    return Ok(Expr::Opaque {
                        sql: format!("{expr} IN (...)"),
                        columns: vec![],
                        deterministic: true,
                    })
                }
            }
        }
        Ok(Expr::In(Box::new(target), values, negated))
    }

    fn like(
        &mut self,
        expr: &ast::Expr,
        pattern: &ast::Expr,
        negated: bool,
        ci: bool,
    ) -> Result<Expr> {
        let target = match self.operand(expr)? {
            Operand::Expr(x) => x,
            Operand::Lit(..) => {
                return Ok(Expr::Opaque {
                    sql: expr.to_string(),
                    columns: vec![],
                    deterministic: true,
                })
            }
        };
        let pattern = match self.operand(pattern)? {
            Operand::Lit(Lit::Text(p), _) => p,
            Operand::Lit(_, span) => return Err(self.error(span, "LIKE needs a string pattern")),
            Operand::Expr(_) => {
                return Ok(Expr::Opaque {
                    sql: format!("{expr} LIKE ..."),
                    columns: vec![],
                    deterministic: true,
                })
            }
        };
        if let Expr::Column(i) = &target {
            let c = &self.columns[*i];
            if c.data_type != DataType::Primitive("string".into()) {
                return Err(self.error(
                    Self::span_of(expr),
                    format!(
                        "LIKE needs a string column, {} is {:?}",
                        c.name, c.data_type
                    ),
                ));
            }
        }
        Ok(Expr::Like {
            expr: Box::new(target),
            pattern,
            negated,
            case_insensitive: ci,
        })
    }
}

fn comparable(a: &DataType, b: &DataType) -> bool {
    let class = |t: &DataType| match t {
        DataType::Decimal(..) => "num",
        DataType::Primitive(p) => match p.as_str() {
            "long" | "integer" | "short" | "byte" | "float" | "double" => "num",
            "timestamp" | "timestamp_ntz" => "ts",
            other => match other {
                "string" => "string",
                "date" => "date",
                "boolean" => "bool",
                _ => "other",
            },
        },
        _ => "complex",
    };
    class(a) == class(b) && class(a) != "complex"
}

fn cmp_op(op: &BinaryOperator) -> Option<CmpOp> {
    Some(match op {
        BinaryOperator::Eq => CmpOp::Eq,
        BinaryOperator::NotEq => CmpOp::Ne,
        BinaryOperator::Lt => CmpOp::Lt,
        BinaryOperator::LtEq => CmpOp::Le,
        BinaryOperator::Gt => CmpOp::Gt,
        BinaryOperator::GtEq => CmpOp::Ge,
        BinaryOperator::Spaceship => CmpOp::NullSafeEq,
        _ => return None,
    })
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
        out.pop().unwrap()
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
        out.pop().unwrap()
    } else {
        Expr::Or(out)
    }
}
