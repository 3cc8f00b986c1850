//! A Lance data file writer, file format 2.0 (on-disk version 0.3), the format Lance datasets
//! created with `data_storage_version = "2.0"` keep using when appended to.
//!
//! Layout, as Lance's own `FileWriter` produces it: the page buffers (each padded to 64
//! bytes), then global buffer 0 (the `FileDescriptor`: schema and row count), one
//! `ColumnMetadata` per column (its pages: buffer positions, sizes, row count and the page's
//! `ArrayEncoding`), the column-metadata offset table, the global-buffer offset table and a
//! 40-byte footer ending in `LANC`.
//!
//! Encodings are the 2.0 ("legacy") ones Lance's 2.0 encoder picks for flat columns: fixed
//! width values as `nullable{no_nulls | some_nulls{validity bitmap} | all_nulls}` over a
//! `flat` buffer, strings and binary as `binary{u64 end offsets, bytes, null_adjustment}`.
//! Every Arrow batch becomes one page per column, so memory is bounded by the file's size.

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_buffer::{BooleanBufferBuilder, bit_util};
use arrow_schema::DataType;
use fluss_lake_guest_sdk::storage::ObjectWriter;
use fluss_lake_guest_sdk::{Error, Result, ResultExt};
use prost::Message;

use crate::proto::lance::encodings as pbenc;
use crate::proto::lance::file as pbfile;
use crate::proto::lance::file::v2 as pbfile2;

/// Buffers are aligned (and padded) to this many bytes.
const ALIGNMENT: usize = 64;
/// Lance pads with this byte.
const PAD: u8 = 72;
const MAGIC: &[u8; 4] = b"LANC";
/// On-disk (major, minor) of file format 2.0; manifests call it 2.0.
pub const FILE_VERSION_ON_DISK: (u16, u16) = (0, 3);
pub const FILE_MAJOR_VERSION: u32 = 2;
pub const FILE_MINOR_VERSION: u32 = 0;

const ARRAY_ENCODING_URL: &str = "/lance.encodings.ArrayEncoding";
const COLUMN_ENCODING_URL: &str = "/lance.encodings.ColumnEncoding";

fn any(type_url: &str, value: Vec<u8>) -> Vec<u8> {
    prost_types::Any {
        type_url: type_url.to_string(),
        value,
    }
    .encode_to_vec()
}

fn direct(bytes: Vec<u8>) -> pbfile2::Encoding {
    pbfile2::Encoding {
        location: Some(pbfile2::encoding::Location::Direct(
            pbfile2::DirectEncoding { encoding: bytes },
        )),
    }
}

fn page_buffer(index: u32) -> Option<pbenc::Buffer> {
    Some(pbenc::Buffer {
        buffer_index: index,
        buffer_type: pbenc::buffer::BufferType::Page as i32,
    })
}

fn flat(bits: u64, buffer: u32) -> pbenc::ArrayEncoding {
    pbenc::ArrayEncoding {
        array_encoding: Some(pbenc::array_encoding::ArrayEncoding::Flat(pbenc::Flat {
            bits_per_value: bits,
            buffer: page_buffer(buffer),
            compression: None,
        })),
    }
}

fn nullable(n: pbenc::nullable::Nullability) -> pbenc::ArrayEncoding {
    pbenc::ArrayEncoding {
        array_encoding: Some(pbenc::array_encoding::ArrayEncoding::Nullable(Box::new(
            pbenc::Nullable {
                nullability: Some(n),
            },
        ))),
    }
}

/// A column page: its buffers and encoding.
struct Page {
    buffers: Vec<Vec<u8>>,
    encoding: pbenc::ArrayEncoding,
}

/// The validity bitmap of `array` (LSB first, one bit per row), independent of its offset.
fn validity(array: &dyn Array) -> Vec<u8> {
    let mut b = BooleanBufferBuilder::new(array.len());
    for i in 0..array.len() {
        b.append(array.is_valid(i));
    }
    b.finish().values().to_vec()
}

/// The raw little-endian values of a fixed-width array (null slots keep their bytes).
fn fixed_width_values(array: &dyn Array) -> Result<(u64, Vec<u8>)> {
    let n = array.len();
    if let DataType::Boolean = array.data_type() {
        let values = array.as_boolean().values();
        let mut b = BooleanBufferBuilder::new(n);
        for i in 0..n {
            b.append(values.value(i));
        }
        return Ok((1, b.finish().values().to_vec()));
    }
    let width = array
        .data_type()
        .primitive_width()
        .or(match array.data_type() {
            DataType::FixedSizeBinary(w) => Some(*w as usize),
            _ => None,
        })
        .ok_or_else(|| {
            Error::unsupported(format!(
                "Lance 2.0 writer: no fixed-width encoding for {}",
                array.data_type()
            ))
        })?;
    let data = array.to_data();
    let start = data.offset() * width;
    let bytes = data.buffers()[0].as_slice()[start..start + n * width].to_vec();
    Ok(((width * 8) as u64, bytes))
}

