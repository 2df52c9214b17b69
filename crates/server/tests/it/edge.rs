//! Who may reach the server: `Host` and `Origin` are checked with or without a token (DNS rebinding, cross-site
//! requests), mutating API calls carry JSON, the UI runs under a strict Content-Security-Policy, the token never
//! travels in a URL, and browsers sign in with one-time codes for a session cookie that is never the token.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use futures::StreamExt;
use holdfast_agent::Runtime;
use holdfast_agent::access::{AccessToken, HostPolicy};
use holdfast_server::AppState;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{self, Message};

const TOKEN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef";

/// A server on the built-in defaults (no devnet needed): `token: None` is `serve --insecure-no-token`.
async fn serve(token: Option<&str>) -> String {
    let runtime = Arc::new(Runtime::load(None).await.unwrap());
    listen(AppState::with_agent(runtime, None, token.map(|t| AccessToken::from_secret(t).unwrap()))).await
}

/// A server on the built-in defaults with its data (sign-in codes and sessions too) in `dir`.
async fn serve_in(token: Option<&str>, dir: &std::path::Path) -> (String, Arc<AppState>) {
    let doc = holdfast_core::config::ConfigDocument::empty();
    let runtime = Arc::new(Runtime::from_document_with_data_dir(doc, Some(dir.to_owned())).await.unwrap());
    let state = AppState::with_agent(runtime, None, token.map(|t| AccessToken::from_secret(t).unwrap()));
    (listen(Arc::clone(&state)).await, state)
}

async fn listen(state: Arc<AppState>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = holdfast_server::router(state, HostPolicy::loopback(addr));
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

fn http() -> reqwest::Client {
    reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap()
}

async fn error_code(resp: reqwest::Response) -> (u16, String) {
    let status = resp.status().as_u16();
    let body: Value = resp.json().await.unwrap_or(Value::Null);
    (status, body["error"]["code"].as_str().unwrap_or_default().to_owned())
}

/// Opens `/ws?session=…` with extra headers; the HTTP status of a refused upgrade, or `None` when it opened.
async fn ws_status(url: &str, session: &str, headers: &[(&str, &str)]) -> Option<u16> {
    let mut request = format!("{}/ws?session={session}", url.replace("http", "ws")).into_client_request().unwrap();
    for (k, v) in headers {
        request
            .headers_mut()
            .insert(tungstenite::http::HeaderName::from_bytes(k.as_bytes()).unwrap(), v.parse().unwrap());
    }
    match tokio_tungstenite::connect_async(request).await {
        Ok((mut ws, _)) => {
            let first = tokio::time::timeout(Duration::from_secs(5), ws.next()).await.unwrap().unwrap().unwrap();
            let Message::Text(text) = first else { panic!("expected a text frame, got {first:?}") };
            let msg: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(msg["type"], "subscribed", "{msg}");
            None
        }
        Err(tungstenite::Error::Http(response)) => Some(response.status().as_u16()),
        Err(e) => panic!("unexpected WebSocket error: {e}"),
    }
}

async fn new_session(url: &str, auth: &[(&str, &str)]) -> String {
    let mut req = http().post(format!("{url}/api/sessions"));
    for (k, v) in auth {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 201);
    resp.json::<Value>().await.unwrap()["id"].as_str().unwrap().to_owned()
}

async fn session_count(url: &str) -> usize {
    let body: Value = http().get(format!("{url}/api/sessions")).send().await.unwrap().json().await.unwrap();
    body["sessions"].as_array().unwrap().len()
}

#[tokio::test]
async fn a_foreign_host_is_refused_with_or_without_a_token() {
    let open = serve(None).await;
    for path in ["/", "/app.js", "/health", "/api/info", "/api/sessions"] {
        let resp = http().get(format!("{open}{path}")).header("host", "attacker.example").send().await.unwrap();
        assert_eq!(error_code(resp).await, (403, "host_not_allowed".to_owned()), "{path}");
    }
    let port = open.rsplit(':').next().unwrap();
    for host in [format!("attacker.example:{port}"), "localhost".to_owned(), format!("localhost:{}", 1)] {
        let resp = http().get(format!("{open}/api/info")).header("host", host.as_str()).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 403, "{host}");
    }
    for host in [format!("localhost:{port}"), format!("127.0.0.1:{port}")] {
        let resp = http().get(format!("{open}/api/info")).header("host", host.as_str()).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 200, "{host}");
    }

    let locked = serve(Some(TOKEN)).await;
    let resp = http()
        .get(format!("{locked}/api/info"))
        .bearer_auth(TOKEN)
        .header("host", "attacker.example")
        .send()
        .await
        .unwrap();
    assert_eq!(
        error_code(resp).await,
        (403, "host_not_allowed".to_owned()),
        "the token does not make a foreign Host ok"
    );
}

