//! Whether the host is ready to tier: what `/readyz` answers and `fluss_lake_ready` shows.
//!
//! Ready means every check holds: plugins are loaded, the last heartbeat succeeded and one
//! succeeded recently (a heartbeat stuck on a frozen coordinator makes the host unready
//! before its RPC times out), and the host is not shutting down. Liveness (`/healthz`) is
//! only that the process answers.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

/// The process-wide health.
pub fn health() -> &'static Health {
    static HEALTH: LazyLock<Health> = LazyLock::new(Health::default);
    &HEALTH
}

#[derive(Default)]
pub struct Health {
    plugins: AtomicUsize,
    stopping: AtomicBool,
    /// What startup is doing (loading plugins, opening warehouses, connecting); `None` once
    /// the host takes tables, or in a process that never started one (tests).
    starting: Mutex<Option<&'static str>>,
    heartbeat: Mutex<HeartbeatState>,
}

#[derive(Default)]
struct HeartbeatState {
    /// A heartbeat older than this is stale (heartbeat interval + RPC timeout); none before
    /// the host registered.
    stale_after: Option<Duration>,
    last_ok: Option<Instant>,
    failures_in_a_row: u32,
    last_error: Option<String>,
}

/// One check of `/readyz`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub name: &'static str,
    pub ok: bool,
    pub detail: String,
}

impl Health {
    /// Plugins serving new rounds now (set at startup and after every reload).
    pub fn set_plugins(&self, loaded: usize) {
        self.plugins.store(loaded, Ordering::Relaxed);
    }

    /// How old the last successful heartbeat may be while the host counts as ready.
    pub fn expect_heartbeats_every(&self, stale_after: Duration) {
        self.state().stale_after = Some(stale_after);
    }

    pub fn heartbeat_ok(&self) {
        let mut s = self.state();
        s.last_ok = Some(Instant::now());
        s.failures_in_a_row = 0;
        s.last_error = None;
    }

    pub fn heartbeat_failed(&self, error: &str) {
        let mut s = self.state();
        s.failures_in_a_row += 1;
        s.last_error = Some(error.chars().take(300).collect());
    }

    /// Startup is at `step` (`None`: done, the host takes tables).
    pub fn starting(&self, step: Option<&'static str>) {
        *self.starting.lock().unwrap_or_else(|p| p.into_inner()) = step;
    }

    /// The host got SIGTERM: it finishes its rounds but takes no new work.
    pub fn stopping(&self) {
        self.stopping.store(true, Ordering::Relaxed);
    }

    fn state(&self) -> std::sync::MutexGuard<'_, HeartbeatState> {
        self.heartbeat.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn checks(&self) -> Vec<Check> {
        let plugins = self.plugins.load(Ordering::Relaxed);
        let s = self.state();
        let coordinator = match (s.last_ok, s.stale_after) {
            (None, _) | (_, None) => Check {
                name: "coordinator",
                ok: false,
                detail: match &s.last_error {
                    Some(e) => format!("not registered yet: {e}"),
                    None => "not registered yet".to_string(),
                },
            },
            (Some(_), _) if s.failures_in_a_row > 0 => Check {
                name: "coordinator",
                ok: false,
                detail: format!(
                    "{} heartbeat(s) failed in a row: {}",
                    s.failures_in_a_row,
                    s.last_error.as_deref().unwrap_or("")
                ),
            },
            (Some(at), Some(stale_after)) => {
                let age = at.elapsed();
                Check {
                    name: "coordinator",
                    ok: age <= stale_after,
                    detail: if age <= stale_after {
                        format!("last heartbeat {:.1}s ago", age.as_secs_f64())
                    } else {
                        format!(
                            "no heartbeat answered for {:.1}s (more than {:?})",
                            age.as_secs_f64(),
                            stale_after
                        )
                    },
                }
            }
        };
        vec![
            Check {
                name: "plugins",
                ok: plugins > 0,
                detail: format!("{plugins} loaded"),
            },
            coordinator,
            {
                let starting = *self.starting.lock().unwrap_or_else(|p| p.into_inner());
                let stopping = self.stopping.load(Ordering::Relaxed);
                Check {
                    name: "running",
                    ok: !stopping && starting.is_none(),
                    detail: match (stopping, starting) {
                        (true, _) => "shutting down".to_string(),
                        (false, Some(step)) => format!("starting: {step}"),
                        (false, None) => "taking tables".to_string(),
                    },
                }
            },
        ]
    }

    pub fn is_ready(&self) -> bool {
        self.checks().iter().all(|c| c.ok)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_only_with_plugins_and_fresh_successful_heartbeats() {
        let h = Health::default();
        assert!(!h.is_ready());
        h.set_plugins(3);
        h.expect_heartbeats_every(Duration::from_millis(200));
        assert!(!h.is_ready(), "not registered yet");
        h.heartbeat_ok();
        assert!(h.is_ready(), "{:?}", h.checks());
        h.heartbeat_failed("rpc timed out");
        let checks = h.checks();
        assert!(!h.is_ready());
        assert!(
            checks[1]
                .detail
                .contains("1 heartbeat(s) failed in a row: rpc timed out")
        );
        h.heartbeat_ok();
        assert!(h.is_ready());
        std::thread::sleep(Duration::from_millis(250));
        assert!(!h.is_ready(), "a stuck heartbeat makes the host unready");
        h.starting(Some("loading plugins"));
        assert!(!h.is_ready());
        assert_eq!(h.checks()[2].detail, "starting: loading plugins");
        h.starting(None);
        h.heartbeat_ok();
        assert!(h.is_ready());
        h.stopping();
        assert!(!h.is_ready());
    }
}