fn encode_fixed_width(array: &dyn Array) -> Result<Page> {
    use pbenc::nullable::{AllNull, NoNull, Nullability, SomeNull};
    let nulls = array.null_count();
    if nulls == array.len() && nulls > 0 {
        return Ok(Page {
            buffers: Vec::new(),
            encoding: nullable(Nullability::AllNulls(AllNull {})),
        });
    }
    let (bits, values) = fixed_width_values(array)?;
    if nulls == 0 {
        return Ok(Page {
            buffers: vec![values],
            encoding: nullable(Nullability::NoNulls(Box::new(NoNull {
                values: Some(Box::new(flat(bits, 0))),
            }))),
        });
    }
    Ok(Page {
        buffers: vec![validity(array), values],
        encoding: nullable(Nullability::SomeNulls(Box::new(SomeNull {
            validity: Some(Box::new(flat(1, 0))),
            values: Some(Box::new(flat(bits, 1))),
        }))),
    })
}

/// Strings and binary: cumulative end offsets (null rows shifted by `null_adjustment`, one
/// past the last offset) and the bytes, like Lance's 2.0 `BinaryEncoder`.
fn encode_binary(array: &dyn Array) -> Result<Page> {
    use pbenc::nullable::{NoNull, Nullability};
    let (offsets, bytes): (Vec<i64>, &[u8]) = match array.data_type() {
        DataType::Utf8 => {
            let a = array.as_string::<i32>();
            (
                a.value_offsets().iter().map(|o| *o as i64).collect(),
                a.value_data(),
            )
        }
        DataType::Binary => {
            let a = array.as_binary::<i32>();
            (
                a.value_offsets().iter().map(|o| *o as i64).collect(),
                a.value_data(),
            )
        }
        DataType::LargeUtf8 => {
            let a = array.as_string::<i64>();
            (a.value_offsets().to_vec(), a.value_data())
        }
        DataType::LargeBinary => {
            let a = array.as_binary::<i64>();
            (a.value_offsets().to_vec(), a.value_data())
        }
        other => {
            return Err(Error::unsupported(format!(
                "Lance 2.0 writer: {other} is not a binary type"
            )));
        }
    };
    let first = offsets.first().copied().unwrap_or(0) as usize;
    let last = offsets.last().copied().unwrap_or(0) as usize;
    let mut ends: Vec<u64> = offsets
        .iter()
        .skip(1)
        .map(|o| *o as u64 - first as u64)
        .collect();
    let null_adjustment = ends.last().map_or(0, |l| l + 1);
    for (i, end) in ends.iter_mut().enumerate() {
        if array.is_null(i) {
            *end += null_adjustment;
        }
    }
    let indices: Vec<u8> = ends.iter().flat_map(|e| e.to_le_bytes()).collect();
    let encoding = pbenc::ArrayEncoding {
        array_encoding: Some(pbenc::array_encoding::ArrayEncoding::Binary(Box::new(
            pbenc::Binary {
                indices: Some(Box::new(nullable(Nullability::NoNulls(Box::new(NoNull {
                    values: Some(Box::new(flat(64, 0))),
                }))))),
                bytes: Some(Box::new(flat(8, 1))),
                null_adjustment,
            },
        ))),
    };
    Ok(Page {
        buffers: vec![indices, bytes[first..last].to_vec()],
        encoding,
    })
}

fn encode_page(array: &ArrayRef) -> Result<Page> {
    match array.data_type() {
        DataType::Utf8 | DataType::Binary | DataType::LargeUtf8 | DataType::LargeBinary => {
            encode_binary(array.as_ref())
        }
        _ => encode_fixed_width(array.as_ref()),
    }
}

/// Writes one Lance 2.0 data file, a page per column per batch, straight into an upload:
/// pages go out as they are encoded, and only the column metadata (page positions) is kept
/// until the footer is written.
pub struct LanceFileWriter {
    fields: Vec<pbfile::Field>,
    schema_metadata: std::collections::HashMap<String, Vec<u8>>,
    out: ObjectWriter,
    columns: Vec<pbfile2::ColumnMetadata>,
    rows: u64,
}

