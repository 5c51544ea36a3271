//! Z85 (ZeroMQ base-85) as Delta uses it: 4 bytes big-endian -> 5 characters.

const ALPHABET: &[u8; 85] =
    b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";

const fn decode_table() -> [u8; 256] {
    let mut t = [0xFFu8; 256];
    let mut i = 0;
    while i < 85 {
        t[ALPHABET[i] as usize] = i as u8;
        i += 1;
    }
    t
}

static DECODE: [u8; 256] = decode_table();

/// Encode; the input is zero-padded to a multiple of 4 bytes (inline DVs rely on this).
pub fn encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(4) * 5);
    for chunk in data.chunks(4) {
        let mut block = [0u8; 4];
        block[..chunk.len()].copy_from_slice(chunk);
        let mut value = u32::from_be_bytes(block);
        let mut chars = [0u8; 5];
        for c in chars.iter_mut().rev() {
            *c = ALPHABET[(value % 85) as usize];
            value /= 85;
        }
        out.extend(chars.iter().map(|&c| c as char));
    }
    out
}

/// Decode; errors name the offending position instead of panicking.
pub fn decode(text: &str) -> Result<Vec<u8>, String> {
    let bytes = text.as_bytes();
    if bytes.len() % 5 != 0 {
        return Err(format!(
            "Z85 text length {} is not a multiple of 5",
            bytes.len()
        ));
    }
    let mut out = Vec::with_capacity(bytes.len() / 5 * 4);
    for (block_no, chunk) in bytes.chunks(5).enumerate() {
        let mut value: u64 = 0;
        for (i, &b) in chunk.iter().enumerate() {
            let d = DECODE[b as usize];
            if d == 0xFF {
                return Err(format!(
                    "invalid Z85 character {:?} at position {}",
                    b as char,
                    block_no * 5 + i
                ));
            }
            value = value * 85 + d as u64;
        }
        if value > u32::MAX as u64 {
            return Err(format!("Z85 block {block_no} overflows 32 bits"));
        }
        out.extend_from_slice(&(value as u32).to_be_bytes());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_uuid_example() {
        // protocol-notes.md §5.3: the spec example `ab^-aqEH.-t@S}K{vb[*k^` has prefix `ab` and
        // UUID d2c639aa-8816-431a-aaf6-d3fe2512ff61.
        let bytes = decode("^-aqEH.-t@S}K{vb[*k^").unwrap();
        assert_eq!(
            uuid::Uuid::from_slice(&bytes).unwrap().to_string(),
            "d2c639aa-8816-431a-aaf6-d3fe2512ff61"
        );
        assert_eq!(encode(&bytes), "^-aqEH.-t@S}K{vb[*k^");
    }

    #[test]
    fn rejects_bad_input() {
        assert!(decode("abcd").is_err());
        assert!(decode("abcd~").is_err());
        assert!(decode("#####").is_err()); // 84*(85^4+...) overflows u32
    }

    #[test]
    fn roundtrip_padding() {
        let data = [1u8, 2, 3, 4, 5];
        let enc = encode(&data);
        assert_eq!(enc.len(), 10);
        assert_eq!(&decode(&enc).unwrap()[..5], &data);
    }
}
