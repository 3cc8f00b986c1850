//! The one error type of the SDK and of every format plugin.
//!
//! It carries an [`ErrorKind`] that mirrors the WIT `error-kind` so the host can act on what
//! went wrong (retry a conflict, skip an unsupported table) without parsing messages, and it
//! converts losslessly to and from the WIT `lake-error` that crosses the boundary.

use std::fmt;

use crate::bindings::fluss::lake::types::{ErrorKind as WitErrorKind, LakeError};

/// What went wrong; one-to-one with the WIT `error-kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The input (table, config, batch) is not acceptable for this format.
    InvalidInput,
    /// A table, snapshot or object the operation needs does not exist.
    NotFound,
    /// An object or table that must not exist already exists.
    AlreadyExists,
    /// A concurrent writer won a race; retrying may succeed.
    Conflict,
    /// Storage failed.
    Io,
    /// The table uses a feature this plugin does not implement.
    Unsupported,
    /// Stored lake metadata could not be decoded.
    Corrupt,
    /// A bug or broken invariant.
    Internal,
}

impl ErrorKind {
    /// The WIT spelling, for messages.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::InvalidInput => "invalid-input",
            ErrorKind::NotFound => "not-found",
            ErrorKind::AlreadyExists => "already-exists",
            ErrorKind::Conflict => "conflict",
            ErrorKind::Io => "io",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::Corrupt => "corrupt",
            ErrorKind::Internal => "internal",
        }
    }
}

impl From<WitErrorKind> for ErrorKind {
    fn from(kind: WitErrorKind) -> Self {
        match kind {
            WitErrorKind::InvalidInput => ErrorKind::InvalidInput,
            WitErrorKind::NotFound => ErrorKind::NotFound,
            WitErrorKind::AlreadyExists => ErrorKind::AlreadyExists,
            WitErrorKind::Conflict => ErrorKind::Conflict,
            WitErrorKind::Io => ErrorKind::Io,
            WitErrorKind::Unsupported => ErrorKind::Unsupported,
            WitErrorKind::Corrupt => ErrorKind::Corrupt,
            WitErrorKind::Internal => ErrorKind::Internal,
        }
    }
}

impl From<ErrorKind> for WitErrorKind {
    fn from(kind: ErrorKind) -> Self {
        match kind {
            ErrorKind::InvalidInput => WitErrorKind::InvalidInput,
            ErrorKind::NotFound => WitErrorKind::NotFound,
            ErrorKind::AlreadyExists => WitErrorKind::AlreadyExists,
            ErrorKind::Conflict => WitErrorKind::Conflict,
            ErrorKind::Io => WitErrorKind::Io,
            ErrorKind::Unsupported => WitErrorKind::Unsupported,
            ErrorKind::Corrupt => WitErrorKind::Corrupt,
            ErrorKind::Internal => WitErrorKind::Internal,
        }
    }
}

/// An error with a kind and a human-readable message (context is prepended by [`Error::context`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

/// The SDK-wide result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Alias kept for readability in format crates (`SdkError`).
pub type SdkError = Error;

impl Error {
    /// A new error.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
        }
    }
    /// Shorthand for [`ErrorKind::InvalidInput`].
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidInput, message)
    }
    /// Shorthand for [`ErrorKind::NotFound`].
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotFound, message)
    }
    /// Shorthand for [`ErrorKind::AlreadyExists`].
    pub fn already_exists(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::AlreadyExists, message)
    }
    /// Shorthand for [`ErrorKind::Conflict`].
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Conflict, message)
    }
    /// Shorthand for [`ErrorKind::Io`].
    pub fn io(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Io, message)
    }
    /// Shorthand for [`ErrorKind::Unsupported`].
    pub fn unsupported(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unsupported, message)
    }
    /// Shorthand for [`ErrorKind::Corrupt`].
    pub fn corrupt(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Corrupt, message)
    }
    /// Shorthand for [`ErrorKind::Internal`].
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }

    /// The kind.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
    /// The message, without the kind.
    pub fn message(&self) -> &str {
        &self.message
    }
    /// Prepends what was being done, keeping the kind: `"<context>: <message>"`.
    pub fn context(self, context: impl fmt::Display) -> Self {
        Error {
            kind: self.kind,
            message: format!("{context}: {}", self.message),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.kind.as_str())
    }
}

impl std::error::Error for Error {}

impl From<LakeError> for Error {
    fn from(e: LakeError) -> Self {
        Error {
            kind: e.kind.into(),
            message: e.message,
        }
    }
}

impl From<Error> for LakeError {
    fn from(e: Error) -> Self {
        LakeError {
            kind: e.kind.into(),
            message: e.message,
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        let kind = match e.kind() {
            std::io::ErrorKind::NotFound => ErrorKind::NotFound,
            std::io::ErrorKind::AlreadyExists => ErrorKind::AlreadyExists,
            _ => ErrorKind::Io,
        };
        Error::new(kind, e.to_string())
    }
}

impl From<arrow_schema::ArrowError> for Error {
    fn from(e: arrow_schema::ArrowError) -> Self {
        Error::invalid_input(format!("arrow: {e}"))
    }
}

impl From<fluss_lake_columns::Error> for Error {
    fn from(e: fluss_lake_columns::Error) -> Self {
        use fluss_lake_columns::Error as E;
        match e {
            E::InvalidInput(m) => Error::invalid_input(m),
            E::Unsupported(m) => Error::unsupported(m),
            E::Arrow(e) => e.into(),
            E::Parquet(e) => e.into(),
        }
    }
}

impl From<parquet::errors::ParquetError> for Error {
    fn from(e: parquet::errors::ParquetError) -> Self {
        Error::internal(format!("parquet: {e}"))
    }
}

impl From<apache_avro::Error> for Error {
    fn from(e: apache_avro::Error) -> Self {
        Error::corrupt(format!("avro: {e}"))
    }
}

/// Adds context to any `Result<_, Error>`.
pub trait ResultExt<T> {
    /// See [`Error::context`].
    fn context(self, context: impl fmt::Display) -> Result<T>;
    /// Like [`ResultExt::context`], with the context computed only on error.
    fn with_context<C: fmt::Display>(self, f: impl FnOnce() -> C) -> Result<T>;
}

impl<T, E: Into<Error>> ResultExt<T> for std::result::Result<T, E> {
    fn context(self, context: impl fmt::Display) -> Result<T> {
        self.map_err(|e| e.into().context(context))
    }
    fn with_context<C: fmt::Display>(self, f: impl FnOnce() -> C) -> Result<T> {
        self.map_err(|e| e.into().context(f()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_the_wit_error() {
        for kind in [
            ErrorKind::InvalidInput,
            ErrorKind::NotFound,
            ErrorKind::AlreadyExists,
            ErrorKind::Conflict,
            ErrorKind::Io,
            ErrorKind::Unsupported,
            ErrorKind::Corrupt,
            ErrorKind::Internal,
        ] {
            let e = Error::new(kind, "boom").context("doing x");
            let wit: LakeError = e.clone().into();
            assert_eq!(wit.message, "doing x: boom");
            assert_eq!(Error::from(wit), e);
        }
    }
}
