//! Google Cloud Storage warehouses (`gs://<bucket>/<prefix>`), under the option names Fluss's
//! `fluss-fs-gs` plugin and Paimon's `paimon-gs` (the Hadoop GCS connector's `fs.gs.*`, also
//! as `gs.*`), Iceberg's `GCSFileIO` (`gcs.*`) and Lance/object_store (`google_*`) use.
//!
//! Credentials, one of: a service-account JSON key file
//! (`fs.gs.auth.service.account.json.keyfile`, `google_service_account`), a key given inline
//! (`google_service_account_key`, or the connector's `fs.gs.auth.service.account.email`,
//! `.private.key.id` and `.private.key`), an OAuth2 access token (Iceberg's `gcs.oauth2.token`,
//! used as given: it is not refreshed), none (`fs.gs.auth.type` `UNAUTHENTICATED`,
//! `fs.gs.auth.null.enable`, Iceberg's `gcs.no-auth`, `google_skip_signature`: for emulators
//! and public buckets), or by default the application default credentials and then the
//! instance's service account (`fs.gs.auth.type` `APPLICATION_DEFAULT` / `COMPUTE_ENGINE`).
//! The endpoint, for an emulator: the connector's `fs.gs.storage.root.url`, Iceberg's
//! `gcs.service.host`, object_store's `google_base_url` (`http://127.0.0.1:4443`).
//!
//! Writes go through the GCS JSON API ([`GcsStore`]), everything else through object_store's
//! GCS client: a `put` is one media upload (`POST /upload/storage/v1/b/<bucket>/o
//! ?uploadType=media`), a create-if-absent the same with `ifGenerationMatch=0` (refused with
//! 412 when the object exists), and a streamed upload a resumable upload session whose object
//! appears only when it is finalized. Google documents all three for the JSON API
//! (`objects.insert`, request preconditions, resumable uploads); object_store writes through
//! the XML API instead, which `fake-gcs-server`, the emulator the tests run, does not
//! implement (it answers a plain XML `PUT` with 400 "invalid uploadType" and ignores
//! `x-goog-if-generation-match` on signed ones), so this way the emulator checks every write
//! the host makes, the conditional create first ([`super::probe`]).

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use hyper::{Method, Request, StatusCode};
use object_store::client::{HttpClient, HttpConnector, HttpRequestBody, ReqwestConnector};
use object_store::gcp::{
    GcpCredential, GcpCredentialProvider, GoogleCloudStorage, GoogleCloudStorageBuilder,
    GoogleConfigKey,
};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMode, PutMultipartOptions, PutOptions, PutPayload, PutResult, StaticCredentialProvider,
    UploadPart,
};
use tokio::sync::oneshot;

use super::lookup::{Lookup, client_options, prefixed, retry_config};
use super::options::StorageOptions;
use crate::error::{Error, ErrorKind, Result, store_message};

/// Where the connector's `fs.gs.<key>` may also be given: Fluss's and Paimon's `gs.`, and the
/// prefixes Fluss's Iceberg plugin and Paimon hand to Hadoop.
const HADOOP: &[&str] = &["fs.gs.", "gs.", "iceberg.hadoop.fs.gs.", "hadoop.fs.gs."];

const KEY_FILE: &[&str] = &[
    "google_service_account",
    "service_account",
    "google_service_account_path",
    "service_account_path",
];
const KEY_JSON: &[&str] = &["google_service_account_key", "service_account_key"];
const TOKEN: &[&str] = &["gcs.oauth2.token"];
const NO_AUTH: &[&str] = &["gcs.no-auth", "google_skip_signature", "skip_signature"];
const ENDPOINT: &[&str] = &["gcs.service.host", "google_base_url", "base_url"];
const APPLICATION_CREDENTIALS: &[&str] =
    &["google_application_credentials", "application_credentials"];

/// The chunk size resumable uploads take: every part but the last is a multiple of it.
const RESUMABLE_CHUNK: usize = 256 * 1024;

/// How the host authenticates to GCS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GcsCredential {
    /// Application default credentials, then the instance's service account.
    Default {
        application_credentials: Option<String>,
    },
    KeyFile(String),
    /// A service-account key, as JSON.
    Key(String),
    Token(String),
    /// Unsigned requests.
    Anonymous,
}

