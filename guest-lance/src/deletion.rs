//! Lance deletion files (`_deletions/{fragment_id}-{read_version}-{id}.{arrow|bin}`): the rows
//! of a fragment a `Delete` or `Update` removed, by offset in the fragment. `.arrow` files are
//! an Arrow IPC file of one `UInt32` column `row_id` (Lance writes them zstd-compressed);
//! `.bin` files are a Roaring bitmap in the portable serialization (`roaring-rs`
//! `serialize_into`, Lance's choice once a fragment has many deletions).
//!
//! This plugin never writes deletion files (Fluss Lance tables are append-only), but other
//! Lance writers may, and compaction must drop the rows they delete.

use std::io::Cursor;

use arrow_array::Array;
use arrow_array::cast::AsArray;
use arrow_array::types::UInt32Type;
use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::{Error, Result, ResultExt};

use crate::proto::lance::table as pb;

pub const DELETIONS_DIR: &str = "_deletions";

/// The path of a fragment's deletion file, relative to the dataset.
pub fn path(fragment_id: u64, file: &pb::DeletionFile) -> String {
    let ext = if file.file_type == pb::deletion_file::DeletionFileType::Bitmap as i32 {
        "bin"
    } else {
        "arrow"
    };
    format!(
        "{DELETIONS_DIR}/{fragment_id}-{}-{}.{ext}",
        file.read_version, file.id
    )
}

/// Which physical rows of a fragment are deleted.
#[derive(Debug, Clone, PartialEq)]
pub struct Deleted {
    bits: Vec<bool>,
    count: u64,
}

impl Deleted {
    /// No deletions in a fragment of `rows` rows.
    pub fn none(rows: u64) -> Deleted {
        Deleted {
            bits: vec![false; rows as usize],
            count: 0,
        }
    }

