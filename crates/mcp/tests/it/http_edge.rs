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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_stalled_clients_neither_starve_the_mcp_server_nor_stay_connected() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    holdfast_agent::listen::raise_open_files_limit();
    let dir = tempfile::tempdir().unwrap();
    let config = config_in(dir.path(), "[mcp.connections]\nheader_read_timeout_secs = 3\n");
    let server = HttpChild::start(&["--bind", "127.0.0.1:0", "--config", config.to_str().unwrap()], &[]).await;
    let token = std::fs::read_to_string(dir.path().join("data/mcp.token")).unwrap().trim().to_owned();
    let authority = server.url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();

    let mut stalled = Vec::new();
    for _ in 0..1000 {
        let mut s = tokio::net::TcpStream::connect(&authority).await.unwrap();
        s.write_all(format!("POST /mcp HTTP/1.1\r\nHost: {authority}\r\nX-Half: ").as_bytes()).await.unwrap();
        stalled.push(s);
    }
    // While they are held, a client is served.
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "beside-1000", "version": "1"}}});
    let answer = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(5))
        .build()
        .unwrap()
        .post(&server.url)
        .bearer_auth(&token)
        .header("accept", "application/json, text/event-stream")
        .json(&initialize)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status().as_u16(), 200);
    // Every stalled client is disconnected when its header time is up, and counted in the log.
    let mut closed = 0;
    for s in &mut stalled {
        let mut buf = [0u8; 256];
        let read = tokio::time::timeout(std::time::Duration::from_secs(15), async {
            loop {
                match s.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
            }
        });
        if read.await.is_ok() {
            closed += 1;
        }
    }
    assert_eq!(closed, 1000);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(40);
    while !server.log.lock().iter().any(|l| l.contains("stalled client connections")) {
        assert!(std::time::Instant::now() < deadline, "not counted in the log: {:?}", server.log.lock());
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert!(server.log.lock().iter().any(|l| l.contains("disconnected 1000 stalled client connections")));
}
