//! Scripted LLM servers on loopback speaking the real wire protocols (OpenAI chat completions SSE, Anthropic
//! Messages SSE), replaying recorded-style responses, and recording every request they receive: the double for a
//! model API, shared by the agent, server and binary tests. Like the real APIs, they refuse (HTTP 400,
//! `invalid_request_error`) a request whose tool calls and tool results do not pair up.
//!
//! Test support: a failure here is the calling test's failure, so it unwraps and panics.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::post;
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

/// One scripted model reply.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Plain text.
    Text(String),
    /// Tool calls: (name, raw argument text).
    Tools(Vec<(String, String)>),
    /// An HTTP error status with a JSON error body.
    Status(u16, String),
    /// HTTP 429 with this `Retry-After` value (seconds or an HTTP date).
    Limited(String),
    /// Wait before answering (for cancellation tests).
    Delay(Duration, Box<Reply>),
    /// A non-streamed answer: this JSON body as `application/json` (a server that ignores `stream: true`).
    Json(Value),
}

/// Polls `f` every 50 ms for up to 30 s.
pub async fn eventually<T>(what: &str, mut f: impl AsyncFnMut() -> Option<T>) -> T {
    for _ in 0..600 {
        if let Some(v) = f().await {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for {what}");
}

/// A tool call of a scripted reply: `name` with `args` as the model's raw argument text.
pub fn tool(name: &str, args: Value) -> (String, String) {
    (name.to_owned(), args.to_string())
}

/// The golden swap as a model would run it: load the skill, fill the registers, fetch the quote, send it, answer.
pub fn swap_script(amount: &str) -> Vec<Reply> {
    vec![
        Reply::Tools(vec![tool("use_skill", json!({"name": "swap"}))]),
        Reply::Tools(vec![tool(
            "local_burner_wallet",
            json!({"action": "address", "token_register": null, "network": null, "cache_as": "wallet_address"}),
        )]),
        Reply::Tools(vec![
            tool("token_lookup", json!({"symbol": "ETH", "network": "base", "cache_as": "sell_token"})),
            tool("token_lookup", json!({"symbol": "USDC", "network": "base", "cache_as": "buy_token"})),
        ]),
        Reply::Tools(vec![tool(
            "to_raw_amount",
            json!({"amount": amount, "token_register": "sell_token", "cache_as": "sell_amount"}),
        )]),
        Reply::Tools(vec![tool(
            "x402_fetch",
            json!({"preset": "swap_quote", "network": "base", "cache_as": "swap_quote"}),
        )]),
        Reply::Tools(vec![tool("web3_tx", json!({"from_register": "swap_quote", "network": "base"}))]),
        Reply::Text(format!("Done: swapped {amount} ETH for USDC.")),
    ]
}

/// The wire protocol a scripted server's base URL is for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Wire {
    /// OpenAI chat completions (`{url}/chat/completions`).
    OpenAi,
    /// Anthropic Messages (`{url}/v1/messages`).
    Anthropic,
}

/// A running scripted model server.
#[derive(Clone)]
pub struct Scripted {
    /// The base URL to configure the provider with.
    pub url: String,
    /// Every request received: headers and JSON body.
    pub requests: Arc<Mutex<Vec<(HeaderMap, Value)>>>,
    script: Arc<Mutex<VecDeque<Reply>>>,
}

impl Scripted {
    /// Serves `replies` in order on a free loopback port (then "(script exhausted)").
    pub async fn start(wire: Wire, replies: Vec<Reply>) -> Scripted {
        let state =
            Scripted { url: String::new(), requests: Arc::default(), script: Arc::new(Mutex::new(replies.into())) };
        let app = axum::Router::new()
            .route("/v1/chat/completions", post(serve_openai))
            .route("/v1/messages", post(serve_anthropic))
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        let url = match wire {
            Wire::OpenAi => format!("http://{addr}/v1"),
            Wire::Anthropic => format!("http://{addr}"),
        };
        Scripted { url, ..state }
    }

    /// Replies not yet served.
    pub fn remaining(&self) -> usize {
        self.script.lock().len()
    }

    fn next(&self, headers: HeaderMap, body: Value) -> Reply {
        self.requests.lock().push((headers, body));
        self.script.lock().pop_front().unwrap_or(Reply::Text("(script exhausted)".into()))
    }
}

fn sse(events: Vec<String>) -> Response {
    Response::builder().header("content-type", "text/event-stream").body(Body::from(events.concat())).unwrap()
}

fn error(status: u16, message: &str) -> Response {
    Response::builder()
        .status(StatusCode::from_u16(status).unwrap())
        .header("content-type", "application/json")
        .body(Body::from(json!({"error": {"message": message, "type": "test"}}).to_string()))
        .unwrap()
}

fn whole(body: &Value) -> Response {
    Response::builder().header("content-type", "application/json").body(Body::from(body.to_string())).unwrap()
}

fn limited(retry_after: &str) -> Response {
    let mut resp = error(429, "rate limited");
    resp.headers_mut().insert("retry-after", retry_after.parse().unwrap());
    resp
}

/// Splits text in two halves at a char boundary (so deltas really arrive in pieces).
fn halves(s: &str) -> (String, String) {
    let mid = s.char_indices().nth(s.chars().count() / 2).map_or(s.len(), |(i, _)| i);
    (s[..mid].to_owned(), s[mid..].to_owned())
}

/// What OpenAI's chat completions API answers (HTTP 400) to a request whose tool calls and results do not pair up
/// (every assistant message with `tool_calls` must be followed at once by one `tool` message per call id, and every
/// `tool` message must answer a call of the assistant message before it), or with an assistant message that has
/// neither content nor calls. `None` when it is well formed.
fn openai_unpaired(body: &Value) -> Option<String> {
    let messages = body["messages"].as_array()?;
    let mut open: Vec<String> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        if m["role"] == "tool" {
            let id = m["tool_call_id"].as_str().unwrap_or_default();
            match open.iter().position(|c| c == id) {
                Some(at) => drop(open.remove(at)),
                None => {
                    return Some(format!(
                        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'. (messages.[{i}])"
                    ));
                }
            }
            continue;
        }
        if !open.is_empty() {
            return Some(format!(
                "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
                open.join(", ")
            ));
        }
        if m["role"] == "assistant" && m["content"].is_null() && m["tool_calls"].as_array().is_none_or(Vec::is_empty) {
            return Some(format!("Invalid value for 'content': expected a string, got null. (messages.[{i}].content)"));
        }
        if let Some(calls) = m["tool_calls"].as_array() {
            open = calls.iter().map(|c| c["id"].as_str().unwrap_or_default().to_owned()).collect();
        }
    }
    (!open.is_empty())
        .then(|| format!("The following tool_call_ids did not have response messages: {}", open.join(", ")))
}