/// The GCS settings of one warehouse, resolved from its storage options.
#[derive(Debug)]
pub struct GcsSettings {
    credential: GcsCredential,
    /// The API root (`http://127.0.0.1:4443`); none: Google's.
    endpoint: Option<String>,
    passthrough: Vec<(GoogleConfigKey, String)>,
}

impl GcsSettings {
    pub fn from_options(options: &StorageOptions) -> Result<Self> {
        let l = Lookup {
            options,
            store: "GCS",
        };
        let hadoop = |rest: &str, more: &[&str]| {
            let mut keys = prefixed(HADOOP, rest);
            keys.extend(more.iter().map(|k| k.to_string()));
            keys
        };
        let auth_type = l.text("auth type", &hadoop("auth.type", &[]))?;
        let sa_enabled = l.flag(
            "service account",
            &hadoop("auth.service.account.enable", &[]),
        )?;
        let no_auth = l
            .flag("no auth", &hadoop("auth.null.enable", NO_AUTH))?
            .unwrap_or(false);
        let key_file_keys = hadoop("auth.service.account.json.keyfile", KEY_FILE);
        let key_file = l.text_from("key file", &key_file_keys)?;
        let key_json = l.text_from("service account key", KEY_JSON)?;
        let email_keys = hadoop("auth.service.account.email", &[]);
        let email = l.text_from("service account email", &email_keys)?;
        let private_key = l.text(
            "private key",
            &hadoop("auth.service.account.private.key", &[]),
        )?;
        let private_key_id = l.text(
            "private key id",
            &hadoop("auth.service.account.private.key.id", &[]),
        )?;
        let token = l.text_from("access token", TOKEN)?;
        let application_credentials = l.text("application credentials", APPLICATION_CREDENTIALS)?;

        let inline = match (&email, &private_key) {
            (Some((_, email)), Some(key)) => Some(
                serde_json::json!({
                    "type": "service_account",
                    "client_email": email,
                    "private_key": key.replace("\\n", "\n"),
                    "private_key_id": private_key_id.clone().unwrap_or_default(),
                })
                .to_string(),
            ),
            (None, None) => None,
            _ => {
                return Err(l.error(
                    "service account: fs.gs.auth.service.account.email and .private.key must be given together"
                        .into(),
                ));
            }
        };
        let mut given: Vec<(&str, GcsCredential)> = Vec::new();
        if let Some((k, v)) = &key_file {
            given.push((k, GcsCredential::KeyFile(v.clone())));
        }
        if let Some((k, v)) = &key_json {
            given.push((k, GcsCredential::Key(v.clone())));
        }
        if let (Some((k, _)), Some(v)) = (&email, inline) {
            given.push((k, GcsCredential::Key(v)));
        }
        if let Some((k, v)) = &token {
            given.push((k, GcsCredential::Token(v.clone())));
        }
        if no_auth {
            given.push(("gcs.no-auth", GcsCredential::Anonymous));
        }
        if let [(k0, _), (k1, _), ..] = &given[..] {
            return Err(l.error(format!(
                "credentials: {k0} and {k1} are both given; give one"
            )));
        }
        if sa_enabled == Some(false)
            && given.first().is_some_and(|(_, c)| {
                matches!(c, GcsCredential::KeyFile(_) | GcsCredential::Key(_))
            })
        {
            return Err(l.error(
                "credentials: fs.gs.auth.service.account.enable is false but a service account is given"
                    .into(),
            ));
        }
        let explicit = given.into_iter().next().map(|(_, c)| c);
        let default = GcsCredential::Default {
            application_credentials,
        };
        let credential = match auth_type.as_deref().map(str::to_ascii_uppercase).as_deref() {
            None => explicit.unwrap_or(default),
            Some("UNAUTHENTICATED") => match explicit {
                None | Some(GcsCredential::Anonymous) => GcsCredential::Anonymous,
                Some(_) => {
                    return Err(l.error(
                        "credentials: fs.gs.auth.type is UNAUTHENTICATED but credentials are given"
                            .into(),
                    ));
                }
            },
            Some("SERVICE_ACCOUNT_JSON_KEYFILE") => match explicit {
                Some(c @ GcsCredential::KeyFile(_)) => c,
                _ => {
                    return Err(l.error(
                        "credentials: fs.gs.auth.type is SERVICE_ACCOUNT_JSON_KEYFILE but no fs.gs.auth.service.account.json.keyfile is given"
                            .into(),
                    ));
                }
            },
            Some("APPLICATION_DEFAULT" | "COMPUTE_ENGINE") => match explicit {
                None => default,
                Some(_) => {
                    return Err(l.error(format!(
                        "credentials: fs.gs.auth.type is {} but other credentials are given",
                        auth_type.as_deref().unwrap_or_default()
                    )));
                }
            },
            Some(other) => {
                return Err(Error::new(
                    ErrorKind::Unsupported,
                    format!(
                        "GCS auth type '{other}' (fs.gs.auth.type) is not supported (supported: \
                         SERVICE_ACCOUNT_JSON_KEYFILE, APPLICATION_DEFAULT, COMPUTE_ENGINE, UNAUTHENTICATED)"
                    ),
                ));
            }
        };
        let endpoint = l
            .text("endpoint", &hadoop("storage.root.url", ENDPOINT))?
            .map(|e| e.trim_end_matches('/').to_string());
        if let Some(e) = &endpoint
            && !(e.starts_with("http://") || e.starts_with("https://"))
        {
            return Err(l.error(format!("endpoint: '{e}' is not an http:// or https:// URL")));
        }
        let known = |k: &str| {
            [
                KEY_FILE,
                KEY_JSON,
                NO_AUTH,
                ENDPOINT,
                APPLICATION_CREDENTIALS,
            ]
            .iter()
            .any(|keys| keys.contains(&k))
        };
        let mut passthrough = Vec::new();
        for (key, value) in options.iter() {
            if key.starts_with("google_")
                && !known(key)
                && let Ok(k) = GoogleConfigKey::from_str(key)
            {
                passthrough.push((k, value.to_string()));
            }
        }
        Ok(Self {
            credential,
            endpoint,
            passthrough,
        })
    }

