//! Delta's RoaringBitmapArray serialization over `roaring::RoaringTreemap` (protocol-notes.md §5.5).
//! Magic number (LE), then either the portable 64-bit format (what Delta writes) or the legacy
//! native format (read only).

use std::io::{Cursor, Read};

use roaring::{RoaringBitmap, RoaringTreemap};

pub const MAGIC_PORTABLE: u32 = 1681511377;
pub const MAGIC_NATIVE: u32 = 1681511376;
/// Row indexes must keep the most significant bit of the bucket key clear.
pub const MAX_ROW_INDEX: u64 = (1u64 << 63) - 1;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeletionBitmap(pub RoaringTreemap);

impl DeletionBitmap {
    pub fn from_positions<I: IntoIterator<Item = u64>>(positions: I) -> Result<Self, String> {
        let mut t = RoaringTreemap::new();
        for p in positions {
            if p > MAX_ROW_INDEX {
                return Err(format!(
                    "row index {p} is larger than Delta allows ({MAX_ROW_INDEX})"
                ));
            }
            t.insert(p);
        }
        Ok(DeletionBitmap(t))
    }

    /// The positions of runs of bits, each `(first, bytes)`: bit `b % 8` of byte `b / 8` set
    /// means position `first + b` (the least-significant-bit-first layout of Arrow validity
    /// bitmaps and of Spark's `bitmap_construct_agg`). Built a 32-bit container at a time, never a
    /// value per position. A run must lie within one 2^32-aligned block of positions.
    pub fn from_lsb0_runs<'a, I: IntoIterator<Item = (u64, &'a [u8])>>(
        runs: I,
    ) -> Result<Self, String> {
        let mut t = RoaringTreemap::new();
        for (first, bytes) in runs {
            let bits = bytes.len() as u64 * 8;
            let (hi, lo) = (first >> 32, first & 0xFFFF_FFFF);
            if lo + bits > 1 << 32 {
                return Err(format!(
                    "a run of {bits} bits from position {first} crosses a 2^32 boundary"
                ));
            }
            let run = RoaringBitmap::from_lsb0_bytes(lo as u32, bytes);
            if let Some(last) = run.max() {
                if (hi << 32) | u64::from(last) > MAX_ROW_INDEX {
                    return Err(format!(
                        "row index {} is larger than Delta allows ({MAX_ROW_INDEX})",
                        (hi << 32) | u64::from(last)
                    ));
                }
                t |= RoaringTreemap::from_bitmaps([(hi as u32, run)]);
            }
        }
        Ok(DeletionBitmap(t))
    }

    pub fn max(&self) -> Option<u64> {
        self.0.max()
    }

    pub fn len(&self) -> u64 {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn to_vec(&self) -> Vec<u64> {
        self.0.iter().collect()
    }

    pub fn union(&self, other: &DeletionBitmap) -> DeletionBitmap {
        DeletionBitmap(&self.0 | &other.0)
    }

    /// Serialize in the portable format with the Delta magic number.
    pub fn serialize(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(4 + self.0.serialized_size());
        out.extend_from_slice(&MAGIC_PORTABLE.to_le_bytes());
        self.0
            .serialize_into(&mut out)
            .expect("writing to a Vec cannot fail");
        out
    }

    /// The packed validity bits (LSB first) of a file of `num_rows` rows: 1 = kept, 0 = deleted.
    /// A deleted row beyond the file's rows is an `Err`: the DV does not belong to this file.
    pub fn keep_bits(&self, num_rows: u64) -> Result<Vec<u8>, String> {
        let mut bits = vec![0xFFu8; num_rows.div_ceil(8) as usize];
        for p in self.0.iter() {
            if p >= num_rows {
                return Err(format!(
                    "DV deletes row {p} but the data file has {num_rows} rows"
                ));
            }
            bits[(p / 8) as usize] &= !(1u8 << (p % 8));
        }
        Ok(bits)
    }

    /// Deserialize either format. Every malformed input is an `Err`, never a panic.
    pub fn deserialize(bytes: &[u8]) -> Result<Self, String> {
        if bytes.len() < 4 {
            return Err(format!(
                "bitmap is {} bytes, too short for the magic number",
                bytes.len()
            ));
        }
        let magic = u32::from_le_bytes(bytes[..4].try_into().unwrap());
        let body = &bytes[4..];
        let treemap = match magic {
            MAGIC_PORTABLE => read_portable(body)?,
            MAGIC_NATIVE => read_native(body)?,
            other => {
                return Err(format!(
                    "unknown RoaringBitmapArray magic number {other} (expected {MAGIC_PORTABLE} or {MAGIC_NATIVE})"
                ))
            }
        };
        if let Some(max) = treemap.max() {
            if max > MAX_ROW_INDEX {
                return Err(format!(
                    "bitmap holds row index {max}, beyond the largest Delta allows"
                ));
            }
        }
        Ok(DeletionBitmap(treemap))
    }
}

