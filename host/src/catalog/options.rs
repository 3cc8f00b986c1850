//! The options of an Iceberg catalog, under the names Fluss hands to Iceberg's `CatalogUtil`
//! and `RESTCatalog` (`datalake.iceberg.<key>`, read here without the `datalake.iceberg.`
//! prefix): `type`, `uri`, `warehouse`, `prefix`, `credential`, `token`, `oauth2-server-uri`,
//! `scope`, `audience`, `resource`, `header.<name>`, `rest.auth.*`, ...
//!
//! A Glue catalog (`type=glue`) is read by [`GlueOptions`], a Hive Metastore (`type=hive`) by
//! [`HiveOptions`]; [`LakeCatalog::for_format`] tells
//! which catalog keeps a table.
//!
//! A catalog the host does not implement is refused here, with one line naming the option,
//! rather than tiering into a table some other catalog keeps. The secrets (`credential`,
//! `token`, `rest.auth.basic.password`, header values) are held as [`Secret`]s, which print as
//! `<redacted>`.

use std::fmt;

use reqwest::Url;
use reqwest::header::{HeaderName, HeaderValue};

use super::glue::{self, GlueOptions};
use super::hive::{self, HiveOptions};
use super::paimon_rest::PaimonRestOptions;
use crate::error::{Error, ErrorKind, Result};

/// The catalog that keeps a lake table, as its lake options name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LakeCatalog {
    /// An Iceberg REST catalog.
    Rest(CatalogOptions),
    /// The AWS Glue Data Catalog (Iceberg's `GlueCatalog`).
    Glue(GlueOptions),
    /// A Hive Metastore (Iceberg's `HiveCatalog`).
    Hive(HiveOptions),
    /// A Hive Metastore keeping Paimon tables (Paimon's `HiveCatalog`, `metastore=hive`): it
    /// registers each table and its location; commits go to the table's files as in a
    /// filesystem catalog.
    PaimonHive(HiveOptions),
    /// Paimon's REST catalog (`metastore=rest`): it says where each table is and keeps its
    /// snapshots; commits go through it.
    PaimonRest(PaimonRestOptions),
}

impl LakeCatalog {
    /// The catalog that keeps a table of `format`: `None` for one kept by its files alone.
    /// Iceberg's `type=glue` is [`GlueOptions`], `type=hive` [`HiveOptions`]; everything else as
    /// [`CatalogOptions::for_format`] reads it.
    pub fn for_format(format: &str, options: &[(String, String)]) -> Result<Option<LakeCatalog>> {
        let both_given = || {
            options
                .iter()
                .any(|(k, v)| k == "type" && !v.trim().is_empty())
                && options
                    .iter()
                    .any(|(k, v)| k == "catalog-impl" && !v.trim().is_empty())
        };
        if format == "iceberg" && hive::is_hive(options) {
            if both_given() {
                return Err(config(
                    "type and catalog-impl are both given: give one (as Iceberg's CatalogUtil requires)",
                ));
            }
            return HiveOptions::from_lake_options(options).map(|o| Some(LakeCatalog::Hive(o)));
        }
        if format == "paimon"
            && options
                .iter()
                .rev()
                .find(|(k, _)| k == "metastore")
                .is_some_and(|(_, v)| v.trim().eq_ignore_ascii_case("hive"))
        {
            return HiveOptions::for_paimon(options).map(|o| Some(LakeCatalog::PaimonHive(o)));
        }
        if format == "paimon"
            && options
                .iter()
                .rev()
                .find(|(k, _)| k == "metastore")
                .is_some_and(|(_, v)| v.trim().eq_ignore_ascii_case("rest"))
        {
            return PaimonRestOptions::from_lake_options(options)
                .map(|o| Some(LakeCatalog::PaimonRest(o)));
        }
        if format == "iceberg" && glue::is_glue(options) {
            if options
                .iter()
                .any(|(k, v)| k == "type" && !v.trim().is_empty())
                && options
                    .iter()
                    .any(|(k, v)| k == "catalog-impl" && !v.trim().is_empty())
            {
                return Err(config(
                    "type and catalog-impl are both given: give one (as Iceberg's CatalogUtil requires)",
                ));
            }
            return GlueOptions::from_lake_options(options).map(|o| Some(LakeCatalog::Glue(o)));
        }
        CatalogOptions::for_format(format, options).map(|o| o.map(LakeCatalog::Rest))
    }