impl LanceFileWriter {
    /// `fields` are the Lance schema's (flat, top-level) fields, one column each; the file
    /// goes to `out`.
    pub fn new(fields: Vec<pbfile::Field>, out: ObjectWriter) -> Self {
        let columns = vec![pbfile2::ColumnMetadata::default(); fields.len()];
        LanceFileWriter {
            fields,
            schema_metadata: Default::default(),
            out,
            columns,
            rows: 0,
        }
    }

    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Bytes written so far (the file's size minus its metadata).
    pub fn size(&self) -> u64 {
        self.out.position()
    }

    fn put(&mut self, bytes: &[u8]) -> Result<()> {
        std::io::Write::write_all(&mut self.out, bytes)
            .with_context(|| format!("writing {}", self.out.path()))
    }

    fn write_buffer(&mut self, buf: &[u8]) -> Result<(u64, u64)> {
        let pos = self.out.position();
        self.put(buf)?;
        let pad = bit_util::round_upto_multiple_of_64(buf.len()) - buf.len();
        debug_assert!(pad < ALIGNMENT);
        self.put(&[PAD; ALIGNMENT][..pad])?;
        Ok((pos, buf.len() as u64))
    }

    /// Appends a batch whose columns match the fields (types already converted).
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.num_columns() != self.fields.len() {
            return Err(Error::internal(format!(
                "batch has {} columns, the Lance schema {}",
                batch.num_columns(),
                self.fields.len()
            )));
        }
        if batch.num_rows() == 0 {
            return Ok(());
        }
        for (c, array) in batch.columns().iter().enumerate() {
            let page = encode_page(array)?;
            let (mut offsets, mut sizes) = (Vec::new(), Vec::new());
            for b in &page.buffers {
                let (pos, len) = self.write_buffer(b)?;
                offsets.push(pos);
                sizes.push(len);
            }
            self.columns[c].pages.push(pbfile2::column_metadata::Page {
                buffer_offsets: offsets,
                buffer_sizes: sizes,
                length: batch.num_rows() as u64,
                encoding: Some(direct(any(
                    ARRAY_ENCODING_URL,
                    page.encoding.encode_to_vec(),
                ))),
                priority: self.rows,
            });
        }
        self.rows += batch.num_rows() as u64;
        Ok(())
    }

    /// Writes the metadata and the footer and completes the upload; the file's size.
    pub fn finish(mut self) -> Result<u64> {
        let column_encoding = pbenc::ColumnEncoding {
            column_encoding: Some(pbenc::column_encoding::ColumnEncoding::Values(())),
        };
        for c in &mut self.columns {
            c.encoding = Some(direct(any(
                COLUMN_ENCODING_URL,
                column_encoding.encode_to_vec(),
            )));
        }
        let descriptor = pbfile::FileDescriptor {
            schema: Some(pbfile::Schema {
                fields: self.fields.clone(),
                metadata: self.schema_metadata.clone(),
            }),
            length: self.rows,
        }
        .encode_to_vec();
        let mut out = Vec::new();
        let base = self.out.position();
        let gb_pos = base + out.len() as u64;
        out.extend_from_slice(&descriptor);
        let column_meta_start = base + out.len() as u64;
        let mut cmo = Vec::new();
        for c in &self.columns {
            let bytes = c.encode_to_vec();
            cmo.push((base + out.len() as u64, bytes.len() as u64));
            out.extend_from_slice(&bytes);
        }
        let cmo_table = base + out.len() as u64;
        for (pos, len) in &cmo {
            out.extend_from_slice(&pos.to_le_bytes());
            out.extend_from_slice(&len.to_le_bytes());
        }
        let gbo_table = base + out.len() as u64;
        out.extend_from_slice(&gb_pos.to_le_bytes());
        out.extend_from_slice(&(descriptor.len() as u64).to_le_bytes());
        out.extend_from_slice(&column_meta_start.to_le_bytes());
        out.extend_from_slice(&cmo_table.to_le_bytes());
        out.extend_from_slice(&gbo_table.to_le_bytes());
        out.extend_from_slice(&1u32.to_le_bytes());
        out.extend_from_slice(&(self.columns.len() as u32).to_le_bytes());
        out.extend_from_slice(&FILE_VERSION_ON_DISK.0.to_le_bytes());
        out.extend_from_slice(&FILE_VERSION_ON_DISK.1.to_le_bytes());
        out.extend_from_slice(MAGIC);
        self.put(&out)?;
        let path = self.out.path().to_string();
        self.out
            .finish()
            .with_context(|| format!("uploading {path}"))
    }
}
