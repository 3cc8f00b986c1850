//! A Lance data file reader for what [`file_writer`](crate::file_writer) writes: file format
//! 2.0 (on-disk 0.3), flat columns, pages encoded `nullable{no_nulls | some_nulls | all_nulls}`
//! over `flat` buffers and `binary{u64 end offsets, bytes, null_adjustment}`.
//!
//! Compaction reads fragments with it, so it is strict: [`LanceFileReader::open`] reads the
//! footer and every page's encoding and refuses (`unsupported`, naming what it found) any file
//! version, column encoding, buffer kind or page encoding it cannot decode — files another
//! Lance writer produced with dictionary, bitpacking, FSST, compression or 2.1 layouts — before
//! a single row is read, so a compaction that cannot read one of its inputs writes nothing.
//!
//! Columns are read page by page, each on its own (another writer's pages need not line up
//! across columns): a batch is as long as the shortest rest of the columns' current pages, so
//! memory holds one decoded page per column. A small file is fetched whole, a larger one a
//! buffer at a time.

use arrow_array::{ArrayRef, make_array};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer};
use arrow_schema::DataType;
use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::{Error, Result, ResultExt};
use prost::Message;

use crate::file_writer::{FILE_MAJOR_VERSION, FILE_MINOR_VERSION, FILE_VERSION_ON_DISK};
use crate::proto::lance::encodings as pbenc;
use crate::proto::lance::file as pbfile;
use crate::proto::lance::file::v2 as pbfile2;
use crate::proto::lance::table as pb;
use crate::schema::arrow_type;

const MAGIC: &[u8; 4] = b"LANC";
const FOOTER_LEN: u64 = 40;
/// Files up to this size are fetched in one request.
const WHOLE_FILE_LIMIT: u64 = 16 << 20;
const ARRAY_ENCODING_URL: &str = "/lance.encodings.ArrayEncoding";
const COLUMN_ENCODING_URL: &str = "/lance.encodings.ColumnEncoding";

/// One page of a column: its buffers' positions, row count and encoding.
struct PageSpec {
    rows: usize,
    buffers: Vec<(u64, u64)>,
    encoding: pbenc::ArrayEncoding,
}

/// One column as the reader walks it.
struct Column {
    data_type: DataType,
    pages: Vec<PageSpec>,
    next_page: usize,
    /// The decoded current page and how many of its rows were handed out.
    current: Option<(ArrayRef, usize)>,
}

/// Reads one data file of a fragment, the dataset's fields in schema order.
pub struct LanceFileReader<'a> {
    storage: &'a dyn Storage,
    path: String,
    size: u64,
    /// The whole file, fetched at the first page when it is small.
    whole: Option<Vec<u8>>,
    columns: Vec<Column>,
    rows: u64,
}

fn unsupported(path: &str, what: impl std::fmt::Display) -> Error {
    Error::unsupported(format!(
        "{path}: {what}; this plugin reads only the Lance 2.0 flat encodings it writes itself \
         (the file was written by another Lance writer): compact the dataset with Lance"
    ))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// The name of an encoding, for messages.
fn encoding_name(e: &pbenc::ArrayEncoding) -> &'static str {
    use pbenc::array_encoding::ArrayEncoding as E;
    match &e.array_encoding {
        None => "none",
        Some(E::Flat(_)) => "flat",
        Some(E::Nullable(_)) => "nullable",
        Some(E::FixedSizeList(_)) => "fixed_size_list",
        Some(E::List(_)) => "list",
        Some(E::Struct(_)) => "struct",
        Some(E::Binary(_)) => "binary",
        Some(E::Dictionary(_)) => "dictionary",
        Some(E::Fsst(_)) => "fsst",
        Some(E::PackedStruct(_)) => "packed_struct",
        Some(E::Bitpacked(_)) => "bitpacked",
        Some(E::FixedSizeBinary(_)) => "fixed_size_binary",
        Some(E::BitpackedForNonNeg(_)) => "bitpacked_for_non_neg",
        Some(E::Constant(_)) => "constant",
        Some(_) => "a Lance 2.1+ encoding",
    }
}

