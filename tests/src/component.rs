//! Running a format plugin's `.wasm` without Fluss: the host's own plugin runtime (engine,
//! limits, scoped storage) against a local warehouse, one instance per split and one for the
//! committer as a tiering round does, with tables described as the host describes them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::RecordBatch;
use fluss_lake_host::plugin::data_plane::HostRows;
use fluss_lake_host::plugin::engine::{EngineSettings, PluginEngine};
use fluss_lake_host::plugin::instance::CommitterHandle;
use fluss_lake_host::plugin::wit::{
    Column, CommitResult, CommitterContext, RowBatch, TableInfo, TablePath, WriteResult,
    WriterContext,
};
use fluss_lake_host::plugin::{Plugin, PluginInstance};
use fluss_lake_host::warehouse::Warehouse;

/// A Fluss table `fluss.<name>` as the host describes it to plugins (lake format `format`).
pub fn table(
    format: &str,
    name: &str,
    columns: &[(&str, &str, bool)],
    primary_keys: &[&str],
    bucket_keys: &[&str],
    buckets: i32,
    partition_keys: &[&str],
) -> TableInfo {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    TableInfo {
        table_id: 1,
        path: TablePath {
            database: "fluss".into(),
            table: name.into(),
        },
        schema_id: 0,
        columns: columns
            .iter()
            .map(|(n, t, nullable)| Column {
                name: n.to_string(),
                data_type: t.to_string(),
                nullable: *nullable,
                comment: None,
            })
            .collect(),
        primary_keys: s(primary_keys),
        bucket_keys: s(bucket_keys),
        num_buckets: buckets,
        partition_keys: s(partition_keys),
        properties: vec![
            ("table.datalake.enabled".into(), "true".into()),
            ("table.datalake.format".into(), format.into()),
        ],
        custom_properties: Vec::new(),
    }
}

/// The commit timestamp (millis) of every row the component tests write.
pub const TS_MS: i64 = 1_700_000_000_123;

/// The `fluss-offsets` commit property of round `round`, as the host passes it.
pub fn offsets_property(round: usize) -> Vec<(String, String)> {
    vec![(
        "fluss-offsets".to_string(),
        format!("/remote/lake/fluss/t-1/metadata/round-{round}.offsets"),
    )]
}

/// Rows in a stable order, for order-insensitive comparison.
pub fn sorted(mut rows: Vec<serde_json::Value>) -> Vec<serde_json::Value> {
    rows.sort_by_key(|r| r.to_string());
    rows
}

/// Adds the system columns a split writes (`__bucket`, `__offset`, `__timestamp` in micros)
/// to canonical rows written at [`TS_MS`] from `first_offset` on.
pub fn with_system(
    rows: Vec<serde_json::Value>,
    bucket: i32,
    first_offset: i64,
) -> Vec<serde_json::Value> {
    rows.into_iter()
        .enumerate()
        .map(|(k, mut r)| {
            r["__bucket"] = serde_json::json!(bucket);
            r["__offset"] = serde_json::json!(first_offset + k as i64);
            r["__timestamp"] = serde_json::json!(TS_MS * 1000);
            r
        })
        .collect()
}

/// One split of a round: its bucket, partition name and batches.
pub struct SplitInput {
    pub bucket: i32,
    pub partition: Option<String>,
    pub batches: Vec<RowBatch>,
}

/// A row batch as the host sends it: Arrow IPC plus per-row change types (empty = all
/// appends), offsets and timestamps (millis).
pub fn row_batch(
    batch: &RecordBatch,
    change_types: Vec<u8>,
    first_offset: i64,
    ts: i64,
) -> RowBatch {
    let n = batch.num_rows() as i64;
    RowBatch {
        ipc: fluss_lake_host::plugin::data_plane::encode_ipc(batch).expect("ipc"),
        change_types,
        log_offsets: (first_offset..first_offset + n).collect(),
        timestamps: vec![ts; n as usize],
    }
}

/// The writer context of a round's only split, bucket 0 of an unpartitioned `table`.
pub fn bucket_zero_context(table: &TableInfo, config: Vec<(String, String)>) -> WriterContext {
    WriterContext {
        table: table.clone(),
        bucket: 0,
        partition_id: None,
        partition_name: None,
        split_index: 0,
        round_timestamp: 0,
        config,
    }
}

