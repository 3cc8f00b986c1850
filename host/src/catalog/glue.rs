//! The AWS Glue Data Catalog as Apache Iceberg's `GlueCatalog` uses it: a metastore that keeps,
//! for each table, the location of its current metadata file (the table's `Parameters`:
//! `table_type=ICEBERG`, `metadata_location`, `previous_metadata_location`). A commit writes a
//! new metadata file and then points the table at it (`UpdateTable`), as Java's
//! `GlueTableOperations` does:
//!
//! - the new file must still be a successor of the one the table points at: the host reads
//!   both through the table's storage and refuses a change a tiering plugin never makes (the
//!   same rules as for a REST catalog: only snapshots, references, properties and statistics
//!   change; the location, UUID, schemas, specs and sort orders stay; every file a new
//!   snapshot, statistics entry or `metadata-log` entry names lies under the table's location);
//! - `GetTable` right before the update checks that the table still points at the file the
//!   commit was built on (Java's `checkMetadataLocation`), and the update carries the table's
//!   `VersionId`, Glue's optimistic lock: a writer that updated the table in between makes it
//!   fail with `ConcurrentModificationException`, a lost race ([`ErrorKind::Conflict`]);
//! - every other field of the Glue table (its storage descriptor, columns, description, other
//!   parameters) is sent back as it was, with `table_type`, `metadata_location` and
//!   `previous_metadata_location` set.
//!
//! Requests are AWS JSON 1.1 calls (`X-Amz-Target: AWSGlue.<Action>`) to the endpoint
//! (`glue.endpoint`, else `https://glue.<region>.amazonaws.com`), signed with AWS Signature
//! Version 4 by the host itself (SHA-256 and HMAC from the crates the host already builds, not
//! the AWS SDK). The endpoint, the catalog id (`glue.id`), the region and the credentials are
//! the host's: a table's properties may not name others ([`check_connection_is_hosts`]), and a
//! plugin names none. Answers are bounded while they are read, every call has the host's
//! deadline, redirects are not followed, and no message holds the secret key or the session
//! token. An update whose answer is lost (a 5xx, a reset connection, the deadline) has an
//! unknown outcome ([`ErrorKind::CommitUnknown`]): the plugin reads the table back and tells.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use hmac::{Hmac, Mac};
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};
use reqwest::{StatusCode, Url};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::options::{Secret, check_http_url};
use super::pointer::{
    Entry, METADATA_LOCATION, Metastore, PREVIOUS_METADATA_LOCATION, PointerTable, Record,
    TABLE_TYPE,
};
use super::rest::{BodyError, MAX_ERROR_BODY_BYTES, Redactor, clean_message, read_body};
use crate::error::{Error, ErrorKind, Result};

/// Largest `GetTable` answer read: a Glue table of thousands of columns fits.
pub const MAX_TABLE_ANSWER_BYTES: usize = 8 * 1024 * 1024;
/// The service name requests are signed for.
const SERVICE: &str = "glue";
/// The Glue table type Java gives Iceberg tables (Hive's `EXTERNAL_TABLE`).
const EXTERNAL_TABLE: &str = "EXTERNAL_TABLE";
/// The `TableInput` fields of a Glue `Table`: what `UpdateTable` takes back.
const TABLE_INPUT_FIELDS: &[&str] = &[
    "Name",
    "Description",
    "Owner",
    "LastAccessTime",
    "LastAnalyzedTime",
    "Retention",
    "StorageDescriptor",
    "PartitionKeys",
    "ViewOriginalText",
    "ViewExpandedText",
    "TableType",
    "Parameters",
    "TargetTable",
    "ViewDefinition",
];

/// Iceberg catalog implementations that are the Glue catalog.
pub const GLUE_CATALOG_IMPL: &str = "org.apache.iceberg.aws.glue.GlueCatalog";

/// The keys that say which Glue catalog is called, where, and as whom: they must be the host's
/// own options ([`check_connection_is_hosts`]). `glue.*` also holds pyiceberg's names
/// (`glue.region`, `glue.access-key-id`, ...); `client.*` the AWS client's.
pub const CONNECTION_KEYS: &[&str] = &[
    "glue.endpoint",
    "glue.id",
    "glue.region",
    "client.region",
    "glue.access-key-id",
    "glue.secret-access-key",
    "glue.session-token",
    "glue.profile-name",
    "client.access-key-id",
    "client.secret-access-key",
    "client.session-token",
    "client.profile-name",
    "client.credentials-provider",
];

/// AWS credentials. `Debug` shows the access key id only (AWS does not treat it as a secret);
/// the secret key and the session token are [`Secret`]s.
#[derive(Clone, PartialEq, Eq)]
pub struct AwsCredentials {
    pub access_key_id: String,
    pub secret_access_key: Secret,
    pub session_token: Option<Secret>,
}