/// Bits per value a flat page of `t` holds.
fn flat_bits(t: &DataType) -> Option<u64> {
    match t {
        DataType::Boolean => Some(1),
        DataType::FixedSizeBinary(w) => Some(*w as u64 * 8),
        t => t.primitive_width().map(|w| w as u64 * 8),
    }
}

fn is_binary(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Utf8 | DataType::Binary | DataType::LargeUtf8 | DataType::LargeBinary
    )
}

/// The page buffer a `flat` encoding reads; `Err` names what is not supported.
fn flat_buffer(f: &pbenc::Flat, bits: u64) -> std::result::Result<u32, String> {
    if f.bits_per_value != bits {
        return Err(format!(
            "flat page of {} bits per value where {bits} were expected",
            f.bits_per_value
        ));
    }
    if f.compression.is_some() {
        return Err("compressed flat page".into());
    }
    match &f.buffer {
        Some(b) if b.buffer_type == pbenc::buffer::BufferType::Page as i32 => Ok(b.buffer_index),
        _ => Err("flat page reading a column or file buffer".into()),
    }
}

/// Checks that a page encoding is one [`decode`] handles for `t` over `buffers` buffers.
fn check(
    e: &pbenc::ArrayEncoding,
    t: &DataType,
    buffers: usize,
) -> std::result::Result<(), String> {
    use pbenc::array_encoding::ArrayEncoding as E;
    use pbenc::nullable::Nullability as N;
    let in_range = |i: u32| {
        ((i as usize) < buffers)
            .then_some(())
            .ok_or_else(|| format!("page buffer {i} of {buffers}"))
    };
    match &e.array_encoding {
        Some(E::Nullable(n)) => match &n.nullability {
            Some(N::NoNulls(v)) => check(v.values.as_deref().ok_or("empty no_nulls")?, t, buffers),
            Some(N::SomeNulls(s)) => {
                match s
                    .validity
                    .as_deref()
                    .and_then(|v| v.array_encoding.as_ref())
                {
                    Some(E::Flat(f)) => in_range(flat_buffer(f, 1)?)?,
                    _ => return Err("validity that is not a flat bitmap".into()),
                }
                check(s.values.as_deref().ok_or("empty some_nulls")?, t, buffers)
            }
            Some(N::AllNulls(_)) => Ok(()),
            None => Err("nullable without nullability".into()),
        },
        Some(E::Flat(f)) if !is_binary(t) => {
            let bits = flat_bits(t).ok_or_else(|| format!("flat page of type {t}"))?;
            in_range(flat_buffer(f, bits)?)
        }
        Some(E::Binary(b)) if is_binary(t) => {
            check(
                b.indices.as_deref().ok_or("binary without indices")?,
                &DataType::UInt64,
                buffers,
            )?;
            match b.bytes.as_deref().and_then(|v| v.array_encoding.as_ref()) {
                Some(E::Flat(f)) => in_range(flat_buffer(f, 8)?),
                _ => Err("binary bytes that are not flat".into()),
            }
        }
        _ => Err(format!(
            "{} page encoding of a {t} column",
            encoding_name(e)
        )),
    }
}

