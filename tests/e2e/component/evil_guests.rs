//! The adversarial guest suite, in the host's own plugin runtime (no Fluss): every
//! misbehaviour of `tests/plugins/evil` ends as a clear error of the kind a caller can match
//! on, the engine keeps serving other plugins, and nothing is written outside the table.
//! `evil_tiering.rs` runs the same plugin inside a live host against a real cluster.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fluss_lake_e2e::all_types::{ALL_TYPES, all_types};
use fluss_lake_e2e::component::{bucket_zero_context, host_rows, row_batch, table};
use fluss_lake_e2e::host::{self, plugin};
use fluss_lake_e2e::unique_name;
use fluss_lake_host::ErrorKind;
use fluss_lake_host::plugin::engine::{EngineSettings, PluginEngine};
use fluss_lake_host::plugin::storage::StorageQuota;
use fluss_lake_host::plugin::wit::{CommitterContext, TableInfo, WriterContext};
use fluss_lake_host::plugin::{Plugin, PluginInstance};
use fluss_lake_host::warehouse::Warehouse;
use tokio_util::sync::CancellationToken;

const CALL_TIMEOUT: Duration = Duration::from_secs(3);
/// The deadline of suites whose misbehaviours must end on another limit: on a loaded machine,
/// filling 256 MiB of guest memory once took longer than [`CALL_TIMEOUT`], and the call ended on
/// its deadline instead of its memory limit.
const UNHURRIED_CALL_TIMEOUT: Duration = Duration::from_secs(60);
const MEMORY_LIMIT: usize = 256 << 20;
const MAX_RESULT: usize = 8 << 20;
const MAX_LIST_ENTRIES: usize = 100;
/// The storage quota of one split of the suite (a round's quota in the host).
const QUOTA_BYTES: u64 = 16 << 20;

struct Suite {
    engine: Arc<PluginEngine>,
    evil: Plugin,
    paimon: Plugin,
    warehouse: PathBuf,
}

impl Suite {
    async fn load() -> Self {
        Self::with_call_timeout(CALL_TIMEOUT).await
    }

    async fn with_call_timeout(call_timeout: Duration) -> Self {
        let engine = Arc::new(
            PluginEngine::new(EngineSettings {
                instance_memory_limit: MEMORY_LIMIT,
                call_timeout,
                max_result_bytes: MAX_RESULT,
                cache: Some(host::plugin_cache()),
                max_list_entries: MAX_LIST_ENTRIES,
                ..EngineSettings::default()
            })
            .unwrap(),
        );
        let warehouse = std::env::temp_dir().join(unique_name("evil-wh"));
        std::fs::create_dir_all(&warehouse).unwrap();
        Suite {
            evil: Plugin::load(engine.clone(), &plugin("evil")).await.unwrap(),
            paimon: Plugin::load(engine.clone(), &plugin("paimon"))
                .await
                .unwrap(),
            engine,
            warehouse,
        }
    }

    fn config(&self) -> Vec<(String, String)> {
        vec![("warehouse".into(), self.warehouse.display().to_string())]
    }

    /// One split of `table` through `plugin` exactly as a round does it: location (composed
    /// by the host from the plugin's layout), scoped storage, writer, one batch, complete.
    async fn split(&self, plugin: &Plugin, table: &TableInfo) -> fluss_lake_host::Result<()> {
        self.split_until(plugin, table, CancellationToken::new())
            .await
    }

    /// [`split`](Self::split), with its calls ended when `cancel` is cancelled.
    async fn split_until(
        &self,
        plugin: &Plugin,
        table: &TableInfo,
        cancel: CancellationToken,
    ) -> fluss_lake_host::Result<()> {
        let (mut i, context) = self.table_instance(plugin, table).await?;
        i.set_cancel(cancel);
        let w = i.open_writer(&context).await?;
        let (batch, _) = all_types(&[1, 2, 3], None);
        i.write(&w, &row_batch(&batch, Vec::new(), 0, 0)).await?;
        i.complete(w).await?;
        Ok(())
    }

