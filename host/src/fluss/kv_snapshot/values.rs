//! A KV snapshot's values as Arrow batches of the table's rows.
//!
//! Each value Fluss keeps for a key is its row's schema id (2 bytes, little-endian: Java's
//! `ValueEncoder`) and the row in the table's KV format (`table.kv.format`, CompactedRow by
//! default; Java's `CompactedRowWriter`). Rows are decoded with fluss-rs's own decoder and
//! appended to Arrow columns with its batch builder, a bounded number of rows per batch.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::RecordBatch;
use fluss::metadata::{RowType, Schema};
use fluss::record::RowAppendRecordBatchBuilder;
use fluss::row::field_getter::FieldGetter;
use fluss::row::{CompactedRowDecoder, Datum, GenericRow, RowDecoder};

use crate::error::{Error, ErrorKind, Result};

/// Decodes values written with any schema of the table into batches of its current one.
pub struct ValueDecoder {
    schema_id: i16,
    row_type: RowType,
    decoder: CompactedRowDecoder,
    /// Every earlier schema the table had, by id: rows written with it are mapped onto the
    /// current columns by column id (Java's `SchemaUtil.getIndexMapping`).
    earlier: HashMap<i16, Earlier>,
}

/// An earlier schema: its decoder, and for each current column the getter of the same column
/// (by id) in it, `None` for a column added since (null in those rows).
struct Earlier {
    decoder: CompactedRowDecoder,
    getters: Vec<Option<FieldGetter>>,
}

fn fluss(what: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Fluss, format!("KV snapshot value: {what}"))
}

impl ValueDecoder {
    /// A decoder of the table's `current` schema `schema_id`, and of `earlier` schemas by id.
    pub fn new(
        schema_id: i16,
        current: &Schema,
        earlier: impl IntoIterator<Item = (i16, Schema)>,
    ) -> Result<ValueDecoder> {
        let row_type = current.row_type().clone();
        let mut mapped = HashMap::new();
        for (id, old) in earlier {
            if id == schema_id {
                continue;
            }
            let getters = current
                .columns()
                .iter()
                .map(|c| {
                    let Some((pos, col)) = old
                        .columns()
                        .iter()
                        .enumerate()
                        .find(|(_, o)| o.id() == c.id())
                    else {
                        return Ok(None);
                    };
                    // Fluss adds columns; a column whose type changed is not mapped.
                    if col.data_type().as_non_nullable() != c.data_type().as_non_nullable() {
                        return Err(Error::new(
                            ErrorKind::Unsupported,
                            format!(
                                "column {} is {} in schema {id} and {} now: KV snapshot rows of schema {id} cannot be read as the table's",
                                c.name(),
                                col.data_type(),
                                c.data_type()
                            ),
                        ));
                    }
                    Ok(Some(FieldGetter::create(col.data_type(), pos)))
                })
                .collect::<Result<Vec<_>>>()?;
            mapped.insert(
                id,
                Earlier {
                    decoder: CompactedRowDecoder::new(old.row_type().clone()),
                    getters,
                },
            );
        }
        Ok(ValueDecoder {
            schema_id,
            decoder: CompactedRowDecoder::new(row_type.clone()),
            row_type,
            earlier: mapped,
        })
    }

    /// One batch of the `values` (each a whole KV value). fluss-rs's row decoder trusts the
    /// lengths a row states (it panics past the row's end): a row it cannot read is one error
    /// naming the snapshot, not a crashed thread.
    pub fn batch<'a>(&self, values: impl IntoIterator<Item = &'a [u8]>) -> Result<RecordBatch> {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.decode_batch(values)))
            .unwrap_or_else(|_| Err(fluss("a row that is not a valid Fluss row")))
    }

    fn decode_batch<'a>(&self, values: impl IntoIterator<Item = &'a [u8]>) -> Result<RecordBatch> {
        let mut builder = RowAppendRecordBatchBuilder::new(&self.row_type).map_err(fluss)?;
        for value in values {
            let (id, row) = value
                .split_first_chunk::<2>()
                .ok_or_else(|| fluss("shorter than its schema id"))?;
            let id = i16::from_le_bytes(*id);
            if id == self.schema_id {
                builder.append(&self.decoder.decode(row)).map_err(fluss)?;
                continue;
            }
            let Some(earlier) = self.earlier.get(&id) else {
                return Err(fluss(format!(
                    "a row written with schema {id}, which the table does not have"
                )));
            };
            let old = earlier.decoder.decode(row);
            let mut mapped = GenericRow::new(earlier.getters.len());
            for (pos, getter) in earlier.getters.iter().enumerate() {
                let datum = match getter {
                    Some(g) => g.get_field(&old).map_err(fluss)?,
                    None => Datum::Null,
                };
                mapped.set_field(pos, datum);
            }
            builder.append(&mapped).map_err(fluss)?;
        }
        builder
            .build_arrow_record_batch()
            .map(Arc::unwrap_or_clone)
            .map_err(fluss)
    }
}

