//! Test fixture: an adversarial plugin for the made-up format `evil`.
//!
//! Each table picks one misbehaviour with its custom property `evil.mode` (or the plugin
//! configuration key `mode`); the host must survive every one of them, fail only that
//! table's round with a clear error, and keep every byte inside the table's location:
//!
//! | mode            | what the plugin does                                              |
//! |-----------------|-------------------------------------------------------------------|
//! | `trap`          | panics in `write`                                                 |
//! | `loop`          | spins forever in `write`                                          |
//! | `memory`        | allocates without end in `write`                                  |
//! | `huge-result`   | returns a 100 MiB write result from `complete`                    |
//! | `big-result`    | returns a 16 MiB write result from `complete`                     |
//! | `escape`        | writes `../`, absolute and `a/../../` paths through raw storage    |
//! | `malformed`     | commits and returns snapshot id -7                                |
//! | `forged-offsets`| claims a snapshot Fluss missed, with an offsets file of its own   |
//! | `slow`          | an honest plugin whose every write computes a while               |
//! | `unsure-commit` | publishes its snapshot, then fails the commit, and cannot say      |
//! |                 | afterwards whether anything was published; its abort really deletes |
//! | `sleep`         | `std::thread::sleep`s for an hour in `write` (a WASI timer)        |
//! | `wasi-timer`    | blocks on a WASI monotonic-clock pollable of an hour in `write`    |
//! | `handles`       | creates 20 000 writer resources in `write` and forgets them        |
//! | `wasi-handles`  | creates 20 000 WASI pollables in `write` and forgets them          |
//! | `list-flood`    | writes `evil.objects` objects in `write`, asks for one page of all |
//! |                 | of them, then pages through the whole listing                      |
//! | `huge-get`      | reads the object `big` (which a test places) in `write`            |
//! | `huge-range`    | asks for an unbounded range of `big`, then for its last 10 bytes    |
//! | `upload-flood`  | starts uploads in `write` without finishing them, until refused    |
//! | `upload-abandon`| starts two uploads and writes to them: drops one unfinished and    |
//! |                 | forgets the other (never dropped), then writes as an honest plugin |
//! | `upload-fill`   | writes 1 MiB parts to one upload until refused, ignores the        |
//! |                 | refusal and completes it                                           |
//! | `disk-fill`     | writes 1 MiB objects in `write` until refused, ignores the refusal |
//! | `log-flood`     | logs 100 000 lines in `write`                                      |
//! | `own-offsets`   | claims a snapshot Fluss missed, with an offsets file it wrote in   |
//! |                 | its own table under a path shaped like the coordinator's           |
//! | `replay-offsets`| fails every lake commit, keeping the offsets path the host gave it, |
//! |                 | then claims a snapshot Fluss missed with that genuine path         |
//! | `maintain-loop` | an honest lake whose `maintain` spins forever                      |
//! | `maintain-flood`| an honest lake whose `maintain` reports 50 000 snapshots committed |
//! | `maintain-fail` | an honest lake whose `maintain` fails (`io`)                       |
//! | `replace-loop`  | an honest lake whose `check-replace` (contract 0.3.7) spins forever |
//! | `data-plane-abuse` | in `batch-writer.write` (contract 0.3.8), asks the host's native  |
//! |                 | encoder for what it must refuse: files outside the table, schemas  |
//! |                 | that are not Arrow or too large, sources that do not fit, row groups |
//! |                 | and codec levels out of bounds, more memory or open files than its |
//! |                 | instance may hold, appends to a finished file; and (0.3.9) columns |
//! |                 | out of range, batches kept past its memory, picks outside the kept  |
//! |                 | batches, computed columns that do not fit; fails with every refusal, or |
//! |                 | with `ABUSED` naming what the host let through                     |
//! | `over-budget`   | an honest lake that reports `u32::MAX`, then 7, parts over budget  |
//! |                 | in `maintain` (the last counts), and 1 000 in every `write`, where |
//! |                 | the host ignores it                                                |
//!
//! Its `batch-writer` (contract 0.3.8) takes each batch's rows from the host and writes them
//! as `writer` does, in every mode but `data-plane-abuse`.
//!
//! Otherwise `maintain` (the optional export of contract 0.3.1) records each request it gets
//! in `maintained/<n>` (`keep-since` and the two flags) and reports nothing done, and
//! `bucket-replace` (0.3.7) answers `unsupported`.
//!
//! Its `info` can also be made to claim another contract version (see `CONTRACT_MARKER`),
//! any plugin version (see `VERSION_MARKER`), any table layout (see `LAYOUT_MARKER`), or to
//! sleep (see `INFO_MARKER`).
//!
//! Except for its mode, the plugin is a minimal honest lake: `write` stores one object per
//! batch, `commit` publishes `snapshots/<n>` with put-if-absent.

#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

use std::cell::RefCell;

