//! SQL text → `sqlparser` syntax tree: the one parse every condition goes through (row
//! evaluation, and through it file skipping), with errors that point at a 1-based position.

use sqlparser::ast;
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Location, Token};

use crate::error::{Error, Result};

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
