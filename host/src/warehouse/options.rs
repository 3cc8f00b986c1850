//! Which configuration keys configure storage rather than the lake format.
//!
//! A plugin's configuration is the table's `table.datalake.<format>.*` properties overlaid by
//! the host's `--datalake.<format>.*` options. Storage keys (credentials, endpoint, region, …)
//! are split off it before any plugin call: the host opens the warehouse with them, and no
//! plugin sees them, so a hostile plugin cannot log, store or send a credential it never had.
//! Table properties carrying them are withheld from the plugin's table info for the same reason.

use std::collections::BTreeMap;
use std::fmt;

/// Key prefixes of storage settings: the Fluss/Paimon (`s3.`, `gs.`, `azure.`), Hadoop
/// (`fs.`, `s3a.`, `hadoop.`, and `iceberg.hadoop.` as Fluss's Iceberg plugin takes Hadoop's),
/// Iceberg (`s3.`, `client.`, `adls.`, `gcs.`, `gcp.`) and object_store/Lance (`aws_`,
/// `azure_`, `google_`) spellings, and other stores'.
const STORAGE_PREFIXES: &[&str] = &[
    "s3.",
    "s3a.",
    "fs.",
    "iceberg.hadoop.",
    "aws.",
    "aws_",
    "client.",
    "oss.",
    "gs.",
    "gcs.",
    "gcp.",
    "azure.",
    "azure_",
    "adls.",
    "google_",
    "hadoop.",
];

/// Unprefixed storage keys, as Lance's storage options (object_store's aliases) spell them.
const STORAGE_NAMES: &[&str] = &[
    // Azure and GCS (the secrets among them are withheld by their words too).
    "account_name",
    "account_key",
    "use_emulator",
    "client_id",
    "client_secret",
    "tenant_id",
    "authority_id",
    "authority_host",
    "msi_endpoint",
    "identity_endpoint",
    "sas_key",
    "sas_token",
    "bearer_token",
    "service_account",
    "service_account_path",
    "service_account_key",
    "application_credentials",
    "base_url",
    // S3.
    "access_key_id",
    "secret_access_key",
    "session_token",
    "token",
    "endpoint",
    "endpoint_url",
    "region",
    "allow_http",
    "virtual_hosted_style_request",
    "skip_signature",
];

/// Words that mark a key as a secret whatever its prefix: withheld too, never shown.
const SECRET_WORDS: &[&str] = &[
    "secret",
    "password",
    "token",
    "credential",
    "access-key",
    "access.key",
    "access_key",
    "private-key",
    "private_key",
    "account-key",
    "account.key",
    "account_key",
    "service-account",
    "service.account",
    "service_account",
    "sas-",
    "sas.",
    "sas_",
];

/// Whether `key` (a plugin configuration key, prefix stripped) configures storage or holds a
/// secret, and so is kept from plugins.
pub fn is_storage_key(key: &str) -> bool {
    let lower = key.to_ascii_lowercase();
    STORAGE_PREFIXES.iter().any(|p| lower.starts_with(p))
        || STORAGE_NAMES.contains(&lower.as_str())
        || names_a_secret(key)
}

/// Whether `key` names a secret (a password, a secret key, a token, a credential).
pub fn names_a_secret(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    SECRET_WORDS.iter().any(|w| key.contains(w))
}