    /// The catalog's endpoint, for logs (it holds no secret).
    pub fn endpoint(&self) -> &str {
        match self {
            LakeCatalog::Rest(o) => &o.uri,
            LakeCatalog::Glue(o) => &o.endpoint,
            LakeCatalog::Hive(o) | LakeCatalog::PaimonHive(o) => &o.uri,
            LakeCatalog::PaimonRest(o) => &o.uri,
        }
    }
}

/// How the table's current metadata is kept, as the options name the catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CatalogKind {
    /// By files alone in the table's directory (`type` absent or `hadoop`): the plugin
    /// publishes its version files with put-if-absent; no catalog service is called.
    Files,
    /// By an Iceberg REST catalog (`type=rest`).
    IcebergRest,
    /// By a metastore pointing at the current metadata file (`type=glue`, `type=hive`): read
    /// by [`LakeCatalog::for_format`].
    Metastore,
}

/// A secret option value. `Debug` and `Display` print `<redacted>`; [`Secret::expose`] is the
/// one way to the value, so every use of it is greppable.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// How the host authenticates to the catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CatalogAuth {
    /// No `Authorization` header (`rest.auth.type=none`, or no credential and no token).
    None,
    /// A static bearer token (`token`), sent as it is and never refreshed.
    Token(Secret),
    /// OAuth2 client credentials (`credential` = `client_id:client_secret`, or a bare secret):
    /// exchanged for a bearer token at `oauth2-server-uri`, fetched again before it expires
    /// and once more when the catalog answers 401.
    ClientCredentials {
        client_id: Option<String>,
        client_secret: Secret,
        /// Absolute, or relative to `uri` (`v1/oauth/tokens` when not given, as in Java).
        server_uri: String,
        scope: String,
        audience: Option<String>,
        resource: Option<String>,
        /// `token-refresh-enabled`: fetch a new token before the current one expires.
        refresh: bool,
    },
    /// HTTP basic authentication (`rest.auth.type=basic`).
    Basic { username: String, password: Secret },
}

/// The options of one Iceberg REST catalog. `Debug` never prints a secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogOptions {
    /// The catalog's base URI (`uri`), without trailing `/`: `http(s)://host[:port][/path]`.
    pub uri: String,
    /// `warehouse`: sent as the `warehouse` query parameter of `GET /v1/config`; for a REST
    /// catalog it names a warehouse the catalog knows (a location or an identifier).
    pub warehouse: Option<String>,
    /// `prefix`: the path segment(s) after `/v1/` unless the catalog's configuration overrides
    /// it.
    pub prefix: Option<String>,
    pub auth: CatalogAuth,
    /// `header.<name>`: extra headers on every request (values are secrets: they often carry
    /// API keys).
    pub headers: Vec<(String, Secret)>,
}

/// Iceberg catalog types the host knows of but does not implement yet.
const NOT_YET: &[&str] = &["jdbc", "nessie", "snowflake", "bigquery"];

/// Catalog keys by name (what Iceberg's `RESTCatalog`, its `OAuth2Properties` and
/// `CatalogUtil` read), kept from plugins: the endpoint and the credentials are the host's.
const CATALOG_KEYS: &[&str] = &[
    "uri",
    "credential",
    "token",
    "oauth2-server-uri",
    "scope",
    "audience",
    "resource",
    "prefix",
    "token-expires-in-ms",
    "token-refresh-enabled",
    "token-exchange-enabled",
    "catalog-impl",
    "namespace-separator",
    "snapshot-loading-mode",
    "view-endpoints-supported",
    "rest-metrics-reporting-enabled",
    "lock-impl",
    "clients",
    // Paimon's REST catalog: how its token is made.
    "token.provider",
];

