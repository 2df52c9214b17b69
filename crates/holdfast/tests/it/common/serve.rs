//! A running `holdfast serve` and its API client, the devnet the binary brings up, and a paid swap quote: shared by
//! the crash harness and the several-instances test.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// A running `holdfast serve`.
pub(crate) struct Serve {
    child: Child,
    pub(crate) api: Api,
}

/// A client of its API (clones share the connection pool).
#[derive(Clone)]
pub(crate) struct Api {
    pub(crate) url: String,
    pub(crate) token: String,
    http: reqwest::Client,
}

impl std::ops::Deref for Serve {
    type Target = Api;
    fn deref(&self) -> &Api {
        &self.api
    }
}

impl Serve {
    pub(crate) async fn start(data: &Path, config: Option<&Path>) -> Serve {
        Self::start_with(data, config, &[]).await
    }

    /// Starts with extra environment variables (such as `HOLDFAST_DATABASE_URL`).
    pub(crate) async fn start_with(data: &Path, config: Option<&Path>, env: &[(&str, &str)]) -> Serve {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_holdfast"));
        cmd.envs(env.iter().copied());
        cmd.args(["serve", "--data-dir", data.to_str().unwrap(), "--bind", "127.0.0.1:0"]);
        match config {
            Some(c) => cmd.args(["--config", c.to_str().unwrap()]),
            None => cmd.arg("--no-devnet"),
        };
        let log = std::fs::OpenOptions::new().create(true).append(true).open(data.with_extension("log")).unwrap();
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .env("RUST_LOG", "warn")
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = tokio::time::timeout(Duration::from_secs(60), lines.next_line()).await.unwrap().unwrap().unwrap();
        let url = first.strip_prefix("holdfast serving on ").unwrap().trim_end_matches('/').to_owned();
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let token = std::fs::read_to_string(data.join("server.token")).unwrap().trim().to_owned();
        Serve { child, api: Api { url, token, http: reqwest::Client::new() } }
    }

    /// SIGKILL: no shutdown handler runs.
    pub(crate) async fn kill9(&mut self) {
        self.child.start_kill().unwrap();
        self.child.wait().await.unwrap();
    }
}

impl Api {
    /// An API call; `Err` carries the error body, or the transport failure (the process is gone).
    pub(crate) async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Result<Value, Value> {
        let mut req = self.http.request(method, format!("{}{path}", self.url)).bearer_auth(&self.token);
        if let Some(body) = body {
            req = req.json(&body);
        }
        let resp = req.send().await.map_err(|e| json!({"transport": e.to_string()}))?;
        let ok = resp.status().is_success();
        let body: Value = resp.json().await.map_err(|e| json!({"transport": e.to_string()}))?;
        if ok { Ok(body) } else { Err(body) }
    }

    pub(crate) async fn post(&self, path: &str, body: Value) -> Result<Value, Value> {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }

    pub(crate) async fn get(&self, path: &str) -> Value {
        self.call(reqwest::Method::GET, path, None).await.unwrap_or_else(|e| panic!("GET {path}: {e}"))
    }

    pub(crate) async fn tool(&self, session: &str, tool: &str, params: Value) -> Result<Value, Value> {
        self.post(&format!("/api/sessions/{session}/tools/{tool}"), params).await.map(|v| v["output"].clone())
    }

    pub(crate) async fn session(&self) -> String {
        self.post("/api/sessions", json!({})).await.unwrap()["id"].as_str().unwrap().to_owned()
    }
}

/// The devnet, brought up once for the devnet scenarios of this file.
pub(crate) struct Devnet {
    pub(crate) dir: PathBuf,
    pub(crate) anvil: String,
    pub(crate) quoter: String,
}

impl Devnet {
    pub(crate) fn up(dir: &Path) -> Devnet {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_holdfast"))
            .args(["devnet", "up", "--plain", "--dir", dir.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let info: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("devnet.json")).unwrap()).unwrap();
        let anvil = format!("http://127.0.0.1:{}", info["anvil"]["port"]);
        let presets = std::fs::read_to_string(dir.join("presets.ron")).unwrap();
        let start = presets.find("url: \"").unwrap() + 6;
        let rest = &presets[start..];
        let end = rest.find("/swap").unwrap();
        Devnet { dir: dir.to_path_buf(), anvil, quoter: rest[..end].to_owned() }
    }

    /// A config like the devnet's, with anvil and the quoter reached through `rpc` and `quoter`.
    pub(crate) fn config_through(&self, at: &Path, rpc: &str, quoter: &str) -> PathBuf {
        std::fs::create_dir_all(at).unwrap();
        let presets = std::fs::read_to_string(self.dir.join("presets.ron")).unwrap().replace(&self.quoter, quoter);
        std::fs::write(at.join("presets.ron"), presets).unwrap();
        let toml = std::fs::read_to_string(self.dir.join("holdfast.toml"))
            .unwrap()
            .replace(&self.anvil, rpc)
            .replace("data_dir = \"data\"", "")
            .replace("key_file = \"wallet.key\"", &format!("key_file = \"{}\"", self.dir.join("wallet.key").display()));
        let path = at.join("holdfast.toml");
        std::fs::write(&path, toml).unwrap();
        path
    }

    pub(crate) async fn rpc(&self, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let resp: Value =
            reqwest::Client::new().post(&self.anvil).json(&body).send().await.unwrap().json().await.unwrap();
        resp["result"].clone()
    }

    pub(crate) async fn nonce(&self, address: &str) -> u64 {
        let hex = self.rpc("eth_getTransactionCount", json!([address, "latest"])).await;
        u64::from_str_radix(hex.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
    }

    pub(crate) async fn token_balance(&self, token: &str, owner: &str) -> u128 {
        let data = format!("0x70a08231{:0>64}", owner.trim_start_matches("0x").to_lowercase());
        let hex = self.rpc("eth_call", json!([{"to": token, "data": data}, "latest"])).await;
        u128::from_str_radix(hex.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
    }
}

impl Drop for Devnet {
    fn drop(&mut self) {
        let _ = std::process::Command::new(env!("CARGO_BIN_EXE_holdfast"))
            .args(["devnet", "down", "--dir", self.dir.to_str().unwrap()])
            .output();
    }
}

/// Fetches a paid quote for 0.0001 ETH → USDC in a new session; returns the session id.
pub(crate) async fn quote(serve: &Serve) -> String {
    let s = serve.session().await;
    serve
        .post(&format!("/api/sessions/{s}/messages"), json!({"content": "swap 0.0001 ETH for USDC on base"}))
        .await
        .unwrap();
    for (tool, params) in [
        ("token_lookup", json!({"symbol": "ETH", "network": "base", "cache_as": "sell_token"})),
        ("token_lookup", json!({"symbol": "USDC", "network": "base", "cache_as": "buy_token"})),
        ("to_raw_amount", json!({"amount": "0.0001", "token_register": "sell_token", "cache_as": "sell_amount"})),
        ("x402_fetch", json!({"preset": "swap_quote", "network": "base", "cache_as": "swap_quote"})),
    ] {
        serve.tool(&s, tool, params).await.unwrap_or_else(|e| panic!("{tool}: {e}"));
    }
    s
}
