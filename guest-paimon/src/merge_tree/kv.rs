//! Paimon's key/value row layout, in which primary-key tables store their data and changelog
//! files (Paimon `KeyValue.schema`): the primary key without the partition keys as
//! `_KEY_<name>` columns (field id + `Integer.MAX_VALUE / 2`), `_SEQUENCE_NUMBER BIGINT`,
//! `_VALUE_KIND TINYINT` (the `RowKind`), then every table column. Readers merge files on the
//! key columns and take the latest record by sequence number.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, Int8Array, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use fluss_lake_guest_sdk::arrow_util::PARQUET_FIELD_ID_KEY;
use fluss_lake_guest_sdk::ipc::{ChangeType, DecodedBatch};
use fluss_lake_guest_sdk::stats::datum_at;
use fluss_lake_guest_sdk::{Error, Result};

use crate::binary_row::BinaryRowWriter;
use crate::schema::{TableLayout, TableSchema};
use crate::types::{PaimonType, datum_to_value};

/// Prefix of key columns (`SpecialFields.KEY_FIELD_PREFIX`).
pub const KEY_FIELD_PREFIX: &str = "_KEY_";
/// Offset of key field ids from their column's id (`SpecialFields.KEY_FIELD_ID_START`).
pub const KEY_FIELD_ID_START: i32 = i32::MAX / 2;
/// `SpecialFields.SEQUENCE_NUMBER`.
pub const SEQUENCE_NUMBER: &str = "_SEQUENCE_NUMBER";
/// Field id of [`SEQUENCE_NUMBER`].
pub const SEQUENCE_NUMBER_ID: i32 = i32::MAX - 1;
/// `SpecialFields.VALUE_KIND`.
pub const VALUE_KIND: &str = "_VALUE_KIND";
/// Field id of [`VALUE_KIND`].
pub const VALUE_KIND_ID: i32 = i32::MAX - 2;

/// Paimon `RowKind` byte values, as `_VALUE_KIND` stores them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i8)]
pub enum RowKind {
    /// `+I`
    Insert = 0,
    /// `-U`
    UpdateBefore = 1,
    /// `+U`
    UpdateAfter = 2,
    /// `-D`
    Delete = 3,
}

impl RowKind {
    /// Fluss's `PaimonConversions.toRowKind`: `+A` and `+I` insert, the others map one to one.
    pub fn of(change: ChangeType) -> RowKind {
        match change {
            ChangeType::AppendOnly | ChangeType::Insert => RowKind::Insert,
            ChangeType::UpdateBefore => RowKind::UpdateBefore,
            ChangeType::UpdateAfter => RowKind::UpdateAfter,
            ChangeType::Delete => RowKind::Delete,
        }
    }

    /// True for `-U` and `-D` (`RowKind.isRetract`): records that remove a key's row.
    pub fn is_retract(kind: i8) -> bool {
        kind == RowKind::UpdateBefore as i8 || kind == RowKind::Delete as i8
    }

    /// The row kinds of a decoded batch (no change types = every row `+A`).
    pub fn of_batch(batch: &DecodedBatch) -> Result<Vec<i8>> {
        (0..batch.num_rows())
            .map(|i| batch.change_type(i).map(|c| RowKind::of(c) as i8))
            .collect()
    }
}

/// The key/value layout of one primary-key table.
#[derive(Debug, Clone)]
pub struct KvLayout {
    /// Positions of the key columns among the table columns.
    key_columns: Vec<usize>,
    /// Types of the key columns.
    key_types: Vec<PaimonType>,
    /// Types of the table columns.
    value_types: Vec<PaimonType>,
    /// Names of every column of key/value files, in order.
    names: Vec<String>,
    /// The Arrow schema of key/value files.
    schema: SchemaRef,
}

