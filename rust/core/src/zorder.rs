//! Z-order (Morton) curve for OPTIMIZE ZORDER BY and clustering: the row order that keeps rows
//! close in every one of several columns close in the files, so that the per-file min/max
//! statistics of each column stay narrow and a point or range predicate on any of them skips
//! most files.
//!
//! Each column's values are first replaced by their dense rank (equal values share a rank;
//! nulls rank first), scaled to the same number of bits, so that columns of any orderable type
//! and any skew take equal part in the curve; the ranks' bits are then interleaved, most
//! significant first, into one 128-bit key, and rows are ordered by it (ties keep input order).

use arrow_array::{Array, ArrayRef};
use arrow_ord::ord::make_comparator;
use arrow_ord::sort::{sort_to_indices, SortOptions};
use arrow_schema::SortOptions as CmpOptions;

use crate::error::{Error, Result};

/// Bits the interleaved key holds.
const KEY_BITS: u32 = 128;

/// The Z-order of `columns` (all of one length): row indices, in curve order.
pub fn zorder_permutation(columns: &[ArrayRef]) -> Result<Vec<u32>> {
    let Some(first) = columns.first() else {
        return Err(Error::invalid("Z-order needs at least one column"));
    };
    let n = first.len();
    if columns.iter().any(|c| c.len() != n) {
        return Err(Error::invalid("Z-order columns differ in length"));
    }
    if n > u32::MAX as usize {
        return Err(Error::invalid(format!(
            "Z-order of {n} rows: at most {} rows at once",
            u32::MAX
        )));
    }
    let bits = (KEY_BITS / columns.len() as u32).clamp(1, 32);
    let ranks: Vec<Vec<u32>> = columns
        .iter()
        .map(|c| scaled_ranks(c, bits))
        .collect::<Result<_>>()?;
    let keys: Vec<u128> = (0..n).map(|i| interleave(&ranks, i, bits)).collect();
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_by_key(|&i| keys[i as usize]);
    Ok(order)
}

/// Each row's dense rank in `column`, scaled onto `0 .. 2^bits`.
fn scaled_ranks(column: &ArrayRef, bits: u32) -> Result<Vec<u32>> {
    let n = column.len();
    let bad = |e: arrow_schema::ArrowError| {
        Error::invalid(format!(
            "Z-order cannot order a column of type {}: {e}",
            column.data_type()
        ))
    };
    let opts = SortOptions {
        descending: false,
        nulls_first: true,
    };
    let sorted = sort_to_indices(column.as_ref(), Some(opts), None).map_err(bad)?;
    let cmp = make_comparator(
        column.as_ref(),
        column.as_ref(),
        CmpOptions {
            descending: false,
            nulls_first: true,
        },
    )
    .map_err(bad)?;
    let mut dense = vec![0u64; n];
    let mut rank = 0u64;
    for k in 0..sorted.len() {
        let i = sorted.value(k) as usize;
        if k > 0 && cmp(sorted.value(k - 1) as usize, i).is_ne() {
            rank += 1;
        }
        dense[i] = rank;
    }
    let distinct = rank + 1;
    let span = 1u64 << bits;
    Ok(dense
        .into_iter()
        // rank * 2^bits / distinct < 2^bits; in u128 so that neither factor can overflow
        .map(|r| ((r as u128 * span as u128) / distinct as u128) as u32)
        .collect())
}

/// Row `i`'s key: bit `b` (from the top) of each column's rank in turn.
fn interleave(ranks: &[Vec<u32>], i: usize, bits: u32) -> u128 {
    let mut key = 0u128;
    for b in (0..bits).rev() {
        for r in ranks {
            key = (key << 1) | ((r[i] >> b) & 1) as u128;
        }
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int64Array, StringArray};
    use std::sync::Arc;

    #[test]
    fn one_column_is_plain_order_with_nulls_first_and_ties_stable() {
        let c: ArrayRef = Arc::new(Int64Array::from(vec![
            Some(5),
            None,
            Some(1),
            Some(5),
            Some(3),
        ]));
        assert_eq!(zorder_permutation(&[c]).unwrap(), vec![1, 2, 4, 0, 3]);
    }

    #[test]
    fn two_columns_follow_the_morton_curve() {
        // a 4x4 grid given row by row: x = i % 4, y = i / 4. x's bit is the higher of each pair,
        // so at every scale the curve visits the x-low half before the x-high one and, within
        // a half, y-low before y-high: quadrants, then cells within them, in that order.
        let x: ArrayRef = Arc::new(Int64Array::from(
            (0..16).map(|i| i % 4).collect::<Vec<i64>>(),
        ));
        let y: ArrayRef = Arc::new(StringArray::from(
            (0..16).map(|i| format!("y{}", i / 4)).collect::<Vec<_>>(),
        ));
        let order = zorder_permutation(&[x, y]).unwrap();
        let cells: Vec<(u32, u32)> = order.iter().map(|&i| (i % 4, i / 4)).collect();
        let expected = vec![
            (0, 0),
            (0, 1),
            (1, 0),
            (1, 1), // quadrant x<2, y<2
            (0, 2),
            (0, 3),
            (1, 2),
            (1, 3), // x<2, y>=2
            (2, 0),
            (2, 1),
            (3, 0),
            (3, 1), // x>=2, y<2
            (2, 2),
            (2, 3),
            (3, 2),
            (3, 3),
        ];
        assert_eq!(cells, expected);
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(zorder_permutation(&[]).is_err());
        let a: ArrayRef = Arc::new(Int64Array::from(vec![1, 2]));
        let b: ArrayRef = Arc::new(Int64Array::from(vec![1]));
        assert!(zorder_permutation(&[a, b]).is_err());
    }
}
