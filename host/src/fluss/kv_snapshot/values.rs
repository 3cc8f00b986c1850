//! A KV snapshot's values as Arrow batches of the table's rows.
//!
//! Each value Fluss keeps for a key is its row's schema id (2 bytes, little-endian: Java's
//! `ValueEncoder`) and the row in the table's KV format (`table.kv.format`, CompactedRow by
//! default; Java's `CompactedRowWriter`). Rows are decoded with fluss-rs's own decoder and
//! appended to Arrow columns with its batch builder, a bounded number of rows per batch.

use std::sync::Arc;

use arrow::array::RecordBatch;
use fluss::metadata::RowType;
use fluss::record::RowAppendRecordBatchBuilder;
use fluss::row::{CompactedRowDecoder, RowDecoder};

use crate::error::{Error, ErrorKind, Result};

/// Decodes values written with the table's schema `schema_id` into batches of `row_type`.
pub struct ValueDecoder {
    schema_id: i16,
    row_type: RowType,
    decoder: CompactedRowDecoder,
}

fn fluss(what: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Fluss, format!("KV snapshot value: {what}"))
}

impl ValueDecoder {
    pub fn new(schema_id: i16, row_type: RowType) -> ValueDecoder {
        ValueDecoder {
            schema_id,
            decoder: CompactedRowDecoder::new(row_type.clone()),
            row_type,
        }
    }

    /// One batch of the `values` (each a whole KV value).
    pub fn batch<'a>(&self, values: impl IntoIterator<Item = &'a [u8]>) -> Result<RecordBatch> {
        let mut builder = RowAppendRecordBatchBuilder::new(&self.row_type).map_err(fluss)?;
        for value in values {
            let (id, row) = value
                .split_first_chunk::<2>()
                .ok_or_else(|| fluss("shorter than its schema id"))?;
            let id = i16::from_le_bytes(*id);
            if id != self.schema_id {
                // Rows written before a column was added keep their schema: mapping their
                // columns by id onto the table's is not done yet.
                return Err(Error::new(
                    ErrorKind::Unsupported,
                    format!(
                        "a KV snapshot row written with schema {id} (the table's is {}): rows of an earlier schema are not read yet",
                        self.schema_id
                    ),
                ));
            }
            builder.append(&self.decoder.decode(row)).map_err(fluss)?;
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
    use fluss::metadata::{DataField, DataTypes};
    use fluss::row::binary::BinaryWriter;
    use fluss::row::compacted::CompactedRowWriter;

    use super::*;

    fn value(schema_id: i16, id: i32, name: Option<&str>, amount: i64) -> Vec<u8> {
        let mut w = CompactedRowWriter::new(3);
        w.write_int(id);
        match name {
            Some(n) => w.write_string(n),
            None => w.set_null_at(1),
        }
        w.write_long(amount);
        let mut out = schema_id.to_le_bytes().to_vec();
        out.extend_from_slice(&w.to_bytes());
        out
    }

    fn row_type() -> RowType {
        RowType::new(vec![
            DataField::new("id".to_string(), DataTypes::int(), None),
            DataField::new("name".to_string(), DataTypes::string(), None),
            DataField::new("amount".to_string(), DataTypes::bigint(), None),
        ])
    }

    #[test]
    fn values_become_the_tables_rows() {
        let d = ValueDecoder::new(1, row_type());
        let values = [value(1, 7, Some("seven"), -70), value(1, 8, None, 1 << 40)];
        let b = d.batch(values.iter().map(Vec::as_slice)).unwrap();
        assert_eq!(b.num_rows(), 2);
        let ids = b.column(0).as_any().downcast_ref::<Int32Array>().unwrap();
        let names = b.column(1).as_any().downcast_ref::<StringArray>().unwrap();
        let amounts = b.column(2).as_any().downcast_ref::<Int64Array>().unwrap();
        assert_eq!((ids.value(0), ids.value(1)), (7, 8));
        assert_eq!(names.value(0), "seven");
        assert!(names.is_null(1));
        assert_eq!((amounts.value(0), amounts.value(1)), (-70, 1 << 40));
    }

    #[test]
    fn a_row_of_another_schema_or_a_short_value_is_refused() {
        let d = ValueDecoder::new(1, row_type());
        let other = value(0, 1, Some("a"), 1);
        let e = d.batch([other.as_slice()]).unwrap_err();
        assert!(e.message().contains("written with schema 0"), "{e}");
        let e = d.batch([&[1u8][..]]).unwrap_err();
        assert!(e.message().contains("shorter than its schema id"), "{e}");
    }
}
