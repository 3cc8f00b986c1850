//! Azure Blob Storage and ADLS Gen2 warehouses, under the URL schemes and option names Fluss's
//! `fluss-fs-azure` plugin (Hadoop ABFS), Paimon's `paimon-azure`, Iceberg's `ADLSFileIO` and
//! Lance/object_store use.
//!
//! URLs: `abfs[s]://<container>@<account>.dfs.core.windows.net/<prefix>` and
//! `wasb[s]://<container>@<account>.blob.core.windows.net/<prefix>` (Hadoop's, as Fluss
//! takes them; either endpoint names the same account, and the host writes through the Blob
//! API), and object_store's `az://<container>/<prefix>` (the account from the options).
//!
//! Settings, each under every usual spelling (two spellings with different values are a
//! configuration error naming the keys):
//! - Hadoop ABFS keys as Fluss and Paimon pass them (`fs.azure.*`, also `azure.*` as Paimon
//!   takes them, and `iceberg.hadoop.fs.azure.*` / `hadoop.fs.azure.*`): the account key
//!   `fs.azure.account.key.<account host>` or `fs.azure.account.key` (Fluss's documented key),
//!   `fs.azure.account.auth.type` (`SharedKey`, `OAuth`, `SAS`), OAuth client credentials
//!   (`fs.azure.account.oauth2.client.id`, `.client.secret`, `.client.endpoint` with
//!   `fs.azure.account.oauth.provider.type` `ClientCredsTokenProvider`, or
//!   `MsiTokenProvider` for a managed identity), `fs.azure.sas.fixed.token`; each also
//!   per account, suffixed with `.<account>.dfs.core.windows.net`, which wins as in Hadoop.
//! - Iceberg: `adls.auth.shared-key.account.name` / `.key`, `adls.sas-token.<account host>`,
//!   `adls.connection-string.<account host>` (the account's endpoint URL).
//! - object_store / Lance: `azure_storage_account_name`, `azure_storage_account_key`, … (other
//!   `azure_*` keys object_store knows pass through as they are).
//!
//! The endpoint, for an emulator such as Azurite: Hadoop's `fs.azure.abfs.endpoint`
//! (`127.0.0.1:10000`: requests go to `http[s]://127.0.0.1:10000/<account>/<container>`, over
//! http only for `abfs://`/`wasb://` with `fs.azure.always.use.https` false, as in Hadoop),
//! Iceberg's `adls.connection-string.<account host>` or object_store's `azure_storage_endpoint`
//! (the account URL, `http://127.0.0.1:10000/devstoreaccount1`); or the emulator's
//! well-known account, `http://127.0.0.1:10000/devstoreaccount1` (Hadoop WASB's
//! `fs.azure.storage.emulator.account.name` naming the URL's account, or object_store's
//! `azure_storage_use_emulator`). Plain http is used only when the endpoint says so.
//!
//! Conditional creates are `PUT` with `If-None-Match: *`, which Azure (and Azurite) refuse
//! with 409 when the blob exists; [`super::probe`] checks it before anything is committed.

use std::str::FromStr;

use object_store::azure::{AzureConfigKey, MicrosoftAzure, MicrosoftAzureBuilder};

use super::lookup::{Lookup, client_options, prefixed, retry_config};
use super::options::StorageOptions;
use crate::error::{Error, ErrorKind, Result, store_message};

/// Where Hadoop's `fs.azure.<key>` may also be given: Paimon's `azure.` and the prefixes
/// Fluss's Iceberg plugin and Paimon hand to Hadoop.
const HADOOP: &[&str] = &[
    "fs.azure.",
    "azure.",
    "iceberg.hadoop.fs.azure.",
    "hadoop.fs.azure.",
];