    /// A client of `bucket`.
    pub fn build(&self, bucket: &str) -> Result<GcsStore> {
        let invalid = |e: object_store::Error| {
            Error::new(
                ErrorKind::Config,
                format!("invalid GCS settings: {}", store_message(&e)),
            )
        };
        let plain_http = self
            .endpoint
            .as_deref()
            .is_some_and(|e| e.starts_with("http://"));
        let options = client_options(plain_http);
        let mut b = match self.credential {
            GcsCredential::Default { .. } => GoogleCloudStorageBuilder::from_env(),
            _ => GoogleCloudStorageBuilder::new(),
        }
        .with_bucket_name(bucket)
        .with_client_options(options.clone())
        .with_retry(retry_config());
        for (k, v) in &self.passthrough {
            b = b.with_config(*k, v);
        }
        let base = self
            .endpoint
            .clone()
            .unwrap_or_else(|| "https://storage.googleapis.com".to_string());
        b = b.with_base_url(&base);
        b = match &self.credential {
            GcsCredential::Default {
                application_credentials,
            } => match application_credentials {
                Some(path) => b.with_application_credentials(path),
                None => b,
            },
            GcsCredential::KeyFile(path) => b.with_service_account_path(path),
            GcsCredential::Key(json) => b.with_service_account_key(json),
            GcsCredential::Token(token) => {
                b.with_credentials(Arc::new(StaticCredentialProvider::new(GcpCredential {
                    bearer: token.clone(),
                })))
            }
            // Unsigned; object_store 0.13's deletes (and XML writes) ask the credential
            // provider even then, so it is given an empty token, not the instance metadata's.
            GcsCredential::Anonymous => b.with_skip_signature(true).with_credentials(Arc::new(
                StaticCredentialProvider::new(GcpCredential {
                    bearer: String::new(),
                }),
            )),
        };
        let inner = b.build().map_err(invalid)?;
        let http = ReqwestConnector::default()
            .connect(&options)
            .map_err(invalid)?;
        let credentials =
            (self.credential != GcsCredential::Anonymous).then(|| inner.credentials().clone());
        Ok(GcsStore {
            inner,
            writer: Arc::new(JsonWriter {
                http,
                upload_url: format!("{base}/upload/storage/v1/b/{bucket}/o"),
                credentials,
            }),
        })
    }
}