/// What Anthropic's Messages API answers (HTTP 400) to a request whose `tool_use` and `tool_result` blocks do not
/// pair up (the message after one with `tool_use` blocks must hold a `tool_result` for each id, and a `tool_result`
/// must answer a `tool_use` of the message before it), that uses a `tool_use` id twice, or that holds a blank text.
/// `None` when it is well formed.
fn anthropic_unpaired(body: &Value) -> Option<String> {
    let messages = body["messages"].as_array()?;
    let blocks = |m: &Value, kind: &str, key: &str| -> Vec<String> {
        m["content"]
            .as_array()
            .map(|c| {
                c.iter().filter(|b| b["type"] == kind).filter_map(|b| b[key].as_str().map(str::to_owned)).collect()
            })
            .unwrap_or_default()
    };
    let mut open: Vec<String> = Vec::new();
    let mut ids: Vec<String> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let texts: Vec<&str> = match &m["content"] {
            Value::String(text) => vec![text.as_str()],
            Value::Array(blocks) => {
                blocks.iter().filter(|b| b["type"] == "text").filter_map(|b| b["text"].as_str()).collect()
            }
            _ => Vec::new(),
        };
        if texts.iter().any(|t| t.trim().is_empty()) {
            return Some(format!("messages.{i}: text content blocks must contain non-whitespace text"));
        }
        for id in blocks(m, "tool_use", "id") {
            if ids.contains(&id) {
                return Some(format!("messages.{i}: `tool_use` ids must be unique: {id}"));
            }
            ids.push(id);
        }
        let results = blocks(m, "tool_result", "tool_use_id");
        if let Some(stray) = results.iter().find(|id| !open.contains(id)) {
            return Some(format!(
                "messages.{i}.content: unexpected `tool_use_id` found in `tool_result` blocks: {stray}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
            ));
        }
        let missing: Vec<&String> = open.iter().filter(|id| !results.contains(id)).collect();
        if !missing.is_empty() {
            let ids: Vec<&str> = missing.iter().map(|s| s.as_str()).collect();
            return Some(format!(
                "messages.{}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                i.saturating_sub(1),
                ids.join(", ")
            ));
        }
        open = blocks(m, "tool_use", "id");
    }
    (!open.is_empty()).then(|| format!("`tool_use` ids were found without `tool_result` blocks: {}", open.join(", ")))
}