const ACCOUNT_NAME: &[&str] = &[
    "azure_storage_account_name",
    "account_name",
    "adls.auth.shared-key.account.name",
];
const ACCOUNT_KEY: &[&str] = &[
    "adls.auth.shared-key.account.key",
    "azure_storage_account_key",
    "azure_storage_access_key",
    "azure_storage_master_key",
    "account_key",
];
const SAS: &[&str] = &[
    "azure_storage_sas_key",
    "azure_storage_sas_token",
    "sas_key",
    "sas_token",
];
const CLIENT_ID: &[&str] = &["azure_storage_client_id", "azure_client_id", "client_id"];
const CLIENT_SECRET: &[&str] = &[
    "azure_storage_client_secret",
    "azure_client_secret",
    "client_secret",
];
const TENANT: &[&str] = &[
    "azure_storage_tenant_id",
    "azure_storage_authority_id",
    "azure_tenant_id",
    "azure_authority_id",
    "tenant_id",
    "authority_id",
];
const AUTHORITY_HOST: &[&str] = &[
    "azure_storage_authority_host",
    "azure_authority_host",
    "authority_host",
];
const MSI_ENDPOINT: &[&str] = &[
    "azure_msi_endpoint",
    "azure_identity_endpoint",
    "identity_endpoint",
    "msi_endpoint",
];
const ENDPOINT: &[&str] = &["azure_storage_endpoint", "azure_endpoint", "endpoint"];
const USE_EMULATOR: &[&str] = &["azure_storage_use_emulator", "use_emulator"];

/// What an Azure warehouse URL names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AzureUrl {
    /// `abfs`, `abfss`, `wasb`, `wasbs` or `az`.
    pub scheme: String,
    pub container: String,
    /// The account host after `@` as written (`<account>.dfs.core.windows.net`, or a bare
    /// name such as Hadoop's `storageemulator`); none in `az://<container>/…`.
    pub host: Option<String>,
    /// No leading or trailing `/`; may be empty.
    pub prefix: String,
}

impl AzureUrl {
    /// Parses what follows `<scheme>://`. The error says why, without the URL.
    pub fn parse(scheme: &str, rest: &str) -> std::result::Result<Self, String> {
        let (authority, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        let (container, host) = match authority.split_once('@') {
            Some((container, host)) => {
                if host.is_empty() {
                    return Err("names no account after '@'".into());
                }
                if host.contains('.') && account_of(host).is_none() {
                    return Err(format!(
                        "names '{host}', not an account host (<account>.dfs.core.windows.net or <account>.blob.core.windows.net)"
                    ));
                }
                (container, Some(host.to_ascii_lowercase()))
            }
            None if scheme.starts_with("wasb") => {
                return Err(
                    "names no account: wasb URLs are wasb://<container>@<account>.blob.core.windows.net/<path>"
                        .into(),
                );
            }
            None if authority.contains('.') => {
                return Err(format!(
                    "names no container: write {scheme}://<container>@{authority}/<path>"
                ));
            }
            None => (authority, None),
        };
        if container.is_empty() {
            return Err("names no container".into());
        }
        if !container
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        {
            return Err(format!(
                "names the container '{container}': container names are lowercase letters, digits and '-'"
            ));
        }
        Ok(Self {
            scheme: scheme.to_string(),
            container: container.to_string(),
            host,
            prefix: prefix.trim_matches('/').to_string(),
        })
    }

    /// The account the URL names, if it names one.
    pub fn account(&self) -> Option<&str> {
        let host = self.host.as_deref()?;
        Some(account_of(host).map_or(host, |(account, _)| account))
    }

    /// The hosts that name the URL's account in per-account keys: the one written, and its
    /// `dfs`/`blob` sibling (both name the same account).
    fn account_hosts(&self) -> Vec<String> {
        let Some(host) = &self.host else {
            return Vec::new();
        };
        match account_of(host) {
            Some((account, suffix)) => vec![
                host.clone(),
                format!("{account}.dfs.{suffix}"),
                format!("{account}.blob.{suffix}"),
            ],
            None => vec![host.clone()],
        }
    }

    /// The URL as the host prints it (logs, errors, table locations).
    pub fn display(&self) -> String {
        let authority = match &self.host {
            Some(host) => format!("{}@{host}", self.container),
            None => self.container.clone(),
        };
        if self.prefix.is_empty() {
            format!("{}://{authority}", self.scheme)
        } else {
            format!("{}://{authority}/{}", self.scheme, self.prefix)
        }
    }

    /// Whether requests may be plain http when an endpoint is given as `host:port`: only for
    /// `abfs://` and `wasb://`, when `fs.azure.always.use.https` is false (as in Hadoop).
    fn may_use_http(&self) -> bool {
        self.scheme == "abfs" || self.scheme == "wasb"
    }
}

/// `<account>.{dfs,blob}.<suffix>` → (account, suffix).
fn account_of(host: &str) -> Option<(&str, &str)> {
    let (account, rest) = host.split_once('.')?;
    let suffix = rest
        .strip_prefix("dfs.")
        .or_else(|| rest.strip_prefix("blob."))?;
    (!account.is_empty() && !suffix.is_empty()).then_some((account, suffix))
}

/// How the host authenticates to the account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AzureCredential {
    /// object_store's chain: `AZURE_*` variables, then the managed identity (IMDS).
    Environment,
    SharedKey(String),
    Sas(String),
    ClientSecret {
        client_id: String,
        secret: String,
        tenant: String,
        authority_host: Option<String>,
    },
    ManagedIdentity {
        client_id: Option<String>,
        endpoint: Option<String>,
    },
    /// The emulator's well-known account and key (or the key given).
    Emulator(Option<String>),
}

