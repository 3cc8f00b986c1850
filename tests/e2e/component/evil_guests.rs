//! The adversarial guest suite, in the host's own plugin runtime (no Fluss): every
//! misbehaviour of `tests/plugins/evil` ends as a clear error of the kind a caller can match
//! on, the engine keeps serving other plugins, and nothing is written outside the table.
//! `evil_tiering.rs` runs the same plugin inside a live host against a real cluster.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fluss_lake_e2e::all_types::{ALL_TYPES, all_types};
use fluss_lake_e2e::component::{row_batch, table};
use fluss_lake_e2e::host::{self, plugin};
use fluss_lake_e2e::unique_name;
use fluss_lake_host::ErrorKind;
use fluss_lake_host::plugin::engine::{EngineSettings, PluginEngine};
use fluss_lake_host::plugin::sandbox::check_location_names_table;
use fluss_lake_host::plugin::storage::ScopedStorage;
use fluss_lake_host::plugin::wit::{TableInfo, WriterContext};
use fluss_lake_host::plugin::{Plugin, PluginInstance};

const CALL_TIMEOUT: Duration = Duration::from_secs(3);
const MEMORY_LIMIT: usize = 256 << 20;
const MAX_RESULT: usize = 8 << 20;

struct Suite {
    evil: Plugin,
    paimon: Plugin,
    warehouse: PathBuf,
}

impl Suite {
    async fn load() -> Self {
        let engine = Arc::new(
            PluginEngine::new(EngineSettings {
                instance_memory_limit: MEMORY_LIMIT,
                call_timeout: CALL_TIMEOUT,
                max_result_bytes: MAX_RESULT,
                cache_dir: Some(host::plugin_cache_dir()),
            })
            .unwrap(),
        );
        let warehouse = std::env::temp_dir().join(unique_name("evil-wh"));
        std::fs::create_dir_all(&warehouse).unwrap();
        Suite {
            evil: Plugin::load(engine.clone(), &plugin("evil")).await.unwrap(),
            paimon: Plugin::load(engine, &plugin("paimon")).await.unwrap(),
            warehouse,
        }
    }

    fn config(&self) -> Vec<(String, String)> {
        vec![("warehouse".into(), self.warehouse.display().to_string())]
    }

    /// One split of `table` through `plugin` exactly as a round does it: location (checked
    /// as the host checks it), scoped storage, writer, one batch, complete.
    async fn split(&self, plugin: &Plugin, table: &TableInfo) -> fluss_lake_host::Result<()> {
        let config = self.config();
        let mut i = PluginInstance::new(plugin, "evil-suite".into()).await?;
        let location = i.table_location(table, &config).await?;
        check_location_names_table(&location, &table.path.database, &table.path.table)?;
        i.set_storage(ScopedStorage::local(
            &self.warehouse.display().to_string(),
            &location,
        )?);
        i.create_table_if_missing(table, &config).await?;
        let w = i
            .open_writer(&WriterContext {
                table: table.clone(),
                bucket: 0,
                partition_id: None,
                partition_name: None,
                split_index: 0,
                round_timestamp: 0,
                config,
            })
            .await?;
        let (batch, _) = all_types(&[1, 2, 3], None);
        i.write(&w, &row_batch(&batch, Vec::new(), 0, 0)).await?;
        i.complete(w).await?;
        Ok(())
    }

    async fn evil_split(&self, mode: &str) -> fluss_lake_host::Error {
        let mut t = table(
            "evil",
            &format!("t_{}", mode.replace('-', "_")),
            ALL_TYPES,
            &[],
            &[],
            1,
            &[],
        );
        t.custom_properties = vec![
            ("evil.mode".into(), mode.into()),
            ("evil.target".into(), "fluss/victim".into()),
        ];
        self.split(&self.evil, &t)
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
    let s = Suite::load().await;

    let e = s.evil_split("trap").await;
    assert_eq!(e.kind(), ErrorKind::Plugin, "{e}");
    assert!(e.message().contains("trapped in writer.write"), "{e}");
    s.good_split("after_trap").await;

    let e = s.evil_split("memory").await;
    assert_eq!(e.kind(), ErrorKind::PluginLimit, "{e}");
    assert!(
        e.message()
            .contains("exceeded its memory limit of 268435456 bytes in writer.write"),
        "{e}"
    );
    s.good_split("after_memory").await;

    let e = s.evil_split("huge-result").await;
    assert_eq!(e.kind(), ErrorKind::PluginLimit, "{e}");
    assert!(
        e.message()
            .contains("write result from writer.complete, over the 8388608-byte limit"),
        "{e}"
    );
    s.good_split("after_huge_result").await;

    let e = s.evil_split("other-table").await;
    assert_eq!(e.kind(), ErrorKind::PluginLimit, "{e}");
    assert!(e.message().contains("'fluss/victim'"), "{e}");
    assert!(
        e.message()
            .contains("plugins may only write a table's own directory"),
        "{e}"
    );
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
}
