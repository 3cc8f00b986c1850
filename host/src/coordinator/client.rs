//! Connections to the Fluss coordinator for the tiering RPCs.
//!
//! Tiering RPCs are rare (a heartbeat every few seconds, two per commit), so each
//! connection carries one request at a time. Heartbeats have a connection of their own, so
//! they never queue behind another table's `PrepareLakeTableSnapshot` or
//! `CommitLakeTableSnapshot`: a slow commit cannot make the coordinator time the host's
//! other rounds out. Each call has one budget (`--rpc.timeout`) for everything it does —
//! locating the coordinator, connecting, the `ApiVersions` handshake and the request — so
//! a call never takes longer than that. Any failure drops the connection; the next request
//! finds the coordinator again through the [`CoordinatorLocator`] (the coordinator may have
//! moved after a fail-over) and redoes the handshake.
//!
//! On a listener whose protocol is SASL the coordinator accepts nothing but `ApiVersions`
//! and `Authenticate` until the connection has authenticated, so with [`PlainCredentials`]
//! every new connection authenticates (SASL/PLAIN, as Fluss's `PlainLoginModule` expects)
//! right after the handshake.

use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use prost::Message;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Mutex;

use super::api;
use super::codec::{self, MAX_RESPONSE_LEN};
use super::proto::*;
use crate::error::{Error, ErrorKind, Result};

/// Finds the coordinator's current `host:port`.
#[async_trait]
pub trait CoordinatorLocator: Send + Sync {
    async fn locate(&self) -> Result<String>;
}

/// A fixed address, for tests and for `--coordinator` overrides.
pub struct FixedAddress(pub String);

#[async_trait]
impl CoordinatorLocator for FixedAddress {
    async fn locate(&self) -> Result<String> {
        Ok(self.0.clone())
    }
}

/// SASL/PLAIN credentials: `client.security.sasl.username` and `.password` (or the same
/// pair from `client.security.sasl.jaas.config`). The password is never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct PlainCredentials {
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for PlainCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlainCredentials")
            .field("username", &self.username)
            .field("password", &"[redacted]")
            .finish()
    }
}

impl PlainCredentials {
    /// The PLAIN initial response: `\0<username>\0<password>` (RFC 4616, no authzid).
    fn token(&self) -> Vec<u8> {
        let mut token = Vec::with_capacity(self.username.len() + self.password.len() + 2);
        token.push(0);
        token.extend_from_slice(self.username.as_bytes());
        token.push(0);
        token.extend_from_slice(self.password.as_bytes());
        token
    }
}

/// The line for a SASL/PLAIN login `peer` refused: it names the user, never the password.
pub fn sasl_refusal(peer: &str, username: &str, why: &str) -> String {
    format!("{peer} refused SASL/PLAIN authentication of user '{username}': {why}")
}

pub struct CoordinatorClient {
    locator: Arc<dyn CoordinatorLocator>,
    /// Authenticate every connection with these, when the listener is SASL.
    sasl: Option<PlainCredentials>,
    /// Heartbeats only.
    heartbeats: Mutex<Option<TcpStream>>,
    /// Everything else (prepare, commit).
    commits: Mutex<Option<TcpStream>>,
    next_request_id: AtomicI32,
    /// The whole budget of one call, waiting for its connection included.
    request_timeout: Duration,
}

impl CoordinatorClient {
    pub fn new(locator: Arc<dyn CoordinatorLocator>, request_timeout: Duration) -> Self {
        Self {
            locator,
            sasl: None,
            heartbeats: Mutex::new(None),
            commits: Mutex::new(None),
            next_request_id: AtomicI32::new(0),
            request_timeout,
        }
    }

    /// Authenticates every connection with SASL/PLAIN.
    pub fn with_sasl_plain(mut self, credentials: Option<PlainCredentials>) -> Self {
        self.sasl = credentials;
        self
    }

    pub async fn heartbeat(
        &self,
        req: &LakeTieringHeartbeatRequest,
    ) -> Result<LakeTieringHeartbeatResponse> {
        self.call(&self.heartbeats, api::LAKE_TIERING_HEARTBEAT, req)
            .await
    }

    pub async fn prepare_lake_table_snapshot(
        &self,
        req: &PrepareLakeTableSnapshotRequest,
    ) -> Result<PrepareLakeTableSnapshotResponse> {
        self.call(&self.commits, api::PREPARE_LAKE_TABLE_SNAPSHOT, req)
            .await
    }

