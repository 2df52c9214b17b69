//! Private files: the data dir is created mode 0700, the database (with its `-wal`/`-shm` companions), key and token
//! files are mode 0600. Every layer that writes into the data dir creates it and its files through these helpers,
//! so no file holding sessions, the journal, keys or tokens is ever readable by another user.

use std::io;
use std::path::{Path, PathBuf};

/// The mode of directories holdfast creates for its data.
pub const DIR_MODE: u32 = 0o700;

/// The mode of every file holdfast writes into its data dir.
pub const FILE_MODE: u32 = 0o600;

/// Creates `dir` and any missing parents with mode 0700. A directory that already exists is left as it is (it may
/// be one the operator chose and shares on purpose); the files inside are still private.
pub fn create_private_dir_all(dir: &Path) -> io::Result<()> {
    if dir.as_os_str().is_empty() || dir.is_dir() {
        return Ok(());
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        builder.mode(DIR_MODE);
    }
    builder.create(dir)
}

/// Creates the parent directory of `file` (mode 0700) when missing.
pub fn create_private_parent(file: &Path) -> io::Result<()> {
    match file.parent() {
        Some(parent) => create_private_dir_all(parent),
        None => Ok(()),
    }
}

/// Prepares `path` for SQLite: the parent directory (0700) and, when missing, an empty database file created with
/// mode 0600 — SQLite then creates its `-wal`, `-shm` and `-journal` files with the same mode. Call
/// [`restrict_sqlite_files`] right after opening to also tighten files left by an older version.
pub fn prepare_sqlite_file(path: &Path) -> io::Result<()> {
    create_private_parent(path)?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(FILE_MODE);
    }
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// The files SQLite keeps for the database at `path`: the database itself and its `-wal`, `-shm` and `-journal`.
pub fn sqlite_files(path: &Path) -> Vec<PathBuf> {
    let mut files = vec![path.to_path_buf()];
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        files.push(PathBuf::from(name));
    }
    files
}

/// Sets mode 0600 on the database at `path` and on those of its companion files that exist.
pub fn restrict_sqlite_files(path: &Path) -> io::Result<()> {
    for file in sqlite_files(path) {
        match restrict_file(&file) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Sets mode 0600 on `file` unless it already has no permissions for group and others.
pub fn restrict_file(file: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let meta = std::fs::metadata(file)?;
        if meta.permissions().mode() & 0o077 != 0 {
            std::fs::set_permissions(file, std::fs::Permissions::from_mode(FILE_MODE))?;
        }
    }
    #[cfg(not(unix))]
    {
        let _ = std::fs::metadata(file)?;
    }
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn new_dirs_are_private_and_existing_ones_are_left_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let deep = tmp.path().join("a/b/data");
        create_private_dir_all(&deep).unwrap();
        assert_eq!(mode(&deep), 0o700);
        assert_eq!(mode(&tmp.path().join("a")), 0o700);
        let shared = tmp.path().join("shared");
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o755)).unwrap();
        create_private_dir_all(&shared).unwrap();
        assert_eq!(mode(&shared), 0o755);
    }

    #[test]
    fn database_files_are_private_even_when_an_older_version_left_them_open() {
        let tmp = tempfile::tempdir().unwrap();
        let db = tmp.path().join("data/holdfast.db");
        prepare_sqlite_file(&db).unwrap();
        assert_eq!((mode(&db), mode(db.parent().unwrap())), (0o600, 0o700));
        std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
        let wal = tmp.path().join("data/holdfast.db-wal");
        std::fs::write(&wal, b"").unwrap();
        std::fs::set_permissions(&wal, std::fs::Permissions::from_mode(0o664)).unwrap();
        prepare_sqlite_file(&db).unwrap();
        restrict_sqlite_files(&db).unwrap();
        assert_eq!((mode(&db), mode(&wal)), (0o600, 0o600));
    }
}