impl fmt::Debug for AwsCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AwsCredentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &self.secret_access_key)
            .field(
                "session_token",
                &self.session_token.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// The options of one Glue catalog: `type=glue` (or `catalog-impl` = [`GLUE_CATALOG_IMPL`]) and
/// the keys Iceberg's `AwsProperties` and `AwsClientProperties` (and pyiceberg's `GlueCatalog`)
/// read. `Debug` never prints a secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlueOptions {
    /// `glue.endpoint`, else `https://glue.<region>.amazonaws.com` (`.com.cn` in China): no
    /// trailing `/`.
    pub endpoint: String,
    /// `glue.region`, else `client.region`, else `AWS_REGION` / `AWS_DEFAULT_REGION`: the
    /// region requests are signed for.
    pub region: String,
    /// `glue.id`: the catalog (the AWS account id) of every call; absent, the caller's own.
    pub catalog_id: Option<String>,
    /// `glue.skip-archive` (default true, as Java): updates make no archived table version.
    pub skip_archive: bool,
    pub credentials: AwsCredentials,
    /// Which options (or the environment) gave the credentials, for the log.
    pub credentials_from: &'static str,
}

/// Whether `options` (lake options without their `datalake.iceberg.` prefix) name a Glue
/// catalog.
pub fn is_glue(options: &[(String, String)]) -> bool {
    let get = |key: &str| get(options, key);
    get("type").is_some_and(|t| t.eq_ignore_ascii_case("glue"))
        || get("catalog-impl") == Some(GLUE_CATALOG_IMPL)
}

fn get<'a>(options: &'a [(String, String)], key: &str) -> Option<&'a str> {
    options
        .iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.trim())
        .filter(|v| !v.is_empty())
}

fn config(message: impl Into<String>) -> Error {
    Error::new(
        ErrorKind::Config,
        format!("Iceberg Glue catalog option {}", message.into()),
    )
}

fn unsupported(message: impl Into<String>) -> Error {
    Error::new(
        ErrorKind::Unsupported,
        format!("Iceberg Glue catalog option {}", message.into()),
    )
}

/// The AWS SDK's credential providers that read the environment first, as the host does.
const ENVIRONMENT_PROVIDERS: &[&str] = &[
    "software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider",
    "software.amazon.awssdk.auth.credentials.EnvironmentVariableCredentialsProvider",
];

impl GlueOptions {
    /// The Glue catalog `options` name (lake options without their `datalake.iceberg.`
    /// prefix), credentials from the options or else the process environment
    /// (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, the first place the
    /// AWS SDK's default chain looks). Refuses, with one line naming the option, what the host
    /// does not implement: Lake Formation credentials, a lock manager, custom client
    /// factories and credential providers, profiles.
    pub fn from_lake_options(options: &[(String, String)]) -> Result<GlueOptions> {
        Self::parse(options, &|name| std::env::var(name).ok())
    }

