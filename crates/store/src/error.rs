//! The storage layer's errors. None quotes a database URL: it may hold a password.

use holdfast_core::{ErrorCode, ToolError};

/// What went wrong in the storage layer.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The configuration names storage that cannot be used.
    #[error("storage configuration: {0}")]
    Config(String),
    /// The database could not be reached or refused the login.
    #[error("cannot connect to the database {url}: {reason}")]
    Connect {
        /// The database, without credentials.
        url: String,
        /// Why.
        reason: String,
    },
    /// A migration failed; nothing of it was applied.
    #[error("migration {component} v{version} failed: {reason}")]
    Migrate {
        /// Whose tables.
        component: String,
        /// Which step.
        version: i64,
        /// Why.
        reason: String,
    },
    /// A statement failed.
    #[error("database: {0}")]
    Query(String),
    /// Another process holds the data dir ([`crate::lock`]).
    #[error(
        "another holdfast process is using the data dir {} ({}); one data dir serves one process: stop it, give this \
         one another --data-dir, or run several instances on one PostgreSQL database (docs/deploy.md)",
        dir.display(),
        holder.as_ref().map_or_else(|| "which one could not be read".to_owned(), ToString::to_string)
    )]
    DataDirInUse {
        /// The data dir.
        dir: std::path::PathBuf,
        /// Who holds it, when its lock file says.
        holder: Option<crate::lock::Holder>,
    },
    /// Another process moves value for the same wallet ([`crate::lock`]).
    #[error(
        "another holdfast process is moving value for the wallet {address} ({}), from another data dir or key file; \
         one wallet is used by one process on its SQLite journal: stop it, or run the instances on one PostgreSQL \
         database (docs/deploy.md)",
        holder.as_ref().map_or_else(|| "which one could not be read".to_owned(), ToString::to_string)
    )]
    WalletInUse {
        /// The wallet, lower case.
        address: String,
        /// Who holds it, when its lock file says.
        holder: Option<crate::lock::Holder>,
    },
}

impl StoreError {
    /// The stable error code.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Config(_) | Self::DataDirInUse { .. } | Self::WalletInUse { .. } => ErrorCode::ConfigInvalid,
            Self::Connect { .. } | Self::Migrate { .. } | Self::Query(_) => ErrorCode::Internal,
        }
    }
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        Self::Query(holdfast_core::redact_urls(&e.to_string()).into_owned())
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        Self::Query(e.to_string())
    }
}

impl From<StoreError> for ToolError {
    fn from(e: StoreError) -> Self {
        ToolError::new(e.code(), e.to_string())
    }
}