/// object_store's GCS client, with writes through the JSON API (see the module's doc).
#[derive(Debug)]
pub struct GcsStore {
    inner: GoogleCloudStorage,
    writer: Arc<JsonWriter>,
}

impl fmt::Display for GcsStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (JSON API writes)", self.inner)
    }
}

#[async_trait]
impl ObjectStore for GcsStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        let create = match opts.mode {
            PutMode::Overwrite => false,
            PutMode::Create => true,
            // Not used by the host: object_store's own (XML API) conditional update.
            PutMode::Update(_) => return self.inner.put_opts(location, payload, opts).await,
        };
        if !opts.attributes.is_empty() || !opts.tags.encoded().is_empty() {
            return self.inner.put_opts(location, payload, opts).await;
        }
        self.writer.put(location, payload, create).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        if !opts.attributes.is_empty() || !opts.tags.encoded().is_empty() {
            return self.inner.put_multipart_opts(location, opts).await;
        }
        let session = self.writer.start(location).await?;
        Ok(Box::new(ResumableUpload {
            writer: self.writer.clone(),
            path: location.clone(),
            session: session.into(),
            offset: 0,
            tail: None,
            previous: None,
        }))
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        self.inner.get_opts(location, options).await
    }

    async fn get_ranges(
        &self,
        location: &Path,
        ranges: &[std::ops::Range<u64>],
    ) -> object_store::Result<Vec<Bytes>> {
        self.inner.get_ranges(location, ranges).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

/// Writes through the JSON API's upload endpoint.
#[derive(Debug)]
struct JsonWriter {
    http: HttpClient,
    /// `<root>/upload/storage/v1/b/<bucket>/o`
    upload_url: String,
    /// None: requests go unsigned.
    credentials: Option<GcpCredentialProvider>,
}

/// What a JSON API request answered.
struct Answer {
    status: StatusCode,
    location: Option<String>,
    /// `Range: bytes=0-<last>` of a resumable upload's 308: what the session has persisted.
    range: Option<String>,
    body: Bytes,
}

impl JsonWriter {
    async fn send(
        &self,
        method: Method,
        url: &str,
        headers: &[(&str, String)],
        body: HttpRequestBody,
    ) -> object_store::Result<Answer> {
        // Without the query: a session URI's `upload_id` lets anyone write to the session.
        let shown = url.split('?').next().unwrap_or(url);
        let failed = |e: String| object_store::Error::Generic {
            store: "GCS",
            source: format!("{method} {shown}: {e}").into(),
        };
        let mut request = Request::builder().method(method.clone()).uri(url);
        if let Some(credentials) = &self.credentials {
            let bearer = credentials.get_credential().await?.bearer.clone();
            if !bearer.is_empty() {
                request = request.header("Authorization", format!("Bearer {bearer}"));
            }
        }
        for (k, v) in headers {
            request = request.header(*k, v.as_str());
        }
        let request = request.body(body).map_err(|e| failed(e.to_string()))?;
        let response = self
            .http
            .execute(request)
            .await
            .map_err(|e| failed(e.to_string()))?;
        let status = response.status();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let (location, range) = (header("Location"), header("Range"));
        let body = response
            .into_body()
            .bytes()
            .await
            .map_err(|e| failed(e.to_string()))?;
        Ok(Answer {
            status,
            location,
            range,
            body,
        })
    }

    /// One media upload; `create`: only if the object does not exist.
    async fn put(
        &self,
        path: &Path,
        payload: PutPayload,
        create: bool,
    ) -> object_store::Result<PutResult> {
        let mut url = format!(
            "{}?uploadType=media&name={}",
            self.upload_url,
            encode(path.as_ref())
        );
        if create {
            url.push_str("&ifGenerationMatch=0");
        }
        let headers = [
            ("Content-Type", "application/octet-stream".to_string()),
            ("Content-Length", payload.content_length().to_string()),
        ];
        let answer = self
            .send(Method::POST, &url, &headers, payload.into())
            .await?;
        match answer.status {
            s if s.is_success() => Ok(put_result(&answer.body)),
            StatusCode::PRECONDITION_FAILED if create => Err(object_store::Error::AlreadyExists {
                path: path.to_string(),
                source: failure("POST", &answer).into(),
            }),
            _ => Err(status_error(path, "POST", &answer)),
        }
    }

    /// Starts a resumable upload session; its URI.
    async fn start(&self, path: &Path) -> object_store::Result<String> {
        let url = format!(
            "{}?uploadType=resumable&name={}",
            self.upload_url,
            encode(path.as_ref())
        );
        let headers = [
            ("Content-Length", "0".to_string()),
            (
                "X-Upload-Content-Type",
                "application/octet-stream".to_string(),
            ),
        ];
        let answer = self
            .send(Method::POST, &url, &headers, Vec::new().into())
            .await?;
        match (answer.status.is_success(), answer.location.clone()) {
            (true, Some(session)) => Ok(session),
            (true, None) => Err(object_store::Error::Generic {
                store: "GCS",
                source: "a resumable upload session was started without a session URI".into(),
            }),
            (false, _) => Err(status_error(path, "POST", &answer)),
        }
    }

    /// Sends `data` at `offset` of the session; with `total`, the upload's last request (no
    /// data: it only finalizes). The object's metadata once finalized.
    async fn chunk(
        &self,
        path: &Path,
        session: &str,
        offset: u64,
        data: PutPayload,
        total: Option<u64>,
    ) -> object_store::Result<Option<PutResult>> {
        let len = data.content_length() as u64;
        let range = match (len, total) {
            (0, Some(total)) => format!("bytes */{total}"),
            (_, total) => format!(
                "bytes {offset}-{}/{}",
                offset + len - 1,
                total.map_or("*".to_string(), |t| t.to_string())
            ),
        };
        let headers = [
            ("Content-Length", len.to_string()),
            ("Content-Range", range),
        ];
        let answer = self
            .send(Method::PUT, session, &headers, data.into())
            .await?;
        match (answer.status.as_u16(), total) {
            // 308 Resume Incomplete: the upload goes on, once every byte sent is persisted
            // (GCS may persist fewer; the host does not resend them, it fails the upload).
            (308, None) => {
                let persisted = answer
                    .range
                    .as_deref()
                    .and_then(|r| r.strip_prefix("bytes=0-"))
                    .and_then(|last| last.parse::<u64>().ok())
                    .map_or(0, |last| last + 1);
                if persisted == offset + len {
                    Ok(None)
                } else {
                    Err(object_store::Error::Generic {
                        store: "GCS",
                        source: format!(
                            "{path}: the resumable upload session persisted {persisted} of the {} bytes sent",
                            offset + len
                        )
                        .into(),
                    })
                }
            }
            (200 | 201, Some(_)) => Ok(Some(put_result(&answer.body))),
            _ => Err(status_error(path, "PUT", &answer)),
        }
    }
}

/// A streamed upload: one resumable upload session, its parts sent in order (each part waits
/// for the one before). Every part but the last must be a multiple of 256 KiB, which the
/// host's 8 MiB parts are; a shorter part is held until [`MultipartUpload::complete`] sends it
/// as the last. Nothing is visible before the session is finalized, and an abandoned session
/// expires.
struct ResumableUpload {
    writer: Arc<JsonWriter>,
    path: Path,
    session: Arc<str>,
    /// Bytes handed to parts sent so far.
    offset: u64,
    tail: Option<PutPayload>,
    /// The outcome of the part before, once sent.
    previous: Option<oneshot::Receiver<std::result::Result<(), String>>>,
}

impl fmt::Debug for ResumableUpload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ResumableUpload({}, {} bytes)", self.path, self.offset)
    }
}

