//! The SQLite database: one file (WAL mode) that can be shared with other crates, so every table here is prefixed
//! (`memory_*`, `messages_*`, `tasks_*`, `reminders_*`); its migrations ([`crate::schema`]) run through
//! holdfast-store's one runner, recorded in `holdfast_migrations`.
//!
//! One connection behind a mutex serialises every statement of this crate; callers on the async runtime reach it
//! through [`Database::call`], which runs the closure on tokio's blocking pool.

use crate::error::{MemoryError, Result};
use parking_lot::Mutex;
use rusqlite::Connection;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The file name [`crate::AgentRuntime::open_dir`] uses inside a data directory.
pub const DEFAULT_DB_FILE: &str = "holdfast.db";

/// A shared handle on the database. Clones share the connection.
#[derive(Clone)]
pub struct Database {
    inner: Arc<Inner>,
}

struct Inner {
    conn: Mutex<Connection>,
    path: Option<PathBuf>,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database").field("path", &self.inner.path).finish()
    }
}

impl Database {
    /// Opens (creating if needed) the database file at `path` in WAL mode and runs this crate's migrations. The
    /// parent directory is created (mode 0700) when missing; the files are mode 0600.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        // The directory is created 0700 and the file 0600 before SQLite sees it; its -wal/-shm follow that mode.
        holdfast_core::private_fs::prepare_sqlite_file(path).map_err(|e| {
            MemoryError::internal(format!("cannot create the database {} (mode 0600): {e}", path.display()))
        })?;
        let conn = Connection::open(path)?;
        conn.busy_timeout(Duration::from_secs(5))?;
        let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(MemoryError::internal(format!("{} refused WAL mode (got {mode})", path.display())));
        }
        // Every table holds something a caller was told is stored (a block, its history, a message, a task, a
        // reminder; the search indexes change in the same transactions): a commit that returned is on disk, even
        // across a power loss or an OS crash, not only a killed process. See docs/reliability.md.
        conn.execute_batch("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")?;
        holdfast_core::private_fs::restrict_sqlite_files(path)
            .map_err(|e| MemoryError::internal(format!("cannot make {} private (mode 0600): {e}", path.display())))?;
        Self::init(conn, Some(path.to_path_buf()))
    }

    /// An ephemeral database in memory (for tests and for runs without a data directory).
    pub fn open_in_memory() -> Result<Self> {
        let conn = Connection::open_in_memory()?;
        conn.execute_batch("PRAGMA foreign_keys = ON;")?;
        Self::init(conn, None)
    }

    fn init(mut conn: Connection, path: Option<PathBuf>) -> Result<Self> {
        migrate(&mut conn)?;
        Ok(Self { inner: Arc::new(Inner { conn: Mutex::new(conn), path }) })
    }

    /// The file, when the database is one.
    pub fn path(&self) -> Option<&Path> {
        self.inner.path.as_deref()
    }

    /// Runs `f` on the connection, blocking the current thread. Use from blocking contexts only.
    pub fn with_conn<R>(&self, f: impl FnOnce(&mut Connection) -> Result<R>) -> Result<R> {
        let mut conn = self.inner.conn.lock();
        f(&mut conn)
    }

    /// Runs `f` on the connection on tokio's blocking pool, so the async runtime never waits on SQLite.
    pub async fn call<R, F>(&self, f: F) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<R> + Send + 'static,
    {
        let db = self.clone();
        tokio::task::spawn_blocking(move || db.with_conn(f))
            .await
            .map_err(|e| MemoryError::internal(format!("a database task failed: {e}")))?
    }

    /// The journal mode in force (`wal` for files).
    pub fn journal_mode(&self) -> Result<String> {
        self.with_conn(|c| Ok(c.query_row("PRAGMA journal_mode", [], |r| r.get::<_, String>(0))?))
    }
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