/// Catalog keys by prefix: extra headers, the REST client's and auth managers' settings, and
/// RFC 8693 token types given as keys.
const CATALOG_PREFIXES: &[&str] = &[
    "header.",
    "rest.",
    "urn:ietf:params:oauth:token-type:",
    // The Glue catalog's (endpoint, catalog id, region, pyiceberg's credentials) and its lock
    // manager's; `client.*` (region, credentials) are storage keys, kept from plugins too.
    "glue.",
    "lock.",
    // The Hive Metastore client's settings (`hive.metastore.*`, `hive.conf.dir`, ...).
    "hive.",
    // Paimon's REST catalog's DLF signing settings (`dlf.access-key-id`, ...).
    "dlf.",
];

impl CatalogOptions {
    /// The catalog that keeps a table of `format`, as its lake options name it: `None` for
    /// one kept by its files alone. Iceberg: [`CatalogOptions::from_lake_options`]; Paimon:
    /// any `metastore` but `filesystem` is refused; other formats have no catalog.
    pub fn for_format(
        format: &str,
        options: &[(String, String)],
    ) -> Result<Option<CatalogOptions>> {
        match format {
            "iceberg" => Self::from_lake_options(options),
            "paimon" => {
                // Paimon's `metastore` (FileSystemCatalog, HiveCatalog, RESTCatalog): only the
                // filesystem catalog keeps a table by its files alone. Writing the files of a
                // table a metastore keeps would leave the metastore's readers without them.
                let metastore = options
                    .iter()
                    .rev()
                    .find(|(k, _)| k == "metastore")
                    .map(|(_, v)| v.trim().to_ascii_lowercase());
                match metastore.as_deref() {
                    None | Some("") | Some("filesystem") => Ok(None),
                    Some(other) => Err(Error::new(
                        ErrorKind::Unsupported,
                        format!(
                            "datalake.paimon.metastore={other}: Paimon tables kept by a {other} catalog are not written yet \
                             (only metastore=filesystem, hive and rest); refused rather than writing files the {other} catalog would not know"
                        ),
                    )),
                }
            }
            _ => Ok(None),
        }
    }

    /// The catalog the Iceberg lake options name: `None` for a files-only catalog (`type`
    /// absent or `hadoop`). Refuses (`Unsupported`, one line naming the option) the catalogs
    /// not implemented yet (`jdbc`, `nessie`, any other `catalog-impl`), a Glue or Hive catalog
    /// (not a REST one: [`LakeCatalog::for_format`] reads it), and the REST
    /// options that would change how the host authenticates or connects in ways it does not
    /// implement (`rest.sigv4-enabled`, `rest.auth.type` other than `none`, `oauth2` and
    /// `basic`, a custom TLS configurer).
    pub fn from_lake_options(options: &[(String, String)]) -> Result<Option<CatalogOptions>> {
        let get = |key: &str| {
            options
                .iter()
                .rev()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.trim())
                .filter(|v| !v.is_empty())
        };
        let kind = match (get("type"), get("catalog-impl")) {
            (Some(_), Some(_)) => {
                return Err(config(
                    "type and catalog-impl are both given: give one (as Iceberg's CatalogUtil requires)",
                ));
            }
            (None, None) => CatalogKind::Files,
            (Some(t), None) => match t.to_ascii_lowercase().as_str() {
                "hadoop" => CatalogKind::Files,
                "rest" => CatalogKind::IcebergRest,
                "glue" | "hive" => CatalogKind::Metastore,
                other if NOT_YET.contains(&other) => {
                    return Err(unsupported(format!(
                        "type={other}: the Iceberg {other} catalog is not implemented yet (supported: hadoop, rest, glue, hive)"
                    )));
                }
                other => {
                    return Err(unsupported(format!(
                        "type={other}: unknown Iceberg catalog type (supported: hadoop, rest, glue, hive)"
                    )));
                }
            },
            (None, Some(class)) => match class {
                "org.apache.iceberg.hadoop.HadoopCatalog" => CatalogKind::Files,
                "org.apache.iceberg.rest.RESTCatalog" => CatalogKind::IcebergRest,
                glue::GLUE_CATALOG_IMPL | hive::HIVE_CATALOG_IMPL => CatalogKind::Metastore,
                other => {
                    return Err(unsupported(format!(
                        "catalog-impl={other}: custom Iceberg catalogs are not supported (supported: type=hadoop, type=rest, type=glue, type=hive)"
                    )));
                }
            },
        };
        match kind {
            CatalogKind::Files => return Ok(None),
            CatalogKind::Metastore => {
                return Err(unsupported(
                    "a Glue or Hive catalog is not a REST catalog (the host reads its options with LakeCatalog::for_format)",
                ));
            }
            CatalogKind::IcebergRest => {}
        }

