//! Records real request/response frames from a running Fluss coordinator into
//! `host/tests/frames/`, for the codec's recorded-frame tests.
//!
//! `cargo run --release -p fluss-lake-host --example record_frames -- 127.0.0.1:9123`
//!
//! Only harmless exchanges are recorded: the handshake, an empty heartbeat (registration),
//! a heartbeat reporting an unknown table failed (the server answers with a per-table
//! error), and an empty commit.

use std::path::PathBuf;

use fluss_lake_host::coordinator::{api, codec, proto::*};
use prost::Message;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

async fn exchange(stream: &mut TcpStream, name: &str, api_key: i16, id: i32, req: &impl Message) {
    let frame = codec::encode_request(api_key, 0, id, req);
    stream.write_all(&frame).await.unwrap();
    let mut len = [0u8; 4];
    stream.read_exact(&mut len).await.unwrap();
    let mut payload = vec![0u8; i32::from_be_bytes(len) as usize];
    stream.read_exact(&mut payload).await.unwrap();
    let mut response = len.to_vec();
    response.extend_from_slice(&payload);
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/frames");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{name}.request.hex")), hex::encode(&frame)).unwrap();
    std::fs::write(
        dir.join(format!("{name}.response.hex")),
        hex::encode(&response),
    )
    .unwrap();
    println!(
        "recorded {name}: request {} bytes, response {} bytes",
        frame.len(),
        response.len()
    );
}

#[tokio::main]
async fn main() {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:9123".into());
    let mut s = TcpStream::connect(&addr).await.unwrap();
    let versions = ApiVersionsRequest {
        client_software_name: "fluss-lake-host".into(),
        client_software_version: "0.1.0".into(),
    };
    exchange(&mut s, "api_versions", api::API_VERSIONS, 1, &versions).await;
    exchange(
        &mut s,
        "heartbeat_empty",
        api::LAKE_TIERING_HEARTBEAT,
        2,
        &LakeTieringHeartbeatRequest::default(),
    )
    .await;
    let failed_unknown = LakeTieringHeartbeatRequest {
        failed_tables: vec![PbHeartbeatReqForTable {
            table_id: 987_654_321,
            coordinator_epoch: 0,
            tiering_epoch: 1,
            lake_tiering_stats: None,
        }],
        ..Default::default()
    };
    exchange(
        &mut s,
        "heartbeat_failed_unknown_table",
        api::LAKE_TIERING_HEARTBEAT,
        3,
        &failed_unknown,
    )
    .await;
    exchange(
        &mut s,
        "commit_empty",
        api::COMMIT_LAKE_TABLE_SNAPSHOT,
        4,
        &CommitLakeTableSnapshotRequest::default(),
    )
    .await;
}
