//! The DV file format (`u`/`p` storage): version byte 1, then per DV: BE i32 size, bitmap bytes,
//! BE CRC-32 of the bitmap bytes (protocol-notes.md §5.4).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use super::bitmap::DeletionBitmap;
use super::descriptor::{DeletionVectorDescriptor, DvLocation};
use crate::error::{Error, Result};

pub const FORMAT_VERSION: u8 = 1;

/// Read and validate (size, CRC, cardinality) the bitmap a descriptor points at.
pub fn read(table_root: &Path, d: &DeletionVectorDescriptor) -> Result<DeletionBitmap> {
    let where_ = || format!("DV {}", d.unique_id());
    let location = d.location(table_root).map_err(|m| Error::dv(where_(), m))?;
    let (bytes, file) = match location {
        DvLocation::Inline(bytes) => (bytes, where_()),
        DvLocation::File { path, offset } => {
            let name = path.display().to_string();
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

fn read_from_file(path: &Path, offset: u64, expected_size: i32) -> Result<Vec<u8>, String> {
    let mut f = File::open(path).map_err(|e| format!("cannot open DV file: {e}"))?;
    let len = f.metadata().map_err(|e| e.to_string())?.len();
    if offset == 0 {
        let mut v = [0u8; 1];
        f.read_exact(&mut v)
            .map_err(|_| "empty DV file".to_string())?;
        if v[0] != FORMAT_VERSION {
            return Err(format!(
                "DV file format version {} (expected {FORMAT_VERSION})",
                v[0]
            ));
        }
    }
    let start = if offset == 0 { 1 } else { offset };
    let expected = u64::try_from(expected_size)
        .map_err(|_| format!("negative sizeInBytes {expected_size}"))?;
    if start.saturating_add(8).saturating_add(expected) > len {
        return Err(format!(
            "DV at offset {start} with sizeInBytes {expected} runs past the end of the {len}-byte file"
        ));
    }
    f.seek(SeekFrom::Start(start)).map_err(|e| e.to_string())?;
    let mut head = [0u8; 4];
    f.read_exact(&mut head).map_err(|e| e.to_string())?;
    let size = i32::from_be_bytes(head);
    if size != expected_size {
        return Err(format!("size mismatch at offset {start}: file says {size}, descriptor sizeInBytes {expected_size}"));
    }
    let mut data = vec![0u8; expected as usize];
    f.read_exact(&mut data).map_err(|e| e.to_string())?;
    f.read_exact(&mut head).map_err(|e| e.to_string())?;
    let stored = u32::from_be_bytes(head);
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
    table_root: &Path,
    prefix: &str,
    bitmaps: &[&DeletionBitmap],
) -> Result<Vec<DeletionVectorDescriptor>> {
    let uuid = uuid::Uuid::new_v4();
    let dir = if prefix.is_empty() {
        table_root.to_path_buf()
    } else {
        table_root.join(prefix)
    };
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    let path = dir.join(format!("deletion_vector_{uuid}.bin"));
    let mut buf = vec![FORMAT_VERSION];
    let mut out = Vec::with_capacity(bitmaps.len());
    for bm in bitmaps {
        let data = bm.serialize();
        let size = i32::try_from(data.len())
            .map_err(|_| Error::dv(path.display().to_string(), "bitmap larger than 2 GiB"))?;
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
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| Error::io(&path, e))?;
    if let Err(e) = f.write_all(&buf).and_then(|_| f.sync_all()) {
        // A full or failing disk must not leave a partial DV file behind.
        drop(f);
        let _ = std::fs::remove_file(&path);
        return Err(Error::io(&path, e));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_then_read_several() {
        let dir = tempfile::tempdir().unwrap();
        let a = DeletionBitmap::from_positions([1, 2, 3]).unwrap();
        let b = DeletionBitmap::from_positions([10, 1 << 40]).unwrap();
        let ds = write(dir.path(), "ab", &[&a, &b]).unwrap();
        assert_eq!(ds[0].offset, Some(1));
        assert_eq!(ds[1].offset, Some(1 + 4 + ds[0].size_in_bytes + 4));
        assert_eq!(read(dir.path(), &ds[0]).unwrap(), a);
        assert_eq!(read(dir.path(), &ds[1]).unwrap(), b);
    }

    #[test]
    fn corruption_is_detected() {
        let dir = tempfile::tempdir().unwrap();
        let a = DeletionBitmap::from_positions([4, 5]).unwrap();
        let d = write(dir.path(), "", &[&a]).unwrap().remove(0);
        let DvLocation::File { path, .. } = d.location(dir.path()).unwrap() else {
            panic!()
        };
        // Wrong size in the descriptor.
        let mut wrong = d.clone();
        wrong.size_in_bytes += 1;
        assert!(read(dir.path(), &wrong)
            .unwrap_err()
            .to_string()
            .contains("runs past the end"));
        wrong.size_in_bytes -= 2;
        assert!(read(dir.path(), &wrong)
            .unwrap_err()
            .to_string()
            .contains("size mismatch"));
        // Wrong cardinality.
        let mut wrong = d.clone();
        wrong.cardinality = 3;
        assert!(read(dir.path(), &wrong)
            .unwrap_err()
            .to_string()
            .contains("cardinality"));
        // Flip a bitmap byte: checksum mismatch.
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[8] ^= 0xFF;
        std::fs::write(&path, bytes).unwrap();
        assert!(read(dir.path(), &d)
            .unwrap_err()
            .to_string()
            .contains("checksum mismatch"));
        // Missing file.
        std::fs::remove_file(&path).unwrap();
        let err = read(dir.path(), &d).unwrap_err().to_string();
        assert!(
            err.contains("cannot open DV file") && err.contains("deletion_vector_"),
            "{err}"
        );
    }
}