/// The storage options of a table whose catalog vends its own (an Iceberg REST catalog's
/// table `config` and `storage-credentials`): the vended settings over `host`'s, and, when the
/// catalog vends any credential, none of the host's credentials, so that a vended key and a
/// host's secret are never mixed into one credential (nor two spellings of one credential
/// refused as a conflict).
pub fn with_vended(host: &StorageOptions, vended: &StorageOptions) -> StorageOptions {
    let vends_credentials = vended.iter().any(|(k, _)| names_a_secret(k));
    let mut out: BTreeMap<String, String> = host
        .iter()
        .filter(|(k, _)| !(vends_credentials && names_a_secret(k)))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    out.extend(vended.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    StorageOptions(out)
}

/// The storage settings of one format's configuration. Its `Debug` shows keys, never values.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct StorageOptions(BTreeMap<String, String>);

impl StorageOptions {
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        Self(
            pairs
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// These options over `base`: a key of both keeps this value.
    pub fn overlaid_on(&self, base: &StorageOptions) -> StorageOptions {
        let mut all = base.0.clone();
        all.extend(self.0.clone());
        Self(all)
    }
}

impl fmt::Debug for StorageOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

/// Splits a plugin configuration into what the plugin may see and the storage options.
pub fn split(config: Vec<(String, String)>) -> (Vec<(String, String)>, StorageOptions) {
    let mut storage = BTreeMap::new();
    let mut plugin = Vec::new();
    for (k, v) in config {
        if is_storage_key(&k) {
            storage.insert(k, v);
        } else {
            plugin.push((k, v));
        }
    }
    (plugin, StorageOptions(storage))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vended_credentials_replace_the_hosts_and_keep_its_other_settings() {
        let host = StorageOptions::from_pairs([
            ("s3.access-key", "HOSTKEY"),
            ("s3.secret-key", "hostsecret"),
            ("s3.path.style.access", "true"),
            ("client.region", "eu-west-1"),
        ]);
        let vended = StorageOptions::from_pairs([
            ("s3.access-key-id", "ASIAVENDED"),
            ("s3.secret-access-key", "vendedsecret"),
            ("s3.session-token", "vendedtoken"),
            ("client.region", "us-east-1"),
        ]);
        let merged = with_vended(&host, &vended);
        let keys: Vec<&str> = merged.iter().map(|(k, _)| k).collect();
        assert_eq!(
            keys,
            [
                "client.region",
                "s3.access-key-id",
                "s3.path.style.access",
                "s3.secret-access-key",
                "s3.session-token"
            ]
        );
        assert_eq!(merged.get("client.region"), Some("us-east-1"));
        // A catalog vending no credential leaves the host's.
        let region_only = StorageOptions::from_pairs([("client.region", "us-east-1")]);
        assert_eq!(
            with_vended(&host, &region_only).get("s3.secret-key"),
            Some("hostsecret")
        );
    }

    #[test]
    fn storage_keys_and_secrets_are_split_off() {
        let config: Vec<(String, String)> = [
            ("warehouse", "s3://b/wh"),
            ("metastore", "filesystem"),
            ("target-file-size", "128mb"),
            ("s3.access-key", "AKIA"),
            ("s3.secret-key", "hunter2"),
            ("fs.s3a.endpoint", "http://127.0.0.1:9000"),
            ("client.region", "us-east-1"),
            ("iceberg.hadoop.fs.s3a.path.style.access", "true"),
            ("secret_access_key", "hunter2"),
            ("my.custom.password", "hunter2"),
            ("Some.API_TOKEN", "hunter2"),
            // Azure and GCS, in object_store's, Hadoop's and Iceberg's spellings.
            ("azure_storage_account_key", "hunter2"),
            ("azure_storage_account_name", "dev"),
            (
                "hadoop.fs.azure.account.key.dev.dfs.core.windows.net",
                "hunter2",
            ),
            ("adls.sas-token.dev.dfs.core.windows.net", "hunter2"),
            ("my.sas_signature", "hunter2"),
            (
                "google_service_account_key",
                "{\"private_key\": \"hunter2\"}",
            ),
            ("gcs.oauth2.token", "hunter2"),
            ("custom.account.key", "hunter2"),
            // The endpoints and account names the emulators need, in each spelling.
            ("fs.azure.abfs.endpoint", "127.0.0.1:10000"),
            ("azure.account.key.dev.blob.core.windows.net", "hunter2"),
            (
                "adls.connection-string.dev.dfs.core.windows.net",
                "http://127.0.0.1:10000/dev",
            ),
            ("account_name", "dev"),
            ("use_emulator", "true"),
            ("gs.storage.root.url", "http://127.0.0.1:4443"),
            ("gcs.service.host", "http://127.0.0.1:4443"),
            ("gcp.impersonate.service-account", "sa@p"),
            ("service_account", "/k.json"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let (plugin, storage) = split(config);
        let plugin_keys: Vec<&str> = plugin.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(plugin_keys, ["warehouse", "metastore", "target-file-size"]);
        assert_eq!(storage.get("s3.secret-key"), Some("hunter2"));
        let shown = format!("{storage:?}");
        assert!(
            shown.contains("s3.secret-key") && !shown.contains("hunter2"),
            "{shown}"
        );
    }
}