    pub(crate) fn parse(
        options: &[(String, String)],
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<GlueOptions> {
        let get = |key: &str| get(options, key);
        let env = |name: &str| {
            env(name)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        if let Some(v) = get("glue.lakeformation-enabled")
            && parse_bool("glue.lakeformation-enabled", v)?
        {
            return Err(unsupported(
                "glue.lakeformation-enabled=true: Lake Formation credentials are not supported",
            ));
        }
        for key in ["lock-impl", "lock.table"] {
            if get(key).is_some() {
                return Err(unsupported(format!(
                    "{key}: a lock manager is not supported (commits take Glue's optimistic lock, the table's VersionId)"
                )));
            }
        }
        if let Some(factory) = get("client.factory") {
            return Err(unsupported(format!(
                "client.factory={factory}: custom AWS client factories (assume-role, Lake Formation) are not supported"
            )));
        }
        for key in ["glue.profile-name", "client.profile-name"] {
            if get(key).is_some() {
                return Err(unsupported(format!(
                    "{key}: AWS profiles are not supported (give glue.access-key-id and glue.secret-access-key, or the AWS_* environment variables)"
                )));
            }
        }
        if let Some(provider) = get("client.credentials-provider")
            && !ENVIRONMENT_PROVIDERS.contains(&provider)
        {
            return Err(unsupported(format!(
                "client.credentials-provider={provider}: only the environment's credentials (DefaultCredentialsProvider, EnvironmentVariableCredentialsProvider) or glue.access-key-id and glue.secret-access-key are supported"
            )));
        }

        let region = get("glue.region")
            .or_else(|| get("client.region"))
            .map(str::to_string)
            .or_else(|| env("AWS_REGION"))
            .or_else(|| env("AWS_DEFAULT_REGION"))
            .ok_or_else(|| {
                config("client.region (or glue.region) is needed: the region Glue requests are signed for")
            })?;
        if region.len() > 64
            || !region
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        {
            return Err(config(format!(
                "client.region '{}' is not an AWS region",
                clean_message(&region, 80)
            )));
        }

        let endpoint = match get("glue.endpoint") {
            Some(raw) => {
                let url =
                    Url::parse(raw).map_err(|e| config(format!("glue.endpoint '{raw}': {e}")))?;
                check_http_url("glue.endpoint", raw, &url).map_err(|e| {
                    Error::new(
                        e.kind(),
                        e.message()
                            .replace("Iceberg catalog option", "Iceberg Glue catalog option"),
                    )
                })?;
                if !url
                    .path()
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-._~/".contains(&b))
                {
                    return Err(config(format!(
                        "glue.endpoint '{raw}': its path may hold letters, digits and -._~/ only"
                    )));
                }
                raw.trim_end_matches('/').to_string()
            }
            None if region.starts_with("cn-") => format!("https://glue.{region}.amazonaws.com.cn"),
            None => format!("https://glue.{region}.amazonaws.com"),
        };

        let catalog_id = get("glue.id").map(str::to_string);
        if let Some(id) = &catalog_id
            && (id.len() > 255 || id.chars().any(char::is_control))
        {
            return Err(config(
                "glue.id: not a Glue catalog id (at most 255 characters, no control characters)",
            ));
        }
        let skip_archive = match get("glue.skip-archive") {
            Some(v) => parse_bool("glue.skip-archive", v)?,
            None => true,
        };

        let from_options = |prefix: &'static str,
                            from: &'static str|
         -> Result<Option<(AwsCredentials, &'static str)>> {
            let id = get(&format!("{prefix}.access-key-id"));
            let secret = get(&format!("{prefix}.secret-access-key"));
            match (id, secret) {
                (None, None) => Ok(None),
                (Some(id), Some(secret)) => Ok(Some((
                    AwsCredentials {
                        access_key_id: id.to_string(),
                        secret_access_key: Secret::new(secret),
                        session_token: get(&format!("{prefix}.session-token")).map(Secret::new),
                    },
                    from,
                ))),
                _ => Err(config(format!(
                    "{prefix}.access-key-id and {prefix}.secret-access-key are given together or not at all"
                ))),
            }
        };
        let credentials = match from_options("glue", "glue.access-key-id")? {
            Some(c) => c,
            None => match from_options("client", "client.access-key-id")? {
                Some(c) => c,
                None => match (env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY")) {
                    (Some(id), Some(secret)) => (
                        AwsCredentials {
                            access_key_id: id,
                            secret_access_key: Secret::new(secret),
                            session_token: env("AWS_SESSION_TOKEN").map(Secret::new),
                        },
                        "the environment (AWS_ACCESS_KEY_ID)",
                    ),
                    _ => {
                        return Err(config(
                            "glue.access-key-id and glue.secret-access-key are needed (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the host's environment; profiles, web identity and instance roles are not supported)",
                        ));
                    }
                },
            },
        };
        let (credentials, credentials_from) = credentials;
        let header_safe =
            |s: &str| HeaderValue::from_str(s).is_ok() && !s.contains([',', '/', ' ']);
        if !header_safe(&credentials.access_key_id) || credentials.access_key_id.len() > 128 {
            return Err(config(format!(
                "{credentials_from}: not an AWS access key id"
            )));
        }
        if let Some(token) = &credentials.session_token
            && HeaderValue::from_str(token.expose()).is_err()
        {
            return Err(config("the session token is not a valid HTTP header value"));
        }
        Ok(GlueOptions {
            endpoint,
            region,
            catalog_id,
            skip_archive,
            credentials,
            credentials_from,
        })
    }

    /// The values that must never appear in a message.
    pub(crate) fn secrets(&self) -> Vec<String> {
        let mut out = vec![self.credentials.secret_access_key.expose().to_string()];
        if let Some(t) = &self.credentials.session_token {
            out.push(t.expose().to_string());
        }
        out
    }
}

fn parse_bool(key: &str, value: &str) -> Result<bool> {
    match value.to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(config(format!(
            "{key} must be true or false, not '{value}'"
        ))),
    }
}

/// Refuses a Glue connection a table's properties chose: the host's own options (`host`) must
/// name the Glue catalog, and every [`CONNECTION_KEYS`] entry of `merged` (a table's
/// `table.datalake.iceberg.*` properties overlaid by the host's options) must be the host's
/// own, so that no table owner can have the host call Glue at all, or another endpoint,
/// another account's catalog or another region, with its credentials. Fluss copies the
/// cluster's `datalake.iceberg.*` options into every table's properties: a host gives the same
/// ones (`--datalake.iceberg.glue.endpoint`, ...).
pub fn check_connection_is_hosts(
    merged: &[(String, String)],
    host: &BTreeMap<String, String>,
) -> Result<()> {
    let host_pairs: Vec<(String, String)> =
        host.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    if !is_glue(&host_pairs) {
        return Err(Error::new(
            ErrorKind::Config,
            "the table's properties name a Glue catalog (table.datalake.iceberg.type=glue), which only the host's own options may: \
             give the host --datalake.iceberg.type=glue and the Glue catalog's options",
        ));
    }
    for key in CONNECTION_KEYS {
        let value = get(merged, key);
        if value.is_some() && value != host.get(*key).map(|v| v.trim()) {
            return Err(Error::new(
                ErrorKind::Config,
                format!(
                    "the table's property table.datalake.iceberg.{key} chooses the Glue catalog's connection, which only the host's own options may: \
                     give the host --datalake.iceberg.{key} (the same value, if the cluster configured it)"
                ),
            ));
        }
    }
    Ok(())
}

// ---- AWS Signature Version 4 -----------------------------------------------------------

type HmacSha256 = Hmac<Sha256>;

fn hmac(key: &[u8], data: &[u8]) -> [u8; 32] {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(data);
    mac.finalize().into_bytes().into()
}

fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

/// `(YYYYMMDD, YYYYMMDD'T'HHMMSS'Z')` of `t` in UTC.
pub(crate) fn amz_date(t: SystemTime) -> (String, String) {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let date = format!("{year:04}{month:02}{day:02}");
    let time = format!(
        "{date}T{:02}{:02}{:02}Z",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    );
    (date, time)
}

/// One request to sign: its canonical parts. `headers` are the signed headers, names in lower
/// case, values trimmed.
pub(crate) struct ToSign<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub query: &'a str,
    pub headers: &'a [(&'a str, &'a str)],
    pub payload: &'a [u8],
}

