//! A JSON-RPC proxy on a loopback port in front of the devnet's anvil: it counts requests by method and can lose
//! the node's answer to `eth_sendRawTransaction` after forwarding it (HTTP 502, a dropped connection, or a reply
//! that is not JSON-RPC) — the transport failures after which a transaction's fate is unknown to its sender — or
//! rewrite any answer of the node ([`RpcProxy::set_rewrite`]): a node that lies.
//!
//! It speaks plain HTTP/1.1 itself (keep-alive, `content-length` bodies, as alloy's HTTP client sends them), so it
//! can close a connection without answering, which an axum handler cannot.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use parking_lot::Mutex;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

/// What happens to a request that carries `eth_sendRawTransaction`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    /// Forward it and relay the node's answer.
    Forward,
    /// Forward it to the node, then answer HTTP 502 instead of the node's answer.
    ForwardThen502,
    /// Forward it to the node, then close the connection without answering.
    ForwardThenDrop,
    /// Forward it to the node, then answer HTTP 200 with a body that is not JSON.
    ForwardThenGarbage,
    /// Forward it to the node, then answer a JSON-RPC error a gateway gives (`-32603 internal error`): a lie that the
    /// transaction was not taken.
    ForwardThenRpcError,
    /// Do not forward it; answer the JSON-RPC error a node gives a transaction it refuses: the transaction is not
    /// out there (its nonce stays unused).
    RejectUnsent,
    /// Keep it without forwarding it and answer as [`Fault::RejectUnsent`] does; [`RpcProxy::release`] sends what was
    /// kept to the node later: a node that holds a transaction back while saying it refused it.
    Withhold,
}

/// Rewrites the node's answer (`response`, a JSON-RPC response object) to one call (`request`): a lying node.
pub(crate) type Rewrite = Arc<dyn Fn(&Value, &mut Value) + Send + Sync>;

struct Shared {
    upstream: String,
    http: reqwest::Client,
    fault: Mutex<Fault>,
    rewrite: Mutex<Option<Rewrite>>,
    counts: Mutex<BTreeMap<String, usize>>,
    faults_applied: AtomicUsize,
    withheld: Mutex<Vec<Vec<u8>>>,
}

/// The proxy; it runs until the test's runtime ends.
pub(crate) struct RpcProxy {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    shared: Arc<Shared>,
}

impl RpcProxy {
    /// Starts a proxy for `upstream` (anvil's URL), forwarding everything.
    pub(crate) async fn start(upstream: &str) -> RpcProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let shared = Arc::new(Shared {
            upstream: upstream.to_owned(),
            http: reqwest::Client::new(),
            fault: Mutex::new(Fault::Forward),
            rewrite: Mutex::new(None),
            counts: Mutex::new(BTreeMap::new()),
            faults_applied: AtomicUsize::new(0),
            withheld: Mutex::new(Vec::new()),
        });
        let accepting = Arc::clone(&shared);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, Arc::clone(&accepting)));
            }
        });
        RpcProxy { url, shared }
    }

    /// Sets what happens to every following `eth_sendRawTransaction` (until changed again).
    pub(crate) fn set_fault(&self, fault: Fault) {
        *self.shared.fault.lock() = fault;
    }

    /// Rewrites every following answer with `rewrite` (after forwarding the call), until set to `None`.
    pub(crate) fn set_rewrite(&self, rewrite: Option<Rewrite>) {
        *self.shared.rewrite.lock() = rewrite;
    }

    /// Requests seen for `method` (a batch counts each of its calls).
    pub(crate) fn count(&self, method: &str) -> usize {
        self.shared.counts.lock().get(method).copied().unwrap_or_default()
    }

    /// Calls seen, all methods.
    pub(crate) fn total(&self) -> usize {
        self.shared.counts.lock().values().sum()
    }

    /// Calls seen, by method.
    pub(crate) fn counts(&self) -> BTreeMap<String, usize> {
        self.shared.counts.lock().clone()
    }

    /// Sends the node every request [`Fault::Withhold`] kept, in order; the node's answers, once what it accepted
    /// is mined.
    pub(crate) async fn release(&self) -> Vec<Value> {
        let kept = std::mem::take(&mut *self.shared.withheld.lock());
        let mut answers: Vec<Value> = Vec::new();
        for body in kept {
            let sent =
                self.shared.http.post(&self.shared.upstream).header("content-type", "application/json").body(body);
            answers.push(sent.send().await.unwrap().json().await.unwrap());
        }
        // The node mines what it accepted right after it answers (automine): wait for each receipt, so a caller sees
        // the chain after the release, not before it.
        for hash in answers.iter().filter_map(|a| a["result"].as_str()) {
            let ask = json!({"jsonrpc": "2.0", "id": 1, "method": "eth_getTransactionReceipt", "params": [hash]});
            for _ in 0..200 {
                let got: Value =
                    self.shared.http.post(&self.shared.upstream).json(&ask).send().await.unwrap().json().await.unwrap();
                if !got["result"].is_null() {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(25)).await;
            }
        }
        answers
    }

    /// How many answers the fault has swallowed so far.
    pub(crate) fn faults_applied(&self) -> usize {
        self.shared.faults_applied.load(Ordering::SeqCst)
    }
}

