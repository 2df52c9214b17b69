//! The SQLite database: the process's one handle on `holdfast.db` ([`holdfast_store::SqliteDb`], shared with the
//! journal and sessions), so every table here is prefixed (`memory_*`, `messages_*`, `tasks_*`, `reminders_*`); its
//! migrations ([`crate::schema`]) run through holdfast-store's one runner, recorded in `holdfast_migrations`. The
//! statements are holdfast-store's ([`holdfast_store::memory`], [`holdfast_store::tasks`],
//! [`holdfast_store::messages`]); this crate holds the handle they run on.

use crate::error::Result;
use holdfast_store::SqliteDb;
use std::path::Path;

/// The file name [`crate::AgentRuntime::open_dir`] uses inside a data directory.
pub const DEFAULT_DB_FILE: &str = holdfast_store::DB_FILE;

/// A shared handle on the database. Clones share the connection.
#[derive(Clone, Debug)]
pub struct Database {
    db: SqliteDb,
}

impl Database {
    /// Opens (creating if needed) the database file at `path` and runs this crate's migrations. The parent directory
    /// is created (mode 0700) when missing; the files are mode 0600 (see [`holdfast_store::sqlite`]).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::on(SqliteDb::open(path.as_ref())?)
    }

    /// An ephemeral database in memory (for tests and for runs without a data directory).
    pub fn open_in_memory() -> Result<Self> {
        Self::on(SqliteDb::memory()?)
    }

    /// This crate's tables on the process's handle `db` (migrated first: [`crate::schema::ALL`]).
    pub fn on(db: SqliteDb) -> Result<Self> {
        db.migrate(&crate::schema::ALL)?;
        Ok(Self { db })
    }

    /// The file, when the database is one.
    pub fn path(&self) -> Option<&Path> {
        self.db.path()
    }

    /// The process's handle on the file, on which holdfast-store's tables of this crate (memory, tasks, messages and
    /// reminders) run their statements.
    pub fn sqlite(&self) -> &SqliteDb {
        &self.db
    }

    /// The journal mode in force (`wal` for files).
    pub fn journal_mode(&self) -> Result<String> {
        Ok(self.db.journal_mode()?)
    }
}