/// Waits for the part before; its failure fails this one.
async fn after(
    previous: Option<oneshot::Receiver<std::result::Result<(), String>>>,
) -> object_store::Result<()> {
    let Some(previous) = previous else {
        return Ok(());
    };
    match previous.await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(object_store::Error::Generic {
            store: "GCS",
            source: format!("an earlier part of the upload failed: {e}").into(),
        }),
        Err(_) => Err(object_store::Error::Generic {
            store: "GCS",
            source: "an earlier part of the upload was abandoned".into(),
        }),
    }
}

#[async_trait]
impl MultipartUpload for ResumableUpload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        if self.tail.is_some() {
            return Box::pin(futures::future::ready(Err(object_store::Error::Generic {
                store: "GCS",
                source: "only the last part of an upload may be shorter than a multiple of 256 KiB"
                    .into(),
            })));
        }
        if !data.content_length().is_multiple_of(RESUMABLE_CHUNK) {
            self.tail = Some(data);
            return Box::pin(futures::future::ready(Ok(())));
        }
        let previous = self.previous.take();
        let (done, next) = oneshot::channel();
        self.previous = Some(next);
        let offset = self.offset;
        self.offset += data.content_length() as u64;
        let (writer, path, session) =
            (self.writer.clone(), self.path.clone(), self.session.clone());
        Box::pin(async move {
            let result = match after(previous).await {
                Ok(()) if data.content_length() == 0 => Ok(()),
                Ok(()) => writer
                    .chunk(&path, &session, offset, data, None)
                    .await
                    .map(|_| ()),
                Err(e) => Err(e),
            };
            let _ = done.send(result.as_ref().map(|_| ()).map_err(|e| e.to_string()));
            result
        })
    }

    async fn complete(&mut self) -> object_store::Result<PutResult> {
        after(self.previous.take()).await?;
        let tail = self.tail.take().unwrap_or_default();
        let total = self.offset + tail.content_length() as u64;
        let result = self
            .writer
            .chunk(&self.path, &self.session, self.offset, tail, Some(total))
            .await?;
        self.offset = total;
        result.ok_or_else(|| object_store::Error::Generic {
            store: "GCS",
            source: "the upload was not finalized".into(),
        })
    }

    async fn abort(&mut self) -> object_store::Result<()> {
        // GCS answers 499 to a cancelled session; an abandoned one expires anyway.
        let _ = after(self.previous.take()).await;
        self.writer
            .send(
                Method::DELETE,
                &self.session,
                &[("Content-Length", "0".into())],
                Vec::new().into(),
            )
            .await
            .map(|_| ())
    }
}

