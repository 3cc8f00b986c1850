//! Avro object container files (what Paimon manifests and Iceberg manifests are), written and
//! read with apache-avro. Every codec a Java lake writer uses for its metadata is read and can
//! be written: deflate (Iceberg's manifests), zstandard (Paimon's `manifest.compression`
//! default), snappy, bzip2. zstandard is the C library built for `wasm32-wasip2` with Debian's
//! WASI toolchain (`scripts/build-plugins.sh` installs it, `.cargo/config.toml` points `cc` at
//! it); xz is not built, and a file using it is refused as unsupported.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

pub use apache_avro::Schema;
use apache_avro::error::Details;
pub use apache_avro::types::Value;
use apache_avro::{
    Bzip2Settings, Codec, DeflateSettings, Reader, Writer, ZstandardSettings, from_avro_datum,
};

use crate::error::{Error, Result};

/// Block compression of a container file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AvroCodec {
    /// No compression.
    Null,
    /// Raw deflate (RFC 1951), mandatory for every Avro implementation.
    Deflate,
    /// Snappy with the Avro CRC32 trailer.
    Snappy,
    /// Zstandard at a level (Java Avro's `zstandard` codec).
    Zstandard {
        /// Compression level, 1 (fastest) to 22.
        level: u8,
    },
    /// Bzip2 (Java Avro's `bzip2` codec).
    Bzip2,
}

impl AvroCodec {
    /// Parses a codec name as Java writers spell it (`null`, `deflate`, `snappy`,
    /// `zstandard` or `zstd`, `bzip2`); `option` names the setting it came from, for the
    /// error of a codec guests do not have.
    pub fn parse(name: &str, option: &str) -> Result<AvroCodec> {
        match name.trim().to_ascii_lowercase().as_str() {
            "null" | "none" | "uncompressed" => Ok(AvroCodec::Null),
            "deflate" | "gzip" => Ok(AvroCodec::Deflate),
            "snappy" => Ok(AvroCodec::Snappy),
            "zstd" | "zstandard" => Ok(AvroCodec::Zstandard { level: 1 }),
            "bzip2" => Ok(AvroCodec::Bzip2),
            other => Err(Error::unsupported(format!(
                "{option} = {other:?}: this plugin writes Avro with null, deflate, snappy, zstd \
                 or bzip2; set {option} to one of them"
            ))),
        }
    }

    fn codec(self) -> Codec {
        match self {
            AvroCodec::Null => Codec::Null,
            AvroCodec::Deflate => Codec::Deflate(DeflateSettings::default()),
            AvroCodec::Snappy => Codec::Snappy,
            AvroCodec::Zstandard { level } => Codec::Zstandard(ZstandardSettings::new(level)),
            AvroCodec::Bzip2 => Codec::Bzip2(Bzip2Settings::default()),
        }
    }
}

/// An error of apache-avro reading a container file: a codec this build lacks is
/// `unsupported` (the file may be fine), anything else is `corrupt`.
fn read_error(e: apache_avro::Error) -> Error {
    match e.details() {
        Details::CodecNotSupported(codec) => Error::unsupported(format!(
            "an Avro file is compressed with {codec}, which this plugin cannot read (it reads \
             null, deflate, snappy, zstandard and bzip2); have the writer use one of those"
        )),
        _ => Error::corrupt(format!("avro: {e}")),
    }
}

/// Parses an Avro schema from its JSON text.
pub fn parse_schema(json: &str) -> Result<Schema> {
    Schema::parse_str(json).map_err(|e| Error::internal(format!("invalid Avro schema: {e}")))
}

/// Schemas [`parse_schema_once`] keeps per plugin instance (a plugin encodes with a few).
const PARSED_SCHEMAS: usize = 8;

thread_local! {
    static PARSED: RefCell<VecDeque<(String, Rc<Schema>)>> = const { RefCell::new(VecDeque::new()) };
}

