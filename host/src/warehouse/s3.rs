//! S3-compatible warehouses, configured under the option names users already write for Fluss
//! and its Java lake plugins.
//!
//! Each setting accepts every usual spelling: Fluss and Paimon (`s3.endpoint`,
//! `s3.access-key`, `s3.secret-key`, `s3.path.style.access`), Hadoop S3A as Fluss's own S3
//! plugin reads it (`fs.s3a.endpoint`, `fs.s3a.access.key`, `fs.s3a.connection.ssl.enabled`, …,
//! also as `iceberg.hadoop.fs.s3a.*`, the prefix Fluss's Iceberg plugin hands to Hadoop),
//! Iceberg (`s3.access-key-id`, `s3.secret-access-key`, `s3.path-style-access`,
//! `client.region`), Lance/object_store (`access_key_id`, `endpoint`, `allow_http`, `aws_*`),
//! and Fluss's OSS file system (`fs.oss.endpoint`, `fs.oss.accessKeyId`, …) for Alibaba OSS
//! through its S3-compatible endpoint.
//! Two spellings of one setting with different values are a configuration error. Whatever is
//! not given comes from the environment (`AWS_ACCESS_KEY_ID`, `AWS_ENDPOINT`, …) and then the
//! AWS credential chain object_store implements (web identity, ECS, instance metadata).
//!
//! Commits need `If-None-Match: *` creates: object_store sends them for `put-if-absent`
//! (`S3ConditionalPut::ETagMatch`, its default), and [`super::probe`] checks the store honours
//! them before anything is committed.

use std::str::FromStr;
use std::time::Duration;

use object_store::aws::{AmazonS3, AmazonS3Builder, AmazonS3ConfigKey};
use object_store::{ClientOptions, RetryConfig};

use super::options::StorageOptions;
use crate::error::{Error, ErrorKind, Result, store_message};

/// One setting and every key it may be given under. `inverted` keys mean the opposite boolean
/// (`virtual_hosted_style_request` against `path.style.access`).
struct Setting {
    name: &'static str,
    keys: &'static [&'static str],
    inverted: &'static [&'static str],
}

const ACCESS_KEY: Setting = Setting {
    name: "access key",
    keys: &[
        "s3.access-key",
        "s3.access.key",
        "s3.access-key-id",
        "s3a.access-key",
        "s3a.access.key",
        "fs.s3a.access-key",
        "iceberg.hadoop.fs.s3a.access-key",
        "fs.s3a.access.key",
        "iceberg.hadoop.fs.s3a.access.key",
        "access_key_id",
        "aws_access_key_id",
        "fs.oss.accessKeyId",
    ],
    inverted: &[],
};
const SECRET_KEY: Setting = Setting {
    name: "secret key",
    keys: &[
        "s3.secret-key",
        "s3.secret.key",
        "s3.secret-access-key",
        "s3a.secret-key",
        "s3a.secret.key",
        "fs.s3a.secret-key",
        "iceberg.hadoop.fs.s3a.secret-key",
        "fs.s3a.secret.key",
        "iceberg.hadoop.fs.s3a.secret.key",
        "secret_access_key",
        "aws_secret_access_key",
        "fs.oss.accessKeySecret",
    ],
    inverted: &[],
};
const SESSION_TOKEN: Setting = Setting {
    name: "session token",
    keys: &[
        "s3.session-token",
        "s3.session.token",
        "s3a.session.token",
        "fs.s3a.session.token",
        "iceberg.hadoop.fs.s3a.session.token",
        "session_token",
        "aws_session_token",
        "fs.oss.securityToken",
    ],
    inverted: &[],
};
const REGION: Setting = Setting {
    name: "region",
    keys: &[
        "s3.region",
        "s3.endpoint.region",
        "s3a.region",
        "s3a.endpoint.region",
        "fs.s3a.region",
        "iceberg.hadoop.fs.s3a.region",
        "fs.s3a.endpoint.region",
        "iceberg.hadoop.fs.s3a.endpoint.region",
        "client.region",
        "region",
        "aws_region",
        "fs.oss.region",
    ],
    inverted: &[],
};
const ENDPOINT: Setting = Setting {
    name: "endpoint",
    keys: &[
        "s3.endpoint",
        "s3a.endpoint",
        "fs.s3a.endpoint",
        "iceberg.hadoop.fs.s3a.endpoint",
        "endpoint",
        "aws_endpoint",
        "fs.oss.endpoint",
    ],
    inverted: &[],
};
const PATH_STYLE: Setting = Setting {
    name: "path-style access",
    keys: &[
        "s3.path.style.access",
        "s3.path-style-access",
        "s3a.path.style.access",
        "fs.s3a.path.style.access",
        "iceberg.hadoop.fs.s3a.path.style.access",
        "fs.s3a.path-style-access",
        "iceberg.hadoop.fs.s3a.path-style-access",
    ],
    inverted: &[
        "virtual_hosted_style_request",
        "aws_virtual_hosted_style_request",
    ],
};
const SSL: Setting = Setting {
    name: "TLS",
    keys: &[
        "s3.connection.ssl.enabled",
        "s3a.connection.ssl.enabled",
        "fs.s3a.connection.ssl.enabled",
        "iceberg.hadoop.fs.s3a.connection.ssl.enabled",
    ],
    inverted: &["allow_http", "aws_allow_http"],
};

