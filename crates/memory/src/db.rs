//! The SQLite database: one file (WAL mode) that can be shared with other crates, so every table here is prefixed
//! (`memory_*`, `messages_*`, `tasks_*`, `reminders_*`) and migrations are this crate's own, recorded in
//! `memory_migrations` and idempotent.
//!
//! One connection behind a mutex serialises every statement of this crate; callers on the async runtime reach it
//! through [`Database::call`], which runs the closure on tokio's blocking pool.

use crate::clock::fmt_time;
use crate::error::{MemoryError, Result};
use parking_lot::Mutex;
use rusqlite::{Connection, OptionalExtension};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The file name [`crate::AgentRuntime::open_dir`] uses inside a data directory.
pub const DEFAULT_DB_FILE: &str = "holdfast.db";

/// The migrations, in order. Each runs once, in the transaction that records it in `memory_migrations`.
const MIGRATIONS: &[(i64, &str)] = &[
    (
        1,
        r#"
CREATE TABLE IF NOT EXISTS memory_blocks (
    id          INTEGER PRIMARY KEY,
    agent_id    TEXT NOT NULL,
    label       TEXT NOT NULL,
    value       TEXT NOT NULL,
    description TEXT,
    permission  TEXT NOT NULL CHECK (permission IN ('read_only', 'append', 'read_write')),
    char_limit  INTEGER NOT NULL,
    pinned      INTEGER NOT NULL DEFAULT 0,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    UNIQUE (agent_id, label)
);
CREATE TABLE IF NOT EXISTS memory_history (
    id        INTEGER PRIMARY KEY,
    agent_id  TEXT NOT NULL,
    label     TEXT NOT NULL,
    actor     TEXT NOT NULL,
    op        TEXT NOT NULL,
    old_value TEXT,
    new_value TEXT NOT NULL,
    at        TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS memory_history_by_block ON memory_history (agent_id, label, id);
CREATE VIRTUAL TABLE IF NOT EXISTS memory_fts_values USING fts5 (content, tokenize = 'porter unicode61');
CREATE VIRTUAL TABLE IF NOT EXISTS memory_fts_history USING fts5 (content, tokenize = 'porter unicode61');
CREATE TABLE IF NOT EXISTS memory_embeddings (
    agent_id     TEXT NOT NULL,
    label        TEXT NOT NULL,
    model        TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    vector       BLOB NOT NULL,
    PRIMARY KEY (agent_id, label, model)
);

CREATE TABLE IF NOT EXISTS messages_agents (
    agent_id   TEXT PRIMARY KEY,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS messages_log (
    id          INTEGER PRIMARY KEY,
    sender      TEXT NOT NULL,
    target_type TEXT NOT NULL,
    target_id   TEXT,
    content     TEXT NOT NULL,
    metadata    TEXT,
    session_id  TEXT,
    created_at  TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS messages_inbox (
    id           INTEGER PRIMARY KEY,
    message_id   INTEGER NOT NULL REFERENCES messages_log (id),
    agent_id     TEXT NOT NULL,
    via          TEXT NOT NULL,
    delivered_at TEXT
);
CREATE INDEX IF NOT EXISTS messages_inbox_pending ON messages_inbox (agent_id, delivered_at, id);
CREATE TABLE IF NOT EXISTS messages_outbox (
    id           INTEGER PRIMARY KEY,
    message_id   INTEGER NOT NULL REFERENCES messages_log (id),
    agent_id     TEXT NOT NULL,
    session_id   TEXT,
    user_id      TEXT,
    forwarded_at TEXT
);
CREATE INDEX IF NOT EXISTS messages_outbox_by_agent ON messages_outbox (agent_id, id);
CREATE TABLE IF NOT EXISTS messages_groups (
    name   TEXT NOT NULL,
    member TEXT NOT NULL,
    PRIMARY KEY (name, member)
);
CREATE TABLE IF NOT EXISTS messages_channels (
    name        TEXT PRIMARY KEY,
    webhook_url TEXT
);
CREATE TABLE IF NOT EXISTS messages_subscriptions (
    channel  TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    PRIMARY KEY (channel, agent_id)
);

CREATE TABLE IF NOT EXISTS tasks_items (
    id           INTEGER PRIMARY KEY,
    agent_id     TEXT NOT NULL,
    title        TEXT NOT NULL,
    notes        TEXT,
    due_at       TEXT,
    priority     TEXT NOT NULL,
    status       TEXT NOT NULL,
    steps        TEXT NOT NULL DEFAULT '[]',
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    completed_at TEXT
);
CREATE INDEX IF NOT EXISTS tasks_items_by_agent ON tasks_items (agent_id, status);

CREATE TABLE IF NOT EXISTS reminders_items (
    id          INTEGER PRIMARY KEY,
    agent_id    TEXT NOT NULL,
    due_at      TEXT NOT NULL,
    message     TEXT NOT NULL,
    target_type TEXT NOT NULL,
    target_id   TEXT,
    created_at  TEXT NOT NULL,
    fired_at    TEXT
);
CREATE INDEX IF NOT EXISTS reminders_items_due ON reminders_items (fired_at, due_at);
"#,
    ),
    (
        2,
        // How many agent-to-agent hops led to a message (the runtime's count, never the sender's metadata).
        "ALTER TABLE messages_log ADD COLUMN hops INTEGER NOT NULL DEFAULT 0;",
    ),
    (
        3,
        // The hops of the turn that scheduled a reminder: its message carries the conversation's count on.
        "ALTER TABLE reminders_items ADD COLUMN hops INTEGER NOT NULL DEFAULT 0;",
    ),
    (
        4,
        // The anti-loop windows, stored: a restart does not reset them, and on PostgreSQL instances share them.
        "CREATE TABLE IF NOT EXISTS messages_cooldowns (
            sender    TEXT NOT NULL,
            recipient TEXT NOT NULL,
            until_at  TEXT NOT NULL,
            PRIMARY KEY (sender, recipient)
        );",
    ),
];

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

fn migrate(conn: &mut Connection) -> Result<()> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    tx.execute_batch(
        "CREATE TABLE IF NOT EXISTS memory_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL);",
    )?;
    for (version, sql) in MIGRATIONS {
        let done: Option<i64> = tx
            .query_row("SELECT version FROM memory_migrations WHERE version = ?1", [version], |r| r.get(0))
            .optional()?;
        if done.is_none() {
            tx.execute_batch(sql)?;
            tx.execute(
                "INSERT INTO memory_migrations (version, applied_at) VALUES (?1, ?2)",
                rusqlite::params![version, fmt_time(chrono::Utc::now())],
            )?;
        }
    }
    tx.commit()?;
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
        let n: i64 =
            db.with_conn(|c| Ok(c.query_row("SELECT count(*) FROM memory_migrations", [], |r| r.get(0))?)).unwrap();
        assert_eq!(n, MIGRATIONS.len() as i64);
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