        if let Some(v) = get("rest.sigv4-enabled")
            && parse_bool("rest.sigv4-enabled", v)?
        {
            return Err(unsupported(
                "rest.sigv4-enabled=true: AWS SigV4 signing of catalog requests is not implemented yet",
            ));
        }
        if get("rest.client.tls.configurer-impl").is_some() {
            return Err(unsupported(
                "rest.client.tls.configurer-impl: custom TLS configuration is not supported (the host trusts the system's root certificates)",
            ));
        }

        let uri = parse_uri(get("uri").ok_or_else(|| {
            config("type=rest needs uri, the Iceberg REST catalog's base URI (http://host:port)")
        })?)?;

        let prefix = match get("prefix") {
            Some(p) => Some(check_prefix(p).map_err(|why| config(format!("prefix: {why}")))?),
            None => None,
        };

        let credential = get("credential");
        let token = get("token");
        let auth_type = get("rest.auth.type")
            .map(|t| t.to_ascii_lowercase())
            .unwrap_or_else(|| "oauth2".to_string());
        let auth = match auth_type.as_str() {
            "none" => {
                if credential.is_some() || token.is_some() {
                    return Err(config(
                        "rest.auth.type=none, but credential or token is given: remove one or the other",
                    ));
                }
                CatalogAuth::None
            }
            "basic" => {
                let username = get("rest.auth.basic.username");
                let password = get("rest.auth.basic.password");
                match (username, password) {
                    (Some(u), Some(p)) => CatalogAuth::Basic {
                        username: u.to_string(),
                        password: Secret::new(p),
                    },
                    _ => {
                        return Err(config(
                            "rest.auth.type=basic needs rest.auth.basic.username and rest.auth.basic.password",
                        ));
                    }
                }
            }
            // Iceberg's default manager: client credentials win over a static token, as its
            // OAuth2Manager fetches a token for them first.
            "oauth2" => match (credential, token) {
                (Some(credential), _) => {
                    let (client_id, client_secret) = match credential.split_once(':') {
                        Some((id, secret)) => (Some(id.trim().to_string()), secret.trim()),
                        None => (None, credential),
                    };
                    if client_secret.is_empty() {
                        return Err(config("credential: the client secret is empty"));
                    }
                    let server_uri = match get("oauth2-server-uri") {
                        Some(u) => check_server_uri(u)?,
                        None => "v1/oauth/tokens".to_string(),
                    };
                    CatalogAuth::ClientCredentials {
                        client_id: client_id.filter(|id| !id.is_empty()),
                        client_secret: Secret::new(client_secret),
                        server_uri,
                        scope: get("scope").unwrap_or("catalog").to_string(),
                        audience: get("audience").map(str::to_string),
                        resource: get("resource").map(str::to_string),
                        refresh: match get("token-refresh-enabled") {
                            Some(v) => parse_bool("token-refresh-enabled", v)?,
                            None => true,
                        },
                    }
                }
                (None, Some(token)) => {
                    if HeaderValue::from_str(&format!("Bearer {token}")).is_err() {
                        return Err(config("token: not a valid HTTP header value"));
                    }
                    CatalogAuth::Token(Secret::new(token))
                }
                (None, None) => CatalogAuth::None,
            },
            "sigv4" => {
                return Err(unsupported(
                    "rest.auth.type=sigv4: AWS SigV4 signing of catalog requests is not implemented yet",
                ));
            }
            "google" => {
                return Err(unsupported(
                    "rest.auth.type=google: Google authentication of catalog requests is not implemented yet",
                ));
            }
            other => {
                return Err(unsupported(format!(
                    "rest.auth.type={other}: not supported (supported: none, oauth2, basic)"
                )));
            }
        };

