//! The compiled tree as JSON, for engines that evaluate it themselves (Spark builds a Column from
//! it), so that they select the rows this evaluator selects.
//!
//! Every node carries `"type"`: the Spark SQL name of its value's type (`boolean`, `tinyint`,
//! `smallint`, `int`, `bigint`, `float`, `double`, `decimal(p,s)`, `string`, `binary`, `date`,
//! `timestamp`, `timestamp_ntz`, `void` for an untyped NULL, `struct<a:int,b:string>`). The
//! compiler's implicit conversions are explicit `cast` nodes, so an engine evaluating node by node
//! computes in the same types. Nodes:
//!
//! - `{"col": name}`: a column, by its name in the compile schema.
//! - `{"lit": V, "kind": K}`: a literal, encoded as the file-skipping predicate's literals
//!   (`scalar_json`, decoded by `spark/_columns.py::_literal`); the literal's type is
//!   `"type"` (a `long` of type `int` is an INT literal):
//!   - `null`: V is null (the type says of what);
//!   - `boolean`: V true/false;
//!   - `long`: any integer type, V a JSON integer;
//!   - `double`: `float` or `double`, V a JSON number, or the string `NaN`, `inf`, `-inf`
//!     (a `float` literal is its shortest decimal text, as Spark prints it);
//!   - `decimal`: V the unscaled value as a string, plus `"scale"`;
//!   - `string`: V the text; `binary`: V the bytes as (lossy) UTF-8;
//!   - `date`: V days since 1970-01-01;
//!   - `timestamp`: V µs since 1970-01-01T00:00:00Z (an instant, no session zone involved);
//!   - `timestamp_ntz`: V µs since 1970-01-01 00:00:00 of the wall clock.
//! - `{"op":"not","arg"}`, `{"op":"and"|"or","args":[a,b]}`.
//! - `{"op":"="|"!="|"<"|"<="|">"|">="|"<=>","left","right"}`: both sides of one type.
//! - `{"op":"is_null"|"is_not_null","arg"}`.
//! - `{"op":"+"|"-"|"*"|"/"|"%","left","right"}`: both sides of one type; `/` always on doubles
//!   (the compiler casts), `%` keeps the dividend's sign (Spark's); ANSI overflow is an error.
//! - `{"op":"neg","arg"}`.
//! - `{"op":"like","arg","pattern","case_insensitive","negated":false}`: SQL LIKE with backslash
//!   escapes (ILIKE when case-insensitive); NOT LIKE is a `not` node around it.
//! - `{"op":"case","whens":[[cond,value],...],"else":node}`: values already of the node's type.
//! - `{"op":"cast","arg","to":T}`: an ANSI cast to T (`to` equals `type`).
//! - `{"op":"fn","name","args":[...]}`: Spark's builtin of that name with identical semantics
//!   (see [`func_name`]): upper, lower, abs, length, trim, round, floor, ceil, coalesce, concat,
//!   date_add, date_sub, datediff, add_months (DATE in, DATE out), year, month, day (of a DATE:
//!   a TIMESTAMP argument is first a zoned `cast` to DATE), substring, rlike (args: value and
//!   the pattern as written, a Java regex), date_trunc (args: unit literal such as `"HOUR"`,
//!   and a timestamp; carries `"time_zone"`), and timestampadd (args: `"MICROSECOND"`, a
//!   bigint count, a timestamp): every INTERVAL of days or smaller added to a TIMESTAMP is
//!   this (Spark adds day-time intervals as µs); DATE ± whole days is date_add, DATE ± years
//!   or months add_months.
//! - `{"op":"field","arg","name"}`: a field of a struct value (NULL when the struct is).
//!
//! Time zones: a node that depends on the SQL session time zone carries `"time_zone"` (an IANA
//! name, `UTC` or an offset): `cast` between TIMESTAMP and TIMESTAMP_NTZ and from STRING to
//! TIMESTAMP (other zoned conversions are chains through TIMESTAMP_NTZ: TIMESTAMP to DATE or
//! STRING is a zoned cast to TIMESTAMP_NTZ first, DATE to TIMESTAMP a plain cast to
//! TIMESTAMP_NTZ then a zoned one), and `date_trunc`. The consumer evaluates those nodes in
//! that zone (Spark: as with `spark.sql.session.timeZone` set to it); every other node is
//! zone-free. Literals are never zoned (timestamps are instants).

