//! A 1 GiB data file written by the Paimon plugin with its instances limited to 256 MiB of
//! memory, into the S3 warehouse: the file is encoded straight into a multipart upload (parts
//! of 8 MiB, row groups of at most 16 MiB), so the plugin never holds it. Before contract 0.3.0
//! a file was built whole in guest memory and `put` at once, and this write ran out of memory.
//! pyarrow then reads the file's footer through S3 (its own S3 settings), and the commit's
//! snapshot counts every row.

use std::sync::Arc;

use arrow::array::{BinaryArray, Int64Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema};
use fluss_lake_e2e::component::{ComponentDriver, offsets_property, row_batch, table};
use fluss_lake_e2e::{Rng, host, paimon, s3, unique_name};

const MEMORY_LIMIT: usize = 256 << 20;
const FILE_BYTES: u64 = 1 << 30;
const BATCH_ROWS: usize = 4_096;
const PAYLOAD: usize = 4_096; // 16 MiB of random bytes a batch

fn batch(first: i64, rng: &mut Rng) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("payload", DataType::Binary, false),
    ]));
    let mut bytes = vec![0u8; BATCH_ROWS * PAYLOAD];
    for chunk in bytes.chunks_mut(8) {
        let v = rng.next_u64().to_le_bytes();
        chunk.copy_from_slice(&v[..chunk.len()]);
    }
    let payloads: Vec<&[u8]> = bytes.chunks(PAYLOAD).collect();
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from_iter_values(
                first..first + BATCH_ROWS as i64,
            )),
            Arc::new(BinaryArray::from(payloads)),
        ],
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_1_gib_file_is_written_to_s3_under_a_256_mib_plugin_memory_limit() {
    let server = s3::server();
    let url = server.url(&unique_name("large"));
    let local = std::env::temp_dir().join(unique_name("large-unused"));
    let mut driver =
        ComponentDriver::load_with_memory(&host::plugin("paimon"), &local, MEMORY_LIMIT)
            .await
            .on_store(&url, server.storage_options(&server.secret_key));
    // One file for the whole split: it rolls only past 2 GiB.
    driver
        .config
        .push(("target-file-size".into(), "2gb".into()));
    let t = table(
        "paimon",
        "large",
        &[("id", "BIGINT", false), ("payload", "BYTES", false)],
        &[],
        &[],
        1,
        &[],
    );
    driver.create(&t).await;
    let batches = (FILE_BYTES / (BATCH_ROWS * PAYLOAD) as u64) as usize + 1;
    let rows = (batches * BATCH_ROWS) as u64;
    let mut rng = Rng(0x5eed_1a26e);
    let sent = (0..batches).map(|k| {
        let b = batch((k * BATCH_ROWS) as i64, &mut rng);
        row_batch(&b, Vec::new(), (k * BATCH_ROWS) as i64, 0)
    });
    let (file_bytes, commit) = driver.streamed_round(&t, sent, offsets_property(1)).await;
    assert!(file_bytes >= FILE_BYTES, "{file_bytes} bytes written");

    // One data file of over 1 GiB in the bucket, a valid Parquet file of every row.
    let prefix = url
        .strip_prefix(&format!("s3://{}/", server.bucket))
        .unwrap();
    let keys = server
        .keys(&format!("{prefix}/fluss.db/large/bucket-0"))
        .await;
    assert_eq!(keys.len(), 1, "{keys:?}");
    let footer =
        fluss_lake_e2e::python::parquet_footer(&format!("s3://{}/{}", server.bucket, keys[0]));
    assert_eq!(footer["num_rows"], rows, "{footer}");
    assert!(footer["size"].as_u64().unwrap() >= FILE_BYTES, "{footer}");
    assert!(
        footer["row_groups"].as_u64().unwrap() > 1,
        "row groups are bounded: {footer}"
    );
    let snap = paimon::snapshot(
        std::path::Path::new(&url),
        "fluss",
        "large",
        Some(commit.snapshot_id),
    );
    assert_eq!(snap["total_record_count"], rows, "{snap}");
}
