//! What a plugin hands the catalog, checked before the host sends a byte of it.
//!
//! A plugin is hostile: it could try to re-point the table (`set-location`), swap its identity
//! (`assign-uuid`), change its schema or format version, make the catalog write metadata
//! outside the table (`write.metadata.path`), reference files of another table from a
//! snapshot, or send a request large or deep enough to cost the host memory and time. So every
//! request is bounded in bytes and in entries before it is parsed, must be JSON of the shape
//! the REST spec gives, and may only hold the requirements and updates a tiering plugin makes
//! (snapshots, references, properties, statistics), each with its known fields only. Anything
//! else is refused with [`ErrorKind::PluginLimit`] and a message naming what was refused.

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::error::{Error, ErrorKind, Result};

/// Largest `requirements` JSON a plugin may send: a requirement is a few dozen bytes, so this
/// leaves room for any legitimate list while bounding what the host parses.
pub const MAX_REQUIREMENTS_BYTES: usize = 64 * 1024;
/// Most requirements in one commit (a tiering commit asserts a handful).
pub const MAX_REQUIREMENTS: usize = 64;
/// Largest `updates` JSON a plugin may send. The largest legitimate update is a
/// `remove-snapshots` of an expiry (a few hundred thousand ids fit) or a `set-properties`.
pub const MAX_UPDATES_BYTES: usize = 4 * 1024 * 1024;
/// Most updates in one commit (a tiering commit has a few; an expiry one per removed ref).
pub const MAX_UPDATES: usize = 1024;
/// Largest `CreateTableRequest` JSON a plugin may send (a schema of thousands of columns fits).
pub const MAX_CREATE_REQUEST_BYTES: usize = 4 * 1024 * 1024;

/// The requirements a plugin may assert, with the fields each may have.
const REQUIREMENTS: &[(&str, &[&str])] = &[
    ("assert-ref-snapshot-id", &["type", "ref", "snapshot-id"]),
    ("assert-current-schema-id", &["type", "current-schema-id"]),
    (
        "assert-last-assigned-field-id",
        &["type", "last-assigned-field-id"],
    ),
    (
        "assert-last-assigned-partition-id",
        &["type", "last-assigned-partition-id"],
    ),
    ("assert-default-spec-id", &["type", "default-spec-id"]),
    (
        "assert-default-sort-order-id",
        &["type", "default-sort-order-id"],
    ),
    ("assert-table-uuid", &["type", "uuid"]),
];

/// The updates a plugin may make, with the fields each may have: snapshots, references,
/// properties and statistics. Never the table's identity, location, schema, partitioning,
/// sort order, format version or encryption.
const UPDATES: &[(&str, &[&str])] = &[
    ("add-snapshot", &["action", "snapshot"]),
    (
        "set-snapshot-ref",
        &[
            "action",
            "ref-name",
            "type",
            "snapshot-id",
            "max-ref-age-ms",
            "max-snapshot-age-ms",
            "min-snapshots-to-keep",
        ],
    ),
    ("remove-snapshot-ref", &["action", "ref-name"]),
    ("remove-snapshots", &["action", "snapshot-ids"]),
    ("set-properties", &["action", "updates"]),
    ("remove-properties", &["action", "removals"]),
    ("set-statistics", &["action", "snapshot-id", "statistics"]),
    ("remove-statistics", &["action", "snapshot-id"]),
    (
        "set-partition-statistics",
        &["action", "partition-statistics"],
    ),
    ("remove-partition-statistics", &["action", "snapshot-id"]),
];

/// Table properties a plugin may neither set nor remove: they tell the catalog (which writes
/// the metadata files) or other engines where to write, which would reach outside the table's
/// location, or they are reserved by the spec.
const FORBIDDEN_PROPERTIES: &[&str] = &[
    "write.metadata.path",
    "write.data.path",
    "write.object-storage.path",
    "write.folder-storage.path",
    "write.location-provider.impl",
    "format-version",
    "uuid",
];

