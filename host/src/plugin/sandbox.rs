//! The limits a plugin instance runs under, beyond what WebAssembly already isolates.
//!
//! - Memory: every linear memory and table growth goes through [`SandboxLimits`], which
//!   counts the instance's memories together (a component may hold several); growing past
//!   the instance's ceiling traps the instance (and only it), and the host reports the limit
//!   by name rather than as an anonymous trap. Resource handles (the component's own and
//!   WASI's) are capped at [`MAX_HANDLES`] per instance.
//! - Time: the engine's epoch ticks every [`EPOCH_TICK`](super::engine::EPOCH_TICK). On every
//!   tick a running call yields to the async runtime, so a long but honest `write` shares the
//!   CPU with other tables, and then checks its deadline, so an endless loop is interrupted.
//!   Epochs only fire in guest code; a guest blocked inside a host import (a WASI timer, a
//!   slow store) is caught by the host-side timer every call also races against.
//! - Storage: a round may write at most [`StorageQuota`] bytes and objects, and a listing
//!   returns at most a bounded number of entries.
//! - Logging: a plugin's log lines pass a [`LogRateLimit`], so a flood costs the host
//!   nothing but a count of dropped lines.
//! - Size: what a call hands back to the host (write results, committables, locations,
//!   snapshot properties, messages) is bounded, so a guest cannot make the host hold or
//!   forward unbounded data.
//! - Location: a table's lake location must name the table itself (`<database>…/<table>…`)
//!   and may not overlap the location of another table this host is tiering; together with
//!   [`storage`](super::storage) refusing `..` and absolute paths, a plugin cannot reach
//!   another table's files.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use wasmtime::ResourceLimiter;

use crate::error::{Error, ErrorKind, Result};

/// Uploads one instance may have open at once: each holds up to
/// [`super::storage::UPLOAD_PARTS_IN_FLIGHT`] + 1 parts of host memory.
pub const MAX_OPEN_UPLOADS: usize = 4;

/// Tables and instances are tiny in practice; these caps only stop abuse.
const MAX_TABLE_ELEMENTS: usize = 1 << 20;
const MAX_INSTANCES: usize = 16;
const MAX_TABLES: usize = 64;
const MAX_MEMORIES: usize = 4;
/// Live resource handles one instance may hold, in the component's handle tables and in
/// WASI's resource table alike; an honest plugin holds a handful.
pub const MAX_HANDLES: usize = 10_000;
/// Longest error or log message kept from a plugin; the rest is cut.
pub const MAX_MESSAGE_CHARS: usize = 8 * 1024;
/// Longest format name, plugin version or contract version kept from a plugin's `info`.
pub const MAX_INFO_FIELD_BYTES: usize = 256;

/// Bytes of a plugin's WASI stderr kept: the end of what it wrote (a Rust panic's message
/// is well within it), shown in the error of a trap.
pub const STDERR_TAIL_BYTES: usize = 2048;

/// A plugin instance's WASI stderr: a ring of its last [`STDERR_TAIL_BYTES`] bytes. Writing
/// never blocks, never fails and costs the host no more than the ring (a flood only spends
/// the guest's own call time); nothing of it reaches the host's log unless the instance
/// traps, when [`tail`](Self::tail) goes into the error.
#[derive(Clone, Default)]
pub struct StderrTail(Arc<Mutex<std::collections::VecDeque<u8>>>);

impl StderrTail {
    fn push(&self, bytes: &[u8]) {
        let mut ring = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let keep = &bytes[bytes.len().saturating_sub(STDERR_TAIL_BYTES)..];
        let overflow = (ring.len() + keep.len()).saturating_sub(STDERR_TAIL_BYTES);
        let drop = overflow.min(ring.len());
        ring.drain(..drop);
        ring.extend(keep);
    }