/// [`parse_schema`] for a schema a plugin encodes with again and again, such as a Paimon
/// write result's (a container of manifest entries, one per split): parsed once per plugin
/// instance, then shared. Parsing validates every name with regular expressions, which cost
/// as much as the rest of writing a small split. The [`PARSED_SCHEMAS`] latest are kept.
pub fn parse_schema_once(json: &str) -> Result<Rc<Schema>> {
    let kept = PARSED.with_borrow(|parsed| {
        parsed
            .iter()
            .find(|(text, _)| text == json)
            .map(|(_, schema)| schema.clone())
    });
    if let Some(schema) = kept {
        return Ok(schema);
    }
    let schema = Rc::new(parse_schema(json)?);
    PARSED.with_borrow_mut(|parsed| {
        if parsed.len() == PARSED_SCHEMAS {
            parsed.pop_front();
        }
        parsed.push_back((json.to_string(), schema.clone()));
    });
    Ok(schema)
}

/// Encodes `records` (each a [`Value::Record`] matching `schema`) as one container file.
/// The file is valid (header only) when there are no records.
pub fn write_container(
    schema: &Schema,
    records: impl IntoIterator<Item = Value>,
    codec: AvroCodec,
) -> Result<Vec<u8>> {
    write_container_with_metadata(schema, records, codec, &[])
}

/// [`write_container`] with user metadata in the file header (Iceberg manifests carry the
/// table schema and partition spec there).
pub fn write_container_with_metadata(
    schema: &Schema,
    records: impl IntoIterator<Item = Value>,
    codec: AvroCodec,
    metadata: &[(&str, String)],
) -> Result<Vec<u8>> {
    let mut writer = Writer::with_codec(schema, Vec::new(), codec.codec());
    for (k, v) in metadata {
        writer
            .add_user_metadata(k.to_string(), v.as_bytes())
            .map_err(|e| Error::internal(format!("avro metadata {k}: {e}")))?;
    }
    for r in records {
        writer
            .append(r)
            .map_err(|e| Error::internal(format!("avro encode: {e}")))?;
    }
    writer
        .into_inner()
        .map_err(|e| Error::internal(format!("avro encode: {e}")))
}

/// Decodes a container file with its own (writer) schema.
/// The user metadata of an Avro container file's header.
pub fn read_metadata(bytes: &[u8]) -> Result<std::collections::HashMap<String, Vec<u8>>> {
    let reader = Reader::new(bytes).map_err(read_error)?;
    Ok(reader.user_metadata().clone())
}

pub fn read_container(bytes: &[u8]) -> Result<(Schema, Vec<Value>)> {
    let reader = Reader::new(bytes).map_err(read_error)?;
    let schema = reader.writer_schema().clone();
    let records = reader
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(read_error)?;
    Ok((schema, records))
}

