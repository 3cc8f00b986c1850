//! A gate in front of the test Hive Metastore: a TCP proxy that forwards every connection
//! unchanged and can hold, or lose the answer to, the next call of a Thrift method.
//!
//! The host opens one connection per metastore call, so the gate reads the first message
//! header of each connection (Thrift's strict binary protocol: a version word, the method's
//! name, a sequence id) and knows the call. Armed with [`ThriftGate::hold_next`], it keeps the
//! next call of that method until [`ThriftGate::release`]; with [`ThriftGate::lose_next`], it
//! forwards the call, waits for the metastore's whole answer (so the change has been applied,
//! or refused) and closes the host's connection without a byte of it. Every call is recorded
//! with what the metastore answered ([`GateCall`]).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::lossy_proxy::LoopbackServer;

/// A call that went through the gate.
#[derive(Debug, Clone)]
pub struct GateCall {
    pub method: String,
    /// The metastore's answer, as bytes (searched for its messages).
    pub answer: Vec<u8>,
    /// Whether the host never saw the answer (lost on purpose).
    pub lost: bool,
}

impl GateCall {
    /// Whether the answer holds `text` (an exception's message).
    pub fn answered(&self, text: &str) -> bool {
        self.answer
            .windows(text.len())
            .any(|w| w == text.as_bytes())
    }
}

/// A call to act on: a method, and text its request holds (a table's name).
#[derive(Clone)]
struct Target {
    method: String,
    holding: String,
}

impl Target {
    fn matches(&self, method: &str, request: &[u8]) -> bool {
        self.method == method
            && request
                .windows(self.holding.len())
                .any(|w| w == self.holding.as_bytes())
    }
}

#[derive(Default)]
struct State {
    hold: Option<Target>,
    held: usize,
    lose: Option<Target>,
    calls: Vec<GateCall>,
}

/// The gate; stopped when dropped.
pub struct ThriftGate {
    server: LoopbackServer,
    state: Arc<Mutex<State>>,
    release: Arc<tokio::sync::Semaphore>,
}

impl ThriftGate {
    /// A gate on `127.0.0.1:<free port>` in front of `upstream` (`host:port`).
    pub fn start(upstream: &str) -> ThriftGate {
        let upstream = upstream.trim_start_matches("thrift://").to_string();
        let state = Arc::new(Mutex::new(State::default()));
        let release = Arc::new(tokio::sync::Semaphore::new(0));
        let (s, r) = (state.clone(), release.clone());
        let server = LoopbackServer::start("thrift-gate", move |listener| {
            accept(listener, upstream, s, r)
        });
        ThriftGate {
            server,
            state,
            release,
        }
    }

    /// `thrift://127.0.0.1:<port>`.
    pub fn uri(&self) -> String {
        self.server.endpoint().replace("http://", "thrift://")
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Holds the next call of `method` whose request holds `holding` (a table's name) until
    /// [`ThriftGate::release`].
    pub fn hold_next(&self, method: &str, holding: &str) {
        self.lock().hold = Some(Target {
            method: method.into(),
            holding: holding.into(),
        });
    }

    /// How many calls were held so far.
    pub fn held(&self) -> usize {
        self.lock().held
    }

    pub fn release(&self) {
        self.release.add_permits(1);
    }

    /// Loses the answer to the next call of `method` whose request holds `holding`, after the
    /// metastore gave it.
    pub fn lose_next(&self, method: &str, holding: &str) {
        self.lock().lose = Some(Target {
            method: method.into(),
            holding: holding.into(),
        });
    }

    /// Every call so far.
    pub fn calls(&self) -> Vec<GateCall> {
        self.lock().calls.clone()
    }
}

async fn accept(
    listener: TcpListener,
    upstream: String,
    state: Arc<Mutex<State>>,
    release: Arc<tokio::sync::Semaphore>,
) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        let (upstream, state, release) = (upstream.clone(), state.clone(), release.clone());
        tokio::spawn(async move {
            let _ = relay(client, &upstream, &state, &release).await;
        });
    }
}

/// The method a call's first bytes name, once they are all there.
fn method(head: &[u8]) -> Option<String> {
    let len = u32::from_be_bytes(head.get(4..8)?.try_into().ok()?) as usize;
    let name = head.get(8..8 + len)?;
    Some(String::from_utf8_lossy(name).into_owned())
}

async fn relay(
    mut client: TcpStream,
    upstream: &str,
    state: &Mutex<State>,
    release: &tokio::sync::Semaphore,
) -> std::io::Result<()> {
    let mut first = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    let name = loop {
        if let Some(m) = method(&first) {
            break m;
        }
        let n = client.read(&mut chunk).await?;
        if n == 0 || first.len() > 4096 {
            return Ok(());
        }
        first.extend_from_slice(&chunk[..n]);
    };
    // The arguments (names first) follow the header: read what comes in the next moment.
    while first.len() < 1024
        && let Ok(Ok(n)) =
            tokio::time::timeout(Duration::from_millis(100), client.read(&mut chunk)).await
        && n > 0
    {
        first.extend_from_slice(&chunk[..n]);
    }
    let (hold, lose) = {
        let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
        let hold = s.hold.as_ref().is_some_and(|t| t.matches(&name, &first));
        if hold {
            s.hold = None;
            s.held += 1;
        }
        let lose = s.lose.as_ref().is_some_and(|t| t.matches(&name, &first));
        if lose {
            s.lose = None;
        }
        (hold, lose)
    };
    if hold && let Ok(permit) = release.acquire().await {
        permit.forget();
    }
    let mut server = TcpStream::connect(upstream).await?;
    server.write_all(&first).await?;
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let upload = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut client_read, &mut server_write).await;
    });
    // The answer: everything the metastore sends until it pauses (one call per connection;
    // an answer comes in one burst) or closes.
    let mut answer = Vec::new();
    loop {
        let wait = if answer.is_empty() {
            Duration::from_secs(600)
        } else {
            Duration::from_millis(300)
        };
        match tokio::time::timeout(wait, server_read.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => {
                answer.extend_from_slice(&chunk[..n]);
                if !lose {
                    client_write.write_all(&chunk[..n]).await?;
                }
            }
            _ => break,
        }
    }
    state
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .calls
        .push(GateCall {
            method: name,
            answer,
            lost: lose,
        });
    upload.abort();
    Ok(())
}