    /// One split of `table` through the plugin's `batch-writer` (contract 0.3.8): the host
    /// keeps the batch and lends it to the plugin.
    async fn native_split(
        &self,
        plugin: &Plugin,
        table: &TableInfo,
    ) -> fluss_lake_host::Result<()> {
        let (mut i, context) = self.table_instance(plugin, table).await?;
        let w = i.open_batch_writer(&context).await?;
        let (batch, _) = all_types(&[1, 2, 3], None);
        i.write_batch(&w, host_rows(&batch, 0, 0)).await?;
        i.complete_batch_writer(w).await?;
        Ok(())
    }

    /// An instance of `plugin` scoped to `table` as a round scopes it (location composed by
    /// the host from the plugin's layout, storage with the suite's quota), the table created,
    /// and the context of its split of bucket 0.
    async fn table_instance(
        &self,
        plugin: &Plugin,
        table: &TableInfo,
    ) -> fluss_lake_host::Result<(PluginInstance, WriterContext)> {
        let config = self.config();
        let mut i = PluginInstance::new(plugin, "evil-suite".into()).await?;
        let location = plugin
            .layout()
            .location(&table.path.database, &table.path.table)?;
        i.set_storage(
            Warehouse::open(&self.warehouse.display().to_string(), &Default::default())?
                .scope(&location)?
                .with_quota(StorageQuota::new(QUOTA_BYTES, 1000)),
        );
        i.create_table_if_missing(table, &config).await?;
        Ok((i, bucket_zero_context(table, config)))
    }

    async fn evil_split(&self, mode: &str) -> fluss_lake_host::Error {
        self.evil_split_with(mode, &[], CancellationToken::new())
            .await
    }

    /// An evil split in `mode` with more `evil.*` settings, ended by `cancel`.
    async fn evil_split_with(
        &self,
        mode: &str,
        settings: &[(&str, &str)],
        cancel: CancellationToken,
    ) -> fluss_lake_host::Error {
        let t = evil_table(mode, settings);
        self.split_until(&self.evil, &t, cancel)
            .await
            .expect_err(&format!("mode {mode} must fail"))
    }

    /// A Paimon table written right after (or while) the evil plugin misbehaved.
    async fn good_split(&self, name: &str) {
        let t = table("paimon", name, ALL_TYPES, &[], &[], 1, &[]);
        self.split(&self.paimon, &t)
            .await
            .expect("the Paimon plugin keeps working");
    }
}

/// The evil table of `mode`, named `t_<mode>`, with more `evil.*` settings.
fn evil_table(mode: &str, settings: &[(&str, &str)]) -> TableInfo {
    let mut t = table(
        "evil",
        &format!("t_{}", mode.replace('-', "_")),
        ALL_TYPES,
        &[],
        &[],
        1,
        &[],
    );
    t.custom_properties = vec![("evil.mode".into(), mode.into())];
    for (k, v) in settings {
        t.custom_properties
            .push((format!("evil.{k}"), v.to_string()));
    }
    t
}

/// Every file under `dir`, relative.
fn files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

#[tokio::test]
async fn traps_and_oversized_results_fail_the_call_and_nothing_else() {
    let s = Suite::with_call_timeout(UNHURRIED_CALL_TIMEOUT).await;

    let e = s.evil_split("trap").await;
    assert_eq!(e.kind(), ErrorKind::Plugin, "{e}");
    assert!(e.message().contains("trapped in writer.write"), "{e}");
    // The panic's own words, from the plugin's stderr, on the error's one line.
    assert!(
        e.message().contains("; its stderr ended with: ")
            && e.message()
                .contains("evil plugin: deliberate panic in write")
            && !e.message().contains('\n'),
        "{e}"
    );
    s.good_split("after_trap").await;

    let e = s.evil_split("memory").await;
    assert_eq!(e.kind(), ErrorKind::PluginLimit, "{e}");
    assert!(
        e.message()
            .contains("exceeded its memory limit of 268435456 bytes in writer.write"),
        "{e}"
    );
    s.good_split("after_memory").await;

    // 100 MiB: cut while lifted (the call's hostcall fuel), before the host holds it.
    let e = s.evil_split("huge-result").await;
    assert_eq!(e.kind(), ErrorKind::PluginLimit, "{e}");
    assert!(
        e.message().contains(
            "handed the host more than the 68157440 bytes one call may carry in writer.complete"
        ),
        "{e}"
    );
    s.good_split("after_huge_result").await;

    // 16 MiB: within what a call may carry, over the result limit: refused once lifted.
    let e = s.evil_split("big-result").await;
    assert_eq!(e.kind(), ErrorKind::PluginLimit, "{e}");
    assert!(
        e.message()
            .contains("write result from writer.complete, over the 8388608-byte limit"),
        "{e}"
    );
    s.good_split("after_big_result").await;
}