    pub async fn commit_lake_table_snapshot(
        &self,
        req: &CommitLakeTableSnapshotRequest,
    ) -> Result<CommitLakeTableSnapshotResponse> {
        self.call(&self.commits, api::COMMIT_LAKE_TABLE_SNAPSHOT, req)
            .await
    }

    /// The credentials Fluss hands out for its remote data dir (on the commit lane, so that
    /// no heartbeat waits behind it).
    pub async fn file_system_security_token(&self) -> Result<GetFileSystemSecurityTokenResponse> {
        self.call(
            &self.commits,
            api::GET_FILE_SYSTEM_SECURITY_TOKEN,
            &GetFileSystemSecurityTokenRequest {},
        )
        .await
    }

    /// Sends one request on `lane` and waits for its response, connecting first if needed,
    /// all within the call's budget.
    async fn call<Req: Message, Resp: Message + Default>(
        &self,
        lane: &Mutex<Option<TcpStream>>,
        api_key: i16,
        req: &Req,
    ) -> Result<Resp> {
        let deadline = tokio::time::Instant::now() + self.request_timeout;
        let timed_out = || {
            Error::new(
                ErrorKind::Unavailable,
                format!(
                    "coordinator did not answer API {api_key} within {:?}",
                    self.request_timeout
                ),
            )
        };
        let mut guard = tokio::time::timeout_at(deadline, lane.lock())
            .await
            .map_err(|_| timed_out())?;
        let result = tokio::time::timeout_at(deadline, async {
            if guard.is_none() {
                *guard = Some(self.connect().await?);
            }
            let stream = guard.as_mut().expect("connected above");
            self.exchange(stream, api_key, req).await
        })
        .await;
        let body = match result {
            Ok(Ok(body)) => body,
            Ok(Err(e)) => {
                *guard = None;
                return Err(e);
            }
            Err(_) => {
                *guard = None;
                return Err(timed_out());
            }
        };
        match body {
            Ok(bytes) => Resp::decode(bytes).map_err(|e| {
                Error::new(
                    ErrorKind::Protocol,
                    format!("undecodable response to API {api_key}"),
                )
                .with_source(e)
            }),
            Err(err) => Err(Error::new(
                ErrorKind::Coordinator,
                format!(
                    "API {api_key} failed: {}",
                    err.error_message.as_deref().unwrap_or("no message")
                ),
            )
            .with_code(err.error_code)),
        }
    }

    async fn exchange<Req: Message>(
        &self,
        stream: &mut TcpStream,
        api_key: i16,
        req: &Req,
    ) -> Result<std::result::Result<Bytes, ErrorResponse>> {
        let request_id = self.next_request_id.fetch_add(1, Ordering::Relaxed);
        let frame = codec::encode_request(api_key, 0, request_id, req);
        stream.write_all(&frame).await.map_err(io_error)?;
        let payload = read_frame(stream).await?;
        let response = codec::decode_response(payload)?;
        // One request at a time per connection: a server failure (no request id) is its answer.
        if let Some(answered) = response.request_id
            && answered != request_id
        {
            return Err(Error::new(
                ErrorKind::Protocol,
                format!("response for request {answered} arrived while waiting for {request_id}"),
            ));
        }
        Ok(response.body)
    }

    /// Opens a connection and checks, through `ApiVersions`, that the peer is a coordinator
    /// that serves the three tiering APIs at version 0.
    async fn connect(&self) -> Result<TcpStream> {
        // Every step is bounded by the budget of the call that connects.
        let addr = self.locator.locate().await?;
        let mut stream = TcpStream::connect(&addr).await.map_err(|e| {
            Error::new(
                ErrorKind::Unavailable,
                format!("cannot connect to coordinator {addr}"),
            )
            .with_source(e)
        })?;
        stream.set_nodelay(true).ok();
        let req = ApiVersionsRequest {
            client_software_name: "fluss-lake-host".into(),
            client_software_version: env!("CARGO_PKG_VERSION").into(),
        };
        let body = self
            .exchange(&mut stream, api::API_VERSIONS, &req)
            .await?
            .map_err(|e| {
                Error::new(
                    ErrorKind::Coordinator,
                    format!("ApiVersions refused by {addr}: {:?}", e.error_message),
                )
                .with_code(e.error_code)
            })?;
        let versions = ApiVersionsResponse::decode(body).map_err(|e| {
            Error::new(ErrorKind::Protocol, "undecodable ApiVersions response").with_source(e)
        })?;
        check_handshake(&addr, &versions)?;
        if let Some(credentials) = &self.sasl {
            self.authenticate(&mut stream, &addr, credentials).await?;
        }
        tracing::debug!(%addr, "connected to coordinator");
        Ok(stream)
    }

