//! The `Authorization` header of catalog requests.
//!
//! OAuth2 client credentials follow Iceberg's `OAuth2Util`: a form POST of `grant_type`,
//! `client_id`, `client_secret`, `scope` (and `audience`, `resource`) to `oauth2-server-uri`
//! (`v1/oauth/tokens` under the catalog by default). The token is fetched again before it
//! expires (by its `expires_in`, else the `exp` of a JWT) and once more when the catalog
//! answers 401. Java refreshes by token exchange first; the host always asks with its client
//! credentials again, which every OAuth2 server that issued the first token accepts.
//! Issued tokens are remembered for redaction and never logged.

use std::fmt;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use reqwest::header::{CONTENT_TYPE, HeaderValue};
use reqwest::{StatusCode, Url};
use serde::Deserialize;

use super::options::{CatalogAuth, Secret};
use super::rest::{
    BodyError, Inner, MAX_ERROR_BODY_BYTES, MAX_MESSAGE_CHARS, MAX_TOKEN_RESPONSE_BYTES, Op,
    clean_message, encode_segment, read_body, status_error, transport_error,
};
use crate::error::{Error, ErrorKind, Result};

/// Longest lead time of a refresh before a token expires.
const MAX_REFRESH_LEAD: Duration = Duration::from_secs(300);
/// Longest token accepted (a JWT with many claims is a few kilobytes).
const MAX_TOKEN_BYTES: usize = 16 * 1024;

pub(crate) enum Authenticator {
    None,
    /// A static bearer token or basic credentials: sent as they are, never refreshed.
    Static {
        header: HeaderValue,
        what: &'static str,
    },
    OAuth(Box<OAuth>),
}

pub(crate) struct OAuth {
    client_id: Option<String>,
    client_secret: Secret,
    url: Url,
    /// The token endpoint is the catalog's own (same origin): `header.*` go to it too, as in
    /// Java; an outside identity provider does not get them.
    same_origin: bool,
    scope: String,
    audience: Option<String>,
    resource: Option<String>,
    refresh: bool,
    current: tokio::sync::Mutex<Option<Issued>>,
}

struct Issued {
    header: HeaderValue,
    refresh_at: Option<Instant>,
    expires_at: Option<Instant>,
}

impl fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

/// An OAuth2 token answer (RFC 6749 section 5.1).
#[derive(Deserialize)]
struct TokenWire {
    access_token: String,
    token_type: String,
    expires_in: Option<i64>,
}

impl Authenticator {
    pub(crate) fn new(auth: &CatalogAuth, uri: &str) -> Result<Self> {
        let sensitive = |value: String| {
            let mut v = HeaderValue::from_str(&value).map_err(|_| {
                Error::new(
                    ErrorKind::Config,
                    "Iceberg catalog credentials are not a valid HTTP header value",
                )
            })?;
            v.set_sensitive(true);
            Ok::<_, Error>(v)
        };
        Ok(match auth {
            CatalogAuth::None => Authenticator::None,
            CatalogAuth::Token(token) => Authenticator::Static {
                header: sensitive(format!("Bearer {}", token.expose()))?,
                what: "bearer token",
            },
            CatalogAuth::Basic { username, password } => Authenticator::Static {
                header: sensitive(format!(
                    "Basic {}",
                    base64_encode(format!("{username}:{}", password.expose()).as_bytes())
                ))?,
                what: "basic",
            },
            CatalogAuth::ClientCredentials {
                client_id,
                client_secret,
                server_uri,
                scope,
                audience,
                resource,
                refresh,
            } => {
                let base = Url::parse(&format!("{uri}/")).map_err(|e| {
                    Error::new(ErrorKind::Config, format!("Iceberg catalog uri: {e}"))
                })?;
                let url = if server_uri.contains("://") {
                    Url::parse(server_uri)
                } else {
                    base.join(server_uri)
                }
                .map_err(|e| {
                    Error::new(
                        ErrorKind::Config,
                        format!("Iceberg catalog option oauth2-server-uri: {e}"),
                    )
                })?;
                Authenticator::OAuth(Box::new(OAuth {
                    client_id: client_id.clone(),
                    client_secret: client_secret.clone(),
                    same_origin: url.origin() == base.origin(),
                    url,
                    scope: scope.clone(),
                    audience: audience.clone(),
                    resource: resource.clone(),
                    refresh: *refresh,
                    current: tokio::sync::Mutex::new(None),
                }))
            }
        })
    }

