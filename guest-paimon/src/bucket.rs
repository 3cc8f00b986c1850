//! Paimon's fixed-bucket assignment: `abs(hash(BinaryRow(bucket keys)) % N)` with Paimon's
//! `MurmurHashUtils.hashBytesByWords` (seed 42) over the row bytes (no arity prefix).
//!
//! Fluss computes the same function on the client (`PaimonBucketingFunction`) so that Fluss
//! bucket b holds exactly the rows Paimon expects in bucket b; readers prune buckets with it
//! on bucket-key equality filters. The writer does not need it (it keeps Fluss's bucket); it
//! is here for tests, benchmarks and primary-key tables.

use fluss_lake_guest_sdk::Result;

use crate::binary_row::{BinaryRowWriter, Value};
use crate::types::PaimonType;

const SEED: u32 = 42;

fn mix_k1(k: u32) -> u32 {
    k.wrapping_mul(0xcc9e_2d51)
        .rotate_left(15)
        .wrapping_mul(0x1b87_3593)
}

fn mix_h1(h: u32, k: u32) -> u32 {
    (h ^ k)
        .rotate_left(13)
        .wrapping_mul(5)
        .wrapping_add(0xe654_6b64)
}

fn fmix(mut h: u32, len: u32) -> u32 {
    h ^= len;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

/// `MurmurHashUtils.hashBytesByWords` (length is a multiple of 4 for BinaryRows).
pub fn hash_bytes_by_words(data: &[u8]) -> i32 {
    let mut h = SEED;
    for word in data.chunks_exact(4) {
        h = mix_h1(
            h,
            mix_k1(u32::from_le_bytes(word.try_into().expect("4 bytes"))),
        );
    }
    fmix(h, data.len() as u32) as i32
}

/// The bucket of a key row (serialized `BinaryRow` *without* the arity prefix).
pub fn bucket_of_row(row: &[u8], num_buckets: i32) -> i32 {
    (hash_bytes_by_words(row) % num_buckets).abs()
}

/// The bucket of typed bucket-key values.
pub fn bucket_of(keys: &[(&PaimonType, Option<&Value>)], num_buckets: i32) -> Result<i32> {
    let mut w = BinaryRowWriter::new(keys.len());
    for (i, (t, v)) in keys.iter().enumerate() {
        w.set(i, t, *v)?;
    }
    Ok(bucket_of_row(&w.finish(), num_buckets))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Expected buckets computed with pypaimon 2.1.0's `FixedBucketRowKeyExtractor` helpers.
    #[test]
    fn matches_pypaimon() {
        let int = PaimonType::parse("INT").unwrap();
        let b = |v: i32, n| bucket_of(&[(&int, Some(&Value::Int(v)))], n).unwrap();
        assert_eq!(
            (0..12).map(|i| b(i, 3)).collect::<Vec<_>>(),
            [0, 1, 2, 1, 0, 2, 0, 1, 0, 2, 1, 1]
        );
        assert_eq!([-5, 100, 12345, i32::MAX].map(|i| b(i, 7)), [2, 1, 0, 5]);
        let mut w = BinaryRowWriter::new(1);
        w.set(0, &int, Some(&Value::Int(1))).unwrap();
        assert_eq!(hash_bytes_by_words(&w.finish()) as u32, 0x5759_f99e);
        let s = PaimonType::parse("STRING").unwrap();
        for text in ["a", "hello world, long"] {
            assert_eq!(
                bucket_of(&[(&s, Some(&Value::String(text.into())))], 5).unwrap(),
                1
            );
        }
    }
}