fn methods(body: &[u8]) -> Vec<String> {
    let method = |v: &Value| v.get("method").and_then(Value::as_str).unwrap_or("<none>").to_owned();
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Array(calls)) => calls.iter().map(method).collect(),
        Ok(call) => vec![method(&call)],
        Err(_) => vec!["<unparsable>".into()],
    }
}

async fn respond(stream: &mut TcpStream, status: u16, content_type: &str, body: &[u8], close: bool) -> bool {
    let head = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: {}\r\n\r\n",
        if status == 200 { "OK" } else { "Bad Gateway" },
        body.len(),
        if close { "close" } else { "keep-alive" }
    );
    stream.write_all(head.as_bytes()).await.is_ok() && stream.write_all(body).await.is_ok()
}

async fn serve(mut stream: TcpStream, shared: Arc<Shared>) {
    let mut buf = Vec::new();
    while let Some(holdfast_testkit::HttpRequest { body, .. }) =
        holdfast_testkit::read_http_request(&mut stream, &mut buf).await
    {
        let called = methods(&body);
        let id = serde_json::from_slice::<serde_json::Value>(&body).ok().and_then(|v| v.get("id").cloned());
        {
            let mut counts = shared.counts.lock();
            for m in &called {
                *counts.entry(m.clone()).or_default() += 1;
            }
        }
        let fault = *shared.fault.lock();
        if matches!(fault, Fault::RejectUnsent | Fault::Withhold)
            && called.iter().any(|m| m == "eth_sendRawTransaction")
        {
            shared.faults_applied.fetch_add(1, Ordering::SeqCst);
            if fault == Fault::Withhold {
                shared.withheld.lock().push(body.clone());
            }
            let error = serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32000, "message": "transaction underpriced"}});
            if !respond(&mut stream, 200, "application/json", error.to_string().as_bytes(), false).await {
                return;
            }
            continue;
        }
        let request: Option<Value> = serde_json::from_slice(&body).ok();
        let forwarded =
            shared.http.post(&shared.upstream).header("content-type", "application/json").body(body).send().await;
        let mut answer = match forwarded {
            Ok(resp) => {
                let status = resp.status().as_u16();
                resp.bytes().await.ok().map(|b| (status, b.to_vec()))
            }
            Err(_) => None,
        };
        let rewrite = shared.rewrite.lock().clone();
        if let (Some(rewrite), Some(request), Some((_, body))) = (rewrite, &request, &mut answer)
            && let Ok(mut response) = serde_json::from_slice::<Value>(body)
        {
            match (request, &mut response) {
                (Value::Array(calls), Value::Array(answers)) => {
                    for (call, answer) in calls.iter().zip(answers.iter_mut()) {
                        rewrite(call, answer);
                    }
                }
                (call, answer) => rewrite(call, answer),
            }
            *body = response.to_string().into_bytes();
        }
        let fault = *shared.fault.lock();
        let faulty = fault != Fault::Forward && called.iter().any(|m| m == "eth_sendRawTransaction");
        if faulty {
            shared.faults_applied.fetch_add(1, Ordering::SeqCst);
        }
        match (faulty, fault, answer) {
            (true, Fault::ForwardThenDrop, _) => {
                let _ = stream.shutdown().await;
                return;
            }
            (true, Fault::ForwardThenRpcError, _) => {
                let error = serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": "internal error"}});
                if !respond(&mut stream, 200, "application/json", error.to_string().as_bytes(), false).await {
                    return;
                }
            }
            (true, Fault::ForwardThenGarbage, _) => {
                respond(&mut stream, 200, "application/json", b"<html>upstream hiccup</html>", true).await;
                return;
            }
            (true, _, _) | (false, _, None) => {
                respond(&mut stream, 502, "text/plain", b"bad gateway", true).await;
                return;
            }
            (false, _, Some((status, body))) => {
                if !respond(&mut stream, status, "application/json", &body, false).await {
                    return;
                }
            }
        }
    }
}
