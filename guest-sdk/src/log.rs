//! Logging into the host's log (the WIT `logging` import), through macros so call sites read
//! like the `log` crate: `sdk::info!("wrote {} files", n)`.
//!
//! Natively there is no host: messages go to stderr when `FLUSS_LAKE_GUEST_LOG` is set, and
//! are dropped otherwise so tests and benchmarks stay quiet.

/// Severity, mirroring the WIT `level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Very verbose.
    Trace,
    /// Debugging detail.
    Debug,
    /// Normal operation.
    Info,
    /// Something unexpected but handled.
    Warn,
    /// A failure.
    Error,
}

/// Emits one message. Prefer the macros.
pub fn log(level: Level, message: &str) {
    #[cfg(target_arch = "wasm32")]
    {
        use crate::bindings::fluss::lake::logging::{self, Level as L};
        let l = match level {
            Level::Trace => L::Trace,
            Level::Debug => L::Debug,
            Level::Info => L::Info,
            Level::Warn => L::Warn,
            Level::Error => L::Error,
        };
        logging::log(l, message);
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        if std::env::var_os("FLUSS_LAKE_GUEST_LOG").is_some() {
            eprintln!("[{level:?}] {message}");
        }
    }
}

/// Logs at trace level with `format!` arguments.
#[macro_export]
macro_rules! trace {
    ($($arg:tt)+) => { $crate::log::log($crate::log::Level::Trace, &format!($($arg)+)) };
}
/// Logs at debug level with `format!` arguments.
#[macro_export]
macro_rules! debug {
    ($($arg:tt)+) => { $crate::log::log($crate::log::Level::Debug, &format!($($arg)+)) };
}
/// Logs at info level with `format!` arguments.
#[macro_export]
macro_rules! info {
    ($($arg:tt)+) => { $crate::log::log($crate::log::Level::Info, &format!($($arg)+)) };
}
/// Logs at warn level with `format!` arguments.
#[macro_export]
macro_rules! warn {
    ($($arg:tt)+) => { $crate::log::log($crate::log::Level::Warn, &format!($($arg)+)) };
}
/// Logs at error level with `format!` arguments.
#[macro_export]
macro_rules! error {
    ($($arg:tt)+) => { $crate::log::log($crate::log::Level::Error, &format!($($arg)+)) };
}