        Ok(Some(CatalogOptions {
            uri,
            warehouse: get("warehouse").map(str::to_string),
            prefix,
            auth,
            headers: parse_headers(options)?,
        }))
    }

    /// Whether `key` (a lake option without its `datalake.<format>.` prefix) configures the
    /// catalog, and so is kept from plugins: the endpoint (`uri`, `prefix`, ...), the
    /// credentials (`credential`, `token`, `rest.auth.*`, token types), the OAuth2 settings
    /// (`oauth2-server-uri`, `scope`, `audience`, `resource`, `token-*`) and the extra headers
    /// (`header.*`, which often carry API keys). `type` and `warehouse` are not: they describe
    /// the lake rather than the connection, hold no secret, and the host's warehouse handling
    /// reads them.
    pub fn is_catalog_key(key: &str) -> bool {
        let lower = key.to_ascii_lowercase();
        CATALOG_KEYS.contains(&lower.as_str())
            || CATALOG_PREFIXES.iter().any(|p| lower.starts_with(p))
    }

    /// The values that must never appear in a message: every secret of the options.
    pub(crate) fn secrets(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .headers
            .iter()
            .map(|(_, v)| v.expose().to_string())
            .collect();
        match &self.auth {
            CatalogAuth::None => {}
            CatalogAuth::Token(t) => out.push(t.expose().to_string()),
            CatalogAuth::ClientCredentials { client_secret, .. } => {
                out.push(client_secret.expose().to_string())
            }
            CatalogAuth::Basic { password, .. } => out.push(password.expose().to_string()),
        }
        out
    }
}

/// Headers the host sets on every request (or that HTTP itself owns).
const RESERVED_HEADERS: &[&str] = &[
    "authorization",
    "content-type",
    "content-length",
    "transfer-encoding",
    "connection",
    "host",
];

/// The `header.<name>` options: extra headers on every request of a REST catalog (values are
/// secrets: they often carry API keys). A later key wins; the headers the host sets itself
/// are refused.
pub(crate) fn parse_headers(options: &[(String, String)]) -> Result<Vec<(String, Secret)>> {
    let mut headers = Vec::new();
    for (key, value) in options {
        let Some(name) = key.strip_prefix("header.") else {
            continue;
        };
        let parsed = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| config(format!("{key}: not a valid HTTP header name")))?;
        if RESERVED_HEADERS.contains(&parsed.as_str()) {
            return Err(config(format!(
                "{key}: the host sets this header itself; it cannot be configured"
            )));
        }
        if HeaderValue::from_str(value.trim()).is_err() {
            return Err(config(format!("{key}: not a valid HTTP header value")));
        }
        headers.retain(|(n, _): &(String, Secret)| n != parsed.as_str());
        headers.push((parsed.as_str().to_string(), Secret::new(value.trim())));
    }
    Ok(headers)
}

fn config(message: impl Into<String>) -> Error {
    Error::new(
        ErrorKind::Config,
        format!("Iceberg catalog option {}", message.into()),
    )
}