/// The `Authorization` header value of `request`, signed for `region` and `service` at
/// `amz_time` (`YYYYMMDD'T'HHMMSS'Z'`, also sent as `X-Amz-Date`).
pub(crate) fn sigv4_authorization(
    credentials: &AwsCredentials,
    region: &str,
    service: &str,
    amz_time: &str,
    request: &ToSign<'_>,
) -> String {
    let mut headers: Vec<(String, String)> = request
        .headers
        .iter()
        .map(|(n, v)| {
            (
                n.to_ascii_lowercase(),
                v.split_whitespace().collect::<Vec<_>>().join(" "),
            )
        })
        .collect();
    headers.sort();
    let signed_headers = headers
        .iter()
        .map(|(n, _)| n.as_str())
        .collect::<Vec<_>>()
        .join(";");
    let canonical_headers: String = headers.iter().map(|(n, v)| format!("{n}:{v}\n")).collect();
    let canonical_request = format!(
        "{}\n{}\n{}\n{canonical_headers}\n{signed_headers}\n{}",
        request.method,
        request.path,
        request.query,
        sha256_hex(request.payload)
    );
    let date = &amz_time[..8];
    let scope = format!("{date}/{region}/{service}/aws4_request");
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_time}\n{scope}\n{}",
        sha256_hex(canonical_request.as_bytes())
    );
    let k_date = hmac(
        format!("AWS4{}", credentials.secret_access_key.expose()).as_bytes(),
        date.as_bytes(),
    );
    let k_region = hmac(&k_date, region.as_bytes());
    let k_service = hmac(&k_region, service.as_bytes());
    let k_signing = hmac(&k_service, b"aws4_request");
    let signature = hex::encode(hmac(&k_signing, string_to_sign.as_bytes()));
    format!(
        "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={signed_headers}, Signature={signature}",
        credentials.access_key_id
    )
}

// ---- errors -----------------------------------------------------------------------------

/// What a request does: it decides how its failures read and whether its outcome can be
/// unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    GetTable,
    UpdateTable,
}

impl Op {
    fn target(self) -> &'static str {
        match self {
            Op::GetTable => "AWSGlue.GetTable",
            Op::UpdateTable => "AWSGlue.UpdateTable",
        }
    }

    fn what(self) -> &'static str {
        match self {
            Op::GetTable => "GetTable",
            Op::UpdateTable => "UpdateTable (the commit)",
        }
    }

    fn outcome_may_be_unknown(self) -> bool {
        self == Op::UpdateTable
    }
}

/// What an error answer says: the AWS error code (`EntityNotFoundException`, ...) and one line.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ErrorDetail {
    pub code: Option<String>,
    pub text: String,
}

/// `com.amazonaws.glue#EntityNotFoundException` and `EntityNotFoundException:http://...` are
/// `EntityNotFoundException`.
fn error_code(raw: &str) -> String {
    let raw = raw.rsplit('#').next().unwrap_or(raw);
    let raw = raw.split(':').next().unwrap_or(raw);
    clean_message(raw, 100)
}