/// The keys this module reads; other `aws_*` keys object_store knows pass through to it.
fn known(key: &str) -> bool {
    [
        &ACCESS_KEY,
        &SECRET_KEY,
        &SESSION_TOKEN,
        &REGION,
        &ENDPOINT,
        &PATH_STYLE,
        &SSL,
    ]
    .iter()
    .any(|s| s.keys.contains(&key) || s.inverted.contains(&key))
}

/// The S3 settings of one warehouse, resolved from its storage options.
#[derive(Default)]
pub struct S3Settings {
    access_key: Option<String>,
    secret_key: Option<String>,
    session_token: Option<String>,
    region: Option<String>,
    endpoint: Option<String>,
    path_style: Option<bool>,
    tls: Option<bool>,
    /// Further object_store keys (`aws_*`) given as such.
    passthrough: Vec<(AmazonS3ConfigKey, String)>,
}

impl S3Settings {
    pub fn from_options(options: &StorageOptions) -> Result<Self> {
        let mut s = Self {
            access_key: text(options, &ACCESS_KEY)?,
            secret_key: text(options, &SECRET_KEY)?,
            session_token: text(options, &SESSION_TOKEN)?,
            region: text(options, &REGION)?,
            endpoint: text(options, &ENDPOINT)?,
            path_style: flag(options, &PATH_STYLE)?,
            tls: flag(options, &SSL)?,
            passthrough: Vec::new(),
        };
        if s.access_key.is_some() != s.secret_key.is_some() {
            return Err(Error::new(
                ErrorKind::Config,
                "an S3 access key and secret key must be given together (s3.access-key and s3.secret-key)",
            ));
        }
        for (key, value) in options.iter() {
            if key.starts_with("aws_")
                && !known(key)
                && let Ok(k) = AmazonS3ConfigKey::from_str(key)
            {
                s.passthrough.push((k, value.to_string()));
            }
        }
        Ok(s)
    }

    /// The endpoint as a URL. Hadoop accepts a bare `host:port`, meaning https unless
    /// `connection.ssl.enabled` is false.
    fn endpoint_url(&self) -> Option<String> {
        let e = self.endpoint.as_deref()?.trim().trim_end_matches('/');
        Some(if e.contains("://") {
            e.to_string()
        } else if self.tls == Some(false) {
            format!("http://{e}")
        } else {
            format!("https://{e}")
        })
    }