use fluss_lake_guest_sdk::CONTRACT_VERSION;
use fluss_lake_guest_sdk::bindings::exports::fluss::lake::{
    batch_writer, bucket_replace, catalog, committer, maintenance, plugin, writer,
};
use fluss_lake_guest_sdk::bindings::fluss::lake::{
    data_plane, logging, maintenance_status, storage,
};
use fluss_lake_guest_sdk::wit::{
    BucketRef, CommitResult, CommittedSnapshot, CommitterContext, LakeError, MaintenanceReport,
    MaintenanceRequest, PluginInfo, ReadableSnapshot, RowBatch, TableInfo, TableLayout,
    TieringStats, WitErrorKind, WriteResult, WriterContext,
};

struct Evil;

fn setting(table: &TableInfo, config: &[(String, String)], key: &str) -> Option<String> {
    table
        .custom_properties
        .iter()
        .find(|(k, _)| k == &format!("evil.{key}"))
        .or_else(|| config.iter().find(|(k, _)| k == key))
        .map(|(_, v)| v.clone())
}

fn mode(table: &TableInfo, config: &[(String, String)]) -> String {
    setting(table, config, "mode").unwrap_or_default()
}

/// Every object under `prefix`, page after page (the honest way to list).
fn listed(prefix: &str) -> Result<Vec<fluss_lake_guest_sdk::storage::ObjectMeta>, LakeError> {
    use fluss_lake_guest_sdk::storage::{HostStorage, Storage};
    HostStorage
        .list(prefix)
        .map_err(|e| error(WitErrorKind::Io, e.to_string()))
}

fn error(kind: WitErrorKind, message: String) -> LakeError {
    LakeError { kind, message }
}

/// Burns CPU for about `millis` of guest time without any host call (so only epoch
/// interruption can take the CPU back).
fn compute(iterations: u64) -> u64 {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for i in 0..iterations {
        x = std::hint::black_box(x.rotate_left(5) ^ i).wrapping_mul(0x100_0000_01B3);
    }
    x
}

/// Blocks on a WASI timer pollable of an hour.
#[cfg(target_arch = "wasm32")]
fn block_on_wasi_timer() {
    wasip2::clocks::monotonic_clock::subscribe_duration(3_600_000_000_000).block();
}

/// Creates `n` WASI resources and never drops them.
#[cfg(target_arch = "wasm32")]
fn forget_wasi_pollables(n: usize) {
    for _ in 0..n {
        std::mem::forget(wasip2::clocks::monotonic_clock::subscribe_duration(1));
    }
}

#[cfg(not(target_arch = "wasm32"))]
fn block_on_wasi_timer() {}

#[cfg(not(target_arch = "wasm32"))]
fn forget_wasi_pollables(_n: usize) {}

/// A random number (std's hasher keys come from WASI's random source).
fn nonce() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
}

/// The contract version `info` reports, behind a marker a test can find in the `.wasm` and
/// patch (same length) to fake a plugin built for another contract version.
static CONTRACT_MARKER: &str = "EVIL-CONTRACT=0.3.2";

/// The plugin version `info` reports (trailing dots are padding), behind a marker a test can
/// patch (same length) to any version text, e.g. a long one of multi-byte characters.
static VERSION_MARKER: &str = concat!(
    "EVIL-VERSION=0.3.2",
    "................................................................................",
    "................................................................................",
    "................................................................................",
    "................................................................................",
);

/// What `info` does, behind a marker a test can patch (same length): `honest` answers,
/// `sleeps` blocks in a WASI timer for an hour first, `bigver` answers a 120 MiB plugin
/// version of fresh (never touched) pages.
static INFO_MARKER: &str = "EVIL-INFO=honest";

/// The table layout `info` declares: `EVIL-LAYOUT=<database suffix>;<table suffix>` then `#`
/// padding, behind a marker a test can patch (same length) to any suffixes, hostile ones
/// included. Unpatched: no suffixes (`<db>/<table>`).
static LAYOUT_MARKER: &str = "EVIL-LAYOUT=;########################################";

fn declared_layout() -> TableLayout {
    let text = std::hint::black_box(LAYOUT_MARKER)
        .strip_prefix("EVIL-LAYOUT=")
        .unwrap_or_default()
        .trim_end_matches('#');
    let (database_suffix, table_suffix) = text.split_once(';').unwrap_or((text, ""));
    TableLayout {
        database_suffix: database_suffix.into(),
        table_suffix: table_suffix.into(),
    }
}

/// Blocks in the host: a WASI timer of an hour.
fn sleep_an_hour() {
    std::thread::sleep(std::time::Duration::from_secs(3600));
}

impl plugin::Guest for Evil {
    fn info() -> PluginInfo {
        if std::hint::black_box(INFO_MARKER).ends_with("sleeps") {
            sleep_an_hour();
        }
        if std::hint::black_box(INFO_MARKER).ends_with("bigver") {
            let version = String::from_utf8(vec![0u8; 120 << 20]).unwrap_or_default();
            return PluginInfo {
                format: "evil".into(),
                plugin_version: version,
                contract_version: CONTRACT_VERSION.into(),
                layout: declared_layout(),
            };
        }
        let marker = std::hint::black_box(CONTRACT_MARKER);
        let contract = marker
            .strip_prefix("EVIL-CONTRACT=")
            .unwrap_or(CONTRACT_VERSION);
        PluginInfo {
            format: "evil".into(),
            plugin_version: std::hint::black_box(VERSION_MARKER)
                .strip_prefix("EVIL-VERSION=")
                .unwrap_or_default()
                .trim_end_matches('.')
                .into(),
            contract_version: contract.into(),
            layout: declared_layout(),
        }
    }

