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

/// 150 clients that go away in the middle of their tool calls, then normal calls: no call is refused as another
/// process's (`409 session_conflict`), every answered change is in the session, and what the session holds in memory
/// is what a restart finds on disk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_go_away_mid_call_leave_the_session_usable_and_nothing_lost() {
    use holdfast_agent::access::HostPolicy;
    use serde_json::json;
    use std::sync::Arc;
    use std::time::Duration;
    const TOKEN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef";
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("holdfast.toml");
    std::fs::write(&config, "[storage]\ndata_dir = \"data\"\n").unwrap();
    let runtime = Arc::new(Runtime::load(Some(&config)).await.unwrap());
    let (info, ctx) = runtime.open_session("http").await.unwrap();
    drop(ctx);
    let state = holdfast_server::AppState::with_agent(
        Arc::clone(&runtime),
        None,
        Some(AccessToken::from_secret(TOKEN).unwrap()),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = holdfast_server::router(state, HostPolicy::loopback(addr));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let url = format!("http://{addr}/api/sessions/{}/tools/register_set", info.id);

    // Each client gives up after a few hundred microseconds: most go away while their call runs or saves.
    let dropped: Vec<_> = (0..150u64)
        .map(|i| {
            let url = url.clone();
            tokio::spawn(async move {
                let client = reqwest::Client::builder().timeout(Duration::from_micros(200 + 20 * i)).build().unwrap();
                let sent =
                    client.post(&url).bearer_auth(TOKEN).json(&json!({"key": format!("gone_{i}"), "value": "v"}));
                sent.send().await.map(|r| r.status().as_u16()).ok()
            })
        })
        .collect();
    let mut answered = 0;
    for task in dropped {
        if let Some(status) = task.await.unwrap() {
            assert_eq!(status, 200, "a call that was answered succeeded");
            answered += 1;
        }
    }
    assert!(answered < 150, "some clients went away mid-call ({answered} of 150 answered)");

    // Then normal calls: none refused, each change there.
    let client = reqwest::Client::new();
    for j in 0..100 {
        let resp = client
            .post(&url)
            .bearer_auth(TOKEN)
            .json(&json!({"key": format!("after_{j}"), "value": j.to_string()}))
            .send()
            .await
            .unwrap();
        let status = resp.status().as_u16();
        assert_eq!(status, 200, "call {j}: {}", resp.text().await.unwrap_or_default());
    }
    let live = runtime.session(&info.id).await.unwrap().unwrap();
    let held = live.registers.keys();
    for j in 0..100 {
        assert!(held.contains(&format!("after_{j}")), "after_{j} is missing: {held:?}");
    }
    drop(live);

    // What the session holds is what a restart finds: nothing in memory that was not saved.
    let again = Runtime::load(Some(&config)).await.unwrap();
    let restored = again.session(&info.id).await.unwrap().unwrap().registers.keys();
    assert_eq!(restored, held);
}