/// The fields of a `CreateTableRequest` a plugin may give (`location` and `stage-create` only
/// as null or false: the catalog places the table, and the host creates it at once).
const CREATE_FIELDS: &[&str] = &[
    "name",
    "schema",
    "partition-spec",
    "write-order",
    "properties",
    "location",
    "stage-create",
];

fn refused(message: impl Into<String>) -> Error {
    Error::new(
        ErrorKind::PluginLimit,
        format!("table catalog request refused: {}", message.into()),
    )
}

/// A JSON array of objects, parsed with the number of elements bounded while parsing (so a
/// million tiny elements are refused at the bound, not after they are all built).
struct BoundedObjects {
    max: usize,
    what: &'static str,
}

impl<'de> DeserializeSeed<'de> for BoundedObjects {
    type Value = Vec<Map<String, Value>>;

    fn deserialize<D: de::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> std::result::Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for BoundedObjects {
    type Value = Vec<Map<String, Value>>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "a JSON array of {} objects", self.what)
    }

    fn visit_seq<A: SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(item) = seq.next_element::<Map<String, Value>>()? {
            if out.len() == self.max {
                return Err(de::Error::custom(format!(
                    "more than {} {}",
                    self.max, self.what
                )));
            }
            out.push(item);
        }
        Ok(out)
    }
}

fn parse_objects(
    json: &[u8],
    max_bytes: usize,
    max_items: usize,
    what: &'static str,
) -> Result<Vec<Map<String, Value>>> {
    if json.len() > max_bytes {
        return Err(refused(format!(
            "{what}: {} bytes, more than the {max_bytes} allowed",
            json.len()
        )));
    }
    // serde_json refuses nesting deeper than 128 levels, so a deep document cannot exhaust
    // the stack.
    let mut de = serde_json::Deserializer::from_slice(json);
    let items = BoundedObjects {
        max: max_items,
        what,
    }
    .deserialize(&mut de)
    .and_then(|v| de.end().map(|()| v))
    .map_err(|e| refused(format!("{what}: not a JSON array of objects: {e}")))?;
    Ok(items)
}

fn only_fields(obj: &Map<String, Value>, allowed: &[&str], what: &str) -> Result<()> {
    match obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(refused(format!("{what}: unexpected field '{}'", clip(k)))),
        None => Ok(()),
    }
}

/// A plugin-supplied name, made safe to print (bounded, no control characters).
fn clip(s: &str) -> String {
    super::rest::clean_message(s, 80)
}

/// The requirements of a commit, checked, with the host's `assert-table-uuid` for
/// `expected_uuid` added (a plugin's own `assert-table-uuid` must name the same table).
pub fn requirements(json: &[u8], expected_uuid: &str) -> Result<Vec<Value>> {
    let items = parse_objects(
        json,
        MAX_REQUIREMENTS_BYTES,
        MAX_REQUIREMENTS,
        "requirements",
    )?;
    let mut out = Vec::with_capacity(items.len() + 1);
    for item in items {
        let kind = item
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| refused("a requirement has no string 'type'"))?;
        let Some((_, fields)) = REQUIREMENTS.iter().find(|(t, _)| *t == kind) else {
            return Err(refused(if kind == "assert-create" {
                "requirement assert-create: the host creates tables through create-table, never in a commit".to_string()
            } else {
                format!(
                    "requirement '{}' is not one a tiering plugin may assert",
                    clip(kind)
                )
            }));
        };
        only_fields(&item, fields, &format!("requirement {kind}"))?;
        if kind == "assert-table-uuid" {
            if item.get("uuid").and_then(Value::as_str) != Some(expected_uuid) {
                return Err(refused(
                    "requirement assert-table-uuid names another table than the one the host resolved",
                ));
            }
            // The host's own, added below.
            continue;
        }
        out.push(Value::Object(item));
    }
    out.push(serde_json::json!({"type": "assert-table-uuid", "uuid": expected_uuid}));
    Ok(out)
}

