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
    let log = tmp.path().join("stderr.jsonl");
    let mut child = Command::new(env!("CARGO_BIN_EXE_holdfast"))
        .args(["--log-format", "json", "serve", "--data-dir", data.to_str().unwrap(), "--bind", "127.0.0.1:0"])
        .env_remove("HOLDFAST_LOG")
        .env_remove("RUST_LOG")
        .env_remove("HOLDFAST_DATABASE_URL")
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let url = first.strip_prefix("holdfast serving on ").unwrap().trim_end_matches('/').to_owned();
    let open = lines.next().unwrap().unwrap();
    let token = std::fs::read_to_string(data.join("server.token")).unwrap().trim().to_owned();
    // Not a terminal (a pipe here; a log file or a journal in service): no link, only how to get one.
    assert!(open.contains("holdfast serve --print-url") && !open.contains("?code="), "{open}");
    let printed = Command::new(env!("CARGO_BIN_EXE_holdfast"))
        .args(["serve", "--print-url", "--data-dir", data.to_str().unwrap()])
        .output()
        .unwrap();
    let link = String::from_utf8_lossy(&printed.stdout).trim().to_owned();
    assert!(link.starts_with(&format!("{url}/?code=")) && !link.contains(&token), "{link}");
    let code = link.split("/?code=").nth(1).unwrap().to_owned();
    let api = lines.next().unwrap().unwrap();
    assert!(api.contains("API token") && api.contains("server.token") && !api.contains(&token), "{api}");
    let network = lines.next().unwrap().unwrap();
    assert!(
        network.contains(&format!(
            "network: base — holdfast devnet (Base addresses), chain id {}",
            holdfast_devnet::CHAIN_ID
        )) && network.contains("local devnet"),
        "the banner says devnet: {network}"
    );
    // The data dir and everything holdfast wrote into it are private.
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&data), 0o700, "the data dir");
        for file in ["holdfast.db", "server.token", "sign-in.json", "holdfast.lock"] {
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
    let info_before = info.clone();
    let anvil = info["anvil"]["pid"].as_u64().unwrap();
    assert!(pid_alive(anvil), "serve started a devnet");
    // Its funds sit in a smart account with on-chain limits; the key is only the account's signer.
    let account = info["wallet"]["account"].as_str().expect("the devnet's smart account by default").to_owned();
    assert_eq!(info["wallet"]["signer"], info["wallet"]["address"]);
    assert_eq!(info["wallet"]["limits"].as_array().map(Vec::len), Some(2), "{info}");

    let client = reqwest::blocking::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    assert_eq!(client.get(format!("{url}/api/info")).send().unwrap().status().as_u16(), 401);
    let rebound = client.get(format!("{url}/api/info")).bearer_auth(&token).header("host", "attacker.example").send();
    assert_eq!(rebound.unwrap().status().as_u16(), 403, "a foreign Host is refused even with the token");
    let resp = client.get(format!("{url}/api/info")).bearer_auth(&token).send().unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let body: serde_json::Value = resp.json().unwrap();
    assert_eq!(body["networks"][0]["chain_id"], holdfast_devnet::CHAIN_ID, "not Base mainnet's 8453");
    let wallet: serde_json::Value =
        client.get(format!("{url}/api/wallet")).bearer_auth(&token).send().unwrap().json().unwrap();
    let shown = &wallet["networks"][0]["account"];
    assert_eq!(shown["address"], account.as_str(), "{wallet}");
    let usdc = shown["limits"].as_array().unwrap().iter().find(|l| l["symbol"] == "USDC").unwrap();
    assert_eq!((usdc["limit_human"].as_str(), usdc["remaining_human"].as_str()), (Some("100"), Some("100")));
    let page = client.get(format!("{url}/")).send().unwrap().text().unwrap();
    assert!(page.contains("holdfast"));
    // The printed link signs a browser in once.
    let signed_in = client.get(format!("{url}/?code={code}")).send().unwrap();
    assert_eq!(signed_in.status().as_u16(), 303);
    let cookie = signed_in.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_owned();
    let page_key = signed_in.headers()["location"].to_str().unwrap().strip_prefix("/#page=").unwrap().to_owned();
    let info = client.get(format!("{url}/api/info")).header("cookie", &cookie).header("x-holdfast-page", &page_key);
    assert_eq!(info.send().unwrap().status().as_u16(), 200, "the browser is signed in");
    assert_eq!(client.get(format!("{url}/?code={code}")).send().unwrap().status().as_u16(), 401, "once");

    // A second serve on the same data dir stops at once, naming the first; the devnet stays up for the first.
    let second = Command::new(env!("CARGO_BIN_EXE_holdfast"))
        .args(["serve", "--data-dir", data.to_str().unwrap(), "--bind", "127.0.0.1:0"])
        .env_remove("HOLDFAST_DATABASE_URL")
        .output()
        .unwrap();
    assert!(!second.status.success());
    let said = String::from_utf8_lossy(&second.stderr);
    let addr = url.trim_start_matches("http://");
    assert!(
        said.contains(&format!("pid {}", child.id())) && said.contains(addr) && said.contains("docs/deploy.md"),
        "the second is told who holds the data dir and how to run several: {said}"
    );
    assert!(pid_alive(anvil), "the second serve did not stop the devnet");
    // Another data dir naming the same wallet (the devnet's own configuration, whose data dir is devnet/data) is
    // refused too: one wallet, one process on a SQLite journal.
    let mut replay = Command::new(env!("CARGO_BIN_EXE_holdfast"))
        .args(["replay", "--config", data.join("devnet/holdfast.toml").to_str().unwrap(), "-"])
        .env_remove("HOLDFAST_DATABASE_URL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(replay.stdin.take());
    let replayed = replay.wait_with_output().unwrap();
    assert!(!replayed.status.success());
    let said = String::from_utf8_lossy(&replayed.stderr);
    assert!(said.contains("moving value for the wallet") && said.contains(&format!("pid {}", child.id())), "{said}");
    assert_eq!(client.get(format!("{url}/api/info")).bearer_auth(&token).send().unwrap().status().as_u16(), 200);
    // --print-url finds the running server's address and mints a new code each time.
    let printed = Command::new(env!("CARGO_BIN_EXE_holdfast"))
        .args(["serve", "--print-url", "--data-dir", data.to_str().unwrap()])
        .output()
        .unwrap();
    let link = String::from_utf8_lossy(&printed.stdout).trim().to_owned();
    assert!(link.starts_with(&format!("{url}/?code=")) && !link.contains(&code), "{link}");

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

    // With --log-format json, stderr held JSON only: the devnet's progress and the shutdown lines as events.
    let text = std::fs::read_to_string(&log).unwrap();
    let events: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l:?}\n{text}")))
        .collect();
    let messages: Vec<&str> = events.iter().filter_map(|e| e["fields"]["message"].as_str()).collect();
    for expected in ["devnet: anvil is up", "holdfast: stopped", "is down: services (pid"] {
        assert!(messages.iter().any(|m| m.contains(expected)), "{expected:?} among {messages:#?}");
    }
    assert!(!text.contains(&token) && !text.contains(&code), "no secret in the log");

    // Served again: the devnet resumes its chain, with the same wallet and key.
    let key_before = std::fs::read(data.join("devnet/wallet.key")).unwrap();
    let mut again = Command::new(env!("CARGO_BIN_EXE_holdfast"))
        .args(["serve", "--data-dir", data.to_str().unwrap(), "--bind", "127.0.0.1:0"])
        .env_remove("HOLDFAST_DATABASE_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(again.stdout.take().unwrap()).lines();
    assert!(out.next().unwrap().unwrap().starts_with("holdfast serving on "));
    let resumed: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data.join("devnet/devnet.json")).unwrap()).unwrap();
    assert_eq!(resumed["wallet"], info_before["wallet"], "the same wallet and account");
    assert_ne!(resumed["anvil"]["pid"], info_before["anvil"]["pid"]);
    assert_eq!(std::fs::read(data.join("devnet/wallet.key")).unwrap(), key_before, "the key is kept");
    Command::new("kill").args(["-TERM", &again.id().to_string()]).status().unwrap();
    let ended = again.wait_with_output().unwrap();
    assert!(ended.status.success(), "{}: {}", ended.status, String::from_utf8_lossy(&ended.stderr));
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
    assert!(
        first.iter().any(|l| l.contains("holdfast serve --print-url")),
        "every start says how to sign in: {first:?}"
    );

    // Later starts too, and say how to get another, never printing the token.
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
    let link = String::from_utf8_lossy(&printed.stdout).trim().to_owned();
    let code = link.strip_prefix("http://127.0.0.1:8700/?code=").unwrap_or_else(|| panic!("{link}"));
    assert!(code.len() == 32 && code != token, "a one-time code, not the token: {link}");
    let signed_out = Command::new(env!("CARGO_BIN_EXE_holdfast"))
        .args(["serve", "--sign-out-all"])
        .env("HOME", &home)
        .env_remove("XDG_DATA_HOME")
        .output()
        .unwrap();
    assert!(signed_out.status.success());
    assert!(String::from_utf8_lossy(&signed_out.stdout).contains("signed out 0 browser sessions"));

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
    let page = client.get(format!("{url}/")).send().unwrap();
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