    /// How the host authenticates, for logs (no secret).
    pub(crate) fn describe(&self) -> String {
        match self {
            Authenticator::None => "none".into(),
            Authenticator::Static { what, .. } => (*what).into(),
            Authenticator::OAuth(o) => format!(
                "oauth2 client credentials{} at {}",
                o.client_id
                    .as_ref()
                    .map(|id| format!(" of client '{id}'"))
                    .unwrap_or_default(),
                o.url
            ),
        }
    }

    /// The `Authorization` header of the next request, fetching a token when the current one
    /// is missing, expired, or due for refresh.
    pub(crate) async fn header(&self, inner: &Inner) -> Result<Option<HeaderValue>> {
        let o = match self {
            Authenticator::None => return Ok(None),
            Authenticator::Static { header, .. } => return Ok(Some(header.clone())),
            Authenticator::OAuth(o) => o,
        };
        let mut current = o.current.lock().await;
        let now = Instant::now();
        if let Some(t) = current.as_ref() {
            let fresh = !o.refresh || t.refresh_at.is_none_or(|r| now < r);
            let valid = t.expires_at.is_none_or(|e| now < e);
            if fresh && valid {
                return Ok(Some(t.header.clone()));
            }
        }
        match o.fetch(inner).await {
            Ok(t) => {
                let header = t.header.clone();
                *current = Some(t);
                Ok(Some(header))
            }
            // A failed refresh of a token that is still valid is not a failed call.
            Err(e) => match current.as_ref() {
                Some(t) if t.expires_at.is_none_or(|x| now < x) => {
                    tracing::warn!(
                        uri = %inner.uri,
                        "refreshing the Iceberg REST catalog's OAuth2 token failed; the current one is used until it expires: {e}"
                    );
                    Ok(Some(t.header.clone()))
                }
                _ => Err(e),
            },
        }
    }

    /// After a 401 to `stale`: forgets it. True when a retry can succeed (a new token will be
    /// fetched); a static token or basic credentials would be refused again.
    pub(crate) async fn invalidate(&self, stale: &HeaderValue) -> bool {
        match self {
            Authenticator::OAuth(o) => {
                let mut current = o.current.lock().await;
                if current.as_ref().is_some_and(|t| t.header == *stale) {
                    *current = None;
                }
                true
            }
            _ => false,
        }
    }
}