/// `batch` as the host keeps it for a `batch-writer` (contract 0.3.8): append-only rows with
/// consecutive offsets from `first_offset`, committed at `ts`.
pub fn host_rows(batch: &RecordBatch, first_offset: i64, ts: i64) -> HostRows {
    host_changes(batch, Vec::new(), first_offset, ts)
}

/// [`host_rows`] with these change types (empty: every row `+A`).
pub fn host_changes(
    batch: &RecordBatch,
    change_types: Vec<u8>,
    first_offset: i64,
    ts: i64,
) -> HostRows {
    let n = batch.num_rows() as i64;
    HostRows::from_parts(
        vec![batch.clone()],
        change_types,
        (first_offset..first_offset + n).collect(),
        vec![ts; n as usize],
    )
    .expect("one offset and timestamp per row")
}

/// A split's batches as the host hands them to a plugin: row batches for its `writer`, or
/// batches it keeps for its `batch-writer` (contract 0.3.8).
enum Streamed<R, H> {
    Rows(R),
    Host(H),
}

/// Runs a format plugin's `.wasm` in the host's plugin runtime (the same engine, limits and
/// scoped storage the host uses), one instance per split and one for the committer, as a
/// tiering round does.
pub struct ComponentDriver {
    plugin: Arc<Plugin>,
    /// A local directory unless [`ComponentDriver::on_store`] gave another warehouse.
    pub warehouse: PathBuf,
    /// The warehouse as the host opens it: a directory or an `s3://` URL, and its options.
    store: (String, fluss_lake_host::warehouse::StorageOptions),
    pub config: Vec<(String, String)>,
}

impl ComponentDriver {
    pub async fn load(wasm: &Path, warehouse: &Path) -> Self {
        Self::load_with_memory(wasm, warehouse, 1 << 30).await
    }

    /// Every instance limited to `memory_limit` bytes of linear memory.
    pub async fn load_with_memory(wasm: &Path, warehouse: &Path, memory_limit: usize) -> Self {
        Self::load_with_settings(
            wasm,
            warehouse,
            EngineSettings {
                instance_memory_limit: memory_limit,
                ..EngineSettings::default()
            },
        )
        .await
    }

    /// The plugin in an engine with `settings` (the suite's compiled-plugin cache unless
    /// they name one), e.g. the host's defaults, as the benchmark's WASM-tax figure runs it.
    pub async fn load_with_settings(
        wasm: &Path,
        warehouse: &Path,
        mut settings: EngineSettings,
    ) -> Self {
        settings.cache.get_or_insert_with(crate::host::plugin_cache);
        let engine = Arc::new(PluginEngine::new(settings).unwrap());
        let plugin = Plugin::load(engine, wasm).await.expect("plugin loads");
        std::fs::create_dir_all(warehouse).unwrap();
        ComponentDriver {
            plugin: Arc::new(plugin),
            warehouse: warehouse.to_path_buf(),
            store: (warehouse.display().to_string(), Default::default()),
            config: vec![("warehouse".to_string(), warehouse.display().to_string())],
        }
    }

    /// The same driver writing to the warehouse `url` (e.g. `s3://…`) opened with `options`.
    pub fn on_store(
        mut self,
        url: &str,
        options: fluss_lake_host::warehouse::StorageOptions,
    ) -> Self {
        self.store = (url.to_string(), options);
        self.config = vec![("warehouse".to_string(), url.to_string())];
        self
    }

    async fn instance(&self, table: &TableInfo) -> PluginInstance {
        let mut i = PluginInstance::new(&self.plugin, "test".into())
            .await
            .unwrap();
        let location = self.location(table);
        i.set_storage(
            Warehouse::open(&self.store.0, &self.store.1)
                .unwrap()
                .scope(&location)
                .unwrap(),
        );
        i
    }

    /// Writes one split of `batches` (made as they are sent, so the test holds one at a
    /// time), commits it with `properties`; the write result's file bytes and the commit.
    pub async fn streamed_round(
        &self,
        table: &TableInfo,
        batches: impl Iterator<Item = RowBatch>,
        properties: Vec<(String, String)>,
    ) -> (u64, CommitResult) {
        let (result, _) = self
            .write_streamed(
                table,
                Streamed::<_, std::iter::Empty<HostRows>>::Rows(batches),
            )
            .await;
        self.commit_alone(table, result, properties).await
    }

