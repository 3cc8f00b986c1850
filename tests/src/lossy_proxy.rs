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
//! A fault switched on at run time ([`LossyProxy::set_fault`]) hits every request (or those
//! [`LossyProxy::set_fault_matching`] picks) until switched off: [`Fault::Failing`] answers a
//! share of them itself with an S3 error (500 `InternalError` or 503 `SlowDown`) without
//! forwarding them, so the store applies nothing; [`Fault::Slow`] delays them before forwarding.
//! Which requests fail and how long each waits come from a xorshift generator seeded by
//! [`LossyProxy::start_seeded`]. Answers are still lost as armed, on the requests a fault lets
//! through.
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
type RequestMatcher = Box<dyn Fn(&Method, &str) -> bool + Send + Sync>;

/// A fault the proxy injects into the requests it matches, until switched off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// `permille` of the requests (drawn one by one) are answered by the proxy, not forwarded:
    /// half with `500 InternalError`, half with `503 SlowDown`, each with an S3 XML error body.
    /// The store never sees them, so nothing of theirs is applied; S3 clients retry both.
    Failing { permille: u16 },
    /// Every request waits a drawn time between `ms / 2` and `ms` milliseconds, then is
    /// forwarded as usual.
    Slow { ms: u64 },
}

/// What the faults did so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Injected {
    /// Requests answered `500 InternalError` without being forwarded.
    pub internal_errors: usize,
    /// Requests answered `503 SlowDown` without being forwarded.
    pub slow_downs: usize,
    /// Requests delayed before being forwarded.
    pub delayed: usize,
}

/// The fault switched on, and which requests it hits.
struct ActiveFault {
    fault: Fault,
    matches: RequestMatcher,
}

/// What a fault does to one request.
enum Verdict {
    Forward,
    Delay(std::time::Duration),
    Answer(StatusCode),
}

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

struct State {
    rules: Vec<Rule>,
    puts: Vec<ConditionalPut>,
    requests: usize,
    fault: Option<ActiveFault>,
    rng: crate::Rng,
    injected: Injected,
}

