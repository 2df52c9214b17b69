//! One process per SQLite data dir, and per wallet.
//!
//! The SQLite file, the wallet's nonce choice and the day's cap reservations are serialized *inside* one process
//! (the wallet's send lock is an in-process mutex). Two processes on one data dir would each reserve against a
//! journal the other is writing, choose the same nonce, and report the same transaction twice. So every process that
//! opens a data dir's SQLite storage holds an exclusive advisory lock ([`std::fs::File::try_lock`], `flock(2)`) on
//! `DATA_DIR/holdfast.lock` for as long as it runs; a second process fails at once with
//! [`StoreError::DataDirInUse`], naming the holder (its pid, command and address, which the holder writes into the
//! file). The kernel releases the lock when the holder exits, however it exits (`kill -9` included), so a stale file
//! never blocks a start.
//!
//! Two data dirs can name one wallet (the same key file, the same `key_env`, a devnet's key seen through two
//! configurations); their two journals would then count the same wallet's spending twice. So the process also locks
//! the wallet itself, by address, in a directory of the user's own (`$XDG_RUNTIME_DIR/holdfast`, else
//! `TMPDIR/holdfast-UID`): [`StoreError::WalletInUse`].
//!
//! Several instances share a PostgreSQL database instead (`docs/deploy.md`): they take both locks *shared*, so any
//! number of them run together, but never beside a process on a SQLite journal.
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

/// A lock this process holds on a data dir or a wallet (see the module docs): exclusive on the SQLite file, shared
/// among processes on PostgreSQL.
#[derive(Debug)]
pub struct ProcessLock {
    dir: PathBuf,
    file: Mutex<File>,
}

/// The lock of a data dir ([`ProcessLock::data_dir`]).
pub type DataDirLock = ProcessLock;

/// The locks this process holds, by lock file.
static HELD: LazyLock<Mutex<HashMap<PathBuf, Weak<ProcessLock>>>> = LazyLock::new(|| Mutex::new(HashMap::new()));

/// Opens (creating, mode 0600) and locks `path`, or returns this process's existing handle of it; `Err(holder)` when
/// another process holds it in a conflicting mode.
fn lock_file(path: PathBuf, shared: bool, command: &str) -> Result<Arc<ProcessLock>, LockFailure> {
    let mut held = HELD.lock();
    if let Some(lock) = held.get(&path).and_then(Weak::upgrade) {
        return Ok(lock);
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(holdfast_core::private_fs::FILE_MODE);
    }
    // Opened close-on-exec (Rust's default): a child process (the devnet's) never inherits the lock.
    let file = options.open(&path).map_err(LockFailure::Io)?;
    let locked = if shared { file.try_lock_shared() } else { file.try_lock() };
    match locked {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            return Err(LockFailure::Busy(serde_json::from_str(text.trim()).ok()));
        }
        Err(TryLockError::Error(e)) => return Err(LockFailure::Io(e)),
    }
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let lock = Arc::new(ProcessLock { dir, file: Mutex::new(file) });
    lock.describe(command, None);
    held.retain(|_, weak| weak.strong_count() > 0);
    held.insert(path, Arc::downgrade(&lock));
    Ok(lock)
}

enum LockFailure {
    Busy(Option<Holder>),
    Io(std::io::Error),
}

/// Where wallet locks live: `$XDG_RUNTIME_DIR/holdfast`, else `TMPDIR/holdfast-UID` — a directory of this user's
/// alone (mode 0700; one that is a link, or someone else's, is refused).
fn wallet_lock_dir() -> std::io::Result<PathBuf> {
    let dir = match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from).filter(|p| p.is_absolute()) {
        Some(runtime) => runtime.join("holdfast"),
        None => std::env::temp_dir().join(format!("holdfast-{}", user_id())),
    };
    holdfast_core::private_fs::create_private_dir_all(&dir)?;
    let meta = std::fs::symlink_metadata(&dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        if !meta.is_dir() || meta.uid() != user_id() || meta.mode() & 0o077 != 0 {
            return Err(std::io::Error::other(format!(
                "{} is not a private directory of this user: remove it, or set XDG_RUNTIME_DIR",
                dir.display()
            )));
        }
    }
    #[cfg(not(unix))]
    if !meta.is_dir() {
        return Err(std::io::Error::other(format!("{} is not a directory", dir.display())));
    }
    Ok(dir)
}