/// The text between `<tag>` and `</tag>` in an XML error (an STS-style `ErrorResponse`).
fn xml_element<'a>(body: &'a str, tag: &str) -> Option<&'a str> {
    let start = body.find(&format!("<{tag}>"))? + tag.len() + 2;
    let end = body[start..].find(&format!("</{tag}>"))? + start;
    Some(&body[start..end])
}

/// Reads an error answer: AWS JSON (`{"__type", "message"}`, the code also in the
/// `x-amzn-ErrorType` header), an XML `ErrorResponse`, or anything else as text.
pub(crate) fn error_detail(status: StatusCode, headers: &HeaderMap, body: &[u8]) -> ErrorDetail {
    let text = |s: &str| clean_message(s, super::rest::MAX_MESSAGE_CHARS);
    let header_code = headers
        .get("x-amzn-errortype")
        .and_then(|v| v.to_str().ok())
        .map(error_code);
    let with = |code: Option<String>, message: &str| {
        let text = match &code {
            Some(c) if !message.is_empty() => text(&format!("{c}: {message}")),
            Some(c) => c.clone(),
            None => text(message),
        };
        ErrorDetail { code, text }
    };
    if let Ok(Value::Object(obj)) = serde_json::from_slice::<Value>(body) {
        let code = ["__type", "code", "Code"]
            .iter()
            .find_map(|k| obj.get(*k).and_then(Value::as_str))
            .map(error_code)
            .or(header_code);
        let message = ["message", "Message"]
            .iter()
            .find_map(|k| obj.get(*k).and_then(Value::as_str))
            .unwrap_or("");
        return with(code, message);
    }
    let body = String::from_utf8_lossy(body);
    if let Some(code) = xml_element(&body, "Code") {
        let message = xml_element(&body, "Message").unwrap_or("");
        return with(Some(error_code(code)), message);
    }
    let status_line = format!(
        "HTTP {} {}",
        status.as_u16(),
        status.canonical_reason().unwrap_or("")
    );
    let body = clean_message(&body, super::rest::MAX_MESSAGE_CHARS);
    ErrorDetail {
        code: header_code,
        text: if body.is_empty() {
            status_line.trim_end().to_string()
        } else {
            format!("{}: {body}", status_line.trim_end())
        },
    }
}

/// Error codes that mean the credential was refused or has no right to the call.
const AUTH_CODES: &[&str] = &[
    "UnrecognizedClientException",
    "InvalidSignatureException",
    "SignatureDoesNotMatch",
    "InvalidClientTokenId",
    "IncompleteSignature",
    "IncompleteSignatureException",
    "MissingAuthenticationToken",
    "MissingAuthenticationTokenException",
    "ExpiredToken",
    "ExpiredTokenException",
    "InvalidAccessKeyId",
];
const DENIED_CODES: &[&str] = &["AccessDeniedException", "AccessDenied"];
const THROTTLED_CODES: &[&str] = &[
    "ThrottlingException",
    "Throttling",
    "TooManyRequestsException",
    "ResourceNumberLimitExceededException",
];

/// The error for a non-success answer of `op` from the Glue endpoint `uri`.
///
/// | answer | error kind |
/// |---|---|
/// | a refused credential (`UnrecognizedClientException`, `InvalidSignatureException`, `SignatureDoesNotMatch`, ...), `AccessDeniedException`, 401, 403 | `Authentication` |
/// | `EntityNotFoundException` | `NotFound` (a load answers `None` instead) |
/// | `ConcurrentModificationException` | `Conflict`: another writer updated the table |
/// | `ThrottlingException`, 429 | `Unavailable` (not applied) |
/// | 5xx | `CommitUnknown` for an update (Glue may have applied it), `Unavailable` otherwise |
/// | any other | `Protocol` (not applied) |
pub(crate) fn status_error(op: Op, status: StatusCode, detail: &ErrorDetail, uri: &str) -> Error {
    let code = detail.code.as_deref().unwrap_or("");
    let text = &detail.text;
    let (kind, message) = if AUTH_CODES.contains(&code) || status.as_u16() == 401 {
        (
            ErrorKind::Authentication,
            format!("Glue catalog {uri} refused the credential: {text}"),
        )
    } else if DENIED_CODES.contains(&code) || status.as_u16() == 403 {
        (
            ErrorKind::Authentication,
            format!("Glue catalog {uri} denied the {}: {text}", op.what()),
        )
    } else if code == "EntityNotFoundException" {
        (
            ErrorKind::NotFound,
            format!("Glue catalog {uri}: {} found nothing: {text}", op.what()),
        )
    } else if code == "ConcurrentModificationException" {
        (
            ErrorKind::Conflict,
            format!(
                "Glue catalog {uri} refused the commit: another writer updated the table concurrently: {text}"
            ),
        )
    } else if THROTTLED_CODES.contains(&code) || status.as_u16() == 429 {
        (
            ErrorKind::Unavailable,
            format!(
                "Glue catalog {uri} is rate limiting the {}: {text}",
                op.what()
            ),
        )
    } else if status.is_server_error() && op.outcome_may_be_unknown() {
        (
            ErrorKind::CommitUnknown,
            format!(
                "Glue catalog {uri} failed the {} ({}); it may or may not have been applied: {text}",
                op.what(),
                status.as_u16()
            ),
        )
    } else if status.is_server_error() {
        (
            ErrorKind::Unavailable,
            format!(
                "Glue catalog {uri} failed the {} ({}): {text}",
                op.what(),
                status.as_u16()
            ),
        )
    } else if status.is_redirection() {
        (
            ErrorKind::Protocol,
            format!(
                "Glue catalog {uri} answered the {} with a redirect ({}), which the host does not follow: set glue.endpoint to the catalog's own address",
                op.what(),
                status.as_u16()
            ),
        )
    } else {
        (
            ErrorKind::Protocol,
            format!(
                "Glue catalog {uri} refused the {} ({}, not applied): {text}",
                op.what(),
                status.as_u16()
            ),
        )
    };
    Error::new(kind, message)
}

