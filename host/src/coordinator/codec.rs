//! Fluss RPC framing, kept free of I/O so it can be tested against recorded frames.
//!
//! A frame is `int32 BE length` + payload. A request payload is `int16 api_key`,
//! `int16 api_version`, `int32 request_id`, then the protobuf body. A response payload is
//! `uint8 type` (0 success, 1 error), `int32 request_id`, then either the protobuf body or an
//! `ErrorResponse`; a server failure (type 2) is `uint8 2` and an `ErrorResponse`, without a
//! request id (Java's `MessageCodec.encodeServerFailure`): the server failed the connection,
//! not one request.

use bytes::{Buf, BufMut, Bytes};
use prost::Message;

use super::proto::ErrorResponse;
use crate::error::{Error, ErrorKind, Result};

/// Bytes before the protobuf body of a request.
pub const REQUEST_HEADER_LEN: usize = 8;
/// Bytes before the body of a response.
pub const RESPONSE_HEADER_LEN: usize = 5;
/// The largest response the host accepts; tiering responses are tiny.
pub const MAX_RESPONSE_LEN: usize = 64 * 1024 * 1024;

const RESPONSE_SUCCESS: u8 = 0;
const RESPONSE_SERVER_FAILURE: u8 = 2;

/// Encodes a whole request frame, length prefix included.
pub fn encode_request(
    api_key: i16,
    api_version: i16,
    request_id: i32,
    body: &impl Message,
) -> Vec<u8> {
    let payload_len = REQUEST_HEADER_LEN + body.encoded_len();
    let mut buf = Vec::with_capacity(4 + payload_len);
    buf.put_i32(payload_len as i32);
    buf.put_i16(api_key);
    buf.put_i16(api_version);
    buf.put_i32(request_id);
    body.encode(&mut buf)
        .expect("a Vec grows to fit any protobuf message");
    buf
}

/// A decoded response payload (without its length prefix).
#[derive(Debug, PartialEq)]
pub struct ResponseFrame {
    /// The request answered; `None` for a server failure, which answers the requests in flight
    /// on the connection, whichever they are.
    pub request_id: Option<i32>,
    pub body: std::result::Result<Bytes, ErrorResponse>,
}

/// Decodes a response payload (the bytes after the length prefix).
pub fn decode_response(mut payload: Bytes) -> Result<ResponseFrame> {
    if payload.first() == Some(&RESPONSE_SERVER_FAILURE) {
        payload.advance(1);
        let failure = ErrorResponse::decode(payload).map_err(|e| {
            Error::new(ErrorKind::Protocol, "undecodable server failure").with_source(e)
        })?;
        return Ok(ResponseFrame {
            request_id: None,
            body: Err(failure),
        });
    }
    if payload.len() < RESPONSE_HEADER_LEN {
        return Err(Error::new(
            ErrorKind::Protocol,
            format!(
                "response of {} bytes is shorter than its header",
                payload.len()
            ),
        ));
    }
    let kind = payload.get_u8();
    let request_id = payload.get_i32();
    let body = if kind == RESPONSE_SUCCESS {
        Ok(payload)
    } else {
        Err(ErrorResponse::decode(payload).map_err(|e| {
            Error::new(ErrorKind::Protocol, "undecodable error response").with_source(e)
        })?)
    };
    Ok(ResponseFrame {
        request_id: Some(request_id),
        body,
    })
}

/// Decodes a request payload; the inverse of [`encode_request`], used by tests and by the
/// fake coordinator.
pub fn decode_request(mut payload: Bytes) -> Result<(i16, i16, i32, Bytes)> {
    if payload.len() < REQUEST_HEADER_LEN {
        return Err(Error::new(
            ErrorKind::Protocol,
            "request shorter than its header",
        ));
    }
    let api_key = payload.get_i16();
    let version = payload.get_i16();
    let request_id = payload.get_i32();
    Ok((api_key, version, request_id, payload))
}

