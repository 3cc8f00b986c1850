//! A data file's columns and where each takes its values from: a Fluss column (converted to
//! the file's type), nulls, or one of the system columns Fluss's lake plugins add
//! (`__bucket`, `__offset`, `__timestamp`, as Fluss's `FlussRecordAsPaimonRow` and its Iceberg
//! counterpart fill them).

use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, new_null_array};
use arrow_schema::{DataType, SchemaRef};

use crate::convert::{constant_i32, i64_column, millis_column, to_file_array};
use crate::error::{Error, Result};

/// Where one column of a data file takes its values from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnSource {
    /// The Fluss column at this position of the Fluss row.
    Fluss(usize),
    /// Nulls: a nullable lake column the Fluss table does not have.
    Null,
    /// `__bucket`: the Fluss bucket the rows were read from (INT).
    Bucket,
    /// `__offset`: each row's log offset (BIGINT).
    Offset,
    /// `__timestamp`: each row's commit timestamp, epoch millis as the column's timestamp type.
    Timestamp,
    /// The column at this position of the writer's computed rows (what a format computes itself: a
    /// sequence number, a row kind), converted to the file's type.
    Computed(usize),
}

/// The columns of a data file: its Arrow schema (the lake's names, types, nullability and
/// field ids) and one source per field.
#[derive(Debug, Clone, PartialEq)]
pub struct FileColumns {
    schema: SchemaRef,
    sources: Vec<ColumnSource>,
}

impl FileColumns {
    /// Checks that there is one source per field and that each system column has its type.
    pub fn new(schema: SchemaRef, sources: Vec<ColumnSource>) -> Result<FileColumns> {
        if schema.fields().len() != sources.len() {
            return Err(Error::invalid_input(format!(
                "{} file columns but {} column sources",
                schema.fields().len(),
                sources.len()
            )));
        }
        for (field, source) in schema.fields().iter().zip(&sources) {
            let ok = match source {
                ColumnSource::Bucket => field.data_type() == &DataType::Int32,
                ColumnSource::Offset => field.data_type() == &DataType::Int64,
                ColumnSource::Timestamp => matches!(field.data_type(), DataType::Timestamp(..)),
                ColumnSource::Null => field.is_nullable(),
                ColumnSource::Fluss(_) | ColumnSource::Computed(_) => true,
            };
            if !ok {
                return Err(Error::invalid_input(format!(
                    "file column {} ({}) cannot hold {source:?}",
                    field.name(),
                    field.data_type()
                )));
            }
        }
        Ok(FileColumns { schema, sources })
    }

    /// The file's schema.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The source of each field, in order.
    pub fn sources(&self) -> &[ColumnSource] {
        &self.sources
    }

    /// Whether a column takes the writer's computed rows ([`ColumnSource::Computed`]).
    pub fn has_computed(&self) -> bool {
        self.sources
            .iter()
            .any(|s| matches!(s, ColumnSource::Computed(_)))
    }

    /// The file rows of `batch` (Fluss's columns in schema order), whose rows have the given
    /// log offsets and commit timestamps and were read from Fluss bucket `bucket`.
    pub fn assemble(
        &self,
        batch: &RecordBatch,
        offsets: &[i64],
        timestamps: &[i64],
        bucket: i32,
    ) -> Result<RecordBatch> {
        self.assemble_with_computed(batch, offsets, timestamps, bucket, None)
    }