    /// [`streamed_round`](Self::streamed_round) through the plugin's `batch-writer`: the host
    /// keeps each batch (rows with their offsets and commit times) and lends it to the plugin.
    pub async fn streamed_native_round(
        &self,
        table: &TableInfo,
        batches: impl Iterator<Item = HostRows>,
        properties: Vec<(String, String)>,
    ) -> (u64, CommitResult) {
        let (result, _) = self
            .write_streamed(
                table,
                Streamed::<std::iter::Empty<RowBatch>, _>::Host(batches),
            )
            .await;
        self.commit_alone(table, result, properties).await
    }

    /// Writes one split (bucket 0) of `batches`, each batch with the change type of each of its
    /// rows (empty: every row `+A`), whose rows have consecutive offsets from 0 and commit time
    /// `ts`, through the plugin's `writer` (the plugin encodes its files) or, when `native`, its
    /// `batch-writer` (contract 0.3.8: the host keeps the rows and encodes the files the plugin
    /// lays out); the write result, and the bytes of linear memory the writer's instance grew
    /// to (what the plugin took into WebAssembly).
    pub async fn write_changes(
        &self,
        table: &TableInfo,
        batches: &[(RecordBatch, Vec<u8>)],
        ts: i64,
        native: bool,
    ) -> (WriteResult, usize) {
        let firsts = batches.iter().scan(0i64, |offset, (b, kinds)| {
            let first = *offset;
            *offset += b.num_rows() as i64;
            Some((b, kinds.clone(), first))
        });
        if native {
            let rows = firsts.map(|(b, kinds, first)| host_changes(b, kinds, first, ts));
            self.write_streamed(table, Streamed::<std::iter::Empty<RowBatch>, _>::Host(rows))
                .await
        } else {
            let rows = firsts.map(|(b, kinds, first)| row_batch(b, kinds, first, ts));
            self.write_streamed(table, Streamed::<_, std::iter::Empty<HostRows>>::Rows(rows))
                .await
        }
    }

    /// One split of bucket 0 written through `writer` or `batch-writer`; with the bytes of
    /// linear memory its instance grew to.
    async fn write_streamed(
        &self,
        table: &TableInfo,
        batches: Streamed<impl Iterator<Item = RowBatch>, impl Iterator<Item = HostRows>>,
    ) -> (WriteResult, usize) {
        let mut i = self.instance(table).await;
        let context = bucket_zero_context(table, self.config.clone());
        let result = match batches {
            Streamed::Rows(batches) => {
                let w = i.open_writer(&context).await.unwrap();
                for b in batches {
                    i.write(&w, &b).await.unwrap();
                }
                i.complete(w).await.unwrap()
            }
            Streamed::Host(batches) => {
                assert!(i.writes_batches(), "the plugin exports batch-writer");
                let w = i.open_batch_writer(&context).await.unwrap();
                for b in batches {
                    i.write_batch(&w, b).await.unwrap();
                }
                i.complete_batch_writer(w).await.unwrap()
            }
        };
        (result, i.memory_bytes())
    }

    /// Commits one split's write result with `properties`: its file bytes and the commit.
    async fn commit_alone(
        &self,
        table: &TableInfo,
        result: WriteResult,
        properties: Vec<(String, String)>,
    ) -> (u64, CommitResult) {
        let (mut i, c) = self.committer(table).await;
        let committable = i.to_committable(&c, &[result.payload]).await.unwrap();
        let commit = i.commit(&c, &committable, &properties, None).await.unwrap();
        (result.file_bytes, commit)
    }

    /// An instance for `table` with a committer open in it.
    async fn committer(&self, table: &TableInfo) -> (PluginInstance, CommitterHandle) {
        let mut i = self.instance(table).await;
        let c = i
            .open_committer(&CommitterContext {
                table: table.clone(),
                config: self.config.clone(),
                tiering_config: Vec::new(),
            })
            .await
            .unwrap();
        (i, c)
    }

    /// The table's location as the host composes it from the plugin's layout.
    fn location(&self, table: &TableInfo) -> String {
        self.plugin
            .layout()
            .location(&table.path.database, &table.path.table)
            .unwrap()
    }

