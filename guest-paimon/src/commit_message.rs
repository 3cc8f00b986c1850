//! What writers hand to the committer (Paimon's `CommitMessage`, Fluss's `PaimonWriteResult`
//! and `PaimonCommittable`): the new data files and the new changelog files of some buckets,
//! each as the `ManifestEntry` (ADD) the commit will record. Write results and committables
//! share this encoding, so merging write results is concatenating their files.
//!
//! Encoding: `FLPM`, a version byte, the little-endian `u64` length of the data entries'
//! Avro container, that container, then the changelog entries' container (the manifest file
//! format of [`crate::manifest::encode_entries`]). A bare Avro container — what writers of
//! append tables produced before changelog files existed — decodes as data files only, and
//! empty bytes as no files.

use fluss_lake_guest_sdk::avro::AvroCodec;
use fluss_lake_guest_sdk::{Error, Result};

use crate::manifest::{ManifestEntry, decode_entries, encode_entries};

/// A commit message only travels from writers to the committer (through the host), never to
/// another reader; any codec decodes, and deflate is what it has always been written with.
const CODEC: AvroCodec = AvroCodec::Deflate;

const MAGIC: &[u8; 4] = b"FLPM";
const VERSION: u8 = 1;
const HEADER: usize = MAGIC.len() + 1 + 8;
/// Magic bytes of an Avro object container file.
const AVRO_MAGIC: &[u8; 4] = b"Obj\x01";

/// Files to commit.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CommitMessage {
    /// New data files.
    pub data_files: Vec<ManifestEntry>,
    /// New changelog files (`changelog-producer = input`).
    pub changelog_files: Vec<ManifestEntry>,
}

impl CommitMessage {
    /// True when there are no files at all.
    pub fn is_empty(&self) -> bool {
        self.data_files.is_empty() && self.changelog_files.is_empty()
    }

    /// Adds the files of another message.
    pub fn extend(&mut self, other: CommitMessage) {
        self.data_files.extend(other.data_files);
        self.changelog_files.extend(other.changelog_files);
    }

    /// Every file, data files first.
    pub fn all_files(&self) -> impl Iterator<Item = &ManifestEntry> {
        self.data_files.iter().chain(&self.changelog_files)
    }

    /// The binary form (see the module documentation).
    pub fn encode(&self) -> Result<Vec<u8>> {
        let data = encode_entries(&self.data_files, CODEC)?;
        let changelog = encode_entries(&self.changelog_files, CODEC)?;
        let mut out = Vec::with_capacity(HEADER + data.len() + changelog.len());
        out.extend_from_slice(MAGIC);
        out.push(VERSION);
        out.extend_from_slice(&(data.len() as u64).to_le_bytes());
        out.extend_from_slice(&data);
        out.extend_from_slice(&changelog);
        Ok(out)
    }

    /// Decodes [`CommitMessage::encode`]'s output (or a bare container of data entries).
    pub fn decode(bytes: &[u8]) -> Result<CommitMessage> {
        if bytes.is_empty() {
            return Ok(CommitMessage::default());
        }
        if bytes.starts_with(AVRO_MAGIC) {
            return Ok(CommitMessage {
                data_files: decode_entries(bytes)?,
                changelog_files: Vec::new(),
            });
        }
        if bytes.len() < HEADER || &bytes[..MAGIC.len()] != MAGIC {
            return Err(Error::corrupt("not a Paimon commit message"));
        }
        if bytes[MAGIC.len()] != VERSION {
            return Err(Error::corrupt(format!(
                "unsupported commit message version {}",
                bytes[MAGIC.len()]
            )));
        }
        let len = u64::from_le_bytes(bytes[MAGIC.len() + 1..HEADER].try_into().expect("8 bytes"));
        let rest = &bytes[HEADER..];
        let split = usize::try_from(len)
            .ok()
            .filter(|l| *l <= rest.len())
            .ok_or_else(|| Error::corrupt("truncated commit message"))?;
        Ok(CommitMessage {
            data_files: decode_entries(&rest[..split])?,
            changelog_files: decode_entries(&rest[split..])?,
        })
    }

    /// Decodes and concatenates several messages (write results into a committable).
    pub fn merge(encoded: &[Vec<u8>]) -> Result<CommitMessage> {
        let mut all = CommitMessage::default();
        for bytes in encoded {
            all.extend(CommitMessage::decode(bytes)?);
        }
        Ok(all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::tests::entry;

    #[test]
    fn round_trips_and_reads_bare_containers() {
        let m = CommitMessage {
            data_files: vec![
                entry("data-a-0.parquet", 0, 3),
                entry("data-a-2.parquet", 0, 1),
            ],
            changelog_files: vec![entry("changelog-a-1.parquet", 0, 5)],
        };
        let bytes = m.encode().unwrap();
        assert_eq!(CommitMessage::decode(&bytes).unwrap(), m);
        assert_eq!(
            CommitMessage::decode(&[]).unwrap(),
            CommitMessage::default()
        );
        let bare = encode_entries(&m.data_files, CODEC).unwrap();
        let legacy = CommitMessage::decode(&bare).unwrap();
        assert_eq!(legacy.data_files, m.data_files);
        assert!(legacy.changelog_files.is_empty());

        let merged = CommitMessage::merge(&[bytes.clone(), bare, Vec::new()]).unwrap();
        assert_eq!(merged.data_files.len(), 4);
        assert_eq!(merged.changelog_files.len(), 1);
        assert_eq!(merged.all_files().count(), 5);

        assert!(CommitMessage::decode(b"junk").is_err());
        assert!(CommitMessage::decode(&bytes[..bytes.len() / 2]).is_err());
        let empty = CommitMessage::default();
        assert!(empty.is_empty());
        assert_eq!(
            CommitMessage::decode(&empty.encode().unwrap()).unwrap(),
            empty
        );
    }
}
