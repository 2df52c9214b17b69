//! Processes that share one devnet, and who stops it.
//!
//! `holdfast serve` starts a devnet for itself when it has no configuration; another process (a second instance on
//! PostgreSQL, a restarted `serve`) may be using the same devnet folder at the same time. A devnet is never stopped
//! under a process that uses it:
//!
//! - [`join`] takes a *shared* `flock(2)` on `DIR/users.lock` for as long as the returned [`DevnetUser`] lives, then
//!   brings the devnet up (or finds it up) under an exclusive `DIR/start.lock`, so two processes starting at once
//!   start one devnet. A process that started it with `stop_when_unused` leaves the marker `DIR/stop-when-unused`.
//! - [`DevnetUser::leave`] gives the shared lock back and tries the exclusive one: when it gets it, no other process
//!   uses the devnet, and if the marker is there, it stops the devnet and removes the marker. Otherwise it leaves the
//!   devnet running for the others; the last of them to leave stops it.
//! - A devnet brought up by `holdfast devnet up` has no marker ([`keep_running`] removes one): only `holdfast devnet
//!   down` stops it.
//!
//! The kernel drops a killed process's locks, so `kill -9` leaves no user behind; the marker stays, and the next
//! process to leave last stops the devnet.

use crate::error::DevnetError;
use crate::info::DevnetInfo;
use crate::lifecycle::{DownReport, UpOptions, down, up};
use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};

/// The lock every process using the devnet holds shared.
pub const USERS_LOCK: &str = "users.lock";

/// The lock held exclusively while a devnet is brought up.
pub const START_LOCK: &str = "start.lock";

/// The marker of a devnet to stop when its last user leaves.
pub const STOP_WHEN_UNUSED: &str = "stop-when-unused";

/// A process's use of a devnet: while it lives, no other process stops the devnet (see the module docs).
#[derive(Debug)]
pub struct DevnetUser {
    dir: PathBuf,
    file: File,
}

/// What [`DevnetUser::leave`] did.
#[derive(Debug)]
pub enum Left {
    /// This process was the last user and the devnet was to stop with it: stopped.
    Stopped(DownReport),
    /// Other processes still use it: left running for them.
    InUse,
    /// Nobody else uses it, but it was brought up to stay (by `holdfast devnet up`): left running.
    KeptRunning,
}

fn open_lock(dir: &Path, name: &str) -> Result<File, DevnetError> {
    let path = dir.join(name);
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| DevnetError::io(format!("opening {}", path.display()), e))
}

/// Joins the devnet in `opts.dir`: waits for any process that is stopping it, brings it up (or finds it up) and
/// returns its description with this process's [`DevnetUser`]. `stop_when_unused`: a devnet this call starts is
/// stopped when its last user leaves.
pub async fn join(opts: UpOptions, stop_when_unused: bool) -> Result<(DevnetInfo, DevnetUser), DevnetError> {
    // Refused before anything is created, as `up` itself refuses it.
    if !crate::contracts::is_local_chain_id(opts.chain_id) && !opts.allow_public_chain_id {
        return Err(DevnetError::PublicChainId(opts.chain_id));
    }
    std::fs::create_dir_all(&opts.dir).map_err(|e| DevnetError::io(format!("creating {}", opts.dir.display()), e))?;
    let dir = opts.dir.clone();
    let blocking = |dir: PathBuf, name: &'static str, shared: bool| async move {
        tokio::task::spawn_blocking(move || {
            let file = open_lock(&dir, name)?;
            let locked = if shared { file.lock_shared() } else { file.lock() };
            locked.map_err(|e| DevnetError::io(format!("locking {}", dir.join(name).display()), e))?;
            Ok::<File, DevnetError>(file)
        })
        .await
        .map_err(|e| DevnetError::io("waiting for the devnet's lock", std::io::Error::other(e.to_string())))?
    };
    let users = blocking(dir.clone(), USERS_LOCK, true).await?;
    let start = blocking(dir.clone(), START_LOCK, false).await?;
    let info = up(opts).await?;
    if stop_when_unused && !info.already_up {
        let marker = dir.join(STOP_WHEN_UNUSED);
        std::fs::write(&marker, format!("{}\n", std::process::id()))
            .map_err(|e| DevnetError::io(format!("writing {}", marker.display()), e))?;
    }
    drop(start);
    Ok((info, DevnetUser { dir, file: users }))
}

/// Makes the devnet in `dir` one that stays up until `holdfast devnet down` (removes the marker).
pub fn keep_running(dir: &Path) -> Result<(), DevnetError> {
    match std::fs::remove_file(dir.join(STOP_WHEN_UNUSED)) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(DevnetError::io(format!("removing {}", dir.join(STOP_WHEN_UNUSED).display()), e)),
    }
}

impl DevnetUser {
    /// The devnet folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Stops using the devnet; stops the devnet itself when this was its last user and it was to stop then.
    pub async fn leave(self) -> Result<Left, DevnetError> {
        let Self { dir, file } = self;
        // Shared → exclusive on the same file: another user's shared lock makes it fail at once.
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => return Ok(Left::InUse),
            Err(TryLockError::Error(e)) => return Err(DevnetError::io(format!("locking {USERS_LOCK}"), e)),
        }
        if !dir.join(STOP_WHEN_UNUSED).exists() {
            return Ok(Left::KeptRunning);
        }
        // Still holding the exclusive lock: a process joining now waits until the devnet is down, then starts one.
        let report = down(&dir).await?;
        keep_running(&dir)?;
        drop(file);
        Ok(Left::Stopped(report))
    }
}

/// What [`reset`] did.
#[derive(Debug)]
pub struct ResetReport {
    /// The devnet folder.
    pub dir: PathBuf,
    /// The running devnet it stopped first, if one was up.
    pub stopped: Option<DownReport>,
    /// The files it removed (names inside the folder).
    pub removed: Vec<&'static str>,
}

/// The files [`reset`] removes: the saved chain, the wallet key, the description and the generated config. Logs stay.
pub const RESET_FILES: [&str; 7] = [
    crate::info::STATE_FILE,
    crate::info::STATE_PREV,
    crate::info::KEY_FILE,
    crate::info::DEVNET_JSON,
    crate::info::CONFIG_FILE,
    crate::info::PRESETS_FILE,
    STOP_WHEN_UNUSED,
];

/// Starts the devnet in `dir` over: stops it when it is up, then removes its saved chain and wallet key
/// ([`RESET_FILES`]), so that the next `up` (or `serve`) makes a new chain with a new wallet. Refused with
/// [`DevnetError::InUse`] while another process uses the devnet. A folder without a devnet is not an error.
pub async fn reset(dir: &Path) -> Result<ResetReport, DevnetError> {
    if !dir.is_dir() {
        return Ok(ResetReport { dir: dir.to_path_buf(), stopped: None, removed: Vec::new() });
    }
    let users = open_lock(dir, USERS_LOCK)?;
    match users.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => return Err(DevnetError::InUse(dir.to_path_buf())),
        Err(TryLockError::Error(e)) => return Err(DevnetError::io(format!("locking {USERS_LOCK}"), e)),
    }
    let report = down(dir).await?;
    let stopped = report.was_up.then_some(report);
    let mut removed = Vec::new();
    for name in RESET_FILES {
        match std::fs::remove_file(dir.join(name)) {
            Ok(()) => removed.push(name),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(DevnetError::io(format!("removing {}", dir.join(name).display()), e)),
        }
    }
    drop(users);
    Ok(ResetReport { dir: dir.to_path_buf(), stopped, removed })
}
