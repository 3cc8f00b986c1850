//! Apache Thrift's binary protocol (strict messages, unframed), as a Hive Metastore speaks it:
//! just enough to call a method and read its answer as a tree of values.
//!
//! # Why a tree, and why by hand
//!
//! A Hive Metastore's `alter_table` replaces the whole `Table`: a commit must send back every
//! field the metastore answered (columns, storage descriptor, privileges, fields newer Hive
//! versions add) with only the pointer parameters changed. Generated structs drop the fields
//! they do not know; a tree of the values read keeps them all, in order, and writes them back
//! byte for byte. The crates that speak Thrift either generate structs (`thrift`, `volo-thrift`,
//! `pilota`) or are synchronous over `std::io`, and none gives such a tree; the binary protocol
//! itself is eight primitives, written out here.
//!
//! # Bounds
//!
//! An answer is decoded from the bytes read so far: [`Decoded::Incomplete`] asks for more, so
//! the caller reads under its own byte bound and deadline. A container's size is checked
//! against the bytes left before anything is allocated for it, and nesting is bounded
//! ([`MAX_DEPTH`]).

use std::fmt;

/// Deepest nesting of structs and containers read. A `Table` nests about 6 levels deep.
pub const MAX_DEPTH: usize = 64;

const VERSION_1: u32 = 0x8001_0000;
const VERSION_MASK: u32 = 0xffff_0000;

/// The type of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageType {
    Call = 1,
    Reply = 2,
    Exception = 3,
}

/// Field and element type codes of the binary protocol.
pub mod ttype {
    pub const STOP: u8 = 0;
    pub const BOOL: u8 = 2;
    pub const BYTE: u8 = 3;
    pub const DOUBLE: u8 = 4;
    pub const I16: u8 = 6;
    pub const I32: u8 = 8;
    pub const I64: u8 = 10;
    pub const STRING: u8 = 11;
    pub const STRUCT: u8 = 12;
    pub const MAP: u8 = 13;
    pub const SET: u8 = 14;
    pub const LIST: u8 = 15;
}

/// One value, as read (strings as their bytes: Thrift's `string` and `binary` are one type on
/// the wire).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Bool(bool),
    Byte(i8),
    Double(f64),
    I16(i16),
    I32(i32),
    I64(i64),
    Binary(Vec<u8>),
    Struct(Struct),
    Map {
        key: u8,
        value: u8,
        entries: Vec<(Value, Value)>,
    },
    Set {
        element: u8,
        items: Vec<Value>,
    },
    List {
        element: u8,
        items: Vec<Value>,
    },
}

impl Value {
    /// A string value.
    pub fn string(s: &str) -> Value {
        Value::Binary(s.as_bytes().to_vec())
    }

    /// The type code this value is written with.
    pub fn ttype(&self) -> u8 {
        match self {
            Value::Bool(_) => ttype::BOOL,
            Value::Byte(_) => ttype::BYTE,
            Value::Double(_) => ttype::DOUBLE,
            Value::I16(_) => ttype::I16,
            Value::I32(_) => ttype::I32,
            Value::I64(_) => ttype::I64,
            Value::Binary(_) => ttype::STRING,
            Value::Struct(_) => ttype::STRUCT,
            Value::Map { .. } => ttype::MAP,
            Value::Set { .. } => ttype::SET,
            Value::List { .. } => ttype::LIST,
        }
    }

    /// The value as UTF-8 text, if it is a string that is.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Binary(b) => std::str::from_utf8(b).ok(),
            _ => None,
        }
    }

    pub fn as_struct(&self) -> Option<&Struct> {
        match self {
            Value::Struct(s) => Some(s),
            _ => None,
        }
    }
}

/// A struct: its fields in the order read (or to be written).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Struct {
    pub fields: Vec<(i16, Value)>,
}

impl Struct {
    pub fn new() -> Struct {
        Struct::default()
    }

    /// Adds field `id` (builder style).
    pub fn with(mut self, id: i16, value: Value) -> Struct {
        self.fields.push((id, value));
        self
    }

    pub fn get(&self, id: i16) -> Option<&Value> {
        self.fields.iter().find(|(i, _)| *i == id).map(|(_, v)| v)
    }