/// Opens `n` connections to `addr` that each send half a request head and then nothing.
fn stall(addr: &str, n: usize) -> Vec<std::net::TcpStream> {
    use std::io::Write as _;
    (0..n)
        .map(|_| {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            s.write_all(format!("GET /health HTTP/1.1\r\nHost: {addr}\r\nX-Half: ").as_bytes()).unwrap();
            s
        })
        .collect()
}

/// Whether the server closed `s` (EOF or reset) within `within`.
fn closed_within(s: &mut std::net::TcpStream, within: Duration) -> bool {
    use std::io::Read as _;
    s.set_read_timeout(Some(within)).unwrap();
    let mut buf = [0u8; 512];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {} // a 408 or similar before closing
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                return false;
            }
            Err(_) => return true,
        }
    }
}

/// Starts `serve --config CONFIG` (no devnet) with the log at warn in `log`; returns the child and its URL.
fn serve_with(config: &Path, log: &Path) -> (std::process::Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_holdfast"))
        .args(["serve", "--config", config.to_str().unwrap(), "--bind", "127.0.0.1:0"])
        .env_remove("HOLDFAST_LOG")
        .env_remove("RUST_LOG")
        .env_remove("HOLDFAST_DATABASE_URL")
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap();
    let first = BufReader::new(child.stdout.take().unwrap()).lines().next().unwrap().unwrap();
    let url = first.strip_prefix("holdfast serving on ").unwrap().trim_end_matches('/').to_owned();
    (child, url)
}

