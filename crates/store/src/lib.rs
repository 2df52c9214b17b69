//! holdfast's storage layer: where sessions ([`sessions`]), the transaction/payment journal ([`journal`]) and
//! holdfast-memory's blocks ([`memory`]), tasks ([`tasks`]), messages and reminders ([`messages`]) are kept — every
//! query is here; the domain crates decide what rows mean — and how several `holdfast serve` instances share them.
//!
//! - [`Storage::Sqlite`] — the embedded default: one file (`DATA_DIR/holdfast.db`, WAL, `synchronous = FULL`,
//!   mode 0600) or, without a data dir, memory, opened once ([`SqliteDb`]: one writing connection that every table's
//!   owner shares, and read-only ones beside it). One process per data dir: it holds the dir's [`DataDirLock`].
//! - [`Storage::Postgres`] — selected by `[storage] url = "postgres://…"` or `HOLDFAST_DATABASE_URL`: a pool
//!   ([`PgStore`]) that any number of instances share. What must be serialized across them — a wallet's nonce
//!   choice, cap reservation and broadcast — is serialized by PostgreSQL's advisory locks ([`PgStore::lock`]);
//!   events reach every instance through `LISTEN/NOTIFY` ([`fanout`]: the channel; what travels on it is decided by
//!   holdfast-core's event relay).
//!
//! Every table's schema lives here, as SQL migration files per dialect ([`schema`]: the journal's, sessions',
//! memory's, tasks', messages' and the relay's); one runner ([`migrate`]) applies them, recording each in
//! `holdfast_migrations`; what each table's acknowledgement promises is declared beside them ([`durability`]).
//!
//! ```
//! # async fn demo() -> Result<(), holdfast_store::StoreError> {
//! use holdfast_store::Storage;
//! let storage = Storage::open(None, None).await?; // no data dir, no URL: memory
//! assert!(!storage.is_durable());
//! # Ok(()) }
//! ```

pub mod durability;
pub mod fanout;
pub mod group;
pub mod journal;
pub mod lock;
pub mod memory;
pub mod messages;
pub mod migrate;
pub mod postgres;
pub mod schema;
pub mod sessions;
pub mod sqlite;
pub mod tasks;

mod error;

pub use error::StoreError;
pub use fanout::PgChannel;
pub use group::GroupCommit;
pub use lock::{DataDirLock, Holder, ProcessLock, process_command};
pub use migrate::{Component, Migration};
pub use postgres::{PgLock, PgStore};
pub use sqlite::SqliteDb;

use holdfast_core::config::{DATABASE_URL_ENV, DatabaseUrl};
use std::path::Path;

/// The SQLite file's name inside a data directory.
pub const DB_FILE: &str = "holdfast.db";

/// `HOLDFAST_DATABASE_URL`'s text, when it names something (set and not blank): it then wins over the configuration.
fn env_url() -> Option<String> {
    std::env::var(DATABASE_URL_ENV).ok().filter(|text| !text.trim().is_empty())
}

/// Where the shared state lives.
#[derive(Debug, Clone)]
pub enum Storage {
    /// The embedded SQLite file `DATA_DIR/holdfast.db`, or memory when there is no data dir (lost at exit): the
    /// process's one handle on it, which every table's owner shares.
    Sqlite(SqliteDb),
    /// A PostgreSQL database, shared by every instance that names it.
    Postgres(PgStore),
}

impl Storage {
    /// The storage a configuration selects: PostgreSQL when `url` (or `HOLDFAST_DATABASE_URL`, which wins) names
    /// one — connected and migrated before this returns — else the SQLite file in `data_dir`, else memory.
    pub async fn open(data_dir: Option<&Path>, url: Option<&DatabaseUrl>) -> Result<Self, StoreError> {
        let from_env = match env_url() {
            Some(text) => {
                Some(DatabaseUrl::parse(&text).map_err(|e| StoreError::Config(format!("{DATABASE_URL_ENV}: {e}")))?)
            }
            None => None,
        };
        match from_env.as_ref().or(url) {
            Some(url) => Ok(Self::Postgres(PgStore::connect(url).await?)),
            None => Ok(Self::Sqlite(SqliteDb::open_or_memory(data_dir.map(|d| d.join(DB_FILE)).as_deref())?)),
        }
    }

    /// Whether [`Storage::open`] with `url` selects PostgreSQL (`url`, or `HOLDFAST_DATABASE_URL`, names a database),
    /// known before anything is opened.
    pub fn names_postgres(url: Option<&DatabaseUrl>) -> bool {
        url.is_some() || env_url().is_some()
    }

    /// True when what is stored outlives the process (a file or a database, not memory).
    pub fn is_durable(&self) -> bool {
        !matches!(self, Self::Sqlite(db) if db.path().is_none())
    }

    /// What an operator may be shown: the file's path, or the database without its credentials.
    pub fn describe(&self) -> String {
        match self {
            Self::Sqlite(db) => match db.path() {
                Some(path) => format!("sqlite {}", path.display()),
                None => "memory (nothing survives the process)".to_owned(),
            },
            Self::Postgres(pg) => format!("postgres {}", pg.url()),
        }
    }
}
