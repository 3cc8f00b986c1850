//! A reader of RocksDB's block-based table files (`.sst`), the files of a Fluss KV snapshot:
//! every key and value of a file in key order, and the merged view of a whole checkpoint (the
//! newest version of each key, deletes applied), as RocksDB's own iterator shows them.
//!
//! Written by hand: no crate reads these files in Rust without RocksDB's C++ library, whose
//! build adds about 9 minutes to a cold 2-core build (measured with `rocksdb` 0.25,
//! librocksdb-sys 11.8.1, lz4 + zstd + snappy: 9 min 5 s wall, 16.5 CPU-minutes), and no pure
//! Rust reader handles per-block compression. The scope is what Fluss's RocksDB (FRocksDB 6.20,
//! Fluss's options) writes, and what later RocksDB versions write at the same format versions:
//!
//! - format versions 2 to 5 (the footer of 53 bytes with the block-based magic number);
//!   format version 6 and later (RocksDB 8.6+) are refused, naming the version;
//! - blocks uncompressed, or Snappy, LZ4 (and LZ4HC) or ZSTD compressed, each block its own
//!   type; every block's CRC32c checked (xxHash checksums are refused);
//! - binary-search index blocks (index types 0 and 1), with or without delta-encoded handles;
//!   partitioned (two-level) indexes are refused;
//! - puts and deletes (single deletes too); merge operands, range deletions, blob indexes, a
//!   comparator other than the bytewise one and dictionary compression are refused.
//!
//! Memory: one data block per file at a time (4 KiB before compression in Fluss), plus the
//! file's index block.
//!
//! Format: RocksDB's "BlockBasedTable Format" and `table/format.{h,cc}`,
//! `table/block_based/block.cc`, `util/compression.h` at v6.20.3.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorKind, Result};

const BLOCK_BASED_MAGIC: u64 = 0x88e2_41b7_85f4_cff7;
const FOOTER_BYTES: u64 = 53;
const TRAILER_BYTES: usize = 5;
/// Largest block read or decompressed (a data block is 4 KiB in Fluss; an index block grows
/// with the file, ~1 MiB for a 64 MiB file).
const MAX_BLOCK_BYTES: u64 = 64 << 20;

/// What a key's newest entry says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EntryKind {
    Value,
    Deletion,
}

fn corrupt(path: &Path, what: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorKind::Fluss,
        format!("KV snapshot file {}: {what}", path.display()),
    )
}

fn unsupported(path: &Path, what: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorKind::Unsupported,
        format!("KV snapshot file {}: {what}", path.display()),
    )
}

/// Reads a varint32/64 at `*pos`.
fn varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *buf.get(*pos)?;
        *pos += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

fn varint_signed(buf: &[u8], pos: &mut usize) -> Option<i64> {
    let v = varint(buf, pos)?;
    Some(((v >> 1) as i64) ^ -((v & 1) as i64))
}

/// Where a block is in its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct BlockHandle {
    offset: u64,
    size: u64,
}

impl BlockHandle {
    fn decode(buf: &[u8], pos: &mut usize) -> Option<BlockHandle> {
        Some(BlockHandle {
            offset: varint(buf, pos)?,
            size: varint(buf, pos)?,
        })
    }
}

/// CRC32c as RocksDB stores it ("masked").
fn masked_crc(data: &[u8], type_byte: u8) -> u32 {
    let crc = crc32c::crc32c_append(crc32c::crc32c(data), &[type_byte]);
    (crc.rotate_right(15)).wrapping_add(0xa282_ead8)
}

/// One SST file, opened.
pub struct SstFile {
    path: PathBuf,
    file: File,
    index: BlockHandle,
    /// The index block's values are delta-encoded handles (`index_value_is_delta_encoded`).
    delta_index: bool,
}