    fn validate_table(_table: TableInfo, _config: Vec<(String, String)>) -> Result<(), LakeError> {
        Ok(())
    }
}

impl catalog::Guest for Evil {
    fn create_table_if_missing(
        _table: TableInfo,
        _config: Vec<(String, String)>,
    ) -> Result<bool, LakeError> {
        Ok(false)
    }
}

#[derive(Default)]
struct EvilWriter {
    mode: String,
    compute: u64,
    /// Objects `list-flood` writes.
    objects: usize,
    batches: RefCell<u64>,
    rows: RefCell<u64>,
    /// Paths of the data objects written.
    written: RefCell<Vec<String>>,
    split: String,
}

impl EvilWriter {
    fn new(context: &WriterContext) -> Self {
        EvilWriter {
            mode: mode(&context.table, &context.config),
            compute: setting(&context.table, &context.config, "compute")
                .and_then(|v| v.parse().ok())
                .unwrap_or(1 << 28),
            objects: setting(&context.table, &context.config, "objects")
                .and_then(|v| v.parse().ok())
                .unwrap_or(10),
            batches: RefCell::new(0),
            rows: RefCell::new(0),
            written: RefCell::new(Vec::new()),
            split: format!("{}-{}", context.partition_id.unwrap_or(-1), context.bucket),
        }
    }
}

impl writer::GuestLakeWriter for EvilWriter {
    fn open(context: WriterContext) -> Result<writer::LakeWriter, LakeError> {
        Ok(writer::LakeWriter::new(EvilWriter::new(&context)))
    }

    fn write(&self, batch: RowBatch) -> Result<(), LakeError> {
        if self.mode == "over-budget" {
            maintenance_status::over_budget(1_000);
        }
        match self.mode.as_str() {
            "trap" => panic!("evil plugin: deliberate panic in write"),
            "loop" => loop {
                compute(1 << 20);
            },
            "memory" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![0xEE; 64 << 20]);
                    std::hint::black_box(&hoard);
                }
            }
            "escape" => {
                let mut refused = Vec::new();
                for path in [
                    "../escaped.txt",
                    "/tmp/fluss-evil-escaped.txt",
                    "a/../../escaped.txt",
                    "../../../../../../tmp/fluss-evil-escaped.txt",
                ] {
                    match storage::put(path, b"escaped") {
                        Ok(()) => {
                            return Err(error(
                                WitErrorKind::Internal,
                                format!("ESCAPED: the host let me write {path}"),
                            ));
                        }
                        Err(e) => refused.push(format!("{path}: {}", e.message)),
                    }
                }
                return Err(error(
                    WitErrorKind::InvalidInput,
                    format!("every escape was refused: {}", refused.join("; ")),
                ));
            }
            "slow" => {
                // Hundreds of epoch ticks of pure computation (`evil.compute` iterations).
                std::hint::black_box(compute(self.compute));
            }
            "sleep" => sleep_an_hour(),
            "wasi-timer" => block_on_wasi_timer(),
            "handles" => {
                for _ in 0..20_000 {
                    std::mem::forget(writer::LakeWriter::new(EvilWriter::default()));
                }
            }
            "wasi-handles" => forget_wasi_pollables(20_000),
            "list-flood" => {
                let n: usize = self.objects;
                for i in 0..n {
                    storage::put(&format!("flood/{i}"), b"")?;
                }
                let first = storage::list_objects("flood/", None, u32::MAX)?;
                let (mut total, mut pages, mut next) = (first.objects.len(), 1, first.next.clone());
                while let Some(after) = next {
                    let page = storage::list_objects("flood/", Some(&after), u32::MAX)?;
                    total += page.objects.len();
                    pages += 1;
                    next = page.next;
                }
                return Err(error(
                    WitErrorKind::Internal,
                    format!(
                        "LISTED {} objects in the first page; PAGED {total} objects in {pages} pages",
                        first.objects.len()
                    ),
                ));
            }
            "huge-range" => {
                let refused = match storage::get_range("big", 0, u64::MAX) {
                    Ok(b) => format!("READ {} bytes", b.len()),
                    Err(e) => e.message,
                };
                let size = storage::head("big")?.map(|m| m.size).unwrap_or(0);
                let tail = storage::get_range("big", size.saturating_sub(10), 100)?;
                return Err(error(
                    WitErrorKind::Internal,
                    format!("UNBOUNDED: {refused}; TAIL {} bytes", tail.len()),
                ));
            }
            "upload-flood" => {
                let mut open = Vec::new();
                loop {
                    match storage::Upload::start(&format!("uploads/{}", open.len())) {
                        Ok(u) => open.push(u),
                        Err(e) => {
                            return Err(error(
                                WitErrorKind::Internal,
                                format!("OPENED {} uploads, then: {}", open.len(), e.message),
                            ));
                        }
                    }
                }
            }
            "upload-abandon" => {
                let dropped = storage::Upload::start("data/abandoned")?;
                dropped.write(&vec![0xAB; 3 << 20])?;
                drop(dropped);
                let forgotten = storage::Upload::start("data/forgotten")?;
                forgotten.write(&vec![0xAB; 3 << 20])?;
                std::mem::forget(forgotten);
            }
            "upload-fill" => {
                let u = storage::Upload::start("fill/one-big-object")?;
                let chunk = vec![0xDD; 1 << 20];
                while u.write(&chunk).is_ok() {}
                // Pretend nothing happened.
                let _ = u.complete();
            }
            "huge-get" => {
                let big = storage::get("big")?;
                return Err(error(
                    WitErrorKind::Internal,
                    format!("READ {} bytes", big.len()),
                ));
            }
            "disk-fill" => {
                let chunk = vec![0xDD; 1 << 20];
                for i in 0.. {
                    if storage::put(&format!("fill/{i}"), &chunk).is_err() {
                        // Pretend nothing happened.
                        break;
                    }
                }
            }
            "log-flood" => {
                for i in 0..100_000 {
                    logging::log(logging::Level::Info, &format!("flood line {i}"));
                }
            }
            _ => {}
        }
        let n = *self.batches.borrow();
        let path = if self.mode == "unsure-commit" {
            // Names no other round reuses, so deleting one round's files spares the others.
            format!("data/{}-{n}-{:016x}", self.split, nonce())
        } else {
            format!("data/{}-{n}", self.split)
        };
        storage::put(&path, &batch.ipc)?;
        self.written.borrow_mut().push(path);
        *self.batches.borrow_mut() += 1;
        *self.rows.borrow_mut() += batch.log_offsets.len() as u64;
        Ok(())
    }

    fn complete(&self) -> Result<WriteResult, LakeError> {
        let payload = match self.mode.as_str() {
            "huge-result" => vec![0xAB; 100 << 20],
            "big-result" => vec![0xAB; 16 << 20],
            "unsure-commit" => self.written.borrow().join("\n").into_bytes(),
            _ => self.split.clone().into_bytes(),
        };
        Ok(WriteResult {
            payload,
            record_count: *self.rows.borrow(),
            file_bytes: 0,
        })
    }
}

