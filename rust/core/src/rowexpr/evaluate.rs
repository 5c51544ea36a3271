//! Evaluating a compiled tree on Arrow arrays with arrow-rs kernels. Literals stay one-value
//! scalars until they meet a column.

use std::sync::Arc;

use arrow_arith::{boolean as bool_ops, numeric};
use arrow_array::types::{Float32Type, Float64Type};
use arrow_array::{
    cast::AsArray, make_array, new_empty_array, Array, ArrayRef, BooleanArray, Int64Array,
};
use arrow_buffer::NullBuffer;
use arrow_ord::cmp;
use arrow_schema::{ArrowError, DataType};
use arrow_select::{filter::filter, interleave::interleave};

use super::value::Val;
use super::CmpOp;
use super::{functions, types, Arith, Kind, Node};

/// A failure at a position of the text (1-based character), with its reason.
pub type EvalError = (usize, String);
type R<T> = std::result::Result<T, EvalError>;

pub fn evaluate(node: &Node, inputs: &[ArrayRef], rows: usize) -> R<ArrayRef> {
    let v = eval(node, inputs, rows)?;
    v.expand(rows).map_err(|e| (node.at, e.to_string()))
}

/// A WHERE condition's value, as `evaluate`; where that fails, again without the rows Spark never
/// evaluates it on. Spark's optimizer filters first on `IS NOT NULL` of every column that a
/// top-level conjunct reads only through NULL-intolerant operators (`InferFiltersFromConstraints`):
/// such a row cannot be selected, so an error on it (`ts > X AND l * 1e11 > 0` overflowing where
/// `ts` is NULL) is never raised there. Those rows are NULL (not selected) in the result.
pub fn evaluate_condition(node: &Node, inputs: &[ArrayRef], rows: usize) -> R<ArrayRef> {
    let first_error = match evaluate(node, inputs, rows) {
        Ok(v) => return Ok(v),
        Err(e) => e,
    };
    let mut guarded = Vec::new();
    conjunct_guards(node, &mut guarded);
    let keep = BooleanArray::from(
        (0..rows)
            .map(|i| guarded.iter().all(|&c| inputs[c].is_valid(i)))
            .collect::<Vec<bool>>(),
    );
    if guarded.is_empty() || keep.true_count() == rows {
        return Err(first_error);
    }
    on_rows(node, inputs, &keep, None)
}

/// The columns Spark infers `IS NOT NULL` for from a condition: per top-level conjunct, those
/// reached from it through NULL-intolerant operators only (a NULL operand makes them NULL).
fn conjunct_guards(n: &Node, out: &mut Vec<usize>) {
    match &n.kind {
        Kind::And(a, b) => {
            conjunct_guards(a, out);
            conjunct_guards(b, out);
        }
        _ => null_intolerant_columns(n, out),
    }
}

fn null_intolerant_columns(n: &Node, out: &mut Vec<usize>) {
    match &n.kind {
        Kind::Column(i) => out.push(*i),
        Kind::Not(x) | Kind::Neg(x) | Kind::Cast(x, _) => null_intolerant_columns(x, out),
        Kind::Like { expr, .. } | Kind::RLike { expr, .. } => null_intolerant_columns(expr, out),
        Kind::Cmp(op, a, b) if *op != CmpOp::NullSafeEq => {
            null_intolerant_columns(a, out);
            null_intolerant_columns(b, out);
        }
        Kind::Arith(_, a, b) => {
            null_intolerant_columns(a, out);
            null_intolerant_columns(b, out);
        }
        // Functions, CASE, IS NULL, OR, fields: not inferred from (conservative).
        _ => {}
    }
}

/// Arrow's messages, in the words of SQL where they differ.
fn message(e: ArrowError) -> String {
    match e {
        ArrowError::DivideByZero => "division by zero".into(),
        ArrowError::ArithmeticOverflow(m) => format!("arithmetic overflow: {m}"),
        ArrowError::CastError(m) | ArrowError::ComputeError(m) => m,
        other => other.to_string(),
    }
}

