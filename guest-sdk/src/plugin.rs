//! The one adapter from a format's plain-Rust implementation to the WIT exports.
//!
//! A format crate implements [`LakeFormat`] (with a [`FormatWriter`] and a
//! [`FormatCommitter`]) over the [`Storage`](crate::storage::Storage) trait, so the same code
//! runs natively in tests and benchmarks; [`Component`] turns any such format into the
//! `fluss:lake/lake-plugin` exports, and [`export_lake_format!`](crate::export_lake_format)
//! exports it. Keeping the adapter here means resource state handling, the "already completed"
//! checks and error conversion are written once for every format.

use std::cell::RefCell;
use std::marker::PhantomData;

use crate::bindings::exports::fluss::lake::{
    batch_writer, bucket_replace, catalog, committer, maintenance, plugin, writer,
};
use crate::data_plane::{HostBatch, SplitRows};
use crate::error::{Error, Result};
use crate::ipc::decode_row_batch;
use crate::layout::Layout;
use crate::replace::ReplaceSet;
use crate::storage::{HostStorage, Storage};
use crate::wit::{
    BucketRef, CommitResult, CommittedSnapshot, CommitterContext, LakeError, MaintenanceReport,
    MaintenanceRequest, PluginInfo, RowBatch, TableInfo, WriteResult, WriterContext,
};

/// A lake format: its identity and its table-level operations.
pub trait LakeFormat: 'static {
    /// The `table.datalake.format` value this plugin serves.
    const FORMAT: &'static str;
    /// The plugin's own version.
    const VERSION: &'static str;
    /// Writes one bucket's rows of a round.
    type Writer: FormatWriter<HostStorage> + 'static;
    /// Commits a round's write results.
    type Committer: FormatCommitter<HostStorage> + 'static;

    /// Where the format keeps its tables; the host composes each table's location from it.
    const LAYOUT: Layout;
    /// Checks that the table exists in the lake and can be tiered by this plugin.
    fn validate_table(
        storage: &HostStorage,
        table: &TableInfo,
        config: &[(String, String)],
    ) -> Result<()>;
    /// Creates the lake table when it does not exist; `true` when created.
    fn create_table_if_missing(
        storage: &HostStorage,
        table: &TableInfo,
        config: &[(String, String)],
    ) -> Result<bool>;
    /// Expires snapshots and compacts the table as `request` asks (the WIT `maintenance`
    /// export); `config` is the plugin configuration. A table operation of its own, apart
    /// from the committer, so that a format's maintenance and its commits import the SDK's
    /// commit kit rather than each other. Formats that do not maintain their tables keep this
    /// default: `unsupported`, which the host logs once and otherwise ignores.
    fn maintain(
        storage: &HostStorage,
        table: &TableInfo,
        config: &[(String, String)],
        request: &MaintenanceRequest,
    ) -> Result<MaintenanceReport> {
        let _ = (storage, table, config, request);
        Err(Error::unsupported(
            "this plugin does not maintain tables (no snapshot expiry or compaction)",
        ))
    }
}

/// A format's writer for one split, over any [`Storage`] (the host's in the component,
/// local or in-memory storage in native tests).
///
/// The host opens it one of two ways: `open` then `write`s of row batches (the WIT `writer`
/// export), or, when it keeps the rows itself (the `batch-writer` export, contract 0.3.8),
/// `open_batches` then `write_rows` of [`SplitRows::Host`]. A format whose files the host may
/// encode overrides `open_batches` to lay its files out for the host
/// ([`crate::parquet::Encoding::Host`]); any other takes the rows into guest memory with
/// [`SplitRows::into_decoded`] and encodes them itself.
pub trait FormatWriter<S: Storage>: Sized {
    /// Opens a writer whose rows arrive in guest memory.
    fn open(context: &WriterContext, storage: S) -> Result<Self>;

    /// Opens a writer whose rows the host keeps ([`SplitRows::Host`]). Defaults to `open`.
    fn open_batches(context: &WriterContext, storage: S) -> Result<Self> {
        Self::open(context, storage)
    }

