//! The Anthropic Messages API: `POST {base}/v1/messages` with `stream: true`, `tool_use` blocks assembled from
//! `input_json_delta`s, tool results sent back as `tool_result` blocks in a user message.

use super::sse::read_events;
use super::{
    ChatMessage, ChatProvider, ChatRequest, ChatResponse, DeltaSink, LlmError, LlmErrorKind, RetryPolicy, StreamDelta,
    ToolCall, send_with_retries,
};
use holdfast_core::tool::BoxFuture;
use serde_json::{Value, json};

/// The API version header holdfast speaks.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// An Anthropic endpoint.
#[derive(Debug, Clone)]
pub struct AnthropicProvider {
    http: reqwest::Client,
    base_url: String,
    api_key: String,
    model: String,
    retry: RetryPolicy,
}

impl AnthropicProvider {
    /// A provider for `model` at `base_url` (e.g. `https://api.anthropic.com`).
    pub fn new(base_url: &str, api_key: String, model: &str) -> Self {
        Self {
            http: reqwest::Client::new(),
            base_url: base_url.trim_end_matches('/').to_owned(),
            api_key,
            model: model.to_owned(),
            retry: RetryPolicy::default(),
        }
    }

    /// Changes the retry policy.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// The request body for `request`. Consecutive tool results are merged into one user message, as the API
    /// requires; arguments that are not a JSON object are sent as `{}` (the malformed text stays in history).
    pub fn body(&self, request: &ChatRequest) -> Value {
        let mut messages: Vec<Value> = Vec::new();
        for m in &request.messages {
            match m {
                ChatMessage::User(text) => messages.push(json!({"role": "user", "content": text})),
                ChatMessage::Assistant { text, tool_calls } => {
                    let mut content = Vec::new();
                    if !text.is_empty() {
                        content.push(json!({"type": "text", "text": text}));
                    }
                    for c in tool_calls {
                        let input = serde_json::from_str::<Value>(&c.arguments)
                            .ok()
                            .filter(Value::is_object)
                            .unwrap_or(json!({}));
                        content.push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}));
                    }
                    if content.is_empty() {
                        content.push(json!({"type": "text", "text": "(no text)"}));
                    }
                    messages.push(json!({"role": "assistant", "content": content}));
                }
                ChatMessage::Tool { call_id, content, is_error, .. } => {
                    let mut block = json!({"type": "tool_result", "tool_use_id": call_id, "content": content});
                    if *is_error {
                        block["is_error"] = json!(true);
                    }
                    let merged = messages.last_mut().and_then(|last| {
                        let is_results = last["role"] == "user"
                            && last["content"].as_array().is_some_and(|c| c.iter().all(|b| b["type"] == "tool_result"));
                        if is_results { last["content"].as_array_mut() } else { None }
                    });
                    match merged {
                        Some(blocks) => blocks.push(block),
                        None => messages.push(json!({"role": "user", "content": [block]})),
                    }
                }
            }
        }
        // Prompt caching: the tool list and the system prompt are the same on every call of a turn, so both end in
        // a cache breakpoint (the cached prefix is tools, then system); the provider bills cached reads at a
        // fraction and reports them in `usage`.
        let cached = json!({"type": "ephemeral"});
        let mut body = json!({
            "model": self.model,
            "max_tokens": request.max_tokens,
            "system": [{"type": "text", "text": request.system, "cache_control": cached}],
            "messages": messages,
            "stream": true,
        });
        if !request.tools.is_empty() {
            let mut tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
                .collect();
            if let Some(last) = tools.last_mut() {
                last["cache_control"] = cached;
            }
            body["tools"] = Value::Array(tools);
        }
        body
    }
}

enum Block {
    Text,
    Tool { id: String, name: String, json: String },
    Other,
}