    /// One SASL/PLAIN step: PLAIN is complete after the client's initial response, so any
    /// challenge in the answer is ignored (as Java's client does once its side is complete).
    async fn authenticate(
        &self,
        stream: &mut TcpStream,
        addr: &str,
        credentials: &PlainCredentials,
    ) -> Result<()> {
        let req = AuthenticateRequest {
            protocol: "PLAIN".into(),
            token: credentials.token(),
        };
        match self.exchange(stream, api::AUTHENTICATE, &req).await? {
            Ok(body) => {
                AuthenticateResponse::decode(body).map_err(|e| {
                    Error::new(ErrorKind::Protocol, "undecodable Authenticate response")
                        .with_source(e)
                })?;
                Ok(())
            }
            Err(e) => {
                let why = e.error_message.as_deref().unwrap_or("no message");
                let kind = match e.error_code {
                    api::errors::RETRIABLE_AUTHENTICATE_EXCEPTION => ErrorKind::Unavailable,
                    _ => ErrorKind::Authentication,
                };
                let peer = format!("coordinator {addr}");
                let line = sasl_refusal(&peer, &credentials.username, why);
                Err(Error::new(kind, line).with_code(e.error_code))
            }
        }
    }
}

/// Refuses a peer that is not a coordinator or lacks a tiering API at version 0.
pub fn check_handshake(addr: &str, versions: &ApiVersionsResponse) -> Result<()> {
    if let Some(server_type) = versions.server_type
        && server_type != api::SERVER_TYPE_COORDINATOR
    {
        return Err(Error::new(
            ErrorKind::Protocol,
            format!("{addr} is not a coordinator (server type {server_type})"),
        ));
    }
    for key in [
        api::LAKE_TIERING_HEARTBEAT,
        api::PREPARE_LAKE_TABLE_SNAPSHOT,
        api::COMMIT_LAKE_TABLE_SNAPSHOT,
    ] {
        let supported = versions
            .api_versions
            .iter()
            .any(|v| v.api_key == i32::from(key) && v.min_version <= 0 && v.max_version >= 0);
        if !supported {
            return Err(Error::new(
                ErrorKind::Protocol,
                format!(
                    "coordinator {addr} does not serve API {key} version 0; is it Fluss >= 0.9?"
                ),
            ));
        }
    }
    Ok(())
}

async fn read_frame(stream: &mut TcpStream) -> Result<Bytes> {
    let mut len = [0u8; 4];
    stream.read_exact(&mut len).await.map_err(io_error)?;
    let len = i32::from_be_bytes(len);
    let len = usize::try_from(len)
        .ok()
        .filter(|l| *l <= MAX_RESPONSE_LEN)
        .ok_or_else(|| {
            Error::new(
                ErrorKind::Protocol,
                format!("invalid response length {len}"),
            )
        })?;
    let mut buf = vec![0u8; len];
    stream.read_exact(&mut buf).await.map_err(io_error)?;
    Ok(Bytes::from(buf))
}