/// Decodes a page checked by [`check`].
fn decode(
    e: &pbenc::ArrayEncoding,
    t: &DataType,
    rows: usize,
    bufs: &[Buffer],
) -> Result<arrow_data::ArrayData> {
    use pbenc::array_encoding::ArrayEncoding as E;
    use pbenc::nullable::Nullability as N;
    let corrupt = |what: &str| Error::corrupt(format!("Lance page: {what}"));
    let flat = |f: &pbenc::Flat, bytes: usize| -> Result<Buffer> {
        let b = f.buffer.as_ref().map_or(0, |b| b.buffer_index) as usize;
        let buf = &bufs[b];
        if buf.len() < bytes {
            return Err(corrupt("buffer shorter than its values"));
        }
        Ok(buf.slice_with_length(0, bytes))
    };
    match &e.array_encoding {
        Some(E::Nullable(n)) => match &n.nullability {
            Some(N::NoNulls(v)) => decode(v.values.as_deref().expect("checked"), t, rows, bufs),
            Some(N::SomeNulls(s)) => {
                let Some(E::Flat(f)) = s
                    .validity
                    .as_deref()
                    .and_then(|v| v.array_encoding.as_ref())
                else {
                    unreachable!("checked")
                };
                let validity = flat(f, rows.div_ceil(8))?;
                let values = decode(s.values.as_deref().expect("checked"), t, rows, bufs)?;
                let nulls = NullBuffer::new(BooleanBuffer::new(validity, 0, rows));
                Ok(values.into_builder().nulls(Some(nulls)).build()?)
            }
            _ => Ok(arrow_data::ArrayData::new_null(t, rows)),
        },
        Some(E::Flat(f)) => {
            let bits = flat_bits(t).expect("checked") as usize;
            let values = flat(f, (rows * bits).div_ceil(8))?;
            Ok(arrow_data::ArrayData::builder(t.clone())
                .len(rows)
                .add_buffer(values)
                .align_buffers(true)
                .build()?)
        }
        Some(E::Binary(b)) => {
            let ends_data = decode(
                b.indices.as_deref().expect("checked"),
                &DataType::UInt64,
                rows,
                bufs,
            )?;
            if ends_data.null_count() > 0 {
                return Err(corrupt("binary offsets with nulls"));
            }
            let ends = arrow_array::UInt64Array::from(ends_data);
            let Some(E::Flat(f)) = b.bytes.as_deref().and_then(|v| v.array_encoding.as_ref())
            else {
                unreachable!("checked")
            };
            let adjust = b.null_adjustment;
            let mut offsets: Vec<i64> = Vec::with_capacity(rows + 1);
            offsets.push(0);
            let mut valid = Vec::with_capacity(rows);
            for &end in ends.values() {
                let (end, is_valid) = if adjust > 0 && end >= adjust {
                    (end - adjust, false)
                } else {
                    (end, true)
                };
                if (end as i64) < *offsets.last().expect("one offset") {
                    return Err(corrupt("binary offsets going backwards"));
                }
                offsets.push(end as i64);
                valid.push(is_valid);
            }
            let total = *offsets.last().expect("one offset") as usize;
            let bytes = flat(f, total)?;
            let nulls = valid.iter().any(|v| !v).then(|| NullBuffer::from(valid));
            let large = matches!(t, DataType::LargeUtf8 | DataType::LargeBinary);
            let offsets = if large {
                Buffer::from_vec(offsets)
            } else {
                if total > i32::MAX as usize {
                    return Err(corrupt("binary page too large for 32-bit offsets"));
                }
                Buffer::from_vec(offsets.into_iter().map(|o| o as i32).collect::<Vec<i32>>())
            };
            Ok(arrow_data::ArrayData::builder(t.clone())
                .len(rows)
                .add_buffer(offsets)
                .add_buffer(bytes)
                .nulls(nulls)
                .build()?)
        }
        _ => unreachable!("checked"),
    }
}

