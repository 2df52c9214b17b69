//! Which provider to use: `[llm]` in the configuration file, else the conventional environment variables
//! (`OPENAI_API_KEY`/`OPENAI_BASE_URL`, `ANTHROPIC_API_KEY`/`ANTHROPIC_BASE_URL`, `HOLDFAST_MODEL`).

use super::anthropic::AnthropicProvider;
use super::openai::OpenAiProvider;
use super::{ChatProvider, RetryPolicy};
use serde::Deserialize;
use std::sync::Arc;
use std::time::Duration;

/// The wire protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// OpenAI-compatible chat completions.
    Openai,
    /// The Anthropic Messages API.
    Anthropic,
}

/// `[llm]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmConfig {
    /// `openai` or `anthropic`.
    pub provider: Option<ProviderKind>,
    /// Endpoint base URL.
    pub base_url: Option<String>,
    /// Model name.
    pub model: Option<String>,
    /// Environment variable holding the API key (the key itself never goes in the file).
    pub api_key_env: Option<String>,
    /// Send OpenAI tools with `strict: true` (default true; some local servers reject it).
    pub strict_tools: Option<bool>,
    /// Retries after the first attempt on 429/5xx (default 4).
    pub max_retries: Option<u32>,
    /// Seconds one model call may take (default 120).
    pub timeout_secs: Option<u64>,
}

/// Default model per provider when neither `[llm] model` nor `HOLDFAST_MODEL` is set.
pub const DEFAULT_OPENAI_MODEL: &str = "gpt-4o-mini";
/// Default Anthropic model.
pub const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

impl LlmConfig {
    /// The configured provider, or `None` when neither the file nor the environment names one.
    pub fn provider(&self) -> Option<Arc<dyn ChatProvider>> {
        let kind = self.provider.or_else(|| {
            if env("ANTHROPIC_API_KEY").is_some() && env("OPENAI_API_KEY").is_none() {
                Some(ProviderKind::Anthropic)
            } else if env("OPENAI_API_KEY").is_some() || env("OPENAI_BASE_URL").is_some() {
                Some(ProviderKind::Openai)
            } else {
                None
            }
        })?;
        let retry = RetryPolicy {
            max_retries: self.max_retries.unwrap_or(RetryPolicy::default().max_retries),
            request_timeout: self.timeout_secs.map_or(RetryPolicy::default().request_timeout, Duration::from_secs),
            ..RetryPolicy::default()
        };
        let model = self.model.clone().or_else(|| env("HOLDFAST_MODEL"));
        match kind {
            ProviderKind::Openai => {
                let key = env(self.api_key_env.as_deref().unwrap_or("OPENAI_API_KEY"));
                let base = self
                    .base_url
                    .clone()
                    .or_else(|| env("OPENAI_BASE_URL"))
                    .unwrap_or_else(|| "https://api.openai.com/v1".into());
                let model = model.unwrap_or_else(|| DEFAULT_OPENAI_MODEL.into());
                Some(Arc::new(
                    OpenAiProvider::new(&base, key, &model)
                        .with_retry(retry)
                        .with_strict_tools(self.strict_tools.unwrap_or(true)),
                ))
            }
            ProviderKind::Anthropic => {
                let key = env(self.api_key_env.as_deref().unwrap_or("ANTHROPIC_API_KEY")).unwrap_or_default();
                let base = self
                    .base_url
                    .clone()
                    .or_else(|| env("ANTHROPIC_BASE_URL"))
                    .unwrap_or_else(|| "https://api.anthropic.com".into());
                let model = model.unwrap_or_else(|| DEFAULT_ANTHROPIC_MODEL.into());
                Some(Arc::new(AnthropicProvider::new(&base, key, &model).with_retry(retry)))
            }
        }
    }
}