fn unsupported(message: impl Into<String>) -> Error {
    Error::new(
        ErrorKind::Unsupported,
        format!("Iceberg catalog option {}", message.into()),
    )
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

/// The catalog's base URI: http or https, a host, no user or password (they would be printed
/// with the URI; `credential` and `rest.auth.basic.*` are the places for secrets), no query.
fn parse_uri(raw: &str) -> Result<String> {
    let url = Url::parse(raw).map_err(|e| config(format!("uri '{raw}': {e}")))?;
    check_http_url("uri", raw, &url)?;
    Ok(raw.trim_end_matches('/').to_string())
}

pub(crate) fn check_http_url(key: &str, raw: &str, url: &Url) -> Result<()> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(config(format!(
            "{key} '{raw}': the scheme must be http or https"
        )));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(config(format!("{key} '{raw}': names no host")));
    }
    if !url.username().is_empty() || url.password().is_some() {
        // Not echoed: the URI holds a password.
        return Err(config(format!(
            "{key}: must not hold a user or password (use credential, token or rest.auth.basic.*)"
        )));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(config(format!(
            "{key} '{raw}': must not have a query or fragment"
        )));
    }
    Ok(())
}

/// `oauth2-server-uri`: an absolute http(s) URI, or a path relative to `uri`.
fn check_server_uri(raw: &str) -> Result<String> {
    if raw.contains("://") {
        let url = Url::parse(raw).map_err(|e| config(format!("oauth2-server-uri '{raw}': {e}")))?;
        check_http_url("oauth2-server-uri", raw, &url)?;
        return Ok(raw.to_string());
    }
    check_prefix(raw.trim_start_matches('/'))
        .map_err(|why| config(format!("oauth2-server-uri: {why}")))
}

