//! LLM providers behind one trait, speaking the real wire protocols over HTTP with streaming:
//! OpenAI-compatible chat completions ([`openai`]) and the Anthropic Messages API ([`anthropic`]).
//!
//! Both retry 429 and 5xx answers (and connection failures) with exponential backoff and jitter, honour
//! `retry-after` (seconds or an HTTP date), time out, and turn a bad key or an unknown model into a clear
//! [`LlmError`]. OpenAI's own API and its reasoning models get `max_completion_tokens`, other compatible servers
//! `max_tokens`; Anthropic tool results that are errors carry `is_error: true`.

pub mod anthropic;
pub mod config;
pub mod openai;
mod sse;

pub use config::{LlmConfig, ProviderKind};

use holdfast_core::tool::BoxFuture;
use holdfast_core::{ErrorCode, ToolError};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Duration;

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Strict JSON schema of the parameters.
    pub parameters: Value,
}

/// A tool call the model made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id for the call.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Arguments as the model wrote them (JSON text, possibly malformed).
    pub arguments: String,
}

/// One message of the conversation sent to the model.
#[derive(Debug, Clone, PartialEq)]
pub enum ChatMessage {
    /// The user's words.
    User(String),
    /// The model's earlier answer.
    Assistant {
        /// Text.
        text: String,
        /// Tool calls.
        tool_calls: Vec<ToolCall>,
    },
    /// A tool's result.
    Tool {
        /// The call answered.
        call_id: String,
        /// Tool name.
        name: String,
        /// Result text (JSON).
        content: String,
        /// The call failed (`content` is the coded error): Anthropic's `is_error`, so the model is told it failed.
        is_error: bool,
    },
}

/// A request to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    /// The system context.
    pub system: String,
    /// The conversation.
    pub messages: Vec<ChatMessage>,
    /// Tools the model may call.
    pub tools: Vec<ToolSpec>,
    /// Most tokens to generate.
    pub max_tokens: u32,
}

/// Token counts of one model call: the core's [`TokenUsage`](holdfast_core::event::TokenUsage), which events carry.
pub use holdfast_core::event::TokenUsage as Usage;

/// The model's answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatResponse {
    /// Text.
    pub text: String,
    /// Tool calls, in order.
    pub tool_calls: Vec<ToolCall>,
    /// Token usage.
    pub usage: Usage,
    /// Why generation stopped, as the provider says it.
    pub stop_reason: Option<String>,
}

/// A piece of a streamed answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamDelta {
    /// More text.
    Text(String),
    /// The model started a tool call.
    ToolCallStarted {
        /// Tool name.
        name: String,
    },
}

/// What went wrong talking to a provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LlmErrorKind {
    /// The API key was refused (401/403).
    Auth,
    /// The model does not exist (404).
    UnknownModel,
    /// Still rate limited after the retries.
    RateLimited,
    /// The provider failed (5xx) after the retries.
    Server,
    /// The request was rejected (other 4xx).
    BadRequest,
    /// No answer in time.
    Timeout,
    /// The connection failed.
    Network,
    /// The answer did not follow the wire protocol.
    Protocol,
}

/// A provider error with a message a user can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{provider}: {message}")]
pub struct LlmError {
    /// Provider name.
    pub provider: String,
    /// The kind.
    pub kind: LlmErrorKind,
    /// The message.
    pub message: String,
}

impl From<LlmError> for ToolError {
    fn from(e: LlmError) -> Self {
        ToolError::new(ErrorCode::UpstreamError, e.to_string())
            .with_details(serde_json::json!({"provider": e.provider, "kind": e.kind}))
    }
}

/// Called with every streamed piece.
pub type DeltaSink<'a> = &'a (dyn Fn(StreamDelta) + Send + Sync);