fn io_error(e: std::io::Error) -> Error {
    Error::new(ErrorKind::Unavailable, "coordinator connection").with_source(e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;
    use tokio::net::TcpListener;

    /// A coordinator that answers `ApiVersions` and heartbeats and never answers a prepare.
    async fn fake_coordinator() -> String {
        fake_coordinator_with(None).await
    }

    /// [`fake_coordinator`] on a SASL listener when `sasl` is the PLAIN token it accepts: like
    /// Fluss, it answers nothing but `ApiVersions` and `Authenticate` before authentication.
    async fn fake_coordinator_with(sasl: Option<&'static [u8]>) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            loop {
                let (mut stream, _) = listener.accept().await.unwrap();
                tokio::spawn(async move {
                    let mut authenticated = sasl.is_none();
                    while let Ok(frame) = read_frame(&mut stream).await {
                        let (key, _, id, body) = codec::decode_request(frame).unwrap();
                        let refuse = |code: i32, message: &str| {
                            codec::encode_response(
                                id,
                                Err(&ErrorResponse {
                                    error_code: code,
                                    error_message: Some(message.into()),
                                }),
                            )
                        };
                        let reply = match key {
                            api::AUTHENTICATE => {
                                let req = AuthenticateRequest::decode(body).unwrap();
                                authenticated =
                                    req.protocol == "PLAIN" && Some(&req.token[..]) == sasl;
                                if authenticated {
                                    codec::encode_response(id, Ok(&AuthenticateResponse::default()))
                                } else {
                                    refuse(
                                        api::errors::AUTHENTICATE_EXCEPTION,
                                        "Authentication failed: Invalid username or password",
                                    )
                                }
                            }
                            k if k != api::API_VERSIONS && !authenticated => {
                                refuse(api::errors::AUTHENTICATE_EXCEPTION, "not authenticated")
                            }
                            api::API_VERSIONS => {
                                let versions = ApiVersionsResponse {
                                    api_versions: [
                                        api::LAKE_TIERING_HEARTBEAT,
                                        api::PREPARE_LAKE_TABLE_SNAPSHOT,
                                        api::COMMIT_LAKE_TABLE_SNAPSHOT,
                                    ]
                                    .iter()
                                    .map(|k| PbApiVersion {
                                        api_key: i32::from(*k),
                                        min_version: 0,
                                        max_version: 0,
                                    })
                                    .collect(),
                                    server_type: Some(api::SERVER_TYPE_COORDINATOR),
                                };
                                codec::encode_response(id, Ok(&versions))
                            }
                            api::LAKE_TIERING_HEARTBEAT => codec::encode_response(
                                id,
                                Ok(&LakeTieringHeartbeatResponse::default()),
                            ),
                            // A frozen commit path.
                            _ => std::future::pending().await,
                        };
                        stream.write_all(&reply).await.unwrap();
                    }
                });
            }
        });
        addr
    }

    #[tokio::test]
    async fn heartbeats_do_not_wait_behind_a_stuck_commit() {
        let addr = fake_coordinator().await;
        let client = Arc::new(CoordinatorClient::new(
            Arc::new(FixedAddress(addr)),
            Duration::from_secs(5),
        ));
        let stuck = {
            let client = client.clone();
            tokio::spawn(async move {
                client
                    .prepare_lake_table_snapshot(&PrepareLakeTableSnapshotRequest::default())
                    .await
            })
        };
        tokio::time::sleep(Duration::from_millis(200)).await;
        let started = Instant::now();
        client
            .heartbeat(&LakeTieringHeartbeatRequest::default())
            .await
            .unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "the heartbeat waited {:?} behind the prepare",
            started.elapsed()
        );
        let e = stuck.await.unwrap().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    }

    #[tokio::test]
    async fn connections_authenticate_with_sasl_plain() {
        let addr = fake_coordinator_with(Some(b"\0tiering\0s3cret")).await;
        let client = |password: &str| {
            CoordinatorClient::new(Arc::new(FixedAddress(addr.clone())), Duration::from_secs(5))
                .with_sasl_plain(Some(PlainCredentials {
                    username: "tiering".into(),
                    password: password.into(),
                }))
        };
        client("s3cret")
            .heartbeat(&LakeTieringHeartbeatRequest::default())
            .await
            .unwrap();
        let e = client("wrong")
            .heartbeat(&LakeTieringHeartbeatRequest::default())
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Authentication, "{e}");
        let m = e.to_string();
        assert!(
            m.contains("refused SASL/PLAIN authentication of user 'tiering'"),
            "{m}"
        );
        assert!(m.contains("Invalid username or password"), "{m}");
        assert!(!m.contains("wrong"), "{m}");
        // Without credentials the listener answers nothing but the handshake.
        let e =
            CoordinatorClient::new(Arc::new(FixedAddress(addr.clone())), Duration::from_secs(5))
                .heartbeat(&LakeTieringHeartbeatRequest::default())
                .await
                .unwrap_err();
        assert!(e.to_string().contains("not authenticated"), "{e}");
    }

    /// A locator that takes most of the budget.
    struct SlowLocator(String);

    #[async_trait]
    impl CoordinatorLocator for SlowLocator {
        async fn locate(&self) -> Result<String> {
            tokio::time::sleep(Duration::from_millis(1500)).await;
            Ok(self.0.clone())
        }
    }

    #[tokio::test]
    async fn one_budget_covers_locating_connecting_and_the_request() {
        let addr = fake_coordinator().await;
        let client = CoordinatorClient::new(Arc::new(SlowLocator(addr)), Duration::from_secs(2));
        let started = Instant::now();
        let e = client
            .prepare_lake_table_snapshot(&PrepareLakeTableSnapshotRequest::default())
            .await
            .unwrap_err();
        let elapsed = started.elapsed();
        assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
        assert!(
            elapsed < Duration::from_millis(3000),
            "a 2 s call took {elapsed:?}"
        );
    }
}