/// A path prefix put into URLs as it is (as Java's `ResourcePaths` does): path characters
/// only, no `.` or `..` segment, no empty segment. The same check applies to the prefix the
/// catalog's configuration answers.
pub(crate) fn check_prefix(raw: &str) -> std::result::Result<String, String> {
    let p = raw.trim_matches('/');
    if p.is_empty() {
        return Err("is empty".into());
    }
    if p.len() > 1024 {
        return Err("is longer than 1024 bytes".into());
    }
    if let Some(c) = p
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "-._~%!$&'()*+,;=:@/".contains(*c)))
    {
        return Err(format!(
            "'{}' holds '{}', not allowed in a URL path",
            p,
            c.escape_default()
        ));
    }
    // `%2e` too: URL parsing resolves it as a dot.
    if p.split('/').any(|s| {
        let s = s.to_ascii_lowercase().replace("%2e", ".");
        s.is_empty() || s == "." || s == ".."
    }) {
        return Err(format!("'{p}' has an empty, '.' or '..' segment"));
    }
    Ok(p.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn parse(pairs: &[(&str, &str)]) -> Result<Option<CatalogOptions>> {
        CatalogOptions::from_lake_options(&opts(pairs))
    }

    #[test]
    fn files_only_catalogs_are_none() {
        assert_eq!(parse(&[]).unwrap(), None);
        assert_eq!(parse(&[("warehouse", "/tmp/wh")]).unwrap(), None);
        assert_eq!(
            parse(&[("type", "hadoop"), ("warehouse", "s3://b/w")]).unwrap(),
            None
        );
        assert_eq!(parse(&[("type", " Hadoop ")]).unwrap(), None);
        assert_eq!(
            parse(&[("catalog-impl", "org.apache.iceberg.hadoop.HadoopCatalog")]).unwrap(),
            None
        );
    }

    #[test]
    fn rest_with_client_credentials() {
        let o = parse(&[
            ("type", "rest"),
            ("uri", "https://catalog.example.com/api/catalog/"),
            ("warehouse", "analytics"),
            ("credential", "client:s3cr3t-value"),
            ("scope", "PRINCIPAL_ROLE:ALL"),
            ("oauth2-server-uri", "https://idp.example.com/oauth/token"),
            ("header.X-Iceberg-Access-Delegation", "vended-credentials"),
            ("header.X-Api-Key", "api-key-value"),
            ("audience", "lake"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(o.uri, "https://catalog.example.com/api/catalog");
        assert_eq!(o.warehouse.as_deref(), Some("analytics"));
        match &o.auth {
            CatalogAuth::ClientCredentials {
                client_id,
                client_secret,
                server_uri,
                scope,
                audience,
                refresh,
                ..
            } => {
                assert_eq!(client_id.as_deref(), Some("client"));
                assert_eq!(client_secret.expose(), "s3cr3t-value");
                assert_eq!(server_uri, "https://idp.example.com/oauth/token");
                assert_eq!(scope, "PRINCIPAL_ROLE:ALL");
                assert_eq!(audience.as_deref(), Some("lake"));
                assert!(*refresh);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(o.headers.len(), 2);
        let shown = format!("{o:?}");
        for secret in ["s3cr3t-value", "api-key-value", "vended-credentials"] {
            assert!(!shown.contains(secret), "{shown}");
        }
        assert!(shown.contains("x-api-key"), "{shown}");
    }

    #[test]
    fn rest_defaults_token_basic_and_none() {
        let o = parse(&[
            ("type", "REST"),
            ("uri", "http://127.0.0.1:8181"),
            ("credential", "only-secret"),
        ])
        .unwrap()
        .unwrap();
        match o.auth {
            CatalogAuth::ClientCredentials {
                client_id,
                server_uri,
                scope,
                ..
            } => {
                assert_eq!(client_id, None);
                assert_eq!(server_uri, "v1/oauth/tokens");
                assert_eq!(scope, "catalog");
            }
            other => panic!("{other:?}"),
        }
        let o = parse(&[("type", "rest"), ("uri", "http://h:1"), ("token", "tok")])
            .unwrap()
            .unwrap();
        assert_eq!(o.auth, CatalogAuth::Token(Secret::new("tok")));
        assert!(!format!("{o:?}").contains("tok\""));
        let o = parse(&[
            ("type", "rest"),
            ("uri", "http://h:1"),
            ("rest.auth.type", "basic"),
            ("rest.auth.basic.username", "u"),
            ("rest.auth.basic.password", "pw-value"),
        ])
        .unwrap()
        .unwrap();
        assert!(matches!(o.auth, CatalogAuth::Basic { .. }));
        assert!(!format!("{o:?}").contains("pw-value"));
        let o = parse(&[("type", "rest"), ("uri", "http://h:1"), ("prefix", "/cat/")])
            .unwrap()
            .unwrap();
        assert_eq!(o.auth, CatalogAuth::None);
        assert_eq!(o.prefix.as_deref(), Some("cat"));
        let o = parse(&[
            ("catalog-impl", "org.apache.iceberg.rest.RESTCatalog"),
            ("uri", "http://h:1"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(o.uri, "http://h:1");
    }

    #[test]
    fn refusals_name_the_option_and_never_a_secret() {
        type Case<'a> = (&'a [(&'a str, &'a str)], ErrorKind, &'a str);
        let cases: &[Case] = &[
            (
                &[("type", "hive"), ("uri", "thrift://h:9083")],
                ErrorKind::Unsupported,
                "not a REST catalog",
            ),
            (
                &[("type", "glue")],
                ErrorKind::Unsupported,
                "not a REST catalog",
            ),
            (&[("type", "jdbc")], ErrorKind::Unsupported, "type=jdbc"),
            (&[("type", "nessie")], ErrorKind::Unsupported, "type=nessie"),
            (&[("type", "weird")], ErrorKind::Unsupported, "type=weird"),
            (
                &[("catalog-impl", "com.example.MyCatalog")],
                ErrorKind::Unsupported,
                "catalog-impl=com.example.MyCatalog",
            ),
            (
                &[("type", "rest"), ("catalog-impl", "x")],
                ErrorKind::Config,
                "catalog-impl",
            ),
            (
                &[
                    ("type", "rest"),
                    ("uri", "http://h:1"),
                    ("rest.sigv4-enabled", "true"),
                ],
                ErrorKind::Unsupported,
                "rest.sigv4-enabled",
            ),
            (
                &[
                    ("type", "rest"),
                    ("uri", "http://h:1"),
                    ("rest.auth.type", "sigv4"),
                ],
                ErrorKind::Unsupported,
                "rest.auth.type=sigv4",
            ),
            (
                &[
                    ("type", "rest"),
                    ("uri", "http://h:1"),
                    ("rest.auth.type", "com.example.Auth"),
                ],
                ErrorKind::Unsupported,
                "rest.auth.type",
            ),
            (
                &[
                    ("type", "rest"),
                    ("uri", "http://h:1"),
                    ("rest.client.tls.configurer-impl", "x"),
                ],
                ErrorKind::Unsupported,
                "rest.client.tls.configurer-impl",
            ),
            (&[("type", "rest")], ErrorKind::Config, "needs uri"),
            (
                &[("type", "rest"), ("uri", "ftp://h/")],
                ErrorKind::Config,
                "http or https",
            ),
            (
                &[("type", "rest"), ("uri", "https://user:hunter2@h/")],
                ErrorKind::Config,
                "user or password",
            ),
            (
                &[
                    ("type", "rest"),
                    ("uri", "http://h:1"),
                    ("rest.auth.type", "basic"),
                ],
                ErrorKind::Config,
                "rest.auth.basic.username",
            ),
            (
                &[
                    ("type", "rest"),
                    ("uri", "http://h:1"),
                    ("rest.auth.type", "none"),
                    ("token", "hunter2"),
                ],
                ErrorKind::Config,
                "rest.auth.type=none",
            ),
            (
                &[
                    ("type", "rest"),
                    ("uri", "http://h:1"),
                    ("header.Authorization", "Bearer hunter2"),
                ],
                ErrorKind::Config,
                "header.Authorization",
            ),
            (
                &[
                    ("type", "rest"),
                    ("uri", "http://h:1"),
                    ("header.X-Key", "bad\nhunter2"),
                ],
                ErrorKind::Config,
                "header.X-Key",
            ),
            (
                &[
                    ("type", "rest"),
                    ("uri", "http://h:1"),
                    ("prefix", "a/../b"),
                ],
                ErrorKind::Config,
                "prefix",
            ),
            (
                &[
                    ("type", "rest"),
                    ("uri", "http://h:1"),
                    ("prefix", "a/%2E%2e/b"),
                ],
                ErrorKind::Config,
                "prefix",
            ),
            (
                &[
                    ("type", "rest"),
                    ("uri", "http://h:1"),
                    ("credential", "id:"),
                ],
                ErrorKind::Config,
                "client secret is empty",
            ),
        ];
        for (pairs, kind, needle) in cases {
            let e = parse(pairs).unwrap_err();
            assert_eq!(e.kind(), *kind, "{pairs:?}: {e}");
            assert!(e.message().contains(needle), "{pairs:?}: {e}");
            assert!(!e.to_string().contains("hunter2"), "{e}");
            assert_eq!(e.to_string().lines().count(), 1, "{e}");
        }
    }

    #[test]
    fn catalog_keys_are_kept_from_plugins() {
        for key in [
            "uri",
            "credential",
            "token",
            "oauth2-server-uri",
            "scope",
            "audience",
            "resource",
            "prefix",
            "header.X-Api-Key",
            "rest.auth.type",
            "rest.auth.basic.password",
            "rest.sigv4-enabled",
            "urn:ietf:params:oauth:token-type:jwt",
            "token-refresh-enabled",
            "catalog-impl",
            "URI",
        ] {
            assert!(CatalogOptions::is_catalog_key(key), "{key}");
        }
        for key in [
            "type",
            "warehouse",
            "target-file-size",
            "write.format.default",
        ] {
            assert!(!CatalogOptions::is_catalog_key(key), "{key}");
        }
    }
}
