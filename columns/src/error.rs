//! The crate's one error type.

/// Why rows could not be converted or encoded.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The rows do not fit the file's columns (a type that does not convert, a null in a
    /// `NOT NULL` column, a missing column), or an option is out of range.
    #[error("{0}")]
    InvalidInput(String),
    /// An option names something this encoder does not have (a codec).
    #[error("{0}")]
    Unsupported(String),
    /// Arrow refused to build an array or a batch.
    #[error("arrow: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
    /// The Parquet writer failed (including its sink).
    #[error("parquet: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
}

impl Error {
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Error::InvalidInput(message.into())
    }
    pub fn unsupported(message: impl Into<String>) -> Self {
        Error::Unsupported(message.into())
    }
}

/// This crate's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;
