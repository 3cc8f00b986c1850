//! A reverse proxy in front of the test S3 server that loses the store's answers on purpose.
//!
//! [`LossyProxy::start`] listens on a loopback port and forwards every HTTP/1.1 request to
//! the server unchanged (headers included, so the request's SigV4 signature, made for the
//! proxy's `Host`, still verifies). Once armed ([`LossyProxy::lose_answers`]), the next
//! conditional PUTs (`If-None-Match`) whose path matches are forwarded, the store's whole
//! answer is awaited (so the write has landed, or been refused), and then the client's
//! connection is closed without a byte of it: the client sees its request fail after the
//! store applied it. Each such path is recorded ([`LossyProxy::lost`]), as is the store's
//! status for every conditional PUT ([`LossyProxy::conditional_puts`]), so a test can show the
//! fault happened and how the client's own retry was answered.
//!
//! The proxy runs on a runtime of its own, on a thread of its own, so tests that block their
//! own runtime (the Python readers) never stall it; it stops when dropped.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::IF_NONE_MATCH;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};

pub(crate) type Body = BoxBody<Bytes, hyper::Error>;
type PathMatcher = Box<dyn Fn(&str) -> bool + Send + Sync>;
type BodyMatcher = Box<dyn Fn(&[u8]) -> bool + Send + Sync>;

/// Which answers to lose: conditional PUTs whose path and body match, `remaining` more times.
struct Rule {
    path: PathMatcher,
    body: BodyMatcher,
    remaining: usize,
}

/// A conditional PUT the proxy forwarded: its path, the store's status, and whether its
/// answer was lost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConditionalPut {
    pub path: String,
    pub status: u16,
    pub lost: bool,
}

#[derive(Default)]
struct State {
    rules: Vec<Rule>,
    puts: Vec<ConditionalPut>,
    requests: usize,
}

/// The proxy; stopped (its runtime shut down, its port closed) when dropped.
pub struct LossyProxy {
    server: LoopbackServer,
    state: Arc<Mutex<State>>,
}

/// A server on `127.0.0.1:<free port>` running on a runtime of its own, on a thread of its
/// own (so tests that block their runtime never stall it); stopped when dropped.
pub struct LoopbackServer {
    endpoint: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl LoopbackServer {
    /// Binds a port and runs `serve` on its listener until dropped.
    pub fn start<F, Fut>(name: &str, serve: F) -> LoopbackServer
    where
        F: FnOnce(TcpListener) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + Send,
    {
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel();
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                    .expect("a loopback server's runtime");
                rt.block_on(async move {
                    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
                    addr_tx.send(listener.local_addr().unwrap()).unwrap();
                    tokio::select! {
                        _ = serve(listener) => {}
                        _ = stop_rx => {}
                    }
                });
                // Connections still open are dropped with the runtime.
                rt.shutdown_background();
            })
            .expect("a loopback server's thread");
        let addr = addr_rx.recv().expect("the loopback server did not start");
        LoopbackServer {
            endpoint: format!("http://{addr}"),
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }
}

impl Drop for LoopbackServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl LossyProxy {
    /// A proxy on `127.0.0.1:<free port>` in front of `upstream` (`http://host:port`),
    /// forwarding everything until armed.
    pub fn start(upstream: &str) -> LossyProxy {
        let upstream = upstream
            .trim_end_matches('/')
            .strip_prefix("http://")
            .unwrap_or_else(|| panic!("the lossy proxy forwards to http:// only: {upstream}"))
            .to_string();
        let state = Arc::new(Mutex::new(State::default()));
        let shared = state.clone();
        let server = LoopbackServer::start("lossy-proxy", move |listener| {
            accept_loop(listener, upstream, shared)
        });
        LossyProxy { server, state }
    }

    /// `http://127.0.0.1:<port>`: the endpoint to give S3 clients instead of the server's.
    pub fn endpoint(&self) -> &str {
        self.server.endpoint()
    }

    /// Loses the answers to the next `times` conditional PUTs whose path (as sent:
    /// `/<bucket>/<key>`, path-style) `matches`. Rules add up: a request takes the first
    /// rule it matches that has answers left to lose.
    pub fn lose_answers(
        &self,
        times: usize,
        matches: impl Fn(&str) -> bool + Send + Sync + 'static,
    ) {
        self.lose_answers_to(times, matches, |_| true);
    }