/// The Azure settings of one warehouse, resolved from its URL and storage options.
#[derive(Debug)]
pub struct AzureSettings {
    container: String,
    account: Option<String>,
    credential: AzureCredential,
    /// The account's URL (`http://127.0.0.1:10000/devstoreaccount1`); none: Azure's.
    endpoint: Option<String>,
    /// Further object_store keys (`azure_*`) given as such.
    passthrough: Vec<(AzureConfigKey, String)>,
}

impl AzureSettings {
    pub fn resolve(url: &AzureUrl, options: &StorageOptions) -> Result<Self> {
        let l = Lookup {
            options,
            store: "Azure",
        };
        let hosts = url.account_hosts();
        // A Hadoop key: per account (`<key>.<account host>`) first, then global.
        let hadoop_scoped = |rest: &str| -> Vec<String> {
            hosts
                .iter()
                .flat_map(|h| prefixed(HADOOP, &format!("{rest}.{h}")))
                .collect()
        };
        let hadoop = |setting: &str, rest: &str, more: &[&str]| -> Result<Option<String>> {
            match l.text(setting, &hadoop_scoped(rest))? {
                Some(v) => Ok(Some(v)),
                None => {
                    let mut keys = prefixed(HADOOP, rest);
                    keys.extend(more.iter().map(|k| k.to_string()));
                    l.text(setting, &keys)
                }
            }
        };

        let mut account = url.account().map(str::to_string);
        if let Some((key, named)) = l.text_from("account name", ACCOUNT_NAME)? {
            match &account {
                Some(a) if !a.eq_ignore_ascii_case(&named) => {
                    return Err(l.error(format!(
                        "account name: the warehouse URL names the account '{a}' and {key} names '{named}'"
                    )));
                }
                Some(_) => {}
                None => account = Some(named),
            }
        }

        // The endpoint, under Hadoop's, Iceberg's and object_store's names.
        let mut endpoints: Vec<(String, String)> = Vec::new();
        if let Some((key, v)) = l.text_from("endpoint", &prefixed(HADOOP, "abfs.endpoint"))? {
            let account = account.as_deref().ok_or_else(|| {
                l.error(format!("endpoint: {key} needs the account (name it in the URL: <container>@<account>.dfs.core.windows.net)"))
            })?;
            let base = if v.contains("://") {
                v.trim_end_matches('/').to_string()
            } else {
                let always_https = l
                    .flag("TLS", &prefixed(HADOOP, "always.use.https"))?
                    .unwrap_or(true);
                let http = url.may_use_http() && !always_https;
                format!("{}://{v}", if http { "http" } else { "https" })
            };
            endpoints.push((key.to_string(), format!("{base}/{account}")));
        }
        let iceberg: Vec<String> = hosts
            .iter()
            .map(|h| format!("adls.connection-string.{h}"))
            .collect();
        if let Some((key, v)) = l.text_from("endpoint", &iceberg)? {
            endpoints.push((key.to_string(), v));
        }
        if let Some((key, v)) = l.text_from("endpoint", ENDPOINT)? {
            endpoints.push((key.to_string(), v));
        }
        let endpoints: Vec<(String, String)> = endpoints
            .into_iter()
            .map(|(k, v)| (k, v.trim_end_matches('/').to_string()))
            .collect();
        if let [(k0, v0), rest @ ..] = &endpoints[..]
            && let Some((k1, _)) = rest.iter().find(|(_, v)| v != v0)
        {
            return Err(l.error(format!("endpoint: {k0} and {k1} name different endpoints")));
        }
        let endpoint = endpoints.into_iter().next().map(|(_, v)| v);

        let emulator_name = l.text(
            "emulator account",
            &prefixed(HADOOP, "storage.emulator.account.name"),
        )?;
        // Hadoop WASB: the URL's account is the emulator's name for its well-known account.
        let hadoop_emulator = emulator_name.is_some_and(|name| {
            url.host
                .as_deref()
                .is_some_and(|h| h.eq_ignore_ascii_case(&name))
        });
        let emulator = hadoop_emulator || l.flag("emulator", USE_EMULATOR)?.unwrap_or(false);
        if emulator && endpoint.is_some() {
            return Err(l.error(
                "endpoint: give either an endpoint or the emulator's well-known account, not both"
                    .into(),
            ));
        }

        let key = hadoop("account key", "account.key", ACCOUNT_KEY)?;
        let sas = {
            let mut scoped = hadoop_scoped("sas.fixed.token");
            scoped.extend(hosts.iter().map(|h| format!("adls.sas-token.{h}")));
            match l.text("SAS token", &scoped)? {
                Some(v) => Some(v),
                None => {
                    let mut keys = prefixed(HADOOP, "sas.fixed.token");
                    keys.extend(SAS.iter().map(|k| k.to_string()));
                    l.text("SAS token", &keys)?
                }
            }
        };
        let client_id = hadoop("client id", "account.oauth2.client.id", CLIENT_ID)?;
        let secret = hadoop(
            "client secret",
            "account.oauth2.client.secret",
            CLIENT_SECRET,
        )?;
        let oauth_endpoint = hadoop("OAuth endpoint", "account.oauth2.client.endpoint", &[])?;
        let msi_endpoint = hadoop("MSI endpoint", "account.oauth2.msi.endpoint", MSI_ENDPOINT)?;
        let provider = hadoop("OAuth provider", "account.oauth.provider.type", &[])?;
        let auth_type = hadoop("auth type", "account.auth.type", &[])?;

        let mut tenant = l.text("tenant", TENANT)?;
        let mut authority_host = l.text("authority host", AUTHORITY_HOST)?;
        if let Some(e) = &oauth_endpoint {
            let (host, t) = parse_oauth_endpoint(e).ok_or_else(|| {
                l.error(
                    "OAuth endpoint: fs.azure.account.oauth2.client.endpoint must be https://<authority>/<tenant>/oauth2/token"
                        .into(),
                )
            })?;
            if tenant.as_ref().is_some_and(|x| *x != t) {
                return Err(l.error(
                    "tenant: the OAuth endpoint and the tenant id name different tenants".into(),
                ));
            }
            tenant = Some(t);
            authority_host.get_or_insert(host);
        }

        let client_secret = || -> Result<AzureCredential> {
            match (&client_id, &secret, &tenant) {
                (Some(id), Some(s), Some(t)) => Ok(AzureCredential::ClientSecret {
                    client_id: id.clone(),
                    secret: s.clone(),
                    tenant: t.clone(),
                    authority_host: authority_host.clone(),
                }),
                _ => Err(l.error(
                    "OAuth: client credentials need fs.azure.account.oauth2.client.id, .client.secret and .client.endpoint (or azure_client_id, azure_client_secret, azure_tenant_id)"
                        .into(),
                )),
            }
        };
        let credential = match auth_type.as_deref().map(str::to_ascii_lowercase).as_deref() {
            _ if emulator => AzureCredential::Emulator(key.clone()),
            Some("sharedkey") => AzureCredential::SharedKey(key.clone().ok_or_else(|| {
                l.error("account key: fs.azure.account.auth.type is SharedKey but no account key is given (fs.azure.account.key.<account host>)".into())
            })?),
            Some("sas") => AzureCredential::Sas(sas.clone().ok_or_else(|| {
                l.error("SAS token: fs.azure.account.auth.type is SAS but no token is given (fs.azure.sas.fixed.token, adls.sas-token.<account host>)".into())
            })?),
            Some("oauth") => match provider.as_deref().map(|p| p.rsplit('.').next().unwrap_or(p)) {
                None | Some("ClientCredsTokenProvider") => client_secret()?,
                Some("MsiTokenProvider") => AzureCredential::ManagedIdentity {
                    client_id: client_id.clone(),
                    endpoint: msi_endpoint.clone(),
                },
                Some(other) => {
                    return Err(Error::new(
                        ErrorKind::Unsupported,
                        format!(
                            "Azure OAuth provider '{other}' (fs.azure.account.oauth.provider.type) is not supported \
                             (supported: ClientCredsTokenProvider, MsiTokenProvider; Fluss's DynamicTemporaryAzureCredentialsProvider \
                             serves Fluss's own remote data, not lake warehouses)"
                        ),
                    ));
                }
            },
            Some(other) => {
                return Err(Error::new(
                    ErrorKind::Unsupported,
                    format!(
                        "Azure auth type '{other}' (fs.azure.account.auth.type) is not supported (supported: SharedKey, OAuth, SAS)"
                    ),
                ));
            }
            None if key.is_some() => AzureCredential::SharedKey(key.clone().unwrap_or_default()),
            None if sas.is_some() => AzureCredential::Sas(sas.clone().unwrap_or_default()),
            None if secret.is_some() => client_secret()?,
            None if msi_endpoint.is_some() => AzureCredential::ManagedIdentity {
                client_id: client_id.clone(),
                endpoint: msi_endpoint.clone(),
            },
            None => AzureCredential::Environment,
        };
        let from_env = credential == AzureCredential::Environment
            && std::env::var_os("AZURE_STORAGE_ACCOUNT_NAME").is_some();
        if account.is_none() && !emulator && !from_env {
            return Err(l.error(
                "account: the warehouse URL names none (abfss://<container>@<account>.dfs.core.windows.net/<path>) and neither azure_storage_account_name nor AZURE_STORAGE_ACCOUNT_NAME is given"
                    .into(),
            ));
        }

        let known = |k: &str| {
            [
                ACCOUNT_NAME,
                ACCOUNT_KEY,
                SAS,
                CLIENT_ID,
                CLIENT_SECRET,
                TENANT,
                AUTHORITY_HOST,
                MSI_ENDPOINT,
                ENDPOINT,
                USE_EMULATOR,
            ]
            .iter()
            .any(|keys| keys.contains(&k))
        };
        let mut passthrough = Vec::new();
        for (key, value) in options.iter() {
            if key.starts_with("azure_")
                && !known(key)
                && let Ok(k) = AzureConfigKey::from_str(key)
            {
                passthrough.push((k, value.to_string()));
            }
        }
        Ok(Self {
            container: url.container.clone(),
            account: if hadoop_emulator { None } else { account },
            credential,
            endpoint,
            passthrough,
        })
    }

