//! The writer of one split: the Fluss rows plus the system columns, minus the partition
//! columns, into Parquet files (zstd level 1, the SDK's default; rolled at the target size by
//! the SDK's writer) in the partition's directory, each described by an `add` action with its
//! partition values and statistics. Nothing is visible to readers until the committer
//! publishes the actions.

use fluss_lake_guest_sdk::convert::{constant_i32, i64_column, millis_column};
use fluss_lake_guest_sdk::data_plane::SplitRows;
use fluss_lake_guest_sdk::deps::arrow_array::RecordBatch;
use fluss_lake_guest_sdk::deps::serde_json::{self, Value, json};
use fluss_lake_guest_sdk::parquet::{DataFileInfo, ParquetOptions, RollingParquetWriter};
use fluss_lake_guest_sdk::plugin::FormatWriter;
use fluss_lake_guest_sdk::storage::{Storage, join};
use fluss_lake_guest_sdk::wit::{WriteResult, WriterContext};
use fluss_lake_guest_sdk::{Error, Result, clock, config};

use crate::actions::AddFile;
use crate::partition::{encode_uri_path, partition_dir, partition_values};
use crate::schema::{ColumnSource, FileLayout, to_delta_array};
use crate::{catalog, delta_log, stats};

/// Plugin option: roll to a new data file at this size (a memory size, e.g. `64mb`).
pub const TARGET_FILE_SIZE: &str = "target-file-size";
/// Files are built in guest memory before upload, hence 128 MiB (Delta's own default
/// target for optimised files is 1 GiB).
pub const DEFAULT_TARGET_FILE_SIZE: u64 = 128 << 20;

/// What a split hands to the committer: its `add` actions and the table version it was
/// written against. The committer checks that no commit after that version changed the
/// protocol or metadata — Delta's conflict rule for blind appends.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WritePayload {
    pub read_version: Option<u64>,
    pub adds: Vec<AddFile>,
}

impl WritePayload {
    pub fn encode(&self) -> Result<Vec<u8>> {
        let adds: Vec<Value> = self.adds.iter().map(AddFile::to_json).collect();
        serde_json::to_vec(&json!({"readVersion": self.read_version, "add": adds}))
            .map_err(|e| Error::internal(format!("encoding write result: {e}")))
    }

    pub fn decode(bytes: &[u8]) -> Result<WritePayload> {
        let bad = |e: String| Error::invalid_input(format!("not a Delta write result: {e}"));
        let v: Value = serde_json::from_slice(bytes).map_err(|e| bad(e.to_string()))?;
        Ok(WritePayload {
            read_version: v.get("readVersion").and_then(Value::as_u64),
            adds: v
                .get("add")
                .and_then(Value::as_array)
                .ok_or_else(|| bad("no add list".into()))?
                .iter()
                .map(AddFile::from_json)
                .collect::<Result<_>>()?,
        })
    }

    /// One payload of several: every file, against the oldest version any was written at.
    pub fn merge(payloads: impl IntoIterator<Item = WritePayload>) -> WritePayload {
        let mut all = WritePayload::default();
        for p in payloads {
            all.read_version = match (all.read_version, p.read_version) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            all.adds.extend(p.adds);
        }
        all
    }
}

pub struct DeltaWriter<S: Storage> {
    layout: FileLayout,
    bucket: i32,
    partition_values: Vec<(String, Option<String>)>,
    read_version: u64,
    files: RollingParquetWriter<S>,
    adds: Vec<AddFile>,
    records: u64,
}

impl<S: Storage> DeltaWriter<S> {
    fn add(&mut self, file: DataFileInfo) {
        let columns: Vec<(&str, _)> = self
            .layout
            .arrow
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .zip(self.layout.types.iter())
            .collect();
        self.adds.push(AddFile {
            path: encode_uri_path(&file.path),
            partition_values: self.partition_values.clone(),
            size: file.size,
            modification_time: clock::now_millis(),
            num_records: file.row_count,
            stats: Some(stats::file_stats(
                &columns,
                &file.column_stats,
                file.row_count,
            )),
        });
    }
}

impl<S: Storage> FormatWriter<S> for DeltaWriter<S> {
    /// Checks the table is a log table, that the Delta table exists (the version it is at
    /// becomes the payload's read version; its schema was checked by `validate-table`), and
    /// works out the split's partition directory.
    fn open(context: &WriterContext, storage: S) -> Result<Self> {
        let table = &context.table;
        catalog::check_log_table(table)?;
        let read_version = delta_log::latest(&storage)?.ok_or_else(|| catalog::missing(table))?;
        let layout = FileLayout::for_fluss_table(table)?;
        let partition_values = partition_values(table, context.partition_name.as_deref())?;
        let dir = partition_dir(&partition_values);
        let target_file_size =
            config::get_size(&context.config, TARGET_FILE_SIZE, DEFAULT_TARGET_FILE_SIZE)?;
        let options = ParquetOptions {
            target_file_size,
            ..Default::default()
        };
        let files = RollingParquetWriter::new(storage, layout.arrow.clone(), options, move || {
            join(&[&dir, &format!("part-{}.parquet", uuid())])
        });
        Ok(DeltaWriter {
            layout,
            bucket: context.bucket,
            partition_values,
            read_version,
            files,
            adds: Vec::new(),
            records: 0,
        })
    }