/// The updates of a commit, checked: only the whitelisted actions with their known fields, and
/// every file they reference under `table_location`.
pub fn updates(json: &[u8], table_location: &str) -> Result<Vec<Value>> {
    let location = TableLocation::new(table_location).ok_or_else(|| {
        Error::new(
            ErrorKind::Internal,
            "the table's location is not a valid location",
        )
    })?;
    let items = parse_objects(json, MAX_UPDATES_BYTES, MAX_UPDATES, "updates")?;
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let action = item
            .get("action")
            .and_then(Value::as_str)
            .ok_or_else(|| refused("an update has no string 'action'"))?;
        let Some((_, fields)) = UPDATES.iter().find(|(a, _)| *a == action) else {
            return Err(refused(format!(
                "update '{}' is not one a tiering plugin may make (it may add and remove snapshots, references, properties and statistics)",
                clip(action)
            )));
        };
        only_fields(&item, fields, &format!("update {action}"))?;
        match action {
            "add-snapshot" => {
                let snapshot = item
                    .get("snapshot")
                    .and_then(Value::as_object)
                    .ok_or_else(|| refused("update add-snapshot has no 'snapshot' object"))?;
                let list = snapshot
                    .get("manifest-list")
                    .and_then(Value::as_str)
                    .ok_or_else(|| {
                        refused("update add-snapshot: the snapshot has no string 'manifest-list'")
                    })?;
                location.check("add-snapshot manifest-list", list)?;
                if snapshot.contains_key("manifests") {
                    return Err(refused(
                        "update add-snapshot: a snapshot lists its manifests in a manifest list, not inline ('manifests')",
                    ));
                }
            }
            "set-statistics" => {
                let path = item
                    .get("statistics")
                    .and_then(|s| s.get("statistics-path"))
                    .and_then(Value::as_str)
                    .ok_or_else(|| {
                        refused("update set-statistics has no string 'statistics.statistics-path'")
                    })?;
                location.check("set-statistics statistics-path", path)?;
            }
            "set-partition-statistics" => {
                let path = item
                    .get("partition-statistics")
                    .and_then(|s| s.get("statistics-path"))
                    .and_then(Value::as_str)
                    .ok_or_else(|| {
                        refused(
                            "update set-partition-statistics has no string 'partition-statistics.statistics-path'",
                        )
                    })?;
                location.check("set-partition-statistics statistics-path", path)?;
            }
            "set-properties" => {
                let updates = item
                    .get("updates")
                    .and_then(Value::as_object)
                    .ok_or_else(|| refused("update set-properties has no 'updates' object"))?;
                check_properties(updates.keys().map(String::as_str), "set-properties")?;
            }
            "remove-properties" => {
                let removals = item
                    .get("removals")
                    .and_then(Value::as_array)
                    .ok_or_else(|| refused("update remove-properties has no 'removals' array"))?;
                check_properties(
                    removals.iter().filter_map(Value::as_str),
                    "remove-properties",
                )?;
            }
            _ => {}
        }
        out.push(Value::Object(item));
    }
    Ok(out)
}

fn check_properties<'a>(keys: impl Iterator<Item = &'a str>, what: &str) -> Result<()> {
    for key in keys {
        if FORBIDDEN_PROPERTIES.contains(&key.to_ascii_lowercase().as_str()) {
            return Err(refused(format!(
                "{what}: the table property '{key}' is the host's and the catalog's, not a plugin's"
            )));
        }
    }
    Ok(())
}