    /// Takes a batch of the split's rows, in log order.
    fn write_rows(&mut self, rows: SplitRows<'_>) -> Result<()>;

    /// Takes a row batch (the WIT `writer.write`): decoded, then [`write_rows`](Self::write_rows).
    fn write(&mut self, batch: RowBatch) -> Result<()> {
        self.write_rows(SplitRows::Decoded(decode_row_batch(batch)?))
    }

    fn complete(self) -> Result<WriteResult>;
}

/// A format's committer for one table round, over any [`Storage`].
pub trait FormatCommitter<S: Storage>: Sized {
    fn open(context: CommitterContext, storage: S) -> Result<Self>;
    fn to_committable(&self, write_results: &[Vec<u8>]) -> Result<Vec<u8>>;
    /// Publishes on a base with no tiering snapshot newer than `tiered_base` (see the WIT
    /// contract): every attempt reads its base, then calls
    /// [`check_tiered_base`](Self::check_tiered_base), then publishes on that base.
    fn commit(
        &mut self,
        committable: &[u8],
        properties: &[(String, String)],
        tiered_base: Option<i64>,
    ) -> Result<CommitResult>;
    fn abort(&self, committable: &[u8]) -> Result<()>;
    fn get_missing_lake_snapshot(&self, latest: Option<i64>) -> Result<Option<CommittedSnapshot>>;

    /// Fails with a `conflict` that must not be retried when a snapshot committed by tiering
    /// is newer than `tiered_base`: another round tiered offsets this one holds too.
    fn check_tiered_base(&self, tiered_base: Option<i64>) -> Result<()> {
        crate::commit::refuse_overlap(tiered_base, self.get_missing_lake_snapshot(tiered_base)?)
    }

    /// Whether this format can replace buckets of the committer's table (the WIT
    /// `bucket-replace.check-replace`). Formats that cannot keep this default: `unsupported`.
    fn check_replace(&self) -> Result<()> {
        Err(Error::unsupported(
            "this plugin cannot replace a bucket (rebuild a primary-key bucket from a KV snapshot)",
        ))
    }

    /// As [`commit`](Self::commit), except that each bucket of `replace` holds only the
    /// committable's files in the published snapshot; the rules are [`crate::replace`]'s.
    /// `replace` was validated against the table (see [`ReplaceSet`]).
    fn commit_replacing(
        &mut self,
        committable: &[u8],
        properties: &[(String, String)],
        tiered_base: Option<i64>,
        replace: &ReplaceSet,
    ) -> Result<CommitResult> {
        let _ = (committable, properties, tiered_base, replace);
        self.check_replace()?;
        Err(Error::internal(
            "check_replace accepts but commit_replacing is not implemented",
        ))
    }
}

/// The WIT exports of format `F`; export it with [`export_lake_format!`](crate::export_lake_format).
pub struct Component<F>(PhantomData<F>);

fn wit<T>(r: Result<T>) -> std::result::Result<T, LakeError> {
    r.map_err(LakeError::from)
}

fn completed() -> LakeError {
    LakeError::from(Error::invalid_input("writer already completed"))
}

impl<F: LakeFormat> plugin::Guest for Component<F> {
    fn info() -> PluginInfo {
        PluginInfo {
            format: F::FORMAT.to_string(),
            plugin_version: F::VERSION.to_string(),
            contract_version: crate::CONTRACT_VERSION.to_string(),
            layout: F::LAYOUT.to_wit(),
        }
    }
    fn validate_table(
        table: TableInfo,
        config: Vec<(String, String)>,
    ) -> std::result::Result<(), LakeError> {
        wit(F::validate_table(&HostStorage, &table, &config))
    }
}

impl<F: LakeFormat> catalog::Guest for Component<F> {
    fn create_table_if_missing(
        table: TableInfo,
        config: Vec<(String, String)>,
    ) -> std::result::Result<bool, LakeError> {
        wit(F::create_table_if_missing(&HostStorage, &table, &config))
    }
}

/// The `lake-writer` resource of format `F`: the writer until `complete` takes it.
pub struct WriterResource<W>(RefCell<Option<W>>);

impl<W: FormatWriter<HostStorage> + 'static> writer::GuestLakeWriter for WriterResource<W> {
    fn open(context: WriterContext) -> std::result::Result<writer::LakeWriter, LakeError> {
        let w = wit(W::open(&context, HostStorage))?;
        Ok(writer::LakeWriter::new(WriterResource(RefCell::new(Some(
            w,
        )))))
    }
    fn write(&self, batch: RowBatch) -> std::result::Result<(), LakeError> {
        let mut w = self.0.borrow_mut();
        wit(w.as_mut().ok_or_else(completed)?.write(batch))
    }
    fn complete(&self) -> std::result::Result<WriteResult, LakeError> {
        let w = self.0.borrow_mut().take().ok_or_else(completed)?;
        wit(w.complete())
    }
}

impl<F: LakeFormat> writer::Guest for Component<F> {
    type LakeWriter = WriterResource<F::Writer>;
}