/// The evil plugin declaring the table layout `<database suffix>;<table suffix>`.
async fn evil_with_layout(layout: &str) -> fluss_lake_host::Result<Plugin> {
    const UNPATCHED: &str = "EVIL-LAYOUT=;########################################";
    let mut to = format!("EVIL-LAYOUT={layout}");
    assert!(to.len() <= UNPATCHED.len());
    while to.len() < UNPATCHED.len() {
        to.push('#');
    }
    let bytes = std::fs::read(plugin("evil")).unwrap();
    let patched = host::patch_marker(&bytes, UNPATCHED.as_bytes(), to.as_bytes());
    let engine = Arc::new(PluginEngine::new(EngineSettings::default()).unwrap());
    let digest = fluss_lake_host::plugin::source::digest(&patched);
    Plugin::from_bytes(engine, Path::new("evil-layout.wasm"), &patched, digest).await
}

/// A plugin cannot name a table location at all: it declares suffixes, the host composes
/// `<database><suffix>/<table><suffix>`, and a layout that could name another table's files
/// (a suffix that extends a name, adds folders, climbs out, or is not plain ASCII) is refused
/// when the plugin loads. (Contract 0.1.0 let a plugin return `fluss.db/orders_v2` for table
/// `orders`, or `fluss.db/victim/x/fluss/orders`, and a prefix check accepted both.)
#[tokio::test]
async fn a_plugin_cannot_name_another_tables_location() {
    for hostile in [
        ";_v2",
        ".db/victim;",
        ";/../../victim",
        "/..;",
        ";.",
        ";.lance/x",
        ";.Été",
        "x;",
    ] {
        let e = match evil_with_layout(hostile).await {
            Ok(_) => panic!("layout {hostile:?} must be refused"),
            Err(e) => e,
        };
        assert_eq!(e.kind(), ErrorKind::PluginLoad, "{hostile}: {e}");
        assert!(e.message().contains("suffix"), "{hostile}: {e}");
        assert!(
            e.message().contains("a suffix is empty or '.' followed by"),
            "{e}"
        );
    }

    // An accepted layout puts every byte at exactly the composed location.
    let s = Suite::load().await;
    let evil = evil_with_layout(".evdb;.evil").await.unwrap();
    let t = evil_table("honest", &[]);
    s.split(&evil, &t).await.unwrap();
    let written = files(&s.warehouse);
    assert!(!written.is_empty());
    let location = format!("fluss.evdb/{}.evil/", t.path.table);
    for f in &written {
        assert!(f.starts_with(&location), "{f} is outside {location}");
    }
}

/// Contract 0.3.6 adds the `version-catalog` import and leaves `table-catalog` as it was: a
/// plugin built against 0.3.5 (`tests/fixtures/plugins/evil-0.3.5.wasm`, the `evil` test plugin
/// as commit 3bf2a7e built it), which imports `table-catalog@0.3.5`, still links against this
/// host and writes a split, and the host knows it cannot commit to a version catalog.
#[tokio::test]
async fn a_plugin_of_contract_0_3_5_still_links_and_writes() {
    let s = Suite::load().await;
    let fixture = fluss_lake_e2e::repo_root().join("tests/fixtures/plugins/evil-0.3.5.wasm");
    let engine = Arc::new(
        PluginEngine::new(EngineSettings {
            cache: Some(host::plugin_cache()),
            ..EngineSettings::default()
        })
        .unwrap(),
    );
    let bytes = std::fs::read(&fixture).unwrap();
    let imports = |name: &[u8]| bytes.windows(name.len()).any(|w| w == name);
    assert!(imports(b"fluss:lake/table-catalog@0.3.5") && !imports(b"fluss:lake/version-catalog"));
    let old = Plugin::load(engine, &fixture).await.unwrap();
    assert!(!old.implements_contract("0.3.6"));
    assert!(
        !old.replaces_buckets(),
        "0.3.7's bucket-replace is optional"
    );
    s.split(&old, &evil_table("honest", &[])).await.unwrap();
}

