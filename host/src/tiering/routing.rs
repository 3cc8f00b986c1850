//! Which plugin tiers a table.
//!
//! Fluss names one lake format per table (`table.datalake.format`, fixed when the table is
//! created from the cluster's `datalake.format`), and by default the plugin of that format
//! tiers it. Two overrides exist for formats Fluss does not know (Delta, a private format):
//!
//! 1. the table's custom property [`PLUGIN_PROPERTY`] (`'lake.plugin' = 'delta'` in the
//!    table's `WITH` clause): the table owner's choice wins;
//! 2. the host's `--route 'PATTERN=FORMAT'` rules, first match wins, where PATTERN is
//!    `database.table` with `*` and `?` wildcards in either part (`db.*`, `*.events_?`).
//!
//! An overridden table is still committed to Fluss (its offsets advance and remote log
//! segments can expire), but Fluss's union read only knows the table's own format and cannot
//! read the overriding lake table.

use std::collections::BTreeMap;

use fluss::metadata::TablePath;

use crate::error::{Error, ErrorKind, Result};

/// The table custom property naming the plugin (format) that tiers the table.
pub const PLUGIN_PROPERTY: &str = "lake.plugin";

/// One `--route` rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteRule {
    database: String,
    table: String,
    format: String,
}

impl RouteRule {
    /// Parses `database.table=format`.
    pub fn parse(spec: &str) -> std::result::Result<Self, String> {
        let bad = |why: &str| {
            format!("--route '{spec}': {why} (expected 'DATABASE.TABLE=FORMAT', e.g. 'db.*=delta')")
        };
        let (pattern, format) = spec.split_once('=').ok_or_else(|| bad("no '='"))?;
        let (database, table) = pattern
            .trim()
            .split_once('.')
            .ok_or_else(|| bad("no '.' between database and table"))?;
        let format = format.trim().to_ascii_lowercase();
        if database.is_empty() || table.is_empty() || format.is_empty() {
            return Err(bad("empty part"));
        }
        Ok(Self {
            database: database.to_string(),
            table: table.to_string(),
            format,
        })
    }

    pub fn matches(&self, path: &TablePath) -> bool {
        glob_match(&self.database, path.database()) && glob_match(&self.table, path.table())
    }
}

/// Why a table goes to the plugin it goes to; logged with every round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RouteSource {
    /// The table's own `table.datalake.format`.
    TableFormat,
    /// The table's [`PLUGIN_PROPERTY`] custom property.
    TableProperty,
    /// The `--route` rule with this index (0-based).
    HostRule(usize),
    /// The host's `--datalake.format`, for a table without a format property.
    HostDefault,
}

/// The format a table is tiered to and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub format: String,
    pub source: RouteSource,
}

impl Route {
    /// Whether the lake table is not the one Fluss knows of (so the host creates it).
    pub fn is_override(&self) -> bool {
        matches!(
            self.source,
            RouteSource::TableProperty | RouteSource::HostRule(_)
        )
    }
}

/// Routes a table: its custom property, then the host's rules, then its own lake format,
/// then the host's default format.
pub fn route(
    path: &TablePath,
    table_format: Option<&str>,
    custom_properties: &std::collections::HashMap<String, String>,
    rules: &[RouteRule],
    host_default: Option<&str>,
) -> Result<Route> {
    if let Some(f) = custom_properties.get(PLUGIN_PROPERTY) {
        let format = f.trim().to_ascii_lowercase();
        if format.is_empty() {
            return Err(Error::new(
                ErrorKind::Config,
                format!("{path}: custom property '{PLUGIN_PROPERTY}' is empty"),
            ));
        }
        return Ok(Route {
            format,
            source: RouteSource::TableProperty,
        });
    }
    if let Some((i, rule)) = rules.iter().enumerate().find(|(_, r)| r.matches(path)) {
        return Ok(Route {
            format: rule.format.clone(),
            source: RouteSource::HostRule(i),
        });
    }
    if let Some(f) = table_format {
        return Ok(Route {
            format: f.to_ascii_lowercase(),
            source: RouteSource::TableFormat,
        });
    }
    host_default
        .map(|f| Route {
            format: f.to_ascii_lowercase(),
            source: RouteSource::HostDefault,
        })
        .ok_or_else(|| {
            Error::new(
                ErrorKind::NoPlugin,
                format!("{path} has no table.datalake.format and no --route matches it"),
            )
        })
}