/// A plugin's `CreateTableRequest`, checked, with `name` set by the host.
pub fn create_request(json: &[u8], table: &str) -> Result<Value> {
    if json.len() > MAX_CREATE_REQUEST_BYTES {
        return Err(refused(format!(
            "create-table request: {} bytes, more than the {MAX_CREATE_REQUEST_BYTES} allowed",
            json.len()
        )));
    }
    let mut request: Map<String, Value> = serde_json::from_slice(json)
        .map_err(|e| refused(format!("create-table request: not a JSON object: {e}")))?;
    only_fields(&request, CREATE_FIELDS, "create-table request")?;
    if request.get("location").is_some_and(|l| !l.is_null()) {
        return Err(refused(
            "create-table request: 'location' is the catalog's to choose, not a plugin's",
        ));
    }
    request.remove("location");
    match request.get("stage-create") {
        None | Some(Value::Null) | Some(Value::Bool(false)) => {}
        Some(_) => {
            return Err(refused(
                "create-table request: 'stage-create' must be false: the host creates the table at once",
            ));
        }
    }
    if !request.get("schema").is_some_and(Value::is_object) {
        return Err(refused("create-table request has no 'schema' object"));
    }
    if let Some(properties) = request.get("properties") {
        let properties = properties
            .as_object()
            .ok_or_else(|| refused("create-table request: 'properties' is not an object"))?;
        check_properties(properties.keys().map(String::as_str), "create-table")?;
    }
    request.insert("name".into(), Value::String(table.to_string()));
    Ok(Value::Object(request))
}

/// A table location, normalized so that every spelling of one place compares equal: `s3a://`
/// and `s3n://` are `s3://`, and `file:/p`, `file:///p`, `file://localhost/p` and `/p` are
/// `file:///p`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableLocation(String);

impl TableLocation {
    pub fn new(location: &str) -> Option<Self> {
        let n = normalize(location)?;
        let n = n.trim_end_matches('/');
        // A location is at least `scheme://x`.
        if n.len() <= n.find("://")? + 3 {
            return None;
        }
        Some(Self(n.to_string()))
    }

    /// Whether `path` lies strictly under this location.
    pub fn contains(&self, path: &str) -> bool {
        normalize(path).is_some_and(|p| {
            p.len() > self.0.len() + 1
                && p.starts_with(&self.0)
                && p.as_bytes()[self.0.len()] == b'/'
        })
    }

    /// `path` relative to this location (e.g. `metadata/00003-….metadata.json`), when it lies
    /// strictly under it, whatever the spelling of either.
    pub fn relative(&self, path: &str) -> Option<String> {
        let p = normalize(path)?;
        p.strip_prefix(&self.0)?
            .strip_prefix('/')
            .filter(|rest| !rest.is_empty())
            .map(str::to_string)
    }

