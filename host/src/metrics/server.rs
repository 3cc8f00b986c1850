//! The listener of `--metrics.address`: `/metrics` (OpenMetrics text), `/healthz` (the
//! process answers) and `/readyz` (200 when every readiness check holds, 503 otherwise, one
//! line per check either way).
//!
//! A plain HTTP/1 server on hyper, bounded like every other input of the host: at most
//! [`MAX_CONNECTIONS`] connections at once, each closed after [`CONNECTION_TIMEOUT`], GET
//! only. It binds before plugins load, so a wrong address stops the host at once and
//! `/healthz` answers while the host starts.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use super::health::health;
use super::registry::metrics;
use crate::error::{Error, ErrorKind, Result};

/// Connections served at once; more wait in the kernel's backlog.
pub const MAX_CONNECTIONS: usize = 32;
/// Longest life of one connection (a scrape takes milliseconds).
pub const CONNECTION_TIMEOUT: Duration = Duration::from_secs(30);

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Binds `address`; the returned server runs with [`MetricsServer::serve`].
pub struct MetricsServer {
    listener: TcpListener,
}

impl MetricsServer {
    pub async fn bind(address: SocketAddr) -> Result<Self> {
        let listener = TcpListener::bind(address).await.map_err(|e| {
            Error::new(
                ErrorKind::Config,
                format!("--metrics.address {address}: cannot listen: {e}"),
            )
        })?;
        Ok(Self { listener })
    }

    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.listener.local_addr().ok()
    }

    /// Serves until the process exits.
    pub async fn serve(self) {
        let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
        let mut http = http1::Builder::new();
        http.timer(TokioTimer::new())
            .header_read_timeout(Duration::from_secs(10))
            .keep_alive(true);
        loop {
            let Ok(slot) = slots.clone().acquire_owned().await else {
                return;
            };
            let (stream, _) = match self.listener.accept().await {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!("metrics endpoint: accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let http = http.clone();
            tokio::spawn(async move {
                let conn = http.serve_connection(TokioIo::new(stream), service_fn(respond));
                let _ = tokio::time::timeout(CONNECTION_TIMEOUT, conn).await;
                drop(slot);
            });
        }
    }
}

async fn respond(
    req: Request<Incoming>,
) -> std::result::Result<Response<Full<Bytes>>, std::convert::Infallible> {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return Ok(text(StatusCode::METHOD_NOT_ALLOWED, "GET only\n".into()));
    }
    let response = match req.uri().path() {
        "/metrics" => {
            let mut r = Response::new(Full::new(Bytes::from(metrics().encode())));
            r.headers_mut().insert(
                hyper::header::CONTENT_TYPE,
                hyper::header::HeaderValue::from_static(OPENMETRICS),
            );
            r
        }
        "/healthz" => text(StatusCode::OK, "ok\n".into()),
        "/readyz" => {
            let checks = health().checks();
            let ready = checks.iter().all(|c| c.ok);
            let body: String = checks
                .iter()
                .map(|c| {
                    format!(
                        "{} {}: {}\n",
                        if c.ok { "ok" } else { "FAIL" },
                        c.name,
                        c.detail
                    )
                })
                .collect();
            let status = if ready {
                StatusCode::OK
            } else {
                StatusCode::SERVICE_UNAVAILABLE
            };
            text(status, body)
        }
        _ => text(
            StatusCode::NOT_FOUND,
            "not found: /metrics, /healthz and /readyz are served\n".into(),
        ),
    };
    Ok(response)
}

fn text(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}