/// Encodes a whole response frame, length prefix included; used by tests and the fake
/// coordinator.
pub fn encode_response(
    request_id: i32,
    body: std::result::Result<&dyn EncodeBody, &ErrorResponse>,
) -> Vec<u8> {
    let mut payload = Vec::new();
    match body {
        Ok(b) => {
            payload.put_u8(RESPONSE_SUCCESS);
            payload.put_i32(request_id);
            b.encode_body(&mut payload);
        }
        Err(e) => {
            payload.put_u8(1);
            payload.put_i32(request_id);
            e.encode(&mut payload).expect("Vec grows");
        }
    }
    let mut frame = Vec::with_capacity(4 + payload.len());
    frame.put_i32(payload.len() as i32);
    frame.extend_from_slice(&payload);
    frame
}

/// Object-safe protobuf encoding, so responses of any type can share one encoder.
pub trait EncodeBody {
    fn encode_body(&self, buf: &mut Vec<u8>);
}

impl<M: Message> EncodeBody for M {
    fn encode_body(&self, buf: &mut Vec<u8>) {
        self.encode(buf).expect("Vec grows");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coordinator::api;
    use crate::coordinator::proto::*;

    #[test]
    fn request_frame_layout() {
        let req = LakeTieringHeartbeatRequest {
            request_table: Some(true),
            ..Default::default()
        };
        let frame = encode_request(api::LAKE_TIERING_HEARTBEAT, 0, 7, &req);
        // length prefix, then key 1042 = 0x0412, version 0, request id 7, then `20 01`
        // (field 4, varint, true).
        assert_eq!(
            frame,
            vec![0, 0, 0, 10, 0x04, 0x12, 0, 0, 0, 0, 0, 7, 0x20, 0x01]
        );
        let (key, version, id, body) = decode_request(Bytes::from(frame[4..].to_vec())).unwrap();
        assert_eq!((key, version, id), (1042, 0, 7));
        assert_eq!(LakeTieringHeartbeatRequest::decode(body).unwrap(), req);
    }

    #[test]
    fn success_and_error_responses_round_trip() {
        let resp = LakeTieringHeartbeatResponse {
            coordinator_epoch: 3,
            ..Default::default()
        };
        let frame = encode_response(9, Ok(&resp));
        let decoded = decode_response(Bytes::from(frame[4..].to_vec())).unwrap();
        assert_eq!(decoded.request_id, Some(9));
        let body = decoded.body.unwrap();
        assert_eq!(LakeTieringHeartbeatResponse::decode(body).unwrap(), resp);

        let err = ErrorResponse {
            error_code: 53,
            error_message: Some("no lake snapshot".into()),
        };
        let frame = encode_response(10, Err(&err));
        let decoded = decode_response(Bytes::from(frame[4..].to_vec())).unwrap();
        assert_eq!(decoded.request_id, Some(10));
        assert_eq!(decoded.body.unwrap_err(), err);
    }

    /// Java's `MessageCodec.encodeServerFailure`: the type byte, then the error, no request
    /// id. Read as a request id, the error's first bytes made a wrong id and the rest an
    /// undecodable body.
    #[test]
    fn a_server_failure_has_no_request_id() {
        let err = ErrorResponse {
            error_code: 1,
            error_message: Some("unexpected server error".into()),
        };
        let mut payload = vec![2u8];
        err.encode(&mut payload).unwrap();
        let decoded = decode_response(Bytes::from(payload)).unwrap();
        assert_eq!(decoded.request_id, None);
        assert_eq!(decoded.body.unwrap_err(), err);
        let short = decode_response(Bytes::from_static(&[2])).unwrap();
        assert_eq!(short.request_id, None);
    }

    #[test]
    fn truncated_response_is_a_protocol_error() {
        let err = decode_response(Bytes::from_static(&[0, 0, 0])).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Protocol);
    }
}
