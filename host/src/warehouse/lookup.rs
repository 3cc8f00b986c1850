//! Reading one store setting that users may write under several keys (Fluss's, Hadoop's,
//! Iceberg's, Paimon's, object_store's): two keys of one setting with different values are a
//! configuration error that names the keys, never the values (they may be secrets).

use std::time::Duration;

use object_store::{ClientOptions, RetryConfig};

use super::options::StorageOptions;
use crate::error::{Error, ErrorKind, Result};

/// The storage options of one warehouse, read for one store (`store` names it in errors).
pub(super) struct Lookup<'a> {
    pub options: &'a StorageOptions,
    pub store: &'static str,
}

impl Lookup<'_> {
    /// The value of `setting` under any of `keys`, trimmed; empty is none.
    pub fn text<K: AsRef<str>>(&self, setting: &str, keys: &[K]) -> Result<Option<String>> {
        Ok(self.text_from(setting, keys)?.map(|(_, v)| v))
    }

    /// [`Self::text`] and the key it was found under.
    pub fn text_from<'k, K: AsRef<str>>(
        &self,
        setting: &str,
        keys: &'k [K],
    ) -> Result<Option<(&'k str, String)>> {
        let mut found: Option<(&str, &str)> = None;
        for key in keys {
            let key = key.as_ref();
            let Some(v) = self.options.get(key) else {
                continue;
            };
            match found {
                Some((k0, v0)) if v0.trim() != v.trim() => {
                    return Err(self.error(format!(
                        "{setting}: {k0} and {key} are given different values"
                    )));
                }
                Some(_) => {}
                None => found = Some((key, v)),
            }
        }
        Ok(found
            .map(|(k, v)| (k, v.trim().to_string()))
            .filter(|(_, v)| !v.is_empty()))
    }

    /// A boolean setting (`true` or `false`, any case).
    pub fn flag<K: AsRef<str>>(&self, setting: &str, keys: &[K]) -> Result<Option<bool>> {
        match self.text_from(setting, keys)? {
            None => Ok(None),
            Some((key, v)) => match v.to_ascii_lowercase().as_str() {
                "true" => Ok(Some(true)),
                "false" => Ok(Some(false)),
                _ => Err(self.error(format!("{setting}: {key} must be true or false, not '{v}'"))),
            },
        }
    }

    pub fn error(&self, message: String) -> Error {
        Error::new(ErrorKind::Config, format!("{} {message}", self.store))
    }
}

/// `rest` under each of `prefixes`: one Hadoop key as Fluss, Paimon and Fluss's Iceberg
/// plugin spell it (`fs.azure.account.key`, `iceberg.hadoop.fs.azure.account.key`, …).
pub(super) fn prefixed(prefixes: &[&str], rest: &str) -> Vec<String> {
    prefixes.iter().map(|p| format!("{p}{rest}")).collect()
}

/// The client options every store client of the host uses: requests time out after 120 s,
/// connecting after 5 s (as the S3 client's, [`super::s3`]).
pub(super) fn client_options(allow_http: bool) -> ClientOptions {
    ClientOptions::new()
        .with_connect_timeout(Duration::from_secs(5))
        .with_timeout(Duration::from_secs(120))
        .with_allow_http(allow_http)
}

/// Up to 3 retries within 60 s, as the S3 client's.
pub(super) fn retry_config() -> RetryConfig {
    RetryConfig {
        max_retries: 3,
        retry_timeout: Duration::from_secs(60),
        ..RetryConfig::default()
    }
}
