//! The main job end to end: `holdfast serve` with no configuration starts its own devnet, serves the API with a
//! token, and on SIGTERM finishes and stops the devnet it started.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn pid_alive(pid: u64) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

#[test]
fn serve_on_embedded_defaults_then_shut_down_cleanly() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let mut child = Command::new(env!("CARGO_BIN_EXE_holdfast"))
        .args(["serve", "--data-dir", data.to_str().unwrap(), "--bind", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let url = first.strip_prefix("holdfast serving on ").unwrap().trim_end_matches('/').to_owned();
    let open = lines.next().unwrap().unwrap();
    assert!(open.contains("/?token="), "the token is printed once, on first start: {open}");
    let token = std::fs::read_to_string(data.join("server.token")).unwrap().trim().to_owned();
    assert!(
        open.ends_with(&format!("/?token={token}   (token saved in {}/server.token)", data.display()))
            || open.contains(&token)
    );
    // The data dir and everything holdfast wrote into it are private.
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&data), 0o700, "the data dir");
        for file in ["holdfast.db", "server.token"] {
            assert_eq!(mode(&data.join(file)), 0o600, "{file}");
        }
        for file in ["holdfast.db-wal", "holdfast.db-shm", "wallet.key"] {
            if data.join(file).exists() {
                assert_eq!(mode(&data.join(file)), 0o600, "{file}");
            }
        }
    }

    let info = std::fs::read_to_string(data.join("devnet/devnet.json")).unwrap();
    let info: serde_json::Value = serde_json::from_str(&info).unwrap();
    let anvil = info["anvil"]["pid"].as_u64().unwrap();
    assert!(pid_alive(anvil), "serve started a devnet");

    let client = reqwest::blocking::Client::new();
    assert_eq!(client.get(format!("{url}/api/info")).send().unwrap().status().as_u16(), 401);
    let rebound = client.get(format!("{url}/api/info")).bearer_auth(&token).header("host", "attacker.example").send();
    assert_eq!(rebound.unwrap().status().as_u16(), 403, "a foreign Host is refused even with the token");
    let resp = client.get(format!("{url}/api/info")).bearer_auth(&token).send().unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let body: serde_json::Value = resp.json().unwrap();
    assert_eq!(body["networks"][0]["chain_id"], 8453);
    let page = client.get(format!("{url}/")).send().unwrap().text().unwrap();
    assert!(page.contains("holdfast"));

    Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "serve did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success());
    for _ in 0..100 {
        if !pid_alive(anvil) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!pid_alive(anvil), "the devnet serve started is stopped with it");
}