    fn write_rows(&mut self, rows: SplitRows<'_>) -> Result<()> {
        let decoded = rows.into_decoded()?;
        if !decoded.is_insert_only() {
            return Err(Error::invalid_input(
                "update or delete rows for a Delta table (this plugin tiers log tables only)",
            ));
        }
        let n = decoded.num_rows();
        if n == 0 {
            return Ok(());
        }
        let columns = self
            .layout
            .sources
            .iter()
            .zip(self.layout.arrow.fields())
            .map(|(source, field)| match source {
                ColumnSource::Fluss { index, staging } => {
                    to_delta_array(decoded.batch.column(*index), staging.as_ref(), field)
                }
                ColumnSource::Bucket => Ok(constant_i32(self.bucket, n)),
                ColumnSource::Offset => Ok(i64_column(&decoded.log_offsets)),
                ColumnSource::Timestamp => {
                    Ok(millis_column(&decoded.timestamps, field.data_type())?)
                }
            })
            .collect::<Result<Vec<_>>>()?;
        let rows = RecordBatch::try_new(self.layout.arrow.clone(), columns)?;
        self.records += n as u64;
        if let Some(file) = self.files.write(&rows)? {
            self.add(file);
        }
        Ok(())
    }

    fn complete(mut self) -> Result<WriteResult> {
        if let Some(file) = self.files.finish_file()? {
            self.add(file);
        }
        let file_bytes = self.adds.iter().map(|a| a.size).sum();
        Ok(WriteResult {
            payload: WritePayload {
                read_version: Some(self.read_version),
                adds: self.adds,
            }
            .encode()?,
            record_count: self.records,
            file_bytes,
        })
    }
}