impl SstFile {
    /// Opens `path` and checks that it is a table this reader reads (see the module's scope).
    pub fn open(path: &Path) -> Result<SstFile> {
        let file = File::open(path).map_err(|e| corrupt(path, format!("cannot open: {e}")))?;
        let len = file
            .metadata()
            .map_err(|e| corrupt(path, format!("cannot stat: {e}")))?
            .len();
        if len < FOOTER_BYTES {
            return Err(corrupt(path, "shorter than a table footer"));
        }
        let mut footer = [0u8; FOOTER_BYTES as usize];
        file.read_exact_at(&mut footer, len - FOOTER_BYTES)
            .map_err(|e| corrupt(path, format!("cannot read the footer: {e}")))?;
        let magic = u64::from_le_bytes(footer[45..53].try_into().unwrap());
        if magic != BLOCK_BASED_MAGIC {
            return Err(unsupported(
                path,
                format!("not a block-based table of format version 1-5 (magic {magic:#x})"),
            ));
        }
        let version = u32::from_le_bytes(footer[41..45].try_into().unwrap());
        if !(2..=5).contains(&version) {
            return Err(unsupported(
                path,
                format!("table format version {version} (this reader reads 2 to 5)"),
            ));
        }
        if footer[0] != 1 {
            return Err(unsupported(
                path,
                format!(
                    "checksum type {} (this reader checks CRC32c only)",
                    footer[0]
                ),
            ));
        }
        let mut pos = 1;
        let bad_footer = || corrupt(path, "a malformed footer");
        let metaindex = BlockHandle::decode(&footer, &mut pos).ok_or_else(bad_footer)?;
        let index = BlockHandle::decode(&footer, &mut pos).ok_or_else(bad_footer)?;
        let mut sst = SstFile {
            path: path.to_path_buf(),
            file,
            index,
            delta_index: false,
        };
        sst.check_properties(metaindex)?;
        Ok(sst)
    }

