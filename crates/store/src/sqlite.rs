//! The embedded SQLite file, opened once per process: [`SqliteDb`] holds the one writing connection every table's
//! owner shares (the journal, sessions, memory and messaging), so no two connections of one process ever contend for
//! the file's write lock, and a few read-only connections that read beside it.
//!
//! The writing connection is opened so: the directory mode 0700 and the files 0600 before SQLite sees them, a 5 s
//! busy timeout, WAL (readers never wait for the writer), `synchronous = FULL` (a commit that returned is on disk, even
//! across a power loss) and foreign keys enforced. The read-only ones open the same file read-only (5 s busy timeout,
//! `query_only`). In memory there is the writing connection alone, foreign keys enforced.
//!
//! ```
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let dir = tempfile::tempdir().unwrap();
//! let db = holdfast_store::sqlite::SqliteDb::open(&dir.path().join("holdfast.db")).unwrap();
//! db.write(|c| c.execute_batch("CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT); INSERT INTO kv VALUES ('a', '1')"))
//!     .await
//!     .unwrap()
//!     .unwrap();
//! // A reader sees what the writer committed.
//! let v: String = db.read(|c| c.query_row("SELECT v FROM kv", [], |r| r.get(0))).await.unwrap().unwrap();
//! assert_eq!(v, "1");
//! let mode: String = db.lock().query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
//! assert_eq!(mode, "wal");
//! # });
//! ```

use crate::StoreError;
use parking_lot::{Mutex, MutexGuard};
use rusqlite::{Connection, OpenFlags};
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Read-only connections beside the writer (a file only; in memory every statement uses the writer).
const READERS: usize = 2;

/// The process's handle on its SQLite database: one writing connection and, for a file, two read-only ones.
/// Clones share them.
#[derive(Clone)]
pub struct SqliteDb {
    inner: Arc<Inner>,
}

struct Inner {
    writer: Arc<Mutex<Connection>>,
    /// Per-database state of the tables' owners ([`SqliteDb::shared`]), one value per type.
    shared: Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
    readers: Vec<Mutex<Connection>>,
    next_reader: AtomicUsize,
    path: Option<PathBuf>,
}

impl std::fmt::Debug for SqliteDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteDb").field("path", &self.inner.path).finish_non_exhaustive()
    }
}

impl SqliteDb {
    /// Opens (creating if needed) the database file at `path`: private, WAL, `synchronous = FULL`, foreign keys on.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let writer = open_file(path)?;
        let readers = (0..READERS).map(|_| open_reader(path).map(Mutex::new)).collect::<Result<Vec<_>, _>>()?;
        Ok(Self::new(writer, readers, Some(path.to_path_buf())))
    }

    /// A database in memory, lost when the last clone is dropped.
    pub fn memory() -> Result<Self, StoreError> {
        Ok(Self::new(open_memory()?, Vec::new(), None))
    }

    /// The file, or memory.
    pub fn open_or_memory(path: Option<&Path>) -> Result<Self, StoreError> {
        match path {
            Some(path) => Self::open(path),
            None => Self::memory(),
        }
    }

    fn new(writer: Connection, readers: Vec<Mutex<Connection>>, path: Option<PathBuf>) -> Self {
        Self {
            inner: Arc::new(Inner {
                writer: Arc::new(Mutex::new(writer)),
                shared: Mutex::default(),
                readers,
                next_reader: AtomicUsize::new(0),
                path,
            }),
        }
    }

    /// The one value of type `T` that every user of this database shares (made with `T::default()` on first use): for
    /// a table's owner that keeps state per database beside the connections, such as memory's index merge.
    pub fn shared<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        let mut shared = self.inner.shared.lock();
        let value = shared.entry(TypeId::of::<T>()).or_insert_with(|| Arc::new(T::default()));
        match Arc::clone(value).downcast::<T>() {
            Ok(value) => value,
            // Unreachable (the entry of `T`'s type id holds a `T`); a value of its own is still correct, unshared.
            Err(_) => Arc::new(T::default()),
        }
    }

    /// The file, when the database is one.
    pub fn path(&self) -> Option<&Path> {
        self.inner.path.as_deref()
    }

    /// Runs the migrations of `components` the file has not recorded yet, in order ([`crate::migrate::sqlite`]).
    pub fn migrate(&self, components: &[crate::Component]) -> Result<(), StoreError> {
        let mut conn = self.lock();
        for component in components {
            crate::migrate::sqlite(&mut conn, component)?;
        }
        Ok(())
    }

    /// The journal mode in force (`wal` for a file, `memory` in memory).
    pub fn journal_mode(&self) -> Result<String, StoreError> {
        Ok(self.lock().query_row("PRAGMA journal_mode", [], |r| r.get::<_, String>(0))?)
    }

    /// The writing connection, for a [`crate::GroupCommit`] writer that shares it.
    pub fn writer(&self) -> Arc<Mutex<Connection>> {
        Arc::clone(&self.inner.writer)
    }

    /// Takes the writing connection, blocking the current thread until it is free. For migrations and blocking
    /// contexts; on the async runtime use [`SqliteDb::write`].
    pub fn lock(&self) -> MutexGuard<'_, Connection> {
        self.inner.writer.lock()
    }

    /// Runs `f` on the writing connection on tokio's blocking pool (the async runtime never waits on SQLite). Every
    /// statement that changes the file, and every read that must be consistent with a change it makes, runs here.
    pub async fn write<R, F>(&self, f: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&mut Connection) -> R + Send + 'static,
    {
        let writer = self.writer();
        tokio::task::spawn_blocking(move || f(&mut writer.lock()))
            .await
            .map_err(|e| StoreError::Query(format!("a database task failed: {e}")))
    }

    /// Runs a read on a read-only connection on tokio's blocking pool; it sees every transaction committed before it
    /// began, and does not wait for the writer. In memory it runs on the writing connection.
    pub async fn read<R, F>(&self, f: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&Connection) -> R + Send + 'static,
    {
        let db = self.clone();
        tokio::task::spawn_blocking(move || db.read_blocking(f))
            .await
            .map_err(|e| StoreError::Query(format!("a database task failed: {e}")))
    }

    /// [`SqliteDb::read`] on the current thread (a blocking context).
    pub fn read_blocking<R>(&self, f: impl FnOnce(&Connection) -> R) -> R {
        let readers = &self.inner.readers;
        if readers.is_empty() {
            return f(&self.inner.writer.lock());
        }
        let start = self.inner.next_reader.fetch_add(1, Ordering::Relaxed);
        // A free reader if there is one, else wait for the one whose turn it is.
        for i in 0..readers.len() {
            if let Some(conn) = readers[(start + i) % readers.len()].try_lock() {
                return f(&conn);
            }
        }
        f(&readers[start % readers.len()].lock())
    }
}

