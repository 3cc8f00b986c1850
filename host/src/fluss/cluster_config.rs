//! What the cluster's own configuration says about tiering: where the coordinator writes
//! lake offsets files (`remote.data.dir`) and which lake warehouses it configured
//! (`datalake.<format>.warehouse`). The host trusts these, and only these, as the cluster's
//! word: table properties are written by table owners, and plugin output by plugins.

use std::collections::BTreeMap;

use fluss::client::FlussAdmin;

/// The cluster's tiering-related settings, as its `DescribeClusterConfigs` reports them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterConfig {
    /// `remote.data.dir`: offsets files live under `<it>/lake/`.
    pub remote_data_dir: Option<String>,
    /// `datalake.<format>.warehouse`, by format.
    pub warehouses: BTreeMap<String, String>,
    /// `datalake.<format>.uri`, by format: the catalog endpoints the cluster configured.
    pub catalog_uris: BTreeMap<String, String>,
}

impl ClusterConfig {
    /// Picks the settings out of `(key, value)` pairs.
    pub fn from_entries<'a>(entries: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut config = Self::default();
        for (key, value) in entries {
            if key == "remote.data.dir" {
                config.remote_data_dir = Some(value.to_string());
            } else if let Some(format) = key
                .strip_prefix("datalake.")
                .and_then(|k| k.strip_suffix(".warehouse"))
                && !format.contains('.')
            {
                config
                    .warehouses
                    .insert(format.to_ascii_lowercase(), value.to_string());
            } else if let Some(format) = key
                .strip_prefix("datalake.")
                .and_then(|k| k.strip_suffix(".uri"))
                && !format.contains('.')
            {
                config
                    .catalog_uris
                    .insert(format.to_ascii_lowercase(), value.to_string());
            }
        }
        config
    }

    /// Asks the cluster. A cluster that cannot say (an older server, no DESCRIBE permission)
    /// yields an empty configuration: the host then relies on its own options alone.
    pub async fn describe(admin: &FlussAdmin) -> Self {
        match admin.describe_cluster_configs().await {
            Ok(entries) => Self::from_entries(entries.iter().filter_map(|e| {
                e.config_value
                    .as_deref()
                    .map(|v| (e.config_key.as_str(), v))
            })),
            Err(e) => {
                tracing::warn!(
                    "cannot read the cluster configuration ({e}); only the host's own --datalake.<format>.warehouse \
                     options are trusted as warehouses, and lake snapshots Fluss missed cannot be recovered"
                );
                Self::default()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_remote_dir_and_the_warehouses() {
        let c = ClusterConfig::from_entries([
            ("remote.data.dir", "/data/remote"),
            ("datalake.format", "paimon"),
            ("datalake.paimon.warehouse", "/wh/paimon"),
            ("datalake.Iceberg.warehouse", "s3://b/iceberg"),
            ("datalake.paimon.metastore", "filesystem"),
            ("datalake.paimon.x.warehouse", "/not/a/format"),
            ("datalake.iceberg.uri", "http://127.0.0.1:8181"),
        ]);
        assert_eq!(
            c.catalog_uris.get("iceberg").map(String::as_str),
            Some("http://127.0.0.1:8181")
        );
        assert_eq!(c.remote_data_dir.as_deref(), Some("/data/remote"));
        assert_eq!(
            c.warehouses.into_iter().collect::<Vec<_>>(),
            vec![
                ("iceberg".to_string(), "s3://b/iceberg".to_string()),
                ("paimon".to_string(), "/wh/paimon".to_string())
            ]
        );
    }
}