    pub fn get_mut(&mut self, id: i16) -> Option<&mut Value> {
        self.fields
            .iter_mut()
            .find(|(i, _)| *i == id)
            .map(|(_, v)| v)
    }

    /// The string field `id`.
    pub fn str(&self, id: i16) -> Option<&str> {
        self.get(id).and_then(Value::as_str)
    }

    /// The `map<string,string>` field `id`, as (key, value) pairs in order; entries that are
    /// not UTF-8 strings are left out.
    pub fn string_map(&self, id: i16) -> Vec<(&str, &str)> {
        match self.get(id) {
            Some(Value::Map { entries, .. }) => entries
                .iter()
                .filter_map(|(k, v)| Some((k.as_str()?, v.as_str()?)))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Sets `key` to `value` in the `map<string,string>` field `id` (created if absent),
    /// replacing an entry with that key in place.
    pub fn set_in_string_map(&mut self, id: i16, key: &str, value: &str) {
        if !matches!(
            self.get(id),
            Some(Value::Map {
                key: ttype::STRING,
                value: ttype::STRING,
                ..
            })
        ) {
            self.fields.retain(|(i, _)| *i != id);
            self.fields.push((
                id,
                Value::Map {
                    key: ttype::STRING,
                    value: ttype::STRING,
                    entries: Vec::new(),
                },
            ));
        }
        if let Some(Value::Map { entries, .. }) = self.get_mut(id) {
            match entries.iter_mut().find(|(k, _)| k.as_str() == Some(key)) {
                Some((_, v)) => *v = Value::string(value),
                None => entries.push((Value::string(key), Value::string(value))),
            }
        }
    }
}

/// A message header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageHead {
    pub name: String,
    pub kind: u8,
    pub seq_id: i32,
}

/// Why bytes could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// More bytes are needed.
    Incomplete,
    /// The bytes are not what the protocol allows.
    Invalid(String),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Incomplete => f.write_str("the message ends early"),
            DecodeError::Invalid(why) => f.write_str(why),
        }
    }
}

/// The outcome of decoding a whole message.
pub type Decoded = std::result::Result<(MessageHead, Struct), DecodeError>;

// ---- writing ------------------------------------------------------------------------------

/// Writes a message: its header and its one struct (a call's arguments).
pub fn write_message(out: &mut Vec<u8>, name: &str, kind: MessageType, seq_id: i32, body: &Struct) {
    out.extend_from_slice(&(VERSION_1 | kind as u32).to_be_bytes());
    write_binary(out, name.as_bytes());
    out.extend_from_slice(&seq_id.to_be_bytes());
    write_struct(out, body);
}

fn write_binary(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
    out.extend_from_slice(bytes);
}

fn write_struct(out: &mut Vec<u8>, s: &Struct) {
    for (id, value) in &s.fields {
        out.push(value.ttype());
        out.extend_from_slice(&id.to_be_bytes());
        write_value(out, value);
    }
    out.push(ttype::STOP);
}

fn write_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Bool(b) => out.push(u8::from(*b)),
        Value::Byte(b) => out.push(*b as u8),
        Value::Double(d) => out.extend_from_slice(&d.to_bits().to_be_bytes()),
        Value::I16(v) => out.extend_from_slice(&v.to_be_bytes()),
        Value::I32(v) => out.extend_from_slice(&v.to_be_bytes()),
        Value::I64(v) => out.extend_from_slice(&v.to_be_bytes()),
        Value::Binary(b) => write_binary(out, b),
        Value::Struct(s) => write_struct(out, s),
        Value::Map {
            key,
            value,
            entries,
        } => {
            out.push(*key);
            out.push(*value);
            out.extend_from_slice(&(entries.len() as i32).to_be_bytes());
            for (k, v) in entries {
                write_value(out, k);
                write_value(out, v);
            }
        }
        Value::Set { element, items } | Value::List { element, items } => {
            out.push(*element);
            out.extend_from_slice(&(items.len() as i32).to_be_bytes());
            for item in items {
                write_value(out, item);
            }
        }
    }
}

// ---- reading ------------------------------------------------------------------------------