    /// The last lines written, escaped like all plugin text; `None` when nothing was.
    pub fn tail(&self) -> Option<String> {
        let ring = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let (a, b) = ring.as_slices();
        let text = String::from_utf8_lossy(&[a, b].concat()).trim().to_string();
        // Escaping grows a character to at most 10 bytes: the whole tail is kept.
        (!text.is_empty()).then(|| plugin_text(&text, 10 * STDERR_TAIL_BYTES))
    }
}

impl wasmtime_wasi::cli::IsTerminal for StderrTail {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl wasmtime_wasi::cli::StdoutStream for StderrTail {
    fn p2_stream(&self) -> Box<dyn wasmtime_wasi::p2::OutputStream> {
        Box::new(self.clone())
    }
    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

/// Room offered to every write: any size is taken (and cut to the ring).
const STDERR_PERMIT: usize = 64 * 1024;

impl wasmtime_wasi::p2::OutputStream for StderrTail {
    fn write(&mut self, bytes: bytes::Bytes) -> wasmtime_wasi::p2::StreamResult<()> {
        self.push(&bytes);
        Ok(())
    }
    fn flush(&mut self) -> wasmtime_wasi::p2::StreamResult<()> {
        Ok(())
    }
    fn check_write(&mut self) -> wasmtime_wasi::p2::StreamResult<usize> {
        Ok(STDERR_PERMIT)
    }
}

#[async_trait::async_trait]
impl wasmtime_wasi::p2::Pollable for StderrTail {
    async fn ready(&mut self) {}
}

impl tokio::io::AsyncWrite for StderrTail {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        self.push(buf);
        std::task::Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

/// Resource limits of one instance, remembering which limit was hit so that the trap it
/// causes can be reported as "exceeded its memory limit" rather than as a generic trap.
pub struct SandboxLimits {
    memory_limit: usize,
    /// Bytes of every linear memory of the instance together.
    memory_total: usize,
    /// Elements of every table of the instance together.
    table_elements: usize,
    /// Host memory held for the instance (files the native data plane encodes for it),
    /// counted against the same limit as its linear memories.
    host_reserved: usize,
    pub(super) memory_exceeded: Option<usize>,
}

impl SandboxLimits {
    pub fn new(memory_limit: usize) -> Self {
        Self {
            memory_limit,
            memory_total: 0,
            table_elements: 0,
            host_reserved: 0,
            memory_exceeded: None,
        }
    }

    /// Holds `bytes` of host memory for the instance, if they fit its limit beside its
    /// memories and what is already held; otherwise the bytes held and the limit.
    pub fn reserve(&mut self, bytes: usize) -> std::result::Result<(), (usize, usize)> {
        let held = self.memory_total.saturating_add(self.host_reserved);
        if held.saturating_add(bytes) > self.memory_limit {
            return Err((held, self.memory_limit));
        }
        self.host_reserved += bytes;
        Ok(())
    }

    /// Gives back what [`reserve`](Self::reserve) held.
    pub fn release(&mut self, bytes: usize) {
        self.host_reserved = self.host_reserved.saturating_sub(bytes);
    }

    /// Counts `bytes` the instance holds outside its memories and tables (its globals and
    /// function references in the host) against the limit, before it grows anything.
    pub fn count_fixed(&mut self, bytes: usize) {
        self.memory_total = self.memory_total.saturating_add(bytes);
    }

    pub fn memory_limit(&self) -> usize {
        self.memory_limit
    }

    /// Bytes of the instance's linear memories now: their high-water mark, as linear memory
    /// never shrinks.
    pub fn memory_bytes(&self) -> usize {
        self.memory_total
    }
}

impl ResourceLimiter for SandboxLimits {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        // `current` is this memory's size (0 for a memory being created), so the sum over
        // every memory of the instance is what is checked, not each memory alone.
        let total = self
            .memory_total
            .saturating_sub(current)
            .saturating_add(desired);
        if total.saturating_add(self.host_reserved) > self.memory_limit {
            self.memory_exceeded = Some(total);
            return Err(wasmtime::Error::msg(format!(
                "memory of {total} bytes requested, over the instance limit of {} bytes",
                self.memory_limit
            )));
        }
        self.memory_total = total;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let total = self
            .table_elements
            .saturating_sub(current)
            .saturating_add(desired);
        if total > MAX_TABLE_ELEMENTS {
            return Ok(false);
        }
        self.table_elements = total;
        Ok(true)
    }

