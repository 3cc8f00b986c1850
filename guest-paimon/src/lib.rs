//! Apache Paimon lake-format plugin for the Fluss lake tiering host.
//!
//! Writes Paimon tables the way Fluss 0.9's Java Paimon plugin (Paimon 1.3) does, so that
//! Paimon readers (Java, pypaimon) read them: append (log) tables, bucket-unaware or with
//! fixed buckets, and primary-key tables (merge-tree level-0 files with deduplicate merging
//! and input changelog), partitioned or not. The format logic is plain Rust over the SDK's
//! [`Storage`](fluss_lake_guest_sdk::storage::Storage) trait ([`writer`], [`committer`],
//! [`catalog`]) so it runs natively in tests and benchmarks; [`component`] only adapts it to
//! the WIT exports.

pub mod append_writer;
pub mod binary_row;
pub mod bucket;
pub mod catalog;
pub mod commit_message;
pub mod committer;
pub mod convert;
pub mod manifest;
pub mod merge_tree;
pub mod rows;
pub mod schema;
pub mod snapshot;
pub mod stats;
pub mod table;
pub mod types;
pub mod writer;

/// The format name this plugin writes (Fluss `table.datalake.format`).
pub const FORMAT: &str = "paimon";

#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
mod component {
    //! The WIT exports, over [`HostStorage`].
    use std::cell::RefCell;

    use fluss_lake_guest_sdk::bindings::exports::fluss::lake::{
        catalog, committer, plugin, writer,
    };
    use fluss_lake_guest_sdk::storage::HostStorage;
    use fluss_lake_guest_sdk::wit::{
        CommitResult, CommittedSnapshot, CommitterContext, LakeError, PluginInfo, RowBatch,
        TableInfo, WriteResult, WriterContext,
    };
    use fluss_lake_guest_sdk::{CONTRACT_VERSION, Error};

    use crate::committer::PaimonCommitter;
    use crate::writer::PaimonWriter;

    struct Paimon;

    fn wit<T>(r: fluss_lake_guest_sdk::Result<T>) -> Result<T, LakeError> {
        r.map_err(LakeError::from)
    }

    impl plugin::Guest for Paimon {
        fn info() -> PluginInfo {
            PluginInfo {
                format: crate::FORMAT.to_string(),
                plugin_version: env!("CARGO_PKG_VERSION").to_string(),
                contract_version: CONTRACT_VERSION.to_string(),
            }
        }
        fn table_location(
            table: TableInfo,
            _config: Vec<(String, String)>,
        ) -> Result<String, LakeError> {
            wit(crate::catalog::table_location(&table))
        }
        fn validate_table(
            table: TableInfo,
            _config: Vec<(String, String)>,
        ) -> Result<(), LakeError> {
            wit(crate::catalog::validate_table(&HostStorage, &table))
        }
    }

    impl catalog::Guest for Paimon {
        fn create_table_if_missing(
            table: TableInfo,
            config: Vec<(String, String)>,
        ) -> Result<bool, LakeError> {
            wit(crate::catalog::create_table_if_missing(
                &HostStorage,
                &table,
                &config,
            ))
        }
    }

    struct Writer(RefCell<Option<PaimonWriter<HostStorage>>>);

    impl writer::GuestLakeWriter for Writer {
        fn open(context: WriterContext) -> Result<writer::LakeWriter, LakeError> {
            let w = wit(PaimonWriter::open(&context, HostStorage))?;
            Ok(writer::LakeWriter::new(Writer(RefCell::new(Some(w)))))
        }
        fn write(&self, batch: RowBatch) -> Result<(), LakeError> {
            let mut w = self.0.borrow_mut();
            let w = w
                .as_mut()
                .ok_or_else(|| LakeError::from(Error::invalid_input("writer already completed")))?;
            wit(w.write(batch))
        }
        fn complete(&self) -> Result<WriteResult, LakeError> {
            let w = self.0.borrow_mut().take();
            let w =
                w.ok_or_else(|| LakeError::from(Error::invalid_input("writer already completed")))?;
            wit(w.complete())
        }
    }

    impl writer::Guest for Paimon {
        type LakeWriter = Writer;
    }

    struct Committer(RefCell<PaimonCommitter<HostStorage>>);

    impl committer::GuestLakeCommitter for Committer {
        fn open(context: CommitterContext) -> Result<committer::LakeCommitter, LakeError> {
            Ok(committer::LakeCommitter::new(Committer(RefCell::new(
                PaimonCommitter::new(HostStorage, context.config),
            ))))
        }
        fn to_committable(&self, write_results: Vec<Vec<u8>>) -> Result<Vec<u8>, LakeError> {
            wit(crate::committer::to_committable(&write_results))
        }
        fn commit(
            &self,
            committable: Vec<u8>,
            properties: Vec<(String, String)>,
        ) -> Result<CommitResult, LakeError> {
            wit(self.0.borrow_mut().commit(&committable, &properties))
        }
        fn abort(&self, committable: Vec<u8>) -> Result<(), LakeError> {
            wit(self.0.borrow().abort(&committable))
        }
        fn get_missing_lake_snapshot(
            &self,
            latest: Option<i64>,
        ) -> Result<Option<CommittedSnapshot>, LakeError> {
            wit(self.0.borrow().get_missing_lake_snapshot(latest))
        }
    }

    impl committer::Guest for Paimon {
        type LakeCommitter = Committer;
    }

    // Exported symbols are only meaningful (and only linkable: their names contain `:`) in
    // the WebAssembly component; natively the module is still compiled and linted.
    #[cfg(target_arch = "wasm32")]
    fluss_lake_guest_sdk::export!(Paimon);
}
