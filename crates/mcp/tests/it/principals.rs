//! Each MCP client its own principal (`holdfast mcp --transport http`): tokens added with `holdfast mcp token add`,
//! sessions that belong to the client that opened them, forms only their own human answers — judged by the chain —
//! and no session id or token in the log at `info`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use crate::common::{HttpChild, bin, run_script};
use holdfast_devnet::{TestDevnet, USDC};
use serde_json::json;

/// `holdfast mcp token ARGS --config CONFIG`: (success, stdout, stderr).
async fn token_cmd(args: &[&str], config: &str) -> (bool, String, String) {
    let out = tokio::process::Command::new(bin())
        .args(["mcp", "token"])
        .args(args)
        .args(["--config", config])
        .output()
        .await
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_client_holding_a_session_id_can_neither_approve_nor_touch_it() {
    crate::common::require_sdk();
    let devnet = TestDevnet::start().await.expect("devnet");
    let config = devnet.config_path.to_str().unwrap().to_owned();
    let server = HttpChild::start(&["--bind", "127.0.0.1:0", "--config", &config], &[("HOLDFAST_LOG", "info")]).await;
    let data = devnet.dir.join("data");
    let token_a = std::fs::read_to_string(data.join("mcp.token")).unwrap().trim().to_owned();
    let (added, token_b, said) = token_cmd(&["add", "laptop"], &config).await;
    assert!(added, "{said}");
    let token_b = token_b.trim().to_owned();
    assert_eq!(token_b.len(), 64, "the new token is printed once, alone on stdout: {token_b:?}");
    let stored = std::fs::read_to_string(data.join("mcp-clients.json")).unwrap();
    assert!(!stored.contains(&token_b), "only its digest is kept");

    let alice: alloy_primitives::Address = holdfast_devnet::config::ALICE.parse().unwrap();
    let before = devnet.balance_of(USDC, alice).await.unwrap();
    let mut env = server.http_env(&token_a);
    env.push(("MCP_TOKEN_B", token_b.clone()));
    let findings = run_script("two_clients.mjs", &env).await;
    assert_eq!(devnet.balance_of(USDC, alice).await.unwrap(), before, "the human declined: nothing moved: {findings}");

    // The list shows both clients, B's last use too; a revoked token stops working at once.
    let (_, listed, _) = token_cmd(&["list"], &config).await;
    let laptop = listed.lines().find(|l| l.starts_with("laptop")).unwrap_or_else(|| panic!("{listed}"));
    assert!(laptop.contains("active") && !laptop.contains(" - "), "added and used: {listed}");
    assert!(listed.lines().any(|l| l.starts_with("default")), "{listed}");
    let (revoked, _, said) = token_cmd(&["revoke", "laptop"], &config).await;
    assert!(revoked, "{said}");
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "revoked", "version": "1"}}});
    let refused = reqwest::Client::new()
        .post(&server.url)
        .bearer_auth(&token_b)
        .header("accept", "application/json, text/event-stream")
        .json(&init)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status().as_u16(), 401, "a revoked client is refused on the running server");
    let (again, _, said) = token_cmd(&["revoke", "default"], &config).await;
    assert!(!again && said.contains("mcp.token"), "the default client is its file's: {said}");

    // Nothing at info names a session or carries a token (a new default token is shown once, on stdout).
    let log = server.log.lock().join("\n");
    assert!(!log.contains(&token_a) && !log.contains(&token_b), "no token in the log:\n{log}");
    assert!(!log.contains("create new session"), "rmcp's session log is held back:\n{log}");
    let uuid = regex::Regex::new(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}").unwrap();
    assert!(!uuid.is_match(&log), "no MCP session id in the log:\n{log}");
}