fn read_u32(r: &mut Cursor<&[u8]>) -> Result<u32, String> {
    let mut b = [0u8; 4];
    r.read_exact(&mut b)
        .map_err(|_| "bitmap truncated".to_string())?;
    Ok(u32::from_le_bytes(b))
}

fn read_bitmap(r: &mut Cursor<&[u8]>) -> Result<RoaringBitmap, String> {
    RoaringBitmap::deserialize_from(r).map_err(|e| format!("invalid 32-bit roaring bitmap: {e}"))
}

fn read_portable(body: &[u8]) -> Result<RoaringTreemap, String> {
    let mut r = Cursor::new(body);
    let lo = read_u32(&mut r)? as u64;
    let hi = read_u32(&mut r)? as u64;
    let buckets = (hi << 32) | lo;
    // Each bucket needs at least a key and a cookie: refuse counts the input cannot hold.
    if buckets > body.len() as u64 / 8 {
        return Err(format!(
            "bitmap claims {buckets} buckets but holds only {} bytes",
            body.len()
        ));
    }
    let mut parts = Vec::with_capacity(buckets as usize);
    let mut previous: Option<u32> = None;
    for _ in 0..buckets {
        let key = read_u32(&mut r)?;
        if previous.is_some_and(|p| key <= p) {
            return Err(format!(
                "bucket keys are not ascending ({key} after {})",
                previous.unwrap()
            ));
        }
        previous = Some(key);
        parts.push((key, read_bitmap(&mut r)?));
    }
    expect_consumed(&r, body.len())?;
    Ok(RoaringTreemap::from_bitmaps(parts))
}

fn read_native(body: &[u8]) -> Result<RoaringTreemap, String> {
    let mut r = Cursor::new(body);
    let count = read_u32(&mut r)?;
    if count as u64 > body.len() as u64 / 8 {
        return Err(format!(
            "bitmap claims {count} buckets but holds only {} bytes",
            body.len()
        ));
    }
    let mut parts = Vec::with_capacity(count as usize);
    for key in 0..count {
        let size = read_u32(&mut r)? as usize;
        let start = r.position() as usize;
        let end = start
            .checked_add(size)
            .filter(|&e| e <= body.len())
            .ok_or("bitmap truncated")?;
        let mut sub = Cursor::new(&body[start..end]);
        parts.push((key, read_bitmap(&mut sub)?));
        r.set_position(end as u64);
    }
    expect_consumed(&r, body.len())?;
    Ok(RoaringTreemap::from_bitmaps(parts))
}

