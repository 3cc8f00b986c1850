//! Wall clock. Inside the sandbox the host's `clock` import is the only clock a plugin has;
//! natively (tests, benchmarks) the system clock stands in.

/// Milliseconds since the Unix epoch.
pub fn now_millis() -> i64 {
    #[cfg(target_arch = "wasm32")]
    {
        crate::bindings::fluss::lake::clock::now_millis()
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0)
    }
}