impl writer::Guest for Evil {
    type LakeWriter = EvilWriter;
}

/// The `batch-writer`: an [`EvilWriter`] fed with each batch's rows, or the data-plane abuse.
struct EvilBatchWriter(EvilWriter);

impl batch_writer::GuestLakeBatchWriter for EvilBatchWriter {
    fn open(context: WriterContext) -> Result<batch_writer::LakeBatchWriter, LakeError> {
        Ok(batch_writer::LakeBatchWriter::new(EvilBatchWriter(
            EvilWriter::new(&context),
        )))
    }

    fn write(&self, rows: &data_plane::Batch) -> Result<(), LakeError> {
        if self.0.mode == "data-plane-abuse" {
            return abuse_the_data_plane(rows);
        }
        writer::GuestLakeWriter::write(&self.0, rows.rows()?)
    }

    fn complete(&self) -> Result<WriteResult, LakeError> {
        writer::GuestLakeWriter::complete(&self.0)
    }
}

impl batch_writer::Guest for Evil {
    type LakeBatchWriter = EvilBatchWriter;
}

/// An Arrow IPC stream holding only the schema of one nullable `BIGINT` column `v`.
fn one_column_schema() -> Vec<u8> {
    use fluss_lake_guest_sdk::deps::{arrow_ipc, arrow_schema};
    let schema = arrow_schema::Schema::new(vec![arrow_schema::Field::new(
        "v",
        arrow_schema::DataType::Int64,
        true,
    )]);
    let mut out = Vec::new();
    let mut w = arrow_ipc::writer::StreamWriter::try_new(&mut out, &schema).expect("schema");
    w.finish().expect("schema");
    drop(w);
    out
}