    /// A client of the container. The environment fills in what the options leave out when
    /// they name no credential.
    pub fn build(&self) -> Result<MicrosoftAzure> {
        let plain_http = self
            .endpoint
            .as_deref()
            .is_some_and(|e| e.starts_with("http://"));
        let mut b = match self.credential {
            AzureCredential::Environment => MicrosoftAzureBuilder::from_env(),
            _ => MicrosoftAzureBuilder::new(),
        }
        .with_container_name(&self.container)
        .with_client_options(client_options(plain_http))
        .with_retry(retry_config());
        for (k, v) in &self.passthrough {
            b = b.with_config(*k, v);
        }
        if let Some(account) = &self.account {
            b = b.with_account(account);
        }
        if let Some(e) = &self.endpoint {
            b = b.with_endpoint(e.clone());
        }
        b = match &self.credential {
            AzureCredential::Environment => b,
            AzureCredential::SharedKey(key) => b.with_access_key(key),
            AzureCredential::Sas(token) => {
                b.with_config(AzureConfigKey::SasKey, token.trim_start_matches('?'))
            }
            AzureCredential::ClientSecret {
                client_id,
                secret,
                tenant,
                authority_host,
            } => {
                let b = b.with_client_secret_authorization(client_id, secret, tenant);
                match authority_host {
                    Some(h) => b.with_authority_host(h),
                    None => b,
                }
            }
            AzureCredential::ManagedIdentity {
                client_id,
                endpoint,
            } => {
                let mut b = b;
                if let Some(id) = client_id {
                    b = b.with_client_id(id);
                }
                if let Some(e) = endpoint {
                    b = b.with_msi_endpoint(e);
                }
                b
            }
            AzureCredential::Emulator(key) => {
                let b = b.with_use_emulator(true);
                match key {
                    Some(k) => b.with_access_key(k),
                    None => b,
                }
            }
        };
        b.build().map_err(|e| {
            Error::new(
                ErrorKind::Config,
                format!("invalid Azure settings: {}", store_message(&e)),
            )
        })
    }
}