/// Contract 0.3.9 adds kept batches and picked rows to the `data-plane` import and leaves its
/// 0.3.8 functions as they were: a plugin built against 0.3.8
/// (`tests/fixtures/plugins/evil-0.3.8.wasm`, the `evil` test plugin as commit b0e5040 built
/// it), which imports `data-plane@0.3.8`, still links against this host and writes a split
/// through its `batch-writer`, and its data-plane abuse is refused as before.
#[tokio::test]
async fn a_plugin_of_contract_0_3_8_still_writes_through_the_data_plane() {
    let s = Suite::with_call_timeout(UNHURRIED_CALL_TIMEOUT).await;
    let fixture = fluss_lake_e2e::repo_root().join("tests/fixtures/plugins/evil-0.3.8.wasm");
    let bytes = std::fs::read(&fixture).unwrap();
    let imports = |name: &[u8]| bytes.windows(name.len()).any(|w| w == name);
    assert!(imports(b"fluss:lake/data-plane@0.3.8") && !imports(b"kept-batch"));
    let old = Plugin::load(s.engine.clone(), &fixture).await.unwrap();
    s.native_split(&old, &evil_table("honest", &[]))
        .await
        .expect("a native split of the 0.3.8 plugin");
    let e = s
        .native_split(&old, &evil_table("data-plane-abuse", &[]))
        .await
        .expect_err("the abuse must fail the split");
    assert!(
        e.message().contains("every data-plane abuse was refused")
            && !e.message().contains("ABUSED"),
        "{e}"
    );
}

/// Contract 0.3.7's optional `bucket-replace` export: the host asks `check-replace` before it
/// reads a KV snapshot to rebuild a bucket. A plugin that answers `unsupported` says so in the
/// error the round names the bucket with; one that spins there is stopped at the call's
/// deadline with one line, and the plugin's next instance works.
#[tokio::test]
async fn a_plugin_spinning_in_check_replace_is_stopped_at_its_deadline() {
    let s = Suite::load().await;
    assert!(s.evil.replaces_buckets() && s.paimon.replaces_buckets());
    let context = |mode: &str| CommitterContext {
        table: evil_table(mode, &[]),
        config: s.config(),
        tiering_config: Vec::new(),
    };
    let mut i = PluginInstance::new(&s.evil, "evil-replace".into())
        .await
        .unwrap();
    let e = i.check_replace(&context("honest")).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    assert!(e.message().contains("does not replace buckets"), "{e}");
    let e = i.check_replace(&context("replace-loop")).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PluginLimit, "{e}");
    assert!(
        e.message().contains("bucket-replace.check-replace") && !e.message().contains('\n'),
        "{e}"
    );
    s.good_split("after_replace_loop").await;
}