/// Asks the host's encoder for everything it must refuse, then fails with the refusals.
fn abuse_the_data_plane(rows: &data_plane::Batch) -> Result<(), LakeError> {
    use data_plane::{ColumnSource, Compression, FileColumns, ParquetFile, ParquetSettings};
    let columns = |schema: Vec<u8>, sources: Vec<ColumnSource>| FileColumns { schema, sources };
    let honest = || columns(one_column_schema(), vec![ColumnSource::LogOffset]);
    let settings = |row_group_bytes: u64| ParquetSettings {
        compression: Compression::Zstd(1),
        max_row_group_rows: 1 << 20,
        row_group_bytes,
        embed_arrow_schema: false,
        struct_field_stats: false,
    };
    let mut refused = Vec::new();
    let mut abused = Vec::new();
    let mut expect_refusal = |what: &str, outcome: Result<(), LakeError>| match outcome {
        Ok(()) => abused.push(what.to_string()),
        Err(e) if e.kind == WitErrorKind::InvalidInput => {
            refused.push(format!("{what}: {}", e.message))
        }
        Err(e) => abused.push(format!("{what} failed as {:?}: {}", e.kind, e.message)),
    };
    let start = |path: &str, c: FileColumns, s: ParquetSettings| ParquetFile::start(path, &c, s);
    for path in ["../escaped.parquet", "/tmp/fluss-evil-native.parquet"] {
        expect_refusal(path, start(path, honest(), settings(1 << 20)).map(drop));
    }
    expect_refusal(
        "garbage schema",
        start("g", columns(b"garbage".to_vec(), vec![]), settings(1 << 20)).map(drop),
    );
    expect_refusal(
        "huge schema",
        start("h", columns(vec![0xFF; 2 << 20], vec![]), settings(1 << 20)).map(drop),
    );
    expect_refusal(
        "missing sources",
        start("m", columns(one_column_schema(), vec![]), settings(1 << 20)).map(drop),
    );
    expect_refusal(
        "two buckets",
        start(
            "b",
            columns(
                one_column_schema(),
                vec![ColumnSource::Bucket(1), ColumnSource::Bucket(2)],
            ),
            settings(1 << 20),
        )
        .map(drop),
    );
    expect_refusal(
        "endless row groups",
        start("r", honest(), settings(u64::MAX)).map(drop),
    );
    expect_refusal(
        "zstd level 99",
        start(
            "z",
            honest(),
            ParquetSettings {
                compression: Compression::Zstd(99),
                ..settings(1 << 20)
            },
        )
        .map(drop),
    );
    // A column the batch does not have: refused when rows are appended.
    let missing = start(
        "data/missing.parquet",
        columns(one_column_schema(), vec![ColumnSource::Fluss(10_000)]),
        settings(1 << 20),
    )?;
    expect_refusal("column 10000", missing.append(rows).map(drop));
    drop(missing);
    // Memory: row groups of 48 MiB hold about 128 MiB each; a 256 MiB instance holds one.
    let mut held = Vec::new();
    for i in 0..8 {
        match start(
            &format!("data/big-{i}.parquet"),
            honest(),
            settings(48 << 20),
        ) {
            Ok(f) => held.push(f),
            Err(e) => {
                expect_refusal("memory", Err(e));
                break;
            }
        }
    }
    drop(held);
    // Open files: each holds an upload slot.
    let mut open = Vec::new();
    for i in 0..64 {
        match start(
            &format!("data/open-{i}.parquet"),
            honest(),
            settings(1 << 20),
        ) {
            Ok(f) => open.push(f),
            Err(e) => {
                expect_refusal("open files", Err(e));
                break;
            }
        }
    }
    drop(open);
    let finished = start("data/finished.parquet", honest(), settings(1 << 20))?;
    finished.append(rows)?;
    finished.finish()?;
    expect_refusal("append after finish", finished.append(rows).map(drop));
    abuse_picks(rows, &mut expect_refusal)?;
    if abused.is_empty() {
        Err(error(
            WitErrorKind::InvalidInput,
            format!(
                "every data-plane abuse was refused: {}",
                refused.join(" | ")
            ),
        ))
    } else {
        Err(error(
            WitErrorKind::Internal,
            format!("ABUSED: {}", abused.join(" | ")),
        ))
    }
}

/// The 0.3.9 calls: columns a batch does not have or asked for twice, kept batches past the
/// instance's memory, picks outside the kept batches, computed columns that do not fit, and rows
/// appended to a file whose columns the plugin computes.
fn abuse_picks(
    rows: &data_plane::Batch,
    expect_refusal: &mut impl FnMut(&str, Result<(), LakeError>),
) -> Result<(), LakeError> {
    use data_plane::{
        Compression, ComputedColumn, ParquetFile, ParquetSettings, PickedColumns, PickedSource,
    };
    expect_refusal("column twice", rows.columns(&[0, 0]).map(drop));
    expect_refusal("column 10000", rows.columns(&[10_000]).map(drop));
    expect_refusal("no column", rows.columns(&[]).map(drop));
    // A batch is kept at most once (its bytes count against the instance's memory until the
    // handle is dropped).
    let kept = [rows.keep()?];
    expect_refusal("keeping a batch twice", rows.keep().map(drop));
    let n = rows.row_count();
    let start = || {
        ParquetFile::start_picked(
            "data/picked.parquet",
            &PickedColumns {
                schema: one_column_schema(),
                sources: vec![PickedSource::Computed(0)],
            },
            ParquetSettings {
                compression: Compression::Zstd(1),
                max_row_group_rows: 1 << 20,
                row_group_bytes: 1 << 20,
                embed_arrow_schema: false,
                struct_field_stats: false,
            },
        )
    };
    expect_refusal(
        "append to a file with computed columns",
        start()?.append(rows).map(drop),
    );
    let attempt = |picks: Vec<(u32, u32)>, computed: Vec<ComputedColumn>| {
        let f = start()?;
        let handles: Vec<&data_plane::KeptBatch> = kept.iter().collect();
        f.append_picked(&handles, &picks, &computed).map(drop)
    };
    expect_refusal(
        "pick of batch 1",
        attempt(vec![(1, 0)], vec![ComputedColumn::Int64(vec![0])]),
    );
    expect_refusal(
        "pick past the rows",
        attempt(vec![(0, n)], vec![ComputedColumn::Int64(vec![0])]),
    );
    expect_refusal(
        "computed values short",
        attempt(vec![(0, 0), (0, 0)], vec![ComputedColumn::Int64(vec![0])]),
    );
    expect_refusal(
        "65537 picks",
        attempt(
            vec![(0, 0); 65_537],
            vec![ComputedColumn::Int64(vec![0; 65_537])],
        ),
    );
    Ok(())
}