use arrow_schema::DataType;
use serde_json::{json, Value};

use super::{Arith, Func, Kind, Node, RowExpr};
use crate::arrow_values::scalar_at;
use crate::partition::Scalar;

impl RowExpr {
    /// The compiled tree as JSON text (format in the module documentation).
    pub fn tree_json(&self) -> String {
        node_json(&self.node, &self.columns).to_string()
    }
}

/// The Spark SQL name of an Arrow type (unsigned integers as the signed type that holds them,
/// as Spark reads them from parquet).
pub fn spark_type(t: &DataType) -> String {
    use DataType as T;
    match t {
        T::Null => "void".into(),
        T::Boolean => "boolean".into(),
        T::Int8 => "tinyint".into(),
        T::Int16 | T::UInt8 => "smallint".into(),
        T::Int32 | T::UInt16 => "int".into(),
        T::Int64 | T::UInt32 => "bigint".into(),
        T::UInt64 => "decimal(20,0)".into(),
        T::Float16 | T::Float32 => "float".into(),
        T::Float64 => "double".into(),
        T::Decimal128(p, s) => format!("decimal({p},{s})"),
        T::Utf8 | T::LargeUtf8 | T::Utf8View => "string".into(),
        T::Binary | T::LargeBinary | T::BinaryView | T::FixedSizeBinary(_) => "binary".into(),
        T::Date32 | T::Date64 => "date".into(),
        T::Timestamp(_, Some(_)) => "timestamp".into(),
        T::Timestamp(_, None) => "timestamp_ntz".into(),
        T::Struct(fields) => {
            let parts: Vec<String> = fields
                .iter()
                .map(|f| format!("{}:{}", f.name(), spark_type(f.data_type())))
                .collect();
            format!("struct<{}>", parts.join(","))
        }
        T::List(f) | T::LargeList(f) => format!("array<{}>", spark_type(f.data_type())),
        T::Dictionary(_, v) => spark_type(v),
        other => other.to_string().to_lowercase(),
    }
}

/// The Spark SQL builtin with the semantics of `f` on the argument types the compiler gives it.
pub fn func_name(f: Func) -> &'static str {
    match f {
        Func::Upper => "upper",
        Func::Lower => "lower",
        Func::Abs => "abs",
        Func::Length => "length",
        Func::Trim => "trim",
        Func::Round => "round",
        Func::Floor => "floor",
        Func::Ceil => "ceil",
        Func::Coalesce => "coalesce",
        Func::Concat => "concat",
        Func::DateAdd => "date_add",
        Func::DateSub => "date_sub",
        Func::DateDiff => "datediff",
        Func::AddMonths => "add_months",
        Func::Year => "year",
        Func::Month => "month",
        Func::Day => "day",
        Func::Substring => "substring",
        // Exported as timestampadd('MICROSECOND', n, ts): see node_json.
        Func::AddMicros => "timestampadd",
    }
}

fn arith_op(a: Arith) -> &'static str {
    match a {
        Arith::Add => "+",
        Arith::Sub => "-",
        Arith::Mul => "*",
        Arith::Div => "/",
        Arith::Rem => "%",
    }
}