fn uuid() -> String {
    fluss_lake_guest_sdk::deps::uuid::Uuid::new_v4().to_string()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use fluss_lake_guest_sdk::deps::arrow_array::{
        Int32Array, StringArray, TimestampMicrosecondArray,
    };
    use fluss_lake_guest_sdk::deps::arrow_schema::{DataType, Field, Schema, TimeUnit};
    use fluss_lake_guest_sdk::ipc::{ChangeType, make_changelog_batch, make_row_batch};
    use fluss_lake_guest_sdk::storage::MemoryStorage;
    use fluss_lake_guest_sdk::testing::{log_table, writer_context};

    use super::*;
    use crate::partition::decode_uri_path;

    #[test]
    fn writes_partitioned_files_without_partition_columns() {
        let storage = MemoryStorage::new();
        let t = log_table(
            "db",
            "t",
            &[
                ("id", "INT", false),
                ("ts", "TIMESTAMP(6)", true),
                ("region", "STRING", false),
            ],
            &[],
            2,
            &["region"],
        );
        assert!(catalog::create_table_if_missing(&storage, &t).unwrap());
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int32, false),
            Field::new("ts", DataType::Timestamp(TimeUnit::Microsecond, None), true),
            Field::new("region", DataType::Utf8, false),
        ]));
        let batch = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int32Array::from(vec![5, 1, 3])),
                Arc::new(TimestampMicrosecondArray::from(vec![
                    Some(1_500),
                    None,
                    Some(7),
                ])),
                Arc::new(StringArray::from(vec!["eu/west"; 3])),
            ],
        )
        .unwrap();
        let ctx = writer_context(&t, 1, Some("eu/west"), &[]);
        let mut w = DeltaWriter::open(&ctx, &storage).unwrap();
        w.write(make_row_batch(&batch, 10, 1_000).unwrap()).unwrap();
        let result = w.complete().unwrap();
        assert_eq!(result.record_count, 3);
        let payload = WritePayload::decode(&result.payload).unwrap();
        assert_eq!(payload.read_version, Some(0));
        let [add] = payload.adds.as_slice() else {
            panic!("one file: {payload:?}")
        };
        assert!(
            add.path.starts_with("region=eu%252Fwest/part-"),
            "{}",
            add.path
        );
        assert_eq!(
            add.partition_values,
            vec![("region".to_string(), Some("eu/west".to_string()))]
        );
        let stored = decode_uri_path(&add.path).unwrap();
        assert_eq!(storage.head(&stored).unwrap().unwrap().size, add.size);
        let stats: Value = serde_json::from_str(add.stats.as_deref().unwrap()).unwrap();
        assert_eq!(stats["numRecords"], 3);
        assert_eq!(stats["minValues"]["id"], 1);
        assert_eq!(stats["maxValues"]["__offset"], 12);
        assert_eq!(stats["minValues"]["__bucket"], 1);
        assert_eq!(
            stats["maxValues"]["__timestamp"],
            "1970-01-01T00:00:01.000Z"
        );
        assert_eq!(stats["nullCount"]["ts"], 1);
        assert!(
            stats["nullCount"].get("region").is_none(),
            "not in the file"
        );
        assert_eq!(
            WritePayload::decode(&payload.encode().unwrap()).unwrap(),
            payload
        );

        // log tables only: changelog rows are refused
        let mut w = DeltaWriter::open(&ctx, &storage).unwrap();
        let changes = [ChangeType::Insert, ChangeType::Delete, ChangeType::Insert];
        assert!(
            w.write(make_changelog_batch(&batch, &changes, 0, 0).unwrap())
                .is_err()
        );
    }

    /// The SDK's nested test table (ARRAY, MAP, ROW nested in each other, nulls and empty
    /// collections at every level): the Parquet file holds the Parquet format's canonical
    /// LIST / MAP shapes and exactly the values written; the statistics nest for structs and
    /// count null arrays and maps.
    #[test]
    fn writes_nested_columns() {
        use fluss_lake_guest_sdk::deps::arrow_array::Array;
        use fluss_lake_guest_sdk::parquet_read::{ParquetFileReader, read_all};
        use fluss_lake_guest_sdk::testing::{NESTED_COLUMNS, nested_batch, nested_row};

        let storage = MemoryStorage::new();
        let t = log_table("db", "nested", &NESTED_COLUMNS, &[], 1, &[]);
        assert!(catalog::create_table_if_missing(&storage, &t).unwrap());
        let ctx = writer_context(&t, 0, None, &[]);
        let mut w = DeltaWriter::open(&ctx, &storage).unwrap();
        let batch = nested_batch(0, 42);
        w.write(make_row_batch(&batch.slice(0, 20), 0, 1_000).unwrap())
            .unwrap();
        w.write(make_row_batch(&batch.slice(20, 22), 20, 1_000).unwrap())
            .unwrap();
        let payload = WritePayload::decode(&w.complete().unwrap().payload).unwrap();
        let [add] = payload.adds.as_slice() else {
            panic!("one file: {payload:?}")
        };
        let path = decode_uri_path(&add.path).unwrap();

        let reader =
            ParquetFileReader::open(&storage, &path, Some(add.size), Default::default()).unwrap();
        let leaves: Vec<String> = reader
            .metadata()
            .file_metadata()
            .schema_descr()
            .columns()
            .iter()
            .map(|c| c.path().string())
            .collect();
        for leaf in [
            "tags.list.element",
            "attrs.key_value.key",
            "attrs.key_value.value",
            "point.y",
            "events.list.element.labels.key_value.value.list.element",
        ] {
            assert!(leaves.contains(&leaf.to_string()), "{leaf} in {leaves:?}");
        }
        let layout = FileLayout::for_fluss_table(&t).unwrap();
        let read = read_all(&storage, &path).unwrap();
        let [read] = read.as_slice() else {
            panic!("one batch")
        };
        assert_eq!(read.num_rows(), 42);
        for (i, field) in layout
            .arrow
            .fields()
            .iter()
            .take(NESTED_COLUMNS.len())
            .enumerate()
        {
            let want = to_delta_array(batch.column(i), None, field).unwrap();
            assert_eq!(read.column(i).to_data(), want.to_data(), "{}", field.name());
        }

        let stats: Value = serde_json::from_str(add.stats.as_deref().unwrap()).unwrap();
        let rows: Vec<Value> = (0..42).map(nested_row).collect();
        let count = |f: &dyn Fn(&Value) -> bool| rows.iter().filter(|r| f(r)).count();
        assert_eq!(stats["nullCount"]["tags"], count(&|r| r["tags"].is_null()));
        assert_eq!(
            stats["nullCount"]["attrs"],
            count(&|r| r["attrs"].is_null())
        );
        assert_eq!(
            stats["nullCount"]["point"],
            json!({"x": count(&|r| r["point"]["x"].is_null()),
                "y": count(&|r| r["point"].is_null())})
        );
        let xs = rows.iter().filter_map(|r| r["point"]["x"].as_i64());
        assert_eq!(
            stats["minValues"]["point"],
            json!({"x": xs.clone().min(), "y": "p0"})
        );
        assert_eq!(stats["maxValues"]["point"]["x"], json!(xs.max()));
        assert_eq!(
            stats["nullCount"]["events"],
            count(&|r| r["events"].is_null())
        );
        for bounds in ["minValues", "maxValues"] {
            for column in ["tags", "nums", "attrs", "events"] {
                assert!(stats[bounds].get(column).is_none(), "{bounds}.{column}");
            }
        }
    }

    #[test]
    fn merge_keeps_the_oldest_read_version() {
        let p = |v: Option<u64>| WritePayload {
            read_version: v,
            adds: Vec::new(),
        };
        assert_eq!(
            WritePayload::merge([p(Some(4)), p(None), p(Some(2))]).read_version,
            Some(2)
        );
        assert_eq!(WritePayload::merge([]).read_version, None);
    }
}