/// A chat model.
pub trait ChatProvider: Send + Sync {
    /// Provider name (`openai`, `anthropic`).
    fn name(&self) -> &str;
    /// The model.
    fn model(&self) -> &str;
    /// One model call, streaming deltas to `on_delta`.
    fn complete<'a>(
        &'a self,
        request: &'a ChatRequest,
        on_delta: DeltaSink<'a>,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>>;
    /// Asks the provider whether the key is accepted and the model exists (`GET …/models/MODEL`, free of charge),
    /// without a model call: `holdfast doctor` uses it.
    fn check_model(&self) -> BoxFuture<'_, Result<(), LlmError>>;
}

/// Retry and timeout settings shared by the providers.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// First backoff.
    pub initial_backoff: Duration,
    /// Longest single wait (also caps `retry-after`).
    pub max_backoff: Duration,
    /// Time limit for one attempt (connection and full streamed answer).
    pub request_timeout: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 4,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(20),
            request_timeout: Duration::from_secs(120),
        }
    }
}

/// Sends `build()` with retries on 429/5xx/connection errors; returns the successful response.
pub(crate) async fn send_with_retries(
    provider: &str,
    model: &str,
    policy: RetryPolicy,
    build: impl Fn() -> reqwest::RequestBuilder,
) -> Result<reqwest::Response, LlmError> {
    // Neither an API key in the URL nor one echoed in an error body reaches the message.
    let err = |kind, message: String| LlmError {
        provider: provider.to_owned(),
        kind,
        message: holdfast_core::redact_urls(&message).into_owned(),
    };
    let mut backoff = policy.initial_backoff;
    let mut attempt = 0;
    loop {
        let result = build().timeout(policy.request_timeout).send().await;
        let retry_after = |r: &reqwest::Response| {
            r.headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| parse_retry_after(v, chrono::Utc::now()))
        };
        let (retryable, failure, wait) = match result {
            Ok(r) if r.status().is_success() => return Ok(r),
            Ok(r) => {
                let status = r.status();
                let wait = retry_after(&r);
                let body = r.text().await.unwrap_or_default();
                let detail = error_detail(&body);
                match status.as_u16() {
                    401 | 403 => {
                        return Err(err(
                            LlmErrorKind::Auth,
                            format!("the API key was refused (HTTP {status}): {detail}"),
                        ));
                    }
                    404 => {
                        return Err(err(
                            LlmErrorKind::UnknownModel,
                            format!("model `{model}` or the endpoint was not found (HTTP 404): {detail}"),
                        ));
                    }
                    429 => (true, err(LlmErrorKind::RateLimited, format!("rate limited (HTTP 429): {detail}")), wait),
                    500..=599 => {
                        (true, err(LlmErrorKind::Server, format!("provider error (HTTP {status}): {detail}")), wait)
                    }
                    _ => {
                        return Err(err(
                            LlmErrorKind::BadRequest,
                            format!("request rejected (HTTP {status}): {detail}"),
                        ));
                    }
                }
            }
            Err(e) if e.is_timeout() => {
                (true, err(LlmErrorKind::Timeout, format!("no answer within {:?}", policy.request_timeout)), None)
            }
            Err(e) => {
                (true, err(LlmErrorKind::Network, format!("cannot reach the provider: {}", e.without_url())), None)
            }
        };
        if !retryable || attempt >= policy.max_retries {
            return Err(failure);
        }
        attempt += 1;
        // The server's `retry-after` as given; otherwise exponential backoff with jitter, so clients that failed
        // together do not retry together.
        let delay = wait.unwrap_or_else(|| jitter(backoff)).min(policy.max_backoff);
        tracing::warn!(provider, attempt, ?delay, "retrying: {}", failure.message);
        tokio::time::sleep(delay).await;
        backoff = (backoff * 2).min(policy.max_backoff);
    }
}

/// `{base}/{segment}/{model}` with the model as one percent-encoded path segment (`openai/gpt-4o` stays one
/// segment); `None` when `base` is no URL.
pub(crate) fn model_url(base: &str, segment: &str, model: &str) -> Option<reqwest::Url> {
    let mut url = reqwest::Url::parse(base).ok()?;
    url.path_segments_mut().ok()?.pop_if_empty().push(segment).push(model);
    Some(url)
}

