//! SQL text → typed [`Node`] tree: columns resolved against an Arrow schema through scopes,
//! literals read in the type of what they meet, implicit widening made explicit as casts.

use std::cell::Cell;

use arrow_schema::{DataType, Schema, TimeUnit};
use sqlparser::ast::{self, BinaryOperator, Spanned, UnaryOperator, Value as SqlValue};

use super::types::{self, common, is_numeric, is_string, type_name};
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Int32Array, Int64Array};

use super::parse::{offset, parse_sql};
use super::CmpOp;
use super::{evaluate, Arith, Func, Kind, Node, RowExpr, TruncUnit};
use crate::error::{Error, PredicateProblem, Result};

/// Where names are looked up. A column `c` of a scope is the schema field `prefix + c` (letter
/// case ignored when there is no exact match); `alias.c` looks in the scope named `alias` only, a
/// bare `c` in every scope and must be found in exactly one. A scope that is not `readable`
/// refuses its columns (a MERGE NOT MATCHED clause cannot read the target).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    pub alias: Option<String>,
    pub prefix: String,
    pub readable: bool,
}

impl Scope {
    /// The whole schema, columns by their own names, optionally also as `alias.column`.
    pub fn table(alias: Option<&str>) -> Scope {
        Scope {
            alias: alias.map(str::to_string),
            prefix: String::new(),
            readable: true,
        }
    }
}

pub fn compile(text: &str, schema: &Schema, scopes: &[Scope], zone: &str) -> Result<RowExpr> {
    let ast = parse_sql(text)?;
    let default = [Scope::table(None)];
    let mut c = Compiler::new(
        text,
        schema,
        if scopes.is_empty() { &default } else { scopes },
        zone,
    );
    let node = c.node(&ast, None)?;
    Ok(RowExpr {
        text: text.to_string(),
        node,
        columns: c.columns,
        column_types: c.column_types,
        time_zone: zone.to_string(),
    })
}

