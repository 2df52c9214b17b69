//! The SQLite database: the process's one handle on `holdfast.db` ([`holdfast_store::SqliteDb`], shared with the
//! journal and sessions), so every table here is prefixed (`memory_*`, `messages_*`, `tasks_*`, `reminders_*`); its
//! migrations ([`crate::schema`]) run through holdfast-store's one runner, recorded in `holdfast_migrations`.
//!
//! Statements that change the file run on the writing connection, which serialises them with every other owner's
//! ([`Database::with_conn`]; callers on the async runtime use [`Database::call`], which runs the closure on tokio's
//! blocking pool); reads that need no consistency with a write of their own run on a read-only one
//! ([`Database::read`]).

use crate::error::{MemoryError, Result};
use holdfast_store::SqliteDb;
use rusqlite::Connection;
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

    /// This crate's tables on the process's handle `db` (migrated first).
    pub fn on(db: SqliteDb) -> Result<Self> {
        migrate(&mut db.lock())?;
        Ok(Self { db })
    }

    /// The file, when the database is one.
    pub fn path(&self) -> Option<&Path> {
        self.db.path()
    }

    /// The process's handle on the file, on which holdfast-store's tables of this crate (tasks, messages and
    /// reminders) run their statements.
    pub fn sqlite(&self) -> &SqliteDb {
        &self.db
    }

    /// Runs `f` on the connection, blocking the current thread. Use from blocking contexts only.
    pub fn with_conn<R>(&self, f: impl FnOnce(&mut Connection) -> Result<R>) -> Result<R> {
        f(&mut self.db.lock())
    }

    /// Runs a read on one of the read-only connections (in memory: the writing one), blocking the current thread: it
    /// sees every write committed before it began and does not wait for the writer. Use from blocking contexts only.
    pub fn read<R>(&self, f: impl FnOnce(&Connection) -> Result<R>) -> Result<R> {
        self.db.read_blocking(f)
    }

    /// Runs `f` on the connection on tokio's blocking pool, so the async runtime never waits on SQLite.
    pub async fn call<R, F>(&self, f: F) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<R> + Send + 'static,
    {
        self.db.write(f).await.map_err(|e| MemoryError::internal(e.to_string()))?
    }

    /// The journal mode in force (`wal` for files).
    pub fn journal_mode(&self) -> Result<String> {
        self.with_conn(|c| Ok(c.query_row("PRAGMA journal_mode", [], |r| r.get::<_, String>(0))?))
    }
}

/// Runs `f` on a clone of `store` on tokio's blocking pool, so the async runtime never waits on SQLite: how the
/// SQLite stores answer their async traits. `what` names the store in the error a failed task gives.
pub(crate) fn on_blocking_pool<'a, S, R>(
    store: &S,
    what: &'static str,
    f: impl FnOnce(&S) -> Result<R> + Send + 'static,
) -> holdfast_core::tool::BoxFuture<'a, Result<R>>
where
    S: Clone + Send + 'static,
    R: Send + 'static,
{
    let store = store.clone();
    Box::pin(async move {
        tokio::task::spawn_blocking(move || f(&store))
            .await
            .map_err(|e| MemoryError::internal(format!("a {what} task failed: {e}")))?
    })
}

/// Applies this crate's migrations the file has not recorded ([`crate::schema`]).
fn migrate(conn: &mut Connection) -> Result<()> {
    for component in &crate::schema::ALL {
        holdfast_store::migrate::sqlite(conn, component)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_wal_and_migrations_are_idempotent() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested").join("x.db");
        let db = Database::open(&path).unwrap();
        assert_eq!(db.journal_mode().unwrap(), "wal");
        let sync: i64 = db.with_conn(|c| Ok(c.query_row("PRAGMA synchronous", [], |r| r.get(0))?)).unwrap();
        assert_eq!(sync, 2, "synchronous = FULL: an acknowledged write survives a power loss");
        drop(db);
        let db = Database::open(&path).unwrap();
        let sql = "SELECT group_concat(component || ' v' || version, ', ') FROM
                   (SELECT * FROM holdfast_migrations ORDER BY component)";
        let steps: String = db.with_conn(|c| Ok(c.query_row(sql, [], |r| r.get(0))?)).unwrap();
        assert_eq!(steps, "memory v1, messages v1, messages v2, messages v3, messages v4, tasks v1", "each once");
    }

    /// A file from before the one runner (its steps in `memory_migrations`, version 1 only: no `hops`) keeps its
    /// rows and gains what later steps added.
    #[test]
    fn a_file_migrated_by_the_old_list_is_brought_up_to_date() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        {
            let c = Connection::open(&path).unwrap();
            c.execute_batch(
                "CREATE TABLE memory_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL);
                 INSERT INTO memory_migrations VALUES (1, '2026-01-01T00:00:00.000Z');
                 CREATE TABLE messages_log (id INTEGER PRIMARY KEY, sender TEXT NOT NULL, target_type TEXT NOT NULL,
                     target_id TEXT, content TEXT NOT NULL, metadata TEXT, session_id TEXT, created_at TEXT NOT NULL);
                 INSERT INTO messages_log (sender, target_type, target_id, content, created_at)
                     VALUES ('a', 'agent', 'b', 'kept', '2026-01-01T00:00:00.000Z');
                 CREATE TABLE reminders_items (id INTEGER PRIMARY KEY, agent_id TEXT NOT NULL, due_at TEXT NOT NULL,
                     message TEXT NOT NULL, target_type TEXT NOT NULL, target_id TEXT, created_at TEXT NOT NULL,
                     fired_at TEXT);",
            )
            .unwrap();
        }
        let db = Database::open(&path).unwrap();
        let (content, hops): (String, i64) = db
            .with_conn(|c| {
                Ok(c.query_row("SELECT content, hops FROM messages_log", [], |r| Ok((r.get(0)?, r.get(1)?)))?)
            })
            .unwrap();
        assert_eq!((content.as_str(), hops), ("kept", 0));
        let n: i64 =
            db.with_conn(|c| Ok(c.query_row("SELECT count(hops) FROM reminders_items", [], |r| r.get(0))?)).unwrap();
        assert_eq!(n, 0, "reminders_items has hops");
        db.with_conn(|c| Ok(c.execute_batch("SELECT until_at FROM messages_cooldowns")?)).unwrap();
    }

    #[test]
    fn shares_a_file_with_other_tables() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shared.db");
        {
            let c = Connection::open(&path).unwrap();
            c.execute_batch(
                "CREATE TABLE journal (id INTEGER PRIMARY KEY, note TEXT); INSERT INTO journal (note) VALUES ('kept');",
            )
            .unwrap();
        }
        let db = Database::open(&path).unwrap();
        let note: String = db.with_conn(|c| Ok(c.query_row("SELECT note FROM journal", [], |r| r.get(0))?)).unwrap();
        assert_eq!(note, "kept");
    }
}
