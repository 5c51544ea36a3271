//! An evaluated operand: what the evaluator and the functions pass around.

use arrow_array::{Array, ArrayRef, Datum, UInt32Array};
use arrow_schema::ArrowError;
use arrow_select::take::take;

/// An evaluated operand: a column-long array, or a one-value scalar that applies to every row.
#[derive(Clone)]
pub struct Val {
    pub arr: ArrayRef,
    pub scalar: bool,
}

impl Datum for Val {
    fn get(&self) -> (&dyn Array, bool) {
        (self.arr.as_ref(), self.scalar)
    }
}

impl Val {
    pub fn array(arr: ArrayRef) -> Val {
        Val { arr, scalar: false }
    }

    /// The value as an array of `rows` values.
    pub fn expand(&self, rows: usize) -> std::result::Result<ArrayRef, ArrowError> {
        if !self.scalar || self.arr.len() == rows {
            return Ok(self.arr.clone());
        }
        take(&self.arr, &UInt32Array::from(vec![0u32; rows]), None)
    }

    /// A kernel's result: scalar when every operand was.
    pub fn result(arr: ArrayRef, operands: &[&Val]) -> Val {
        Val {
            arr,
            scalar: operands.iter().all(|v| v.scalar),
        }
    }
}
