//! OpenAI-compatible chat completions (OpenAI, OpenRouter, vLLM, llama.cpp's server, Ollama, LM Studio):
//! `POST {base}/chat/completions` with `stream: true`, tools sent with strict schemas, tool-call deltas assembled
//! by index, usage from the final chunk.

use super::sse::read_events;
use super::{
    ChatMessage, ChatProvider, ChatRequest, ChatResponse, DeltaSink, LlmError, LlmErrorKind, RetryPolicy, StreamDelta,
    ToolCall, Usage, send_with_retries,
};
use holdfast_core::tool::BoxFuture;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// An OpenAI-compatible endpoint.
#[derive(Debug, Clone)]
pub struct OpenAiProvider {
    http: reqwest::Client,
    base_url: String,
    api_key: Option<String>,
    model: String,
    retry: RetryPolicy,
    strict_tools: bool,
}

impl OpenAiProvider {
    /// A provider for `model` at `base_url` (e.g. `https://api.openai.com/v1`), with an optional key.
    pub fn new(base_url: &str, api_key: Option<String>, model: &str) -> Self {
        Self {
            http: reqwest::Client::new(),
            base_url: base_url.trim_end_matches('/').to_owned(),
            api_key,
            model: model.to_owned(),
            retry: RetryPolicy::default(),
            strict_tools: true,
        }
    }

    /// Changes the retry policy.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Sends tools without `strict: true` (for servers that reject the flag).
    pub fn with_strict_tools(mut self, strict: bool) -> Self {
        self.strict_tools = strict;
        self
    }

    /// The name of the output-token limit: `max_completion_tokens` for OpenAI's own API (where `max_tokens` is
    /// deprecated) and for its reasoning models (o-series, gpt-5 family) wherever they are served, which reject
    /// `max_tokens`; `max_tokens` for other OpenAI-compatible servers, many of which know only that name.
    ///
    /// ```
    /// use holdfast_agent::llm::openai::OpenAiProvider;
    /// let official = OpenAiProvider::new("https://api.openai.com/v1", None, "gpt-4o-mini");
    /// assert_eq!(official.token_limit_field(), "max_completion_tokens");
    /// let reasoning = OpenAiProvider::new("https://gateway.example/v1", None, "o4-mini");
    /// assert_eq!(reasoning.token_limit_field(), "max_completion_tokens");
    /// let local = OpenAiProvider::new("http://127.0.0.1:11434/v1", None, "llama3.1");
    /// assert_eq!(local.token_limit_field(), "max_tokens");
    /// ```
    pub fn token_limit_field(&self) -> &'static str {
        let official = reqwest::Url::parse(&self.base_url)
            .ok()
            .and_then(|u| u.host_str().map(|h| h.eq_ignore_ascii_case("api.openai.com")))
            .unwrap_or(false);
        // The model may be named with a provider prefix (`openai/gpt-5`) by a gateway.
        let model = self.model.rsplit('/').next().unwrap_or_default().to_ascii_lowercase();
        let reasoning = model.starts_with("gpt-5")
            || ["o1", "o3", "o4"].iter().any(|o| model == *o || model.starts_with(&format!("{o}-")));
        if official || reasoning { "max_completion_tokens" } else { "max_tokens" }
    }

    /// The request body for `request`.
    pub fn body(&self, request: &ChatRequest) -> Value {
        let mut messages = vec![json!({"role": "system", "content": request.system})];
        for m in &request.messages {
            messages.push(match m {
                ChatMessage::User(text) => json!({"role": "user", "content": text}),
                ChatMessage::Assistant { text, tool_calls } => {
                    let mut msg = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
                    if !tool_calls.is_empty() {
                        msg["tool_calls"] = tool_calls
                            .iter()
                            .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
                            .collect();
                    }
                    msg
                }
                ChatMessage::Tool { call_id, content, .. } => {
                    json!({"role": "tool", "tool_call_id": call_id, "content": content})
                }
            });
        }
        let mut body = json!({
            "model": self.model,
            "messages": messages,
            "stream": true,
            "stream_options": {"include_usage": true},
        });
        body[self.token_limit_field()] = json!(request.max_tokens);
        if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(|t| {
                    let mut f = json!({"name": t.name, "description": t.description, "parameters": t.parameters});
                    if self.strict_tools {
                        f["strict"] = json!(true);
                    }
                    json!({"type": "function", "function": f})
                })
                .collect();
        }
        body
    }
}

#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

impl ChatProvider for OpenAiProvider {
    fn name(&self) -> &str {
        "openai"
    }

    fn model(&self) -> &str {
        &self.model
    }