/// Tries to use the `table-catalog` import beyond its own table; answers, as an error, what
/// the host said (the test asserts on it, and that the catalog's table did not change).
/// Writes `metadata` changed by `change` as a new metadata file of the table and asks the host
/// to point the table at it.
fn swap_to(
    expected: &str,
    metadata: &fluss_lake_guest_sdk::deps::serde_json::Value,
    change: impl FnOnce(&mut fluss_lake_guest_sdk::deps::serde_json::Value),
) -> Result<(), LakeError> {
    use fluss_lake_guest_sdk::bindings::fluss::lake::table_catalog;
    let mut m = metadata.clone();
    change(&mut m);
    let file = "metadata/00099-evil.metadata.json";
    storage::put(file, m.to_string().as_bytes())?;
    table_catalog::swap_metadata_file(expected, file)
}

/// Tries to use the `version-catalog` import (a Paimon REST catalog's table) beyond its own
/// table; answers, as an error, what the host said.
fn version_attack(attack: &str) -> LakeError {
    use fluss_lake_guest_sdk::bindings::fluss::lake::version_catalog;
    if let Err(e) = version_catalog::latest_version() {
        return e;
    }
    let snapshot = |base: &str| {
        format!(
            r#"{{"version":3,"id":1,"schemaId":0,"baseManifestList":"{base}","deltaManifestList":"manifest-list-evil-1","commitUser":"evil","commitIdentifier":1,"commitKind":"APPEND","timeMillis":1}}"#
        )
    };
    let answer = match attack {
        // A snapshot whose readers would read another table's manifests.
        "foreign-manifest" => version_catalog::commit_version(
            &snapshot("../../victim/manifest/manifest-list-0"),
            "[]",
        ),
        // A snapshot far larger than any.
        "huge" => version_catalog::commit_version(
            &format!(
                "{}{}",
                snapshot("manifest-list-evil-0"),
                " ".repeat(5 << 20)
            ),
            "[]",
        ),
        // Deeply nested statistics, to exhaust a parser's stack.
        "deep-json" => {
            version_catalog::commit_version(&snapshot("manifest-list-evil-0"), &"[".repeat(200_000))
        }
        other => {
            return error(
                WitErrorKind::InvalidInput,
                format!("unknown attack {other}"),
            );
        }
    };
    let attack = format!("version-{attack}");
    match answer {
        Ok(_) => error(
            WitErrorKind::Internal,
            format!("catalog attack {attack} was accepted"),
        ),
        Err(e) => error(
            e.kind,
            format!("catalog attack {attack} refused: {}", e.message),
        ),
    }
}