    /// Reads the properties block and refuses what this reader does not read.
    fn check_properties(&mut self, metaindex: BlockHandle) -> Result<()> {
        let meta = self.read_block(metaindex)?;
        let mut properties = None;
        for entry in BlockIter::new(meta.as_slice(), false).map_err(|w| corrupt(&self.path, w))? {
            let (key, value) = entry.map_err(|w| corrupt(&self.path, w))?;
            match key.as_slice() {
                b"rocksdb.properties" => {
                    let mut pos = 0;
                    properties = BlockHandle::decode(value, &mut pos);
                }
                b"rocksdb.range_del" => {
                    return Err(unsupported(&self.path, "it holds range deletions"));
                }
                b"rocksdb.compression_dict" => {
                    return Err(unsupported(&self.path, "it uses a compression dictionary"));
                }
                _ => {}
            }
        }
        let Some(handle) = properties else {
            return Err(corrupt(&self.path, "no properties block"));
        };
        let block = self.read_block(handle)?;
        let number = |v: &[u8]| {
            let mut pos = 0;
            varint(v, &mut pos)
        };
        for entry in BlockIter::new(block.as_slice(), false).map_err(|w| corrupt(&self.path, w))? {
            let (key, value) = entry.map_err(|w| corrupt(&self.path, w))?;
            match key.as_slice() {
                b"rocksdb.comparator" if value != b"leveldb.BytewiseComparator" => {
                    return Err(unsupported(
                        &self.path,
                        format!("comparator {}", String::from_utf8_lossy(value)),
                    ));
                }
                b"rocksdb.merge.operands" if number(value) != Some(0) => {
                    return Err(unsupported(&self.path, "it holds merge operands"));
                }
                b"rocksdb.num.range-deletions" if number(value) != Some(0) => {
                    return Err(unsupported(&self.path, "it holds range deletions"));
                }
                b"rocksdb.block.based.table.index.type" => {
                    let kind = value
                        .get(..4)
                        .map(|b| u32::from_le_bytes(b.try_into().unwrap()));
                    if !matches!(kind, Some(0 | 1)) {
                        return Err(unsupported(
                            &self.path,
                            format!(
                                "index type {kind:?} (this reader reads binary-search indexes)"
                            ),
                        ));
                    }
                }
                b"rocksdb.index.value.is.delta.encoded" => {
                    self.delta_index = number(value) == Some(1)
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Reads, checks and decompresses one block.
    fn read_block(&self, handle: BlockHandle) -> Result<Vec<u8>> {
        if handle.size > MAX_BLOCK_BYTES {
            return Err(corrupt(
                &self.path,
                format!("a block of {} bytes (over {MAX_BLOCK_BYTES})", handle.size),
            ));
        }
        let mut raw = vec![0u8; handle.size as usize + TRAILER_BYTES];
        // (`size` is at most MAX_BLOCK_BYTES: no overflow.)
        self.file
            .read_exact_at(&mut raw, handle.offset)
            .map_err(|e| corrupt(&self.path, format!("cannot read a block: {e}")))?;
        let (data, trailer) = raw.split_at(handle.size as usize);
        let kind = trailer[0];
        let stored = u32::from_le_bytes(trailer[1..5].try_into().unwrap());
        if masked_crc(data, kind) != stored {
            return Err(corrupt(
                &self.path,
                format!("the block at {} fails its checksum", handle.offset),
            ));
        }
        match kind {
            0 => {
                raw.truncate(handle.size as usize);
                Ok(raw)
            }
            1 => {
                // The stated length first: a block never decompresses past the bound.
                let n = snap::raw::decompress_len(data)
                    .map_err(|e| corrupt(&self.path, format!("a Snappy block: {e}")))?;
                if n as u64 > MAX_BLOCK_BYTES {
                    return Err(corrupt(&self.path, format!("a Snappy block of {n} bytes")));
                }
                snap::raw::Decoder::new()
                    .decompress_vec(data)
                    .map_err(|e| corrupt(&self.path, format!("a Snappy block: {e}")))
            }
            4 | 5 | 7 => {
                // Compression format 2: the uncompressed length as a varint32 first.
                let mut pos = 0;
                let n = varint(data, &mut pos)
                    .filter(|n| *n <= MAX_BLOCK_BYTES)
                    .ok_or_else(|| corrupt(&self.path, "a compressed block without its length"))?
                    as usize;
                let body = &data[pos..];
                let out = if kind == 7 {
                    zstd::bulk::decompress(body, n)
                        .map_err(|e| corrupt(&self.path, format!("a ZSTD block: {e}")))?
                } else {
                    lz4_flex::block::decompress(body, n)
                        .map_err(|e| corrupt(&self.path, format!("an LZ4 block: {e}")))?
                };
                if out.len() != n {
                    return Err(corrupt(
                        &self.path,
                        "a block shorter than its stated length",
                    ));
                }
                Ok(out)
            }
            other => Err(unsupported(
                &self.path,
                format!(
                    "block compression type {other} (this reader reads none, Snappy, LZ4 and ZSTD)"
                ),
            )),
        }
    }

    /// Every data block's handle, in key order.
    fn data_blocks(&self) -> Result<Vec<BlockHandle>> {
        let index = self.read_block(self.index)?;
        let mut handles = Vec::new();
        let mut previous: Option<BlockHandle> = None;
        let iter = BlockIter::new(index.as_slice(), self.delta_index)
            .map_err(|w| corrupt(&self.path, w))?;
        // As for data blocks: entries repeating a long key are refused past a bound.
        let mut budget = index
            .len()
            .saturating_mul(BLOCK_EXPANSION)
            .max(MIN_BLOCK_BUDGET);
        for entry in iter.with_restart_flags() {
            let (key, value, at_restart) = entry.map_err(|w| corrupt(&self.path, w))?;
            budget = budget
                .checked_sub(key.len() + value.len() + 32)
                .ok_or_else(|| {
                    corrupt(
                        &self.path,
                        "an index whose entries expand past twice its size",
                    )
                })?;
            let mut pos = 0;
            let handle = if !self.delta_index || at_restart {
                BlockHandle::decode(value, &mut pos)
            } else {
                // Between restart points: only the size, as a signed delta of the last one's.
                previous.and_then(|p| {
                    let delta = varint_signed(value, &mut pos)?;
                    Some(BlockHandle {
                        offset: p
                            .offset
                            .checked_add(p.size)?
                            .checked_add(TRAILER_BYTES as u64)?,
                        size: u64::try_from(i64::try_from(p.size).ok()?.checked_add(delta)?)
                            .ok()?,
                    })
                })
            }
            .ok_or_else(|| corrupt(&self.path, "a malformed index entry"))?;
            // Blocks follow one another: an index naming one twice, or out of order, would
            // repeat rows (or decompress one block over and over).
            if let Some(p) = previous
                && p.offset.saturating_add(p.size) >= handle.offset
            {
                return Err(corrupt(
                    &self.path,
                    "an index whose blocks overlap or are out of order",
                ));
            }
            handles.push(handle);
            previous = Some(handle);
        }
        Ok(handles)
    }

    /// The file's entries in key order: (user key, sequence number, kind, value).
    pub fn entries(self) -> Result<SstEntries> {
        let blocks = self.data_blocks()?;
        Ok(SstEntries {
            sst: self,
            blocks: blocks.into_iter(),
            current: None,
            budget: 0,
            last: None,
        })
    }
}

/// One internal entry of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub key: Vec<u8>,
    pub sequence: u64,
    kind: EntryKind,
    pub value: Vec<u8>,
}

/// A table's entries, read from one data block at a time, one entry at a time: memory holds
/// the block and the entry, whatever the block's entries expand to.
pub struct SstEntries {
    sst: SstFile,
    blocks: std::vec::IntoIter<BlockHandle>,
    current: Option<BlockIter<Vec<u8>>>,
    /// Key and value bytes the current block may still yield: prefix compression lets a small
    /// block repeat a long key many times; real blocks stay far below this.
    budget: usize,
    /// The last entry's (user key, sequence number): entries come in key order, newest first.
    last: Option<(Vec<u8>, u64)>,
}

/// How many times its own size a block's entries may expand to (keys repeat their shared
/// prefixes), besides [`MIN_BLOCK_BUDGET`].
const BLOCK_EXPANSION: usize = 256;
const MIN_BLOCK_BUDGET: usize = 1 << 20;

impl Iterator for SstEntries {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Result<Entry>> {
        let next = self.next_entry();
        if matches!(next, Some(Err(_))) {
            // Nothing after an error.
            self.blocks = Vec::new().into_iter();
            self.current = None;
        }
        next
    }
}

impl SstEntries {
    fn next_entry(&mut self) -> Option<Result<Entry>> {
        let path = &self.sst.path;
        loop {
            if let Some(block) = &mut self.current {
                match block.next_entry() {
                    Some(Ok((internal, value, _))) => {
                        let value = block.bytes()[value].to_vec();
                        match self.budget.checked_sub(internal.len() + value.len()) {
                            Some(left) => self.budget = left,
                            None => {
                                return Some(Err(corrupt(
                                    path,
                                    format!(
                                        "a block whose entries expand past {BLOCK_EXPANSION} times its size"
                                    ),
                                )));
                            }
                        }
                        let e = match entry(path, internal, value) {
                            Ok(e) => e,
                            Err(e) => return Some(Err(e)),
                        };
                        let in_order = self.last.as_ref().is_none_or(|(key, sequence)| {
                            (key.as_slice(), std::cmp::Reverse(*sequence))
                                < (e.key.as_slice(), std::cmp::Reverse(e.sequence))
                        });
                        if !in_order {
                            return Some(Err(corrupt(path, "entries out of key order")));
                        }
                        self.last = Some((e.key.clone(), e.sequence));
                        return Some(Ok(e));
                    }
                    Some(Err(w)) => return Some(Err(corrupt(path, w))),
                    None => self.current = None,
                }
            }
            let handle = self.blocks.next()?;
            let block = match self.sst.read_block(handle) {
                Ok(b) => b,
                Err(e) => return Some(Err(e)),
            };
            self.budget = block
                .len()
                .saturating_mul(BLOCK_EXPANSION)
                .max(MIN_BLOCK_BUDGET);
            match BlockIter::new(block, false) {
                Ok(b) => self.current = Some(b),
                Err(w) => return Some(Err(corrupt(path, w))),
            }
        }
    }
}

/// A data block's entry: its internal key (user key, then sequence number and kind) and value.
fn entry(path: &Path, mut internal: Vec<u8>, value: Vec<u8>) -> Result<Entry> {
    if internal.len() < 8 {
        return Err(corrupt(path, "an internal key shorter than 8 bytes"));
    }
    let trailer = internal.split_off(internal.len() - 8);
    let packed = u64::from_le_bytes(trailer.as_slice().try_into().unwrap());
    let kind = match packed & 0xff {
        1 => EntryKind::Value,
        0 | 7 => EntryKind::Deletion,
        2 => return Err(unsupported(path, "it holds merge operands")),
        other => return Err(unsupported(path, format!("an entry of value type {other}"))),
    };
    Ok(Entry {
        key: internal,
        sequence: packed >> 8,
        kind,
        value,
    })
}

/// The entries of one block: keys prefix-compressed against the previous one, restart points
/// at the end. With `values_are_handles` (a delta-encoded index), entries between restart points
/// carry no value length: their value runs to the next entry (a varint).
struct BlockIter<D: AsRef<[u8]>> {
    /// The block, its restart array included (`end` is where the entries end).
    data: D,
    end: usize,
    /// Offsets of the restart points.
    restarts: Vec<usize>,
    pos: usize,
    key: Vec<u8>,
    values_are_handles: bool,
}

/// A block entry: its key, where its value is in the block, and whether the value is whole.
type RawEntry = std::result::Result<(Vec<u8>, std::ops::Range<usize>, bool), String>;

impl<D: AsRef<[u8]>> BlockIter<D> {
    fn new(block: D, values_are_handles: bool) -> std::result::Result<Self, String> {
        let bytes = block.as_ref();
        let n = bytes.len();
        if n < 4 {
            return Err("a block shorter than its restart count".into());
        }
        let word = u32::from_le_bytes(bytes[n - 4..].try_into().unwrap());
        if word & 0x8000_0000 != 0 {
            return Err("a data block with a hash index (not read)".into());
        }
        let count = word as usize;
        let end = n
            .checked_sub(4 + 4 * count)
            .ok_or("a block with more restart points than bytes")?;
        let restarts = (0..count)
            .map(|i| {
                let at = end + 4 * i;
                u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize
            })
            .collect();
        Ok(BlockIter {
            data: block,
            end,
            restarts,
            pos: 0,
            key: Vec::new(),
            values_are_handles,
        })
    }

    /// The block's entries, without its restart array.
    fn bytes(&self) -> &[u8] {
        &self.data.as_ref()[..self.end]
    }

    fn next_entry(&mut self) -> Option<RawEntry> {
        let data = &self.data.as_ref()[..self.end];
        if self.pos >= data.len() {
            return None;
        }
        let at_restart = self.restarts.binary_search(&self.pos).is_ok();
        let mut pos = self.pos;
        let parsed = (|| {
            let shared = varint(data, &mut pos)? as usize;
            let non_shared = varint(data, &mut pos)? as usize;
            // A delta-encoded index stores no value length: its value is a full handle where
            // the key shares nothing with the previous one, else a size delta.
            let value_len = if self.values_are_handles {
                None
            } else {
                Some(varint(data, &mut pos)? as usize)
            };
            Some((shared, non_shared, value_len, pos))
        })();
        let Some((shared, non_shared, value_len, mut pos)) = parsed else {
            return Some(Err("a malformed block entry".into()));
        };
        if shared > self.key.len() || non_shared > data.len().saturating_sub(pos) {
            return Some(Err("a block entry past its key or block".into()));
        }
        self.key.truncate(shared);
        self.key.extend_from_slice(&data[pos..pos + non_shared]);
        pos += non_shared;
        let full_handle = shared == 0;
        let value_end = match value_len {
            Some(n) if n <= data.len().saturating_sub(pos) => pos + n,
            Some(_) => return Some(Err("a block entry's value past the block".into())),
            None => {
                let mut end = pos;
                let parsed = if full_handle {
                    varint(data, &mut end).and_then(|_| varint(data, &mut end))
                } else {
                    varint(data, &mut end)
                };
                if parsed.is_none() {
                    return Some(Err("a malformed index handle".into()));
                }
                end
            }
        };
        if value_end > data.len() {
            return Some(Err("a block entry's value past the block".into()));
        }
        self.pos = value_end;
        Some(Ok((
            self.key.clone(),
            pos..value_end,
            full_handle || (value_len.is_some() && at_restart),
        )))
    }
}

impl<'a> BlockIter<&'a [u8]> {
    /// Each entry with whether its value is whole: a full block handle in a delta-encoded
    /// index (the key shares nothing with the previous one), else any entry at a restart point.
    fn with_restart_flags(self) -> WithRestarts<'a> {
        WithRestarts(self)
    }
}

impl<'a> Iterator for BlockIter<&'a [u8]> {
    type Item = std::result::Result<(Vec<u8>, &'a [u8]), String>;

    fn next(&mut self) -> Option<Self::Item> {
        let data: &'a [u8] = self.data;
        self.next_entry().map(|r| r.map(|(k, v, _)| (k, &data[v])))
    }
}

struct WithRestarts<'a>(BlockIter<&'a [u8]>);

impl<'a> Iterator for WithRestarts<'a> {
    type Item = std::result::Result<(Vec<u8>, &'a [u8], bool), String>;

    fn next(&mut self) -> Option<Self::Item> {
        let data: &'a [u8] = self.0.data;
        self.0
            .next_entry()
            .map(|r| r.map(|(k, v, whole)| (k, &data[v], whole)))
    }
}

/// The merged view of a checkpoint's tables: each user key once, its newest entry (the highest
/// sequence number across every file), deletes dropped, in key order. A checkpoint holds only
/// live files, so no MANIFEST is needed.
pub struct MergedView {
    heap: BinaryHeap<Head>,
    sources: Vec<SstEntries>,
    last_key: Option<Vec<u8>>,
}

struct Head {
    entry: Entry,
    source: usize,
}

impl PartialEq for Head {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Head {}
impl PartialOrd for Head {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Head {
    /// The heap pops the greatest: the smallest key, then the highest sequence number.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .entry
            .key
            .cmp(&self.entry.key)
            .then(self.entry.sequence.cmp(&other.entry.sequence))
    }
}

impl MergedView {
    /// The merged view of the `.sst` files of `dir`.
    pub fn open(dir: &Path) -> Result<MergedView> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| corrupt(dir, format!("cannot list: {e}")))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "sst"))
            .collect();
        files.sort();
        let mut view = MergedView {
            heap: BinaryHeap::new(),
            sources: Vec::new(),
            last_key: None,
        };
        for f in files {
            let mut entries = SstFile::open(&f)?.entries()?;
            let source = view.sources.len();
            if let Some(first) = entries.next() {
                view.heap.push(Head {
                    entry: first?,
                    source,
                });
            }
            view.sources.push(entries);
        }
        Ok(view)
    }
}