#[tokio::test]
async fn a_plugin_abusing_the_native_data_plane_is_refused_everything() {
    let s = Suite::with_call_timeout(UNHURRIED_CALL_TIMEOUT).await;
    let outside = PathBuf::from("/tmp/fluss-evil-native.parquet");
    let _ = std::fs::remove_file(&outside);
    let t = evil_table("data-plane-abuse", &[]);
    let e = s
        .native_split(&s.evil, &t)
        .await
        .expect_err("the abuse must fail the split");
    assert_eq!(e.kind(), ErrorKind::Plugin, "{e}");
    let m = e.message();
    assert!(
        m.contains("every data-plane abuse was refused") && !m.contains("ABUSED"),
        "{e}"
    );
    for refusal in [
        "'../escaped.parquet' escapes its directory",
        "'/tmp/fluss-evil-native.parquet' is absolute",
        "not an Arrow IPC schema",
        "a file schema of 2097152 bytes, over the",
        "1 file columns but 0 column sources",
        "bucket columns must hold one value",
        "row groups of 18446744073709551615 bytes",
        "zstd level 99",
        "batch has no column 10000",
        "of the instance's memory",
        "more than 4 uploads or files open at once",
        "data/finished.parquet is finished",
        "column 0 asked for twice",
        "no column 10000",
        "no column asked for",
        "this batch is kept already",
        "has computed columns: it takes append-picked",
        "pick of batch 1: 1 batches given",
        "which has",
        "computed column 0 has 1 values for 2 picks",
        "65537 picks in one call, over the limit of 65536",
    ] {
        assert!(m.contains(refusal), "{refusal:?} not in: {e}");
    }
    assert!(!outside.exists());
    // Nothing refused or abandoned became an object; the one file finished did.
    let written = files(&s.warehouse);
    assert!(
        written.iter().any(|f| f.ends_with("data/finished.parquet")),
        "{written:?}"
    );
    for f in &written {
        for refused in ["missing.parquet", "big-", "open-", "escaped", "picked"] {
            assert!(
                !(f.contains(refused) && f.ends_with(".parquet")),
                "{f} in {written:?}"
            );
        }
    }
    // What the refused files held is given back: the next split of the instance's plugin and
    // of another plugin work.
    s.native_split(&s.evil, &evil_table("honest", &[]))
        .await
        .expect("an honest native split");
    s.good_split("after_data_plane_abuse").await;
}

#[tokio::test]
async fn paths_that_escape_the_table_are_refused_by_the_host() {
    let s = Suite::load().await;
    let outside = PathBuf::from("/tmp/fluss-evil-escaped.txt");
    let _ = std::fs::remove_file(&outside);
    let e = s.evil_split("escape").await;
    assert_eq!(e.kind(), ErrorKind::Plugin, "{e}");
    let m = e.message();
    assert!(m.contains("every escape was refused"), "{e}");
    assert!(!m.contains("ESCAPED"), "{e}");
    assert!(m.contains("'../escaped.txt' escapes its directory"), "{e}");
    assert!(
        m.contains("'/tmp/fluss-evil-escaped.txt' is absolute"),
        "{e}"
    );
    assert!(!outside.exists());
    // The warehouse holds nothing but what plugins wrote inside their own tables.
    assert!(files(&s.warehouse).is_empty(), "{:?}", files(&s.warehouse));
    assert!(!s.warehouse.parent().unwrap().join("escaped.txt").exists());
}

#[tokio::test]
async fn resource_handle_floods_are_refused() {
    let s = Suite::load().await;
    for mode in ["handles", "wasi-handles"] {
        let e = s.evil_split(mode).await;
        assert_eq!(e.kind(), ErrorKind::PluginLimit, "{mode}: {e}");
        assert!(
            e.message()
                .contains("exceeded its limit of 10000 resource handles in writer.write"),
            "{mode}: {e}"
        );
    }
    s.good_split("after_handles").await;
}