    /// [`Self::lose_answers`] for the PUTs whose path matches `path` and whose body matches
    /// `body` (a Paimon snapshot of a given commit kind, say).
    pub fn lose_answers_to(
        &self,
        times: usize,
        path: impl Fn(&str) -> bool + Send + Sync + 'static,
        body: impl Fn(&[u8]) -> bool + Send + Sync + 'static,
    ) {
        self.lock().rules.push(Rule {
            path: Box::new(path),
            body: Box::new(body),
            remaining: times,
        });
    }

    /// Forwards everything again: answers still to lose are forgotten.
    pub fn disarm(&self) {
        self.lock().rules.clear();
    }

    /// How many more answers the rules will lose (0 when disarmed or spent).
    pub fn pending(&self) -> usize {
        self.lock().rules.iter().map(|r| r.remaining).sum()
    }

    /// The paths of the conditional PUTs whose answers were lost, in order.
    pub fn lost(&self) -> Vec<String> {
        self.lock()
            .puts
            .iter()
            .filter(|p| p.lost)
            .map(|p| p.path.clone())
            .collect()
    }

    /// Every conditional PUT forwarded so far, in order.
    pub fn conditional_puts(&self) -> Vec<ConditionalPut> {
        self.lock().puts.clone()
    }

    /// Requests forwarded so far (of any kind).
    pub fn requests(&self) -> usize {
        self.lock().requests
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

async fn accept_loop(listener: TcpListener, upstream: String, state: Arc<Mutex<State>>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let upstream = upstream.clone();
        let state = state.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req| forward(req, upstream.clone(), state.clone()));
            // A service error (a lost answer) ends the connection without a response.
            let _ = hyper::server::conn::http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// The error that makes hyper close the client's connection without answering.
#[derive(Debug)]
struct AnswerLost(String);

impl std::fmt::Display for AnswerLost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the answer to PUT {} is lost on purpose", self.0)
    }
}

impl std::error::Error for AnswerLost {}

async fn forward(
    req: Request<Incoming>,
    upstream: String,
    state: Arc<Mutex<State>>,
) -> Result<Response<Body>, Box<dyn std::error::Error + Send + Sync>> {
    let path = req.uri().path().to_string();
    let conditional = req.method() == Method::PUT && req.headers().contains_key(IF_NONE_MATCH);
    let (parts, body) = req.into_parts();
    let body = match body.collect().await {
        Ok(b) => b.to_bytes(),
        // The client went away mid-request: nothing to forward.
        Err(e) => return Err(Box::new(e)),
    };
    // Whether to lose the answer is decided before forwarding, so that two requests racing
    // never both take a rule's last answer.
    let lose = conditional && {
        let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
        match s
            .rules
            .iter_mut()
            .find(|r| r.remaining > 0 && (r.path)(&path) && (r.body)(&body))
        {
            Some(rule) => {
                rule.remaining -= 1;
                true
            }
            None => false,
        }
    };
    let upstream_req = Request::from_parts(parts, Full::new(body));
    let response = match send(&upstream, upstream_req).await {
        Ok(r) => r,
        Err(e) => return Ok(bad_gateway(&e)),
    };
    {
        let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
        s.requests += 1;
        if conditional {
            s.puts.push(ConditionalPut {
                path: path.clone(),
                status: response.status().as_u16(),
                lost: lose,
            });
        }
    }
    if lose {
        // The whole answer first: the store has finished with the request.
        let _ = response.into_body().collect().await;
        return Err(Box::new(AnswerLost(path)));
    }
    let (parts, body) = response.into_parts();
    Ok(Response::from_parts(parts, body.boxed()))
}

/// Sends one request on a connection of its own to the store.
pub(crate) async fn send(
    upstream: &str,
    req: Request<Full<Bytes>>,
) -> Result<Response<Incoming>, Box<dyn std::error::Error + Send + Sync>> {
    let stream = TcpStream::connect(upstream).await?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    // Drives the connection until the response body is read (or dropped).
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender.send_request(req).await?)
}

pub(crate) fn bad_gateway(e: &dyn std::fmt::Display) -> Response<Body> {
    let mut r = Response::new(
        Full::new(Bytes::from(format!(
            "lossy proxy: the store is unreachable: {e}"
        )))
        .map_err(|never: Infallible| match never {})
        .boxed(),
    );
    *r.status_mut() = StatusCode::BAD_GATEWAY;
    r
}