    pub fn is_deleted(&self, row: u64) -> bool {
        self.bits.get(row as usize).copied().unwrap_or(false)
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    fn mark(&mut self, row: u32) -> Result<()> {
        let rows = self.bits.len();
        let slot = self.bits.get_mut(row as usize).ok_or_else(|| {
            Error::corrupt(format!(
                "deletion file names row {row} of a {rows}-row fragment"
            ))
        })?;
        if !*slot {
            *slot = true;
            self.count += 1;
        }
        Ok(())
    }
}

/// The deleted rows of `fragment` (none without a deletion file).
pub fn read(storage: &dyn Storage, fragment: &pb::DataFragment) -> Result<Deleted> {
    let mut deleted = Deleted::none(fragment.physical_rows);
    let Some(file) = &fragment.deletion_file else {
        return Ok(deleted);
    };
    if file.base_id.is_some() {
        return Err(Error::unsupported(
            "a deletion file in another base path (a cloned dataset)",
        ));
    }
    let p = path(fragment.id, file);
    let bytes = storage.get(&p).with_context(|| format!("reading {p}"))?;
    let rows = if file.file_type == pb::deletion_file::DeletionFileType::Bitmap as i32 {
        roaring_values(&bytes).map_err(|e| e.context(&p))?
    } else {
        arrow_values(&bytes).map_err(|e| e.context(&p))?
    };
    for r in rows {
        deleted.mark(r).map_err(|e| e.context(&p))?;
    }
    Ok(deleted)
}

/// The `row_id` column of an Arrow IPC deletion file.
fn arrow_values(bytes: &[u8]) -> Result<Vec<u32>> {
    let reader = arrow_ipc::reader::FileReader::try_new(Cursor::new(bytes), None)?;
    let mut out = Vec::new();
    for batch in reader {
        let batch = batch?;
        let column = batch
            .columns()
            .first()
            .and_then(|c| c.as_primitive_opt::<UInt32Type>())
            .ok_or_else(|| Error::corrupt("deletion file without a UInt32 row_id column"))?;
        if column.null_count() > 0 {
            return Err(Error::corrupt("deletion file with null row ids"));
        }
        out.extend_from_slice(column.values());
    }
    Ok(out)
}

const SERIAL_COOKIE_NO_RUNCONTAINER: u32 = 12346;
const SERIAL_COOKIE: u16 = 12347;
const NO_OFFSET_THRESHOLD: usize = 4;
/// An array container holds at most this many values; more make a bitmap container.
const ARRAY_LIMIT: usize = 4096;

/// The values of a Roaring bitmap in the portable format (the `RoaringFormatSpec`).
pub fn roaring_values(bytes: &[u8]) -> Result<Vec<u32>> {
    let bad = || Error::corrupt("malformed Roaring bitmap");
    let mut at = 0usize;
    let mut take = |n: usize| -> Result<&[u8]> {
        let s = bytes.get(at..at + n).ok_or_else(bad)?;
        at += n;
        Ok(s)
    };
    let u16_of = |b: &[u8], i: usize| u16::from_le_bytes([b[2 * i], b[2 * i + 1]]);
    let cookie = u32::from_le_bytes(take(4)?.try_into().expect("4 bytes"));
    let (containers, run_flags) = if cookie == SERIAL_COOKIE_NO_RUNCONTAINER {
        let n = u32::from_le_bytes(take(4)?.try_into().expect("4 bytes")) as usize;
        (n, None)
    } else if cookie as u16 == SERIAL_COOKIE {
        let n = (cookie >> 16) as usize + 1;
        (n, Some(take(n.div_ceil(8))?.to_vec()))
    } else {
        return Err(bad());
    };
    if containers > 1 << 16 {
        return Err(bad());
    }
    let header = take(containers * 4)?.to_vec();
    if run_flags.is_none() || containers >= NO_OFFSET_THRESHOLD {
        take(containers * 4)?; // offsets: the containers follow in order anyway
    }
    let mut out = Vec::new();
    for c in 0..containers {
        let key = (u16_of(&header, 2 * c) as u32) << 16;
        let cardinality = u16_of(&header, 2 * c + 1) as usize + 1;
        let is_run = run_flags
            .as_ref()
            .is_some_and(|f| f[c / 8] & (1 << (c % 8)) != 0);
        if is_run {
            let runs = u16::from_le_bytes(take(2)?.try_into().expect("2 bytes")) as usize;
            let body = take(runs * 4)?;
            for r in 0..runs {
                let start = u16_of(body, 2 * r) as u32;
                let len = u16_of(body, 2 * r + 1) as u32;
                out.extend((start..=start + len).map(|v| key | v));
            }
        } else if cardinality <= ARRAY_LIMIT {
            let body = take(cardinality * 2)?;
            out.extend((0..cardinality).map(|i| key | u16_of(body, i) as u32));
        } else {
            let body = take(8192)?;
            for (w, word) in body.chunks_exact(8).enumerate() {
                let mut bits = u64::from_le_bytes(word.try_into().expect("8 bytes"));
                while bits != 0 {
                    let b = bits.trailing_zeros();
                    out.push(key | (w as u32 * 64 + b));
                    bits &= bits - 1;
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A portable Roaring bitmap with one array container and one run container, written by
    /// hand from the format spec.
    #[test]
    fn roaring_array_bitmap_and_run_containers() {
        // Run cookie, 3 containers: key 0 array {1, 5}, key 1 run [10..=12], key 2 bitmap.
        let mut b = Vec::new();
        b.extend_from_slice(&((SERIAL_COOKIE as u32) | (2 << 16)).to_le_bytes());
        b.push(0b010); // container 1 is a run container
        for (key, card_minus_1) in [(0u16, 1u16), (1, 2), (2, 4095 + 1)] {
            b.extend_from_slice(&key.to_le_bytes());
            b.extend_from_slice(&card_minus_1.to_le_bytes());
        }
        for v in [1u16, 5] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&10u16.to_le_bytes());
        b.extend_from_slice(&2u16.to_le_bytes());
        let mut words = vec![0u64; 1024];
        for v in 0..4097u32 {
            words[(v / 64) as usize] |= 1 << (v % 64);
        }
        for w in words {
            b.extend_from_slice(&w.to_le_bytes());
        }
        let values = roaring_values(&b).unwrap();
        assert_eq!(&values[..5], &[1, 5, 65536 + 10, 65536 + 11, 65536 + 12]);
        assert_eq!(values.len(), 5 + 4097);
        assert_eq!(*values.last().unwrap(), (2 << 16) | 4096);
        assert!(roaring_values(&b[..b.len() - 1]).is_err());
    }
}