fn wait_for_log(log: &Path, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.contains(needle) || Instant::now() > deadline {
            return text;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_thousand_stalled_clients_neither_starve_the_server_nor_stay_connected() {
    holdfast_agent::listen::raise_open_files_limit();
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("holdfast.toml");
    std::fs::write(&config, "[storage]\ndata_dir = \"data\"\n\n[server.connections]\nheader_read_timeout_secs = 3\n")
        .unwrap();
    let log = tmp.path().join("stderr.log");
    let (mut child, url) = serve_with(&config, &log);
    let addr = url.trim_start_matches("http://").to_owned();

    let mut stalled = stall(&addr, 1000);
    // While they are held, the server still answers.
    let started = Instant::now();
    let health = reqwest::blocking::Client::builder().timeout(Duration::from_secs(5)).build().unwrap();
    let answer = health.get(format!("{url}/health")).send().unwrap();
    let took = started.elapsed();
    assert_eq!(answer.status().as_u16(), 200);
    println!("/health answered in {took:?} with 1000 stalled connections held");
    // Each stalled client is disconnected once its header time is up, and counted in the log.
    let gone = stalled.iter_mut().map(|s| closed_within(s, Duration::from_secs(15))).filter(|c| *c).count();
    assert_eq!(gone, 1000, "every stalled connection was closed by the server");
    let text = wait_for_log(&log, "stalled client connections");
    assert!(text.contains("disconnected 1000 stalled client connections"), "{text}");
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn at_the_cap_a_new_client_takes_an_idle_slot_and_busy_connections_keep_theirs() {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("holdfast.toml");
    std::fs::write(
        &config,
        "[storage]\ndata_dir = \"data\"\n\n[server.connections]\nheader_read_timeout_secs = 30\nmax_connections = 20\n",
    )
    .unwrap();
    let log = tmp.path().join("stderr.log");
    let (mut child, url) = serve_with(&config, &log);
    let addr = url.trim_start_matches("http://").to_owned();
    let token = std::fs::read_to_string(tmp.path().join("data/server.token")).unwrap().trim().to_owned();

    // 20 connections that send half a head fill the cap; 5 more take the places of the 5 quiet longest.
    let mut first = stall(&addr, 20);
    std::thread::sleep(Duration::from_millis(300));
    let mut second = stall(&addr, 5);
    std::thread::sleep(Duration::from_millis(300));
    let evicted: Vec<bool> = first.iter_mut().map(|s| closed_within(s, Duration::from_millis(300))).collect();
    assert_eq!(evicted.iter().filter(|e| **e).count(), 5, "five of the quiet ones gave way: {evicted:?}");
    let kept = second.iter_mut().map(|s| closed_within(s, Duration::from_millis(100))).filter(|c| *c).count();
    assert_eq!(kept, 0, "the newcomers are served");
    // A real request at the cap is served too: a flood of silent connections cannot keep it out.
    let health = reqwest::blocking::Client::new().get(format!("{url}/health")).send().unwrap();
    assert_eq!(health.status().as_u16(), 200);
    drop((first, second));

    // 20 WebSockets are busy connections: none is evicted, and a 21st connection is closed at once.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let sockets = runtime.block_on(async {
        use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let mut sockets = Vec::new();
        for _ in 0..20 {
            let mut request = format!("ws://{addr}/ws").into_client_request().unwrap();
            request.headers_mut().insert("authorization", format!("Bearer {token}").parse().unwrap());
            sockets.push(tokio_tungstenite::connect_async(request).await.unwrap().0);
        }
        sockets
    });
    let mut over = stall(&addr, 1);
    assert!(closed_within(&mut over[0], Duration::from_secs(5)), "every slot busy: the newcomer is refused");
    let text = wait_for_log(&log, "every connection busy");
    assert!(text.contains("refused 1 connections over the cap of 20 (every connection busy)"), "{text}");
    assert!(text.contains("idle ones for new clients"), "{text}");
    drop(sockets);
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn a_request_body_that_stops_arriving_is_cut_after_the_idle_timeout() {
    use std::io::Write as _;
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("holdfast.toml");
    std::fs::write(&config, "[storage]\ndata_dir = \"data\"\n\n[server.connections]\nidle_timeout_secs = 2\n").unwrap();
    let log = tmp.path().join("stderr.log");
    let (mut child, url) = serve_with(&config, &log);
    let addr = url.trim_start_matches("http://").to_owned();
    let token = std::fs::read_to_string(tmp.path().join("data/server.token")).unwrap().trim().to_owned();
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    let head = format!(
        "POST /api/sessions HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\n\
         Content-Length: 100\r\n\r\n{{\"agent\":"
    );
    s.write_all(head.as_bytes()).unwrap();
    assert!(closed_within(&mut s, Duration::from_secs(15)), "a body that stops arriving does not hold the connection");
    let client = reqwest::blocking::Client::new();
    let sessions: serde_json::Value =
        client.get(format!("{url}/api/sessions")).bearer_auth(&token).send().unwrap().json().unwrap();
    assert_eq!(sessions["sessions"].as_array().unwrap().len(), 0, "the cut request created nothing");
    // A WebSocket whose peer says nothing (no pong, no message) is cut after the idle timeout too.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let ended = runtime.block_on(async {
        use futures::StreamExt as _;
        use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;
        let mut request = format!("ws://{addr}/ws").into_client_request().unwrap();
        request.headers_mut().insert("authorization", format!("Bearer {token}").parse().unwrap());
        let (ws, _) = tokio_tungstenite::connect_async(request).await.unwrap();
        // Read nothing for longer than the timeout (a silent peer), then see whether the server ended it.
        tokio::time::sleep(Duration::from_secs(4)).await;
        let (_, mut read) = ws.split();
        tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                match read.next().await {
                    None | Some(Err(_)) | Some(Ok(tokio_tungstenite::tungstenite::Message::Close(_))) => return,
                    Some(Ok(_)) => {}
                }
            }
        })
        .await
        .is_ok()
    });
    assert!(ended, "a silent WebSocket peer is disconnected");
    child.kill().unwrap();
    child.wait().unwrap();
}

/// A config that sets no data dir runs in memory, and the banner says so instead of naming a data dir.
#[test]
fn a_config_without_a_data_dir_says_nothing_is_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let config = tmp.path().join("holdfast.toml");
    std::fs::write(&config, "# nothing: built-in defaults, no [storage]\n").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_holdfast"))
        .args(["serve", "--config", config.to_str().unwrap(), "--bind", "127.0.0.1:0"])
        .env("HOME", &home)
        .env_remove("XDG_DATA_HOME")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut banner = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        let done = line.trim_start().starts_with("storage:");
        banner.push(line);
        if done {
            break;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let data = banner.iter().find(|l| l.trim_start().starts_with("data:")).unwrap_or_else(|| panic!("{banner:?}"));
    assert!(data.contains("data: none") && data.contains("in memory"), "{banner:?}");
    let storage = banner.last().unwrap();
    assert!(storage.contains("memory"), "{banner:?}");
}
