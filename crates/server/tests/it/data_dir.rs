//! A fresh data dir is private: the directory 0700; the database with its `-wal`/`-shm`, the wallet key and the
//! access tokens 0600 — whatever the process umask.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use holdfast_agent::Runtime;
use holdfast_agent::access::{AccessToken, MCP_TOKEN_FILE, SERVER_TOKEN_FILE};
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())).permissions().mode() & 0o777
}

#[tokio::test]
async fn a_fresh_data_dir_holds_only_private_files() {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("holdfast.toml");
    std::fs::write(&config, "[storage]\ndata_dir = \"data\"\n").unwrap();
    let data = tmp.path().join("data");

    let runtime = Runtime::load(Some(&config)).await.unwrap();
    assert_eq!(runtime.data_dir().map(|d| d.ends_with("data")), Some(true));
    let (_, ctx) = runtime.open_session("http").await.unwrap();
    drop(ctx);
    AccessToken::load_or_create(&data.join(SERVER_TOKEN_FILE)).unwrap();
    AccessToken::load_or_create(&data.join(MCP_TOKEN_FILE)).unwrap();

    assert_eq!(mode(&data), 0o700, "the data dir");
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&data).unwrap() {
        let path = entry.unwrap().path();
        files.push(path.file_name().unwrap().to_string_lossy().into_owned());
        let want = if path.is_dir() { 0o700 } else { 0o600 };
        assert_eq!(mode(&path), want, "{}", path.display());
    }
    for expected in ["holdfast.db", "wallet.key", SERVER_TOKEN_FILE, MCP_TOKEN_FILE] {
        assert!(files.iter().any(|f| f == expected), "{expected} in {files:?}");
    }
    assert!(files.iter().any(|f| f == "holdfast.db-wal"), "WAL mode: {files:?}");
}

#[tokio::test]
async fn database_files_left_open_by_an_older_version_are_made_private() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let config = tmp.path().join("holdfast.toml");
    std::fs::write(&config, "[storage]\ndata_dir = \"data\"\n").unwrap();
    drop(Runtime::load(Some(&config)).await.unwrap());
    for file in ["holdfast.db", "holdfast.db-wal", "holdfast.db-shm"] {
        let path = data.join(file);
        if path.exists() {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
    }
    drop(Runtime::load(Some(&config)).await.unwrap());
    for file in ["holdfast.db", "holdfast.db-wal", "holdfast.db-shm"] {
        let path = data.join(file);
        if path.exists() {
            assert_eq!(mode(&path), 0o600, "{file}");
        }
    }
}
