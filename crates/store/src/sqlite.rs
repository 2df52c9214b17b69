//! Opening the embedded SQLite file the same way for every table's owner: the directory mode 0700 and the files
//! 0600 before SQLite sees them, a 5 s busy timeout, WAL (readers never wait for the writer; other processes can
//! read the file), and `synchronous = FULL` (a commit that returned is on disk, even across a power loss).
//!
//! ```
//! let dir = tempfile::tempdir().unwrap();
//! let conn = holdfast_store::sqlite::open_file(&dir.path().join("holdfast.db")).unwrap();
//! let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
//! assert_eq!(mode, "wal");
//! ```

use crate::StoreError;
use rusqlite::Connection;
use std::path::Path;
use std::time::Duration;

/// Opens (creating if needed) the database file at `path`: private, WAL, `synchronous = FULL`. (Foreign keys are a
/// per-connection setting its owner chooses.)
pub fn open_file(path: &Path) -> Result<Connection, StoreError> {
    holdfast_core::private_fs::prepare_sqlite_file(path)
        .map_err(|e| StoreError::Config(format!("cannot create the database {} (mode 0600): {e}", path.display())))?;
    let conn = Connection::open(path)?;
    conn.busy_timeout(Duration::from_secs(5))?;
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError::Config(format!("{} refused WAL mode (got {mode})", path.display())));
    }
    conn.execute_batch("PRAGMA synchronous = FULL;")?;
    holdfast_core::private_fs::restrict_sqlite_files(path)
        .map_err(|e| StoreError::Config(format!("cannot make {} private (mode 0600): {e}", path.display())))?;
    Ok(conn)
}

/// A database in memory (lost when the connection closes).
pub fn open_memory() -> Result<Connection, StoreError> {
    Ok(Connection::open_in_memory()?)
}

/// Opens the file at `path`, or memory when there is none.
pub fn open(path: Option<&Path>) -> Result<Connection, StoreError> {
    match path {
        Some(path) => open_file(path),
        None => open_memory(),
    }
}