/// `text` with every column qualified by `alias` (`t.id`, any case) named without it (`id`): a
/// MERGE clause's target-side condition as a predicate over the table's own columns, which is
/// how a read predicate is recorded and checked.
pub fn unqualified(text: &str, alias: &str) -> Result<String> {
    let mut ast = parse_sql(text)?;
    let _ = sqlparser::ast::visit_expressions_mut(&mut ast, |e| {
        if let ast::Expr::CompoundIdentifier(parts) = e {
            if parts.len() == 2 && parts[0].value.eq_ignore_ascii_case(alias) {
                *e = ast::Expr::Identifier(parts[1].clone());
            }
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    Ok(ast.to_string())
}

/// The top-level AND conjuncts of a condition, each as SQL text.
pub fn conjuncts(text: &str) -> Result<Vec<String>> {
    let ast = parse_sql(text)?;
    let mut parts = Vec::new();
    split_and(&ast, &mut parts);
    Ok(parts.into_iter().map(|e| e.to_string()).collect())
}

fn split_and<'e>(e: &'e ast::Expr, out: &mut Vec<&'e ast::Expr>) {
    match e {
        ast::Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            split_and(left, out);
            split_and(right, out);
        }
        ast::Expr::Nested(inner)
            if matches!(
                **inner,
                ast::Expr::BinaryOp {
                    op: BinaryOperator::And,
                    ..
                }
            ) =>
        {
            split_and(inner, out)
        }
        other => out.push(other),
    }
}

/// One top-level AND conjunct of a condition ([`compile_conjuncts`]).
#[derive(Debug, Clone)]
pub enum Conjunct {
    /// Compiled as a boolean condition.
    Compiled(RowExpr),
    /// Valid, but it uses a construct the evaluator lacks (a function, an expression kind, a
    /// cast): its text, whether it is deterministic, and why it could not be compiled.
    Lacking {
        sql: String,
        deterministic: bool,
        reason: String,
    },
}

/// Functions whose result may differ between evaluations (a conjunct that calls one is not
/// deterministic).
const NON_DETERMINISTIC: &[&str] = &[
    "rand",
    "random",
    "randn",
    "uuid",
    "shuffle",
    "monotonically_increasing_id",
];

/// A condition parsed once and compiled conjunct by conjunct against `schema` in `zone`: what
/// file skipping derives its predicate from. A conjunct that names an unknown column, has
/// mistyped operands or is no condition is an error, as for [`compile`]; one that uses a
/// construct the evaluator lacks is [`Conjunct::Lacking`] (its columns still must exist).
pub fn compile_conjuncts(text: &str, schema: &Schema, zone: &str) -> Result<Vec<Conjunct>> {
    let ast = parse_sql(text)?;
    let mut parts = Vec::new();
    split_and(&ast, &mut parts);
    let default = [Scope::table(None)];
    let mut out = Vec::with_capacity(parts.len());
    for part in parts {
        let mut c = Compiler::new(text, schema, &default, zone);
        match c.condition(part) {
            Ok(node) => out.push(Conjunct::Compiled(RowExpr {
                text: part.to_string(),
                node,
                columns: c.columns,
                column_types: c.column_types,
                time_zone: zone.to_string(),
            })),
            Err(e) => {
                let Some(deterministic) = c.lacking.get() else {
                    return Err(e);
                };
                // Its columns must exist all the same.
                let mut unknown = None;
                let _ = sqlparser::ast::visit_expressions(part, |e| {
                    let parts: Vec<&str> = match e {
                        ast::Expr::Identifier(i) => vec![i.value.as_str()],
                        ast::Expr::CompoundIdentifier(p) => {
                            p.iter().map(|i| i.value.as_str()).collect()
                        }
                        _ => return std::ops::ControlFlow::Continue(()),
                    };
                    match c.resolve_path(&parts, c.at(e)) {
                        Ok(_) => std::ops::ControlFlow::Continue(()),
                        Err(err) => {
                            unknown = Some(err);
                            std::ops::ControlFlow::Break(())
                        }
                    }
                });
                if let Some(err) = unknown {
                    return Err(err);
                }
                let sql = part.to_string();
                let calls = sql.to_ascii_lowercase();
                out.push(Conjunct::Lacking {
                    deterministic: deterministic
                        && !NON_DETERMINISTIC
                            .iter()
                            .any(|f| calls.contains(&format!("{f}("))),
                    sql,
                    reason: e.to_string(),
                });
            }
        }
    }
    Ok(out)
}

/// A condition's columns, found through `scopes` but not typed (an engine that evaluates the
/// text itself, such as Spark, only needs to know what it reads): every column's schema name
/// in first-use order, and the pair when the text is exactly `column = column` (a MERGE join
/// key; incompatible key types are the caller's error to word).
pub struct Referenced {
    pub columns: Vec<String>,
    pub equated: Option<(String, String)>,
}

pub fn referenced_columns(text: &str, schema: &Schema, scopes: &[Scope]) -> Result<Referenced> {
    fn ident(e: &ast::Expr) -> Option<Vec<&str>> {
        match e {
            ast::Expr::Identifier(i) => Some(vec![i.value.as_str()]),
            ast::Expr::CompoundIdentifier(p) => Some(p.iter().map(|i| i.value.as_str()).collect()),
            ast::Expr::Nested(inner) => ident(inner),
            _ => None,
        }
    }
    fn walk<'e>(e: &'e ast::Expr, out: &mut Vec<&'e ast::Expr>) {
        use ast::Expr as E;
        match e {
            E::Identifier(_) | E::CompoundIdentifier(_) => out.push(e),
            E::Nested(x) | E::UnaryOp { expr: x, .. } | E::Cast { expr: x, .. } => walk(x, out),
            E::IsNull(x)
            | E::IsNotNull(x)
            | E::IsTrue(x)
            | E::IsFalse(x)
            | E::IsNotTrue(x)
            | E::IsNotFalse(x) => walk(x, out),
            E::BinaryOp { left, right, .. } => {
                walk(left, out);
                walk(right, out);
            }
            E::InList { expr, list, .. } => {
                walk(expr, out);
                list.iter().for_each(|x| walk(x, out));
            }
            E::Between {
                expr, low, high, ..
            } => [expr, low, high].iter().for_each(|x| walk(x, out)),
            E::Like { expr, pattern, .. }
            | E::ILike { expr, pattern, .. }
            | E::RLike { expr, pattern, .. } => {
                walk(expr, out);
                walk(pattern, out);
            }
            E::Substring {
                expr,
                substring_from,
                substring_for,
                ..
            } => {
                walk(expr, out);
                for x in [substring_from, substring_for].into_iter().flatten() {
                    walk(x, out);
                }
            }
            E::Case {
                operand,
                conditions,
                else_result,
                ..
            } => {
                operand
                    .iter()
                    .chain(else_result.iter())
                    .for_each(|x| walk(x, out));
                for c in conditions {
                    walk(&c.condition, out);
                    walk(&c.result, out);
                }
            }
            E::Function(f) => {
                if let ast::FunctionArguments::List(l) = &f.args {
                    for a in &l.args {
                        if let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) = a {
                            walk(x, out);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    let ast = parse_sql(text)?;
    let default = [Scope::table(None)];
    let c = Compiler::new(
        text,
        schema,
        if scopes.is_empty() { &default } else { scopes },
        super::zone::DEFAULT,
    );
    let name = |e: &ast::Expr| -> Result<String> {
        let parts = ident(e).expect("walk collects identifiers only");
        // A struct field reads its top-level column.
        Ok(c.resolve_path(&parts, c.at(e))?.0.name().clone())
    };
    let mut found = Vec::new();
    walk(&ast, &mut found);
    let mut columns: Vec<String> = Vec::new();
    for e in found {
        let n = name(e)?;
        if !columns.contains(&n) {
            columns.push(n);
        }
    }
    let equated = match &ast {
        ast::Expr::BinaryOp {
            left,
            op: BinaryOperator::Eq,
            right,
        } if ident(left).is_some() && ident(right).is_some() => Some((name(left)?, name(right)?)),
        _ => None,
    };
    Ok(Referenced { columns, equated })
}

struct Compiler<'a> {
    text: &'a str,
    schema: &'a Schema,
    scopes: &'a [Scope],
    columns: Vec<String>,
    column_types: Vec<DataType>,
    /// The SQL session time zone.
    zone: String,
    /// Set when compiling failed because the evaluator lacks a construct the text uses (a
    /// function, an expression kind, a cast): whether that construct is deterministic.
    lacking: Cell<Option<bool>>,
}

const FUNCTIONS: &[(&str, Func)] = &[
    ("abs", Func::Abs),
    ("ceil", Func::Ceil),
    ("ceiling", Func::Ceil),
    ("coalesce", Func::Coalesce),
    ("concat", Func::Concat),
    ("floor", Func::Floor),
    ("length", Func::Length),
    ("lower", Func::Lower),
    ("round", Func::Round),
    ("trim", Func::Trim),
    ("upper", Func::Upper),
];

fn is_literal(e: &ast::Expr) -> bool {
    match e {
        ast::Expr::Value(_) | ast::Expr::TypedString(_) => true,
        ast::Expr::Nested(inner) => is_literal(inner),
        ast::Expr::UnaryOp {
            op: UnaryOperator::Minus | UnaryOperator::Plus,
            expr,
        } => matches!(**expr, ast::Expr::Value(ref v) if matches!(v.value, SqlValue::Number(..))),
        _ => false,
    }
}

/// The number text of a (possibly signed) number literal.
fn number_text(e: &ast::Expr) -> Option<String> {
    match e {
        ast::Expr::Value(v) => match &v.value {
            SqlValue::Number(n, _) => Some(n.to_string()),
            _ => None,
        },
        ast::Expr::Nested(inner) => number_text(inner),
        ast::Expr::UnaryOp { op, expr } => {
            let n = number_text(expr)?;
            match op {
                UnaryOperator::Minus => Some(match n.strip_prefix('-') {
                    Some(p) => p.to_string(),
                    None => format!("-{n}"),
                }),
                UnaryOperator::Plus => Some(n),
                _ => None,
            }
        }
        _ => None,
    }
}

fn node(kind: Kind, ty: DataType, at: usize) -> Node {
    Node { kind, ty, at }
}

fn boolean(kind: Kind, at: usize) -> Node {
    node(kind, DataType::Boolean, at)
}

impl<'a> Compiler<'a> {
    fn new(text: &'a str, schema: &'a Schema, scopes: &'a [Scope], zone: &str) -> Self {
        Compiler {
            text,
            schema,
            scopes,
            columns: Vec::new(),
            column_types: Vec::new(),
            zone: zone.to_string(),
            lacking: Cell::new(None),
        }
    }
}

impl Compiler<'_> {
    fn at(&self, e: &ast::Expr) -> usize {
        offset(self.text, e.span().start)
    }

    fn error(&self, at: usize, reason: impl Into<String>) -> Error {
        Error::predicate(self.text, at, reason)
    }

    /// The error for a construct the evaluator lacks (see [`Conjunct::Lacking`]).
    fn lacks(&self, at: usize, reason: impl Into<String>, deterministic: bool) -> Error {
        self.lacking.set(Some(deterministic));
        self.error(at, reason)
    }

    fn node(&mut self, e: &ast::Expr, hint: Option<&DataType>) -> Result<Node> {
        use ast::Expr as E;
        let at = self.at(e);
        Ok(match e {
            E::Identifier(id) => self.column(&[id.value.as_str()], at)?,
            E::CompoundIdentifier(parts) => {
                let parts: Vec<&str> = parts.iter().map(|p| p.value.as_str()).collect();
                self.column(&parts, at)?
            }
            E::Nested(inner) => self.node(inner, hint)?,
            E::Value(v) => self.literal(&v.value, hint, at)?,
            E::TypedString(ts) => {
                let text = match &ts.value.value {
                    SqlValue::SingleQuotedString(s) | SqlValue::DoubleQuotedString(s) => s.clone(),
                    other => {
                        return Err(
                            self.error(at, format!("expected a quoted string, found {other}"))
                        )
                    }
                };
                let ty = match ts.data_type {
                    ast::DataType::Date => DataType::Date32,
                    ast::DataType::Timestamp(..) | ast::DataType::Datetime(_) => {
                        DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
                    }
                    ast::DataType::TimestampNtz(_) => {
                        DataType::Timestamp(TimeUnit::Microsecond, None)
                    }
                    _ => DataType::Utf8,
                };
                let v = types::string_as(&text, &ty, &self.zone).map_err(|m| self.error(at, m))?;
                node(Kind::Literal(v), ty, at)
            }
            E::UnaryOp { op, expr } => match op {
                UnaryOperator::Plus => self.node(expr, hint)?,
                UnaryOperator::Minus => match number_text(e) {
                    Some(n) => self.number(&n, hint, at)?,
                    None => {
                        let x = self.node(expr, None)?;
                        if !is_numeric(&x.ty) && x.ty != DataType::Null {
                            return Err(
                                self.error(at, format!("cannot negate a {}", type_name(&x.ty)))
                            );
                        }
                        let ty = x.ty.clone();
                        node(Kind::Neg(Box::new(x)), ty, at)
                    }
                },
                UnaryOperator::Not => {
                    let x = self.condition(expr)?;
                    boolean(Kind::Not(Box::new(x)), at)
                }
                other => return Err(self.lacks(at, format!("unsupported operator {other}"), true)),
            },
            E::BinaryOp { left, op, right } => self.binary(left, op, right, at)?,
            E::IsNull(x) => boolean(Kind::IsNull(Box::new(self.node(x, None)?), false), at),
            E::IsNotNull(x) => boolean(Kind::IsNull(Box::new(self.node(x, None)?), true), at),
            E::IsTrue(x) => self.is_bool(x, true, false, at)?,
            E::IsFalse(x) => self.is_bool(x, false, false, at)?,
            E::IsNotTrue(x) => self.is_bool(x, true, true, at)?,
            E::IsNotFalse(x) => self.is_bool(x, false, true, at)?,
            E::InList {
                expr,
                list,
                negated,
            } => {
                let x = self.node(expr, None)?;
                let mut out: Option<Node> = None;
                for item in list {
                    self.check_literal(expr, &x, item)?;
                    let v = self.operand(item, Some(&x.ty))?;
                    let eq = self.compare(CmpOp::Eq, x.clone(), v, at)?;
                    out = Some(match out {
                        None => eq,
                        Some(o) => boolean(Kind::Or(Box::new(o), Box::new(eq)), at),
                    });
                }
                let any = out.ok_or_else(|| self.error(at, "IN needs at least one value"))?;
                if *negated {
                    boolean(Kind::Not(Box::new(any)), at)
                } else {
                    any
                }
            }
            E::Between {
                expr,
                negated,
                low,
                high,
            } => {
                let x = self.node(expr, None)?;
                self.check_literal(expr, &x, low)?;
                self.check_literal(expr, &x, high)?;
                let lo = self.operand(low, Some(&x.ty))?;
                let hi = self.operand(high, Some(&x.ty))?;
                let ge = self.compare(CmpOp::Ge, x.clone(), lo, at)?;
                let le = self.compare(CmpOp::Le, x, hi, at)?;
                let both = boolean(Kind::And(Box::new(ge), Box::new(le)), at);
                if *negated {
                    boolean(Kind::Not(Box::new(both)), at)
                } else {
                    both
                }
            }
            E::Like {
                negated,
                any: false,
                expr,
                pattern,
                escape_char: None,
            } => self.like(expr, pattern, *negated, false, at)?,
            E::ILike {
                negated,
                any: false,
                expr,
                pattern,
                escape_char: None,
            } => self.like(expr, pattern, *negated, true, at)?,
            E::Case {
                operand,
                conditions,
                else_result,
                ..
            } => self.case(operand.as_deref(), conditions, else_result.as_deref(), at)?,
            E::Cast {
                expr, data_type, ..
            } => {
                let to = self.cast_type(data_type, at)?;
                let x = self.node(expr, None)?;
                self.cast(x, &to)?
            }
            E::Function(f) => self.function(f, at)?,
            E::RLike {
                negated,
                expr,
                pattern,
                ..
            } => self.rlike(expr, pattern, *negated, at)?,
            E::Substring {
                expr,
                substring_from,
                substring_for,
                ..
            } => {
                // SUBSTRING(s, pos[, len]) and SUBSTRING(s FROM pos [FOR len]) parse alike.
                let mut args = vec![self.node(expr, None)?];
                for x in [substring_from, substring_for].into_iter().flatten() {
                    args.push(self.node(x, None)?);
                }
                self.date_function("substring", args, at)?
            }
            E::Interval(_) => {
                return Err(self.error(
                    at,
                    "an INTERVAL can only be added to or subtracted from a date or a timestamp",
                ))
            }
            E::Subquery(_) | E::Exists { .. } | E::InSubquery { .. } => {
                return Err(self.error(at, "subqueries are not supported"))
            }
            other => return Err(self.lacks(at, format!("unsupported expression {other}"), true)),
        })
    }

    /// A boolean operand of AND/OR/NOT/CASE WHEN.
    fn condition(&mut self, e: &ast::Expr) -> Result<Node> {
        let x = self.node(e, Some(&DataType::Boolean))?;
        match x.ty {
            DataType::Boolean => Ok(x),
            DataType::Null => self.cast(x, &DataType::Boolean),
            ref t => Err(self.error(
                x.at,
                format!("expected a boolean condition, found a {}", type_name(t)),
            )),
        }
    }

    /// An operand typed by what it meets: a literal takes `hint`.
    fn operand(&mut self, e: &ast::Expr, hint: Option<&DataType>) -> Result<Node> {
        self.node(e, if is_literal(e) { hint } else { None })
    }

    /// Both operands of a binary operator, a literal one typed by the other.
    fn pair(&mut self, l: &ast::Expr, r: &ast::Expr) -> Result<(Node, Node)> {
        if is_literal(l) && !is_literal(r) {
            let rn = self.node(r, None)?;
            let ln = self.node(l, Some(&rn.ty))?;
            Ok((ln, rn))
        } else {
            let ln = self.node(l, None)?;
            let rn = self.operand(r, Some(&ln.ty))?;
            Ok((ln, rn))
        }
    }

    fn column(&mut self, parts: &[&str], at: usize) -> Result<Node> {
        let (field, used) = self.resolve_path(parts, at)?;
        let field = field.clone();
        let mut x = self.top_column(&field, at);
        for name in &parts[used..] {
            x = self.field(x, name, at)?;
        }
        Ok(x)
    }

    /// `x.name` for a struct value `x` (exact name, else letter case ignored, as Spark does).
    fn field(&self, x: Node, name: &str, at: usize) -> Result<Node> {
        let DataType::Struct(fields) = &x.ty else {
            return Err(self.error(
                at,
                format!("cannot read field {name} of a {}", type_name(&x.ty)),
            ));
        };
        let i = fields
            .iter()
            .position(|f| f.name() == name)
            .or_else(|| {
                fields
                    .iter()
                    .position(|f| f.name().eq_ignore_ascii_case(name))
            })
            .ok_or_else(|| {
                let names: Vec<&str> = fields.iter().map(|f| f.name().as_str()).collect();
                Error::predicate_problem(
                    self.text,
                    at,
                    format!(
                        "the struct has no field '{name}' (fields: {})",
                        names.join(", ")
                    ),
                    PredicateProblem::UnknownColumn,
                )
            })?;
        let raw = fields[i].data_type().clone();
        let n = node(Kind::Field(Box::new(x), i), raw.clone(), at);
        let ty = types::evaluated(&raw);
        if ty == raw {
            Ok(n)
        } else {
            Ok(node(Kind::Cast(Box::new(n), None), ty, at))
        }
    }

    /// The schema field a (possibly dotted) name starts with, and how many parts it used:
    /// `alias.column` first (MERGE scopes), then `column.field...` of a struct column.
    fn resolve_path(&self, parts: &[&str], at: usize) -> Result<(&arrow_schema::Field, usize)> {
        if parts.len() == 1 {
            return Ok((self.resolve(parts, at)?, 1));
        }
        let aliased = self.resolve(&parts[..2], at);
        if let Ok(f) = aliased {
            return Ok((f, 2));
        }
        if let Ok(f) = self.resolve(&parts[..1], at) {
            if matches!(f.data_type(), DataType::Struct(_)) {
                return Ok((f, 1));
            }
        }
        aliased.map(|f| (f, 2))
    }

    fn top_column(&mut self, field: &arrow_schema::Field, at: usize) -> Node {
        let name = field.name().clone();
        let ty = types::evaluated(field.data_type());
        let i = match self.columns.iter().position(|c| *c == name) {
            Some(i) => i,
            None => {
                self.columns.push(name);
                self.column_types.push(ty.clone());
                self.columns.len() - 1
            }
        };
        node(Kind::Column(i), ty, at)
    }

    fn resolve(&self, parts: &[&str], at: usize) -> Result<&arrow_schema::Field> {
        let find = |scope: &Scope, name: &str| -> Option<usize> {
            let fields = self.schema.fields();
            let exact = format!("{}{name}", scope.prefix);
            fields.iter().position(|f| *f.name() == exact).or_else(|| {
                fields.iter().position(|f| {
                    f.name().len() == exact.len()
                        && f.name().starts_with(&scope.prefix)
                        && f.name()[scope.prefix.len()..].eq_ignore_ascii_case(name)
                })
            })
        };
        let shown = parts.join(".");
        let refuse = || {
            self.error(
                at,
                format!(
                    "this MERGE clause cannot reference {shown}: a NOT MATCHED clause reads only \
                     source columns, a NOT MATCHED BY SOURCE clause only target columns"
                ),
            )
        };
        let names = || {
            let list: Vec<&str> = self
                .schema
                .fields()
                .iter()
                .map(|f| f.name().as_str())
                .collect();
            list.join(", ")
        };
        let unknown = || {
            Error::predicate_problem(
                self.text,
                at,
                format!("unknown column '{shown}' (columns: {})", names()),
                PredicateProblem::UnknownColumn,
            )
        };
        match parts {
            [alias, name] => {
                let scope = self
                    .scopes
                    .iter()
                    .find(|s| {
                        s.alias
                            .as_deref()
                            .is_some_and(|a| a.eq_ignore_ascii_case(alias))
                    })
                    .ok_or_else(unknown)?;
                let i = find(scope, name).ok_or_else(unknown)?;
                if !scope.readable {
                    return Err(refuse());
                }
                Ok(self.schema.field(i))
            }
            [name] => {
                let hits: Vec<(&Scope, usize)> = self
                    .scopes
                    .iter()
                    .filter_map(|s| find(s, name).map(|i| (s, i)))
                    .collect();
                match hits.as_slice() {
                    [] => Err(unknown()),
                    [(s, i)] if s.readable => Ok(self.schema.field(*i)),
                    [_] => Err(refuse()),
                    many => {
                        let options: Vec<String> = many
                            .iter()
                            .map(|(s, _)| format!("{}.{name}", s.alias.as_deref().unwrap_or("")))
                            .collect();
                        Err(self.error(
                            at,
                            format!(
                                "column '{name}' is ambiguous: qualify it as {}",
                                options.join(" or ")
                            ),
                        ))
                    }
                }
            }
            _ => Err(unknown()),
        }
    }

    fn literal(&self, v: &SqlValue, hint: Option<&DataType>, at: usize) -> Result<Node> {
        match v {
            SqlValue::Number(n, _) => self.number(&n.to_string(), hint, at),
            SqlValue::SingleQuotedString(s) | SqlValue::DoubleQuotedString(s) => match hint {
                Some(h) if !is_string(h) && *h != DataType::Null => {
                    let a = types::string_as(s, h, &self.zone).map_err(|m| self.error(at, m))?;
                    Ok(node(Kind::Literal(a), h.clone(), at))
                }
                _ => Ok(node(
                    Kind::Literal(std::sync::Arc::new(arrow_array::StringArray::from(vec![
                        s.as_str()
                    ]))),
                    DataType::Utf8,
                    at,
                )),
            },
            SqlValue::Boolean(b) => Ok(node(
                Kind::Literal(std::sync::Arc::new(arrow_array::BooleanArray::from(vec![
                    *b,
                ]))),
                DataType::Boolean,
                at,
            )),
            SqlValue::Null => {
                let ty = hint.cloned().unwrap_or(DataType::Null);
                Ok(node(Kind::Literal(types::null_of(&ty)), ty, at))
            }
            other => Err(self.error(at, format!("unsupported literal {other}"))),
        }
    }

    fn number(&self, text: &str, hint: Option<&DataType>, at: usize) -> Result<Node> {
        let a = types::number(text, hint).map_err(|m| self.error(at, m))?;
        let ty = a.data_type().clone();
        Ok(node(Kind::Literal(a), ty, at))
    }

    /// `x` converted to `to` (a literal converted now), in the steps of [`types::cast_steps`].
    fn cast(&self, x: Node, to: &DataType) -> Result<Node> {
        if &x.ty == to {
            return Ok(x);
        }
        let temporal = |t: &DataType| matches!(t, DataType::Date32 | DataType::Timestamp(..));
        if (temporal(&x.ty) && is_numeric(to)) || (is_numeric(&x.ty) && temporal(to)) {
            // Arrow would convert raw day/µs counts; Spark's ANSI casts refuse or use seconds.
            return Err(self.error(
                x.at,
                format!("cannot convert a {} to {}", type_name(&x.ty), type_name(to)),
            ));
        }
        let mut x = x;
        for (t, zoned) in types::cast_steps(&x.ty.clone(), to) {
            x = self.cast_step(x, &t, zoned)?;
        }
        Ok(x)
    }

    fn cast_step(&self, x: Node, to: &DataType, zoned: bool) -> Result<Node> {
        if &x.ty == to {
            return Ok(x);
        }
        let at = x.at;
        if let Kind::Literal(a) = &x.kind {
            let v = types::cast_zoned(a, to, &self.zone).map_err(|m| {
                self.error(
                    at,
                    format!(
                        "cannot convert a {} to {}: {m}",
                        type_name(&x.ty),
                        type_name(to)
                    ),
                )
            })?;
            return Ok(node(Kind::Literal(v), to.clone(), at));
        }
        if !arrow_cast::can_cast_types(&x.ty, to) {
            return Err(self.error(
                at,
                format!("cannot convert a {} to {}", type_name(&x.ty), type_name(to)),
            ));
        }
        let zone = zoned.then(|| self.zone.clone());
        Ok(node(Kind::Cast(Box::new(x), zone), to.clone(), at))
    }

    fn unify(&self, a: Node, b: Node, what: &str, at: usize) -> Result<(Node, Node)> {
        let t = common(&a.ty, &b.ty).ok_or_else(|| {
            self.error(
                at,
                format!(
                    "cannot {what} a {} with a {}",
                    type_name(&a.ty),
                    type_name(&b.ty)
                ),
            )
        })?;
        Ok((self.cast(a, &t)?, self.cast(b, &t)?))
    }

    fn compare(&self, op: CmpOp, a: Node, b: Node, at: usize) -> Result<Node> {
        let (a, b) = self.unify(a, b, "compare", at)?;
        Ok(boolean(Kind::Cmp(op, Box::new(a), Box::new(b)), at))
    }

    /// A column compared with a literal of another kind is a type error, worded as the `where`
    /// resolver words it (a number against a string or date column, a string that is not a
    /// value of the column's type, a boolean against a non-boolean).
    fn check_literal(&self, col_ast: &ast::Expr, col: &Node, lit: &ast::Expr) -> Result<()> {
        let Kind::Column(_) = col.kind else {
            return Ok(());
        };
        let name = match col_ast {
            ast::Expr::Identifier(i) => i.value.clone(),
            other => other.to_string(),
        };
        let t = &col.ty;
        let what = if let Some(n) = number_text(lit) {
            if is_string(t) {
                format!("the number {n}")
            } else if !is_numeric(t) && *t != DataType::Null {
                "a number".to_string()
            } else {
                return Ok(());
            }
        } else {
            match lit {
                ast::Expr::Value(v) => match &v.value {
                    SqlValue::Boolean(_) if !matches!(t, DataType::Boolean | DataType::Null) => {
                        "a boolean".to_string()
                    }
                    SqlValue::SingleQuotedString(s) | SqlValue::DoubleQuotedString(s)
                        if !is_string(t)
                            && !matches!(t, DataType::Null | DataType::Binary)
                            && types::string_as(s, t, &self.zone).is_err() =>
                    {
                        format!("the string {s:?}")
                    }
                    _ => return Ok(()),
                },
                _ => return Ok(()),
            }
        };
        // At the literal: that is what does not fit.
        Err(self.error(
            self.at(lit),
            format!(
                "cannot compare column {name} of type {} with {what}",
                type_name(t)
            ),
        ))
    }

    fn binary(
        &mut self,
        l: &ast::Expr,
        op: &BinaryOperator,
        r: &ast::Expr,
        at: usize,
    ) -> Result<Node> {
        use BinaryOperator as B;
        let cmp = match op {
            B::Eq => Some(CmpOp::Eq),
            B::NotEq => Some(CmpOp::Ne),
            B::Lt => Some(CmpOp::Lt),
            B::LtEq => Some(CmpOp::Le),
            B::Gt => Some(CmpOp::Gt),
            B::GtEq => Some(CmpOp::Ge),
            B::Spaceship => Some(CmpOp::NullSafeEq),
            _ => None,
        };
        if let Some(c) = cmp {
            let (a, b) = if is_literal(l) && !is_literal(r) {
                let b = self.node(r, None)?;
                self.check_literal(r, &b, l)?;
                (self.node(l, Some(&b.ty))?, b)
            } else {
                let a = self.node(l, None)?;
                self.check_literal(l, &a, r)?;
                let b = self.operand(r, Some(&a.ty))?;
                (a, b)
            };
            return self.compare(c, a, b, at);
        }
        match op {
            B::And | B::Or => {
                let (a, b) = (self.condition(l)?, self.condition(r)?);
                let (a, b) = (Box::new(a), Box::new(b));
                Ok(boolean(
                    if *op == B::And {
                        Kind::And(a, b)
                    } else {
                        Kind::Or(a, b)
                    },
                    at,
                ))
            }
            B::StringConcat => {
                let (a, b) = (self.node(l, None)?, self.node(r, None)?);
                let args = vec![
                    self.cast(a, &DataType::Utf8)?,
                    self.cast(b, &DataType::Utf8)?,
                ];
                Ok(node(Kind::Func(Func::Concat, args), DataType::Utf8, at))
            }
            B::Plus | B::Minus
                if matches!(l, ast::Expr::Interval(_)) || matches!(r, ast::Expr::Interval(_)) =>
            {
                self.interval_arith(l, *op == B::Minus, r, at)
            }
            B::Plus | B::Minus | B::Multiply | B::Divide | B::Modulo => {
                let arith = match op {
                    B::Plus => Arith::Add,
                    B::Minus => Arith::Sub,
                    B::Multiply => Arith::Mul,
                    B::Divide => Arith::Div,
                    _ => Arith::Rem,
                };
                let (a, b) = self.pair(l, r)?;
                self.arith(arith, a, b, op, at)
            }
            other => Err(self.lacks(at, format!("unsupported operator {other}"), true)),
        }
    }

    fn arith(
        &self,
        op: Arith,
        a: Node,
        b: Node,
        shown: &BinaryOperator,
        at: usize,
    ) -> Result<Node> {
        for x in [&a, &b] {
            if !is_numeric(&x.ty) && x.ty != DataType::Null {
                return Err(self.error(
                    x.at,
                    format!("cannot apply {shown} to a {}", type_name(&x.ty)),
                ));
            }
        }
        let (a, b) = if op == Arith::Div {
            // `/` is division in DOUBLE (decimals too, unlike Spark's DECIMAL division).
            (
                self.cast(a, &DataType::Float64)?,
                self.cast(b, &DataType::Float64)?,
            )
        } else {
            let (a, b) = self.unify(a, b, "combine", at)?;
            if a.ty == DataType::Null {
                (
                    self.cast(a, &DataType::Int64)?,
                    self.cast(b, &DataType::Int64)?,
                )
            } else {
                (a, b)
            }
        };
        let ty = evaluate::arith_type(op, &a.ty).map_err(|m| self.error(at, m))?;
        Ok(node(Kind::Arith(op, Box::new(a), Box::new(b)), ty, at))
    }

    fn is_bool(&mut self, x: &ast::Expr, value: bool, negated: bool, at: usize) -> Result<Node> {
        let x = self.condition(x)?;
        let lit = node(
            Kind::Literal(std::sync::Arc::new(arrow_array::BooleanArray::from(vec![
                value,
            ]))),
            DataType::Boolean,
            at,
        );
        let eq = boolean(Kind::Cmp(CmpOp::NullSafeEq, Box::new(x), Box::new(lit)), at);
        Ok(if negated {
            boolean(Kind::Not(Box::new(eq)), at)
        } else {
            eq
        })
    }

    fn like(
        &mut self,
        x: &ast::Expr,
        pattern: &ast::Expr,
        negated: bool,
        ci: bool,
        at: usize,
    ) -> Result<Node> {
        let pattern = match pattern {
            ast::Expr::Value(v) => match &v.value {
                SqlValue::SingleQuotedString(s) | SqlValue::DoubleQuotedString(s) => s.clone(),
                _ => {
                    return Err(self.error(self.at(pattern), "LIKE needs a string literal pattern"))
                }
            },
            other => return Err(self.error(self.at(other), "LIKE needs a string literal pattern")),
        };
        let x = self.node(x, None)?;
        let mut x = self.cast(x, &DataType::Utf8)?;
        if ci {
            // ILIKE is LIKE over lower() of both sides in Spark, so lower(upper(x)) -> lower(x).
            x = without_case_conversion(x);
        }
        let like = boolean(
            Kind::Like {
                expr: Box::new(x),
                pattern,
                case_insensitive: ci,
            },
            at,
        );
        Ok(if negated {
            boolean(Kind::Not(Box::new(like)), at)
        } else {
            like
        })
    }

    fn case(
        &mut self,
        operand: Option<&ast::Expr>,
        conditions: &[ast::CaseWhen],
        otherwise: Option<&ast::Expr>,
        at: usize,
    ) -> Result<Node> {
        let subject = operand.map(|o| self.node(o, None)).transpose()?;
        let mut whens = Vec::new();
        let mut results = Vec::new();
        for c in conditions {
            let cond = match &subject {
                Some(s) => {
                    let v = self.operand(&c.condition, Some(&s.ty))?;
                    self.compare(CmpOp::Eq, s.clone(), v, self.at(&c.condition))?
                }
                None => self.condition(&c.condition)?,
            };
            whens.push(cond);
            results.push(self.node(&c.result, None)?);
        }
        let otherwise = otherwise.map(|o| self.node(o, None)).transpose()?;
        let mut ty = DataType::Null;
        for r in results.iter().chain(otherwise.iter()) {
            ty = common(&ty, &r.ty).ok_or_else(|| {
                self.error(
                    r.at,
                    format!(
                        "CASE results of different types: {} and {}",
                        type_name(&ty),
                        type_name(&r.ty)
                    ),
                )
            })?;
        }
        let results = results
            .into_iter()
            .map(|r| self.cast(r, &ty))
            .collect::<Result<Vec<_>>>()?;
        let otherwise = match otherwise {
            Some(o) => self.cast(o, &ty)?,
            None => node(Kind::Literal(types::null_of(&ty)), ty.clone(), at),
        };
        Ok(node(
            Kind::Case {
                whens: whens.into_iter().zip(results).collect(),
                otherwise: Box::new(otherwise),
            },
            ty,
            at,
        ))
    }

    fn cast_type(&self, t: &ast::DataType, at: usize) -> Result<DataType> {
        let name = t.to_string().to_ascii_lowercase();
        Ok(match name.as_str() {
            "bigint" | "long" => DataType::Int64,
            "int" | "integer" => DataType::Int32,
            "smallint" | "short" => DataType::Int16,
            "tinyint" | "byte" => DataType::Int8,
            "double" | "double precision" => DataType::Float64,
            "float" | "real" => DataType::Float32,
            "string" | "varchar" | "text" => DataType::Utf8,
            "boolean" | "bool" => DataType::Boolean,
            "date" => DataType::Date32,
            "timestamp" => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            "timestamp_ntz" => DataType::Timestamp(TimeUnit::Microsecond, None),
            "binary" => DataType::Binary,
            n if n.starts_with("decimal") || n.starts_with("numeric") => {
                let (p, s) = match (n.find('('), n.find(')')) {
                    (Some(a), Some(b)) if a < b => {
                        let mut it = n[a + 1..b].split(',').map(|x| x.trim().parse::<i16>());
                        match (it.next(), it.next()) {
                            (Some(Ok(p)), Some(Ok(s))) => (p, s),
                            (Some(Ok(p)), None) => (p, 0),
                            _ => return Err(self.error(at, format!("bad decimal type {name}"))),
                        }
                    }
                    _ => (10, 0), // Spark's DECIMAL without arguments
                };
                if !(1..=38).contains(&p) || s < 0 || s > p {
                    return Err(self.error(
                        at,
                        format!("bad decimal type {name}: precision 1 to 38, scale 0 to precision"),
                    ));
                }
                DataType::Decimal128(p as u8, s as i8)
            }
            other => return Err(self.lacks(at, format!("CAST to {other} is not supported"), true)),
        })
    }

    fn function(&mut self, f: &ast::Function, at: usize) -> Result<Node> {
        let name = f.name.to_string().to_ascii_lowercase();
        if super::now::NOW_FUNCTIONS.contains(&name.as_str()) {
            // Fixed once per operation: deterministic within it.
            return Err(self.lacks(
                at,
                format!(
                    "{name}() must be fixed once per operation before compiling \
                     (rowexpr::resolve_now replaces it by a literal)"
                ),
                true,
            ));
        }
        if DATE_FUNCTIONS.contains(&name.as_str()) {
            let args = self.arguments(f, &name, at)?;
            return self.date_function(&name, args, at);
        }
        let Some(&(_, func)) = FUNCTIONS.iter().find(|(n, _)| *n == name) else {
            let mut supported: Vec<&str> = FUNCTIONS.iter().map(|(n, _)| *n).collect();
            supported.extend(DATE_FUNCTIONS);
            supported.sort_unstable();
            return Err(self.lacks(
                at,
                format!(
                    "function {name}() is not supported (supported: {})",
                    supported.join(", ")
                ),
                !NON_DETERMINISTIC.contains(&name.as_str()),
            ));
        };
        let list = match &f.args {
            ast::FunctionArguments::None => vec![],
            ast::FunctionArguments::List(l) => l.args.iter().collect(),
            ast::FunctionArguments::Subquery(_) => {
                return Err(self.error(at, "subqueries are not supported"))
            }
        };
        let mut args = Vec::new();
        for a in list {
            match a {
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) => {
                    args.push(self.node(x, None)?)
                }
                _ => return Err(self.error(at, format!("unsupported argument in {name}()"))),
            }
        }
        let arity = |lo: usize, hi: usize| -> Result<()> {
            if args.len() < lo || args.len() > hi {
                let want = if lo == hi {
                    lo.to_string()
                } else if hi == usize::MAX {
                    format!("at least {lo}")
                } else {
                    format!("{lo} or {hi}")
                };
                return Err(self.error(
                    at,
                    format!("{name}() takes {want} argument(s), got {}", args.len()),
                ));
            }
            Ok(())
        };
        let numeric = |x: &Node| -> Result<()> {
            if is_numeric(&x.ty) || x.ty == DataType::Null {
                Ok(())
            } else {
                Err(self.error(
                    x.at,
                    format!("{name}() needs a number, got a {}", type_name(&x.ty)),
                ))
            }
        };
        let (args, ty) = match func {
            Func::Upper | Func::Lower | Func::Trim | Func::Length => {
                arity(1, 1)?;
                let mut x = self.cast(args.pop().expect("one"), &DataType::Utf8)?;
                if matches!(func, Func::Upper | Func::Lower) {
                    x = without_case_conversion(x);
                }
                let ty = if func == Func::Length {
                    DataType::Int32
                } else {
                    DataType::Utf8
                };
                (vec![x], ty)
            }
            Func::Abs | Func::Floor | Func::Ceil => {
                arity(1, 1)?;
                numeric(&args[0])?;
                let x = args.pop().expect("one");
                let x = if x.ty == DataType::Null {
                    self.cast(x, &DataType::Int64)?
                } else {
                    x
                };
                let ty = match (&x.ty, func) {
                    (t, Func::Floor | Func::Ceil) if types::is_float(t) => DataType::Int64,
                    (DataType::Decimal128(p, s), Func::Floor | Func::Ceil) => {
                        DataType::Decimal128(((*p as i16 - *s as i16) + 1).clamp(1, 38) as u8, 0)
                    }
                    (t, _) => t.clone(),
                };
                (vec![x], ty)
            }
            Func::Round => {
                arity(1, 2)?;
                numeric(&args[0])?;
                if let Some(d) = args.get(1) {
                    if !matches!(d.kind, Kind::Literal(_)) || !types::is_integer(&d.ty) {
                        return Err(self.error(d.at, "round()'s scale must be an integer literal"));
                    }
                }
                let ty = if args[0].ty == DataType::Null {
                    DataType::Int64
                } else {
                    args[0].ty.clone()
                };
                let first = args.remove(0);
                let mut out = vec![self.cast(first, &ty)?];
                if let Some(d) = args.pop() {
                    out.push(self.cast(d, &DataType::Int32)?);
                }
                (out, ty)
            }
            Func::Coalesce => {
                arity(1, usize::MAX)?;
                let mut ty = DataType::Null;
                for a in &args {
                    ty = common(&ty, &a.ty).ok_or_else(|| {
                        self.error(
                            a.at,
                            format!(
                                "coalesce() of different types: {} and {}",
                                type_name(&ty),
                                type_name(&a.ty)
                            ),
                        )
                    })?;
                }
                let out = args
                    .into_iter()
                    .map(|a| self.cast(a, &ty))
                    .collect::<Result<Vec<_>>>()?;
                (out, ty)
            }
            Func::Concat => {
                arity(1, usize::MAX)?;
                let out = args
                    .into_iter()
                    .map(|a| self.cast(a, &DataType::Utf8))
                    .collect::<Result<Vec<_>>>()?;
                (out, DataType::Utf8)
            }
            Func::DateAdd
            | Func::DateSub
            | Func::DateDiff
            | Func::AddMonths
            | Func::Year
            | Func::Month
            | Func::Day
            | Func::Substring
            | Func::AddMicros => {
                // Not in FUNCTIONS: compiled by date_function / interval_arith.
                return Err(
                    self.error(at, format!("internal: {name}() reached the wrong compiler"))
                );
            }
        };
        Ok(node(Kind::Func(func, args), ty, at))
    }
}

/// Date/time, substring and regex functions (compiled by [`Compiler::date_function`]).
const DATE_FUNCTIONS: &[&str] = &[
    "add_months",
    "date_add",
    "date_sub",
    "date_trunc",
    "datediff",
    "day",
    "dayofmonth",
    "month",
    "regexp",
    "regexp_like",
    "rlike",
    "substr",
    "substring",
    "to_date",
    "year",
];

const MICROS_PER_DAY: i64 = 86_400_000_000;

/// An INTERVAL literal: months (YEAR, MONTH) or µs (WEEK and smaller).
enum Interval {
    Months(i64),
    Micros(i64),
}

fn lit(a: ArrayRef, at: usize) -> Node {
    let ty = a.data_type().clone();
    node(Kind::Literal(a), ty, at)
}

impl Compiler<'_> {
    /// A function's arguments, compiled with no type hint.
    fn arguments(&mut self, f: &ast::Function, name: &str, at: usize) -> Result<Vec<Node>> {
        let list = match &f.args {
            ast::FunctionArguments::None => vec![],
            ast::FunctionArguments::List(l) => l.args.iter().collect(),
            ast::FunctionArguments::Subquery(_) => {
                return Err(self.error(at, "subqueries are not supported"))
            }
        };
        let mut args = Vec::new();
        for a in list {
            match a {
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) => {
                    args.push(self.node(x, None)?)
                }
                _ => return Err(self.error(at, format!("unsupported argument in {name}()"))),
            }
        }
        Ok(args)
    }

    /// An integer argument (days, months, positions) as INT (a wider one cast, checked).
    fn int_arg(&self, x: Node, name: &str) -> Result<Node> {
        if !types::is_integer(&x.ty) && x.ty != DataType::Null {
            return Err(self.error(
                x.at,
                format!("{name}() needs an integer, got a {}", type_name(&x.ty)),
            ));
        }
        self.cast(x, &DataType::Int32)
    }

    /// A string literal argument's text.
    fn literal_text(&self, x: &Node, what: &str) -> Result<String> {
        if let Kind::Literal(a) = &x.kind {
            if let Some(s) = a.as_any().downcast_ref::<arrow_array::StringArray>() {
                if s.is_valid(0) {
                    return Ok(s.value(0).to_string());
                }
            }
        }
        Err(self.error(x.at, format!("{what} must be a string literal")))
    }

    fn date_function(&mut self, name: &str, mut args: Vec<Node>, at: usize) -> Result<Node> {
        let want = |lo: usize, hi: usize| -> Result<()> {
            if args.len() < lo || args.len() > hi {
                let n = if lo == hi {
                    lo.to_string()
                } else {
                    format!("{lo} or {hi}")
                };
                return Err(self.error(
                    at,
                    format!("{name}() takes {n} argument(s), got {}", args.len()),
                ));
            }
            Ok(())
        };
        let date = DataType::Date32;
        let f = |func: Func, args: Vec<Node>, ty: DataType| node(Kind::Func(func, args), ty, at);
        Ok(match name {
            "date_add" | "date_sub" => {
                want(2, 2)?;
                let n = self.int_arg(args.pop().expect("two"), name)?;
                let d = self.cast(args.pop().expect("two"), &date)?;
                let func = if name == "date_add" {
                    Func::DateAdd
                } else {
                    Func::DateSub
                };
                f(func, vec![d, n], date)
            }
            "add_months" => {
                want(2, 2)?;
                let n = self.int_arg(args.pop().expect("two"), name)?;
                let d = self.cast(args.pop().expect("two"), &date)?;
                f(Func::AddMonths, vec![d, n], date)
            }
            "datediff" => {
                want(2, 2)?;
                let start = self.cast(args.pop().expect("two"), &date)?;
                let end = self.cast(args.pop().expect("two"), &date)?;
                f(Func::DateDiff, vec![end, start], DataType::Int32)
            }
            "year" | "month" | "day" | "dayofmonth" => {
                want(1, 1)?;
                let d = self.cast(args.pop().expect("one"), &date)?;
                let func = match name {
                    "year" => Func::Year,
                    "month" => Func::Month,
                    _ => Func::Day,
                };
                f(func, vec![d], DataType::Int32)
            }
            "to_date" => {
                if args.len() == 2 {
                    return Err(self.lacks(
                        at,
                        "to_date(text, format) is not supported: Java date patterns are not \
                         evaluated by delta-occ; use to_date(text) or CAST(text AS DATE)",
                        true,
                    ));
                }
                want(1, 1)?;
                self.cast(args.pop().expect("one"), &date)?
            }
            "date_trunc" => {
                want(2, 2)?;
                let x = args.pop().expect("two");
                let unit_text = self.literal_text(&args[0], "date_trunc()'s unit")?;
                let unit = trunc_unit(&unit_text).ok_or_else(|| {
                    self.error(
                        args[0].at,
                        format!(
                            "date_trunc() unit {unit_text:?} is not one of YEAR, QUARTER, MONTH, \
                             WEEK, DAY, HOUR, MINUTE, SECOND, MILLISECOND, MICROSECOND"
                        ),
                    )
                })?;
                let ts = match x.ty {
                    DataType::Timestamp(_, None) => {
                        DataType::Timestamp(TimeUnit::Microsecond, None)
                    }
                    _ => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
                };
                let x = self.cast(x, &ts)?;
                node(
                    Kind::DateTrunc {
                        unit,
                        arg: Box::new(x),
                        zone: self.zone.clone(),
                    },
                    ts,
                    at,
                )
            }
            "substring" | "substr" => {
                want(2, 3)?;
                let len = if args.len() == 3 {
                    Some(self.int_arg(args.pop().expect("three"), name)?)
                } else {
                    None
                };
                let pos = self.int_arg(args.pop().expect("two"), name)?;
                let s = self.cast(args.pop().expect("one"), &DataType::Utf8)?;
                let mut a = vec![s, pos];
                a.extend(len);
                f(Func::Substring, a, DataType::Utf8)
            }
            _ => {
                // regexp_like, rlike, regexp
                want(2, 2)?;
                let p = args.pop().expect("two");
                let pattern = self.literal_text(&p, &format!("{name}()'s pattern"))?;
                let x = self.cast(args.pop().expect("one"), &DataType::Utf8)?;
                self.rlike_node(x, pattern, p.at, at)?
            }
        })
    }

    fn rlike(
        &mut self,
        x: &ast::Expr,
        pattern: &ast::Expr,
        negated: bool,
        at: usize,
    ) -> Result<Node> {
        let p = self.node(pattern, None)?;
        let text = self.literal_text(&p, "the RLIKE pattern")?;
        let x = self.node(x, None)?;
        let x = self.cast(x, &DataType::Utf8)?;
        let m = self.rlike_node(x, text, p.at, at)?;
        Ok(if negated {
            boolean(Kind::Not(Box::new(m)), at)
        } else {
            m
        })
    }

    fn rlike_node(&self, x: Node, pattern: String, p_at: usize, at: usize) -> Result<Node> {
        let regex = super::regex_java::translate(&pattern)
            .map_err(|m| self.error(p_at, format!("RLIKE pattern {pattern:?}: {m}")))?;
        super::functions::check_regex(&regex)
            .map_err(|m| self.error(p_at, format!("RLIKE pattern {pattern:?}: {m}")))?;
        Ok(boolean(
            Kind::RLike {
                expr: Box::new(x),
                pattern,
                regex,
            },
            at,
        ))
    }

    fn interval(&self, e: &ast::Expr) -> Result<Interval> {
        let at = self.at(e);
        let ast::Expr::Interval(iv) = e else {
            return Err(self.error(at, "expected an INTERVAL"));
        };
        if iv.last_field.is_some() {
            return Err(self.error(at, "INTERVAL ... TO ... ranges are not supported"));
        }
        // INTERVAL 7 DAYS, INTERVAL '7' DAY, INTERVAL '7 days', INTERVAL -1 HOUR
        let (number, unit) = match (number_text(&iv.value), &*iv.value) {
            (Some(n), _) => (n, iv.leading_field.as_ref().map(|f| f.to_string())),
            (None, ast::Expr::Value(v)) => match &v.value {
                SqlValue::SingleQuotedString(s) => match &iv.leading_field {
                    Some(f) => (s.trim().to_string(), Some(f.to_string())),
                    None => match s.split_whitespace().collect::<Vec<_>>().as_slice() {
                        [n, u] => (n.to_string(), Some(u.to_string())),
                        _ => return Err(self.error(at, format!("cannot read INTERVAL '{s}'"))),
                    },
                },
                _ => return Err(self.error(at, "INTERVAL needs a number")),
            },
            _ => return Err(self.error(at, "INTERVAL needs a literal number")),
        };
        let n: i64 = number
            .parse()
            .map_err(|_| self.error(at, format!("INTERVAL needs a whole number, got {number}")))?;
        let unit = unit
            .ok_or_else(|| self.error(at, "INTERVAL needs a unit (DAY, HOUR, ...)"))?
            .to_ascii_uppercase();
        let per: i64 = match unit.trim_end_matches('S') {
            "YEAR" => return Ok(Interval::Months(n.saturating_mul(12))),
            "MONTH" => return Ok(Interval::Months(n)),
            "WEEK" => 7 * MICROS_PER_DAY,
            "DAY" => MICROS_PER_DAY,
            "HOUR" => 3_600_000_000,
            "MINUTE" => 60_000_000,
            "SECOND" => 1_000_000,
            "MILLISECOND" => 1_000,
            "MICROSECOND" => 1,
            other => {
                return Err(self.lacks(at, format!("INTERVAL unit {other} is not supported"), true))
            }
        };
        n.checked_mul(per)
            .map(Interval::Micros)
            .ok_or_else(|| self.error(at, "INTERVAL out of range"))
    }

    /// `x ± INTERVAL`: DATE ± whole days is date_add, DATE ± months add_months (both DATE, as
    /// Spark); anything else adds µs to the instant (Spark adds day-time intervals as µs, not as
    /// wall-clock days).
    fn interval_arith(
        &mut self,
        l: &ast::Expr,
        minus: bool,
        r: &ast::Expr,
        at: usize,
    ) -> Result<Node> {
        let (base, iv) = match (l, r) {
            (_, ast::Expr::Interval(_)) if !matches!(l, ast::Expr::Interval(_)) => (l, r),
            (ast::Expr::Interval(_), _) if !minus && !matches!(r, ast::Expr::Interval(_)) => (r, l),
            _ => {
                return Err(self.error(
                    at,
                    "an INTERVAL can only be added to or subtracted from a date or a timestamp",
                ))
            }
        };
        let iv = self.interval(iv)?;
        let x = self.node(base, None)?;
        let sign = if minus { -1 } else { 1 };
        let int = |v: i64| -> Result<ArrayRef> {
            i32::try_from(v)
                .map(|v| Arc::new(Int32Array::from(vec![v])) as ArrayRef)
                .map_err(|_| self.error(at, "INTERVAL out of range"))
        };
        match (&x.ty, iv) {
            (DataType::Date32 | DataType::Null, Interval::Months(m)) => {
                let n = lit(int(sign * m)?, at);
                let d = self.cast(x, &DataType::Date32)?;
                Ok(node(
                    Kind::Func(Func::AddMonths, vec![d, n]),
                    DataType::Date32,
                    at,
                ))
            }
            (DataType::Date32 | DataType::Null, Interval::Micros(us))
                if us % MICROS_PER_DAY == 0 =>
            {
                let n = lit(int(sign * us / MICROS_PER_DAY)?, at);
                let d = self.cast(x, &DataType::Date32)?;
                Ok(node(
                    Kind::Func(Func::DateAdd, vec![d, n]),
                    DataType::Date32,
                    at,
                ))
            }
            (DataType::Date32 | DataType::Timestamp(..), Interval::Micros(us)) => {
                let ts = match &x.ty {
                    DataType::Timestamp(_, tz) => {
                        DataType::Timestamp(TimeUnit::Microsecond, tz.clone())
                    }
                    _ => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
                };
                let x = self.cast(x, &ts)?;
                let n = lit(Arc::new(Int64Array::from(vec![sign * us])), at);
                Ok(node(Kind::Func(Func::AddMicros, vec![x, n]), ts, at))
            }
            (DataType::Timestamp(..), Interval::Months(_)) => Err(self.lacks(
                at,
                "INTERVAL of years or months on a timestamp is not supported \
                 (add_months on a date is)",
                true,
            )),
            (t, _) => Err(self.error(at, format!("cannot add an INTERVAL to a {}", type_name(t)))),
        }
    }
}

fn trunc_unit(s: &str) -> Option<TruncUnit> {
    use TruncUnit as U;
    Some(match s.to_ascii_uppercase().as_str() {
        "YEAR" | "YYYY" | "YY" => U::Year,
        "QUARTER" => U::Quarter,
        "MONTH" | "MM" | "MON" => U::Month,
        "WEEK" => U::Week,
        "DAY" | "DD" => U::Day,
        "HOUR" => U::Hour,
        "MINUTE" => U::Minute,
        "SECOND" => U::Second,
        "MILLISECOND" => U::Millisecond,
        "MICROSECOND" => U::Microsecond,
        _ => return None,
    })
}

/// `x` without an outer upper() / lower(): an enclosing case conversion decides the case, and
/// Spark's optimizer drops the inner one (SimplifyCaseConversionExpressions), which changes the
/// result where the full mappings disagree (`lower(upper('straße'))` is `strasse` evaluated
/// as written, `straße` in Spark). Every engine must select the same rows.
fn without_case_conversion(mut x: Node) -> Node {
    while let Kind::Func(Func::Upper | Func::Lower, args) = &mut x.kind {
        match args.pop() {
            Some(inner) => x = inner,
            None => break,
        }
    }
    x
}
