//! The host's single error type.
//!
//! Callers decide by [`ErrorKind`] (retry, fail the table's round, refuse to start), never by
//! parsing messages; the message and source chain are for the operator's log.

use std::fmt;

/// What kind of failure happened, so that callers can react without parsing messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Bad command-line options or configuration; the host refuses to start.
    Config,
    /// A plugin file is missing, corrupt, not a component, or incompatible with the contract.
    PluginLoad,
    /// A plugin returned an error or trapped while tiering a table.
    Plugin,
    /// A plugin broke a sandbox limit: memory, call deadline, size of a result, or a storage
    /// location outside its table. The instance is discarded and the table's round fails.
    PluginLimit,
    /// No loaded plugin serves the table's lake format.
    NoPlugin,
    /// The network or a server could not be reached; usually transient.
    Unavailable,
    /// A server answered with something the protocol does not allow.
    Protocol,
    /// The coordinator rejected a request with a Fluss error code.
    Coordinator,
    /// This host no longer owns the table's round (tiering epoch fenced, coordinator changed,
    /// table dropped or recreated); the round must be abandoned without committing.
    Fenced,
    /// The round registered a lake snapshot an earlier round had committed to the lake only,
    /// and ended without committing its own files; the next round resumes from there.
    Recovered,
    /// The cluster refused the host's credentials (SASL): retrying with the same ones cannot
    /// succeed.
    Authentication,
    /// The lake commit lost to a concurrent writer: another tiering round of the table
    /// published first (or other writers kept winning); nothing of this round was published,
    /// and a later round may succeed.
    Conflict,
    /// The table's lake location is still held by an earlier round that is ending (fenced
    /// or abandoned); a later round may proceed.
    Busy,
    /// Reading from Fluss failed.
    Fluss,
    /// Object storage failed.
    Storage,
    /// A bucket's log no longer holds the offsets after the lake's: `table.log.ttl` (or an
    /// unclean leader election) removed rows the lake never received. Tiering the bucket on
    /// would commit a silent gap, so it stops until an operator chooses a way out.
    LogGap,
    /// The round was cancelled (shutdown, max duration).
    Cancelled,
    /// The table needs a feature this host version does not implement yet.
    Unsupported,
    /// What was asked for does not exist: a catalog has no such table or namespace (an Iceberg
    /// REST catalog's 404), a remote file or a KV snapshot is gone.
    NotFound,
    /// A catalog already has the table that was to be created (an Iceberg REST catalog's 409
    /// on create).
    AlreadyExists,
    /// A catalog commit (or create) may or may not have been applied: the catalog answered
    /// 500, 502, 503 or 504, or the answer was lost after the request may have been sent. The
    /// caller must keep every file the change references.
    CommitUnknown,
    /// A broken invariant inside the host.
    Internal,
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            ErrorKind::Config => "configuration error",
            ErrorKind::PluginLoad => "plugin load error",
            ErrorKind::Plugin => "plugin error",
            ErrorKind::PluginLimit => "plugin sandbox limit",
            ErrorKind::NoPlugin => "no plugin for format",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::Protocol => "protocol error",
            ErrorKind::Coordinator => "coordinator error",
            ErrorKind::Fenced => "fenced",
            ErrorKind::Recovered => "recovered a missed lake snapshot",
            ErrorKind::Authentication => "authentication error",
            ErrorKind::Conflict => "commit conflict",
            ErrorKind::Busy => "location busy",
            ErrorKind::Fluss => "fluss error",
            ErrorKind::Storage => "storage error",
            ErrorKind::LogGap => "log gap",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::NotFound => "not found",
            ErrorKind::AlreadyExists => "already exists",
            ErrorKind::CommitUnknown => "commit outcome unknown",
            ErrorKind::Internal => "internal error",
        };
        f.write_str(s)
    }
}

impl ErrorKind {
    /// The kind as a metric label value (`reason` of failed rounds): stable, snake case.
    pub fn as_label(&self) -> &'static str {
        match self {
            ErrorKind::Config => "config",
            ErrorKind::PluginLoad => "plugin_load",
            ErrorKind::Plugin => "plugin",
            ErrorKind::PluginLimit => "plugin_limit",
            ErrorKind::NoPlugin => "no_plugin",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Coordinator => "coordinator",
            ErrorKind::Fenced => "fenced",
            ErrorKind::Recovered => "recovered",
            ErrorKind::Authentication => "authentication",
            ErrorKind::Conflict => "conflict",
            ErrorKind::Busy => "busy",
            ErrorKind::Fluss => "fluss",
            ErrorKind::Storage => "storage",
            ErrorKind::LogGap => "log_gap",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::NotFound => "not_found",
            ErrorKind::AlreadyExists => "already_exists",
            ErrorKind::CommitUnknown => "commit_unknown",
            ErrorKind::Internal => "internal",
        }
    }
}

/// An error with a kind, a message for humans, an optional Fluss error code and a source.
pub struct Error {
    kind: ErrorKind,
    message: String,
    /// The Fluss server error code, when the error came from a Fluss response.
    code: Option<i32>,
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            code: None,
            source: None,
        }
    }

    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    pub fn with_code(mut self, code: i32) -> Self {
        self.code = Some(code);
        self
    }

    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    pub fn code(&self) -> Option<i32> {
        self.code
    }

    /// Prefixes the message with what the caller was doing.
    pub fn context(mut self, what: impl fmt::Display) -> Self {
        self.message = format!("{what}: {}", self.message);
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)?;
        if let Some(code) = self.code {
            write!(f, " (fluss error code {code})")?;
        }
        let mut source = self.source.as_deref().map(|s| s as &dyn std::error::Error);
        while let Some(s) = source {
            write!(f, ": {s}")?;
            source = s.source();
        }
        Ok(())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|s| s as &(dyn std::error::Error + 'static))
    }
}

impl From<fluss::error::Error> for Error {
    fn from(e: fluss::error::Error) -> Self {
        Error::new(ErrorKind::Fluss, "fluss client").with_source(e)
    }
}

impl From<object_store::Error> for Error {
    fn from(e: object_store::Error) -> Self {
        Error::new(
            ErrorKind::Storage,
            format!("object store: {}", store_message(&e)),
        )
    }
}

/// An object-store error on one line (S3 errors carry an XML body over several lines).
pub fn store_message(e: &object_store::Error) -> String {
    one_line(&e.to_string())
}

/// An object-store message on one line: S3 errors carry an XML body over several lines.
pub fn one_line(message: &str) -> String {
    let flat: String = message.split_whitespace().collect::<Vec<_>>().join(" ");
    // The error code and message of an S3 error body are what a user needs.
    let tag = |name: &str| {
        let open = format!("<{name}>");
        let start = flat.find(&open)? + open.len();
        let end = flat[start..].find(&format!("</{name}>"))? + start;
        Some(flat[start..end].to_string())
    };
    if let (Some(code), message) = (tag("Code"), tag("Message")) {
        let head = flat.split(" response body").next().unwrap_or(&flat);
        let head = head.split(", body:").next().unwrap_or(head);
        return match message {
            Some(m) => format!("{code}: {m} ({})", truncate(head, 200)),
            None => format!("{code} ({})", truncate(head, 200)),
        };
    }
    truncate(&flat, 400)
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}
