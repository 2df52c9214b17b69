//! `holdfast mcp --transport http` behind the same edge as `holdfast serve`: a foreign `Host` (DNS rebinding) or
//! `Origin` is refused before the token is even looked at, and with it; the token never travels in a URL;
//! `[mcp] allowed_hosts` adds names.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use crate::common::{HttpChild, config_in};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_http_transport_checks_host_and_origin_with_or_without_the_token() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(dir.path(), "[mcp]\nallowed_hosts = [\"mcp.lan\"]\n");
    let server = HttpChild::start(&["--bind", "127.0.0.1:0", "--config", config.to_str().unwrap()], &[]).await;
    let token = std::fs::read_to_string(dir.path().join("data/mcp.token")).unwrap().trim().to_owned();
    let authority = server.url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
    let port = authority.rsplit(':').next().unwrap().to_owned();

    let http = reqwest::Client::new();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "edge-test", "version": "1"}}});
    let post = |url: String, headers: Vec<(&'static str, String)>| {
        let mut req = http
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(initialize.to_string());
        for (k, v) in headers {
            req = req.header(k, v);
        }
        req.send()
    };
    let bearer = ("authorization", format!("Bearer {token}"));
    let code = |body: &Value| body["error"]["code"].as_str().unwrap_or_default().to_owned();

    // A page that rebinds its own name to 127.0.0.1 is refused before the token matters, and with it.
    for headers in
        [vec![("host", "attacker.example".to_owned())], vec![("host", "attacker.example".to_owned()), bearer.clone()]]
    {
        let resp = post(server.url.clone(), headers).await.unwrap();
        assert_eq!(resp.status().as_u16(), 403);
        assert_eq!(code(&resp.json().await.unwrap()), "host_not_allowed");
    }
    let wrong_port = post(server.url.clone(), vec![("host", "localhost:1".into()), bearer.clone()]).await.unwrap();
    assert_eq!(wrong_port.status().as_u16(), 403, "loopback with another port is another server");

    // A web page's cross-origin request is refused even with the token.
    let foreign =
        post(server.url.clone(), vec![("origin", "https://attacker.example".into()), bearer.clone()]).await.unwrap();
    assert_eq!(foreign.status().as_u16(), 403);
    assert_eq!(code(&foreign.json().await.unwrap()), "origin_not_allowed");

    // The token is not taken from a URL.
    let in_url = post(format!("{}?token={token}", server.url), vec![bearer.clone()]).await.unwrap();
    assert_eq!(in_url.status().as_u16(), 401);
    assert_eq!(code(&in_url.json().await.unwrap()), "token_in_url");

    // Loopback with the bound port, its own origin and the configured name pass the edge; the token still counts.
    for host in [authority.clone(), format!("localhost:{port}"), "mcp.lan".to_owned(), format!("mcp.lan:{port}")] {
        let headers = vec![("host", host.clone()), ("origin", format!("http://{host}")), bearer.clone()];
        let resp = post(server.url.clone(), headers).await.unwrap();
        assert_eq!(resp.status().as_u16(), 200, "{host}");
    }
    let no_token = post(server.url.clone(), vec![("host", format!("localhost:{port}"))]).await.unwrap();
    assert_eq!(no_token.status().as_u16(), 401);
    assert!(no_token.headers().get("www-authenticate").is_some());
}