/// `etag` and `generation` of the object resource a finished upload answers with.
fn put_result(body: &[u8]) -> PutResult {
    let v: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let field = |k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_string);
    PutResult {
        e_tag: field("etag"),
        version: field("generation"),
    }
}

/// `<method>: <status>: <message>`, the message of a JSON API error body, or its text.
fn failure(method: &str, answer: &Answer) -> String {
    let v: serde_json::Value = serde_json::from_slice(&answer.body).unwrap_or_default();
    let message = v
        .pointer("/error/message")
        .and_then(|m| m.as_str())
        .map(str::to_string)
        .unwrap_or_else(|| crate::error::one_line(&String::from_utf8_lossy(&answer.body)));
    format!("{method}: {}: {message}", answer.status)
}

fn status_error(path: &Path, method: &str, answer: &Answer) -> object_store::Error {
    let source = failure(method, answer).into();
    let path = path.to_string();
    match answer.status {
        StatusCode::NOT_FOUND => object_store::Error::NotFound { path, source },
        StatusCode::UNAUTHORIZED => object_store::Error::Unauthenticated { path, source },
        StatusCode::FORBIDDEN => object_store::Error::PermissionDenied { path, source },
        StatusCode::PRECONDITION_FAILED => object_store::Error::Precondition { path, source },
        _ => object_store::Error::Generic {
            store: "GCS",
            source,
        },
    }
}