fn catalog_attack(attack: &str) -> LakeError {
    use fluss_lake_guest_sdk::bindings::fluss::lake::table_catalog;
    use fluss_lake_guest_sdk::deps::serde_json;
    if let Some(attack) = attack.strip_prefix("version-") {
        return version_attack(attack);
    }
    let current = match table_catalog::load_table() {
        Ok(Some(state)) => state,
        Ok(None) => return error(WitErrorKind::NotFound, "no table".into()),
        Err(e) => return e,
    };
    let metadata: serde_json::Value = serde_json::from_slice(&current.metadata).unwrap_or_default();
    let main = metadata["current-snapshot-id"].clone();
    let location = metadata["location"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let main_is =
        format!(r#"[{{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":{main}}}]"#);
    let snapshot = |list: &str| {
        format!(
            r#"[{{"action":"add-snapshot","snapshot":{{"snapshot-id":4242,"sequence-number":99,"timestamp-ms":1,"manifest-list":"{list}","summary":{{"operation":"append"}}}}}},{{"action":"set-snapshot-ref","ref-name":"main","snapshot-id":4242,"type":"branch"}}]"#
        )
    };
    let swapped = |r: Result<(), LakeError>| {
        r.map(|()| table_catalog::TableState {
            metadata_file: String::new(),
            metadata: Vec::new(),
        })
    };
    let answer = match attack {
        // Moves its table onto another table's files.
        "set-location" => table_catalog::commit_table(
            &main_is,
            &format!(r#"[{{"action":"set-location","location":"{location}-victim"}}]"#),
        ),
        // Makes its table a new table (another UUID) or an older format.
        "assign-uuid" => table_catalog::commit_table(
            "[]",
            r#"[{"action":"assign-uuid","uuid":"00000000-0000-0000-0000-000000000001"}]"#,
        ),
        // A snapshot whose manifest list is another table's.
        "foreign-manifest-list" => table_catalog::commit_table(
            &main_is,
            &snapshot(&format!("{location}-victim/metadata/snap-1.avro")),
        ),
        // Asserts another table's UUID, hoping the host forwards it as its own.
        "other-uuid" => table_catalog::commit_table(
            r#"[{"type":"assert-table-uuid","uuid":"00000000-0000-0000-0000-000000000001"}]"#,
            &snapshot(&format!("{location}/metadata/snap-1.avro")),
        ),
        // A request far larger than any commit.
        "huge-updates" => table_catalog::commit_table(&main_is, &"[".repeat(64 << 20)),
        // Deeply nested JSON, to exhaust a parser's stack.
        "deep-json" => table_catalog::commit_table(&main_is, &"[".repeat(200_000)),
        // Creates a table of its own choosing where the host did not ask for one.
        "create-elsewhere" => table_catalog::create_table(&format!(
            r#"{{"name":"victim","location":"{location}-victim","schema":{{"type":"struct","schema-id":0,"fields":[]}}}}"#
        )),
        // Metadata-pointer catalogs (Glue, Hive): the pointer swapped to a file outside the
        // table's metadata folder.
        "swap-escape" => swapped(table_catalog::swap_metadata_file(
            &current.metadata_file,
            "metadata/../../victim/metadata/00001-evil.metadata.json",
        )),
        // ... to its own file that moves the table onto another table's files,
        "swap-moved" => swapped(swap_to(&current.metadata_file, &metadata, |m| {
            m["location"] = serde_json::json!(format!("{location}-victim"));
        })),
        // ... that makes it another table,
        "swap-other-uuid" => swapped(swap_to(&current.metadata_file, &metadata, |m| {
            m["table-uuid"] = serde_json::json!("00000000-0000-0000-0000-000000000001");
        })),
        // ... that commits another table's manifests,
        "swap-foreign-manifest-list" => swapped(swap_to(&current.metadata_file, &metadata, |m| {
            m["snapshots"] = serde_json::json!([{
                "snapshot-id": 4242, "sequence-number": 1, "timestamp-ms": 1,
                "manifest-list": format!("{location}-victim/metadata/snap-1.avro"),
                "summary": {"operation": "append"}, "schema-id": 0}]);
            m["current-snapshot-id"] = serde_json::json!(4242);
            m["refs"] = serde_json::json!({"main": {"snapshot-id": 4242, "type": "branch"}});
        })),
        // ... or that moves where every later writer writes its metadata.
        "swap-metadata-path" => swapped(swap_to(&current.metadata_file, &metadata, |m| {
            m["properties"]["write.metadata.path"] =
                serde_json::json!(format!("{location}-victim"));
        })),
        other => {
            return error(
                WitErrorKind::InvalidInput,
                format!("unknown attack {other}"),
            );
        }
    };
    match answer {
        Ok(_) => error(
            WitErrorKind::Internal,
            format!("catalog attack {attack} was accepted"),
        ),
        Err(e) => error(
            e.kind,
            format!("catalog attack {attack} refused: {}", e.message),
        ),
    }
}

struct EvilCommitter {
    mode: String,
    table: TableInfo,
    warehouse: String,
}

impl committer::GuestLakeCommitter for EvilCommitter {
    fn open(context: CommitterContext) -> Result<committer::LakeCommitter, LakeError> {
        Ok(committer::LakeCommitter::new(EvilCommitter {
            mode: mode(&context.table, &context.config),
            warehouse: setting(&context.table, &context.config, "warehouse").unwrap_or_default(),
            table: context.table,
        }))
    }

    fn to_committable(&self, write_results: Vec<Vec<u8>>) -> Result<Vec<u8>, LakeError> {
        Ok(write_results.join(&b','))
    }

    fn commit(
        &self,
        committable: Vec<u8>,
        properties: Vec<(String, String)>,
        _tiered_base: Option<i64>,
    ) -> Result<CommitResult, LakeError> {
        if self.mode == "replay-offsets" {
            // Keep the genuine offsets path for a later round, and fail; the host's probe
            // that follows is answered "nothing published" (true).
            let offsets = properties
                .iter()
                .find(|(k, _)| k == "fluss-offsets")
                .map(|(_, v)| v.clone())
                .unwrap_or_default();
            storage::put("replay/path", offsets.as_bytes())?;
            storage::put("replay/probe-pending", b"")?;
            return Err(error(WitErrorKind::Io, "deliberately failed commit".into()));
        }
        if let Some(attack) = self.mode.strip_prefix("catalog-") {
            return Err(catalog_attack(attack));
        }
        let existing = listed("snapshots/")?.len() as i64;
        let id = existing + 1;
        let mut body = committable;
        for (k, v) in properties {
            body.extend_from_slice(format!("\n{k}={v}").as_bytes());
        }
        storage::put_if_absent(&format!("snapshots/{id}"), &body)?;
        if self.mode == "unsure-commit" {
            return Err(error(
                WitErrorKind::Io,
                "the connection was lost after the commit was sent".into(),
            ));
        }
        let snapshot_id = if self.mode == "malformed" { -7 } else { id };
        Ok(CommitResult {
            snapshot_id,
            readable: ReadableSnapshot::Committed,
            earliest_snapshot_to_keep: None,
            stats: TieringStats {
                file_size: None,
                record_count: None,
            },
        })
    }

    fn abort(&self, committable: Vec<u8>) -> Result<(), LakeError> {
        if self.mode == "unsure-commit" {
            // A real abort: delete every data object of the round.
            for path in String::from_utf8_lossy(&committable).split([',', '\n']) {
                if !path.is_empty() {
                    storage::delete_object(path)?;
                }
            }
        }
        Ok(())
    }

    fn get_missing_lake_snapshot(
        &self,
        latest: Option<i64>,
    ) -> Result<Option<CommittedSnapshot>, LakeError> {
        if self.mode == "unsure-commit" && !listed("snapshots/")?.is_empty() {
            return Err(error(
                WitErrorKind::Io,
                "cannot read the table's snapshots right now".into(),
            ));
        }
        if self.mode == "own-offsets" {
            // An offsets file of its own making, inside its own table, under a path shaped
            // like the coordinator's (`…/lake/<db>/<table>-<id>/metadata/<uuid>.offsets`).
            let t = &self.table;
            let rel = format!(
                "x/lake/{}/{}-{}/metadata/0f8fad5b-d9cb-469f-a165-70867728950e.offsets",
                t.path.database, t.path.table, t.table_id
            );
            let body = format!(
                r#"{{"version":1,"table_id":{},"bucket_offsets":[1000000]}}"#,
                t.table_id
            );
            storage::put(&rel, body.as_bytes())?;
            let full = format!(
                "{}/{}/{}/{rel}",
                self.warehouse.trim_end_matches('/'),
                t.path.database,
                t.path.table
            );
            return Ok(Some(CommittedSnapshot {
                snapshot_id: latest.unwrap_or(0) + 1,
                properties: vec![("fluss-offsets".into(), full)],
            }));
        }
        if self.mode == "replay-offsets" {
            if storage::head("replay/probe-pending")?.is_some() {
                storage::delete_object("replay/probe-pending")?;
                return Ok(None);
            }
            if let Ok(path) = storage::get("replay/path") {
                return Ok(Some(CommittedSnapshot {
                    snapshot_id: latest.unwrap_or(0) + 1,
                    properties: vec![(
                        "fluss-offsets".into(),
                        String::from_utf8_lossy(&path).into_owned(),
                    )],
                }));
            }
            return Ok(None);
        }
        if self.mode == "forged-offsets" {
            // Claims a snapshot Fluss missed, with an offsets file of its own making.
            return Ok(Some(CommittedSnapshot {
                snapshot_id: latest.unwrap_or(0) + 1,
                properties: vec![("fluss-offsets".into(), "/tmp/forged.offsets".into())],
            }));
        }
        Ok(None)
    }
}

impl committer::Guest for Evil {
    type LakeCommitter = EvilCommitter;
}

impl maintenance::Guest for Evil {
    fn maintain(
        context: CommitterContext,
        request: MaintenanceRequest,
    ) -> Result<MaintenanceReport, LakeError> {
        let mut report = fluss_lake_guest_sdk::maintenance::nothing_done();
        match mode(&context.table, &context.config).as_str() {
            "maintain-loop" => loop {
                std::hint::black_box(compute(1_000_000));
            },
            "maintain-flood" => report.committed_snapshots = (1..=50_000).collect(),
            "maintain-fail" => {
                return Err(error(
                    WitErrorKind::Io,
                    "deliberately failed maintenance".into(),
                ));
            }
            "over-budget" => {
                maintenance_status::over_budget(u32::MAX);
                maintenance_status::over_budget(7);
            }
            _ => {}
        }
        let n = listed("maintained/")?.len() + 1;
        let record = format!(
            "keep-since={:?} expire={} compact={}",
            request.keep_since, request.expire_snapshots, request.compact
        );
        storage::put(&format!("maintained/{n:06}"), record.as_bytes())?;
        Ok(report)
    }
}

impl bucket_replace::Guest for Evil {
    fn check_replace(context: CommitterContext) -> Result<(), LakeError> {
        if mode(&context.table, &context.config) == "replace-loop" {
            loop {
                std::hint::black_box(compute(1_000_000));
            }
        }
        Err(error(
            WitErrorKind::Unsupported,
            "the evil lake does not replace buckets".into(),
        ))
    }

    fn commit_replacing(
        context: CommitterContext,
        _committable: Vec<u8>,
        _properties: Vec<(String, String)>,
        _tiered_base: Option<i64>,
        _replace: Vec<BucketRef>,
    ) -> Result<CommitResult, LakeError> {
        Self::check_replace(context).map(|()| unreachable!("check_replace always fails"))
    }
}

// Only on wasm32: the exported symbols' names contain `:`, which native linkers refuse (the
// native build is for lints only).
#[cfg(target_arch = "wasm32")]
fluss_lake_guest_sdk::export!(Evil);
