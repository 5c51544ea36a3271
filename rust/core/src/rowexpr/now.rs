//! `current_date()` and `current_timestamp()` fixed once per operation: the text is rewritten
//! with literals before anything compiles or records it, so the rows an operation selects and
//! the read predicate the conflict checker records (commitInfo) name the same instant.

use chrono::DateTime;
use sqlparser::ast;

use super::parse::parse_sql;
use super::zone::Zone;
use crate::error::{Error, Result};

/// Spark's names for "now" (`now()` is current_timestamp, `curdate()` current_date).
pub const NOW_FUNCTIONS: &[&str] = &["current_date", "current_timestamp", "now", "curdate"];

/// `text` with every `current_date()` / `current_timestamp()` (and `now()`, `curdate()`,
/// `CURRENT_DATE`, `CURRENT_TIMESTAMP`) replaced by the literal of `now_micros` (µs since the
/// epoch): `DATE 'yyyy-mm-dd'` of the wall clock in `time_zone`, and
/// `TIMESTAMP 'yyyy-mm-dd HH:MM:SS.ffffffZ'` (UTC, so no zone reads it differently). A text
/// without them is returned unchanged.
pub fn resolve_now(text: &str, now_micros: i64, time_zone: &str) -> Result<String> {
    let z = Zone::parse(time_zone).map_err(|m| Error::predicate(text, 1, m))?;
    let mut ast = parse_sql(text)?;
    let utc = DateTime::from_timestamp_micros(now_micros)
        .ok_or_else(|| Error::invalid(format!("now = {now_micros} µs is out of range")))?;
    let local = z
        .to_local(now_micros)
        .map_err(|m| Error::predicate(text, 1, m))?;
    let day = DateTime::from_timestamp_micros(local)
        .ok_or_else(|| Error::invalid("now is out of range"))?
        .date_naive();
    let date = parse_sql(&format!("DATE '{}'", day.format("%Y-%m-%d")))?;
    let stamp = parse_sql(&format!(
        "TIMESTAMP '{}'",
        utc.naive_utc().format("%Y-%m-%d %H:%M:%S%.6fZ")
    ))?;
    let mut changed = false;
    replace(&mut ast, &date, &stamp, &mut changed);
    Ok(if changed {
        ast.to_string()
    } else {
        text.to_string()
    })
}

fn replace(e: &mut ast::Expr, date: &ast::Expr, stamp: &ast::Expr, changed: &mut bool) {
    use ast::Expr as E;
    let mut go = |x: &mut ast::Expr| replace(x, date, stamp, changed);
    match e {
        E::Function(f) => {
            let name = f.name.to_string().to_ascii_lowercase();
            if NOW_FUNCTIONS.contains(&name.as_str()) && no_arguments(&f.args) {
                *e = if name.ends_with("date") {
                    date.clone()
                } else {
                    stamp.clone()
                };
                *changed = true;
                return;
            }
            if let ast::FunctionArguments::List(l) = &mut f.args {
                for a in &mut l.args {
                    if let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(x)) = a {
                        go(x);
                    }
                }
            }
        }
        E::Nested(x) | E::UnaryOp { expr: x, .. } | E::Cast { expr: x, .. } => go(x),
        E::IsNull(x)
        | E::IsNotNull(x)
        | E::IsTrue(x)
        | E::IsFalse(x)
        | E::IsNotTrue(x)
        | E::IsNotFalse(x) => go(x),
        E::BinaryOp { left, right, .. } => {
            go(left);
            go(right);
        }
        E::InList { expr, list, .. } => {
            go(expr);
            list.iter_mut().for_each(go);
        }
        E::Between {
            expr, low, high, ..
        } => {
            go(expr);
            go(low);
            go(high);
        }
        E::Like { expr, pattern, .. }
        | E::ILike { expr, pattern, .. }
        | E::RLike { expr, pattern, .. } => {
            go(expr);
            go(pattern);
        }
        E::Substring {
            expr,
            substring_from,
            substring_for,
            ..
        } => {
            go(expr);
            for x in [substring_from, substring_for].into_iter().flatten() {
                go(x);
            }
        }
        E::Case {
            operand,
            conditions,
            else_result,
            ..
        } => {
            if let Some(o) = operand {
                go(o);
            }
            if let Some(o) = else_result {
                go(o);
            }
            for c in conditions {
                go(&mut c.condition);
                go(&mut c.result);
            }
        }
        _ => {}
    }
}

fn no_arguments(a: &ast::FunctionArguments) -> bool {
    match a {
        ast::FunctionArguments::None => true,
        ast::FunctionArguments::List(l) => l.args.is_empty(),
        ast::FunctionArguments::Subquery(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::resolve_now;

    #[test]
    fn now_becomes_literals_of_one_instant() {
        // 1_795_773_600_123_456 µs is 2026-11-27 10:00:00.123456 UTC (Python:
        // datetime.fromtimestamp(1795773600.123456, timezone.utc)); in Pacific/Kiritimati
        // (UTC+14) it is already 2026-11-28 00:00.
        let now = 1_795_773_600_123_456;
        let cases = [
            (
                "d >= current_date() - INTERVAL 30 DAYS",
                "UTC",
                "d >= DATE '2026-11-27' - INTERVAL 30 DAYS",
            ),
            (
                "d = CURRENT_DATE",
                "Pacific/Kiritimati",
                "d = DATE '2026-11-28'",
            ),
            (
                "ts < current_timestamp() AND x = 1",
                "Pacific/Kiritimati",
                "ts < TIMESTAMP '2026-11-27 10:00:00.123456Z' AND x = 1",
            ),
            ("upper(s) = 'NOW()'", "UTC", "upper(s) = 'NOW()'"),
        ];
        for (text, zone, want) in cases {
            assert_eq!(resolve_now(text, now, zone).unwrap(), want, "{text}");
        }
        assert!(resolve_now("d = current_date()", now, "Nowhere/Land").is_err());
    }
}