impl State {
    fn new(seed: u64) -> State {
        State {
            rules: Vec::new(),
            puts: Vec::new(),
            requests: 0,
            fault: None,
            // xorshift stays at 0 from 0, and small seeds start with small draws: spread the
            // seed over the word first (odd, so never 0).
            rng: crate::Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1),
            injected: Injected::default(),
        }
    }

    /// Draws what the fault switched on does to this request (`target`: path and query), and
    /// counts it.
    fn verdict(&mut self, method: &Method, target: &str) -> Verdict {
        let Some(active) = &self.fault else {
            return Verdict::Forward;
        };
        if !(active.matches)(method, target) {
            return Verdict::Forward;
        }
        match active.fault {
            Fault::Failing { permille } => {
                if self.rng.below(1000) >= u64::from(permille) {
                    return Verdict::Forward;
                }
                if self.rng.below(2) == 0 {
                    self.injected.internal_errors += 1;
                    Verdict::Answer(StatusCode::INTERNAL_SERVER_ERROR)
                } else {
                    self.injected.slow_downs += 1;
                    Verdict::Answer(StatusCode::SERVICE_UNAVAILABLE)
                }
            }
            Fault::Slow { ms } => {
                let ms = ms / 2 + self.rng.below(ms - ms / 2 + 1);
                self.injected.delayed += 1;
                Verdict::Delay(std::time::Duration::from_millis(ms))
            }
        }
    }
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
        LossyProxy::start_seeded(upstream, 0)
    }

    /// [`Self::start`], its faults drawn from a generator seeded with `seed`.
    pub fn start_seeded(upstream: &str, seed: u64) -> LossyProxy {
        let upstream = upstream
            .trim_end_matches('/')
            .strip_prefix("http://")
            .unwrap_or_else(|| panic!("the lossy proxy forwards to http:// only: {upstream}"))
            .to_string();
        let state = Arc::new(Mutex::new(State::new(seed)));
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

    /// Switches `fault` on for every request from now on (replacing the fault on before), or
    /// off with `None`. Requests already waiting out a delay still wait.
    pub fn set_fault(&self, fault: Option<Fault>) {
        self.lock().fault = fault.map(|fault| ActiveFault {
            fault,
            matches: Box::new(|_, _| true),
        });
    }

    /// [`Self::set_fault`] for the requests whose method and target (path and query, as sent:
    /// `/<bucket>/<key>?uploadId=…`, path-style) `matches`; the others are forwarded as usual.
    pub fn set_fault_matching(
        &self,
        fault: Fault,
        matches: impl Fn(&Method, &str) -> bool + Send + Sync + 'static,
    ) {
        self.lock().fault = Some(ActiveFault {
            fault,
            matches: Box::new(matches),
        });
    }

    /// The fault switched on, if any.
    pub fn fault(&self) -> Option<Fault> {
        self.lock().fault.as_ref().map(|a| a.fault)
    }

    /// What the faults did so far (counted across switches).
    pub fn injected(&self) -> Injected {
        self.lock().injected
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
    let target = parts.uri.path_and_query().map_or("/", |t| t.as_str());
    let verdict = state
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .verdict(&parts.method, target);
    match verdict {
        Verdict::Forward => {}
        Verdict::Delay(wait) => tokio::time::sleep(wait).await,
        Verdict::Answer(status) => return Ok(s3_error(status, &path)),
    }
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

/// The answer S3 gives when it fails a request: `status` (500 or 503) with its XML error
/// body (`InternalError`, `SlowDown`).
fn s3_error(status: StatusCode, path: &str) -> Response<Body> {
    let (code, message) = if status == StatusCode::SERVICE_UNAVAILABLE {
        ("SlowDown", "Please reduce your request rate.")
    } else {
        (
            "InternalError",
            "We encountered an internal error. Please try again.",
        )
    };
    let xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code>\
         <Message>{message}</Message><Resource>{path}</Resource>\
         <RequestId>lossy-proxy</RequestId></Error>"
    );
    Response::builder()
        .status(status)
        .header(hyper::header::CONTENT_TYPE, "application/xml")
        .header("x-amz-request-id", "lossy-proxy")
        .body(
            Full::new(Bytes::from(xml))
                .map_err(|never: Infallible| match never {})
                .boxed(),
        )
        .expect("a valid response")
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, Instant};

    use super::*;

    /// An upstream that answers every request `200 ok`, counting them.
    fn upstream() -> (LoopbackServer, Arc<AtomicUsize>) {
        let seen = Arc::new(AtomicUsize::new(0));
        let counter = seen.clone();
        let server = LoopbackServer::start("fake-store", move |listener| async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let counter = counter.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |_req: Request<Incoming>| {
                        counter.fetch_add(1, Ordering::SeqCst);
                        async { Ok::<_, Infallible>(Response::new(Full::new(Bytes::from("ok")))) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        (server, seen)
    }

    /// Sends `method path` (a conditional PUT when `conditional`) through the proxy: the
    /// status and body, or `None` when the connection closed without an answer.
    async fn call(
        proxy: &LossyProxy,
        method: Method,
        path: &str,
        conditional: bool,
    ) -> Option<(u16, String)> {
        let mut req = Request::builder()
            .method(method)
            .uri(path)
            .header("host", "s3");
        if conditional {
            req = req.header(IF_NONE_MATCH, "*");
        }
        let req = req.body(Full::new(Bytes::from("body"))).unwrap();
        let addr = proxy.endpoint().strip_prefix("http://").unwrap();
        let response = send(addr, req).await.ok()?;
        let status = response.status().as_u16();
        let body = response.into_body().collect().await.ok()?.to_bytes();
        Some((status, String::from_utf8_lossy(&body).into_owned()))
    }

    #[tokio::test]
    async fn faults_switch_at_run_time_and_lost_answers_still_work() {
        let (store, seen) = upstream();
        let proxy = LossyProxy::start_seeded(store.endpoint(), 35);

        // Off: forwarded.
        assert_eq!(
            call(&proxy, Method::GET, "/b/k", false).await,
            Some((200, "ok".into()))
        );
        assert_eq!(seen.load(Ordering::SeqCst), 1);

        // Every request failed, none forwarded; both S3 errors show up.
        proxy.set_fault(Some(Fault::Failing { permille: 1000 }));
        assert_eq!(proxy.fault(), Some(Fault::Failing { permille: 1000 }));
        let mut statuses = Vec::new();
        for _ in 0..40 {
            let (status, body) = call(&proxy, Method::PUT, "/b/k", false).await.unwrap();
            let code = if status == 500 {
                "InternalError"
            } else {
                "SlowDown"
            };
            assert!(body.contains(&format!("<Code>{code}</Code>")), "{body}");
            assert!(body.contains("<Resource>/b/k</Resource>"), "{body}");
            statuses.push(status);
        }
        assert!(
            statuses.contains(&500) && statuses.contains(&503),
            "{statuses:?}"
        );
        assert_eq!(
            seen.load(Ordering::SeqCst),
            1,
            "a failed request was forwarded"
        );
        let injected = proxy.injected();
        assert_eq!(injected.internal_errors + injected.slow_downs, 40);

        // A share of them: about permille / 1000, and only those matching.
        proxy.set_fault_matching(Fault::Failing { permille: 300 }, |m, target| {
            m == Method::POST && target.contains("uploadId=")
        });
        let mut failed = 0;
        for _ in 0..200 {
            let (status, _) = call(&proxy, Method::POST, "/b/k?uploadId=1", false)
                .await
                .unwrap();
            failed += usize::from(status != 200);
        }
        assert!(
            (30..=90).contains(&failed),
            "{failed} of 200 failed at 300 permille"
        );
        assert_eq!(
            call(&proxy, Method::POST, "/b/k?uploads", false).await,
            Some((200, "ok".into())),
            "a request the fault does not match"
        );

        // Slow: each request waits between ms / 2 and ms, then is forwarded.
        proxy.set_fault(Some(Fault::Slow { ms: 300 }));
        let before = seen.load(Ordering::SeqCst);
        let started = Instant::now();
        assert_eq!(
            call(&proxy, Method::GET, "/b/k", false).await,
            Some((200, "ok".into()))
        );
        assert!(
            started.elapsed() >= Duration::from_millis(150),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(seen.load(Ordering::SeqCst), before + 1);
        assert_eq!(proxy.injected().delayed, 1);

        // A lost answer still works with a fault on: forwarded, then no answer.
        proxy.lose_answers(1, |p| p == "/b/commit");
        let before = seen.load(Ordering::SeqCst);
        assert_eq!(call(&proxy, Method::PUT, "/b/commit", true).await, None);
        assert_eq!(
            seen.load(Ordering::SeqCst),
            before + 1,
            "the lost PUT was applied"
        );
        assert_eq!(proxy.lost(), vec!["/b/commit".to_string()]);

        // Off again.
        proxy.set_fault(None);
        let started = Instant::now();
        assert_eq!(
            call(&proxy, Method::GET, "/b/k", false).await,
            Some((200, "ok".into()))
        );
        assert!(started.elapsed() < Duration::from_millis(150));
    }
}