/// Opens (creating if needed) the database file at `path`: private, WAL, `synchronous = FULL`, foreign keys on.
/// [`SqliteDb::open`] is what a process uses; this is one connection on its own.
pub fn open_file(path: &Path) -> Result<Connection, StoreError> {
    holdfast_core::private_fs::prepare_sqlite_file(path)
        .map_err(|e| StoreError::Config(format!("cannot create the database {} (mode 0600): {e}", path.display())))?;
    let conn = Connection::open(path)?;
    conn.busy_timeout(Duration::from_secs(5))?;
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError::Config(format!("{} refused WAL mode (got {mode})", path.display())));
    }
    // Every table holds something a caller was told is stored: a commit that returned is on disk, even across a
    // power loss or an OS crash, not only a killed process. See docs/reliability.md.
    conn.execute_batch("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")?;
    holdfast_core::private_fs::restrict_sqlite_files(path)
        .map_err(|e| StoreError::Config(format!("cannot make {} private (mode 0600): {e}", path.display())))?;
    Ok(conn)
}

/// A read-only connection on the file the writer opened.
fn open_reader(path: &Path) -> Result<Connection, StoreError> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI,
    )?;
    conn.busy_timeout(Duration::from_secs(5))?;
    conn.execute_batch("PRAGMA query_only = ON;")?;
    Ok(conn)
}

/// A database in memory (lost when the connection closes), foreign keys on.
pub fn open_memory() -> Result<Connection, StoreError> {
    let conn = Connection::open_in_memory()?;
    conn.execute_batch("PRAGMA foreign_keys = ON;")?;
    Ok(conn)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readers_do_not_wait_for_an_open_write_transaction() {
        let dir = tempfile::tempdir().unwrap();
        let db = SqliteDb::open(&dir.path().join("x.db")).unwrap();
        let writer = db.lock();
        writer.execute_batch("CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (1)").unwrap();
        writer.execute_batch("BEGIN IMMEDIATE; INSERT INTO t VALUES (2);").unwrap();
        // The writer is held mid-transaction; a read still answers, with what was committed.
        let count =
            || -> i64 { db.read_blocking(|c| c.query_row("SELECT count(*) FROM t", [], |r| r.get(0))).unwrap() };
        assert_eq!(count(), 1);
        writer.execute_batch("COMMIT").unwrap();
        drop(writer);
        assert_eq!(count(), 2);
    }

    #[tokio::test]
    async fn a_reader_cannot_write() {
        let dir = tempfile::tempdir().unwrap();
        let db = SqliteDb::open(&dir.path().join("x.db")).unwrap();
        db.write(|c| c.execute_batch("CREATE TABLE t (n INTEGER)")).await.unwrap().unwrap();
        let err = db.read(|c| c.execute("INSERT INTO t VALUES (1)", [])).await.unwrap().unwrap_err();
        assert!(err.to_string().contains("readonly") || err.to_string().contains("read-only"), "{err}");
    }

    #[tokio::test]
    async fn in_memory_reads_see_the_writer() {
        let db = SqliteDb::memory().unwrap();
        db.write(|c| c.execute_batch("CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (7)")).await.unwrap().unwrap();
        let n: i64 = db.read(|c| c.query_row("SELECT n FROM t", [], |r| r.get(0))).await.unwrap().unwrap();
        assert_eq!(n, 7);
    }
}
