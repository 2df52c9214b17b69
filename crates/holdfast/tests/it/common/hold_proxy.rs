//! A forwarding HTTP/1.1 proxy on a loopback port that can *hold* one chosen request: it stops there — before
//! forwarding it, or after the upstream has answered but before relaying the answer — and tells the test, which then
//! kills the process under test at exactly that point. In front of anvil it marks the stages of a transaction
//! (`eth_sendRawTransaction` held before forwarding: signed, not sent; held after: sent, answer lost); in front of
//! an x402 resource it marks a payment's (the paid request held before forwarding: signed, not settled; after:
//! settled, answer lost).
//!
//! It speaks plain HTTP/1.1 itself (keep-alive, `content-length` bodies, as reqwest and alloy send them), so it can
//! stop in the middle of an exchange, which a framework handler cannot.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

/// Which request to hold, and where.
#[derive(Debug, Clone)]
pub(crate) struct Hold {
    /// Matched (ASCII case-insensitively) against the request's head and body; `|` separates alternatives.
    pub needle: String,
    /// Forward it first and hold the answer (true), or hold it unsent (false).
    pub after_forwarding: bool,
}

struct Shared {
    upstream: String,
    http: reqwest::Client,
    hold: Mutex<Option<Hold>>,
    held: AtomicBool,
    seen: Mutex<Vec<String>>,
    rewrite: Mutex<Option<(String, String)>>,
}

/// The proxy; it runs until the test's runtime ends.
pub(crate) struct HoldProxy {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    shared: Arc<Shared>,
}

impl HoldProxy {
    /// Starts a proxy for `upstream` (`http://host:port`, no trailing slash), forwarding everything.
    pub(crate) async fn start(upstream: &str) -> HoldProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let shared = Arc::new(Shared {
            upstream: upstream.trim_end_matches('/').to_owned(),
            http: reqwest::Client::new(),
            hold: Mutex::new(None),
            held: AtomicBool::new(false),
            seen: Mutex::new(Vec::new()),
            rewrite: Mutex::new(None),
        });
        let accepting = Arc::clone(&shared);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, Arc::clone(&accepting)));
            }
        });
        HoldProxy { url, shared }
    }

    /// Holds the next request matching `hold` (once); every other request is forwarded.
    pub(crate) fn arm(&self, hold: Hold) {
        self.shared.held.store(false, Ordering::SeqCst);
        *self.shared.hold.lock() = Some(hold);
    }

    /// Waits until the armed request is held; false after `timeout`.
    pub(crate) async fn wait_held(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if self.shared.held.load(Ordering::SeqCst) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        false
    }

    /// Names the proxy instead of the upstream in answers (bodies, headers, and base64 JSON headers such as x402's
    /// `PAYMENT-REQUIRED`), as a reverse proxy that owns the public name would: a paywall states its resource's URL.
    pub(crate) fn rewrite_upstream_name(&self) {
        let from = self.shared.upstream.trim_start_matches("http://").to_owned();
        let to = self.url.trim_start_matches("http://").to_owned();
        *self.shared.rewrite.lock() = Some((from, to));
    }

    /// Disarms the hold (requests already held stay held).
    pub(crate) fn disarm(&self) {
        *self.shared.hold.lock() = None;
    }

    /// JSON-RPC methods (or request lines) seen so far, counted.
    pub(crate) fn seen(&self) -> BTreeMap<String, usize> {
        let mut out = BTreeMap::new();
        for s in self.shared.seen.lock().iter() {
            *out.entry(s.clone()).or_insert(0) += 1;
        }
        out
    }
}

type Request = holdfast_testkit::HttpRequest;

fn label(req: &Request) -> String {
    let line = req.head.lines().next().unwrap_or_default().to_owned();
    match serde_json::from_slice::<serde_json::Value>(&req.body) {
        Ok(v) if v.get("method").is_some() => v["method"].as_str().unwrap_or_default().to_owned(),
        _ => line,
    }
}

/// The upstream's answer: status, headers to relay, body.
type Answer = (u16, Vec<(String, String)>, Vec<u8>);

async fn forward(shared: &Shared, req: &Request) -> Option<Answer> {
    let mut lines = req.head.lines();
    let mut first = lines.next()?.split_whitespace();
    let (method, path) = (first.next()?, first.next()?);
    let method = reqwest::Method::from_bytes(method.as_bytes()).ok()?;
    let mut out = shared.http.request(method, format!("{}{path}", shared.upstream)).body(req.body.clone());
    for line in lines {
        let Some((name, value)) = line.split_once(':') else { continue };
        let lower = name.trim().to_ascii_lowercase();
        if !matches!(lower.as_str(), "host" | "connection" | "content-length" | "transfer-encoding" | "") {
            out = out.header(name.trim(), value.trim());
        }
    }
    let resp = out.send().await.ok()?;
    let status = resp.status().as_u16();
    let headers = resp
        .headers()
        .iter()
        .filter(|(n, _)| !matches!(n.as_str(), "connection" | "content-length" | "transfer-encoding" | "keep-alive"))
        .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap_or_default().to_owned()))
        .collect();
    let body = resp.bytes().await.ok()?.to_vec();
    let Some((from, to)) = shared.rewrite.lock().clone() else { return Some((status, headers, body)) };
    let headers = headers.into_iter().map(|(n, v)| (n, rewrite_value(&v, &from, &to))).collect();
    let body = match String::from_utf8(body) {
        Ok(text) => text.replace(&from, &to).into_bytes(),
        Err(e) => e.into_bytes(),
    };
    Some((status, headers, body))
}

async fn relay(stream: &mut TcpStream, (status, headers, body): &Answer) -> bool {
    let mut head = format!("HTTP/1.1 {status} X\r\ncontent-length: {}\r\nconnection: keep-alive\r\n", body.len());
    for (n, v) in headers {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await.is_ok() && stream.write_all(body).await.is_ok()
}

async fn serve(mut stream: TcpStream, shared: Arc<Shared>) {
    let mut buf = Vec::new();
    while let Some(req) = holdfast_testkit::read_http_request(&mut stream, &mut buf).await {
        shared.seen.lock().push(label(&req));
        let text = format!("{}{}", req.head, String::from_utf8_lossy(&req.body)).to_ascii_lowercase();
        let hold = {
            let mut armed = shared.hold.lock();
            match armed.as_ref() {
                Some(h) if h.needle.split('|').any(|n| text.contains(&n.to_ascii_lowercase())) => armed.take(),
                _ => None,
            }
        };
        if let Some(hold) = hold {
            if hold.after_forwarding {
                let _ = forward(&shared, &req).await;
            }
            shared.held.store(true, Ordering::SeqCst);
            // Never answer: the process under test is killed while it waits.
            std::future::pending::<()>().await;
        }
        let Some(answer) = forward(&shared, &req).await else {
            let _ = relay(&mut stream, &(502, Vec::new(), b"upstream unreachable".to_vec())).await;
            return;
        };
        if !relay(&mut stream, &answer).await {
            return;
        }
    }
}

fn rewrite_value(value: &str, from: &str, to: &str) -> String {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    if value.contains(from) {
        return value.replace(from, to);
    }
    match b64.decode(value).ok().and_then(|raw| String::from_utf8(raw).ok()) {
        Some(text) if text.contains(from) => b64.encode(text.replace(from, to)),
        _ => value.to_owned(),
    }
}