/// The `lake-batch-writer` resource of format `F`: the writer until `complete` takes it.
pub struct BatchWriterResource<W>(RefCell<Option<W>>);

impl<W: FormatWriter<HostStorage> + 'static> batch_writer::GuestLakeBatchWriter
    for BatchWriterResource<W>
{
    fn open(
        context: WriterContext,
    ) -> std::result::Result<batch_writer::LakeBatchWriter, LakeError> {
        let w = wit(W::open_batches(&context, HostStorage))?;
        Ok(batch_writer::LakeBatchWriter::new(BatchWriterResource(
            RefCell::new(Some(w)),
        )))
    }
    fn write(&self, rows: &batch_writer::Batch) -> std::result::Result<(), LakeError> {
        let mut w = self.0.borrow_mut();
        wit(w
            .as_mut()
            .ok_or_else(completed)?
            .write_rows(SplitRows::Host(HostBatch::new(rows))))
    }
    fn complete(&self) -> std::result::Result<WriteResult, LakeError> {
        let w = self.0.borrow_mut().take().ok_or_else(completed)?;
        wit(w.complete())
    }
}

impl<F: LakeFormat> batch_writer::Guest for Component<F> {
    type LakeBatchWriter = BatchWriterResource<F::Writer>;
}

/// The `lake-committer` resource of format `F`.
pub struct CommitterResource<C>(RefCell<C>);

impl<C: FormatCommitter<HostStorage> + 'static> committer::GuestLakeCommitter
    for CommitterResource<C>
{
    fn open(context: CommitterContext) -> std::result::Result<committer::LakeCommitter, LakeError> {
        let c = wit(C::open(context, HostStorage))?;
        Ok(committer::LakeCommitter::new(CommitterResource(
            RefCell::new(c),
        )))
    }
    fn to_committable(
        &self,
        write_results: Vec<Vec<u8>>,
    ) -> std::result::Result<Vec<u8>, LakeError> {
        wit(self.0.borrow().to_committable(&write_results))
    }
    fn commit(
        &self,
        committable: Vec<u8>,
        properties: Vec<(String, String)>,
        tiered_base: Option<i64>,
    ) -> std::result::Result<CommitResult, LakeError> {
        wit(self
            .0
            .borrow_mut()
            .commit(&committable, &properties, tiered_base))
    }
    fn abort(&self, committable: Vec<u8>) -> std::result::Result<(), LakeError> {
        wit(self.0.borrow().abort(&committable))
    }
    fn get_missing_lake_snapshot(
        &self,
        latest: Option<i64>,
    ) -> std::result::Result<Option<CommittedSnapshot>, LakeError> {
        wit(self.0.borrow().get_missing_lake_snapshot(latest))
    }
}

impl<F: LakeFormat> committer::Guest for Component<F> {
    type LakeCommitter = CommitterResource<F::Committer>;
}

impl<F: LakeFormat> maintenance::Guest for Component<F> {
    fn maintain(
        context: CommitterContext,
        request: MaintenanceRequest,
    ) -> std::result::Result<MaintenanceReport, LakeError> {
        wit(F::maintain(
            &HostStorage,
            &context.table,
            &context.config,
            &request,
        ))
    }
}

impl<F: LakeFormat> bucket_replace::Guest for Component<F> {
    fn check_replace(context: CommitterContext) -> std::result::Result<(), LakeError> {
        let committer = wit(F::Committer::open(context, HostStorage))?;
        wit(committer.check_replace())
    }
    fn commit_replacing(
        context: CommitterContext,
        committable: Vec<u8>,
        properties: Vec<(String, String)>,
        tiered_base: Option<i64>,
        replace: Vec<BucketRef>,
    ) -> std::result::Result<CommitResult, LakeError> {
        let set = wit(ReplaceSet::new(&context.table, &replace))?;
        let mut committer = wit(F::Committer::open(context, HostStorage))?;
        wit(committer.check_replace())?;
        wit(committer.commit_replacing(&committable, &properties, tiered_base, &set))
    }
}

/// Exports format type `$format` (a [`LakeFormat`]) as the plugin's WIT exports. Only
/// expands on wasm32: the exported symbols' names contain `:`, which native linkers refuse.
#[macro_export]
macro_rules! export_lake_format {
    ($format:ty) => {
        #[cfg(target_arch = "wasm32")]
        mod __fluss_lake_export {
            type ExportedPlugin = $crate::plugin::Component<$format>;
            $crate::export!(ExportedPlugin);
        }
    };
}
