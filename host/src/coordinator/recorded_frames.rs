//! The RPC codec against frames recorded from a real Fluss 0.9.1 coordinator
//! (`examples/record_frames.rs`): our requests encode to the recorded bytes, and the
//! recorded responses decode to what the server said.

use super::client::check_handshake;
use super::{api, codec, proto::*};
use bytes::Bytes;
use prost::Message;

fn frame(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/frames/{name}.hex", env!("CARGO_MANIFEST_DIR"));
    hex::decode(std::fs::read_to_string(&path).unwrap().trim()).unwrap()
}

/// Decodes a recorded response frame (length prefix included) and checks its framing.
fn response(name: &str, request_id: i32) -> codec::ResponseFrame {
    let bytes = frame(&format!("{name}.response"));
    let len = i32::from_be_bytes(bytes[..4].try_into().unwrap()) as usize;
    assert_eq!(len, bytes.len() - 4, "length prefix of {name}");
    let decoded = codec::decode_response(Bytes::from(bytes[4..].to_vec())).unwrap();
    assert_eq!(decoded.request_id, Some(request_id));
    decoded
}

#[test]
fn requests_encode_to_the_recorded_bytes() {
    let versions = ApiVersionsRequest {
        client_software_name: "fluss-lake-host".into(),
        client_software_version: "0.1.0".into(),
    };
    assert_eq!(
        codec::encode_request(api::API_VERSIONS, 0, 1, &versions),
        frame("api_versions.request")
    );
    assert_eq!(
        codec::encode_request(
            api::LAKE_TIERING_HEARTBEAT,
            0,
            2,
            &LakeTieringHeartbeatRequest::default()
        ),
        frame("heartbeat_empty.request")
    );
    let failed = LakeTieringHeartbeatRequest {
        failed_tables: vec![PbHeartbeatReqForTable {
            table_id: 987_654_321,
            coordinator_epoch: 0,
            tiering_epoch: 1,
            lake_tiering_stats: None,
        }],
        ..Default::default()
    };
    assert_eq!(
        codec::encode_request(api::LAKE_TIERING_HEARTBEAT, 0, 3, &failed),
        frame("heartbeat_failed_unknown_table.request")
    );
}

#[test]
fn api_versions_response_passes_the_handshake() {
    let body = response("api_versions", 1).body.unwrap();
    let versions = ApiVersionsResponse::decode(body).unwrap();
    assert_eq!(versions.server_type, Some(api::SERVER_TYPE_COORDINATOR));
    check_handshake("recorded", &versions).unwrap();
    // A tablet server's answer (no tiering APIs, other server type) is refused.
    let mut tablet = versions.clone();
    tablet.server_type = Some(2);
    assert!(check_handshake("recorded", &tablet).is_err());
    let mut old = versions;
    old.api_versions
        .retain(|v| v.api_key != i32::from(api::PREPARE_LAKE_TABLE_SNAPSHOT));
    old.server_type = None;
    assert!(check_handshake("recorded", &old).is_err());
}

#[test]
fn empty_heartbeat_returns_the_coordinator_epoch() {
    let body = response("heartbeat_empty", 2).body.unwrap();
    let r = LakeTieringHeartbeatResponse::decode(body).unwrap();
    assert_eq!(r.coordinator_epoch, 0);
    assert!(r.tiering_table.is_none());
}

#[test]
fn unknown_table_report_gets_a_per_table_error() {
    let body = response("heartbeat_failed_unknown_table", 3).body.unwrap();
    let r = LakeTieringHeartbeatResponse::decode(body).unwrap();
    let [entry] = r.failed_table_resp.as_slice() else {
        panic!("{r:?}")
    };
    assert_eq!(entry.table_id, 987_654_321);
    let err = entry.error.as_ref().unwrap();
    assert_eq!(err.error_code, api::errors::TABLE_NOT_EXIST);
    assert!(api::errors::fences_round(err.error_code));
    assert!(err.error_message.as_deref().unwrap().contains("987654321"));
}

#[test]
fn empty_commit_is_accepted() {
    let body = response("commit_empty", 4).body.unwrap();
    let r = CommitLakeTableSnapshotResponse::decode(body).unwrap();
    assert!(r.table_resp.is_empty());
}
