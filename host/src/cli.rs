//! The `fluss-lake-host` command: its subcommands, logging, the async runtime and the signals
//! that stop the service.
//!
//! It lives in the library, and the binary only calls [`main`], because Rust compiles the
//! futures of a library's async functions again in every crate that polls them: a binary
//! that awaited the service itself would compile most of the host a second time.

use std::process::ExitCode;

use crate::config::{HostConfig, LogFormat};
use crate::metrics::server::MetricsServer;
use crate::startup;
use crate::tiering::service::TieringService;

/// The whole process: what `fluss-lake-host ARGS...` does.
pub fn main() -> ExitCode {
    return_large_buffers_to_the_system();
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some(crate::plugin::compile::COMPILE_COMMAND) {
        return crate::plugin::compile::child_main(&args);
    }
    if args.get(1).map(String::as_str) == Some("plugins") {
        return plugins_command(&args);
    }
    let config = match HostConfig::from_args(args) {
        Ok(c) => c,
        Err(e) => return clap_exit(e),
    };
    if let Some(text) = &config.print_config {
        print!("{text}");
        return ExitCode::SUCCESS;
    }
    init_logging(config.log_format);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Logs go to stderr: text for people (the default), or one JSON object per line whose
/// `span` holds the round's context (round, table, plugin, bucket).
fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    match format {
        LogFormat::Text => tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init(),
        LogFormat::Json => tracing_subscriber::fmt()
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .init(),
    }
}

/// `fluss-lake-host plugins inspect PATH` and `fluss-lake-host plugins list`.
fn plugins_command(args: &[String]) -> ExitCode {
    use crate::plugin::inspect::{InspectCli, inspect};
    use crate::plugin::list::{ListCli, list};
    use clap::Parser;
    fn parsed<T: Parser>(args: &[String]) -> Result<T, ExitCode> {
        T::try_parse_from(args[2..].iter()).map_err(clap_exit)
    }
    match args.get(2).map(String::as_str) {
        Some("inspect") => {
            let cli: InspectCli = match parsed(args) {
                Ok(c) => c,
                Err(code) => return code,
            };
            match run_subcommand(inspect(&cli, &mut std::io::stdout())) {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::FAILURE,
                Err(code) => code,
            }
        }
        Some("list") => {
            let cli: ListCli = match parsed(args) {
                Ok(c) => c,
                Err(code) => return code,
            };
            match run_subcommand(list(&cli, &mut std::io::stdout())) {
                Ok(()) => ExitCode::SUCCESS,
                Err(code) => code,
            }
        }
        _ => {
            eprintln!(
                "usage: fluss-lake-host plugins inspect PATH[#sha256=HEX] [--plugin-memory-limit SIZE]\n       \
                 fluss-lake-host plugins list [--plugin PATH]... [--plugin-dir DIR]... [--no-builtin-plugins]"
            );
            ExitCode::from(2)
        }
    }
}

/// Prints a command-line error (or `--help`, `--version`) and exits 2 (0 for help).
fn clap_exit(e: clap::Error) -> ExitCode {
    let _ = e.print();
    if e.use_stderr() {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}

/// Runs a subcommand on a single-threaded runtime; a failure is one `error:` line.
fn run_subcommand<T>(
    work: impl std::future::Future<Output = crate::Result<T>>,
) -> Result<T, ExitCode> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            eprintln!("error: cannot start the async runtime: {e}");
            ExitCode::FAILURE
        })?;
    runtime.block_on(work).map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::FAILURE
    })
}

async fn run(config: HostConfig) -> crate::Result<()> {
    // SIGHUP asks for a plugin reload. Its default action ends the process, so one that comes
    // while the host starts (compiling plugins can take a minute) would kill it: the handler is
    // installed first (tokio keeps it for the life of the process), and the plugin watch,
    // started once plugins are loaded, reads the files again anyway.
    #[cfg(unix)]
    if let Err(e) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
        tracing::warn!("cannot handle SIGHUP: {e}");
    }
    // Listening first: a wrong address stops the host at once, and /healthz answers while
    // plugins load.
    if let Some(address) = config.metrics_address {
        let server = MetricsServer::bind(address).await?;
        tracing::info!(address = ?server.local_addr(), "serving /metrics, /healthz and /readyz");
        tokio::spawn(server.serve());
    }
    let health = crate::metrics::health::health();
    health.starting(Some("loading plugins"));
    let plugins = startup::load_plugins(&config).await?;
    tokio::spawn(plugins.clone().watch(config.plugin_watch_interval));
    health.starting(Some("opening the lake warehouses"));
    let warehouses = startup::open_warehouses(&config).await?;
    health.starting(Some("connecting to the Fluss cluster"));
    let ctx = startup::connect(config, plugins, warehouses).await?;
    let service = TieringService::start(ctx).await?;
    health.starting(None);
    service.run(shutdown_signal()).await
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}

/// Every split allocates and frees multi-MiB buffers (gathered batches, their IPC encodings,
/// upload parts). glibc's malloc serves allocations above a threshold with their own mappings,
/// but raises that threshold to the size of every such buffer freed, after which these buffers
/// come from its per-thread arenas, which keep the memory once it is freed: a fixed 1 MiB
/// threshold keeps them out of the arenas, so peak memory follows the buffers actually live.
/// The price is page faults on such buffers each time they are allocated again (parquet-rs's
/// dictionary tables in every row group): about 5% of a writer's CPU against about 25 MiB of
/// peak memory with a 3 MiB threshold (docs/benchmark.md, "Where the CPU goes").
/// The native data plane encodes on the runtime's blocking threads, each of which would get
/// an arena of its own (up to 8 per core), each keeping what it freed: one arena per core
/// serves them without contention and keeps the freed memory shared.
fn return_large_buffers_to_the_system() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get().max(2));
        // SAFETY: mallopt only adjusts allocator parameters; called before any other thread
        // runs.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
            libc::mallopt(libc::M_ARENA_MAX, i32::try_from(cores).unwrap_or(i32::MAX));
        }
    }
}
