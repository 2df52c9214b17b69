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
    let network = lines.next().unwrap().unwrap();
    assert!(
        network.contains(&format!(
            "network: base — holdfast devnet (Base addresses), chain id {}",
            holdfast_devnet::CHAIN_ID
        )) && network.contains("local devnet"),
        "the banner says devnet: {network}"
    );
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
    assert_eq!(body["networks"][0]["chain_id"], holdfast_devnet::CHAIN_ID, "not Base mainnet's 8453");
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

/// Starts `serve --no-devnet` in `cwd` with `envs`, returns its first stdout lines (until `data:`), then kills it.
fn start_and_read(cwd: &Path, envs: &[(&str, &Path)]) -> Vec<String> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_holdfast"));
    cmd.args(["serve", "--no-devnet", "--bind", "127.0.0.1:0"]).current_dir(cwd).env_remove("XDG_DATA_HOME");
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let mut out = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        let done = line.trim_start().starts_with("data:");
        out.push(line);
        if done {
            break;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    out
}

#[test]
fn the_data_dir_is_the_platforms_never_the_working_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, work) = (tmp.path().join("home"), tmp.path().join("checkout"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&work).unwrap();

    let first = start_and_read(&work, &[("HOME", &home)]);
    let data = home.join(".local/share/holdfast");
    assert!(data.join("server.token").exists(), "{first:?}");
    assert!(data.join("wallet.key").exists());
    assert_eq!(std::fs::read_dir(&work).unwrap().count(), 0, "nothing is written into the working directory");
    assert!(first.iter().any(|l| l.contains(&format!("data: {}", data.display()))), "{first:?}");
    let token = std::fs::read_to_string(data.join("server.token")).unwrap().trim().to_owned();
    assert!(first.iter().any(|l| l.contains("/?token=")), "the first start prints the sign-in link: {first:?}");

    // Later starts say how to get the link again, without printing the token unasked.
    let second = start_and_read(&work, &[("HOME", &home)]);
    let all = second.join("\n");
    assert!(!all.contains(&token), "{all}");
    assert!(all.contains("holdfast serve --print-url"), "{all}");
    let printed = Command::new(env!("CARGO_BIN_EXE_holdfast"))
        .args(["serve", "--print-url", "--bind", "127.0.0.1:8700"])
        .env("HOME", &home)
        .env_remove("XDG_DATA_HOME")
        .output()
        .unwrap();
    assert!(printed.status.success());
    assert_eq!(String::from_utf8_lossy(&printed.stdout).trim(), format!("http://127.0.0.1:8700/?token={token}"));

    // XDG_DATA_HOME wins over HOME.
    let xdg = tmp.path().join("xdg");
    start_and_read(&work, &[("HOME", &home), ("XDG_DATA_HOME", &xdg)]);
    assert!(xdg.join("holdfast/server.token").exists());
    assert_eq!(std::fs::read_dir(&work).unwrap().count(), 0);
}

#[test]
fn rust_log_shows_requests_with_ids_and_never_the_token() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let log = tmp.path().join("stderr.log");
    let mut child = Command::new(env!("CARGO_BIN_EXE_holdfast"))
        .args(["serve", "--no-devnet", "--data-dir", data.to_str().unwrap(), "--bind", "127.0.0.1:0"])
        .env("RUST_LOG", "info")
        .env_remove("HOLDFAST_LOG")
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let url =
        lines.next().unwrap().unwrap().strip_prefix("holdfast serving on ").unwrap().trim_end_matches('/').to_owned();
    let token = std::fs::read_to_string(data.join("server.token")).unwrap().trim().to_owned();
    let client = reqwest::blocking::Client::new();
    let page = client.get(format!("{url}/?token={token}")).send().unwrap();
    assert!(page.headers().contains_key("x-request-id"));
    let info =
        client.get(format!("{url}/api/info")).bearer_auth(&token).header("x-request-id", "req-from-client").send();
    let info = info.unwrap();
    assert_eq!(info.headers()["x-request-id"], "req-from-client", "a client's id is kept and returned");
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap();
    child.wait().unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("request_id=req-from-client") && text.contains("path=/api/info"), "{text}");
    assert!(text.contains("status=200"), "{text}");
    assert!(!text.contains(&token), "the token never reaches the log:\n{text}");
}

#[test]
fn devnet_up_takes_a_recent_anvil_from_path_and_installs_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let (bin, cache, dir) = (tmp.path().join("bin"), tmp.path().join("cache"), tmp.path().join("devnet"));
    std::fs::create_dir_all(&bin).unwrap();
    let anvil = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../devnet/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil")
        .canonicalize()
        .expect("scripts/test.sh installs devnet/node_modules first");
    std::os::unix::fs::symlink(&anvil, bin.join("anvil")).unwrap();
    let path = std::env::join_paths(
        std::iter::once(bin.clone()).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .unwrap();
    let up = Command::new(env!("CARGO_BIN_EXE_holdfast"))
        .args(["devnet", "up", "--dir", dir.to_str().unwrap()])
        .env("PATH", &path)
        .env("HOLDFAST_DEVNET_CACHE", &cache)
        .env_remove("HOLDFAST_ANVIL")
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&up.stdout), String::from_utf8_lossy(&up.stderr));
    let down = Command::new(env!("CARGO_BIN_EXE_holdfast"))
        .args(["devnet", "down", "--dir", dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(up.status.success(), "{stdout}\n{stderr}");
    assert!(down.status.success());
    // The PATH entry, resolved: the binary whose version was checked is the one started.
    assert!(stderr.contains(&format!("using anvil 1.7.1 from PATH ({})", anvil.display())), "{stderr}");
    assert!(!cache.exists(), "nothing was installed into the cache");
    assert!(
        stdout.contains(&format!("chain id {}: a local devnet, no real value", holdfast_devnet::CHAIN_ID)),
        "{stdout}"
    );
}