    fn instances(&self) -> usize {
        MAX_INSTANCES
    }

    fn tables(&self) -> usize {
        MAX_TABLES
    }

    fn memories(&self) -> usize {
        MAX_MEMORIES
    }
}

/// How fast one instance may log: `per_second` lines on average, in bursts of `burst`.
#[derive(Debug, Clone, Copy)]
pub struct LogRate {
    pub per_second: u32,
    pub burst: u32,
}

impl Default for LogRate {
    fn default() -> Self {
        Self {
            per_second: 100,
            burst: 1000,
        }
    }
}

/// What [`LogRateLimit::admit`] decided about a line.
#[derive(Debug, PartialEq, Eq)]
pub enum LogAdmission {
    /// Log it; `dropped_before` lines were dropped since the last line logged.
    Log { dropped_before: u64 },
    /// Over the rate: drop it (it is counted).
    Drop,
}

/// A token bucket over an instance's log lines. Lines over the rate are dropped and
/// counted; the count is reported in one line once logging is allowed again (or when the
/// instance ends), so a flood neither blocks the host's log writer nor passes unnoticed.
pub struct LogRateLimit {
    rate: LogRate,
    tokens: f64,
    refilled: Instant,
    dropped: u64,
}

impl LogRateLimit {
    pub fn new(rate: LogRate) -> Self {
        Self {
            rate,
            tokens: f64::from(rate.burst),
            refilled: Instant::now(),
            dropped: 0,
        }
    }

    /// Whether one more line may be logged now.
    pub fn admit(&mut self, now: Instant) -> LogAdmission {
        let elapsed = now.saturating_duration_since(self.refilled).as_secs_f64();
        self.refilled = now;
        self.tokens = (self.tokens + elapsed * f64::from(self.rate.per_second))
            .min(f64::from(self.rate.burst));
        if self.tokens < 1.0 {
            self.dropped += 1;
            return LogAdmission::Drop;
        }
        self.tokens -= 1.0;
        LogAdmission::Log {
            dropped_before: std::mem::take(&mut self.dropped),
        }
    }

    /// Lines dropped and not reported yet.
    pub fn take_dropped(&mut self) -> u64 {
        std::mem::take(&mut self.dropped)
    }
}

/// The trap raised inside a call that ran past its deadline.
#[derive(Debug)]
pub struct DeadlineExceeded;

impl std::fmt::Display for DeadlineExceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("call deadline exceeded")
    }
}

impl std::error::Error for DeadlineExceeded {}

/// The epoch callback: yield every tick, trap once `deadline` has passed.
pub fn on_epoch(deadline: Option<Instant>) -> wasmtime::Result<wasmtime::UpdateDeadline> {
    match deadline {
        Some(d) if Instant::now() >= d => Err(wasmtime::Error::new(DeadlineExceeded)),
        _ => Ok(wasmtime::UpdateDeadline::Yield(1)),
    }
}

/// Refuses a returned payload larger than `limit`.
pub fn check_result_size(
    plugin: &str,
    call: &str,
    what: &str,
    len: usize,
    limit: usize,
) -> Result<()> {
    if len > limit {
        return Err(Error::new(
            ErrorKind::PluginLimit,
            format!(
                "plugin {plugin} returned a {len}-byte {what} from {call}, over the {limit}-byte limit"
            ),
        ));
    }
    Ok(())
}

/// Longest path the host prints of a plugin file (its name, chosen by whoever can write a
/// plugin directory, is as untrusted as plugin text).
pub const MAX_SHOWN_PATH_BYTES: usize = 1024;

