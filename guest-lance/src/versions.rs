//! Dataset versions: `_versions/<v>.manifest` files (Lance's V1 naming, `<v>` in decimal, or
//! V2 naming, `u64::MAX - v` as 20 digits so that a listing finds the newest first), the
//! manifest file layout (`[u32 len][Manifest protobuf]`, then the manifest position, format
//! version 0.2 and `LANC`), and transaction files (`_transactions/<read_version>-<uuid>.txn`,
//! a bare `Transaction` protobuf).
//!
//! A version is published with put-if-absent through the SDK's commit kit: of two writers
//! racing for version `v` exactly one creates its manifest, the other retries on top of it.

use fluss_lake_guest_sdk::commit::{self, Published};
use fluss_lake_guest_sdk::storage::Storage;
use fluss_lake_guest_sdk::{Error, Result, clock};
use prost::Message;

use crate::file_writer::{FILE_MAJOR_VERSION, FILE_MINOR_VERSION};
use crate::proto::lance::table as pb;

/// Transaction property naming who committed (Java: `commit-user`).
pub const COMMIT_USER: &str = "commit-user";
/// Commit retries after the first attempt: Lance's `commit_retries` default (20) is for
/// writers that rebase without re-planning; a tiering round re-plans only its manifest.
pub const DEFAULT_COMMIT_RETRIES: u32 = 20;

/// The naming new datasets get: V1, as Fluss's Java Lance catalog (Lance 0.33) creates them.
pub const NEW_DATASET_NAMING: Naming = Naming::V1;

pub const VERSIONS_DIR: &str = "_versions";
pub const TRANSACTIONS_DIR: &str = "_transactions";
const MAGIC: &[u8; 4] = b"LANC";
/// The (major, minor) Lance writes after a manifest (`lance_file::format::{MAJOR,MINOR}_VERSION`).
const MANIFEST_FORMAT: (u16, u16) = (0, 2);

/// How a dataset names its manifests; new versions keep the dataset's scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Naming {
    V1,
    V2,
}

impl Naming {
    pub fn path(self, version: u64) -> String {
        match self {
            Naming::V1 => format!("{VERSIONS_DIR}/{version}.manifest"),
            Naming::V2 => format!("{VERSIONS_DIR}/{:020}.manifest", u64::MAX - version),
        }
    }

    /// The version a manifest file name denotes, and its naming scheme.
    pub fn parse(file_name: &str) -> Option<(u64, Naming)> {
        let stem = file_name.strip_suffix(".manifest")?;
        if !stem.bytes().all(|b| b.is_ascii_digit()) || stem.is_empty() {
            return None;
        }
        let n: u64 = stem.parse().ok()?;
        if stem.len() == 20 {
            Some((u64::MAX - n, Naming::V2))
        } else {
            Some((n, Naming::V1))
        }
    }
}

/// The newest version of the dataset and its naming, or `None` when the dataset has none.
pub fn latest(storage: &dyn Storage) -> Result<Option<(u64, Naming)>> {
    Ok(storage
        .list(VERSIONS_DIR)?
        .iter()
        .filter_map(|m| Naming::parse(m.path.rsplit('/').next().unwrap_or("")))
        .max_by_key(|(v, _)| *v))
}

/// Every version of the dataset, oldest first.
pub fn all(storage: &dyn Storage) -> Result<Vec<(u64, Naming)>> {
    let mut v: Vec<(u64, Naming)> = storage
        .list(VERSIONS_DIR)?
        .iter()
        .filter_map(|m| Naming::parse(m.path.rsplit('/').next().unwrap_or("")))
        .collect();
    v.sort_by_key(|(v, _)| *v);
    Ok(v)
}

/// A manifest file: `index_section` (an `IndexSection` protobuf, carried over from the
/// previous version when the dataset has indices) is written before the manifest, which
/// records its position.
pub fn encode_manifest(manifest: &pb::Manifest, index_section: Option<&[u8]>) -> Vec<u8> {
    let mut manifest = manifest.clone();
    let mut out = Vec::new();
    manifest.index_section = None;
    if let Some(section) = index_section {
        manifest.index_section = Some(0);
        out.extend_from_slice(&(section.len() as u32).to_le_bytes());
        out.extend_from_slice(section);
    }
    let pos = out.len() as u64;
    let body = manifest.encode_to_vec();
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&body);
    out.extend_from_slice(&pos.to_le_bytes());
    out.extend_from_slice(&MANIFEST_FORMAT.0.to_le_bytes());
    out.extend_from_slice(&MANIFEST_FORMAT.1.to_le_bytes());
    out.extend_from_slice(MAGIC);
    out
}

/// The raw `IndexSection` message a manifest file holds at `pos`.
pub fn index_section(bytes: &[u8], pos: u64) -> Result<Vec<u8>> {
    let pos = pos as usize;
    let len = bytes
        .get(pos..pos + 4)
        .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")) as usize)
        .ok_or_else(|| Error::corrupt("Lance manifest: index section out of range"))?;
    bytes
        .get(pos + 4..pos + 4 + len)
        .map(<[u8]>::to_vec)
        .ok_or_else(|| Error::corrupt("Lance manifest: index section out of range"))
}