/// A success answer that cannot be used after an update: it was applied, but the caller must
/// treat the outcome as unknown (and read the table back).
fn applied_but(uri: &str, why: &str) -> Error {
    Error::new(
        ErrorKind::CommitUnknown,
        format!(
            "Glue catalog {uri} accepted the commit but its answer cannot be used ({why}); treat the outcome as unknown"
        ),
    )
}

// ---- the client -------------------------------------------------------------------------

/// One Glue catalog (endpoint, region, catalog id, credentials), shared by every table; a
/// cheap clone.
#[derive(Clone)]
pub struct GlueCatalog {
    inner: Arc<Inner>,
}

struct Inner {
    http: reqwest::Client,
    url: Url,
    /// The `Host` header as HTTP sends it (the port only when it is not the scheme's).
    host: String,
    options: GlueOptions,
    deadline: Duration,
    redactor: Redactor,
}

impl fmt::Debug for GlueCatalog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GlueCatalog")
            .field("endpoint", &self.inner.options.endpoint)
            .field("region", &self.inner.options.region)
            .field("catalog_id", &self.inner.options.catalog_id)
            .finish_non_exhaustive()
    }
}

/// The Glue catalogs of the process, each built once per set of options.
static CATALOGS: Mutex<Vec<(GlueOptions, Duration, GlueCatalog)>> = Mutex::new(Vec::new());

impl GlueCatalog {
    /// A client of the Glue catalog `options` name; every call ends within `deadline`.
    pub fn new(options: &GlueOptions, deadline: Duration) -> Result<GlueCatalog> {
        let http = super::http_client("the Glue catalog", deadline)?;
        let url = Url::parse(&format!("{}/", options.endpoint)).map_err(|e| {
            Error::new(
                ErrorKind::Config,
                format!("glue.endpoint '{}': {e}", options.endpoint),
            )
        })?;
        let host = match (url.host_str(), url.port()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_string(),
            (None, _) => {
                return Err(Error::new(
                    ErrorKind::Config,
                    format!("glue.endpoint '{}' names no host", options.endpoint),
                ));
            }
        };
        tracing::info!(
            endpoint = %options.endpoint,
            region = %options.region,
            catalog_id = options.catalog_id.as_deref().unwrap_or("(the caller's account)"),
            access_key_id = %options.credentials.access_key_id,
            credentials = options.credentials_from,
            "Glue catalog client ready"
        );
        Ok(GlueCatalog {
            inner: Arc::new(Inner {
                http,
                url,
                host,
                options: options.clone(),
                deadline,
                redactor: Redactor::new(options.secrets()),
            }),
        })
    }

    /// The process's client of the catalog `options` name, built on first use.
    pub fn shared(options: &GlueOptions, deadline: Duration) -> Result<GlueCatalog> {
        let mut catalogs = CATALOGS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, _, c)) = catalogs
            .iter()
            .find(|(o, d, _)| o == options && *d == deadline)
        {
            return Ok(c.clone());
        }
        let catalog = GlueCatalog::new(options, deadline)?;
        catalogs.push((options.clone(), deadline, catalog.clone()));
        Ok(catalog)
    }

    /// The table `database.table`.
    pub fn table(&self, database: &str, table: &str) -> PointerTable {
        PointerTable::new(Metastore::Glue(self.clone()), database, table)
    }

    /// The endpoint (for logs: it holds no secret).
    pub fn endpoint(&self) -> &str {
        &self.inner.options.endpoint
    }
}