#[cfg(test)]
mod tests {
    use arrow::array::{Array, Int32Array, Int64Array, StringArray};
    use fluss::metadata::DataTypes;
    use fluss::row::binary::BinaryWriter;
    use fluss::row::compacted::CompactedRowWriter;

    use super::*;

    /// `(id int, name string, amount bigint)`, or without `amount` (schema 0, before it was
    /// added).
    fn schema(with_amount: bool) -> Schema {
        let b = Schema::builder()
            .column("id", DataTypes::int())
            .column("name", DataTypes::string());
        let b = if with_amount {
            b.column("amount", DataTypes::bigint())
        } else {
            b
        };
        b.build().unwrap()
    }

    fn value(schema_id: i16, id: i32, name: Option<&str>, amount: Option<i64>) -> Vec<u8> {
        let mut w = CompactedRowWriter::new(if amount.is_some() { 3 } else { 2 });
        w.write_int(id);
        match name {
            Some(n) => w.write_string(n),
            None => w.set_null_at(1),
        }
        if let Some(a) = amount {
            w.write_long(a);
        }
        let mut out = schema_id.to_le_bytes().to_vec();
        out.extend_from_slice(&w.to_bytes());
        out
    }

    fn decoder() -> ValueDecoder {
        ValueDecoder::new(1, &schema(true), [(0, schema(false)), (1, schema(true))]).unwrap()
    }

    #[test]
    fn values_of_every_schema_become_the_tables_rows() {
        let values = [
            value(1, 7, Some("seven"), Some(-70)),
            value(1, 8, None, Some(1 << 40)),
            // Written before `amount` was added: null there.
            value(0, 9, Some("nine"), None),
        ];
        let b = decoder().batch(values.iter().map(Vec::as_slice)).unwrap();
        assert_eq!(b.num_rows(), 3);
        let ids = b.column(0).as_any().downcast_ref::<Int32Array>().unwrap();
        let names = b.column(1).as_any().downcast_ref::<StringArray>().unwrap();
        let amounts = b.column(2).as_any().downcast_ref::<Int64Array>().unwrap();
        assert_eq!((ids.value(0), ids.value(1), ids.value(2)), (7, 8, 9));
        assert_eq!((names.value(0), names.value(2)), ("seven", "nine"));
        assert!(names.is_null(1));
        assert_eq!((amounts.value(0), amounts.value(1)), (-70, 1 << 40));
        assert!(amounts.is_null(2));
    }

    #[test]
    fn an_unknown_schema_or_a_short_value_is_refused() {
        let other = value(5, 1, Some("a"), Some(1));
        let e = decoder().batch([other.as_slice()]).unwrap_err();
        assert!(
            e.message()
                .contains("schema 5, which the table does not have"),
            "{e}"
        );
        let e = decoder().batch([&[1u8][..]]).unwrap_err();
        assert!(e.message().contains("shorter than its schema id"), "{e}");
        // Rows cut short anywhere: one error each, never a panic.
        let whole = value(1, 7, Some("a name of some length"), Some(1));
        for len in 2..whole.len() {
            let e = decoder().batch([&whole[..len]]).unwrap_err();
            assert!(e.message().starts_with("KV snapshot value: "), "{len}: {e}");
        }
    }
}