    fn check(&self, what: &str, path: &str) -> Result<()> {
        if self.contains(path) {
            Ok(())
        } else {
            Err(refused(format!(
                "{what} '{}' is not under the table's location {}",
                clip(path),
                self.0
            )))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The normalized spelling of a location or path, or `None` when it is not one the host can
/// compare safely: control characters, backslashes, `.` or `..` segments (object stores keep
/// them literally, Hadoop and Java URIs resolve them), or a `file:` URI naming another host.
fn normalize(raw: &str) -> Option<String> {
    if raw.is_empty() || raw.chars().any(|c| c.is_control() || c == '\\') {
        return None;
    }
    let (scheme, rest) = if let Some(path) = raw.strip_prefix('/') {
        ("file", format!("/{path}"))
    } else {
        let colon = raw.find(':')?;
        let scheme = raw[..colon].to_ascii_lowercase();
        if scheme.is_empty()
            || !scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        {
            return None;
        }
        let rest = &raw[colon + 1..];
        if scheme == "file" {
            let path = match rest.strip_prefix("//") {
                Some(after) => {
                    let slash = after.find('/')?;
                    let host = &after[..slash];
                    if !(host.is_empty() || host.eq_ignore_ascii_case("localhost")) {
                        return None;
                    }
                    &after[slash..]
                }
                None => rest,
            };
            if !path.starts_with('/') {
                return None;
            }
            ("file", path.to_string())
        } else {
            let rest = rest.strip_prefix("//")?;
            let scheme = match scheme.as_str() {
                "s3a" | "s3n" => "s3".to_string(),
                _ => scheme,
            };
            return finish(&format!("{scheme}://"), rest);
        }
    };
    debug_assert_eq!(scheme, "file");
    // Keep one leading slash: `file:///p`.
    finish("file://", &rest)
}

fn finish(scheme: &str, rest: &str) -> Option<String> {
    // Also their percent-encoded spellings, which some readers decode.
    if rest.split('/').any(|segment| {
        let s = segment.to_ascii_lowercase().replace("%2e", ".");
        s == "." || s == ".."
    }) {
        return None;
    }
    Some(format!("{scheme}{rest}"))
}

/// The `metadata` object of a catalog answer: its exact bytes, found without building the
/// document (a metadata file of many snapshots is megabytes of JSON). `json` must already be
/// known to be valid JSON; duplicate keys must already have been refused.
pub(crate) fn top_level_member<'a>(json: &'a [u8], name: &str) -> Option<&'a [u8]> {
    let mut i = skip_ws(json, 0);
    if json.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    loop {
        i = skip_ws(json, i);
        match json.get(i)? {
            b'}' => return None,
            b'"' => {}
            _ => return None,
        }
        let key_start = i;
        i = skip_string(json, i)?;
        let key: String = serde_json::from_slice(&json[key_start..i]).ok()?;
        i = skip_ws(json, i);
        if json.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(json, i + 1);
        let value_start = i;
        i = skip_value(json, i)?;
        if key == name {
            return Some(&json[value_start..i]);
        }
        i = skip_ws(json, i);
        match json.get(i)? {
            b',' => i += 1,
            _ => return None,
        }
    }
}

fn skip_ws(json: &[u8], mut i: usize) -> usize {
    while matches!(json.get(i), Some(b' ' | b'\t' | b'\r' | b'\n')) {
        i += 1;
    }
    i
}

/// Past the string starting at `i` (which is `"`).
fn skip_string(json: &[u8], mut i: usize) -> Option<usize> {
    i += 1;
    loop {
        match json.get(i)? {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
}

/// Past the value starting at `i`.
fn skip_value(json: &[u8], mut i: usize) -> Option<usize> {
    match json.get(i)? {
        b'"' => skip_string(json, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            loop {
                match json.get(i)? {
                    b'"' => {
                        i = skip_string(json, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        _ => {
            while !matches!(
                json.get(i),
                None | Some(b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n')
            ) {
                i += 1;
            }
            Some(i)
        }
    }
}

/// The fields of a table metadata object the host reads itself.
#[derive(Deserialize)]
pub(crate) struct MetadataHead {
    #[serde(rename = "format-version")]
    pub format_version: u8,
    #[serde(rename = "table-uuid")]
    pub table_uuid: String,
    pub location: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const UUID: &str = "9c12d441-03fe-4693-9a96-a0705ddf69c1";
    const LOC: &str = "s3://lake/wh/db/t";

    fn kind_and_message(r: Result<impl std::fmt::Debug>) -> (ErrorKind, String) {
        let e = r.unwrap_err();
        (e.kind(), e.message().to_string())
    }

    fn add_snapshot(list: &str) -> String {
        format!(
            r#"[{{"action":"add-snapshot","snapshot":{{"snapshot-id":1,"timestamp-ms":1,"manifest-list":"{list}","summary":{{"operation":"append"}}}}}},
               {{"action":"set-snapshot-ref","ref-name":"main","type":"branch","snapshot-id":1}}]"#
        )
    }

    #[test]
    fn a_tiering_commit_passes_and_gets_the_hosts_uuid_assertion() {
        let reqs = requirements(
            br#"[{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":null},
                 {"type":"assert-current-schema-id","current-schema-id":0},
                 {"type":"assert-table-uuid","uuid":"9c12d441-03fe-4693-9a96-a0705ddf69c1"}]"#,
            UUID,
        )
        .unwrap();
        assert_eq!(reqs.len(), 3);
        assert_eq!(
            reqs.last().unwrap(),
            &serde_json::json!({"type":"assert-table-uuid","uuid":UUID})
        );
        assert_eq!(requirements(b"[]", UUID).unwrap().len(), 1);

        for list in [
            "s3://lake/wh/db/t/metadata/snap-1.avro",
            "s3a://lake/wh/db/t/metadata/snap-1.avro",
        ] {
            let ups = updates(add_snapshot(list).as_bytes(), LOC).unwrap();
            assert_eq!(ups.len(), 2);
        }
        let ups = updates(
            br#"[{"action":"set-properties","updates":{"fluss.x":"1"}},
                 {"action":"remove-properties","removals":["a"]},
                 {"action":"remove-snapshots","snapshot-ids":[1,2,3]},
                 {"action":"remove-snapshot-ref","ref-name":"tag1"},
                 {"action":"set-statistics","snapshot-id":1,"statistics":{"snapshot-id":1,"statistics-path":"s3://lake/wh/db/t/metadata/s.puffin","file-size-in-bytes":1,"file-footer-size-in-bytes":1,"blob-metadata":[]}},
                 {"action":"remove-statistics","snapshot-id":1},
                 {"action":"set-partition-statistics","partition-statistics":{"snapshot-id":1,"statistics-path":"s3://lake/wh/db/t/metadata/p.parquet","file-size-in-bytes":1}},
                 {"action":"remove-partition-statistics","snapshot-id":1}]"#,
            LOC,
        )
        .unwrap();
        assert_eq!(ups.len(), 8);
    }

    #[test]
    fn forbidden_updates_and_requirements_are_refused() {
        for (json, needle) in [
            (
                r#"[{"action":"set-location","location":"s3://other"}]"#,
                "set-location",
            ),
            (r#"[{"action":"assign-uuid","uuid":"x"}]"#, "assign-uuid"),
            (
                r#"[{"action":"upgrade-format-version","format-version":3}]"#,
                "upgrade-format-version",
            ),
            (r#"[{"action":"add-schema","schema":{}}]"#, "add-schema"),
            (
                r#"[{"action":"set-current-schema","schema-id":1}]"#,
                "set-current-schema",
            ),
            (r#"[{"action":"add-spec","spec":{}}]"#, "add-spec"),
            (
                r#"[{"action":"set-default-spec","spec-id":1}]"#,
                "set-default-spec",
            ),
            (
                r#"[{"action":"add-sort-order","sort-order":{}}]"#,
                "add-sort-order",
            ),
            (
                r#"[{"action":"remove-schemas","schema-ids":[0]}]"#,
                "remove-schemas",
            ),
            (
                r#"[{"action":"remove-partition-specs","spec-ids":[0]}]"#,
                "remove-partition-specs",
            ),
            (
                r#"[{"action":"add-encryption-key","encryption-key":{}}]"#,
                "add-encryption-key",
            ),
            (r#"[{"action":"enable-row-lineage"}]"#, "enable-row-lineage"),
            (
                r#"[{"action":"set-properties","updates":{"write.metadata.path":"s3://other/m"}}]"#,
                "write.metadata.path",
            ),
            (
                r#"[{"action":"remove-properties","removals":["write.data.path"]}]"#,
                "write.data.path",
            ),
            (
                r#"[{"action":"remove-snapshot-ref","ref-name":"x","location":"s3://other"}]"#,
                "unexpected field 'location'",
            ),
            (r#"[{"snapshot-ids":[1]}]"#, "no string 'action'"),
            (r#"{"action":"add-snapshot"}"#, "not a JSON array"),
            (r#"[1]"#, "not a JSON array of objects"),
            (
                r#"[{"action":"add-snapshot"}] trailing"#,
                "not a JSON array",
            ),
        ] {
            let (kind, message) = kind_and_message(updates(json.as_bytes(), LOC));
            assert_eq!(kind, ErrorKind::PluginLimit, "{json}: {message}");
            assert!(message.contains(needle), "{json}: {message}");
        }
        for (json, needle) in [
            (r#"[{"type":"assert-create"}]"#, "assert-create"),
            (
                r#"[{"type":"assert-table-uuid","uuid":"other"}]"#,
                "another table",
            ),
            (
                r#"[{"type":"assert-view-uuid","uuid":"x"}]"#,
                "assert-view-uuid",
            ),
            (
                r#"[{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":1,"x":1}]"#,
                "unexpected field",
            ),
            (r#"[{"ref":"main"}]"#, "no string 'type'"),
        ] {
            let (kind, message) = kind_and_message(requirements(json.as_bytes(), UUID));
            assert_eq!(kind, ErrorKind::PluginLimit, "{json}: {message}");
            assert!(message.contains(needle), "{json}: {message}");
        }
    }

    #[test]
    fn files_outside_the_table_are_refused() {
        for list in [
            "s3://lake/wh/db/other/metadata/snap-1.avro",
            "s3://lake/wh/db/t2/metadata/snap-1.avro",
            "s3://lake/wh/db/t/../other/snap-1.avro",
            "s3://lake/wh/db/t/./snap-1.avro",
            "s3://lake/wh/db/t/%2E%2e/other/snap-1.avro",
            "s3://lake/wh/db/t",
            "s3://lake/wh/db/t/",
            "gs://lake/wh/db/t/metadata/snap-1.avro",
            "s3://other-bucket/wh/db/t/metadata/snap-1.avro",
            "/wh/db/t/metadata/snap-1.avro",
            "s3://lake/wh/db/t/metadata\\snap.avro",
            "s3://lake/wh/db/t/metadata/snap\n.avro",
        ] {
            let json = add_snapshot(&list.replace('\\', "\\\\").replace('\n', "\\n"));
            let (kind, message) = kind_and_message(updates(json.as_bytes(), LOC));
            assert_eq!(kind, ErrorKind::PluginLimit, "{list}: {message}");
            assert!(
                message.contains("not under the table's location"),
                "{list}: {message}"
            );
            assert!(!message.contains('\n'), "{message}");
        }
        let (kind, message) = kind_and_message(updates(
            br#"[{"action":"set-statistics","snapshot-id":1,"statistics":{"snapshot-id":1,"statistics-path":"s3://lake/elsewhere/s.puffin","file-size-in-bytes":1,"file-footer-size-in-bytes":1,"blob-metadata":[]}}]"#,
            LOC,
        ));
        assert_eq!(kind, ErrorKind::PluginLimit);
        assert!(message.contains("statistics-path"), "{message}");
        let (_, message) = kind_and_message(updates(
            br#"[{"action":"add-snapshot","snapshot":{"snapshot-id":1,"manifest-list":"s3://lake/wh/db/t/m/l.avro","manifests":["s3://x/m.avro"]}}]"#,
            LOC,
        ));
        assert!(message.contains("manifests"), "{message}");
    }

    #[test]
    fn location_spellings_normalize() {
        let l = TableLocation::new("s3a://b/wh/t/").unwrap();
        assert_eq!(l.as_str(), "s3://b/wh/t");
        assert!(l.contains("s3://b/wh/t/metadata/x.json"));
        assert!(l.contains("S3A://b/wh/t/metadata/x.json"));
        assert!(!l.contains("s3://b/wh/t2/x"));
        let f = TableLocation::new("file:/tmp/wh/t").unwrap();
        assert_eq!(f.as_str(), "file:///tmp/wh/t");
        for p in [
            "file:/tmp/wh/t/m/x",
            "file:///tmp/wh/t/m/x",
            "file://localhost/tmp/wh/t/m/x",
            "/tmp/wh/t/m/x",
        ] {
            assert!(f.contains(p), "{p}");
        }
        assert!(!f.contains("file://otherhost/tmp/wh/t/m/x"));
        assert_eq!(f.relative("/tmp/wh/t/m/x").as_deref(), Some("m/x"));
        assert_eq!(
            l.relative("s3a://b/wh/t/metadata/1.json").as_deref(),
            Some("metadata/1.json")
        );
        assert_eq!(l.relative("s3://b/wh/t/"), None);
        assert_eq!(l.relative("s3://b/wh/t2/x"), None);
        assert!(TableLocation::new("s3://").is_none());
        assert!(TableLocation::new("relative/path").is_none());
    }

    #[test]
    fn hostile_sizes_and_shapes_are_refused() {
        // Over the byte bound: refused before parsing.
        let huge = format!(
            "[{}]",
            vec![r#"{"action":"remove-snapshot-ref","ref-name":"x"}"#; 100_000].join(",")
        );
        assert!(huge.len() > MAX_UPDATES_BYTES);
        let (kind, message) = kind_and_message(updates(huge.as_bytes(), LOC));
        assert_eq!(kind, ErrorKind::PluginLimit);
        assert!(message.contains("bytes"), "{message}");
        // Under the byte bound, over the count bound.
        let many = format!("[{}]", vec!["{}"; MAX_UPDATES + 1].join(","));
        let (_, message) = kind_and_message(updates(many.as_bytes(), LOC));
        assert!(message.contains("more than 1024 updates"), "{message}");
        let many = format!("[{}]", vec!["{}"; MAX_REQUIREMENTS + 1].join(","));
        let (_, message) = kind_and_message(requirements(many.as_bytes(), UUID));
        assert!(message.contains("more than 64 requirements"), "{message}");
        // Deep nesting: refused by the parser's depth limit, not by the stack.
        let deep = format!(
            r#"[{{"action":"set-properties","updates":{{"a":{}1{}}}}}]"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        let (kind, message) = kind_and_message(updates(deep.as_bytes(), LOC));
        assert_eq!(kind, ErrorKind::PluginLimit);
        assert!(message.contains("recursion limit"), "{message}");
        // Not JSON, or not UTF-8.
        let (kind, _) = kind_and_message(updates(b"\xff\xfe", LOC));
        assert_eq!(kind, ErrorKind::PluginLimit);
    }

    #[test]
    fn create_requests() {
        let r = create_request(
            br#"{"name":"ignored","schema":{"type":"struct","fields":[]},"properties":{"a":"b"},"stage-create":false}"#,
            "t",
        )
        .unwrap();
        assert_eq!(r["name"], "t");
        for (json, needle) in [
            (r#"{"schema":{},"location":"s3://other/t"}"#, "'location'"),
            (r#"{"schema":{},"stage-create":true}"#, "stage-create"),
            (r#"{"name":"t"}"#, "no 'schema'"),
            (
                r#"{"schema":{},"properties":{"write.metadata.path":"s3://x"}}"#,
                "write.metadata.path",
            ),
            (r#"{"schema":{},"unknown":1}"#, "unexpected field 'unknown'"),
            (r#"[]"#, "not a JSON object"),
        ] {
            let (kind, message) = kind_and_message(create_request(json.as_bytes(), "t"));
            assert_eq!(kind, ErrorKind::PluginLimit, "{json}");
            assert!(message.contains(needle), "{json}: {message}");
        }
        let big = vec![b' '; MAX_CREATE_REQUEST_BYTES + 1];
        assert_eq!(
            create_request(&big, "t").unwrap_err().kind(),
            ErrorKind::PluginLimit
        );
    }

    #[test]
    fn the_metadata_member_is_sliced_exactly() {
        let json = br#" { "config" : {"a":"}"} , "metadata-location":"s3://b/t/m/1.json",
            "metadata" : {"format-version":2,"table-uuid":"u","location":"s3://b/t","x":[1,{"y":"\"]}"}],"n":1.50} ,"z":[]}"#;
        let m = top_level_member(json, "metadata").unwrap();
        assert_eq!(
            std::str::from_utf8(m).unwrap(),
            r#"{"format-version":2,"table-uuid":"u","location":"s3://b/t","x":[1,{"y":"\"]}"}],"n":1.50}"#
        );
        assert_eq!(top_level_member(json, "z").unwrap(), b"[]");
        assert_eq!(
            top_level_member(json, "metadata-location").unwrap(),
            br#""s3://b/t/m/1.json""#
        );
        assert!(top_level_member(json, "missing").is_none());
        assert_eq!(
            top_level_member(br#"{"\u006detadata":7}"#, "metadata").unwrap(),
            b"7"
        );
    }
}