/// Decodes one whole message from `bytes` (strict binary protocol).
pub fn read_message(bytes: &[u8]) -> Decoded {
    let mut r = Reader { bytes, at: 0 };
    let version = r.i32()? as u32;
    if version & VERSION_MASK != VERSION_1 {
        return Err(DecodeError::Invalid(format!(
            "not a Thrift binary-protocol message (version word {version:#010x})"
        )));
    }
    let kind = (version & 0xff) as u8;
    let name = String::from_utf8_lossy(&r.binary()?).into_owned();
    let seq_id = r.i32()?;
    let body = r.structure(0)?;
    Ok((MessageHead { name, kind, seq_id }, body))
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> std::result::Result<&[u8], DecodeError> {
        let end = self.at.checked_add(n).ok_or(DecodeError::Incomplete)?;
        let slice = self
            .bytes
            .get(self.at..end)
            .ok_or(DecodeError::Incomplete)?;
        self.at = end;
        Ok(slice)
    }

    fn left(&self) -> usize {
        self.bytes.len() - self.at
    }

    fn byte(&mut self) -> std::result::Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }

    fn i16(&mut self) -> std::result::Result<i16, DecodeError> {
        Ok(i16::from_be_bytes(
            self.take(2)?.try_into().unwrap_or([0; 2]),
        ))
    }

    fn i32(&mut self) -> std::result::Result<i32, DecodeError> {
        Ok(i32::from_be_bytes(
            self.take(4)?.try_into().unwrap_or([0; 4]),
        ))
    }

    fn i64(&mut self) -> std::result::Result<i64, DecodeError> {
        Ok(i64::from_be_bytes(
            self.take(8)?.try_into().unwrap_or([0; 8]),
        ))
    }

    /// A length or count: negative is invalid; one larger than the bytes left can only be
    /// completed by more bytes, which the caller's byte bound limits.
    fn size(&mut self, what: &str) -> std::result::Result<usize, DecodeError> {
        let n = self.i32()?;
        usize::try_from(n)
            .map_err(|_| DecodeError::Invalid(format!("a negative {what} size ({n})")))
    }

    fn binary(&mut self) -> std::result::Result<Vec<u8>, DecodeError> {
        let n = self.size("string")?;
        Ok(self.take(n)?.to_vec())
    }

    fn structure(&mut self, depth: usize) -> std::result::Result<Struct, DecodeError> {
        if depth > MAX_DEPTH {
            return Err(DecodeError::Invalid(format!(
                "values nest deeper than {MAX_DEPTH} levels"
            )));
        }
        let mut s = Struct::new();
        loop {
            let t = self.byte()?;
            if t == ttype::STOP {
                return Ok(s);
            }
            let id = self.i16()?;
            let value = self.value(t, depth + 1)?;
            s.fields.push((id, value));
        }
    }

    /// Elements of a container: each takes at least one byte, so a count beyond the bytes
    /// left is only completed by more bytes (never allocated for up front).
    fn elements(&mut self, what: &str) -> std::result::Result<usize, DecodeError> {
        let n = self.size(what)?;
        if n > self.left() {
            return Err(DecodeError::Incomplete);
        }
        Ok(n)
    }

    fn value(&mut self, t: u8, depth: usize) -> std::result::Result<Value, DecodeError> {
        if depth > MAX_DEPTH {
            return Err(DecodeError::Invalid(format!(
                "values nest deeper than {MAX_DEPTH} levels"
            )));
        }
        Ok(match t {
            ttype::BOOL => Value::Bool(self.byte()? != 0),
            ttype::BYTE => Value::Byte(self.byte()? as i8),
            ttype::DOUBLE => Value::Double(f64::from_bits(self.i64()? as u64)),
            ttype::I16 => Value::I16(self.i16()?),
            ttype::I32 => Value::I32(self.i32()?),
            ttype::I64 => Value::I64(self.i64()?),
            ttype::STRING => Value::Binary(self.binary()?),
            ttype::STRUCT => Value::Struct(self.structure(depth)?),
            ttype::MAP => {
                let key = self.byte()?;
                let value = self.byte()?;
                let n = self.elements("map")?;
                let mut entries = Vec::with_capacity(n);
                for _ in 0..n {
                    let k = self.value(key, depth + 1)?;
                    let v = self.value(value, depth + 1)?;
                    entries.push((k, v));
                }
                Value::Map {
                    key,
                    value,
                    entries,
                }
            }
            ttype::SET | ttype::LIST => {
                let element = self.byte()?;
                let n = self.elements("list")?;
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.value(element, depth + 1)?);
                }
                if t == ttype::SET {
                    Value::Set { element, items }
                } else {
                    Value::List { element, items }
                }
            }
            other => {
                return Err(DecodeError::Invalid(format!(
                    "unknown Thrift type code {other}"
                )));
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Struct {
        Struct::new()
            .with(1, Value::string("t"))
            .with(4, Value::I32(7))
            .with(
                7,
                Value::Struct(Struct::new().with(2, Value::string("file:/w/t")).with(
                    1,
                    Value::List {
                        element: ttype::STRUCT,
                        items: vec![Value::Struct(Struct::new().with(1, Value::string("id")))],
                    },
                )),
            )
            .with(
                9,
                Value::Map {
                    key: ttype::STRING,
                    value: ttype::STRING,
                    entries: vec![(Value::string("a"), Value::string("b"))],
                },
            )
            .with(14, Value::Bool(true))
            .with(19, Value::I64(-3))
            .with(30, Value::Double(1.5))
            .with(
                31,
                Value::Set {
                    element: ttype::I16,
                    items: vec![Value::I16(2)],
                },
            )
            .with(32, Value::Byte(-1))
    }

    #[test]
    fn every_value_round_trips_byte_for_byte() {
        let body = sample();
        let mut bytes = Vec::new();
        write_message(&mut bytes, "get_table", MessageType::Reply, 42, &body);
        let (head, read) = read_message(&bytes).unwrap();
        assert_eq!(
            head,
            MessageHead {
                name: "get_table".into(),
                kind: MessageType::Reply as u8,
                seq_id: 42
            }
        );
        assert_eq!(read, body);
        let mut again = Vec::new();
        write_message(&mut again, "get_table", MessageType::Reply, 42, &read);
        assert_eq!(again, bytes);
    }

    #[test]
    fn a_short_message_asks_for_more_and_never_allocates_its_claimed_size() {
        let mut bytes = Vec::new();
        write_message(&mut bytes, "m", MessageType::Reply, 1, &sample());
        for cut in 0..bytes.len() {
            assert_eq!(
                read_message(&bytes[..cut]),
                Err(DecodeError::Incomplete),
                "{cut}"
            );
        }
        // A list claiming 2^31-1 elements with none behind it.
        let mut huge = Vec::new();
        huge.extend_from_slice(&(VERSION_1 | 2).to_be_bytes());
        write_binary(&mut huge, b"m");
        huge.extend_from_slice(&1i32.to_be_bytes());
        huge.push(ttype::LIST);
        huge.extend_from_slice(&0i16.to_be_bytes());
        huge.push(ttype::I64);
        huge.extend_from_slice(&i32::MAX.to_be_bytes());
        assert_eq!(read_message(&huge), Err(DecodeError::Incomplete));
    }

    #[test]
    fn hostile_answers_are_refused() {
        let mut deep = Vec::new();
        deep.extend_from_slice(&(VERSION_1 | 2).to_be_bytes());
        write_binary(&mut deep, b"m");
        deep.extend_from_slice(&1i32.to_be_bytes());
        for _ in 0..200 {
            deep.push(ttype::STRUCT);
            deep.extend_from_slice(&1i16.to_be_bytes());
        }
        assert!(matches!(read_message(&deep), Err(DecodeError::Invalid(_))));
        let mut negative = Vec::new();
        negative.extend_from_slice(&(VERSION_1 | 2).to_be_bytes());
        negative.extend_from_slice(&(-5i32).to_be_bytes());
        assert!(matches!(
            read_message(&negative),
            Err(DecodeError::Invalid(_))
        ));
        assert!(matches!(
            read_message(b"HTTP/1.1 400 Bad"),
            Err(DecodeError::Invalid(_))
        ));
    }

    #[test]
    fn string_maps_are_set_in_place() {
        let mut s = sample();
        s.set_in_string_map(9, "a", "c");
        s.set_in_string_map(9, "z", "y");
        assert_eq!(s.string_map(9), vec![("a", "c"), ("z", "y")]);
        let mut empty = Struct::new();
        empty.set_in_string_map(9, "k", "v");
        assert_eq!(empty.string_map(9), vec![("k", "v")]);
    }
}