impl Iterator for MergedView {
    /// (key, value).
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let Head { entry, source } = self.heap.pop()?;
            match self.sources[source].next() {
                Some(Ok(next)) => self.heap.push(Head {
                    entry: next,
                    source,
                }),
                Some(Err(e)) => return Some(Err(e)),
                None => {}
            }
            // Older versions of a key come after its newest one.
            if self.last_key.as_deref() == Some(entry.key.as_slice()) {
                continue;
            }
            self.last_key = Some(entry.key.clone());
            if entry.kind == EntryKind::Value {
                return Some(Ok((entry.key, entry.value)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/kv-snapshots")
            .join(name)
    }

    /// What the fixture generator wrote: keys 0..4000 (`v1-<i>-` + `i % 50` x's), every
    /// seventh deleted, every third other one overwritten (`v2-<i>`), keys 4000..4200 added
    /// (`v3-<i>`), and key 14 (deleted) written again (`v3-back`).
    fn expected() -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        for i in 0..4_200u32 {
            let value = if i >= 4_000 {
                format!("v3-{i}")
            } else if i == 14 {
                "v3-back".to_string()
            } else if i % 7 == 0 {
                continue;
            } else if i % 3 == 0 {
                format!("v2-{i}")
            } else {
                format!("v1-{i}-{}", "x".repeat((i % 50) as usize))
            };
            out.push((format!("key-{i:06}").into_bytes(), value.into_bytes()));
        }
        out
    }

    #[test]
    fn checkpoints_of_every_compression_read_as_rocksdb_merges_them() {
        for name in ["lz4", "snappy", "zstd"] {
            let got: Vec<(Vec<u8>, Vec<u8>)> = MergedView::open(&fixture(name))
                .unwrap()
                .collect::<Result<_>>()
                .unwrap();
            assert_eq!(got.len(), expected().len(), "{name}");
            assert!(got == expected(), "{name}: the merged view differs");
        }
    }

    #[test]
    fn a_corrupt_block_is_one_clear_error() {
        let dir = std::env::temp_dir().join(format!("sst-corrupt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let source = std::fs::read_dir(fixture("lz4"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|x| x == "sst"))
            .unwrap();
        let mut bytes = std::fs::read(&source).unwrap();
        bytes[100] ^= 0xff;
        std::fs::write(dir.join("000001.sst"), &bytes).unwrap();
        let e = MergedView::open(&dir)
            .and_then(|v| v.collect::<Result<Vec<_>>>())
            .unwrap_err();
        assert!(e.message().contains("fails its checksum"), "{e}");
        assert!(!e.message().contains('\n'));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn varints_and_crcs_are_rocksdbs() {
        let mut pos = 0;
        assert_eq!(varint(&[0xac, 0x02], &mut pos), Some(300));
        let mut pos = 0;
        assert_eq!(varint_signed(&[0x03], &mut pos), Some(-2));
        // The Castagnoli check value; the masking is checked by every fixture block's checksum.
        assert_eq!(crc32c::crc32c(b"123456789"), 0xe306_9283);
    }
}
