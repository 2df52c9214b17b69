//! Small private JSON files in the data dir that a running server reads and other processes change: the sign-in
//! codes and browser sessions ([`super::signin`]) and the MCP client tokens ([`super::clients`]).
//!
//! - **Reads** see another process's changes at once: the file's metadata (modification time, length, inode) is
//!   compared on every read and the file re-read only when it changed, so a check costs one `stat`.
//! - **Changes** are read-modify-write under an exclusive `flock(2)` on a companion `NAME.lock` file (the JSON file
//!   itself is replaced by a rename, so it cannot carry the lock), written to a temporary file (mode 0600), synced
//!   and renamed into place: a reader sees the old file or the new one, and two processes never lose each other's
//!   change.
//! - Without a data dir the value lives in memory, for this process only.

use super::AccessError;
use parking_lot::Mutex;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// What identifies one version of a file on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Version {
    modified: Option<SystemTime>,
    len: u64,
    #[cfg(unix)]
    inode: u64,
}

impl Version {
    fn of(meta: &std::fs::Metadata) -> Self {
        Self {
            modified: meta.modified().ok(),
            len: meta.len(),
            #[cfg(unix)]
            inode: std::os::unix::fs::MetadataExt::ino(meta),
        }
    }
}

/// A JSON value kept in a private file (or in memory); see the module docs.
#[derive(Debug)]
pub(crate) struct PrivateJson<T> {
    path: Option<PathBuf>,
    cache: Mutex<(Option<Version>, T)>,
}

impl<T: Serialize + DeserializeOwned + Default + Clone> PrivateJson<T> {
    /// The value in `path`, created on the first change (absent: the default value).
    pub(crate) fn file(path: PathBuf) -> Self {
        Self { path: Some(path), cache: Mutex::new((None, T::default())) }
    }

    /// A value in memory only.
    pub(crate) fn memory() -> Self {
        Self { path: None, cache: Mutex::new((None, T::default())) }
    }

    fn err(&self, source: std::io::Error) -> AccessError {
        AccessError::TokenFile { path: self.path.clone().unwrap_or_default(), source }
    }

    /// The current value (re-read when the file changed).
    pub(crate) fn read(&self) -> Result<T, AccessError> {
        let mut cache = self.cache.lock();
        let Some(path) = &self.path else { return Ok(cache.1.clone()) };
        let version = match std::fs::metadata(path) {
            Ok(meta) => Some(Version::of(&meta)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(self.err(e)),
        };
        if version.is_some() && cache.0 == version {
            return Ok(cache.1.clone());
        }
        let value = match version {
            None => T::default(),
            Some(_) => load(path).map_err(|e| self.err(e))?,
        };
        *cache = (version, value.clone());
        Ok(value)
    }

    /// Changes the value with `change` (see the module docs); returns what `change` returned. The value is written
    /// back only when `change` says it changed something (its second result).
    pub(crate) fn update<R>(&self, change: impl FnOnce(&mut T) -> (R, bool)) -> Result<R, AccessError> {
        let mut cache = self.cache.lock();
        let Some(path) = &self.path else {
            return Ok(change(&mut cache.1).0);
        };
        let lock = lock_file(path).map_err(|e| self.err(e))?;
        let mut value = match load(path) {
            Ok(value) => value,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => T::default(),
            Err(e) => return Err(self.err(e)),
        };
        let (result, changed) = change(&mut value);
        if changed {
            store(path, &value).map_err(|e| self.err(e))?;
        }
        let version = std::fs::metadata(path).ok().map(|m| Version::of(&m));
        *cache = (version, value);
        drop(lock);
        Ok(result)
    }
}

fn load<T: DeserializeOwned>(path: &Path) -> std::io::Result<T> {
    let text = std::fs::read_to_string(path)?;
    serde_json::from_str(&text).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// Takes the exclusive lock of `path`'s companion `.lock` file (created mode 0600), held until the file is dropped.
fn lock_file(path: &Path) -> std::io::Result<std::fs::File> {
    holdfast_core::private_fs::create_private_parent(path)?;
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(holdfast_core::private_fs::FILE_MODE);
    }
    let file = options.open(PathBuf::from(name))?;
    file.lock()?;
    Ok(file)
}

/// Writes `value` to `path` through a private temporary file renamed into place.
fn store<T: Serialize>(path: &Path, value: &T) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(std::io::Error::other)?;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let written = (|| {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt as _;
            options.mode(holdfast_core::private_fs::FILE_MODE);
        }
        let mut file = options.open(&tmp)?;
        file.write_all(text.as_bytes())?;
        file.write_all(b"\n")?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn a_change_by_another_handle_is_seen_at_once_and_none_is_lost() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data").join("list.json");
        let a: PrivateJson<Vec<u32>> = PrivateJson::file(path.clone());
        let b: PrivateJson<Vec<u32>> = PrivateJson::file(path.clone());
        assert!(a.read().unwrap().is_empty(), "no file yet: the default");
        std::thread::scope(|s| {
            for n in 0..8 {
                let (a, b) = (&a, &b);
                s.spawn(move || {
                    let handle = if n % 2 == 0 { a } else { b };
                    handle.update(|v| (v.push(n), true)).unwrap();
                });
            }
        });
        let mut seen = a.read().unwrap();
        seen.sort_unstable();
        assert_eq!(seen, (0..8).collect::<Vec<_>>(), "every change kept");
        b.update(|v| (v.clear(), true)).unwrap();
        assert!(a.read().unwrap().is_empty(), "the other handle's change is read");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
        let memory: PrivateJson<Vec<u32>> = PrivateJson::memory();
        memory.update(|v| (v.push(1), true)).unwrap();
        assert_eq!(memory.read().unwrap(), [1]);
    }
}
