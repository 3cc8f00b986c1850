//! The Fluss client the host and the tests are built on (vendored fluss-rs, see
//! `vendor/fluss-rs/PATCHED.md`), where this project changed it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::{
    Array, ArrayRef, BinaryArray, BinaryViewArray, DictionaryArray, Int32Array, LargeBinaryArray,
    LargeListArray, LargeStringArray, ListArray, MapArray, RecordBatch, StringArray,
    StringViewArray, StructArray, TimestampMillisecondArray,
};
use arrow::buffer::OffsetBuffer;
use arrow::datatypes::{DataType as ArrowType, Field, Fields, Int8Type, Schema as ArrowSchema};
use fluss::metadata::{DataTypes, Schema, TableDescriptor, TablePath};
use fluss_lake_e2e::{cluster, data, unique_name};

const ROWS: usize = 6;

/// Row `i`'s string (every third is null), as each encoding holds it.
fn text(i: usize) -> Option<String> {
    (i % 3 != 2).then(|| format!("text-{i}"))
}

fn bytes(i: usize) -> Option<Vec<u8>> {
    (i % 3 != 1).then(|| vec![i as u8, 0xff, 7])
}

/// The table's columns: strings, bytes, a zoned timestamp and the nested types, each of which
/// a writer may hand over in another Arrow encoding.
fn table_schema() -> Schema {
    Schema::builder()
        .column("id", DataTypes::int())
        .column("large_text", DataTypes::string())
        .column("view_text", DataTypes::string())
        .column("dict_text", DataTypes::string())
        .column("large_bytes", DataTypes::bytes())
        .column("view_bytes", DataTypes::bytes())
        .column("ltz", DataTypes::timestamp_ltz_with_precision(3))
        .column("tags", DataTypes::array(DataTypes::string()))
        .column(
            "point",
            DataTypes::row(vec![
                DataTypes::field("x", DataTypes::int()),
                DataTypes::field("label", DataTypes::string()),
            ]),
        )
        .column(
            "counts",
            DataTypes::map(DataTypes::string(), DataTypes::int()),
        )
        .build()
        .expect("valid schema")
}

/// The list of row `i` (`[]` for every fourth row), elements as `text`.
fn tags(i: usize) -> Vec<Option<String>> {
    (0..i % 4).map(|k| text(i + k)).collect()
}

/// Rows `first..first + ROWS` with every column in the Arrow type the table reads back as
/// (`plain`), or in another encoding of the same values: large and view strings and binaries,
/// a dictionary, a timestamp in another zone, a large list of large strings, a struct and a map
/// whose inner fields Arrow builders name otherwise.
fn batch(first: usize, plain: bool) -> RecordBatch {
    let rows = first..first + ROWS;
    let mut fields = vec![Field::new("id", ArrowType::Int32, true)];
    let mut columns: Vec<ArrayRef> = vec![Arc::new(Int32Array::from_iter_values(
        rows.clone().map(|i| i as i32),
    ))];
    let mut push = |name: &str, column: ArrayRef| {
        fields.push(Field::new(name, column.data_type().clone(), true));
        columns.push(column);
    };
    let texts = || rows.clone().map(text);
    let blobs = || rows.clone().map(bytes);
    if plain {
        push("large_text", Arc::new(texts().collect::<StringArray>()));
        push("view_text", Arc::new(texts().collect::<StringArray>()));
        push("dict_text", Arc::new(texts().collect::<StringArray>()));
        push("large_bytes", Arc::new(blobs().collect::<BinaryArray>()));
        push("view_bytes", Arc::new(blobs().collect::<BinaryArray>()));
    } else {
        push(
            "large_text",
            Arc::new(texts().collect::<LargeStringArray>()),
        );
        push("view_text", Arc::new(texts().collect::<StringViewArray>()));
        let owned: Vec<Option<String>> = texts().collect();
        let dictionary: DictionaryArray<Int8Type> = owned.iter().map(Option::as_deref).collect();
        push("dict_text", Arc::new(dictionary));
        push(
            "large_bytes",
            Arc::new(blobs().collect::<LargeBinaryArray>()),
        );
        push("view_bytes", Arc::new(blobs().collect::<BinaryViewArray>()));
    }
    let instants = TimestampMillisecondArray::from_iter_values(
        rows.clone().map(|i| 1_700_000_000_000 + i as i64),
    );
    push(
        "ltz",
        Arc::new(instants.with_timezone(if plain { "UTC" } else { "+05:30" })),
    );

    let all_tags: Vec<Option<String>> = rows.clone().flat_map(tags).collect();
    let lengths = rows.clone().map(|i| tags(i).len());
    let tag_values: ArrayRef = if plain {
        Arc::new(all_tags.iter().cloned().collect::<StringArray>())
    } else {
        Arc::new(all_tags.iter().cloned().collect::<LargeStringArray>())
    };
    let list: ArrayRef = if plain {
        Arc::new(ListArray::new(
            Arc::new(Field::new("element", ArrowType::Utf8, true)),
            OffsetBuffer::from_lengths(lengths),
            tag_values,
            None,
        ))
    } else {
        Arc::new(LargeListArray::new(
            Arc::new(Field::new("item", ArrowType::LargeUtf8, true)),
            OffsetBuffer::from_lengths(lengths),
            tag_values,
            None,
        ))
    };
    push("tags", list);

    let x: ArrayRef = Arc::new(Int32Array::from_iter_values(
        rows.clone().map(|i| 10 * i as i32),
    ));
    let label: ArrayRef = if plain {
        Arc::new(texts().collect::<StringArray>())
    } else {
        Arc::new(texts().collect::<StringViewArray>())
    };
    push(
        "point",
        Arc::new(StructArray::new(
            Fields::from(vec![
                Field::new("x", ArrowType::Int32, plain),
                Field::new("label", label.data_type().clone(), true),
            ]),
            vec![x, label],
            None,
        )),
    );

    // Row i maps "k0".."k{i%3}" to i, i+1, …
    let keys: Vec<String> = rows
        .clone()
        .flat_map(|i| (0..i % 3).map(|k| format!("k{k}")))
        .collect();
    let values: Vec<i32> = rows
        .clone()
        .flat_map(|i| (0..i % 3).map(move |k| (i + k) as i32))
        .collect();
    let (key_name, value_name) = if plain {
        ("key", "value")
    } else {
        ("keys", "values")
    };
    let key_array: ArrayRef = if plain {
        Arc::new(StringArray::from_iter_values(keys))
    } else {
        Arc::new(LargeStringArray::from_iter_values(keys))
    };
    let entries = StructArray::new(
        Fields::from(vec![
            Field::new(key_name, key_array.data_type().clone(), false),
            Field::new(value_name, ArrowType::Int32, true),
        ]),
        vec![key_array, Arc::new(Int32Array::from(values))],
        None,
    );
    push(
        "counts",
        Arc::new(MapArray::new(
            Arc::new(Field::new(
                if plain { "entries" } else { "key_value" },
                entries.data_type().clone(),
                false,
            )),
            OffsetBuffer::from_lengths(rows.clone().map(|i| i % 3)),
            entries,
            None,
            false,
        )),
    );
    RecordBatch::try_new(Arc::new(ArrowSchema::new(fields)), columns).expect("valid batch")
}

