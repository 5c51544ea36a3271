//! The DV file format (`u`/`p` storage): version byte 1, then per DV: BE i32 size, bitmap bytes,
//! BE CRC-32 of the bitmap bytes (protocol-notes.md §5.4).

use super::bitmap::DeletionBitmap;
use super::descriptor::{DeletionVectorDescriptor, DvLocation};
use crate::error::{Error, Result};
use crate::storage::Location;

pub const FORMAT_VERSION: u8 = 1;

/// Read and validate (size, CRC, cardinality) the bitmap a descriptor points at.
pub fn read(table_root: &Location, d: &DeletionVectorDescriptor) -> Result<DeletionBitmap> {
    let where_ = || format!("DV {}", d.unique_id());
    let location = d.location(table_root).map_err(|m| Error::dv(where_(), m))?;
    let (bytes, file) = match location {
        DvLocation::Inline(bytes) => (bytes, where_()),
        DvLocation::File { path, offset } => {
            let name = path.to_string();
            (
                read_from_file(&path, offset, d.size_in_bytes).map_err(|m| Error::dv(&name, m))?,
                name,
            )
        }
    };
    let bitmap = DeletionBitmap::deserialize(&bytes).map_err(|m| Error::dv(&file, m))?;
    if bitmap.len() != d.cardinality as u64 {
        return Err(Error::dv(
            file,
            format!(
                "bitmap holds {} rows, descriptor cardinality is {}",
                bitmap.len(),
                d.cardinality
            ),
        ));
    }
    Ok(bitmap)
}

/// The bitmap bytes of the DV at `offset` of the DV file at `path`, checked. One ranged read: the
/// format version byte (when the DV is the first), the size, the bitmap and its checksum.
fn read_from_file(path: &Location, offset: u64, expected_size: i32) -> Result<Vec<u8>, String> {
    let expected = u64::try_from(expected_size)
        .map_err(|_| format!("negative sizeInBytes {expected_size}"))?;
    let start = if offset == 0 { 1 } else { offset };
    let first = if offset == 0 { 0 } else { start };
    let bytes = path
        .read_range(first..start.saturating_add(8).saturating_add(expected))
        .map_err(|e| format!("cannot open DV file: {e}"))?;
    if offset == 0 {
        match bytes.first() {
            None => return Err("empty DV file".to_string()),
            Some(&v) if v != FORMAT_VERSION => {
                return Err(format!(
                    "DV file format version {v} (expected {FORMAT_VERSION})"
                ))
            }
            _ => {}
        }
    }
    let body = &bytes[(start - first) as usize..];
    if (body.len() as u64) < expected + 8 {
        let len = first + bytes.len() as u64;
        return Err(format!(
            "DV at offset {start} with sizeInBytes {expected} runs past the end of the {len}-byte file"
        ));
    }
    let size = i32::from_be_bytes(body[..4].try_into().expect("4 bytes"));
    if size != expected_size {
        return Err(format!("size mismatch at offset {start}: file says {size}, descriptor sizeInBytes {expected_size}"));
    }
    let data = body[4..4 + expected as usize].to_vec();
    let tail = &body[4 + expected as usize..8 + expected as usize];
    let stored = u32::from_be_bytes(tail.try_into().expect("4 bytes"));
    let actual = crc32fast::hash(&data);
    if stored != actual {
        return Err(format!(
            "checksum mismatch at offset {start}: stored {stored:#010x}, computed {actual:#010x}"
        ));
    }
    Ok(data)
}

/// Write one or more bitmaps into a new DV file `<root>/<prefix>/deletion_vector_<uuid>.bin` and
/// return one descriptor per bitmap, in order. The file is created exclusively; it stays invisible
/// to readers until a commit references it.
pub fn write(
    table_root: &Location,
    prefix: &str,
    bitmaps: &[&DeletionBitmap],
) -> Result<Vec<DeletionVectorDescriptor>> {
    let uuid = uuid::Uuid::new_v4();
    let dir = if prefix.is_empty() {
        table_root.clone()
    } else {
        table_root.join(prefix)
    };
    let path = dir.join(&format!("deletion_vector_{uuid}.bin"));
    let mut buf = vec![FORMAT_VERSION];
    let mut out = Vec::with_capacity(bitmaps.len());
    for bm in bitmaps {
        let data = bm.serialize();
        let size = i32::try_from(data.len())
            .map_err(|_| Error::dv(path.to_string(), "bitmap larger than 2 GiB"))?;
        let offset = buf.len() as i32;
        buf.extend_from_slice(&size.to_be_bytes());
        buf.extend_from_slice(&data);
        buf.extend_from_slice(&crc32fast::hash(&data).to_be_bytes());
        out.push(DeletionVectorDescriptor::for_uuid_file(
            prefix,
            uuid,
            offset,
            size,
            bm.len() as i64,
        ));
    }
    // Whole or not at all: a full or failing disk leaves no partial DV file behind.
    path.put_if_absent(&buf).map_err(|e| Error::io(&path, e))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_then_read_several() {
        let dir = tempfile::tempdir().unwrap();
        let root = Location::local(dir.path());
        let a = DeletionBitmap::from_positions([1, 2, 3]).unwrap();
        let b = DeletionBitmap::from_positions([10, 1 << 40]).unwrap();
        let ds = write(&root, "ab", &[&a, &b]).unwrap();
        assert_eq!(ds[0].offset, Some(1));
        assert_eq!(ds[1].offset, Some(1 + 4 + ds[0].size_in_bytes + 4));
        assert_eq!(read(&root, &ds[0]).unwrap(), a);
        assert_eq!(read(&root, &ds[1]).unwrap(), b);
    }

    #[test]
    fn corruption_is_detected() {
        let dir = tempfile::tempdir().unwrap();
        let root = Location::local(dir.path());
        let a = DeletionBitmap::from_positions([4, 5]).unwrap();
        let d = write(&root, "", &[&a]).unwrap().remove(0);
        let DvLocation::File { path, .. } = d.location(&root).unwrap() else {
            panic!()
        };
        let path = path.local_path().unwrap();
        // Wrong size in the descriptor.
        let mut wrong = d.clone();
        wrong.size_in_bytes += 1;
        assert!(read(&root, &wrong)
            .unwrap_err()
            .to_string()
            .contains("runs past the end"));
        wrong.size_in_bytes -= 2;
        assert!(read(&root, &wrong)
            .unwrap_err()
            .to_string()
            .contains("size mismatch"));
        // Wrong cardinality.
        let mut wrong = d.clone();
        wrong.cardinality = 3;
        assert!(read(&root, &wrong)
            .unwrap_err()
            .to_string()
            .contains("cardinality"));
        // Flip a bitmap byte: checksum mismatch.
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[8] ^= 0xFF;
        std::fs::write(&path, bytes).unwrap();
        assert!(read(&root, &d)
            .unwrap_err()
            .to_string()
            .contains("checksum mismatch"));
        // Missing file.
        std::fs::remove_file(&path).unwrap();
        let err = read(&root, &d).unwrap_err().to_string();
        assert!(
            err.contains("cannot open DV file") && err.contains("deletion_vector_"),
            "{err}"
        );
    }
}