#[tokio::test]
async fn a_websocket_from_a_foreign_origin_is_refused() {
    let url = serve(None).await;
    let session = new_session(&url, &[]).await;
    assert_eq!(ws_status(&url, &session, &[("origin", "https://attacker.example")]).await, Some(403));
    assert_eq!(ws_status(&url, &session, &[("origin", "null")]).await, Some(403));
    assert_eq!(ws_status(&url, &session, &[("host", "attacker.example")]).await, Some(403));
    let own = url.clone();
    assert_eq!(ws_status(&url, &session, &[("origin", own.as_str())]).await, None, "its own page connects");
    assert_eq!(ws_status(&url, &session, &[]).await, None, "a client that is no browser sends no Origin");

    let locked = serve(Some(TOKEN)).await;
    let session = new_session(&locked, &[("authorization", &format!("Bearer {TOKEN}"))]).await;
    let bearer = format!("Bearer {TOKEN}");
    let foreign = [("authorization", bearer.as_str()), ("origin", "https://attacker.example")];
    assert_eq!(ws_status(&locked, &session, &foreign).await, Some(403), "the token does not make a foreign Origin ok");
}

#[tokio::test]
async fn a_cross_site_text_plain_post_creates_no_session() {
    let url = serve(None).await;
    let before = session_count(&url).await;
    // What a web page can send without a preflight: a form or `fetch(…, {mode: "no-cors"})` with text/plain.
    let cross_site = http()
        .post(format!("{url}/api/sessions"))
        .header("origin", "https://attacker.example")
        .header("content-type", "text/plain;charset=UTF-8")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(error_code(cross_site).await, (403, "origin_not_allowed".to_owned()));
    let plain = http()
        .post(format!("{url}/api/sessions"))
        .header("content-type", "text/plain")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(error_code(plain).await, (415, "unsupported_media_type".to_owned()));
    let form = http()
        .post(format!("{url}/api/sessions"))
        .header("origin", url.as_str())
        .header("content-type", "application/x-www-form-urlencoded")
        .body("a=b")
        .send()
        .await
        .unwrap();
    assert_eq!(error_code(form).await, (415, "unsupported_media_type".to_owned()));
    let untyped = http().post(format!("{url}/api/sessions")).body("{}").send().await.unwrap();
    assert_eq!(untyped.status().as_u16(), 415, "a body without a type is not JSON");
    assert_eq!(session_count(&url).await, before, "no session was created");

    let session = new_session(&url, &[]).await;
    let tool = http()
        .post(format!("{url}/api/sessions/{session}/tools/register_set"))
        .header("origin", "http://evil.example")
        .header("content-type", "application/json")
        .body(r#"{"key":"memo","value":"x"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(tool.status().as_u16(), 403, "a cross-site JSON call is refused too");
    let json = http()
        .post(format!("{url}/api/sessions"))
        .header("origin", url.as_str())
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(json.status().as_u16(), 201, "the page's own JSON call works");
}

#[tokio::test]
async fn the_ui_and_the_api_carry_a_strict_content_security_policy_and_no_inline_script() {
    let url = serve(Some(TOKEN)).await;
    for path in ["/", "/app.js", "/money.js", "/api/info", "/health"] {
        let resp = http().get(format!("{url}{path}")).bearer_auth(TOKEN).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 200, "{path}");
        let h = resp.headers();
        let csp = h["content-security-policy"].to_str().unwrap();
        let directive = |name: &str| {
            csp.split(';')
                .map(str::trim)
                .find(|d| d.split_whitespace().next() == Some(name))
                .unwrap_or_default()
                .to_owned()
        };
        assert_eq!(directive("script-src"), "script-src 'self'", "{path}: {csp}");
        assert!(!csp.contains("unsafe-eval"), "{csp}");
        assert_eq!(directive("frame-ancestors"), "frame-ancestors 'none'", "{csp}");
        assert_eq!(directive("base-uri"), "base-uri 'none'", "{csp}");
        assert_eq!(directive("default-src"), "default-src 'self'", "{csp}");
        assert_eq!(directive("form-action"), "form-action 'self'", "{csp}");
        assert_eq!(h["x-content-type-options"], "nosniff", "{path}");
        assert_eq!(h["referrer-policy"], "no-referrer", "{path}");
        assert_eq!(h["x-frame-options"], "DENY", "{path}");
        if path.ends_with(".js") {
            assert!(h["content-type"].to_str().unwrap().starts_with("text/javascript"));
        }
    }
    let page = http().get(format!("{url}/")).send().await.unwrap().text().await.unwrap();
    let lower = page.to_ascii_lowercase();
    let scripts: Vec<&str> = lower.split("<script").skip(1).map(|s| s.split('>').next().unwrap()).collect();
    assert_eq!(scripts, [r#" src="/app.js""#, r#" src="/money.js""#], "external scripts only, no inline one");
    for attr in [" onclick=", " onload=", " onerror=", " onsubmit=", " oninput=", " onchange=", "javascript:"] {
        assert!(!lower.contains(attr), "inline handler {attr} in the page");
    }
}

#[tokio::test]
async fn the_token_never_travels_in_a_url_and_browsers_sign_in_with_one_time_codes() {
    let dir = tempfile::tempdir().unwrap();
    let (url, state) = serve_in(Some(TOKEN), dir.path()).await;
    // Never in any URL, even when right — the page's included.
    for path in [format!("/api/info?token={TOKEN}"), format!("/?token={TOKEN}"), format!("/app.js?token={TOKEN}")] {
        let in_url = http().get(format!("{url}{path}")).send().await.unwrap();
        assert_eq!(error_code(in_url).await, (401, "token_in_url".to_owned()), "{path}");
    }
    let in_url = http().get(format!("{url}/api/sessions?x=1&token={TOKEN}")).bearer_auth(TOKEN).send().await.unwrap();
    assert_eq!(error_code(in_url).await, (401, "token_in_url".to_owned()), "refused even beside a good header");
    let session = new_session(&url, &[("authorization", &format!("Bearer {TOKEN}"))]).await;
    assert_eq!(ws_status(&url, &format!("{session}&token={TOKEN}"), &[]).await, Some(401));
    assert_eq!(ws_status(&url, &session, &[]).await, Some(401), "the WebSocket needs a credential");

    // A one-time code is traded for a session cookie (HttpOnly, SameSite=Strict, Max-Age) and a redirect to the page
    // whose fragment (never sent to a server) hands the page its key.
    let code = state.sign_in().mint_code().unwrap();
    let login = http().get(format!("{url}/?code={code}")).send().await.unwrap();
    assert_eq!(login.status().as_u16(), 303);
    let location = login.headers()["location"].to_str().unwrap().to_owned();
    let page_key = location.strip_prefix("/#page=").unwrap_or_else(|| panic!("{location}")).to_owned();
    assert!(page_key.len() == 64 && page_key.bytes().all(|b| b.is_ascii_hexdigit()), "{location}");
    let set_cookie = login.headers()["set-cookie"].to_str().unwrap().to_owned();
    let (pair, attributes) = set_cookie.split_once(';').unwrap();
    let (name, value) = pair.split_once('=').unwrap();
    assert!(name.starts_with("holdfast_session_"), "{set_cookie}");
    assert!(value != TOKEN && value != code && value.len() == 64, "a fresh random value, not the token: {set_cookie}");
    let attributes: Vec<&str> = attributes.split(';').map(str::trim).collect();
    for required in ["HttpOnly", "SameSite=Strict", "Path=/", "Max-Age=604800"] {
        assert!(attributes.contains(&required), "{set_cookie}");
    }
    assert!(!attributes.contains(&"Secure"), "plain HTTP: no Secure attribute (it would drop the cookie)");
    let cookie = format!("{name}={value}");
    let stored = std::fs::read_to_string(dir.path().join("sign-in.json")).unwrap();
    assert!(
        !stored.contains(value) && !stored.contains(&code) && !stored.contains(&page_key),
        "only digests: {stored}"
    );

    let info =
        http().get(format!("{url}/api/info")).header("cookie", cookie.as_str()).header("x-holdfast-page", &page_key);
    assert_eq!(
        info.send().await.unwrap().status().as_u16(),
        200,
        "the cookie with the page key authenticates API calls"
    );
    let created = http()
        .post(format!("{url}/api/sessions"))
        .header("cookie", cookie.as_str())
        .header("x-holdfast-page", &page_key)
        .header("origin", url.as_str())
        .send()
        .await
        .unwrap();
    assert_eq!(created.status().as_u16(), 201);
    let protocols = format!("holdfast, holdfast.page.{page_key}");
    let upgrade = [("cookie", cookie.as_str()), ("origin", url.as_str()), ("sec-websocket-protocol", &protocols)];
    assert_eq!(ws_status(&url, &session, &upgrade).await, None, "on a WebSocket the key is a subprotocol");
    // The cookie alone signs nobody in: browsers send it to every port of the host, so a program listening on
    // another loopback port that a page sends the browser to receives it, and replays it without an Origin.
    let alone = http().get(format!("{url}/api/info")).header("cookie", cookie.as_str()).send().await.unwrap();
    assert_eq!(error_code(alone).await, (401, "unauthorized".to_owned()), "the cookie alone");
    let approve = http()
        .post(format!("{url}/api/sessions/{session}/confirmations/cf_x/approve"))
        .header("cookie", cookie.as_str())
        .send()
        .await
        .unwrap();
    assert_eq!(error_code(approve).await, (401, "unauthorized".to_owned()), "the cookie alone approves nothing");
    assert_eq!(ws_status(&url, &session, &[("cookie", cookie.as_str())]).await, Some(401), "nor opens a WebSocket");
    let wrong = [("cookie", cookie.as_str()), ("sec-websocket-protocol", "holdfast, holdfast.page.00")];
    assert_eq!(ws_status(&url, &session, &wrong).await, Some(401), "nor with another key");
    let key_alone = http().get(format!("{url}/api/info")).header("x-holdfast-page", &page_key).send().await.unwrap();
    assert_eq!(error_code(key_alone).await, (401, "unauthorized".to_owned()), "the page key alone");
    // The cookie is not a token, and the token is not a cookie.
    let as_bearer = http().get(format!("{url}/api/info")).bearer_auth(value).send().await.unwrap();
    assert_eq!(error_code(as_bearer).await, (401, "unauthorized".to_owned()), "the cookie refused as a token");
    let token_cookie = http().get(format!("{url}/api/info")).header("cookie", format!("{name}={TOKEN}")).send();
    assert_eq!(error_code(token_cookie.await.unwrap()).await, (401, "unauthorized".to_owned()));

    // The same code again: the sign-in page says it was used, and sets nothing.
    let reused = http().get(format!("{url}/?code={code}")).send().await.unwrap();
    assert_eq!(reused.status().as_u16(), 401);
    assert!(reused.headers().get("set-cookie").is_none());
    assert!(reused.text().await.unwrap().contains("already used"));
    // An expired code (its time run out, as the file records it) is refused as expired.
    let late = state.sign_in().mint_code().unwrap();
    let aged = std::fs::read_to_string(dir.path().join("sign-in.json")).unwrap();
    let mut aged: Value = serde_json::from_str(&aged).unwrap();
    let an_hour_ago = (chrono::Utc::now() - chrono::TimeDelta::hours(1)).to_rfc3339();
    for c in aged["codes"].as_array_mut().unwrap() {
        c["expires_at"] = an_hour_ago.clone().into();
    }
    std::fs::write(dir.path().join("sign-in.json"), aged.to_string()).unwrap();
    let expired = http().get(format!("{url}/?code={late}")).send().await.unwrap();
    assert_eq!(expired.status().as_u16(), 401);
    assert!(expired.text().await.unwrap().contains("expired"));
    let unknown = http().get(format!("{url}/?code=0123abcd")).send().await.unwrap();
    assert!(unknown.text().await.unwrap().contains("not valid for this server"));

    // A second server (its own data dir) never accepts this one's cookie.
    let other = tempfile::tempdir().unwrap();
    let (second, _) = serve_in(Some(TOKEN), other.path()).await;
    let port = second.rsplit(':').next().unwrap();
    let replayed = http()
        .get(format!("{second}/api/info"))
        .header("cookie", format!("holdfast_session_{port}={value}"))
        .header("x-holdfast-page", &page_key)
        .send();
    assert_eq!(error_code(replayed.await.unwrap()).await, (401, "unauthorized".to_owned()));

    // Signing everyone out (`holdfast serve --sign-out-all`, another process on the data dir) ends the session, and
    // closes the browser's open WebSocket.
    let mut request = format!("{}/ws?session={session}", url.replace("http", "ws")).into_client_request().unwrap();
    request.headers_mut().insert("cookie", cookie.parse().unwrap());
    request.headers_mut().insert("origin", url.parse().unwrap());
    request.headers_mut().insert("sec-websocket-protocol", protocols.parse().unwrap());
    let (mut open_socket, response) = tokio_tungstenite::connect_async(request).await.unwrap();
    assert_eq!(response.headers()["sec-websocket-protocol"], "holdfast", "the plain name is echoed, never the key");
    let outside = holdfast_agent::access::SignIn::open(dir.path(), Default::default());
    assert_eq!(outside.sign_out_all().unwrap(), 1);
    let after =
        http().get(format!("{url}/api/info")).header("cookie", cookie.as_str()).header("x-holdfast-page", &page_key);
    let after = after.send().await.unwrap();
    assert_eq!(error_code(after).await, (401, "unauthorized".to_owned()), "signed out on the running server");
    let closed = tokio::time::timeout(Duration::from_secs(15), async {
        loop {
            match open_socket.next().await {
                Some(Ok(Message::Close(frame))) => return frame.map(|f| f.reason.to_string()),
                None | Some(Err(_)) => return None,
                Some(Ok(_)) => {}
            }
        }
    })
    .await
    .expect("the signed-out browser's WebSocket is closed");
    assert_eq!(closed.as_deref(), Some("signed out"));
    let page = http().get(format!("{url}/")).send().await.unwrap();
    assert_eq!(page.status().as_u16(), 200, "the page itself is public");
}