/// An answer: its status, headers and body, read up to a bound.
struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

impl Inner {
    fn uri(&self) -> &str {
        &self.options.endpoint
    }

    /// Sends one signed call of `op` with `body` and reads the answer up to its bound. `sent`
    /// turns true once the request may have left the host. Non-success statuses are returned
    /// as answers, for the caller to map.
    async fn call(&self, op: Op, body: &Value, sent: &AtomicBool) -> Result<Answer> {
        let started = Instant::now();
        let payload = serde_json::to_vec(body).map_err(|e| {
            Error::new(
                ErrorKind::Internal,
                format!("cannot encode a Glue request: {e}"),
            )
        })?;
        let (_, amz_time) = amz_date(SystemTime::now());
        let credentials = &self.options.credentials;
        let content_type = "application/x-amz-json-1.1";
        let mut signed: Vec<(&str, &str)> = vec![
            ("content-type", content_type),
            ("host", &self.host),
            ("x-amz-date", &amz_time),
            ("x-amz-target", op.target()),
        ];
        if let Some(token) = &credentials.session_token {
            signed.push(("x-amz-security-token", token.expose()));
        }
        let authorization = sigv4_authorization(
            credentials,
            &self.options.region,
            SERVICE,
            &amz_time,
            &ToSign {
                method: "POST",
                path: self.url.path(),
                query: "",
                headers: &signed,
                payload: &payload,
            },
        );
        let mut authorization = HeaderValue::from_str(&authorization).map_err(|_| {
            Error::new(
                ErrorKind::Internal,
                "a Glue request's signature is not a header value",
            )
        })?;
        authorization.set_sensitive(true);
        let mut request = self
            .http
            .post(self.url.clone())
            .header(CONTENT_TYPE, content_type)
            .header("x-amz-date", &amz_time)
            .header("x-amz-target", op.target())
            .header(AUTHORIZATION, authorization)
            .body(payload);
        if let Some(token) = &credentials.session_token {
            let mut v = HeaderValue::from_str(token.expose()).map_err(|_| {
                Error::new(ErrorKind::Config, "the session token is not a header value")
            })?;
            v.set_sensitive(true);
            request = request.header("x-amz-security-token", v);
        }
        sent.store(true, Ordering::SeqCst);
        let response = request.send().await.map_err(|e| self.transport(op, &e))?;
        let status = response.status();
        let headers = response.headers().clone();
        tracing::debug!(
            op = op.what(),
            status = status.as_u16(),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "Glue catalog call"
        );
        let (limit, truncate) = if status.is_success() {
            (MAX_TABLE_ANSWER_BYTES, false)
        } else {
            (MAX_ERROR_BODY_BYTES, true)
        };
        let body = match read_body(response, limit, truncate).await {
            Ok(b) => b,
            Err(BodyError::Transport(_)) if !status.is_success() => Bytes::new(),
            Err(BodyError::Transport(e)) => {
                let e = self.transport(op, &e);
                return Err(if op.outcome_may_be_unknown() {
                    applied_but(self.uri(), e.message())
                } else {
                    e
                });
            }
            Err(BodyError::TooLarge) => {
                let why = format!("its answer is larger than {limit} bytes");
                return Err(if op.outcome_may_be_unknown() {
                    applied_but(self.uri(), &why)
                } else {
                    Error::new(
                        ErrorKind::Protocol,
                        format!("Glue catalog {}: {}: {why}", self.uri(), op.what()),
                    )
                });
            }
        };
        Ok(Answer {
            status,
            headers,
            body,
        })
    }

    /// The error for a request that got no answer: only a failure to connect proves an
    /// update was never sent.
    fn transport(&self, op: Op, e: &reqwest::Error) -> Error {
        let why = self.redactor.apply(super::rest::transport_why(e));
        let uri = self.uri();
        if e.is_connect() {
            return Error::new(
                ErrorKind::Unavailable,
                format!(
                    "cannot connect to Glue catalog {uri} ({}): {why}",
                    op.what()
                ),
            );
        }
        if op.outcome_may_be_unknown() {
            return Error::new(
                ErrorKind::CommitUnknown,
                format!(
                    "Glue catalog {uri}: the {}'s answer was lost; it may or may not have been applied: {why}",
                    op.what()
                ),
            );
        }
        Error::new(
            ErrorKind::Unavailable,
            format!("Glue catalog {uri}: the {} failed: {why}", op.what()),
        )
    }

    /// The error for a non-success answer, with secrets redacted.
    fn failure(&self, op: Op, answer: &Answer) -> Error {
        let detail = error_detail(answer.status, &answer.headers, &answer.body);
        let e = status_error(op, answer.status, &detail, self.uri());
        Error::new(e.kind(), self.redactor.apply(e.message().to_string()))
    }