impl<'a> LanceFileReader<'a> {
    /// Opens `data/<file.path>`, whose columns hold `fields` (the dataset's schema, flat);
    /// `unsupported` for any version, buffer or encoding this reader cannot decode, before
    /// any row is read.
    pub fn open(
        storage: &'a dyn Storage,
        file: &pb::DataFile,
        fields: &[pbfile::Field],
    ) -> Result<LanceFileReader<'a>> {
        let path = format!("data/{}", file.path);
        if file.base_id.is_some() {
            return Err(unsupported(&path, "a data file in another base path"));
        }
        if (file.file_major_version, file.file_minor_version)
            != (FILE_MAJOR_VERSION, FILE_MINOR_VERSION)
        {
            return Err(unsupported(
                &path,
                format!(
                    "Lance file format {}.{}",
                    file.file_major_version, file.file_minor_version
                ),
            ));
        }
        let size = match file.file_size_bytes {
            0 => {
                storage
                    .head(&path)?
                    .ok_or_else(|| Error::not_found(format!("{path} is missing")))?
                    .size
            }
            n => n,
        };
        if size < FOOTER_LEN {
            return Err(Error::corrupt(format!(
                "{path}: shorter than a Lance footer"
            )));
        }
        let mut reader = LanceFileReader {
            storage,
            path,
            size,
            whole: None,
            columns: Vec::new(),
            rows: 0,
        };
        let footer = reader.read(size - FOOTER_LEN, FOOTER_LEN)?;
        if &footer[36..40] != MAGIC {
            return Err(Error::corrupt(format!("{}: no LANC footer", reader.path)));
        }
        let version = (
            u16::from_le_bytes([footer[32], footer[33]]),
            u16::from_le_bytes([footer[34], footer[35]]),
        );
        if version != FILE_VERSION_ON_DISK {
            return Err(unsupported(
                &reader.path,
                format!("on-disk file version {}.{}", version.0, version.1),
            ));
        }
        let column_meta_start = u64_at(&footer, 0);
        let cmo_table = u64_at(&footer, 8);
        let num_columns = u32::from_le_bytes(footer[28..32].try_into().expect("4 bytes")) as u64;
        if column_meta_start > cmo_table || cmo_table + num_columns * 16 > size - FOOTER_LEN {
            return Err(Error::corrupt(format!(
                "{}: metadata out of range",
                reader.path
            )));
        }
        let meta = reader.read(column_meta_start, size - FOOTER_LEN - column_meta_start)?;
        let at = |pos: u64| (pos - column_meta_start) as usize;
        let mut columns = Vec::with_capacity(num_columns as usize);
        for c in 0..num_columns {
            let entry = at(cmo_table) + c as usize * 16;
            let (pos, len) = (u64_at(&meta, entry), u64_at(&meta, entry + 8));
            let bytes = pos
                .checked_sub(column_meta_start)
                .and_then(|_| meta.get(at(pos)..at(pos) + len as usize))
                .ok_or_else(|| {
                    Error::corrupt(format!("{}: column {c} metadata out of range", reader.path))
                })?;
            columns.push(pbfile2::ColumnMetadata::decode(bytes).map_err(|e| {
                Error::corrupt(format!("{}: column {c} metadata: {e}", reader.path))
            })?);
        }
        for field in fields {
            let t = arrow_type(&field.logical_type)?;
            let index = file
                .fields
                .iter()
                .position(|id| *id == field.id)
                .and_then(|j| file.column_indices.get(j))
                .and_then(|c| columns.get(*c as usize))
                .ok_or_else(|| {
                    unsupported(
                        &reader.path,
                        format!("no column for field {} (id {})", field.name, field.id),
                    )
                })?;
            let column = reader.column(index, t)?;
            let rows: u64 = column.pages.iter().map(|p| p.rows as u64).sum();
            if !reader.columns.is_empty() && rows != reader.rows {
                return Err(Error::corrupt(format!(
                    "{}: column {} has {rows} rows, the others {}",
                    reader.path, field.name, reader.rows
                )));
            }
            reader.rows = rows;
            reader.columns.push(column);
        }
        Ok(reader)
    }

    /// Rows in the file (every column has as many).
    pub fn rows(&self) -> u64 {
        self.rows
    }

    fn read(&self, offset: u64, len: u64) -> Result<Vec<u8>> {
        match &self.whole {
            Some(all) => all
                .get(offset as usize..(offset + len) as usize)
                .map(<[u8]>::to_vec)
                .ok_or_else(|| Error::corrupt(format!("{}: range out of the file", self.path))),
            None => {
                let b = self
                    .storage
                    .get_range(&self.path, offset, len)
                    .with_context(|| format!("reading {}", self.path))?;
                if b.len() as u64 != len {
                    return Err(Error::corrupt(format!(
                        "{}: range out of the file",
                        self.path
                    )));
                }
                Ok(b)
            }
        }
    }

    fn column(&self, meta: &pbfile2::ColumnMetadata, t: DataType) -> Result<Column> {
        let direct = |e: &Option<pbfile2::Encoding>, url: &str| -> Result<Option<Vec<u8>>> {
            match e.as_ref().and_then(|e| e.location.as_ref()) {
                None | Some(pbfile2::encoding::Location::None(_)) => Ok(None),
                Some(pbfile2::encoding::Location::Direct(d)) => {
                    let any = prost_types::Any::decode(d.encoding.as_slice())
                        .map_err(|e| Error::corrupt(format!("{}: encoding: {e}", self.path)))?;
                    if any.type_url != url {
                        return Err(unsupported(
                            &self.path,
                            format!("encoding of type {}", any.type_url),
                        ));
                    }
                    Ok(Some(any.value))
                }
                Some(pbfile2::encoding::Location::Indirect(_)) => {
                    Err(unsupported(&self.path, "an indirect (deferred) encoding"))
                }
            }
        };
        if let Some(bytes) = direct(&meta.encoding, COLUMN_ENCODING_URL)? {
            let e = pbenc::ColumnEncoding::decode(bytes.as_slice())
                .map_err(|e| Error::corrupt(format!("{}: column encoding: {e}", self.path)))?;
            if !matches!(
                e.column_encoding,
                None | Some(pbenc::column_encoding::ColumnEncoding::Values(()))
            ) {
                return Err(unsupported(
                    &self.path,
                    "a column-level encoding (zone maps, blobs)",
                ));
            }
        }
        if !meta.buffer_offsets.is_empty() {
            return Err(unsupported(&self.path, "column buffers (dictionaries)"));
        }
        let mut pages = Vec::with_capacity(meta.pages.len());
        for p in &meta.pages {
            let bytes = direct(&p.encoding, ARRAY_ENCODING_URL)?
                .ok_or_else(|| unsupported(&self.path, "a page without an encoding"))?;
            let encoding = pbenc::ArrayEncoding::decode(bytes.as_slice())
                .map_err(|e| Error::corrupt(format!("{}: page encoding: {e}", self.path)))?;
            if p.buffer_offsets.len() != p.buffer_sizes.len() {
                return Err(Error::corrupt(format!("{}: page buffers", self.path)));
            }
            check(&encoding, &t, p.buffer_offsets.len()).map_err(|e| unsupported(&self.path, e))?;
            pages.push(PageSpec {
                rows: p.length as usize,
                buffers: p
                    .buffer_offsets
                    .iter()
                    .copied()
                    .zip(p.buffer_sizes.iter().copied())
                    .collect(),
                encoding,
            });
        }
        Ok(Column {
            data_type: t,
            pages,
            next_page: 0,
            current: None,
        })
    }

    fn decode_page(&self, t: &DataType, page: &PageSpec) -> Result<ArrayRef> {
        let bufs = page
            .buffers
            .iter()
            .map(|(pos, len)| self.read(*pos, *len).map(Buffer::from_vec))
            .collect::<Result<Vec<_>>>()?;
        let data =
            decode(&page.encoding, t, page.rows, &bufs).map_err(|e| e.context(&self.path))?;
        Ok(make_array(data))
    }

    /// The next rows (at most `max_rows`, at least one), a column each in field order; `None`
    /// at the end of the file.
    pub fn next_batch(&mut self, max_rows: usize) -> Result<Option<Vec<ArrayRef>>> {
        let mut n = max_rows.max(1);
        for i in 0..self.columns.len() {
            loop {
                let c = &self.columns[i];
                if let Some((page, used)) = &c.current
                    && *used < page.len()
                {
                    n = n.min(page.len() - used);
                    break;
                }
                if c.next_page == c.pages.len() {
                    return Ok(None);
                }
                if self.whole.is_none() && self.size <= WHOLE_FILE_LIMIT {
                    let all = self
                        .storage
                        .get(&self.path)
                        .with_context(|| format!("reading {}", self.path))?;
                    self.whole = Some(all);
                }
                let page = self.decode_page(&c.data_type, &c.pages[c.next_page])?;
                let c = &mut self.columns[i];
                c.next_page += 1;
                c.current = Some((page, 0));
            }
        }
        if self.columns.is_empty() {
            return Ok(None);
        }
        Ok(Some(
            self.columns
                .iter_mut()
                .map(|c| {
                    let (page, used) = c.current.as_mut().expect("loaded");
                    let out = page.slice(*used, n);
                    *used += n;
                    out
                })
                .collect(),
        ))
    }
}