impl OAuth {
    async fn fetch(&self, inner: &Inner) -> Result<Issued> {
        let shown = if self.same_origin {
            inner.uri.clone()
        } else {
            let mut u = self.url.clone();
            u.set_query(None);
            u.to_string()
        };
        let mut form = vec![("grant_type", "client_credentials")];
        if let Some(id) = &self.client_id {
            form.push(("client_id", id));
        }
        form.push(("client_secret", self.client_secret.expose()));
        form.push(("scope", &self.scope));
        if let Some(a) = &self.audience {
            form.push(("audience", a));
        }
        if let Some(r) = &self.resource {
            form.push(("resource", r));
        }
        let form: Vec<String> = form
            .into_iter()
            .map(|(k, v)| format!("{k}={}", encode_segment(v)))
            .collect();
        let mut request = inner
            .http
            .post(self.url.clone())
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(form.join("&"));
        if self.same_origin {
            request = request.headers(inner.headers.clone());
        }
        let fetched_at = Instant::now();
        let redact = |e: Error| Error::new(e.kind(), inner.redactor.apply(e.message().to_string()));
        let response = request
            .send()
            .await
            .map_err(|e| redact(transport_error(Op::Token, &e, &shown, inner.deadline)))?;
        let status = response.status();
        let success = status == StatusCode::OK;
        let limit = if success {
            MAX_TOKEN_RESPONSE_BYTES
        } else {
            MAX_ERROR_BODY_BYTES
        };
        let body = match read_body(response, limit, !success).await {
            Ok(b) => b,
            Err(BodyError::Transport(e)) => {
                return Err(redact(transport_error(
                    Op::Token,
                    &e,
                    &shown,
                    inner.deadline,
                )));
            }
            Err(BodyError::TooLarge) => {
                return Err(Error::new(
                    ErrorKind::Protocol,
                    format!("the OAuth2 token answer of {shown} is larger than {limit} bytes"),
                ));
            }
        };
        if !success {
            return Err(redact(status_error(Op::Token, status, &body, &shown)));
        }
        let protocol = |why: String| {
            Error::new(
                ErrorKind::Protocol,
                format!("the OAuth2 token answer of {shown}: {why}"),
            )
        };
        let wire: TokenWire = serde_json::from_slice(&body).map_err(|e| {
            // serde's messages name fields, never values.
            protocol(clean_message(&e.to_string(), MAX_MESSAGE_CHARS))
        })?;
        if !wire.token_type.eq_ignore_ascii_case("bearer")
            && !wire.token_type.eq_ignore_ascii_case("n_a")
        {
            return Err(protocol(format!(
                "token type '{}' is not bearer",
                clean_message(&wire.token_type, 40)
            )));
        }
        if wire.access_token.is_empty() || wire.access_token.len() > MAX_TOKEN_BYTES {
            return Err(protocol(format!(
                "the access token is empty or longer than {MAX_TOKEN_BYTES} bytes"
            )));
        }
        inner.redactor.add(&wire.access_token);
        let mut header = HeaderValue::from_str(&format!("Bearer {}", wire.access_token))
            .map_err(|_| protocol("the access token is not a valid header value".into()))?;
        header.set_sensitive(true);
        let lifetime = match wire.expires_in {
            Some(s) if s > 0 => Some(Duration::from_secs(s as u64)),
            _ => jwt_lifetime(&wire.access_token),
        };
        let expires_at = lifetime.map(|l| fetched_at + l);
        let refresh_at = lifetime.map(|l| fetched_at + l - (l / 10).min(MAX_REFRESH_LEAD));
        tracing::debug!(
            uri = %shown,
            lifetime_s = lifetime.map(|l| l.as_secs()),
            "fetched an OAuth2 token for the Iceberg REST catalog"
        );
        Ok(Issued {
            header,
            refresh_at,
            expires_at,
        })
    }
}

/// The time left before a JWT's `exp`, when the token is a JWT with one.
fn jwt_lifetime(token: &str) -> Option<Duration> {
    let mut parts = token.split('.');
    let (_, payload, _) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    #[derive(Deserialize)]
    struct Claims {
        exp: Option<f64>,
    }
    let claims: Claims = serde_json::from_slice(&base64_decode(payload)?).ok()?;
    let exp = claims.exp?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .ok()?
        .as_secs_f64();
    (exp > now).then(|| Duration::from_secs_f64((exp - now).min(1e9)))
}

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding (HTTP basic credentials).
fn base64_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(BASE64[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Base64 in either alphabet, padded or not (a JWT's parts are unpadded base64url).
fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0;
    for c in s.trim_end_matches('=').bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips() {
        for s in [
            "",
            "f",
            "fo",
            "foo",
            "foob",
            "fooba",
            "foobar",
            "user:pässwörd",
        ] {
            let e = base64_encode(s.as_bytes());
            assert_eq!(base64_decode(&e).unwrap(), s.as_bytes(), "{s}");
        }
        assert_eq!(base64_encode(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64_encode(b"fo"), "Zm8=");
        assert!(base64_decode("a b").is_none());
    }

    #[test]
    fn jwt_expiry_is_read() {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let payload = format!("{{\"sub\":\"x\",\"exp\":{}}}", now + 600);
        let jwt = format!(
            "e30.{}.sig",
            base64_encode(payload.as_bytes())
                .trim_end_matches('=')
                .replace('+', "-")
                .replace('/', "_")
        );
        let left = jwt_lifetime(&jwt).unwrap();
        assert!(
            left > Duration::from_secs(590) && left <= Duration::from_secs(600),
            "{left:?}"
        );
        assert_eq!(jwt_lifetime("opaque-token"), None);
        let expired = format!("e30.{}.sig", base64_encode(b"{\"exp\":1}"));
        assert_eq!(jwt_lifetime(&expired), None);
    }
}