    /// The table's directory.
    pub async fn table_dir(&self, table: &TableInfo) -> PathBuf {
        self.warehouse.join(self.location(table))
    }

    pub async fn create(&self, table: &TableInfo) -> bool {
        self.try_create(table).await.unwrap()
    }

    /// `create-table-if-missing` then `validate-table`; the plugin's error as text.
    pub async fn try_create(&self, table: &TableInfo) -> Result<bool, String> {
        let mut i = self.instance(table).await;
        let created = i
            .create_table_if_missing(table, &self.config)
            .await
            .map_err(|e| e.to_string())?;
        i.validate_table(table, &self.config)
            .await
            .map_err(|e| e.to_string())?;
        Ok(created)
    }

    /// Writes the splits and commits them with `properties`.
    pub async fn round(
        &self,
        table: &TableInfo,
        splits: Vec<SplitInput>,
        properties: Vec<(String, String)>,
    ) -> CommitResult {
        let mut results = Vec::new();
        for (k, split) in splits.into_iter().enumerate() {
            let mut i = self.instance(table).await;
            let context = WriterContext {
                table: table.clone(),
                bucket: split.bucket,
                partition_id: split.partition.as_ref().map(|_| 1),
                partition_name: split.partition.clone(),
                split_index: k as u32,
                round_timestamp: 0,
                config: self.config.clone(),
            };
            let w = i.open_writer(&context).await.unwrap();
            for b in &split.batches {
                i.write(&w, b).await.unwrap();
            }
            results.push(i.complete(w).await.unwrap().payload);
        }
        let (mut i, c) = self.committer(table).await;
        let committable = i.to_committable(&c, &results).await.unwrap();
        // What Fluss would know had it registered every commit so far.
        let base = i
            .get_missing_lake_snapshot(&c, None)
            .await
            .unwrap()
            .map(|s| s.snapshot_id);
        i.commit(&c, &committable, &properties, base).await.unwrap()
    }

    /// `get-missing-lake-snapshot(latest)`: the snapshot id and its `fluss-offsets`.
    pub async fn missing_snapshot(
        &self,
        table: &TableInfo,
        latest: Option<i64>,
    ) -> Option<(i64, Option<String>)> {
        let (mut i, c) = self.committer(table).await;
        i.get_missing_lake_snapshot(&c, latest)
            .await
            .unwrap()
            .map(|s| {
                let offsets = s
                    .properties
                    .iter()
                    .find(|(k, _)| k == "fluss-offsets")
                    .map(|(_, v)| v.clone());
                (s.snapshot_id, offsets)
            })
    }
}

/// The adversarial plugin's `catalog-<attack>` mode run against a table kept by `catalog`
/// (storage `storage`): an instance commits once and must fail; asserts that the host refused
/// the attack (the evil plugin reports `catalog attack <attack> refused: <why>`) and that the
/// reason names `refused_as`.
pub async fn assert_catalog_attack_refused(
    evil: &Plugin,
    table_name: &str,
    storage: fluss_lake_host::plugin::storage::ScopedStorage,
    catalog: fluss_lake_host::plugin::table_catalog::TableCatalogScope,
    attack: &str,
    refused_as: &str,
) {
    let mut i = PluginInstance::new(evil, format!("catalog attack {attack}"))
        .await
        .unwrap();
    i.set_storage(storage);
    i.set_catalog(catalog);
    let mut t = table(
        "evil",
        table_name,
        crate::all_types::ALL_TYPES,
        &[],
        &[],
        1,
        &[],
    );
    t.custom_properties = vec![("evil.mode".into(), format!("catalog-{attack}"))];
    let c = i
        .open_committer(&CommitterContext {
            table: t,
            config: Vec::new(),
            tiering_config: Vec::new(),
        })
        .await
        .unwrap();
    let e = i
        .commit(&c, b"", &vec![("fluss-offsets".into(), "/o".into())], None)
        .await
        .expect_err(&format!("attack {attack} must fail"));
    assert_eq!(
        e.kind(),
        fluss_lake_host::ErrorKind::Plugin,
        "{attack}: {e}"
    );
    let message = e.to_string();
    assert!(
        message.contains(&format!("catalog attack {attack} refused")),
        "{attack}: the host refused it: {message}"
    );
    assert!(
        message.contains(refused_as),
        "{attack}: the refusal says why ({refused_as}): {message}"
    );
}