/// [`read_container`]'s records, the container's writer schema parsed once per plugin
/// instance ([`parse_schema_once`]): for containers a plugin decodes again and again with the
/// same schema (a Paimon write result per split), whose schema parse (names validated with
/// regular expressions) cost more than the rest of decoding a small one. Reads the object
/// container format of the Avro specification: magic, header map, sync marker, then blocks
/// of (count, size, data, marker).
pub fn read_container_records(bytes: &[u8]) -> Result<Vec<Value>> {
    let corrupt = |what: &str| Error::corrupt(format!("not an Avro container file: {what}"));
    let mut rest = bytes
        .strip_prefix(b"Obj\x01".as_slice())
        .ok_or_else(|| corrupt("no magic"))?;
    let Value::Map(header) =
        from_avro_datum(&Schema::map(Schema::Bytes), &mut rest, None).map_err(read_error)?
    else {
        return Err(corrupt("no header"));
    };
    let text = |key: &str| match header.get(key) {
        Some(Value::Bytes(b)) => std::str::from_utf8(b)
            .map(Some)
            .map_err(|_| corrupt(&format!("{key} is not UTF-8"))),
        Some(_) => Err(corrupt(&format!("{key} is not bytes"))),
        None => Ok(None),
    };
    let schema = parse_schema_once(text("avro.schema")?.ok_or_else(|| corrupt("no schema"))?)?;
    let codec = match text("avro.codec")? {
        None => Codec::Null,
        Some(name) => name
            .parse::<Codec>()
            .map_err(|_| read_error(Details::CodecNotSupported(name.to_string()).into()))?,
    };
    let marker: [u8; 16] = rest
        .get(..16)
        .and_then(|m| m.try_into().ok())
        .ok_or_else(|| corrupt("no sync marker"))?;
    rest = &rest[16..];
    let long = |rest: &mut &[u8]| match from_avro_datum(&Schema::Long, rest, None) {
        Ok(Value::Long(n)) => usize::try_from(n).map_err(|_| corrupt("a negative length")),
        Ok(_) => Err(corrupt("a length is not a long")),
        Err(e) => Err(read_error(e)),
    };
    let mut records = Vec::new();
    while !rest.is_empty() {
        let count = long(&mut rest)?;
        let size = long(&mut rest)?;
        if size.checked_add(16).is_none_or(|end| rest.len() < end)
            || rest[size..size + 16] != marker
        {
            return Err(corrupt("a block is truncated or its marker differs"));
        }
        let mut block = rest[..size].to_vec();
        rest = &rest[size + 16..];
        codec.decompress(&mut block).map_err(read_error)?;
        let mut data = block.as_slice();
        for _ in 0..count {
            records.push(from_avro_datum(&schema, &mut data, None).map_err(read_error)?);
        }
    }
    Ok(records)
}

/// Typed access to decoded Avro values, looking record fields up by name (readers must not
/// depend on field order: other writers may order or extend records differently).
pub mod access {
    use super::Value;
    use crate::error::{Error, Result};