/// A plugin file's path as the host logs it and puts it in errors: escaped and bounded as
/// [`plugin_text`] is, so a file name cannot forge a line of the host's log.
pub fn shown(path: &std::path::Path) -> String {
    plugin_text(&path.to_string_lossy(), MAX_SHOWN_PATH_BYTES)
}

/// Makes text a plugin hands the host safe to keep and to print: at most `max_bytes` bytes,
/// cut between characters (never inside one, which would panic), and with control
/// characters (newlines, terminal escapes) written as escapes, so a plugin's text can neither
/// panic the host nor forge a line of the host's log.
pub fn plugin_text(text: &str, max_bytes: usize) -> String {
    const CUT: &str = "… (truncated)";
    let mut out = String::with_capacity(text.len().min(max_bytes) + CUT.len());
    for c in text.chars() {
        let escaped = c.is_control();
        let len = if escaped {
            c.escape_default().len()
        } else {
            c.len_utf8()
        };
        if out.len() + len > max_bytes {
            out.push_str(CUT);
            break;
        }
        if escaped {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// A plugin-supplied message (error or log text), made safe by [`plugin_text`] within
/// [`MAX_MESSAGE_CHARS`] bytes.
pub fn truncate_message(message: String) -> String {
    plugin_text(&message, MAX_MESSAGE_CHARS)
}

/// The table locations in use by this host's rounds, so that no two tables share files.
#[derive(Default)]
pub struct LocationClaims {
    claims: Arc<Mutex<HashMap<String, i64>>>,
}

/// Releases its location when dropped (the round ended, however).
pub struct LocationClaim {
    claims: Arc<Mutex<HashMap<String, i64>>>,
    key: String,
}

impl Drop for LocationClaim {
    fn drop(&mut self) {
        self.claims
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.key);
    }
}

impl LocationClaims {
    /// Claims `root` (the full warehouse path of a table's location) for `table_id`; refuses
    /// when it equals, contains or lies inside a location claimed by any round still running,
    /// this table's included: a fenced or abandoned round of the same table that is still
    /// ending must not overlap the next one.
    pub fn claim(&self, root: &str, table_id: i64) -> Result<LocationClaim> {
        let key = format!("{}/", root.trim_end_matches('/'));
        let mut claims = self.claims.lock().unwrap_or_else(|p| p.into_inner());
        for (other, owner) in claims.iter() {
            if other.starts_with(&key) || key.starts_with(other.as_str()) {
                let whose = if *owner == table_id {
                    "an earlier round of this table, still ending".to_string()
                } else {
                    format!("table id {owner}")
                };
                return Err(Error::new(
                    ErrorKind::Busy,
                    format!(
                        "table location {root} overlaps {} of {whose}: refused",
                        other.trim_end_matches('/')
                    ),
                ));
            }
        }
        claims.insert(key.clone(), table_id);
        Ok(LocationClaim {
            claims: self.claims.clone(),
            key,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_claims_are_refused() {
        let claims = LocationClaims::default();
        let a = claims.claim("/wh/db/a", 1).unwrap();
        assert!(claims.claim("/wh/db/a/sub", 2).is_err());
        assert!(claims.claim("/wh/db", 2).is_err());
        assert!(claims.claim("/wh/db/a", 2).is_err());
        let same = claims.claim("/wh/db/a", 1).err().unwrap();
        assert!(
            same.message().contains("an earlier round of this table"),
            "{same}"
        );
        let _b = claims.claim("/wh/db/ab", 2).unwrap();
        drop(a);
        let _now_free = claims.claim("/wh/db/a/sub", 3).unwrap();
    }

    #[test]
    fn stderr_keeps_its_last_bytes_escaped() {
        let tail = StderrTail::default();
        assert_eq!(tail.tail(), None);
        tail.push(&vec![b'x'; 10_000]);
        tail.push(b"\npanicked at src/lib.rs:1:1:\nboom\n");
        let text = tail.tail().unwrap();
        assert!(
            text.ends_with("panicked at src/lib.rs:1:1:\\nboom"),
            "{text}"
        );
        assert!(
            !text.contains('\n') && text.len() <= STDERR_TAIL_BYTES + 64,
            "{text}"
        );
        assert_eq!(tail.0.lock().unwrap().len(), STDERR_TAIL_BYTES);
    }

    #[test]
    fn memories_count_together_against_the_limit() {
        let mut limits = SandboxLimits::new(100);
        // Three memories of 40 bytes each: each alone is under the limit, together not.
        assert!(limits.memory_growing(0, 40, None).unwrap());
        assert!(limits.memory_growing(0, 40, None).unwrap());
        assert!(limits.memory_growing(0, 40, None).is_err());
        assert_eq!(limits.memory_exceeded, Some(120));
        // Growing one memory counts only its growth.
        let mut limits = SandboxLimits::new(100);
        assert!(limits.memory_growing(0, 40, None).unwrap());
        assert!(limits.memory_growing(40, 90, None).unwrap());
        assert!(limits.memory_growing(90, 101, None).is_err());
    }

    #[test]
    fn tables_count_together_against_the_limit() {
        let mut limits = SandboxLimits::new(1 << 30);
        assert!(
            limits
                .table_growing(0, MAX_TABLE_ELEMENTS / 2, None)
                .unwrap()
        );
        assert!(
            limits
                .table_growing(0, MAX_TABLE_ELEMENTS / 2, None)
                .unwrap()
        );
        assert!(!limits.table_growing(0, 1, None).unwrap());
    }

    #[test]
    fn log_floods_are_dropped_and_counted() {
        let start = Instant::now();
        let mut limit = LogRateLimit::new(LogRate {
            per_second: 10,
            burst: 5,
        });
        for _ in 0..5 {
            assert_eq!(limit.admit(start), LogAdmission::Log { dropped_before: 0 });
        }
        for _ in 0..1000 {
            assert_eq!(limit.admit(start), LogAdmission::Drop);
        }
        // A tenth of a second later one token is back, and the line reports the drops.
        let later = start + std::time::Duration::from_millis(100);
        assert_eq!(
            limit.admit(later),
            LogAdmission::Log {
                dropped_before: 1000
            }
        );
        assert_eq!(limit.admit(later), LogAdmission::Drop);
        assert_eq!(limit.take_dropped(), 1);
        assert_eq!(limit.take_dropped(), 0);
    }

    #[test]
    fn long_messages_are_cut() {
        let m = truncate_message("é".repeat(MAX_MESSAGE_CHARS));
        assert!(m.len() < MAX_MESSAGE_CHARS + 20);
        assert!(m.ends_with("(truncated)"));
    }

    #[test]
    fn plugin_text_cuts_between_characters_at_any_limit() {
        // '€' is three bytes: every limit falls inside a character somewhere.
        let text = "€".repeat(100);
        for max in 0..=text.len() + 1 {
            let cut = plugin_text(&text, max);
            let kept = cut.trim_end_matches("… (truncated)");
            assert!(kept.len() <= max, "limit {max}: {} bytes kept", kept.len());
            assert!(kept.chars().all(|c| c == '€'));
        }
        assert_eq!(plugin_text(&text, 300), text);
    }

    #[test]
    fn plugin_text_cannot_forge_log_lines() {
        let forged =
            "ok\n2026-12-01T00:00:00Z  INFO fluss_lake_host: tiering round committed\r\x1b[2K";
        let safe = plugin_text(forged, 1024);
        assert!(!safe.contains(['\n', '\r', '\x1b']), "{safe}");
        assert!(safe.starts_with("ok\\n2026"), "{safe}");
        assert!(safe.ends_with("\\r\\u{1b}[2K"), "{safe}");
    }
}