    fn check_model(&self) -> BoxFuture<'_, Result<(), LlmError>> {
        Box::pin(async move {
            let protocol =
                |message: String| LlmError { provider: "openai".into(), kind: LlmErrorKind::Protocol, message };
            let url = super::model_url(&self.base_url, "models", &self.model)
                .ok_or_else(|| protocol("base_url is not a URL".to_owned()))?;
            let get = |url: reqwest::Url| {
                let req = self.http.get(url);
                match &self.api_key {
                    Some(key) => req.bearer_auth(key),
                    None => req,
                }
            };
            match send_with_retries(self.name(), &self.model, self.retry, || get(url.clone())).await {
                Ok(_) => Ok(()),
                // Some OpenAI-compatible servers (vLLM, llama.cpp) list models but have no `/models/{id}` route.
                Err(e) if e.kind == LlmErrorKind::UnknownModel => {
                    let mut list = url.clone();
                    list.path_segments_mut().map_err(|()| protocol("base_url is not a URL".to_owned()))?.pop();
                    super::model_listed(self.name(), &self.model, self.retry, list, get).await
                }
                Err(e) => Err(e),
            }
        })
    }

    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        on_delta: DeltaSink<'a>,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        Box::pin(async move {
            let body = self.body(request);
            let url = format!("{}/chat/completions", self.base_url);
            let response = send_with_retries(self.name(), &self.model, self.retry, || {
                let mut req = self.http.post(&url).json(&body);
                if let Some(key) = &self.api_key {
                    req = req.bearer_auth(key);
                }
                req
            })
            .await?;
            let protocol =
                |message: String| LlmError { provider: "openai".into(), kind: LlmErrorKind::Protocol, message };
            let mut out = ChatResponse::default();
            let mut calls: BTreeMap<u64, PartialCall> = BTreeMap::new();
            read_events(response, |event| {
                if event.data.trim() == "[DONE]" {
                    return Ok(false);
                }
                let chunk: Value =
                    serde_json::from_str(&event.data).map_err(|e| format!("a chunk is not JSON: {e}"))?;
                let chunk = if event.whole { whole_as_chunk(chunk) } else { chunk };
                if let Some(err) = chunk.get("error") {
                    return Err(format!("the provider reported an error mid-stream: {err}"));
                }
                if let Some(u) = chunk.get("usage").filter(|u| !u.is_null()) {
                    out.usage = Usage {
                        input_tokens: u.get("prompt_tokens").and_then(Value::as_u64).unwrap_or_default(),
                        output_tokens: u.get("completion_tokens").and_then(Value::as_u64).unwrap_or_default(),
                        cache_read_tokens: u
                            .pointer("/prompt_tokens_details/cached_tokens")
                            .and_then(Value::as_u64)
                            .unwrap_or_default(),
                        cache_write_tokens: 0,
                    };
                }
                let Some(choice) = chunk.get("choices").and_then(|c| c.get(0)) else { return Ok(true) };
                if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                    out.stop_reason = Some(reason.to_owned());
                }
                let Some(delta) = choice.get("delta") else { return Ok(true) };
                if let Some(text) = delta.get("content").and_then(Value::as_str).filter(|t| !t.is_empty()) {
                    out.text.push_str(text);
                    on_delta(StreamDelta::Text(text.to_owned()));
                }
                for tc in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
                    let index = tc.get("index").and_then(Value::as_u64).unwrap_or(0);
                    let entry = calls.entry(index).or_default();
                    if let Some(id) = tc.get("id").and_then(Value::as_str) {
                        entry.id = id.to_owned();
                    }
                    if let Some(f) = tc.get("function") {
                        if let Some(name) = f.get("name").and_then(Value::as_str).filter(|n| !n.is_empty()) {
                            if entry.name.is_empty() {
                                on_delta(StreamDelta::ToolCallStarted { name: name.to_owned() });
                            }
                            entry.name.push_str(name);
                        }
                        if let Some(args) = f.get("arguments").and_then(Value::as_str) {
                            entry.arguments.push_str(args);
                        }
                    }
                }
                Ok(true)
            })
            .await
            .map_err(protocol)?;
            for (i, c) in calls {
                if c.name.is_empty() {
                    return Err(protocol(format!("tool call {i} has no name")));
                }
                let id = if c.id.is_empty() { format!("call_{i}") } else { c.id };
                out.tool_calls.push(ToolCall { id, name: c.name, arguments: c.arguments });
            }
            Ok(out)
        })
    }
}
/// A non-streamed answer (`choices[0].message`) as the one chunk that would have carried all of it: the message as
/// the delta, its tool calls numbered by position.
fn whole_as_chunk(mut answer: Value) -> Value {
    if let Some(choice) = answer.pointer_mut("/choices/0")
        && let Some(mut delta) = choice.get("message").cloned()
    {
        for (i, call) in delta.get_mut("tool_calls").and_then(Value::as_array_mut).into_iter().flatten().enumerate() {
            call["index"] = Value::from(i);
        }
        choice["delta"] = delta;
    }
    answer
}