/// `https://login.microsoftonline.com/<tenant>/oauth2[/v2.0]/token` → (authority host, tenant).
fn parse_oauth_endpoint(endpoint: &str) -> Option<(String, String)> {
    let (scheme, rest) = endpoint.trim().split_once("://")?;
    let mut parts = rest.split('/');
    let host = parts.next().filter(|h| !h.is_empty())?;
    let tenant = parts.next().filter(|t| !t.is_empty())?;
    (parts.next() == Some("oauth2")).then(|| (format!("{scheme}://{host}"), tenant.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(pairs: &[(&str, &str)]) -> StorageOptions {
        StorageOptions::from_pairs(pairs.iter().copied())
    }

    fn url(s: &str) -> AzureUrl {
        let (scheme, rest) = s.split_once("://").unwrap();
        AzureUrl::parse(scheme, rest).unwrap()
    }

    const KEY: &str = "a2V5"; // base64 of "key"

    #[test]
    fn urls() {
        let u = url("abfss://lake@acct.dfs.core.windows.net/wh/paimon/");
        assert_eq!(u.container, "lake");
        assert_eq!(u.account(), Some("acct"));
        assert_eq!(u.prefix, "wh/paimon");
        assert_eq!(
            u.display(),
            "abfss://lake@acct.dfs.core.windows.net/wh/paimon"
        );
        assert_eq!(
            u.account_hosts(),
            [
                "acct.dfs.core.windows.net",
                "acct.dfs.core.windows.net",
                "acct.blob.core.windows.net"
            ]
        );
        let u = url("wasb://lake@acct.blob.core.chinacloudapi.cn");
        assert_eq!(u.account(), Some("acct"));
        assert_eq!(u.prefix, "");
        let u = url("az://lake/wh");
        assert_eq!((u.account(), u.container.as_str()), (None, "lake"));
        assert_eq!(
            url("wasb://lake@storageemulator/wh").account(),
            Some("storageemulator")
        );
        for bad in [
            "abfss://@acct.dfs.core.windows.net/wh",
            "abfss://lake@/wh",
            "abfss://lake@acct.example.com/wh",
            "abfss://acct.dfs.core.windows.net/wh",
            "wasbs://lake/wh",
            "az://Lake_1/wh",
            "az:///wh",
        ] {
            let (scheme, rest) = bad.split_once("://").unwrap();
            assert!(AzureUrl::parse(scheme, rest).is_err(), "{bad}");
        }
    }

    #[test]
    fn fluss_hadoop_iceberg_and_object_store_spellings() {
        let u = url("abfs://lake@devstoreaccount1.dfs.core.windows.net/wh");
        let endpoint = "http://127.0.0.1:10000/devstoreaccount1";
        for pairs in [
            // Fluss / Hadoop ABFS, with Hadoop's emulator endpoint.
            &[
                ("fs.azure.account.key", KEY),
                ("fs.azure.abfs.endpoint", "127.0.0.1:10000"),
                ("fs.azure.always.use.https", "false"),
            ][..],
            // Per account, and as Fluss's Iceberg plugin hands keys to Hadoop.
            &[
                (
                    "iceberg.hadoop.fs.azure.account.key.devstoreaccount1.dfs.core.windows.net",
                    KEY,
                ),
                ("iceberg.hadoop.fs.azure.abfs.endpoint", "127.0.0.1:10000"),
                ("iceberg.hadoop.fs.azure.always.use.https", "false"),
            ][..],
            // Paimon's `azure.` prefix, the wasb host's key for the same account.
            &[
                (
                    "azure.account.key.devstoreaccount1.blob.core.windows.net",
                    KEY,
                ),
                ("azure.abfs.endpoint", "http://127.0.0.1:10000"),
            ][..],
            // Iceberg.
            &[
                ("adls.auth.shared-key.account.name", "devstoreaccount1"),
                ("adls.auth.shared-key.account.key", KEY),
                (
                    "adls.connection-string.devstoreaccount1.dfs.core.windows.net",
                    endpoint,
                ),
            ][..],
            // object_store / Lance.
            &[
                ("azure_storage_account_key", KEY),
                ("azure_storage_endpoint", endpoint),
            ][..],
        ] {
            let s = AzureSettings::resolve(&u, &opts(pairs)).unwrap();
            assert_eq!(s.account.as_deref(), Some("devstoreaccount1"), "{pairs:?}");
            assert_eq!(s.endpoint.as_deref(), Some(endpoint), "{pairs:?}");
            assert_eq!(
                s.credential,
                AzureCredential::SharedKey(KEY.into()),
                "{pairs:?}"
            );
            s.build().unwrap();
        }
        // Hadoop's default is https, and abfss:// is always https.
        for (u, pairs) in [
            (&u, &[("fs.azure.abfs.endpoint", "127.0.0.1:10000")][..]),
            (
                &url("abfss://lake@devstoreaccount1.dfs.core.windows.net/wh"),
                &[
                    ("fs.azure.abfs.endpoint", "127.0.0.1:10000"),
                    ("fs.azure.always.use.https", "false"),
                ][..],
            ),
        ] {
            let s = AzureSettings::resolve(u, &opts(pairs)).unwrap();
            assert_eq!(
                s.endpoint.as_deref(),
                Some("https://127.0.0.1:10000/devstoreaccount1")
            );
        }
    }

    #[test]
    fn credentials() {
        let u = url("abfss://lake@acct.dfs.core.windows.net/wh");
        let resolve = |pairs: &[(&str, &str)]| AzureSettings::resolve(&u, &opts(pairs));
        // The per-account key wins over the global one, as in Hadoop.
        let s = resolve(&[
            ("fs.azure.account.key", "Z2xvYmFs"),
            ("fs.azure.account.key.acct.dfs.core.windows.net", KEY),
        ])
        .unwrap();
        assert_eq!(s.credential, AzureCredential::SharedKey(KEY.into()));
        // OAuth client credentials, as Fluss's documentation configures them.
        let oauth = [
            ("fs.azure.account.auth.type", "OAuth"),
            (
                "fs.azure.account.oauth.provider.type",
                "org.apache.hadoop.fs.azurebfs.oauth2.ClientCredsTokenProvider",
            ),
            ("fs.azure.account.oauth2.client.id", "app"),
            ("fs.azure.account.oauth2.client.secret", "hunter2"),
            (
                "fs.azure.account.oauth2.client.endpoint",
                "https://login.microsoftonline.com/tenant-1/oauth2/token",
            ),
        ];
        let s = resolve(&oauth).unwrap();
        assert_eq!(
            s.credential,
            AzureCredential::ClientSecret {
                client_id: "app".into(),
                secret: "hunter2".into(),
                tenant: "tenant-1".into(),
                authority_host: Some("https://login.microsoftonline.com".into()),
            }
        );
        s.build().unwrap();
        assert!(!format!("{s:?}").is_empty());
        let s = resolve(&[
            ("fs.azure.account.auth.type", "OAuth"),
            (
                "fs.azure.account.oauth.provider.type",
                "org.apache.hadoop.fs.azurebfs.oauth2.MsiTokenProvider",
            ),
        ])
        .unwrap();
        assert!(matches!(
            s.credential,
            AzureCredential::ManagedIdentity { .. }
        ));
        // SAS, Hadoop's and Iceberg's.
        for pairs in [
            &[("fs.azure.sas.fixed.token", "sv=1&sig=x")][..],
            &[("adls.sas-token.acct.dfs.core.windows.net", "sv=1&sig=x")][..],
        ] {
            let s = resolve(pairs).unwrap();
            assert_eq!(s.credential, AzureCredential::Sas("sv=1&sig=x".into()));
            s.build().unwrap();
        }
        // Nothing given: the environment's.
        assert_eq!(
            resolve(&[]).unwrap().credential,
            AzureCredential::Environment
        );
        // Hadoop WASB's emulator account: the emulator's well-known account and key.
        let emu = url("wasb://lake@storageemulator/wh");
        let s = AzureSettings::resolve(
            &emu,
            &opts(&[("fs.azure.storage.emulator.account.name", "storageemulator")]),
        )
        .unwrap();
        assert_eq!(s.credential, AzureCredential::Emulator(None));
        assert_eq!(s.account, None);
        s.build().unwrap();
    }

    #[test]
    fn conflicts_and_unsupported_settings_name_keys_not_values() {
        let u = url("abfss://lake@acct.dfs.core.windows.net/wh");
        let err = |pairs: &[(&str, &str)]| AzureSettings::resolve(&u, &opts(pairs)).unwrap_err();
        let e = err(&[
            ("fs.azure.account.key", "aHVudGVyMg=="),
            ("azure_storage_account_key", KEY),
        ]);
        assert!(
            e.message()
                .contains("fs.azure.account.key and azure_storage_account_key"),
            "{e}"
        );
        assert!(!e.message().contains("aHVudGVyMg"), "{e}");
        let e = err(&[("azure_storage_account_name", "other")]);
        assert!(e.message().contains("names the account 'acct'"), "{e}");
        let e = err(&[("fs.azure.account.auth.type", "SharedKey")]);
        assert!(e.message().contains("no account key"), "{e}");
        let e = err(&[("fs.azure.account.auth.type", "Custom")]);
        assert_eq!(e.kind(), ErrorKind::Unsupported);
        let e = err(&[
            ("fs.azure.account.auth.type", "OAuth"),
            (
                "fs.azure.account.oauth.provider.type",
                "org.apache.fluss.fs.azure.token.DynamicTemporaryAzureCredentialsProvider",
            ),
        ]);
        assert_eq!(e.kind(), ErrorKind::Unsupported);
        let e = err(&[
            ("fs.azure.abfs.endpoint", "127.0.0.1:10000"),
            ("azure_storage_endpoint", "http://127.0.0.1:10001/acct"),
        ]);
        assert!(e.message().contains("different endpoints"), "{e}");
        let e = err(&[
            ("fs.azure.always.use.https", "yes"),
            ("fs.azure.abfs.endpoint", "h:1"),
        ]);
        assert!(e.message().contains("true or false"), "{e}");
        let e = AzureSettings::resolve(&url("az://lake/wh"), &opts(&[])).unwrap_err();
        assert!(e.message().contains("account"), "{e}");
    }
}