    /// A client for `bucket`. The environment fills in whatever the options leave out.
    pub fn build(&self, bucket: &str) -> Result<AmazonS3> {
        // Client options first: `with_client_options` replaces what `with_allow_http` sets.
        let mut b = AmazonS3Builder::from_env()
            .with_bucket_name(bucket)
            .with_client_options(
                ClientOptions::new()
                    .with_connect_timeout(Duration::from_secs(5))
                    .with_timeout(Duration::from_secs(120)),
            )
            .with_retry(RetryConfig {
                max_retries: 3,
                retry_timeout: Duration::from_secs(60),
                ..RetryConfig::default()
            });
        if let (Some(key), Some(secret)) = (&self.access_key, &self.secret_key) {
            b = b.with_access_key_id(key).with_secret_access_key(secret);
        }
        if let Some(token) = &self.session_token {
            b = b.with_token(token);
        }
        if let Some(region) = &self.region {
            b = b.with_region(region);
        }
        let endpoint = self.endpoint_url();
        let plain_http = endpoint
            .as_deref()
            .is_some_and(|e| e.starts_with("http://"));
        if plain_http && self.tls == Some(true) {
            return Err(Error::new(
                ErrorKind::Config,
                "the S3 endpoint is http:// but TLS is required (connection.ssl.enabled is true)",
            ));
        }
        if let Some(e) = endpoint {
            b = b.with_endpoint(e);
        }
        // A plain-http endpoint is allowed when it is what the user wrote.
        b = b.with_allow_http(plain_http || self.tls == Some(false));
        if let Some(path_style) = self.path_style {
            b = b.with_virtual_hosted_style_request(!path_style);
        }
        for (k, v) in &self.passthrough {
            b = b.with_config(*k, v);
        }
        b.build().map_err(|e| {
            Error::new(
                ErrorKind::Config,
                format!("invalid S3 settings: {}", store_message(&e)),
            )
        })
    }
}

/// The value of a text setting; two keys with different values are an error that names the
/// keys, never the values (they may be secrets).
fn text(options: &StorageOptions, setting: &Setting) -> Result<Option<String>> {
    let mut found: Option<(&str, &str)> = None;
    for key in setting.keys {
        if let Some(v) = options.get(key) {
            match found {
                Some((k0, v0)) if v0 != v => {
                    return Err(Error::new(
                        ErrorKind::Config,
                        format!(
                            "S3 {}: {k0} and {key} are given different values",
                            setting.name
                        ),
                    ));
                }
                Some(_) => {}
                None => found = Some((key, v)),
            }
        }
    }
    Ok(found
        .map(|(_, v)| v.trim().to_string())
        .filter(|v| !v.is_empty()))
}

