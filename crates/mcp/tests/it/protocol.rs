//! Bad input on the stdio transport — not JSON, batches, wrong versions, unknown methods, params of the wrong shape,
//! messages over the cap, notifications and requests before `initialize` — each gets its JSON-RPC error (or is
//! dropped, for notifications), and the same session goes on serving.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use serde_json::{Value, json};
use std::collections::HashMap;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_unknown_and_oversized_messages_get_protocol_errors_and_the_server_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let config = crate::common::config_in(dir.path(), "[mcp]\nmax_message_bytes = 8192\n");
    let mut child = tokio::process::Command::new(crate::common::bin())
        .args(["mcp", "--config", config.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();

    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    let oversized = json!({"jsonrpc": "2.0", "id": 5, "method": "ping", "params": {"pad": "x".repeat(20_000)}});
    let lines = [
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        json!({"jsonrpc": "2.0", "id": 0, "method": "tools/list"}).to_string(),
        init.to_string(),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        "this is not json".to_owned(),
        json!([{"jsonrpc": "2.0", "id": 2, "method": "ping"}]).to_string(),
        json!({"jsonrpc": "2.0", "id": 3, "method": "holdfast/no_such_method"}).to_string(),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": 5}}).to_string(),
        oversized.to_string(),
        json!({"jsonrpc": "1.0", "id": 6, "method": "ping"}).to_string(),
        json!({"jsonrpc": "2.0", "id": 7, "method": "resources/read", "params": {"uri": "holdfast://nope"}}).to_string(),
        json!({"jsonrpc": "2.0", "id": 8, "method": "prompts/get", "params": {"name": "user_request"}}).to_string(),
        json!({"jsonrpc": "2.0", "method": "notifications/whatever", "params": 7}).to_string(),
        json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
               "params": {"name": "token_lookup", "arguments": {"symbol": "USDC", "network": "base", "cache_as": null}}})
        .to_string(),
        json!({"jsonrpc": "2.0", "id": 10, "method": "ping"}).to_string(),
    ];
    for line in &lines {
        stdin.write_all(line.as_bytes()).await.unwrap();
        stdin.write_all(b"\n").await.unwrap();
        stdin.flush().await.unwrap();
        // Let the pre-initialize request be answered before `initialize` arrives.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let mut by_id: HashMap<String, Value> = HashMap::new();
    let mut without_id = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), async {
        while by_id.len() < 10 || without_id.len() < 2 {
            let line = stdout.next_line().await.unwrap().expect("the server closed stdout");
            let message: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
            match &message["id"] {
                Value::Null => without_id.push(message),
                id => {
                    by_id.insert(id.to_string(), message);
                }
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("missing answers; got {by_id:#?} and {without_id:#?}"));

    let code = |id: &str| by_id[id]["error"]["code"].as_i64().unwrap_or_else(|| panic!("{id}: {:?}", by_id[id]));
    assert!(by_id["0"]["error"].is_object(), "a request before initialize is refused: {:?}", by_id["0"]);
    assert_eq!(by_id["1"]["result"]["serverInfo"]["name"], "holdfast");
    let codes: Vec<i64> = without_id.iter().map(|m| m["error"]["code"].as_i64().unwrap()).collect();
    assert_eq!(codes, [-32700, -32600], "not JSON, then a batch: {without_id:?}");
    assert_eq!(code("3"), -32601);
    assert!(by_id["3"]["error"]["message"].as_str().unwrap().contains("holdfast/no_such_method"));
    assert_eq!(code("4"), -32602);
    assert_eq!(code("5"), -32600);
    assert!(by_id["5"]["error"]["message"].as_str().unwrap().contains("8192"), "{:?}", by_id["5"]);
    assert_eq!(code("6"), -32600);
    assert_eq!(code("7"), -32002);
    assert_eq!(code("8"), -32602);
    let found = &by_id["9"]["result"];
    assert_eq!(found["isError"], false, "{found}");
    assert_eq!(found["structuredContent"]["symbol"], "USDC");
    assert_eq!(by_id["10"]["result"], json!({}));

    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait()).await.unwrap().unwrap();
    assert!(status.success(), "the server exits cleanly when the client closes stdin: {status}");
}
