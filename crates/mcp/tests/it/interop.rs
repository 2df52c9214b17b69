//! The official MCP TypeScript SDK (`@modelcontextprotocol/sdk`, pinned in devnet/package.json) as a client of
//! `holdfast mcp`, over stdio and over streamable HTTP: initialize, tools with schemas the SDK accepts, the register
//! half of the swap flow with the amount coming through the `user_request` prompt (confirmed by the human in an
//! elicitation form; without one it is the client's text and never `user` origin), the registers resource read and
//! subscribed, coded errors for protected-register writes; sessions persisted and isolated; the HTTP token.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use crate::common::{HttpChild, config_in, run_script, stdio_env};
use holdfast_agent::{MessageRole, SqliteSessionStore};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_sdk_runs_the_register_flow_over_stdio_in_a_persisted_session() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(dir.path(), "");
    let findings = run_script("register_flow.mjs", &stdio_env(&["--config", config.to_str().unwrap()])).await;
    assert_eq!(findings["sell_amount_origin"], "user", "{findings}");
    assert!(findings["tools"].as_u64().unwrap() >= 8, "{findings}");
    assert!(findings["updates"].as_u64().unwrap() >= 1, "{findings}");

    // The MCP session was a persisted holdfast session of kind `mcp`, with the user's words and the tool calls.
    let store = SqliteSessionStore::open(&dir.path().join("data/holdfast.db")).unwrap();
    let sessions = store.list(10).await.unwrap();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    assert_eq!(sessions[0].kind, "mcp");
    assert_eq!(sessions[0].title.as_deref(), Some("swap 0.001 ETH for USDC on base"));
    let history = store.history(&sessions[0].id).await.unwrap();
    assert!(history.iter().any(|m| m.role == MessageRole::User && m.content == "swap 0.001 ETH for USDC on base"));
    let calls: Vec<&str> = history.iter().flat_map(|m| m.tool_calls.iter().map(|c| c.name.as_str())).collect();
    for tool in ["local_burner_wallet", "token_lookup", "to_raw_amount", "register_set"] {
        assert!(calls.contains(&tool), "{tool} is in the history: {calls:?}");
    }
    let denied = history.iter().find(|m| m.role == MessageRole::Tool && m.content.starts_with("register_write_denied"));
    assert!(denied.is_some(), "coded errors are recorded too");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_is_not_the_user_over_stdio() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(dir.path(), "");
    let findings = run_script("trust_boundary.mjs", &stdio_env(&["--config", config.to_str().unwrap()])).await;
    assert_eq!((&findings["user"], &findings["client"]), (&json!("user"), &json!("model")), "{findings}");
    assert_eq!(findings["refused_prompts"], json!(["holdfast_confirm", "holdfast_deny", "approve", "confirm"]));

    // Three sessions. The history keeps what the client sent without confirmation as the client's text (a system
    // note), never as the user's message; what the human submitted is the user's message.
    let store = SqliteSessionStore::open(&dir.path().join("data/holdfast.db")).unwrap();
    let sessions = store.list(10).await.unwrap();
    assert_eq!(sessions.len(), 3, "{sessions:?}");
    let mut user_messages = Vec::new();
    let mut unconfirmed = 0;
    for session in &sessions {
        for m in store.history(&session.id).await.unwrap() {
            match m.role {
                MessageRole::User => user_messages.push(m.content),
                MessageRole::System if m.content.contains("not confirmed by the user") => {
                    assert!(m.content.contains("not scanned"), "{}", m.content);
                    unconfirmed += 1;
                }
                _ => {}
            }
        }
    }
    assert_eq!(user_messages, ["swap 0.002 ETH for USDC on base"], "only the human's submitted words");
    assert_eq!(unconfirmed, 2, "no elicitation, and a declined form");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_sdk_runs_the_register_flow_over_streamable_http_behind_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(dir.path(), "");
    let server = HttpChild::start(&["--bind", "127.0.0.1:0", "--config", config.to_str().unwrap()], &[]).await;
    assert!(server.url.starts_with("http://127.0.0.1:") && server.url.ends_with("/mcp"), "{}", server.url);
    let token_file = dir.path().join("data/mcp.token");
    let token = std::fs::read_to_string(&token_file).unwrap().trim().to_owned();
    assert_eq!(token.len(), 64);
    // The new token is shown once, on stdout, and never on stderr (the log).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !server.stdout.lock().iter().any(|l| l.trim() == token) && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let shown = server.stdout.lock().clone();
    assert!(shown.iter().any(|l| l.trim() == token), "the new token is shown once on stdout: {shown:?}");
    assert!(!server.stderr.iter().any(|l| l.contains(&token)), "never in the log: {:?}", server.stderr);

    // No token, a wrong token: 401 before anything is parsed.
    let http = reqwest::Client::new();
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let post = |auth: Option<String>, body: Vec<u8>| {
        let mut req = http
            .post(&server.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body);
        if let Some(auth) = auth {
            req = req.header("authorization", auth);
        }
        req.send()
    };
    let no_token = post(None, ping.to_string().into_bytes()).await.unwrap();
    assert_eq!(no_token.status(), 401);
    assert!(no_token.headers().get("www-authenticate").is_some());
    let wrong = post(Some(format!("Bearer {}", "0".repeat(64))), ping.to_string().into_bytes()).await.unwrap();
    assert_eq!(wrong.status(), 401);

    // Malformed and oversized bodies: JSON-RPC errors, and the server keeps serving (the SDK flow below).
    let bearer = Some(format!("Bearer {token}"));
    let garbage = post(bearer.clone(), b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\"".to_vec()).await.unwrap();
    assert_eq!(garbage.status(), 400);
    let body: Value = garbage.json().await.unwrap();
    assert_eq!((body["id"].clone(), body["error"]["code"].clone()), (Value::Null, json!(-32700)), "{body}");
    let batch = post(bearer.clone(), json!([ping]).to_string().into_bytes()).await.unwrap();
    assert_eq!(batch.status(), 400);
    assert_eq!(batch.json::<Value>().await.unwrap()["error"]["code"], -32600);
    let big = json!({"jsonrpc": "2.0", "id": 41, "method": "ping", "params": {"pad": "x".repeat(2 << 20)}});
    let oversized = post(bearer.clone(), big.to_string().into_bytes()).await.unwrap();
    assert_eq!(oversized.status(), 413);
    let body: Value = oversized.json().await.unwrap();
    assert_eq!((body["id"].clone(), body["error"]["code"].clone()), (json!(41), json!(-32600)), "{body}");

    let findings = run_script("register_flow.mjs", &server.http_env(&token)).await;
    assert_eq!(findings["sell_amount_origin"], "user", "{findings}");
    let isolated = run_script("sessions.mjs", &server.http_env(&token)).await;
    assert_ne!(isolated["a"], isolated["b"], "{isolated}");
    let boundary = run_script("trust_boundary.mjs", &server.http_env(&token)).await;
    assert_eq!((&boundary["user"], &boundary["client"]), (&json!("user"), &json!("model")), "{boundary}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_public_bind_without_a_chosen_token_is_refused() {
    let output = tokio::process::Command::new(crate::common::bin())
        .args(["mcp", "--transport", "http", "--bind", "0.0.0.0:0"])
        .env_remove("HOLDFAST_MCP_TOKEN")
        .output()
        .await
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("refusing to listen on 0.0.0.0:0"), "{stderr}");
}