    /// As [`FileColumns::assemble`], with the writer's computed rows (one per row of `batch`) for
    /// the [`ColumnSource::Computed`] columns.
    pub fn assemble_with_computed(
        &self,
        batch: &RecordBatch,
        offsets: &[i64],
        timestamps: &[i64],
        bucket: i32,
        own: Option<&RecordBatch>,
    ) -> Result<RecordBatch> {
        let n = batch.num_rows();
        if let Some(own) = own
            && own.num_rows() != n
        {
            return Err(Error::invalid_input(format!(
                "{} computed rows for a batch of {n} rows",
                own.num_rows()
            )));
        }
        let system = |what: &str, len: usize| -> Result<()> {
            if len == n {
                Ok(())
            } else {
                Err(Error::invalid_input(format!(
                    "{len} {what} for a batch of {n} rows"
                )))
            }
        };
        let columns = self
            .schema
            .fields()
            .iter()
            .zip(&self.sources)
            .map(|(field, source)| -> Result<ArrayRef> {
                let target = field.data_type();
                Ok(match *source {
                    ColumnSource::Fluss(c) => {
                        let col = batch.columns().get(c).ok_or_else(|| {
                            Error::invalid_input(format!(
                                "batch has no column {c} ({})",
                                field.name()
                            ))
                        })?;
                        to_file_array(col, target, field.is_nullable(), field.name())?
                    }
                    ColumnSource::Null => new_null_array(target, n),
                    ColumnSource::Bucket => constant_i32(bucket, n),
                    ColumnSource::Offset => {
                        system("log offsets", offsets.len())?;
                        i64_column(offsets)
                    }
                    ColumnSource::Timestamp => {
                        system("timestamps", timestamps.len())?;
                        millis_column(timestamps, target)?
                    }
                    ColumnSource::Computed(c) => {
                        let col = own.and_then(|o| o.columns().get(c)).ok_or_else(|| {
                            Error::invalid_input(format!(
                                "no computed column {c} ({}) among the rows",
                                field.name()
                            ))
                        })?;
                        to_file_array(col, target, field.is_nullable(), field.name())?
                    }
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(RecordBatch::try_new(Arc::clone(&self.schema), columns)?)
    }
}

#[cfg(test)]
mod tests {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Int32Type, Int64Type, TimestampMicrosecondType};
    use arrow_array::{Int16Array, StringArray};
    use arrow_schema::{Field, Schema, TimeUnit};

    use super::*;

    #[test]
    fn system_columns_are_filled_and_fluss_columns_converted() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("n", DataType::Int32, true),
            Field::new("s", DataType::Utf8, true),
            Field::new("added", DataType::Utf8, true),
            Field::new("__bucket", DataType::Int32, false),
            Field::new("__offset", DataType::Int64, false),
            Field::new(
                "__timestamp",
                DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
                false,
            ),
        ]));
        let columns = FileColumns::new(
            schema.clone(),
            vec![
                ColumnSource::Fluss(0),
                ColumnSource::Fluss(1),
                ColumnSource::Null,
                ColumnSource::Bucket,
                ColumnSource::Offset,
                ColumnSource::Timestamp,
            ],
        )
        .unwrap();
        let fluss = RecordBatch::try_from_iter(vec![
            (
                "n",
                Arc::new(Int16Array::from(vec![Some(1), None])) as ArrayRef,
            ),
            ("s", Arc::new(StringArray::from(vec!["a", "b"])) as ArrayRef),
        ])
        .unwrap();
        let rows = columns.assemble(&fluss, &[7, 8], &[1, 2], 3).unwrap();
        assert_eq!(rows.schema(), schema);
        assert_eq!(rows.column(0).as_primitive::<Int32Type>().value(0), 1);
        assert_eq!(rows.column(2).null_count(), 2);
        assert_eq!(rows.column(3).as_primitive::<Int32Type>().value(1), 3);
        assert_eq!(rows.column(4).as_primitive::<Int64Type>().value(1), 8);
        assert_eq!(
            rows.column(5)
                .as_primitive::<TimestampMicrosecondType>()
                .value(1),
            2000
        );

        let e = columns.assemble(&fluss, &[7], &[1, 2], 3).unwrap_err();
        assert!(e.to_string().contains("1 log offsets"), "{e}");
        let short = FileColumns::new(schema.clone(), vec![ColumnSource::Fluss(5); 6]).unwrap();
        let e = short.assemble(&fluss, &[7, 8], &[1, 2], 3).unwrap_err();
        assert!(e.to_string().contains("no column 5"), "{e}");
        let e = FileColumns::new(schema, vec![ColumnSource::Offset; 6]).unwrap_err();
        assert!(e.to_string().contains("cannot hold Offset"), "{e}");
    }

    #[test]
    fn own_columns_come_from_the_writers_rows_one_per_row() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("_SEQUENCE_NUMBER", DataType::Int64, false),
            Field::new("s", DataType::Utf8, true),
        ]));
        let columns = FileColumns::new(
            schema.clone(),
            vec![ColumnSource::Computed(0), ColumnSource::Fluss(0)],
        )
        .unwrap();
        assert!(columns.has_computed());
        let fluss = RecordBatch::try_from_iter(vec![(
            "s",
            Arc::new(StringArray::from(vec!["a", "b"])) as ArrayRef,
        )])
        .unwrap();
        let own = RecordBatch::try_from_iter(vec![(
            "seq",
            Arc::new(arrow_array::Int64Array::from(vec![41, 42])) as ArrayRef,
        )])
        .unwrap();
        let rows = columns
            .assemble_with_computed(&fluss, &[], &[], 0, Some(&own))
            .unwrap();
        assert_eq!(
            rows.column(0).as_primitive::<Int64Type>().values(),
            &[41, 42]
        );

        let e = columns.assemble(&fluss, &[], &[], 0).unwrap_err();
        assert!(e.to_string().contains("no computed column 0"), "{e}");
        let e = columns
            .assemble_with_computed(&fluss, &[], &[], 0, Some(&own.slice(0, 1)))
            .unwrap_err();
        assert!(
            e.to_string().contains("1 computed rows for a batch of 2"),
            "{e}"
        );
    }
}