impl KvLayout {
    /// The layout of a primary-key table whose rows have the Arrow schema `table_schema`
    /// (see [`crate::rows::table_file_schema`]).
    pub fn new(
        schema: &TableSchema,
        layout: &TableLayout,
        table_schema: &SchemaRef,
    ) -> Result<Self> {
        let trimmed: Vec<&String> = schema
            .primary_keys
            .iter()
            .filter(|k| !schema.partition_keys.contains(k))
            .collect();
        if trimmed.is_empty() {
            return Err(Error::invalid_input(
                "a primary-key table needs key columns besides the partition keys",
            ));
        }
        let mut key_columns = Vec::new();
        let mut key_types = Vec::new();
        let mut fields = Vec::new();
        for key in trimmed {
            let pos = layout
                .fields
                .iter()
                .position(|(name, _, _)| name == key)
                .ok_or_else(|| Error::corrupt(format!("primary key {key} is not a column")))?;
            let (_, ty, id) = &layout.fields[pos];
            let column = table_schema.field(pos);
            let mut metadata = column.metadata().clone();
            metadata.insert(
                PARQUET_FIELD_ID_KEY.to_string(),
                (id + KEY_FIELD_ID_START).to_string(),
            );
            fields.push(
                Field::new(
                    format!("{KEY_FIELD_PREFIX}{key}"),
                    column.data_type().clone(),
                    false,
                )
                .with_metadata(metadata),
            );
            key_columns.push(pos);
            key_types.push(ty.with_nullable(false));
        }
        let system = |name: &str, ty: DataType, id: i32| {
            Field::new(name, ty, false).with_metadata(
                [(PARQUET_FIELD_ID_KEY.to_string(), id.to_string())]
                    .into_iter()
                    .collect(),
            )
        };
        fields.push(system(SEQUENCE_NUMBER, DataType::Int64, SEQUENCE_NUMBER_ID));
        fields.push(system(VALUE_KIND, DataType::Int8, VALUE_KIND_ID));
        fields.extend(table_schema.fields().iter().map(|f| f.as_ref().clone()));
        let names = fields.iter().map(|f| f.name().clone()).collect();
        Ok(KvLayout {
            key_columns,
            key_types,
            value_types: layout.fields.iter().map(|(_, ty, _)| ty.clone()).collect(),
            names,
            schema: Arc::new(Schema::new(fields)),
        })
    }

    /// Number of key columns.
    pub fn num_keys(&self) -> usize {
        self.key_columns.len()
    }

    /// Types of the key columns.
    pub fn key_types(&self) -> &[PaimonType] {
        &self.key_types
    }

    /// Types of the table columns.
    pub fn value_types(&self) -> &[PaimonType] {
        &self.value_types
    }

    /// Column names of key/value files, in order.
    pub fn names(&self) -> Vec<&str> {
        self.names.iter().map(String::as_str).collect()
    }

    /// The Arrow schema of key/value files.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Positions of the key columns among the table columns.
    pub fn key_columns(&self) -> &[usize] {
        &self.key_columns
    }

    /// The schema of key/value rows' first columns, up to `_VALUE_KIND`: what a writer whose
    /// table columns stay in the host buffers (contract 0.3.9).
    pub fn key_schema(&self) -> SchemaRef {
        Arc::new(Schema::new(
            self.schema.fields()[..self.value_start()].to_vec(),
        ))
    }

    /// Position of `_SEQUENCE_NUMBER` in key/value rows.
    pub fn sequence_column(&self) -> usize {
        self.num_keys()
    }

    /// Position of `_VALUE_KIND` in key/value rows.
    pub fn kind_column(&self) -> usize {
        self.num_keys() + 1
    }

    /// Position of the first table column in key/value rows.
    pub fn value_start(&self) -> usize {
        self.num_keys() + 2
    }

    /// Wraps table rows into key/value rows: the key columns share the table columns' buffers,
    /// sequence numbers are `first_sequence..` in row order.
    pub fn wrap(
        &self,
        rows: &RecordBatch,
        first_sequence: i64,
        kinds: Vec<i8>,
    ) -> Result<RecordBatch> {
        let n = rows.num_rows();
        if kinds.len() != n {
            return Err(Error::internal("one row kind per row expected"));
        }
        let mut columns: Vec<ArrayRef> = self
            .key_columns
            .iter()
            .map(|&c| rows.column(c).clone())
            .collect();
        columns.push(Arc::new(Int64Array::from_iter_values(
            first_sequence..first_sequence + n as i64,
        )));
        columns.push(Arc::new(Int8Array::from(kinds)));
        columns.extend(rows.columns().iter().cloned());
        Ok(RecordBatch::try_new(self.schema.clone(), columns)?)
    }

    /// What a writer whose rows stay in the host buffers of each row: its key columns (in
    /// the file's types) and its row kind, without its sequence number, which follows from
    /// the row's place in the buffer ([`Self::with_sequences`]).
    pub fn buffered_keys(&self, keys: &RecordBatch, kinds: Vec<i8>) -> Result<RecordBatch> {
        let k = self.num_keys();
        if kinds.len() != keys.num_rows() || keys.num_columns() != k {
            return Err(Error::internal(
                "one row kind per row and the key columns expected",
            ));
        }
        let mut fields = self.schema.fields()[..k].to_vec();
        fields.push(self.schema.field(self.kind_column()).clone().into());
        let mut columns: Vec<ArrayRef> = keys.columns().to_vec();
        columns.push(Arc::new(Int8Array::from(kinds)));
        Ok(RecordBatch::try_new(
            Arc::new(Schema::new(fields)),
            columns,
        )?)
    }