/// A batch whose columns are encoded otherwise than the table's types (large, view and
/// dictionary strings, large and view binaries, another time zone, large lists, renamed
/// struct, list and map fields) is appended as the table's own types, value for value: read
/// back, it equals the same rows appended in the table's types, and its strings and bytes are
/// the values written. This is the conversion fluss-rs made with arrow's cast kernel and now
/// makes itself (`convert_lossless`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_in_other_arrow_encodings_is_appended_as_the_tables_types() {
    let c = cluster::lease_mixed();
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let path = TablePath::new("fluss", unique_name("encodings"));
    let descriptor = TableDescriptor::builder()
        .schema(table_schema())
        .distributed_by(Some(1), vec![])
        .build()
        .unwrap();
    data::create_table(&admin, &path, &descriptor).await;

    let table = conn.get_table(&path).await.unwrap();
    let writer = table.new_append().unwrap().create_writer().unwrap();
    writer.append_arrow_batch(batch(0, true)).unwrap();
    writer.append_arrow_batch(batch(0, false)).unwrap();
    writer.flush().await.unwrap();

    let scanner = table.new_scan().create_record_batch_log_scanner().unwrap();
    scanner.subscribe(0, 0).await.unwrap();
    let mut read: Vec<RecordBatch> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while read.iter().map(RecordBatch::num_rows).sum::<usize>() < 2 * ROWS {
        assert!(
            Instant::now() < deadline,
            "the rows never came back: {read:?}"
        );
        for b in scanner.poll(Duration::from_secs(1)).await.unwrap() {
            read.push(b.into_batch());
        }
    }
    let schema = read[0].schema();
    let all = arrow::compute::concat_batches(&schema, &read).unwrap();
    assert_eq!(all.num_rows(), 2 * ROWS);
    for (i, field) in schema.fields().iter().enumerate() {
        let column = all.column(i);
        assert_eq!(
            column.slice(0, ROWS).as_ref(),
            column.slice(ROWS, ROWS).as_ref(),
            "column {} read back otherwise when appended in another encoding",
            field.name()
        );
    }
    for name in ["large_text", "view_text", "dict_text"] {
        let strings = all
            .column_by_name(name)
            .unwrap()
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap_or_else(|| panic!("{name} reads back as {schema:?}"));
        let got: Vec<Option<String>> = strings.iter().map(|s| s.map(str::to_string)).collect();
        let want: Vec<Option<String>> = (0..ROWS).chain(0..ROWS).map(text).collect();
        assert_eq!(got, want, "{name}");
    }
    for name in ["large_bytes", "view_bytes"] {
        let blobs = all
            .column_by_name(name)
            .unwrap()
            .as_any()
            .downcast_ref::<BinaryArray>()
            .unwrap_or_else(|| panic!("{name} reads back as {schema:?}"));
        let got: Vec<Option<Vec<u8>>> = blobs.iter().map(|b| b.map(<[u8]>::to_vec)).collect();
        let want: Vec<Option<Vec<u8>>> = (0..ROWS).chain(0..ROWS).map(bytes).collect();
        assert_eq!(got, want, "{name}");
    }
}