fn node_json(n: &Node, cols: &[String]) -> Value {
    let sub = |x: &Node| node_json(x, cols);
    let mut v = match &n.kind {
        Kind::Column(i) => json!({"col": cols[*i]}),
        Kind::Literal(a) => literal_json(a.as_ref()),
        Kind::Not(x) => json!({"op": "not", "arg": sub(x)}),
        Kind::And(a, b) => json!({"op": "and", "args": [sub(a), sub(b)]}),
        Kind::Or(a, b) => json!({"op": "or", "args": [sub(a), sub(b)]}),
        Kind::Cmp(op, a, b) => json!({"op": op.as_str(), "left": sub(a), "right": sub(b)}),
        Kind::IsNull(x, negated) => {
            json!({"op": if *negated { "is_not_null" } else { "is_null" }, "arg": sub(x)})
        }
        Kind::Arith(op, a, b) => json!({"op": arith_op(*op), "left": sub(a), "right": sub(b)}),
        Kind::Neg(x) => json!({"op": "neg", "arg": sub(x)}),
        Kind::Like {
            expr,
            pattern,
            case_insensitive,
        } => json!({"op": "like", "arg": sub(expr), "pattern": pattern,
                    "case_insensitive": case_insensitive, "negated": false}),
        Kind::Case { whens, otherwise } => {
            let whens: Vec<Value> = whens.iter().map(|(c, r)| json!([sub(c), sub(r)])).collect();
            json!({"op": "case", "whens": whens, "else": sub(otherwise)})
        }
        Kind::Cast(x, zone) => {
            let mut v = json!({"op": "cast", "arg": sub(x), "to": spark_type(&n.ty)});
            if let Some(z) = zone {
                v["time_zone"] = json!(z);
            }
            v
        }
        Kind::Func(Func::AddMicros, args) => {
            // Spark's timestampadd(MICROSECOND, n, ts) adds µs to the instant (or wall clock of
            // a TIMESTAMP_NTZ) with no zone involved, as INTERVAL arithmetic of days does.
            let unit = json!({"lit": "MICROSECOND", "kind": "string", "type": "string"});
            json!({"op": "fn", "name": "timestampadd", "args": [unit, sub(&args[1]), sub(&args[0])]})
        }
        Kind::Func(f, args) => {
            let args: Vec<Value> = args.iter().map(sub).collect();
            json!({"op": "fn", "name": func_name(*f), "args": args})
        }
        Kind::Field(x, i) => {
            let name = match &x.ty {
                DataType::Struct(fields) => fields[*i].name().clone(),
                _ => String::new(),
            };
            json!({"op": "field", "arg": sub(x), "name": name})
        }
        Kind::RLike { expr, pattern, .. } => {
            let p = json!({"lit": pattern, "kind": "string", "type": "string"});
            json!({"op": "fn", "name": "rlike", "args": [sub(expr), p]})
        }
        Kind::DateTrunc { unit, arg, zone } => {
            let u = json!({"lit": format!("{unit:?}").to_uppercase(), "kind": "string", "type": "string"});
            json!({"op": "fn", "name": "date_trunc", "args": [u, sub(arg)], "time_zone": zone})
        }
    };
    v["type"] = Value::String(spark_type(&n.ty));
    v
}

/// A one-value literal array in the predicate tree's literal encoding.
fn literal_json(a: &dyn arrow_array::Array) -> Value {
    match scalar_at(a, 0) {
        Ok(s) => scalar_json(&s),
        // A type scalar_at has no Delta scalar for: say so in the tree rather than guess.
        Err(e) => json!({"lit": null, "kind": "unsupported", "reason": e.to_string()}),
    }
}

pub fn scalar_json(v: &Scalar) -> serde_json::Value {
    use serde_json::json;
    match v {
        Scalar::Null => json!({"lit": null, "kind": "null"}),
        Scalar::String(s) => json!({"lit": s, "kind": "string"}),
        Scalar::Long(n) => json!({"lit": n, "kind": "long"}),
        // JSON has no NaN or infinities: those travel as the strings Python's float() reads.
        Scalar::Double(f) if !f.is_finite() => json!({"lit": f.to_string(), "kind": "double"}),
        Scalar::Double(f) => json!({"lit": f, "kind": "double"}),
        Scalar::Boolean(b) => json!({"lit": b, "kind": "boolean"}),
        Scalar::Date(d) => json!({"lit": d, "kind": "date"}),
        Scalar::Timestamp(t) => json!({"lit": t, "kind": "timestamp"}),
        Scalar::TimestampNtz(t) => json!({"lit": t, "kind": "timestamp_ntz"}),
        Scalar::Decimal(u, s) => json!({"lit": u.to_string(), "kind": "decimal", "scale": s}),
        Scalar::Binary(b) => json!({"lit": String::from_utf8_lossy(b), "kind": "binary"}),
    }
}