#[tokio::test]
async fn listings_and_reads_are_bounded_before_the_host_holds_them() {
    let s = Suite::load().await;
    let e = s
        .evil_split_with(
            "list-flood",
            &[("objects", &(MAX_LIST_ENTRIES + 1).to_string())],
            CancellationToken::new(),
        )
        .await;
    // A page asked for without bound holds the host's page size; the pages hold everything.
    assert!(
        e.message()
            .contains("LISTED 100 objects in the first page; PAGED 101 objects in 2 pages"),
        "{e}"
    );

    // An object larger than the instance may hold (a sparse file: no disk is used) is
    // refused before it is read.
    let dir = s.warehouse.join("fluss/t_huge_get");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::File::create(dir.join("big"))
        .unwrap()
        .set_len(4 << 30)
        .unwrap();
    let e = s.evil_split("huge-get").await;
    assert!(
        e.message().contains(
            "big is 4294967296 bytes, more than the 268435456 bytes a plugin instance may hold"
        ),
        "{e}"
    );
    std::fs::remove_file(dir.join("big")).unwrap();

    // An unbounded range is refused before anything is read; a range at the end of a huge
    // object is served.
    let dir = s.warehouse.join("fluss/t_huge_range");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::File::create(dir.join("big"))
        .unwrap()
        .set_len(4 << 30)
        .unwrap();
    let e = s.evil_split("huge-range").await;
    assert!(
        e.message().contains(
            "UNBOUNDED: a range of 18446744073709551615 bytes of big is more than the 268435456 bytes \
             a plugin instance may hold; TAIL 10 bytes"
        ),
        "{e}"
    );
    std::fs::remove_file(dir.join("big")).unwrap();
}

#[tokio::test]
async fn uploads_are_bounded_and_leave_nothing_unless_completed() {
    let s = Suite::load().await;
    // Each open upload holds host memory: a bounded number at once.
    let e = s.evil_split("upload-flood").await;
    assert!(
        e.message()
            .contains("OPENED 4 uploads, then: more than 4 uploads open at once"),
        "{e}"
    );
    // An upload dropped unfinished, and one never dropped (its instance ends), leave nothing;
    // the split itself completes.
    let t = evil_table("upload-abandon", &[]);
    s.split_until(&s.evil, &t, CancellationToken::new())
        .await
        .expect("a split that abandoned two uploads still completes");
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let left = files(&s.warehouse.join("fluss/t_upload_abandon"));
    assert!(
        !left.is_empty()
            && left
                .iter()
                .all(|f| !f.contains("abandoned") && !f.contains("forgotten")),
        "{left:?}"
    );
    // An upload over the round's quota is refused, and cannot be completed afterwards.
    let e = s.evil_split("upload-fill").await;
    assert_eq!(e.kind(), ErrorKind::PluginLimit, "{e}");
    assert!(
        e.message().contains("over the round's storage quota"),
        "{e}"
    );
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let left = files(&s.warehouse.join("fluss/t_upload_fill"));
    assert!(left.iter().all(|f| !f.starts_with("fill")), "{left:?}");
    // The four uploads `upload-flood` left open went with its instance.
    let left = files(&s.warehouse.join("fluss/t_upload_flood"));
    assert!(left.iter().all(|f| !f.starts_with("uploads")), "{left:?}");
}

#[tokio::test]
async fn a_round_cannot_write_past_its_storage_quota_even_if_the_plugin_ignores_it() {
    let s = Suite::load().await;
    let e = s.evil_split("disk-fill").await;
    assert_eq!(e.kind(), ErrorKind::PluginLimit, "{e}");
    assert!(
        e.message().contains(
            "over the round's storage quota of 16777216 bytes in 1000 objects (in writer.write)"
        ),
        "{e}"
    );
    let filled = files(&s.warehouse.join("fluss/t_disk_fill/fill"));
    assert_eq!(filled.len(), 16, "{filled:?}");
}

/// Counts the host's `plugin` log events and keeps their messages.
#[derive(Clone, Default)]
struct PluginLogs(Arc<std::sync::Mutex<Vec<String>>>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for PluginLogs {
    fn on_event(
        &self,
        event: &tracing::Event<'_>,
        _ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        struct Message(String);
        impl tracing::field::Visit for Message {
            fn record_debug(&mut self, f: &tracing::field::Field, v: &dyn std::fmt::Debug) {
                if f.name() == "message" {
                    self.0 = format!("{v:?}");
                }
            }
        }
        if event.metadata().target() == "plugin" {
            let mut m = Message(String::new());
            event.record(&mut m);
            self.0.lock().unwrap().push(m.0);
        }
    }
}

/// A plugin logging 100 000 lines gets about its burst (1000) through; the rest are dropped
/// and reported as counts, and nothing is lost track of.
#[tokio::test(flavor = "current_thread")]
async fn a_log_flood_is_dropped_and_counted() {
    use tracing_subscriber::layer::SubscriberExt;
    let s = Suite::load().await;
    let logs = PluginLogs::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(logs.clone()));
    let t = evil_table("log-flood", &[]);
    s.split(&s.evil, &t).await.expect("logging is not an error");
    let lines = logs.0.lock().unwrap().clone();
    let flood = lines.iter().filter(|l| l.contains("flood line")).count();
    let dropped: usize = lines
        .iter()
        .filter_map(|l| {
            l.split("] ")
                .nth(1)?
                .strip_suffix(" log lines dropped: over the plugin log rate")
        })
        .map(|n| n.parse::<usize>().unwrap())
        .sum();
    assert!((1000..1500).contains(&flood), "{flood} lines logged");
    assert_eq!(
        flood + dropped,
        100_000,
        "{flood} logged, {dropped} dropped"
    );
}

