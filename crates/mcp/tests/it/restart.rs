//! An MCP session over HTTP survives a restart of `holdfast mcp --transport http` on the same data dir: the client
//! keeps its `Mcp-Session-Id`, the server (killed with SIGKILL, then started again) replays the handshake from what it
//! saved, and the tool call finds the registers the session wrote before. A session id the server never gave out is
//! still `404`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use crate::common::{HttpChild, config_in};
use serde_json::{Value, json};

struct Client {
    http: reqwest::Client,
    url: String,
    token: String,
    session: Option<String>,
}

impl Client {
    /// One JSON-RPC message; the answer (from a JSON or an SSE body), or `Err(status)`.
    async fn send(&mut self, message: Value) -> Result<Value, u16> {
        let mut req = self
            .http
            .post(&self.url)
            .bearer_auth(&self.token)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .body(message.to_string());
        if let Some(s) = &self.session {
            req = req.header("mcp-session-id", s);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        if !resp.status().is_success() {
            return Err(status);
        }
        if let Some(id) = resp.headers().get("mcp-session-id") {
            self.session = Some(id.to_str().unwrap().to_owned());
        }
        let text = resp.text().await.unwrap();
        if text.trim().is_empty() {
            return Ok(Value::Null);
        }
        let json = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .find(|d| d.starts_with('{'))
            .map_or_else(|| serde_json::from_str(&text).unwrap(), |d| serde_json::from_str(d).unwrap());
        Ok(json)
    }

    async fn call(&mut self, id: u64, tool: &str, arguments: Value) -> Value {
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}});
        let answer = self.send(msg).await.unwrap_or_else(|status| panic!("{tool}: HTTP {status}"));
        assert!(answer["error"].is_null(), "{tool}: {answer}");
        answer["result"].clone()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_session_survives_a_kill_9_and_restart() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(dir.path(), "");
    let config = config.to_str().unwrap();
    let mut server = HttpChild::start(&["--bind", "127.0.0.1:0", "--config", config], &[]).await;
    let token = std::fs::read_to_string(dir.path().join("data/mcp.token")).unwrap().trim().to_owned();
    let port = server.url.trim_start_matches("http://127.0.0.1:").split('/').next().unwrap().to_owned();
    let mut client = Client { http: reqwest::Client::new(), url: server.url.clone(), token, session: None };

    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "restart-test", "version": "1"}}});
    client.send(init).await.unwrap();
    let session = client.session.clone().expect("the server gives out a session id");
    client.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await.unwrap();
    let wrote = client.call(2, "register_set", json!({"key": "note", "value": "written before the restart"})).await;
    assert_eq!(wrote["isError"], false, "{wrote}");

    server.child.start_kill().unwrap();
    server.child.wait().await.unwrap();
    let bind = format!("127.0.0.1:{port}");
    let _server = HttpChild::start(&["--bind", &bind, "--config", config], &[]).await;

    // The same client, the same session id, a new process.
    let read = client.call(3, "register_get", json!({"key": "note", "path": null})).await;
    assert_eq!(client.session.as_deref(), Some(session.as_str()));
    assert!(read.to_string().contains("written before the restart"), "the session's register came back: {read}");

    let mut stranger = Client { session: Some("not-a-session-we-gave-out".into()), ..client };
    let status = stranger.send(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"})).await.unwrap_err();
    assert_eq!(status, 404, "an unknown session id is still unknown");
}