    /// Runs `call` under the deadline ([`super::within`]).
    async fn within<T>(
        &self,
        op: Op,
        sent: &AtomicBool,
        call: impl Future<Output = Result<T>>,
    ) -> Result<T> {
        super::within(
            &format!("Glue catalog {}", self.uri()),
            op.what(),
            op.outcome_may_be_unknown(),
            self.deadline,
            sent,
            call,
        )
        .await
    }
}

// ---- the metastore ------------------------------------------------------------------------

impl GlueCatalog {
    /// `message` without the credentials' secrets.
    pub(crate) fn redact(&self, message: String) -> String {
        self.inner.redactor.apply(message)
    }

    /// `GetTable`: the table's record; `None` when Glue has no such table (or database).
    pub(crate) async fn get_entry(&self, database: &str, table: &str) -> Result<Option<Entry>> {
        let inner = &self.inner;
        let mut request = json!({"DatabaseName": database, "Name": table});
        if let Some(id) = &inner.options.catalog_id {
            request["CatalogId"] = json!(id);
        }
        let sent = AtomicBool::new(false);
        let answer = inner
            .within(
                Op::GetTable,
                &sent,
                inner.call(Op::GetTable, &request, &sent),
            )
            .await?;
        if !answer.status.is_success() {
            let detail = error_detail(answer.status, &answer.headers, &answer.body);
            if detail.code.as_deref() == Some("EntityNotFoundException") {
                return Ok(None);
            }
            return Err(inner.failure(Op::GetTable, &answer));
        }
        let protocol = |why: &str| {
            Error::new(
                ErrorKind::Protocol,
                format!(
                    "Glue catalog {}: table {database}.{table}: {why}",
                    inner.uri()
                ),
            )
        };
        let Ok(Value::Object(mut wire)) = serde_json::from_slice::<Value>(&answer.body) else {
            return Err(protocol("its GetTable answer is not a JSON object"));
        };
        let Some(Value::Object(table)) = wire.remove("Table") else {
            return Err(protocol("its GetTable answer has no Table"));
        };
        let parameter = |key: &str| {
            table
                .get("Parameters")
                .and_then(|p| p.get(key))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        Ok(Some(Entry {
            table_type: parameter(TABLE_TYPE),
            metadata_location: parameter(METADATA_LOCATION),
            storage_location: table
                .get("StorageDescriptor")
                .and_then(|s| s.get("Location"))
                .and_then(Value::as_str)
                .map(str::to_string),
            record: Record::Glue {
                version_id: table
                    .get("VersionId")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                table,
            },
        }))
    }

    /// `UpdateTable` with the table's `VersionId`, its other fields as they were, and
    /// `metadata_location` / `previous_metadata_location` set: `ConcurrentModificationException`
    /// (another writer updated it since `entry` was read) is `Conflict`; a lost answer
    /// `CommitUnknown`.
    pub(crate) async fn update_entry(
        &self,
        database: &str,
        table: &str,
        entry: &Entry,
        new_location: &str,
    ) -> Result<()> {
        let inner = &self.inner;
        let Record::Glue {
            table: record,
            version_id,
        } = &entry.record
        else {
            return Err(Error::new(
                ErrorKind::Internal,
                "a Glue update of another metastore's table",
            ));
        };
        let mut input: Map<String, Value> = record
            .iter()
            .filter(|(k, _)| TABLE_INPUT_FIELDS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        input.insert("Name".into(), json!(table));
        input.insert("TableType".into(), json!(EXTERNAL_TABLE));
        let mut parameters = match input.remove("Parameters") {
            Some(Value::Object(p)) => p,
            _ => Map::new(),
        };
        parameters.insert(TABLE_TYPE.into(), json!("ICEBERG"));
        parameters.insert(METADATA_LOCATION.into(), json!(new_location));
        if let Some(previous) = &entry.metadata_location {
            parameters.insert(PREVIOUS_METADATA_LOCATION.into(), json!(previous));
        }
        input.insert("Parameters".into(), Value::Object(parameters));
        let mut request = json!({
            "DatabaseName": database,
            "TableInput": input,
            "SkipArchive": inner.options.skip_archive,
        });
        if let Some(id) = &inner.options.catalog_id {
            request["CatalogId"] = json!(id);
        }
        if let Some(version) = version_id {
            request["VersionId"] = json!(version);
        }
        let sent = AtomicBool::new(false);
        let answer = inner
            .within(
                Op::UpdateTable,
                &sent,
                inner.call(Op::UpdateTable, &request, &sent),
            )
            .await?;
        if !answer.status.is_success() {
            return Err(inner.failure(Op::UpdateTable, &answer));
        }
        Ok(())
    }
}