/// An `info` whose plugin version is 120 MiB of pages the guest never touched is refused at
/// load, before the host copies it (the host keeps 256 bytes of a version: lifting more than
/// a few KiB out of `info` traps).
#[tokio::test]
async fn a_huge_info_string_is_refused_before_it_is_copied() {
    let bytes = std::fs::read(plugin("evil")).unwrap();
    let patched = host::patch_marker(&bytes, b"EVIL-INFO=honest", b"EVIL-INFO=bigver");
    let engine = Arc::new(PluginEngine::new(EngineSettings::default()).unwrap());
    let digest = format!("{:064x}", patched.len() + 1);
    let e = match Plugin::from_bytes(engine, Path::new("bigver.wasm"), &patched, digest).await {
        Ok(p) => panic!(
            "a 120 MiB info loaded (version cut to {} bytes)",
            p.version().len()
        ),
        Err(e) => e,
    };
    assert_eq!(e.kind(), ErrorKind::PluginLoad, "{e}");
    assert!(
        e.message()
            .contains("handed the host more than the 65536 bytes one call may carry in info"),
        "{e}"
    );
}

/// An instance whose memory does not fit the limit fails at instantiation in one line that
/// names the limit and the file (its format is not known yet), not with a backtrace.
#[tokio::test]
async fn a_limit_hit_while_loading_is_one_line_naming_the_file() {
    let engine = Arc::new(
        PluginEngine::new(EngineSettings {
            instance_memory_limit: 256 << 10,
            ..EngineSettings::default()
        })
        .unwrap(),
    );
    let e = match Plugin::load(engine, &plugin("evil")).await {
        Ok(_) => panic!("evil loaded in 256 KiB"),
        Err(e) => e,
    };
    assert_eq!(e.kind(), ErrorKind::PluginLoad, "{e}");
    assert!(
        e.message().contains(
            "plugin evil.wasm exceeded its memory limit of 262144 bytes in instantiation"
        ) && !e.message().contains('\n'),
        "{e}"
    );
}

/// Assertions about wall time (a deadline, work finishing before it): under a loaded machine
/// they could fail for the wrong reason, so `scripts/test.sh` runs these tests afterwards, one
/// at a time (every test in a module named `alone`).
mod alone {
    use super::*;

    /// The endless loop is interrupted at its deadline; meanwhile, on the same single thread, a
    /// Paimon split runs to completion, because the spinning guest yields every epoch tick.
    #[tokio::test(flavor = "current_thread")]
    async fn an_endless_loop_is_interrupted_and_yields_meanwhile() {
        let s = Suite::load().await;
        let started = Instant::now();
        let (looped, good_done_at) = tokio::join!(s.evil_split("loop"), async {
            // Let the loop start first.
            tokio::time::sleep(Duration::from_millis(200)).await;
            s.good_split("beside_loop").await;
            started.elapsed()
        });
        let elapsed = started.elapsed();
        assert_eq!(looped.kind(), ErrorKind::PluginLimit, "{looped}");
        assert!(
            looped.message().contains("call deadline in writer.write"),
            "{looped}"
        );
        assert!(elapsed >= CALL_TIMEOUT, "interrupted after {elapsed:?}");
        assert!(
            elapsed < CALL_TIMEOUT * 3,
            "interrupted only after {elapsed:?}"
        );
        assert!(
            good_done_at < CALL_TIMEOUT,
            "the Paimon split finished at {good_done_at:?}, not while the loop spun"
        );
    }