    /// The value of field `name` of a record (`Value::Null` when absent).
    pub fn field<'a>(record: &'a Value, name: &str) -> Result<&'a Value> {
        match record {
            Value::Record(fields) => Ok(fields
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v)
                .unwrap_or(&Value::Null)),
            other => Err(Error::corrupt(format!(
                "expected an Avro record, got {other:?}"
            ))),
        }
    }

    /// Unwraps a union to its branch value.
    pub fn unwrap_union(v: &Value) -> &Value {
        match v {
            Value::Union(_, inner) => inner,
            other => other,
        }
    }

    /// `None` for null (or a null union branch).
    pub fn opt(v: &Value) -> Option<&Value> {
        match unwrap_union(v) {
            Value::Null => None,
            other => Some(other),
        }
    }

    fn bad(what: &str, v: &Value) -> Error {
        Error::corrupt(format!("expected {what}, got {v:?}"))
    }

    /// An `int` (or any integer-like logical type) as i64.
    pub fn as_i64(v: &Value) -> Result<i64> {
        match unwrap_union(v) {
            Value::Int(i) | Value::Date(i) | Value::TimeMillis(i) => Ok(*i as i64),
            Value::Long(l)
            | Value::TimestampMillis(l)
            | Value::TimestampMicros(l)
            | Value::LocalTimestampMillis(l)
            | Value::LocalTimestampMicros(l)
            | Value::TimeMicros(l) => Ok(*l),
            other => Err(bad("an integer", other)),
        }
    }

    /// A string.
    pub fn as_str(v: &Value) -> Result<&str> {
        match unwrap_union(v) {
            Value::String(s) => Ok(s),
            other => Err(bad("a string", other)),
        }
    }

    /// Bytes.
    pub fn as_bytes(v: &Value) -> Result<&[u8]> {
        match unwrap_union(v) {
            Value::Bytes(b) | Value::Fixed(_, b) => Ok(b),
            other => Err(bad("bytes", other)),
        }
    }

    /// An array's items.
    pub fn as_array(v: &Value) -> Result<&[Value]> {
        match unwrap_union(v) {
            Value::Array(a) => Ok(a),
            other => Err(bad("an array", other)),
        }
    }

    /// Field `name` as i64.
    pub fn i64_field(record: &Value, name: &str) -> Result<i64> {
        as_i64(field(record, name)?).map_err(|e| e.context(name))
    }
    /// Field `name` as an optional i64.
    pub fn opt_i64_field(record: &Value, name: &str) -> Result<Option<i64>> {
        opt(field(record, name)?)
            .map(as_i64)
            .transpose()
            .map_err(|e| e.context(name))
    }
    /// Field `name` as a string.
    pub fn str_field<'a>(record: &'a Value, name: &str) -> Result<&'a str> {
        as_str(field(record, name)?).map_err(|e| e.context(name))
    }
    /// Field `name` as bytes.
    pub fn bytes_field<'a>(record: &'a Value, name: &str) -> Result<&'a [u8]> {
        as_bytes(field(record, name)?).map_err(|e| e.context(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Containers of several blocks in every codec read as the crate's own reader reads them;
    /// truncated or foreign bytes are refused, not read past.
    #[test]
    fn containers_read_with_a_schema_parsed_once_as_the_crates_reader_reads_them() {
        let schema = parse_schema(
            r#"{"type":"record","name":"e","fields":[{"name":"a","type":"long"},{"name":"s","type":["null","string"]}]}"#,
        )
        .unwrap();
        let record = |i: i64| {
            Value::Record(vec![
                ("a".into(), Value::Long(i)),
                (
                    "s".into(),
                    Value::Union(1, Box::new(Value::String(format!("v{i}")))),
                ),
            ])
        };
        for codec in [
            AvroCodec::Null,
            AvroCodec::Deflate,
            AvroCodec::Snappy,
            AvroCodec::Zstandard { level: 3 },
            AvroCodec::Bzip2,
        ] {
            // Blocks of ~16 KiB: several of them.
            let mut writer = Writer::with_codec(&schema, Vec::new(), codec.codec());
            for i in 0..5000 {
                writer.append(record(i)).unwrap();
                if i % 700 == 0 {
                    writer.flush().unwrap();
                }
            }
            let bytes = writer.into_inner().unwrap();
            let (_, expected) = read_container(&bytes).unwrap();
            assert_eq!(expected.len(), 5000);
            assert_eq!(
                read_container_records(&bytes).unwrap(),
                expected,
                "{codec:?}"
            );
            for cut in [bytes.len() - 1, bytes.len() - 17, 10] {
                assert!(
                    read_container_records(&bytes[..cut]).is_err(),
                    "{codec:?} cut at {cut}"
                );
            }
        }
        let empty = write_container(&schema, [], AvroCodec::Deflate).unwrap();
        assert!(read_container_records(&empty).unwrap().is_empty());
        assert!(read_container_records(b"garbage").is_err());
    }

    #[test]
    fn a_schema_parsed_once_is_shared_and_each_text_is_its_own() {
        let record = |name: &str| {
            format!(
                r#"{{"type":"record","name":"{name}","fields":[{{"name":"a","type":"long"}}]}}"#
            )
        };
        let first = parse_schema_once(&record("r")).unwrap();
        assert!(Rc::ptr_eq(
            &first,
            &parse_schema_once(&record("r")).unwrap()
        ));
        let other = parse_schema_once(&record("s")).unwrap();
        assert_eq!(
            other.canonical_form(),
            parse_schema(&record("s")).unwrap().canonical_form()
        );
        assert!(!Rc::ptr_eq(&first, &other));
        // Only the latest are kept; an older one is parsed again.
        for i in 0..PARSED_SCHEMAS {
            parse_schema_once(&record(&format!("n{i}"))).unwrap();
        }
        assert!(!Rc::ptr_eq(
            &first,
            &parse_schema_once(&record("r")).unwrap()
        ));
        assert!(parse_schema_once("{").is_err());
    }

    #[test]
    fn round_trips_with_every_codec() {
        let schema = parse_schema(
            r#"{"type":"record","name":"r","fields":[{"name":"a","type":"long"},
                {"name":"b","type":["null","string"],"default":null}]}"#,
        )
        .unwrap();
        for codec in [
            AvroCodec::Null,
            AvroCodec::Deflate,
            AvroCodec::Snappy,
            AvroCodec::Zstandard { level: 1 },
            AvroCodec::Bzip2,
        ] {
            let recs = vec![Value::Record(vec![
                ("a".into(), Value::Long(7)),
                (
                    "b".into(),
                    Value::Union(1, Box::new(Value::String("x".into()))),
                ),
            ])];
            let bytes = write_container(&schema, recs.clone(), codec).unwrap();
            let (s, back) = read_container(&bytes).unwrap();
            assert_eq!(s.canonical_form(), schema.canonical_form());
            assert_eq!(back, recs);
            assert_eq!(access::i64_field(&back[0], "a").unwrap(), 7);
            assert_eq!(access::str_field(&back[0], "b").unwrap(), "x");
            assert_eq!(access::opt_i64_field(&back[0], "missing").unwrap(), None);
            let with_meta = write_container_with_metadata(
                &schema,
                recs.clone(),
                codec,
                &[("format-version", "2".to_string())],
            )
            .unwrap();
            assert_eq!(read_container(&with_meta).unwrap().1, recs);
            assert_eq!(read_metadata(&with_meta).unwrap()["format-version"], b"2");
            let empty = write_container(&schema, Vec::new(), codec).unwrap();
            assert!(read_container(&empty).unwrap().1.is_empty());
        }
    }

    #[test]
    fn codec_names_are_parsed_as_java_writers_spell_them() {
        let opt = "manifest.compression";
        for (name, codec) in [
            ("null", AvroCodec::Null),
            ("deflate", AvroCodec::Deflate),
            ("snappy", AvroCodec::Snappy),
            ("zstd", AvroCodec::Zstandard { level: 1 }),
            ("ZSTANDARD", AvroCodec::Zstandard { level: 1 }),
            ("bzip2", AvroCodec::Bzip2),
        ] {
            assert_eq!(AvroCodec::parse(name, opt).unwrap(), codec, "{name}");
        }
        let e = AvroCodec::parse("xz", opt).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Unsupported);
        assert!(e.message().contains("manifest.compression"), "{e}");
    }

    #[test]
    fn a_file_in_a_codec_this_build_lacks_is_unsupported_not_corrupt() {
        let schema =
            parse_schema(r#"{"type":"record","name":"r","fields":[{"name":"a","type":"long"}]}"#)
                .unwrap();
        let recs = vec![Value::Record(vec![("a".into(), Value::Long(1))])];
        let bytes = write_container(&schema, recs, AvroCodec::Null).unwrap();
        // The header's "avro.codec" -> "null" (a 4-byte Avro string: length byte 0x08) becomes
        // "xz" (length byte 0x04): what Java Avro writes with the xz codec.
        let at = bytes.windows(5).position(|w| w == b"\x08null").unwrap();
        let mut xz = bytes[..at].to_vec();
        xz.extend_from_slice(b"\x04xz");
        xz.extend_from_slice(&bytes[at + 5..]);
        let e = read_container(&xz).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Unsupported, "{e}");
        assert!(e.message().contains("xz"), "{e}");
        assert_eq!(
            read_metadata(&xz).unwrap_err().kind(),
            crate::ErrorKind::Unsupported
        );
        // Truncated data is still corrupt.
        let e = read_container(&bytes[..bytes.len() - 3]).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Corrupt, "{e}");
    }
}
