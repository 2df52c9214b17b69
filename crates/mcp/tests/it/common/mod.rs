//! Shared harness: the `holdfast mcp` binary (built from the CLI's own glue), the TypeScript SDK scripts under
//! `tests/js`, data dirs and configs.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::{Child, Command};

/// The server binary: `holdfast-mcp-test` (`holdfast mcp` compiled from crates/holdfast/src/cli/mcp_cmd.rs), or the binary
/// named by `HOLDFAST_MCP_BIN` (e.g. `target/debug/holdfast`, to run these tests against the real CLI).
pub(crate) fn bin() -> String {
    std::env::var("HOLDFAST_MCP_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_holdfast-mcp-test").to_owned())
}

/// How long one SDK script may run.
pub(crate) const SCRIPT_TIMEOUT: Duration = Duration::from_secs(120);

pub(crate) fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

pub(crate) fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/js").join(name)
}

/// Fails with a clear message when the pinned SDK is missing (`npm ci --prefix devnet`, as scripts/test.sh does).
pub(crate) fn require_sdk() {
    let sdk = repo_root().join("devnet/node_modules/@modelcontextprotocol/sdk/package.json");
    assert!(
        sdk.exists(),
        "the MCP TypeScript SDK is not installed at {}: run `npm ci --prefix devnet` (scripts/test.sh does)",
        sdk.display()
    );
}

/// A config whose data dir is `dir/data`, plus `extra` TOML.
pub(crate) fn config_in(dir: &Path, extra: &str) -> PathBuf {
    let path = dir.join("holdfast.toml");
    std::fs::write(&path, format!("[storage]\ndata_dir = \"data\"\n{extra}")).unwrap();
    path
}

/// Runs an SDK script with `env`; returns its findings (the JSON line it prints). Panics with its output on failure.
pub(crate) async fn run_script(name: &str, env: &[(&str, String)]) -> Value {
    require_sdk();
    let mut cmd = Command::new(std::env::var("NODE").unwrap_or_else(|_| "node".into()));
    cmd.arg(script(name)).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let child = cmd.spawn().expect("node must be installed to run the MCP interop tests");
    let output = tokio::time::timeout(SCRIPT_TIMEOUT, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{name} did not finish within {SCRIPT_TIMEOUT:?}"))
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{name} failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}", output.status);
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{name} printed no findings ({e}):\n{stdout}\n{stderr}"))
}

/// The environment for a stdio script: the server is `bin() mcp ARGS`.
pub(crate) fn stdio_env(args: &[&str]) -> Vec<(&'static str, String)> {
    let mut all = vec!["mcp".to_owned()];
    all.extend(args.iter().map(|s| (*s).to_owned()));
    vec![("MCP_TRANSPORT", "stdio".into()), ("MCP_COMMAND", bin()), ("MCP_ARGS", serde_json::to_string(&all).unwrap())]
}

/// `holdfast mcp --transport http` running as a child process.
pub(crate) struct HttpChild {
    pub child: Child,
    pub url: String,
    /// The lines it wrote before listening.
    pub stderr: Vec<String>,
    /// Its stdout (a new token is printed there once), read while it runs.
    pub stdout: std::sync::Arc<parking_lot::Mutex<Vec<String>>>,
    /// Every line it wrote to stderr so far.
    pub log: std::sync::Arc<parking_lot::Mutex<Vec<String>>>,
}

impl HttpChild {
    /// Starts the server and waits for its `listening on URL` line.
    pub(crate) async fn start(args: &[&str], envs: &[(&str, &str)]) -> HttpChild {
        let mut cmd = Command::new(bin());
        cmd.arg("mcp").args(["--transport", "http"]).args(args);
        cmd.env_remove("HOLDFAST_MCP_TOKEN").stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        for (k, v) in envs {
            cmd.env(k, v);
        }
        let mut child = cmd.kill_on_drop(true).spawn().unwrap();
        let stdout = std::sync::Arc::new(parking_lot::Mutex::new(Vec::new()));
        let mut out_lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let out_sink = std::sync::Arc::clone(&stdout);
        tokio::spawn(async move {
            while let Ok(Some(line)) = out_lines.next_line().await {
                out_sink.lock().push(line);
            }
        });
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut stderr = Vec::new();
        let url = tokio::time::timeout(Duration::from_secs(60), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                stderr.push(line.clone());
                if let Some(url) = line.strip_prefix("holdfast mcp: listening on ") {
                    return url.to_owned();
                }
            }
            panic!("the server exited before listening:\n{}", stderr.join("\n"));
        })
        .await
        .expect("the HTTP server did not start within 60 s");
        // Keep draining stderr (into `log`) so the child never blocks on a full pipe.
        let log = std::sync::Arc::new(parking_lot::Mutex::new(stderr.clone()));
        let sink = std::sync::Arc::clone(&log);
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                sink.lock().push(line);
            }
        });
        HttpChild { child, url, stderr, stdout, log }
    }

    pub(crate) fn http_env(&self, token: &str) -> Vec<(&'static str, String)> {
        vec![("MCP_TRANSPORT", "http".into()), ("MCP_URL", self.url.clone()), ("MCP_TOKEN", token.to_owned())]
    }
}
