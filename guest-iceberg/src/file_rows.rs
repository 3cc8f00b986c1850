//! Rows of Parquet files read back (compaction): columns found by Iceberg field id, as
//! readers resolve them (names may have changed since a file was written), and batches
//! projected onto the table's current schema so rewritten files are written like new ones.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Int32Type};
use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch};
use arrow_schema::{DataType, SchemaRef};
use fluss_lake_guest_sdk::arrow_util::PARQUET_FIELD_ID_KEY;
use fluss_lake_guest_sdk::convert::to_file_array;
use fluss_lake_guest_sdk::{Error, Result};

use crate::schema::IcebergSchema;

/// Column index by field id of a file's Arrow schema (fields without an id are skipped).
pub fn columns_by_field_id(schema: &SchemaRef) -> HashMap<i32, usize> {
    schema
        .fields()
        .iter()
        .enumerate()
        .filter_map(|(i, f)| {
            let id = f.metadata().get(PARQUET_FIELD_ID_KEY)?.parse().ok()?;
            Some((id, i))
        })
        .collect()
}

/// `column` as `target`: unchanged when it already is, else the conversions Iceberg's type
/// promotions and Parquet's spellings need (int → long, float → double, a timestamp's zone
/// name, a decimal's precision); anything else is refused.
pub fn conform(column: &ArrayRef, target: &DataType, what: &str) -> Result<ArrayRef> {
    let from = column.data_type();
    if from == target {
        return Ok(column.clone());
    }
    let converted: ArrayRef = match (from, target) {
        (DataType::Int32, DataType::Int64) => Arc::new(
            column
                .as_primitive::<Int32Type>()
                .unary::<_, arrow_array::types::Int64Type>(i64::from),
        ) as ArrayRef,
        (DataType::Float32, DataType::Float64) => Arc::new(
            column
                .as_primitive::<Float32Type>()
                .unary::<_, arrow_array::types::Float64Type>(f64::from),
        ),
        (DataType::Timestamp(u1, _), DataType::Timestamp(u2, tz)) if u1 == u2 => {
            let data = column
                .to_data()
                .into_builder()
                .data_type(DataType::Timestamp(*u2, tz.clone()))
                .build()?;
            arrow_array::make_array(data)
        }
        (DataType::Decimal128(_, s1), DataType::Decimal128(p2, s2)) if s1 == s2 => Arc::new(
            column
                .as_primitive::<arrow_array::types::Decimal128Type>()
                .clone()
                .with_precision_and_scale(*p2, *s2)?,
        ),
        // Nested columns read back with the names of the file's writer on their children
        // (another map entry name): rebuilt with the table's, values shared, when their
        // children are the table's, field id for field id.
        (
            DataType::List(_) | DataType::Map(..) | DataType::Struct(_),
            DataType::List(_) | DataType::Map(..) | DataType::Struct(_),
        ) if same_field_ids(from, target) => to_file_array(column, target, true, what)?,
        _ => {
            return Err(Error::unsupported(format!(
                "{what}: a file stores it as {from}, the table as {target}; this plugin does \
                 not convert between them"
            )));
        }
    };
    Ok(converted)
}

/// True when the children of two nested types carry the same field ids at every level, in the
/// same order (so that matching them by position matches them by id).
fn same_field_ids(a: &DataType, b: &DataType) -> bool {
    let children = |t: &DataType| -> Vec<arrow_schema::FieldRef> {
        match t {
            DataType::List(f) => vec![f.clone()],
            DataType::Map(entries, _) => match entries.data_type() {
                DataType::Struct(kv) => kv.iter().cloned().collect(),
                _ => Vec::new(),
            },
            DataType::Struct(fields) => fields.iter().cloned().collect(),
            _ => Vec::new(),
        }
    };
    let (ca, cb) = (children(a), children(b));
    ca.len() == cb.len()
        && ca.iter().zip(&cb).all(|(x, y)| {
            x.metadata().get(PARQUET_FIELD_ID_KEY) == y.metadata().get(PARQUET_FIELD_ID_KEY)
                && x.metadata().contains_key(PARQUET_FIELD_ID_KEY)
                && same_field_ids(x.data_type(), y.data_type())
        })
}

/// `batch` (a file's rows, columns tagged with field ids) in the shape of `target`, the
/// current schema's file schema: columns matched by field id and conformed to their type,
/// optional columns the file lacks filled with nulls, columns the table dropped left out.
pub fn project(
    batch: &RecordBatch,
    schema: &IcebergSchema,
    target: &SchemaRef,
) -> Result<RecordBatch> {
    let by_id = columns_by_field_id(&batch.schema());
    let columns = schema
        .fields
        .iter()
        .zip(target.fields())
        .map(|(f, tf)| match by_id.get(&f.id) {
            Some(&i) => {
                let c = conform(batch.column(i), tf.data_type(), &f.name)?;
                if f.required && c.null_count() > 0 {
                    return Err(Error::corrupt(format!(
                        "column {} is required but a data file holds nulls in it",
                        f.name
                    )));
                }
                Ok(c)
            }
            None if !f.required => Ok(arrow_array::new_null_array(
                tf.data_type(),
                batch.num_rows(),
            )),
            None => Err(Error::unsupported(format!(
                "a data file lacks the required column {} (field id {})",
                f.name, f.id
            ))),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(RecordBatch::try_new(target.clone(), columns)?)
}

/// The column of field `id`, as `target` when given; `None` when the file lacks it.
pub fn column_of(
    batch: &RecordBatch,
    by_id: &HashMap<i32, usize>,
    id: i32,
    target: Option<&DataType>,
) -> Result<Option<ArrayRef>> {
    let Some(&i) = by_id.get(&id) else {
        return Ok(None);
    };
    let c = batch.column(i);
    Ok(Some(match target {
        Some(t) => conform(c, t, &format!("field {id}"))?,
        None => c.clone(),
    }))
}

/// A position delete file's `pos` column.
pub fn positions(column: &ArrayRef) -> Result<&Int64Array> {
    column.as_any().downcast_ref::<Int64Array>().ok_or_else(|| {
        Error::corrupt(format!(
            "a position delete's pos column is {}",
            column.data_type()
        ))
    })
}