fn eval(n: &Node, inputs: &[ArrayRef], rows: usize) -> R<Val> {
    let err = |e: ArrowError| (n.at, message(e));
    Ok(match &n.kind {
        Kind::Column(i) => Val::array(inputs[*i].clone()),
        Kind::Literal(a) => Val {
            arr: a.clone(),
            scalar: true,
        },
        Kind::Not(x) => {
            let v = eval(x, inputs, rows)?;
            let out = bool_ops::not(v.arr.as_boolean()).map_err(&err)?;
            Val::result(Arc::new(out), &[&v])
        }
        Kind::And(a, b) | Kind::Or(a, b) => {
            let and = matches!(n.kind, Kind::And(..));
            let a = eval(a, inputs, rows)?;
            let b = match eval(b, inputs, rows) {
                Ok(v) => v,
                // Spark does not evaluate the right side where the left decides (FALSE for AND,
                // TRUE for OR): `x <> 0 AND 1 / x > 1` selects rows instead of failing on x = 0.
                // The right side fails somewhere, so evaluate it again on the other rows only.
                Err(e) => decided_elsewhere(&a, b, inputs, rows, and).ok_or(e)??,
            };
            let len = if a.scalar && b.scalar { 1 } else { rows };
            let (x, y) = (a.expand(len).map_err(&err)?, b.expand(len).map_err(&err)?);
            let out = if and {
                bool_ops::and_kleene(x.as_boolean(), y.as_boolean())
            } else {
                bool_ops::or_kleene(x.as_boolean(), y.as_boolean())
            }
            .map_err(&err)?;
            Val::result(Arc::new(out), &[&a, &b])
        }
        Kind::Cmp(op, a, b) => {
            let (a, b) = (
                spark_order(eval(a, inputs, rows)?),
                spark_order(eval(b, inputs, rows)?),
            );
            let out = match op {
                CmpOp::Eq => cmp::eq(&a, &b),
                CmpOp::Ne => cmp::neq(&a, &b),
                CmpOp::Lt => cmp::lt(&a, &b),
                CmpOp::Le => cmp::lt_eq(&a, &b),
                CmpOp::Gt => cmp::gt(&a, &b),
                CmpOp::Ge => cmp::gt_eq(&a, &b),
                CmpOp::NullSafeEq => cmp::not_distinct(&a, &b),
            }
            .map_err(&err)?;
            Val::result(Arc::new(out), &[&a, &b])
        }
        Kind::IsNull(x, negated) => {
            let v = eval(x, inputs, rows)?;
            let out = if *negated {
                bool_ops::is_not_null(v.arr.as_ref())
            } else {
                bool_ops::is_null(v.arr.as_ref())
            }
            .map_err(&err)?;
            Val::result(Arc::new(out), &[&v])
        }
        Kind::Arith(op, a, b) => {
            let (a, b) = (eval(a, inputs, rows)?, eval(b, inputs, rows)?);
            arith(*op, &a, &b).map_err(|m| (n.at, m))?
        }
        Kind::Neg(x) => {
            let v = eval(x, inputs, rows)?;
            Val::result(numeric::neg(v.arr.as_ref()).map_err(&err)?, &[&v])
        }
        Kind::Like {
            expr,
            pattern,
            case_insensitive,
        } => {
            let v = eval(expr, inputs, rows)?;
            let out = functions::like(v.arr.as_string::<i32>(), pattern, *case_insensitive);
            Val::result(Arc::new(out), &[&v])
        }
        Kind::Case { whens, otherwise } => case(whens, otherwise, inputs, rows)?,
        Kind::Cast(x, zone) => {
            let v = eval(x, inputs, rows)?;
            let out = match zone {
                Some(z) => types::cast_zoned(&v.arr, &n.ty, z),
                None => types::cast(&v.arr, &n.ty),
            }
            .map_err(|m| (n.at, m))?;
            Val::result(out, &[&v])
        }
        Kind::Field(x, i) => {
            let v = eval(x, inputs, rows)?;
            let s = v.arr.as_struct();
            let child = s.column(*i);
            // A NULL struct has NULL fields, whatever its child array holds there.
            let nulls = NullBuffer::union(s.nulls(), child.nulls());
            let data = child
                .to_data()
                .into_builder()
                .nulls(nulls)
                .build()
                .map_err(&err)?;
            Val::result(make_array(data), &[&v])
        }
        Kind::RLike { expr, regex, .. } => {
            let v = eval(expr, inputs, rows)?;
            let out = functions::rlike(v.arr.as_string::<i32>(), regex).map_err(|m| (n.at, m))?;
            Val::result(Arc::new(out), &[&v])
        }
        Kind::DateTrunc { unit, arg, zone } => {
            let v = eval(arg, inputs, rows)?;
            let out = functions::date_trunc(&v, *unit, zone).map_err(|m| (n.at, m))?;
            Val::result(out, &[&v])
        }
        Kind::Func(f, args) => {
            let vals = args
                .iter()
                .map(|a| eval(a, inputs, rows))
                .collect::<R<Vec<_>>>()?;
            functions::apply(*f, &vals, &n.ty, rows).map_err(|m| (n.at, m))?
        }
    })
}