/// The operator's token from a file only its owner reads (a token on the command line is read by every local user in
/// `ps`, and kept in the shell's history: `--token` is gone); a file others may read is refused before anything
/// listens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_is_read_from_a_file_only_its_owner_reads() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    std::fs::write(&file, "a-token-from-a-private-file\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let path = file.to_str().unwrap();
    let refused = tokio::process::Command::new(crate::common::bin())
        .args(["mcp", "--transport", "http", "--bind", "0.0.0.0:0", "--token-file", path])
        .env_remove("HOLDFAST_MCP_TOKEN")
        .output()
        .await
        .unwrap();
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("readable by other users (mode 644)"), "{stderr}");
    assert!(!stderr.contains("a-token-from-a-private-file"), "{stderr}");
    let on_the_line = tokio::process::Command::new(crate::common::bin())
        .args(["mcp", "--transport", "http", "--bind", "127.0.0.1:0", "--token", "a-token-on-the-command-line"])
        .env_remove("HOLDFAST_MCP_TOKEN")
        .kill_on_drop(true)
        .output();
    // Before, it served (and never exited on its own).
    let on_the_line = tokio::time::timeout(std::time::Duration::from_secs(30), on_the_line).await;
    assert!(
        on_the_line.as_ref().is_ok_and(|o| o.as_ref().is_ok_and(|o| !o.status.success())),
        "a token on the command line is refused: {on_the_line:?}"
    );
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let server = HttpChild::start(&["--bind", "127.0.0.1:0", "--token-file", path], &[]).await;
    assert!(server.stderr.iter().any(|l| l.contains("bearer token as given")), "{:?}", server.stderr);
    let isolated = run_script("sessions.mjs", &server.http_env("a-token-from-a-private-file")).await;
    assert_ne!(isolated["a"], isolated["b"], "the token serves: {isolated}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_public_bind_with_a_chosen_token_serves() {
    let server =
        HttpChild::start(&["--bind", "0.0.0.0:0"], &[("HOLDFAST_MCP_TOKEN", "a-token-the-operator-chose")]).await;
    assert!(server.url.starts_with("http://0.0.0.0:"), "{}", server.url);
    assert!(server.stderr.iter().any(|l| l.contains("bearer token as given")), "{:?}", server.stderr);
    assert!(!server.stderr.iter().any(|l| l.contains("a-token-the-operator-chose")), "a chosen token is never echoed");
}