/// HTTP 400 with the provider's `invalid_request_error` body.
fn invalid_request(wire: Wire, message: &str) -> Response {
    let body = match wire {
        Wire::OpenAi => {
            json!({"error": {"message": message, "type": "invalid_request_error", "param": "messages", "code": null}})
        }
        Wire::Anthropic => json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}}),
    };
    Response::builder()
        .status(StatusCode::BAD_REQUEST)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap()
}

async fn serve_openai(State(s): State<Scripted>, headers: HeaderMap, body: axum::Json<Value>) -> Response {
    if let Some(message) = openai_unpaired(&body.0) {
        s.requests.lock().push((headers, body.0));
        return invalid_request(Wire::OpenAi, &message);
    }
    let mut reply = s.next(headers, body.0);
    while let Reply::Delay(d, inner) = reply {
        tokio::time::sleep(d).await;
        reply = *inner;
    }
    let data = |v: Value| format!("data: {v}\n\n");
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "scripted",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut events = vec![data(chunk(json!({"role": "assistant", "content": ""}), Value::Null))];
    match reply {
        Reply::Status(code, msg) => return error(code, &msg),
        Reply::Json(body) => return whole(&body),
        Reply::Limited(after) => return limited(&after),
        Reply::Text(text) => {
            let (a, b) = halves(&text);
            events.push(data(chunk(json!({"content": a}), Value::Null)));
            events.push(data(chunk(json!({"content": b}), Value::Null)));
            events.push(data(chunk(json!({}), json!("stop"))));
        }
        Reply::Tools(calls) => {
            for (i, (name, args)) in calls.iter().enumerate() {
                let (a, b) = halves(args);
                events.push(data(chunk(
                    json!({"tool_calls": [{"index": i, "id": format!("call_{i}_{}", name), "type": "function", "function": {"name": name, "arguments": a}}]}),
                    Value::Null,
                )));
                events.push(data(chunk(
                    json!({"tool_calls": [{"index": i, "function": {"arguments": b}}]}),
                    Value::Null,
                )));
            }
            events.push(data(chunk(json!({}), json!("tool_calls"))));
        }
        Reply::Delay(..) => unreachable!(),
    }
    events.push(data(json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107, "prompt_tokens_details": {"cached_tokens": 64}}})));
    events.push("data: [DONE]\n\n".to_owned());
    sse(events)
}

async fn serve_anthropic(State(s): State<Scripted>, headers: HeaderMap, body: axum::Json<Value>) -> Response {
    if let Some(message) = anthropic_unpaired(&body.0) {
        s.requests.lock().push((headers, body.0));
        return invalid_request(Wire::Anthropic, &message);
    }
    let mut reply = s.next(headers, body.0);
    while let Reply::Delay(d, inner) = reply {
        tokio::time::sleep(d).await;
        reply = *inner;
    }
    let ev = |name: &str, v: Value| format!("event: {name}\ndata: {v}\n\n");
    let mut events = vec![ev(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "scripted", "usage": {"input_tokens": 120, "output_tokens": 1, "cache_read_input_tokens": 900, "cache_creation_input_tokens": 40}}}),
    )];
    let stop_reason = match reply {
        Reply::Status(code, msg) => return error(code, &msg),
        Reply::Json(body) => return whole(&body),
        Reply::Limited(after) => return limited(&after),
        Reply::Text(text) => {
            let (a, b) = halves(&text);
            events.push(ev(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ));
            events.push(ev(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": a}}),
            ));
            events.push(ev(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": b}}),
            ));
            events.push(ev("content_block_stop", json!({"type": "content_block_stop", "index": 0})));
            "end_turn"
        }
        Reply::Tools(calls) => {
            for (i, (name, args)) in calls.iter().enumerate() {
                let (a, b) = halves(args);
                events.push(ev("content_block_start", json!({"type": "content_block_start", "index": i, "content_block": {"type": "tool_use", "id": format!("toolu_{i}_{name}"), "name": name, "input": {}}})));
                events.push(ev("content_block_delta", json!({"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": a}})));
                events.push(ev("content_block_delta", json!({"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": b}})));
                events.push(ev("content_block_stop", json!({"type": "content_block_stop", "index": i})));
            }
            "tool_use"
        }
        Reply::Delay(..) => unreachable!(),
    };
    events.push(ev(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason}, "usage": {"output_tokens": 9}}),
    ));
    events.push(ev("message_stop", json!({"type": "message_stop"})));
    sse(events)
}
