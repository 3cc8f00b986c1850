//! Native round trip of the Lance plugin's format code (no wasm): create a dataset, write two
//! rounds of every supported type with nulls, and let pylance read it back. The `.wasm`
//! component is tested end to end in `tests/e2e/component/lance.rs`.

mod common;

use common::{COLUMNS, batch, lance_read};
use fluss_lake_guest_sdk::ipc::make_row_batch;
use fluss_lake_guest_sdk::plugin::{FormatCommitter, FormatWriter};
use fluss_lake_guest_sdk::storage::LocalStorage;
use fluss_lake_guest_sdk::testing::{committer_context, log_table, writer_context};
use fluss_lake_lance::catalog::{LAYOUT, create_table_if_missing};
use fluss_lake_lance::committer::LanceCommitter;
use fluss_lake_lance::writer::LanceWriter;

#[test]
fn pylance_reads_what_the_plugin_wrote() {
    let wh = std::env::temp_dir().join(format!("lance-native-{}", uuid::Uuid::new_v4()));
    let t = log_table("db", "t", COLUMNS, &[], 2, &[]);
    let dir = wh.join(LAYOUT.location(&t).unwrap());
    let storage = LocalStorage::new(&dir);
    assert!(create_table_if_missing(&storage, &t).unwrap());
    let mut offset = 0;
    for round in 0..2 {
        let mut payloads = Vec::new();
        for bucket in 0..2 {
            let ids: Vec<i32> = (0..50).map(|i| round * 1000 + bucket * 100 + i).collect();
            let mut w =
                LanceWriter::open(&writer_context(&t, bucket, None, &[]), &storage).unwrap();
            w.write(make_row_batch(&batch(&ids), offset, 0).unwrap())
                .unwrap();
            offset += 50;
            payloads.push(w.complete().unwrap().payload);
        }
        let mut c = LanceCommitter::open(committer_context(&t, &[]), &storage).unwrap();
        let committable = c.to_committable(&payloads).unwrap();
        let r = c
            .commit(
                &committable,
                &[("fluss-offsets".into(), format!("/o/{round}"))],
                fluss_lake_guest_sdk::testing::tiered_base(&c),
            )
            .unwrap();
        assert_eq!(r.snapshot_id, round as i64 + 2);
    }
    let d = dir.display().to_string();
    eprintln!("{:?}", lance_read(&["info", &d]));
    assert_eq!(
        lance_read(&["count", &d]),
        [serde_json::json!({"count": 200})]
    );
    let rows = lance_read(&["rows", &d, "--filter", "id = 1003"]);
    eprintln!("{rows:?}");
    assert_eq!(rows.len(), 1);
    std::fs::remove_dir_all(&wh).ok();
}
