//! SQL value expressions for the embedded engine (UPDATE `set` values, MERGE conditions and
//! assignments): parsed with `sqlparser` into an untyped JSON tree that the engine evaluates on
//! rows. Column names are not resolved here: MERGE expressions reference two tables by alias.

use serde_json::{json, Value};
use sqlparser::ast::{self, BinaryOperator, UnaryOperator, Value as SqlValue};

use super::parse::{offset, parse_sql};
use crate::error::{Error, Result};

/// Parse `text` as one expression into its JSON tree.
pub fn expression_json(text: &str) -> Result<Value> {
    let ast = parse_sql(text)?;
    Tree { text }.node(&ast)
}

/// The top-level AND conjuncts of `text`, each as (SQL text, JSON tree).
pub fn conjuncts_json(text: &str) -> Result<Vec<(String, Value)>> {
    let ast = parse_sql(text)?;
    let mut parts = Vec::new();
    split_and(&ast, &mut parts);
    let tree = Tree { text };
    parts
        .into_iter()
        .map(|e| Ok((e.to_string(), tree.node(e)?)))
        .collect()
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

struct Tree<'a> {
    text: &'a str,
}

impl Tree<'_> {
    fn error(&self, e: &ast::Expr, reason: impl Into<String>) -> Error {
        use sqlparser::ast::Spanned;
        Error::predicate(self.text, offset(self.text, e.span().start), reason)
    }

    fn all(&self, v: &[&ast::Expr]) -> Result<Vec<Value>> {
        v.iter().map(|e| self.node(e)).collect()
    }

    fn node(&self, e: &ast::Expr) -> Result<Value> {
        use ast::Expr as E;
        Ok(match e {
            E::Identifier(id) => json!({"col": [id.value]}),
            E::CompoundIdentifier(parts) => {
                json!({"col": parts.iter().map(|p| p.value.clone()).collect::<Vec<_>>()})
            }
            E::Nested(inner) => self.node(inner)?,
            E::Value(v) => literal(&v.value)
                .ok_or_else(|| self.error(e, format!("unsupported literal {}", v.value)))?,
            E::TypedString(ts) => {
                let text = match &ts.value.value {
                    SqlValue::SingleQuotedString(s) | SqlValue::DoubleQuotedString(s) => s.clone(),
                    other => {
                        return Err(
                            self.error(e, format!("expected a quoted string, found {other}"))
                        )
                    }
                };
                let kind = match ts.data_type {
                    ast::DataType::Date => "date",
                    ast::DataType::Timestamp(..) | ast::DataType::Datetime(_) => "timestamp",
                    ast::DataType::TimestampNtz(_) => "timestamp_ntz",
                    _ => "string",
                };
                json!({"lit": text, "kind": kind})
            }
            E::UnaryOp { op, expr } => {
                let name = match op {
                    UnaryOperator::Not => "not",
                    UnaryOperator::Minus => "neg",
                    UnaryOperator::Plus => return self.node(expr),
                    other => return Err(self.error(e, format!("unsupported operator {other}"))),
                };
                json!({"op": name, "args": [self.node(expr)?]})
            }
            E::BinaryOp { left, op, right } => {
                let name = match op {
                    BinaryOperator::And => "and",
                    BinaryOperator::Or => "or",
                    BinaryOperator::Eq => "=",
                    BinaryOperator::NotEq => "!=",
                    BinaryOperator::Lt => "<",
                    BinaryOperator::LtEq => "<=",
                    BinaryOperator::Gt => ">",
                    BinaryOperator::GtEq => ">=",
                    BinaryOperator::Spaceship => "<=>",
                    BinaryOperator::Plus => "+",
                    BinaryOperator::Minus => "-",
                    BinaryOperator::Multiply => "*",
                    BinaryOperator::Divide => "/",
                    BinaryOperator::Modulo => "%",
                    BinaryOperator::StringConcat => "||",
                    other => return Err(self.error(e, format!("unsupported operator {other}"))),
                };
                json!({"op": name, "args": [self.node(left)?, self.node(right)?]})
            }
            E::IsNull(x) => json!({"op": "is_null", "args": [self.node(x)?]}),
            E::IsNotNull(x) => json!({"op": "is_not_null", "args": [self.node(x)?]}),
            E::IsTrue(x) => {
                json!({"op": "=", "args": [self.node(x)?, {"lit": true, "kind": "boolean"}]})
            }
            E::IsFalse(x) => {
                json!({"op": "=", "args": [self.node(x)?, {"lit": false, "kind": "boolean"}]})
            }
            E::InList {
                expr,
                list,
                negated,
            } => {
                let mut args = vec![self.node(expr)?];
                args.extend(self.all(&list.iter().collect::<Vec<_>>())?);
                json!({"op": "in", "args": args, "negated": negated})
            }
            E::Between {
                expr,
                negated,
                low,
                high,
            } => {
                json!({"op": "between", "args": self.all(&[expr, low, high])?, "negated": negated})
            }
            E::Like {
                negated,
                any: false,
                expr,
                pattern,
                escape_char: None,
            } => {
                json!({"op": "like", "args": self.all(&[expr, pattern])?, "negated": negated, "case_insensitive": false})
            }
            E::ILike {
                negated,
                any: false,
                expr,
                pattern,
                escape_char: None,
            } => {
                json!({"op": "like", "args": self.all(&[expr, pattern])?, "negated": negated, "case_insensitive": true})
            }
            E::Case {
                operand,
                conditions,
                else_result,
                ..
            } => {
                let mut whens = Vec::new();
                for c in conditions {
                    whens.push(json!([self.node(&c.condition)?, self.node(&c.result)?]));
                }
                json!({
                    "op": "case",
                    "operand": operand.as_deref().map(|o| self.node(o)).transpose()?,
                    "when": whens,
                    "else": else_result.as_deref().map(|o| self.node(o)).transpose()?,
                })
            }
            E::Cast {
                expr, data_type, ..
            } => {
                json!({"op": "cast", "args": [self.node(expr)?], "type": data_type.to_string().to_ascii_lowercase()})
            }
            E::Function(f) => {
                let name = f.name.to_string().to_ascii_lowercase();
                let args = match &f.args {
                    ast::FunctionArguments::None => vec![],
                    ast::FunctionArguments::List(list) => {
                        let mut out = Vec::new();
                        for a in &list.args {
                            match a {
                                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) => {
                                    out.push(self.node(x)?)
                                }
                                _ => {
                                    return Err(
                                        self.error(e, format!("unsupported argument in {name}()"))
                                    )
                                }
                            }
                        }
                        out
                    }
                    ast::FunctionArguments::Subquery(_) => {
                        return Err(self.error(e, "subqueries are not supported"))
                    }
                };
                json!({"op": "fn", "name": name, "args": args})
            }
            E::Subquery(_) | E::Exists { .. } | E::InSubquery { .. } => {
                return Err(self.error(e, "subqueries are not supported"))
            }
            other => return Err(self.error(e, format!("unsupported expression {other}"))),
        })
    }
}

fn literal(v: &SqlValue) -> Option<Value> {
    Some(match v {
        SqlValue::Number(n, _) => json!({"lit": n.to_string(), "kind": "number"}),
        SqlValue::SingleQuotedString(s) | SqlValue::DoubleQuotedString(s) => {
            json!({"lit": s, "kind": "string"})
        }
        SqlValue::Boolean(b) => json!({"lit": b, "kind": "boolean"}),
        SqlValue::Null => json!({"lit": null, "kind": "null"}),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trees() {
        let v = expression_json("t.x + 1").unwrap();
        assert_eq!(
            v,
            json!({"op": "+", "args": [{"col": ["t", "x"]}, {"lit": "1", "kind": "number"}]})
        );
        let parts = conjuncts_json("t.id = s.id AND (t.d = s.d AND s.x > 1)").unwrap();
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[2].0, "s.x > 1");
        let c = expression_json("CASE WHEN x > 1 THEN 'a' ELSE 'b' END").unwrap();
        assert_eq!(c["op"], "case");
        match expression_json("x + (SELECT 1)") {
            Err(Error::Predicate { position, .. }) => {
                assert_eq!(position, 6, "the subquery starts at SELECT")
            }
            other => panic!("{other:?}"),
        }
    }
}