fn expect_consumed(r: &Cursor<&[u8]>, len: usize) -> Result<(), String> {
    if r.position() as usize != len {
        return Err(format!(
            "{} trailing bytes after the bitmap",
            len - r.position() as usize
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keep_bits_clear_the_deleted_rows_and_refuse_one_past_the_file() {
        let d = DeletionBitmap::from_positions([0u64, 3, 9]).unwrap();
        // 10 rows: rows 0 and 3 in the first byte, row 9 in the second (bit 1).
        assert_eq!(d.keep_bits(10).unwrap(), vec![0b1111_0110, 0b1111_1101]);
        assert_eq!(DeletionBitmap::default().keep_bits(3).unwrap(), vec![0xFF]);
        let err = d.keep_bits(9).unwrap_err();
        assert!(err.contains("row 9") && err.contains("9 rows"), "{err}");
    }
    use crate::dv::z85;

    /// The corrected inline example used by delta-kernel-rs (protocol-notes.md §5.5): rows
    /// 3, 4, 7, 11, 18, 29.
    #[test]
    fn kernel_inline_vector() {
        let bytes = z85::decode("^Bg9^0rr910000000000iXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L").unwrap();
        let bm = DeletionBitmap::deserialize(&bytes[..44]).unwrap();
        assert_eq!(bm.to_vec(), vec![3, 4, 7, 11, 18, 29]);
    }

    /// Runs of bits against the plain model: bit `b` of a run from `first` is `first + b`.
    #[test]
    fn lsb0_runs_are_the_positions_their_bits_name() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut bytes = vec![0u8; 4096];
        for b in bytes.iter_mut() {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            *b = (seed & 0xFF) as u8 & (seed >> 8) as u8; // about a quarter of the bits
        }
        let cases: [&[u64]; 4] = [
            &[0],
            &[32_768, 0],
            &[(1 << 32) - 32_768, 1 << 32],
            &[65_536 * 3 + 3],
        ];
        for firsts in cases {
            let runs: Vec<(u64, &[u8])> = firsts.iter().map(|&f| (f, &bytes[..])).collect();
            let got = DeletionBitmap::from_lsb0_runs(runs).unwrap().to_vec();
            let mut want: Vec<u64> = firsts
                .iter()
                .flat_map(|&f| {
                    (0..bytes.len() as u64 * 8)
                        .filter(|b| bytes[*b as usize / 8] >> (b % 8) & 1 == 1)
                        .map(move |b| f + b)
                })
                .collect();
            want.sort_unstable();
            want.dedup();
            assert_eq!(got, want, "runs from {firsts:?}");
        }
        assert!(DeletionBitmap::from_lsb0_runs([(0, &[][..])])
            .unwrap()
            .is_empty());
        let err = DeletionBitmap::from_lsb0_runs([((1 << 32) - 8, &[0u8, 1][..])]).unwrap_err();
        assert!(err.contains("crosses a 2^32 boundary"), "{err}");
        let err = DeletionBitmap::from_lsb0_runs([(MAX_ROW_INDEX + 1, &[1u8][..])]).unwrap_err();
        assert!(err.contains("larger than Delta allows"), "{err}");
    }

    #[test]
    fn roundtrip_with_high_buckets() {
        let values = [0u64, 5, 1 << 32, (1 << 33) + 7, MAX_ROW_INDEX];
        let bm = DeletionBitmap::from_positions(values).unwrap();
        let back = DeletionBitmap::deserialize(&bm.serialize()).unwrap();
        assert_eq!(back.to_vec(), values.to_vec());
    }

    #[test]
    fn empty_buckets_are_accepted() {
        // Portable format with an empty bucket 0 then bucket 1 holding {2}: what delta-spark writes.
        let mut bytes = MAGIC_PORTABLE.to_le_bytes().to_vec();
        bytes.extend_from_slice(&2u64.to_le_bytes());
        bytes.extend_from_slice(&0u32.to_le_bytes());
        RoaringBitmap::new().serialize_into(&mut bytes).unwrap();
        bytes.extend_from_slice(&1u32.to_le_bytes());
        RoaringBitmap::from_iter([2u32])
            .serialize_into(&mut bytes)
            .unwrap();
        assert_eq!(
            DeletionBitmap::deserialize(&bytes).unwrap().to_vec(),
            vec![(1u64 << 32) + 2]
        );
    }

    #[test]
    fn native_format() {
        let mut bytes = MAGIC_NATIVE.to_le_bytes().to_vec();
        bytes.extend_from_slice(&1u32.to_le_bytes());
        let mut inner = Vec::new();
        RoaringBitmap::from_iter([1u32, 9])
            .serialize_into(&mut inner)
            .unwrap();
        bytes.extend_from_slice(&(inner.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&inner);
        assert_eq!(
            DeletionBitmap::deserialize(&bytes).unwrap().to_vec(),
            vec![1, 9]
        );
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(DeletionBitmap::deserialize(&[]).is_err());
        assert!(DeletionBitmap::deserialize(&[1, 2, 3, 4, 5]).is_err());
        let mut bytes = MAGIC_PORTABLE.to_le_bytes().to_vec();
        bytes.extend_from_slice(&u64::MAX.to_le_bytes());
        assert!(DeletionBitmap::deserialize(&bytes).is_err());
        assert!(DeletionBitmap::from_positions([u64::MAX]).is_err());
    }
}
