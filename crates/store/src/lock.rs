//! One process per SQLite data dir.
//!
//! The SQLite file, the wallet's nonce choice and the day's cap reservations are serialized *inside* one process
//! (the wallet's send lock is an in-process mutex). Two processes on one data dir would each reserve against a
//! journal the other is writing, choose the same nonce, and report the same transaction twice. So every process that
//! opens a data dir's SQLite storage holds an exclusive advisory lock ([`std::fs::File::try_lock`], `flock(2)`) on
//! `DATA_DIR/holdfast.lock` for as long as it runs; a second process fails at once with
//! [`StoreError::DataDirInUse`], naming the holder (its pid, command and address, which the holder writes into the
//! file). The kernel releases the lock when the holder exits, however it exits (`kill -9` included), so a stale file
//! never blocks a start. Several instances share a PostgreSQL database instead (`docs/deploy.md`), each with its own
//! data dir.
//!
//! Within one process the lock is shared: every [`DataDirLock::acquire`] of the same directory returns the same
//! handle, and the lock is released when the last handle is dropped.
//!
//! ```
//! # fn demo() -> Result<(), holdfast_store::StoreError> {
//! use holdfast_store::DataDirLock;
//! let dir = tempfile::tempdir().map_err(|e| holdfast_store::StoreError::Config(e.to_string()))?;
//! let lock = DataDirLock::acquire(dir.path(), "serve")?;
//! lock.describe("serve", Some("127.0.0.1:8700"));
//! let again = DataDirLock::acquire(dir.path(), "serve")?; // the same process: the same lock
//! assert!(std::sync::Arc::ptr_eq(&lock, &again));
//! # Ok(()) }
//! ```

use crate::StoreError;
use chrono::{DateTime, Utc};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fs::{File, TryLockError};
use std::io::{Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Weak};

/// The lock file's name inside a data dir.
pub const LOCK_FILE: &str = "holdfast.lock";

/// Who holds a data dir, as the holder wrote it into the lock file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    /// Its process id.
    pub pid: u32,
    /// What it runs: `holdfast serve`, `holdfast mcp`…
    pub command: String,
    /// Where it listens, when it does.
    pub address: Option<String>,
    /// When it took the lock.
    pub since: DateTime<Utc>,
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "pid {}, `{}`", self.pid, self.command)?;
        if let Some(address) = &self.address {
            write!(f, " on {address}")?;
        }
        write!(f, ", since {}", self.since.format("%Y-%m-%d %H:%M:%S UTC"))
    }
}

/// The exclusive lock of one data dir, held by this process (see the module docs).
#[derive(Debug)]
pub struct DataDirLock {
    dir: PathBuf,
    file: Mutex<File>,
}

/// The locks this process holds, by canonical directory.
static HELD: LazyLock<Mutex<HashMap<PathBuf, Weak<DataDirLock>>>> = LazyLock::new(|| Mutex::new(HashMap::new()));

impl DataDirLock {
    /// Takes the lock of `dir` (created, mode 0700, when missing) for `command` (what the holder is shown as:
    /// [`process_command`] unless the caller knows better), or returns this process's existing handle of it.
    /// Another process holding it → [`StoreError::DataDirInUse`] naming that process.
    pub fn acquire(dir: &Path, command: &str) -> Result<Arc<Self>, StoreError> {
        let io = |what: &str, e: std::io::Error| StoreError::Config(format!("{what} {}: {e}", dir.display()));
        holdfast_core::private_fs::create_private_dir_all(dir).map_err(|e| io("creating the data dir", e))?;
        let key = dir.canonicalize().map_err(|e| io("resolving the data dir", e))?;
        let mut held = HELD.lock();
        if let Some(lock) = held.get(&key).and_then(Weak::upgrade) {
            return Ok(lock);
        }
        let path = key.join(LOCK_FILE);
        let mut options = std::fs::OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            options.mode(holdfast_core::private_fs::FILE_MODE);
        }
        // Opened close-on-exec (Rust's default): a child process (the devnet's) never inherits the lock.
        let file = options.open(&path).map_err(|e| io("opening the lock file of", e))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(StoreError::DataDirInUse { dir: key.clone(), holder: Self::holder(&key) });
            }
            Err(TryLockError::Error(e)) => return Err(io("locking", e)),
        }
        let lock = Arc::new(Self { dir: key.clone(), file: Mutex::new(file) });
        lock.describe(command, None);
        held.retain(|_, weak| weak.strong_count() > 0);
        held.insert(key, Arc::downgrade(&lock));
        Ok(lock)
    }

    /// Records what this process runs and where it listens, for the message another process gets. Best effort: a
    /// failed write leaves the lock held and the description older.
    pub fn describe(&self, command: &str, address: Option<&str>) {
        let holder = Holder {
            pid: std::process::id(),
            command: command.to_owned(),
            address: address.map(str::to_owned),
            since: Utc::now(),
        };
        let Ok(text) = serde_json::to_string(&holder) else { return };
        let mut file = self.file.lock();
        let written = file
            .set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)))
            .and_then(|_| file.write_all(format!("{text}\n").as_bytes()))
            .and_then(|()| file.flush());
        if let Err(e) = written {
            tracing::warn!(dir = %self.dir.display(), "could not describe this process in the lock file: {e}");
        }
    }

    /// The data dir (canonical).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Who holds `dir` now, as written in its lock file: `None` when nobody does (or it says nothing readable).
    pub fn holder(dir: &Path) -> Option<Holder> {
        let path = dir.join(LOCK_FILE);
        let file = File::open(&path).ok()?;
        // Free → nobody holds it (the file is what a process that has exited left behind).
        if file.try_lock_shared().is_ok() {
            return None;
        }
        let text = std::fs::read_to_string(&path).ok()?;
        serde_json::from_str(text.trim()).ok()
    }
}

/// This process as a command line a user would recognize: the program's file name and its first argument when that
/// is a subcommand (`holdfast serve`).
pub fn process_command() -> String {
    let mut args = std::env::args_os();
    let program = args
        .next()
        .and_then(|p| Path::new(&p).file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "holdfast".to_owned());
    match args.next().map(|a| a.to_string_lossy().into_owned()) {
        Some(sub) if !sub.starts_with('-') && sub.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') => {
            format!("{program} {sub}")
        }
        _ => program,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn one_process_holds_a_dir_and_names_itself() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(DataDirLock::holder(dir.path()), None, "nobody yet");
        let lock = DataDirLock::acquire(dir.path(), "serve").unwrap();
        lock.describe("serve", Some("127.0.0.1:8700"));
        let again = DataDirLock::acquire(dir.path(), "mcp").unwrap();
        assert!(Arc::ptr_eq(&lock, &again), "this process shares its lock");
        // Another open file description is what another process would have: the lock refuses it.
        let other = File::open(dir.path().join(LOCK_FILE)).unwrap();
        assert!(matches!(other.try_lock(), Err(TryLockError::WouldBlock)));
        let holder = DataDirLock::holder(dir.path()).unwrap();
        assert_eq!((holder.pid, holder.address.as_deref()), (std::process::id(), Some("127.0.0.1:8700")));
        assert!(holder.to_string().contains("`serve` on 127.0.0.1:8700"), "{holder}");
        drop((lock, again));
        assert!(other.try_lock().is_ok(), "released with the last handle");
        drop(other);
        assert_eq!(DataDirLock::holder(dir.path()), None, "a file left behind names nobody");
        assert!(DataDirLock::acquire(dir.path(), "chat").is_ok());
    }
}