    /// Key/value rows' first columns ([`Self::key_schema`]) of `buffered` (rows of
    /// [`Self::buffered_keys`]), with these sequence numbers.
    pub fn with_sequences(
        &self,
        buffered: &RecordBatch,
        sequences: impl IntoIterator<Item = i64>,
    ) -> Result<RecordBatch> {
        let k = self.num_keys();
        let sequences = Int64Array::from_iter_values(sequences);
        if sequences.len() != buffered.num_rows() || buffered.num_columns() != k + 1 {
            return Err(Error::internal(
                "one sequence number per row and buffered keys expected",
            ));
        }
        let mut columns: Vec<ArrayRef> = buffered.columns()[..k].to_vec();
        columns.push(Arc::new(sequences));
        columns.push(buffered.column(k).clone());
        Ok(RecordBatch::try_new(self.key_schema(), columns)?)
    }

    /// The serialized `BinaryRow` of the key of row `row` of a key/value batch (what
    /// `_MIN_KEY` / `_MAX_KEY` hold).
    pub fn key_row(&self, batch: &RecordBatch, row: usize) -> Result<Vec<u8>> {
        let mut w = BinaryRowWriter::new(self.num_keys());
        for (i, ty) in self.key_types.iter().enumerate() {
            let column: &dyn Array = batch.column(i).as_ref();
            let value = datum_at(column, row).and_then(|d| datum_to_value(&d, ty));
            if value.is_none() {
                return Err(Error::invalid_input(format!(
                    "primary key column {} is null",
                    self.names[i]
                )));
            }
            w.set(i, ty, value.as_ref())?;
        }
        Ok(w.finish_serialized())
    }
}

#[cfg(test)]
mod tests {
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int8Type;
    use arrow_array::{Int32Array, StringArray};
    use fluss_lake_guest_sdk::testing::pk_table;

    use super::*;
    use crate::binary_row::{BinaryRowReader, Value};
    use crate::rows::table_file_schema;
    use crate::schema::schema_for_fluss_table;

    #[test]
    fn keys_exclude_partition_keys_and_share_buffers() {
        let t = pk_table(
            "db",
            "t",
            &[
                ("region", "STRING", false),
                ("id", "INT", false),
                ("v", "STRING", true),
            ],
            &["region", "id"],
            2,
            &["region"],
        );
        let schema = schema_for_fluss_table(&t, true, 0).unwrap();
        let layout = TableLayout::of(&schema).unwrap();
        let table_schema = table_file_schema(&layout);
        let kv = KvLayout::new(&schema, &layout, &table_schema).unwrap();
        assert_eq!(
            kv.names()[..4],
            ["_KEY_id", "_SEQUENCE_NUMBER", "_VALUE_KIND", "region"]
        );
        let ids: Vec<_> = kv
            .schema()
            .fields()
            .iter()
            .map(|f| f.metadata()[PARQUET_FIELD_ID_KEY].clone())
            .collect();
        assert_eq!(ids[..4], ["1073741824", "2147483646", "2147483645", "0"]);
        assert!(!kv.schema().field(0).is_nullable());

        let rows = RecordBatch::try_new(
            table_schema.clone(),
            vec![
                Arc::new(StringArray::from(vec!["eu", "eu"])),
                Arc::new(Int32Array::from(vec![7, 8])),
                Arc::new(StringArray::from(vec![Some("x"), None])),
                Arc::new(Int32Array::from(vec![0, 0])),
                Arc::new(Int64Array::from(vec![10, 11])),
                fluss_lake_guest_sdk::convert::millis_column(
                    &[1, 2],
                    table_schema.field(5).data_type(),
                )
                .unwrap(),
            ],
        )
        .unwrap();
        let batch = kv.wrap(&rows, 100, vec![0, 3]).unwrap();
        assert_eq!(batch.column(1).as_ref(), &Int64Array::from(vec![100, 101]));
        assert_eq!(batch.column(2).as_primitive::<Int8Type>().value(1), 3);
        assert_eq!(
            batch.column(0).to_data().buffers()[0].as_ptr(),
            rows.column(1).to_data().buffers()[0].as_ptr()
        );
        let key = kv.key_row(&batch, 1).unwrap();
        let int = PaimonType::parse("INT NOT NULL").unwrap();
        assert_eq!(
            BinaryRowReader::new(&key).unwrap().get(0, &int).unwrap(),
            Some(Value::Int(8))
        );
        assert!(RowKind::is_retract(RowKind::Delete as i8));
        assert!(!RowKind::is_retract(RowKind::UpdateAfter as i8));
        assert_eq!(RowKind::of(ChangeType::AppendOnly), RowKind::Insert);
    }
}