/// Whether `GET {base}/{segment}` lists `model` (`{"data":[{"id":…}]}`, the shape OpenAI, Anthropic, vLLM and
/// OpenRouter share): the fallback of [`ChatProvider::check_model`] for servers without `GET …/models/MODEL`.
pub(crate) async fn model_listed(
    provider: &str,
    model: &str,
    retry: RetryPolicy,
    list_url: reqwest::Url,
    build: impl Fn(reqwest::Url) -> reqwest::RequestBuilder,
) -> Result<(), LlmError> {
    let response = send_with_retries(provider, model, retry, || build(list_url.clone())).await?;
    let err = |kind, message: String| LlmError { provider: provider.to_owned(), kind, message };
    let list: Value = response
        .json()
        .await
        .map_err(|e| err(LlmErrorKind::Protocol, format!("the model list is not JSON: {}", e.without_url())))?;
    let listed = list["data"].as_array().is_some_and(|models| models.iter().any(|m| m["id"] == model));
    if listed {
        Ok(())
    } else {
        Err(err(LlmErrorKind::UnknownModel, format!("model `{model}` is not in the provider's model list")))
    }
}

/// A `Retry-After` value: delay-seconds or an HTTP-date (RFC 9110 §10.2.3), as a wait from `now` (a date in the past
/// is no wait), capped at an hour. `None` when it is neither.
pub(crate) fn parse_retry_after(value: &str, now: chrono::DateTime<chrono::Utc>) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return secs.is_finite().then(|| Duration::from_secs_f64(secs.clamp(0.0, 3600.0)));
    }
    // IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) is RFC 2822's syntax with `GMT` as the zone.
    let at = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let wait = (at.with_timezone(&chrono::Utc) - now).to_std().unwrap_or_default();
    Some(wait.min(Duration::from_secs(3600)))
}

/// `base` scaled by a random factor in [0.5, 1): "equal jitter" backoff.
fn jitter(base: Duration) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos());
    let unit = (h.finish() >> 11) as f64 / (1u64 << 53) as f64;
    base.mul_f64(0.5 + unit / 2.0)
}

/// The most useful part of an error body (`error.message` when JSON), shortened.
fn error_detail(body: &str) -> String {
    let from_json = serde_json::from_str::<Value>(body).ok().and_then(|v| {
        v.pointer("/error/message").or_else(|| v.get("message")).and_then(Value::as_str).map(str::to_owned)
    });
    let text = from_json.unwrap_or_else(|| body.to_owned());
    text.chars().take(300).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_is_seconds_or_an_http_date() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-11-24T08:49:30Z").unwrap().with_timezone(&chrono::Utc);
        assert_eq!(parse_retry_after("7", now), Some(Duration::from_secs(7)));
        assert_eq!(parse_retry_after(" 1.5 ", now), Some(Duration::from_millis(1500)));
        assert_eq!(parse_retry_after("Tue, 24 Nov 2026 08:49:37 GMT", now), Some(Duration::from_secs(7)));
        assert_eq!(parse_retry_after("Tue, 24 Nov 2026 08:40:00 GMT", now), Some(Duration::ZERO), "in the past");
        assert_eq!(parse_retry_after("99999", now), Some(Duration::from_secs(3600)), "capped");
        assert_eq!(parse_retry_after("Wed, 24 Nov 2027 08:49:37 GMT", now), Some(Duration::from_secs(3600)));
        for bad in ["soon", "", "-", "NaN", "inf"] {
            assert!(parse_retry_after(bad, now).is_none_or(|d| d <= Duration::from_secs(3600)), "{bad}");
        }
        assert_eq!(parse_retry_after("soon", now), None);
    }

    #[test]
    fn backoff_is_jittered_within_half_to_whole() {
        let base = Duration::from_millis(800);
        let waits: std::collections::BTreeSet<Duration> = (0..64).map(|_| jitter(base)).collect();
        assert!(waits.iter().all(|w| *w >= base / 2 && *w < base), "{waits:?}");
        assert!(waits.len() > 8, "spread out, not one value: {waits:?}");
    }
}