/// Percent-encodes an object name for a query string (every byte but the unreserved ones).
fn encode(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(pairs: &[(&str, &str)]) -> StorageOptions {
        StorageOptions::from_pairs(pairs.iter().copied())
    }

    #[test]
    fn fluss_hadoop_iceberg_and_object_store_spellings() {
        let endpoint = "http://127.0.0.1:4443";
        for pairs in [
            // The Hadoop connector's keys, as Fluss (also `gs.`) and Paimon take them.
            &[
                ("fs.gs.storage.root.url", "http://127.0.0.1:4443/"),
                ("fs.gs.auth.type", "UNAUTHENTICATED"),
            ][..],
            &[
                ("gs.storage.root.url", endpoint),
                ("gs.auth.service.account.enable", "false"),
                ("gs.auth.null.enable", "true"),
            ][..],
            &[
                ("iceberg.hadoop.fs.gs.storage.root.url", endpoint),
                ("iceberg.hadoop.fs.gs.auth.null.enable", "true"),
            ][..],
            // Iceberg.
            &[("gcs.service.host", endpoint), ("gcs.no-auth", "true")][..],
            // object_store / Lance.
            &[
                ("google_base_url", endpoint),
                ("google_skip_signature", "true"),
            ][..],
        ] {
            let s = GcsSettings::from_options(&opts(pairs)).unwrap();
            assert_eq!(s.endpoint.as_deref(), Some(endpoint), "{pairs:?}");
            assert_eq!(s.credential, GcsCredential::Anonymous, "{pairs:?}");
            let store = s.build("bucket").unwrap();
            assert_eq!(
                store.writer.upload_url,
                "http://127.0.0.1:4443/upload/storage/v1/b/bucket/o"
            );
            assert!(store.writer.credentials.is_none());
        }
    }

    #[test]
    fn credentials() {
        let c =
            |pairs: &[(&str, &str)]| GcsSettings::from_options(&opts(pairs)).unwrap().credential;
        assert_eq!(
            c(&[("fs.gs.auth.service.account.json.keyfile", "/k.json")]),
            GcsCredential::KeyFile("/k.json".into())
        );
        assert_eq!(
            c(&[
                ("fs.gs.auth.type", "SERVICE_ACCOUNT_JSON_KEYFILE"),
                ("google_service_account", "/k.json")
            ]),
            GcsCredential::KeyFile("/k.json".into())
        );
        let GcsCredential::Key(json) = c(&[
            (
                "gs.auth.service.account.email",
                "sa@p.iam.gserviceaccount.com",
            ),
            ("gs.auth.service.account.private.key.id", "k1"),
            (
                "gs.auth.service.account.private.key",
                "-----BEGIN PRIVATE KEY-----\\nx\\n-----END PRIVATE KEY-----\\n",
            ),
        ]) else {
            panic!("an inline key")
        };
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["client_email"], "sa@p.iam.gserviceaccount.com");
        assert!(v["private_key"].as_str().unwrap().contains("-----\nx\n"));
        assert_eq!(
            c(&[("gcs.oauth2.token", "ya29.x")]),
            GcsCredential::Token("ya29.x".into())
        );
        let s = GcsSettings::from_options(&opts(&[("gcs.oauth2.token", "ya29.x")])).unwrap();
        assert!(s.build("b").unwrap().writer.credentials.is_some());
        assert_eq!(
            c(&[]),
            GcsCredential::Default {
                application_credentials: None
            }
        );
        assert_eq!(
            c(&[("fs.gs.auth.type", "APPLICATION_DEFAULT")]),
            GcsCredential::Default {
                application_credentials: None
            }
        );
    }

    #[test]
    fn conflicts_and_unsupported_settings_name_keys_not_values() {
        let err = |pairs: &[(&str, &str)]| GcsSettings::from_options(&opts(pairs)).unwrap_err();
        let e = err(&[
            ("fs.gs.auth.service.account.json.keyfile", "/a.json"),
            ("gs.auth.service.account.json.keyfile", "/b.json"),
        ]);
        assert!(
            e.message().contains(
                "fs.gs.auth.service.account.json.keyfile and gs.auth.service.account.json.keyfile"
            ),
            "{e}"
        );
        assert!(!e.message().contains("/a.json"), "{e}");
        let e = err(&[("gcs.oauth2.token", "hunter2"), ("gcs.no-auth", "true")]);
        assert!(e.message().contains("give one"), "{e}");
        assert!(!e.message().contains("hunter2"), "{e}");
        let e = err(&[("fs.gs.auth.type", "ACCESS_TOKEN_PROVIDER")]);
        assert_eq!(e.kind(), ErrorKind::Unsupported);
        let e = err(&[
            ("fs.gs.auth.type", "UNAUTHENTICATED"),
            ("gcs.oauth2.token", "t"),
        ]);
        assert!(e.message().contains("UNAUTHENTICATED"), "{e}");
        let e = err(&[("gs.auth.service.account.email", "sa@x")]);
        assert!(e.message().contains("together"), "{e}");
        let e = err(&[("fs.gs.storage.root.url", "127.0.0.1:4443")]);
        assert!(e.message().contains("not an http"), "{e}");
    }

    #[test]
    fn object_names_are_encoded_for_the_query() {
        assert_eq!(encode("db.db/t/snapshot-1"), "db.db%2Ft%2Fsnapshot-1");
        assert_eq!(encode("a b&c=é"), "a%20b%26c%3D%C3%A9");
    }
}