pub fn decode_manifest(bytes: &[u8]) -> Result<pb::Manifest> {
    let bad = |what: &str| Error::corrupt(format!("Lance manifest: {what}"));
    if bytes.len() < 20 || !bytes.ends_with(MAGIC) {
        return Err(bad("no LANC footer"));
    }
    let n = bytes.len();
    let pos = u64::from_le_bytes(bytes[n - 16..n - 8].try_into().expect("8 bytes")) as usize;
    if pos + 4 > n - 16 {
        return Err(bad("manifest position out of range"));
    }
    let len = u32::from_le_bytes(bytes[pos..pos + 4].try_into().expect("4 bytes")) as usize;
    let body = &bytes[pos + 4..n - 16];
    if body.len() != len {
        return Err(bad("length does not match"));
    }
    pb::Manifest::decode(body).map_err(|e| bad(&e.to_string()))
}

/// Reads the manifest of `version`.
pub fn read(storage: &dyn Storage, version: u64, naming: Naming) -> Result<pb::Manifest> {
    decode_manifest(&storage.get(&naming.path(version))?)
        .map_err(|e| e.context(naming.path(version)))
}

/// The path and bytes of `manifest` (whose `version` is set), as the commit kit publishes
/// them.
pub fn proposal(
    manifest: &pb::Manifest,
    index_section: Option<&[u8]>,
    naming: Naming,
) -> (String, Vec<u8>) {
    (
        naming.path(manifest.version),
        encode_manifest(manifest, index_section),
    )
}

/// Publishes `manifest` (whose `version` is set) unless that version exists: `conflict`.
/// Commits on an existing dataset go through the commit kit.
pub fn publish(
    storage: &dyn Storage,
    manifest: &pb::Manifest,
    index_section: Option<&[u8]>,
    naming: Naming,
) -> Result<()> {
    let (path, bytes) = proposal(manifest, index_section, naming);
    match commit::publish(storage, &path, &bytes)? {
        Published::Ours => Ok(()),
        Published::Theirs => Err(Error::conflict(format!(
            "Lance version {} was committed concurrently",
            manifest.version
        ))),
    }
}

/// The newest version as a commit builds on it.
pub struct Head {
    pub version: u64,
    pub naming: Naming,
    pub manifest: pb::Manifest,
    /// The index section to carry over, if the dataset has indices.
    pub index_section: Option<Vec<u8>>,
}

/// Reads the newest version; `not-found` when the dataset has none.
pub fn read_head(storage: &dyn Storage) -> Result<Head> {
    let (version, naming) =
        latest(storage)?.ok_or_else(|| Error::not_found("Lance dataset has no versions"))?;
    let raw = storage.get(&naming.path(version))?;
    let manifest = decode_manifest(&raw).map_err(|e| e.context(naming.path(version)))?;
    let index_section = match manifest.index_section {
        Some(pos) => Some(index_section(&raw, pos)?),
        None => None,
    };
    Ok(Head {
        version,
        naming,
        manifest,
        index_section,
    })
}

/// A transaction file: its name (relative to `_transactions/`), path and bytes.
pub fn transaction_file(tx: &pb::Transaction) -> (String, String, Vec<u8>) {
    let name = format!("{}-{}.txn", tx.read_version, tx.uuid);
    (
        name.clone(),
        format!("{TRANSACTIONS_DIR}/{name}"),
        tx.encode_to_vec(),
    )
}

/// Writes a transaction file; returns its name (relative to `_transactions/`).
pub fn write_transaction(storage: &dyn Storage, tx: &pb::Transaction) -> Result<String> {
    let (name, path, bytes) = transaction_file(tx);
    storage.put(&path, &bytes)?;
    Ok(name)
}

/// Reads the transaction a manifest refers to, if any.
pub fn read_transaction(
    storage: &dyn Storage,
    manifest: &pb::Manifest,
) -> Result<Option<pb::Transaction>> {
    if manifest.transaction_file.is_empty() {
        return Ok(None);
    }
    let path = format!("{TRANSACTIONS_DIR}/{}", manifest.transaction_file);
    let bytes = match storage.get_opt(&path)? {
        Some(b) => b,
        None => return Ok(None),
    };
    pb::Transaction::decode(bytes.as_slice())
        .map(Some)
        .map_err(|e| Error::corrupt(format!("Lance transaction {path}: {e}")))
}

/// This plugin's `writer_version` in the manifests it writes.
pub fn writer_version() -> pb::manifest::WriterVersion {
    pb::manifest::WriterVersion {
        library: "fluss-lake-lance".to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        prerelease: None,
        build_metadata: None,
    }
}

pub fn now() -> prost_types::Timestamp {
    let ms = clock::now_millis();
    prost_types::Timestamp {
        seconds: ms.div_euclid(1000),
        nanos: (ms.rem_euclid(1000) * 1_000_000) as i32,
    }
}

/// A fragment of one data file (`path` relative to `data/`) holding the fields `field_ids`
/// in column order.
pub fn new_fragment(
    id: u64,
    path: String,
    rows: u64,
    size: u64,
    field_ids: &[i32],
) -> pb::DataFragment {
    pb::DataFragment {
        id,
        files: vec![pb::DataFile {
            path,
            fields: field_ids.to_vec(),
            column_indices: (0..field_ids.len() as i32).collect(),
            file_major_version: FILE_MAJOR_VERSION,
            file_minor_version: FILE_MINOR_VERSION,
            file_size_bytes: size,
            base_id: None,
        }],
        physical_rows: rows,
        ..Default::default()
    }
}