/// Spark orders floating point with NaN equal to itself and above everything, and -0.0 equal to
/// 0.0; arrow's kernels use IEEE totalOrder, which agrees once NaNs are one positive NaN and zeros
/// one zero.
fn spark_order(v: Val) -> Val {
    let normal64 = |x: f64| {
        if x.is_nan() {
            f64::NAN
        } else if x == 0.0 {
            0.0
        } else {
            x
        }
    };
    let normal32 = |x: f32| {
        if x.is_nan() {
            f32::NAN
        } else if x == 0.0 {
            0.0
        } else {
            x
        }
    };
    let arr: ArrayRef = match v.arr.data_type() {
        DataType::Float64 => Arc::new(
            v.arr
                .as_primitive::<Float64Type>()
                .unary::<_, Float64Type>(normal64),
        ),
        DataType::Float32 => Arc::new(
            v.arr
                .as_primitive::<Float32Type>()
                .unary::<_, Float32Type>(normal32),
        ),
        _ => return v,
    };
    Val {
        arr,
        scalar: v.scalar,
    }
}

/// The result type of an arithmetic operator on operands of type `t` (arrow's, found on empty
/// arrays so that decimal precision rules are arrow's own).
pub fn arith_type(op: Arith, t: &DataType) -> std::result::Result<DataType, String> {
    let e = new_empty_array(t);
    let v = Val::array(e);
    let out = kernel(op, &v, &v).map_err(|e| {
        format!(
            "cannot apply arithmetic to {}: {}",
            types::type_name(t),
            message(e)
        )
    })?;
    Ok(out.data_type().clone())
}

fn kernel(op: Arith, a: &Val, b: &Val) -> std::result::Result<ArrayRef, ArrowError> {
    match op {
        Arith::Add => numeric::add(a, b),
        Arith::Sub => numeric::sub(a, b),
        Arith::Mul => numeric::mul(a, b),
        Arith::Div => numeric::div(a, b),
        Arith::Rem => numeric::rem(a, b),
    }
}

fn arith(op: Arith, a: &Val, b: &Val) -> std::result::Result<Val, String> {
    if matches!(op, Arith::Div | Arith::Rem) {
        // ANSI: a zero divisor is an error wherever the dividend is not NULL (NULL / 0 is NULL).
        let zero = types::cast(
            &(Arc::new(Int64Array::from(vec![0i64])) as ArrayRef),
            b.arr.data_type(),
        )?;
        let zero = Val {
            arr: zero,
            scalar: true,
        };
        let by_zero = cmp::eq(&spark_order(b.clone()), &zero).map_err(message)?; // -0.0 too
        let hits = match (a.scalar, b.scalar) {
            (true, _) => a.arr.is_valid(0) && by_zero.true_count() > 0,
            (false, true) => by_zero.true_count() > 0 && a.arr.null_count() < a.arr.len(),
            (false, false) => {
                let live = bool_ops::is_not_null(a.arr.as_ref()).map_err(message)?;
                bool_ops::and(&by_zero, &live)
                    .map_err(message)?
                    .true_count()
                    > 0
            }
        };
        if hits {
            return Err("division by zero".into());
        }
    }
    kernel(op, a, b)
        .map(|arr| Val::result(arr, &[a, b]))
        .map_err(message)
}