fn flag(options: &StorageOptions, setting: &Setting) -> Result<Option<bool>> {
    let mut found: Option<(&str, bool)> = None;
    let keys = setting
        .keys
        .iter()
        .map(|k| (*k, false))
        .chain(setting.inverted.iter().map(|k| (*k, true)));
    for (key, inverted) in keys {
        let Some(raw) = options.get(key) else {
            continue;
        };
        let value = match raw.trim().to_ascii_lowercase().as_str() {
            "true" => true,
            "false" => false,
            _ => {
                return Err(Error::new(
                    ErrorKind::Config,
                    format!(
                        "S3 {}: {key} must be true or false, not '{raw}'",
                        setting.name
                    ),
                ));
            }
        } != inverted;
        match found {
            Some((k0, v0)) if v0 != value => {
                return Err(Error::new(
                    ErrorKind::Config,
                    format!("S3 {}: {k0} and {key} disagree", setting.name),
                ));
            }
            Some(_) => {}
            None => found = Some((key, value)),
        }
    }
    Ok(found.map(|(_, v)| v))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(pairs: &[(&str, &str)]) -> StorageOptions {
        StorageOptions::from_pairs(pairs.iter().copied())
    }

    #[test]
    fn fluss_hadoop_iceberg_and_lance_spellings() {
        for pairs in [
            &[
                ("s3.endpoint", "http://127.0.0.1:9000"),
                ("s3.access-key", "ak"),
                ("s3.secret-key", "sk"),
                ("s3.path.style.access", "true"),
            ][..],
            &[
                ("fs.s3a.endpoint", "127.0.0.1:9000"),
                ("fs.s3a.connection.ssl.enabled", "false"),
                ("fs.s3a.access.key", "ak"),
                ("fs.s3a.secret.key", "sk"),
                ("fs.s3a.path.style.access", "true"),
            ][..],
            &[
                ("iceberg.hadoop.fs.s3a.endpoint", "127.0.0.1:9000"),
                ("iceberg.hadoop.fs.s3a.connection.ssl.enabled", "false"),
                ("iceberg.hadoop.fs.s3a.access.key", "ak"),
                ("iceberg.hadoop.fs.s3a.secret.key", "sk"),
                ("iceberg.hadoop.fs.s3a.path.style.access", "true"),
            ][..],
            &[
                ("s3.endpoint", "http://127.0.0.1:9000"),
                ("s3.access-key-id", "ak"),
                ("s3.secret-access-key", "sk"),
                ("s3.path-style-access", "true"),
                ("client.region", "us-east-1"),
            ][..],
            &[
                ("endpoint", "http://127.0.0.1:9000"),
                ("access_key_id", "ak"),
                ("secret_access_key", "sk"),
                ("allow_http", "true"),
                ("virtual_hosted_style_request", "false"),
            ][..],
        ] {
            let s = S3Settings::from_options(&opts(pairs)).unwrap();
            assert_eq!(
                s.endpoint_url().as_deref(),
                Some("http://127.0.0.1:9000"),
                "{pairs:?}"
            );
            assert_eq!(s.access_key.as_deref(), Some("ak"));
            assert_eq!(s.secret_key.as_deref(), Some("sk"));
            assert_eq!(s.path_style, Some(true), "{pairs:?}");
            s.build("bucket").unwrap();
        }
    }

    #[test]
    fn oss_through_its_s3_compatible_endpoint_under_fluss_oss_names() {
        let s = S3Settings::from_options(&opts(&[
            ("fs.oss.endpoint", "https://oss-cn-hangzhou.aliyuncs.com"),
            ("fs.oss.accessKeyId", "ak"),
            ("fs.oss.accessKeySecret", "sk"),
            ("fs.oss.securityToken", "st"),
            ("fs.oss.region", "cn-hangzhou"),
        ]))
        .unwrap();
        assert_eq!(
            s.endpoint_url().as_deref(),
            Some("https://oss-cn-hangzhou.aliyuncs.com")
        );
        assert_eq!(s.access_key.as_deref(), Some("ak"));
        assert_eq!(s.secret_key.as_deref(), Some("sk"));
        s.build("bucket").unwrap();
    }

    #[test]
    fn conflicts_and_bad_values_name_keys_not_values() {
        let e = S3Settings::from_options(&opts(&[
            ("s3.secret-key", "hunter2"),
            ("fs.s3a.secret.key", "other"),
            ("s3.access-key", "ak"),
        ]))
        .err()
        .unwrap();
        assert!(
            e.message().contains("s3.secret-key and fs.s3a.secret.key"),
            "{e}"
        );
        assert!(!e.message().contains("hunter2"), "{e}");
        let e = S3Settings::from_options(&opts(&[("s3.access-key", "ak")]))
            .err()
            .unwrap();
        assert!(e.message().contains("together"), "{e}");
        let e = S3Settings::from_options(&opts(&[("s3.path.style.access", "yes")]))
            .err()
            .unwrap();
        assert!(e.message().contains("true or false"), "{e}");
        let e = S3Settings::from_options(&opts(&[
            ("s3.path.style.access", "true"),
            ("virtual_hosted_style_request", "true"),
        ]))
        .err()
        .unwrap();
        assert!(e.message().contains("disagree"), "{e}");
        let e = S3Settings::from_options(&opts(&[
            ("s3.endpoint", "http://h:1"),
            ("s3.connection.ssl.enabled", "true"),
        ]))
        .unwrap()
        .build("b")
        .err()
        .unwrap();
        assert!(e.message().contains("TLS"), "{e}");
    }

    #[test]
    fn s3_error_bodies_become_one_line() {
        let raw = "Error performing PUT http://127.0.0.1:9000/b/x in 1ms, server error: \
                   Server returned non-2xx status code: 403 Forbidden: <?xml version=\"1.0\"?>\n\
                   <Error>\n  <Code>InvalidAccessKeyId</Code>\n  <Message>The AWS Access Key Id you provided does not exist in our records.</Message>\n</Error>";
        let line = crate::error::one_line(raw);
        assert!(!line.contains('\n'));
        assert!(
            line.starts_with(
                "InvalidAccessKeyId: The AWS Access Key Id you provided does not exist"
            ),
            "{line}"
        );
    }
}