impl ChatProvider for AnthropicProvider {
    fn name(&self) -> &str {
        "anthropic"
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn check_model(&self) -> BoxFuture<'_, Result<(), LlmError>> {
        Box::pin(async move {
            let base = format!("{}/v1", self.base_url);
            let url = super::model_url(&base, "models", &self.model).ok_or_else(|| LlmError {
                provider: "anthropic".into(),
                kind: LlmErrorKind::Protocol,
                message: "base_url is not a URL".to_owned(),
            })?;
            send_with_retries(self.name(), &self.model, self.retry, || {
                self.http
                    .get(url.clone())
                    .header("x-api-key", &self.api_key)
                    .header("anthropic-version", ANTHROPIC_VERSION)
            })
            .await
            .map(|_| ())
        })
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        on_delta: DeltaSink<'a>,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        Box::pin(async move {
            let body = self.body(request);
            let url = format!("{}/v1/messages", self.base_url);
            let response = send_with_retries(self.name(), &self.model, self.retry, || {
                self.http
                    .post(&url)
                    .header("x-api-key", &self.api_key)
                    .header("anthropic-version", ANTHROPIC_VERSION)
                    .json(&body)
            })
            .await?;
            let protocol =
                |message: String| LlmError { provider: "anthropic".into(), kind: LlmErrorKind::Protocol, message };
            let mut out = ChatResponse::default();
            let mut blocks: Vec<Block> = Vec::new();
            {
                // One event of the stream; a non-streamed answer is read as the events that would have carried it.
                let mut handle = |data: Value| -> Result<bool, String> {
                    match data.get("type").and_then(Value::as_str).unwrap_or_default() {
                        "message_start" => {
                            let usage =
                                |field: &str| data.pointer(&format!("/message/usage/{field}")).and_then(Value::as_u64);
                            out.usage.input_tokens = usage("input_tokens").unwrap_or_default();
                            out.usage.cache_read_tokens = usage("cache_read_input_tokens").unwrap_or_default();
                            out.usage.cache_write_tokens = usage("cache_creation_input_tokens").unwrap_or_default();
                        }
                        "content_block_start" => {
                            let block = &data["content_block"];
                            blocks.push(match block.get("type").and_then(Value::as_str) {
                                Some("text") => Block::Text,
                                Some("tool_use") => {
                                    let name = block.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
                                    on_delta(StreamDelta::ToolCallStarted { name: name.clone() });
                                    Block::Tool {
                                        id: block.get("id").and_then(Value::as_str).unwrap_or_default().to_owned(),
                                        name,
                                        json: String::new(),
                                    }
                                }
                                _ => Block::Other,
                            });
                        }
                        "content_block_delta" => {
                            let delta = &data["delta"];
                            match (blocks.last_mut(), delta.get("type").and_then(Value::as_str)) {
                                (Some(Block::Text), Some("text_delta")) => {
                                    let text = delta.get("text").and_then(Value::as_str).unwrap_or_default();
                                    out.text.push_str(text);
                                    on_delta(StreamDelta::Text(text.to_owned()));
                                }
                                (Some(Block::Tool { json, .. }), Some("input_json_delta")) => {
                                    json.push_str(
                                        delta.get("partial_json").and_then(Value::as_str).unwrap_or_default(),
                                    );
                                }
                                _ => {}
                            }
                        }
                        "message_delta" => {
                            if let Some(r) = data.pointer("/delta/stop_reason").and_then(Value::as_str) {
                                out.stop_reason = Some(r.to_owned());
                            }
                            if let Some(n) = data.pointer("/usage/output_tokens").and_then(Value::as_u64) {
                                out.usage.output_tokens = n;
                            }
                        }
                        "message_stop" => return Ok(false),
                        "error" => return Err(format!("the provider reported an error mid-stream: {}", data["error"])),
                        _ => {}
                    }
                    Ok(true)
                };
                read_events(response, |event| {
                    if event.whole {
                        let answer: Value =
                            serde_json::from_str(&event.data).map_err(|e| format!("the answer is not JSON: {e}"))?;
                        for data in whole_as_events(&answer) {
                            if !handle(data)? {
                                break;
                            }
                        }
                        return Ok(false);
                    }
                    match serde_json::from_str(&event.data) {
                        Ok(data) => handle(data),
                        Err(_) if event.data.is_empty() => Ok(true),
                        Err(e) => Err(format!("an event is not JSON: {e}")),
                    }
                })
                .await
                .map_err(protocol)?;
            }
            for block in blocks {
                if let Block::Tool { id, name, json } = block {
                    // An empty input streams no deltas: it means `{}`.
                    let arguments = if json.trim().is_empty() { "{}".to_owned() } else { json };
                    out.tool_calls.push(ToolCall { id, name, arguments });
                }
            }
            Ok(out)
        })
    }
}

/// A non-streamed Messages answer as the stream events that would have carried it: `message_start` (input usage),
/// each content block's start and one delta (its text, or its input as JSON), `message_delta` (stop reason, output
/// usage) and `message_stop`.
fn whole_as_events(answer: &Value) -> Vec<Value> {
    let mut events =
        vec![json!({"type": "message_start", "message": {"usage": answer.get("usage").cloned().unwrap_or(json!({}))}})];
    for (index, block) in answer.get("content").and_then(Value::as_array).into_iter().flatten().enumerate() {
        events.push(json!({"type": "content_block_start", "index": index, "content_block": block}));
        let delta = match block.get("type").and_then(Value::as_str) {
            Some("text") => json!({"type": "text_delta", "text": block.get("text").cloned().unwrap_or(json!(""))}),
            Some("tool_use") => {
                json!({"type": "input_json_delta", "partial_json": block.get("input").map(Value::to_string).unwrap_or_default()})
            }
            _ => continue,
        };
        events.push(json!({"type": "content_block_delta", "index": index, "delta": delta}));
    }
    events.push(json!({
        "type": "message_delta",
        "delta": {"stop_reason": answer.get("stop_reason").cloned().unwrap_or(Value::Null)},
        "usage": {"output_tokens": answer.pointer("/usage/output_tokens").cloned().unwrap_or(Value::Null)},
    }));
    events.push(json!({"type": "message_stop"}));
    events
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{ChatMessage, ChatRequest, ToolCall};

    #[test]
    fn a_failed_tool_call_is_sent_as_an_error_result() {
        let provider = AnthropicProvider::new("http://127.0.0.1:1", "k".into(), "claude-test");
        let call = |id: &str| ToolCall { id: id.into(), name: "web3_tx".into(), arguments: "{}".into() };
        let request = ChatRequest {
            system: "s".into(),
            messages: vec![
                ChatMessage::User("swap".into()),
                ChatMessage::Assistant { text: String::new(), tool_calls: vec![call("a"), call("b")] },
                ChatMessage::Tool {
                    call_id: "a".into(),
                    name: "web3_tx".into(),
                    content: "{}".into(),
                    is_error: false,
                },
                ChatMessage::Tool {
                    call_id: "b".into(),
                    name: "web3_tx".into(),
                    content: r#"{"error":{"code":"policy_denied","message":"over the cap"}}"#.into(),
                    is_error: true,
                },
            ],
            tools: vec![],
            max_tokens: 10,
        };
        let body = provider.body(&request);
        assert_eq!(body["system"][0]["text"], "s");
        assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral", "the system prompt is cached");
        let results = body["messages"][2]["content"].as_array().unwrap();
        assert_eq!(results.len(), 2, "consecutive results share one user message");
        assert!(results[0].get("is_error").is_none());
        assert_eq!(results[1]["is_error"], true);
    }
}