/// CASE: each branch's value is computed only on the rows that take it, so a guarded
/// `CASE WHEN x <> 0 THEN 1 / x END` does not fail on the rows where x is 0.
/// The right side of AND (`and`) / OR evaluated only on the rows the left side `a` does not
/// decide, and a constant where it does (the result there is the left side's). None when the
/// left side decides no row (the right side's error stands).
fn decided_elsewhere(
    a: &Val,
    b: &Node,
    inputs: &[ArrayRef],
    rows: usize,
    and: bool,
) -> Option<R<Val>> {
    let left = a.expand(rows).ok()?;
    let left = left.as_boolean();
    let decides = |i: usize| left.is_valid(i) && left.value(i) != and;
    let needed = BooleanArray::from((0..rows).map(|i| !decides(i)).collect::<Vec<bool>>());
    if needed.true_count() == rows {
        return None;
    }
    Some((|| {
        let filler: ArrayRef = Arc::new(BooleanArray::from(vec![!and]));
        if needed.true_count() == 0 {
            return Ok(Val {
                arr: filler,
                scalar: true,
            });
        }
        Ok(Val::array(on_rows(
            b,
            inputs,
            &needed,
            Some(filler.as_ref()),
        )?))
    })())
}

/// `node` evaluated only on the rows where `keep` is TRUE, `filler` (one value; None: NULL of the
/// value's type) on the others.
fn on_rows(
    node: &Node,
    inputs: &[ArrayRef],
    keep: &BooleanArray,
    filler: Option<&dyn Array>,
) -> R<ArrayRef> {
    let sub: Vec<ArrayRef> = inputs
        .iter()
        .map(|x| filter(x.as_ref(), keep))
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| (node.at, message(e)))?;
    let part = evaluate(node, &sub, keep.true_count())?;
    let none;
    let filler = match filler {
        Some(f) => f,
        None => {
            none = arrow_array::new_null_array(part.data_type(), 1);
            none.as_ref()
        }
    };
    let mut j = 0;
    let pick: Vec<(usize, usize)> = (0..keep.len())
        .map(|i| {
            if keep.value(i) {
                j += 1;
                (0, j - 1)
            } else {
                (1, 0)
            }
        })
        .collect();
    interleave(&[part.as_ref(), filler], &pick).map_err(|e| (node.at, message(e)))
}

fn case(whens: &[(Node, Node)], otherwise: &Node, inputs: &[ArrayRef], rows: usize) -> R<Val> {
    let mut taken = BooleanArray::from(vec![false; rows]);
    let mut parts: Vec<ArrayRef> = Vec::new();
    let mut pick = vec![(usize::MAX, 0usize); rows];
    let branches = whens
        .iter()
        .map(|(c, r)| (Some(c), r))
        .chain(std::iter::once((None, otherwise)));
    for (cond, result) in branches {
        let here = match cond {
            Some(c) => {
                let m = eval(c, inputs, rows)?;
                let m = m.expand(rows).map_err(|e| (c.at, message(e)))?;
                let m = m.as_boolean();
                let selected = match m.nulls() {
                    Some(valid) => m.values() & valid.inner(),
                    None => m.values().clone(),
                };
                BooleanArray::new(&selected & &!taken.values(), None)
            }
            None => BooleanArray::new(!taken.values(), None),
        };
        if here.true_count() == 0 {
            continue;
        }
        let sub: Vec<ArrayRef> = inputs
            .iter()
            .map(|a| filter(a.as_ref(), &here))
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| (result.at, message(e)))?;
        let v = evaluate(result, &sub, here.true_count())?;
        let slot = parts.len();
        for (j, i) in here.values().set_indices().enumerate() {
            pick[i] = (slot, j);
        }
        parts.push(v);
        taken = BooleanArray::new(taken.values() | here.values(), None);
    }
    if parts.is_empty() {
        return Ok(Val {
            arr: types::null_of(&otherwise.ty),
            scalar: true,
        });
    }
    let refs: Vec<&dyn Array> = parts.iter().map(|p| p.as_ref()).collect();
    let out = interleave(&refs, &pick).map_err(|e| (otherwise.at, message(e)))?;
    Ok(Val::array(out))
}