/// `*` matches any run of characters, `?` any one character; everything else itself.
fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// Refuses a warehouse that neither this host (`--datalake.<format>.warehouse`, any format)
/// nor the cluster (`datalake.<format>.warehouse`) configured: a table's properties come
/// from its owner, who must not be able to point a plugin at `/` or at another system's
/// data. Paths compare exactly, after dropping `file://` and trailing slashes.
///
/// Also refuses a warehouse that lies inside another allowed warehouse or contains one: table
/// locations are exact within a warehouse (see [`crate::plugin::layout`]), but a warehouse
/// nested in another could make one table's files another warehouse's table.
pub fn check_warehouse(
    warehouse: &str,
    format: &str,
    host: &BTreeMap<String, BTreeMap<String, String>>,
    cluster: &BTreeMap<String, String>,
) -> Result<()> {
    let norm = |w: &str| {
        let w = w.strip_prefix("file://").unwrap_or(w);
        w.trim_end_matches('/').to_string()
    };
    let wanted = norm(warehouse);
    let allowed = host
        .values()
        .filter_map(|o| o.get("warehouse"))
        .chain(cluster.values());
    let listed: Vec<&str> = allowed.map(String::as_str).collect();
    if listed.iter().any(|a| norm(a) == wanted) {
        let inside = |outer: &str, inner: &str| inner.starts_with(&format!("{outer}/"));
        if let Some(nested) = listed.iter().find(|a| {
            let a = norm(a);
            inside(&a, &wanted) || inside(&wanted, &a)
        }) {
            return Err(Error::new(
                ErrorKind::Config,
                format!(
                    "warehouse '{warehouse}' for format {format} and the configured warehouse '{nested}' \
                     lie one inside the other: give each format the same warehouse or separate ones"
                ),
            ));
        }
        return Ok(());
    }
    Err(not_configured(
        "warehouse",
        "warehouse",
        warehouse,
        format,
        &listed,
    ))
}

/// `<what> '<value>' for format <format> is not one the host or the cluster configured`,
/// naming what is allowed and the host option that would allow it.
fn not_configured(what: &str, option: &str, value: &str, format: &str, listed: &[&str]) -> Error {
    Error::new(
        ErrorKind::Config,
        format!(
            "{what} '{value}' for format {format} is not one the host or the cluster configured \
             (allowed: {}); give the host --datalake.{format}.{option}",
            if listed.is_empty() {
                "none".to_string()
            } else {
                listed.join(", ")
            }
        ),
    )
}