    /// A long but finite write (2 s of computation, under the 3 s deadline) is not killed.
    #[tokio::test]
    async fn a_long_honest_write_is_not_killed() {
        let s = Suite::load().await;
        let mut t = table("evil", "t_slow", ALL_TYPES, &[], &[], 1, &[]);
        t.custom_properties = vec![("evil.mode".into(), "slow".into())];
        let started = Instant::now();
        s.split(&s.evil, &t).await.expect("a slow write completes");
        assert!(
            started.elapsed() > Duration::from_millis(200),
            "the write did compute"
        );
        assert_eq!(files(&s.warehouse), vec!["fluss/t_slow/data/-1-0-0"]);
    }

    /// A guest blocked inside a host import (a WASI timer: `std::thread::sleep`, or a raw
    /// pollable) is abandoned at its deadline, where the epoch cannot reach it.
    #[tokio::test]
    async fn a_guest_blocked_in_a_wasi_timer_is_abandoned_at_its_deadline() {
        let s = Suite::load().await;
        for mode in ["sleep", "wasi-timer"] {
            let started = Instant::now();
            let e = s.evil_split(mode).await;
            let elapsed = started.elapsed();
            assert_eq!(e.kind(), ErrorKind::PluginLimit, "{mode}: {e}");
            assert!(
                e.message().contains(
                    "blocked in a host call past its 3s call deadline in writer.write and was abandoned"
                ),
                "{mode}: {e}"
            );
            assert!(
                elapsed >= CALL_TIMEOUT,
                "{mode}: abandoned after {elapsed:?}"
            );
            assert!(
                elapsed < CALL_TIMEOUT * 3,
                "{mode}: abandoned only after {elapsed:?}"
            );
        }
        s.good_split("after_sleep").await;
    }

    /// Cancelling the round ends a blocked call at once, not at its deadline.
    #[tokio::test]
    async fn a_cancelled_round_ends_a_blocked_call_at_once() {
        let s = Suite::load().await;
        let cancel = CancellationToken::new();
        let started = Instant::now();
        let (e, ()) = tokio::join!(s.evil_split_with("sleep", &[], cancel.clone()), async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            cancel.cancel();
        });
        let elapsed = started.elapsed();
        assert_eq!(e.kind(), ErrorKind::Cancelled, "{e}");
        assert!(e.message().contains("writer.write stopped"), "{e}");
        assert!(elapsed < CALL_TIMEOUT, "ended only after {elapsed:?}");
    }

    /// A plugin whose `info` blocks fails to load at the deadline instead of holding startup
    /// (or a hot swap) forever.
    #[tokio::test]
    async fn a_plugin_whose_info_blocks_fails_to_load_at_its_deadline() {
        let bytes = std::fs::read(plugin("evil")).unwrap();
        let patched = host::patch_marker(&bytes, b"EVIL-INFO=honest", b"EVIL-INFO=sleeps");
        let engine = Arc::new(
            PluginEngine::new(EngineSettings {
                call_timeout: CALL_TIMEOUT,
                ..EngineSettings::default()
            })
            .unwrap(),
        );
        let started = Instant::now();
        let digest = format!("{:064x}", patched.len());
        let e = match Plugin::from_bytes(engine, Path::new("sleepy.wasm"), &patched, digest).await {
            Ok(_) => panic!("a plugin whose info blocks must not load"),
            Err(e) => e,
        };
        let elapsed = started.elapsed();
        assert_eq!(e.kind(), ErrorKind::PluginLoad, "{e}");
        assert!(
            e.message()
                .contains("blocked in a host call past its 3s call deadline in info"),
            "{e}"
        );
        assert!(elapsed < CALL_TIMEOUT * 3, "failed only after {elapsed:?}");
    }
}