#[cfg(unix)]
fn user_id() -> u32 {
    use std::os::unix::fs::MetadataExt as _;
    // The owner of this process's own /proc entry is its user: no libc call (and no unsafe) needed.
    std::fs::metadata("/proc/self").map_or(u32::MAX, |m| m.uid())
}

#[cfg(not(unix))]
fn user_id() -> u32 {
    0
}

impl ProcessLock {
    /// Takes the exclusive lock of `dir` (created, mode 0700, when missing) for `command` (what the holder is shown
    /// as: [`process_command`] unless the caller knows better), or returns this process's existing handle of it.
    /// Another process holding it → [`StoreError::DataDirInUse`] naming that process.
    pub fn acquire(dir: &Path, command: &str) -> Result<Arc<Self>, StoreError> {
        Self::data_dir(dir, false, command)
    }

    /// The lock of data dir `dir`: exclusive for a process on its SQLite file, `shared` for processes on PostgreSQL
    /// (several may share a data dir's files then, but not with a SQLite process).
    pub fn data_dir(dir: &Path, shared: bool, command: &str) -> Result<Arc<Self>, StoreError> {
        let io = |what: &str, e: std::io::Error| StoreError::Config(format!("{what} {}: {e}", dir.display()));
        holdfast_core::private_fs::create_private_dir_all(dir).map_err(|e| io("creating the data dir", e))?;
        let key = dir.canonicalize().map_err(|e| io("resolving the data dir", e))?;
        lock_file(key.join(LOCK_FILE), shared, command).map_err(|failure| match failure {
            LockFailure::Busy(holder) => StoreError::DataDirInUse { dir: key.clone(), holder },
            LockFailure::Io(e) => io("locking", e),
        })
    }

    /// The lock of the wallet `address` (any spelling; a lock per address, whatever data dir or key file names it):
    /// exclusive for a process whose journal is a SQLite file, `shared` for processes on PostgreSQL, whose journal
    /// and wallet lock are shared by the database.
    pub fn wallet(address: &str, shared: bool, command: &str) -> Result<Arc<Self>, StoreError> {
        let address = address.to_ascii_lowercase();
        let io = |e: std::io::Error| StoreError::Config(format!("locking the wallet {address}: {e}"));
        let path = wallet_lock_dir().map_err(io)?.join(format!("wallet-{address}.lock"));
        lock_file(path, shared, command).map_err(|failure| match failure {
            LockFailure::Busy(holder) => StoreError::WalletInUse { address: address.clone(), holder },
            LockFailure::Io(e) => io(e),
        })
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

    /// The directory of the lock file (a data dir's, canonical).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Who holds `dir` now, as written in its lock file: `None` when nobody does (or it says nothing readable).
    /// (It probes the lock for a moment: a process starting at that very moment may find the dir taken.)
    pub fn holder(dir: &Path) -> Option<Holder> {
        let file = File::open(dir.join(LOCK_FILE)).ok()?;
        // Free → nobody holds it (the file is what a process that has exited left behind).
        if file.try_lock_shared().is_ok() {
            return None;
        }
        read_holder(dir)
    }
}

/// What the lock file of data dir `dir` says about its holder, without touching the lock.
fn read_holder(dir: &Path) -> Option<Holder> {
    let text = std::fs::read_to_string(dir.join(LOCK_FILE)).ok()?;
    serde_json::from_str(text.trim()).ok()
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

    #[test]
    fn a_wallet_is_held_by_one_sqlite_process_or_shared_by_postgres_ones() {
        let address = format!("0x{:040x}", u128::from(std::process::id()) << 64 | 0xa11ce);
        let lock = ProcessLock::wallet(&address, false, "serve").unwrap();
        let again = ProcessLock::wallet(&address.to_ascii_uppercase().replace("0X", "0x"), false, "chat").unwrap();
        assert!(Arc::ptr_eq(&lock, &again), "any spelling, one lock; this process shares it");
        let path = lock.dir().join(format!("wallet-{}.lock", address.to_ascii_lowercase()));
        let other = File::open(&path).unwrap();
        assert!(matches!(other.try_lock_shared(), Err(TryLockError::WouldBlock)), "another process is refused");
        drop((lock, again));
        let shared = ProcessLock::wallet(&address, true, "serve").unwrap();
        assert!(other.try_lock_shared().is_ok(), "PostgreSQL processes share it");
        assert!(matches!(other.try_lock(), Err(TryLockError::WouldBlock)), "but a SQLite one is refused");
        drop(shared);
    }
}