/// Checks that `uri`, the catalog endpoint a table's options name, is one the host
/// (`--datalake.<format>.uri`) or the cluster (`datalake.<format>.uri`) configured: table
/// properties are written by table owners, and the host sends its catalog credentials only
/// to an endpoint its operator or the cluster named.
pub fn check_catalog_uri(
    uri: &str,
    format: &str,
    host: &BTreeMap<String, BTreeMap<String, String>>,
    cluster: &BTreeMap<String, String>,
) -> Result<()> {
    let norm = |u: &str| u.trim().trim_end_matches('/').to_string();
    let listed: Vec<&str> = host
        .get(format)
        .and_then(|o| o.get("uri"))
        .into_iter()
        .chain(cluster.get(format))
        .map(String::as_str)
        .collect();
    if listed.iter().any(|u| norm(u) == norm(uri)) {
        return Ok(());
    }
    Err(not_configured("catalog", "uri", uri, format, &listed))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn only_configured_catalogs_get_the_credentials() {
        let host = BTreeMap::from([(
            "iceberg".to_string(),
            BTreeMap::from([("uri".to_string(), "http://cat:8181/".to_string())]),
        )]);
        let cluster = BTreeMap::from([("iceberg".to_string(), "http://c2:8181".to_string())]);
        check_catalog_uri("http://cat:8181", "iceberg", &host, &cluster).unwrap();
        check_catalog_uri("http://c2:8181/", "iceberg", &host, &cluster).unwrap();
        let e = check_catalog_uri("http://attacker:80", "iceberg", &host, &cluster).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Config);
        assert!(e.message().contains("--datalake.iceberg.uri"), "{e}");
        // Another format's catalog is not this one's.
        assert!(check_catalog_uri("http://c2:8181", "paimon", &host, &cluster).is_err());
    }

    #[test]
    fn only_configured_warehouses_are_allowed() {
        let mut host = BTreeMap::new();
        host.insert(
            "iceberg".to_string(),
            BTreeMap::from([("warehouse".to_string(), "/wh/iceberg/".to_string())]),
        );
        let cluster = BTreeMap::from([("paimon".to_string(), "file:///wh/paimon".to_string())]);
        check_warehouse("/wh/iceberg", "iceberg", &host, &cluster).unwrap();
        check_warehouse("/wh/paimon/", "paimon", &host, &cluster).unwrap();
        // Any configured warehouse serves any format (a Lance table routed next to Paimon's).
        check_warehouse("file:///wh/paimon", "lance", &host, &cluster).unwrap();
        for bad in [
            "/",
            "/wh",
            "/wh/paimon/sub",
            "/etc",
            "/wh/iceberg/../paimon",
        ] {
            let e = check_warehouse(bad, "paimon", &host, &cluster).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Config, "{bad}");
            assert!(
                e.message()
                    .contains("is not one the host or the cluster configured")
            );
        }
        let e = check_warehouse("/x", "paimon", &BTreeMap::new(), &BTreeMap::new()).unwrap_err();
        assert!(e.message().contains("(allowed: none)"), "{e}");
    }

    #[test]
    fn nested_warehouses_are_refused() {
        let host = BTreeMap::from([(
            "lance".to_string(),
            BTreeMap::from([("warehouse".to_string(), "/wh/paimon/lance".to_string())]),
        )]);
        let cluster = BTreeMap::from([("paimon".to_string(), "file:///wh/paimon/".to_string())]);
        for (wh, format) in [("/wh/paimon/lance", "lance"), ("/wh/paimon", "paimon")] {
            let e = check_warehouse(wh, format, &host, &cluster).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Config, "{wh}");
            assert!(e.message().contains("lie one inside the other"), "{e}");
        }
    }

    fn path(db: &str, t: &str) -> TablePath {
        TablePath::new(db.to_string(), t.to_string())
    }

    #[test]
    fn globs() {
        assert!(glob_match("*", "anything"));
        assert!(glob_match("events_?", "events_1"));
        assert!(!glob_match("events_?", "events_12"));
        assert!(glob_match("a*b*c", "aXXbYYc"));
        assert!(!glob_match("a*b", "aXXc"));
        assert!(glob_match("db", "db"));
        assert!(!glob_match("db", "db2"));
    }

    #[test]
    fn precedence() {
        let rules = vec![
            RouteRule::parse("sales.*=delta").unwrap(),
            RouteRule::parse("*.audit_?=lance").unwrap(),
            RouteRule::parse("sales.x=iceberg").unwrap(),
        ];
        let none = HashMap::new();
        let r = route(&path("sales", "x"), Some("paimon"), &none, &rules, None).unwrap();
        assert_eq!(
            (r.format.as_str(), r.source),
            ("delta", RouteSource::HostRule(0))
        );
        let r = route(&path("ops", "audit_1"), Some("paimon"), &none, &rules, None).unwrap();
        assert_eq!(r.format, "lance");
        assert!(r.is_override());
        let r = route(&path("ops", "t"), Some("Iceberg"), &none, &rules, None).unwrap();
        assert_eq!(
            (r.format.as_str(), r.source.clone()),
            ("iceberg", RouteSource::TableFormat)
        );
        assert!(!r.is_override());
        let prop = HashMap::from([(PLUGIN_PROPERTY.to_string(), "Delta".to_string())]);
        let r = route(&path("ops", "t"), Some("paimon"), &prop, &rules, None).unwrap();
        assert_eq!(
            (r.format.as_str(), r.source),
            ("delta", RouteSource::TableProperty)
        );
        let r = route(&path("ops", "t"), None, &none, &[], Some("paimon")).unwrap();
        assert_eq!(r.source, RouteSource::HostDefault);
        assert_eq!(
            route(&path("ops", "t"), None, &none, &[], None)
                .unwrap_err()
                .kind(),
            ErrorKind::NoPlugin
        );
    }

    #[test]
    fn bad_rules() {
        for bad in ["db.*", "db=delta", ".t=delta", "db.t=", "db.="] {
            assert!(RouteRule::parse(bad).is_err(), "{bad}");
        }
    }
}
