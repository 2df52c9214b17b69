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
    /// Reads `[llm]` from `doc`. An `api_key_env` that cannot be a variable's name (a key pasted in its place) is
    /// refused at its line and never echoed.
    pub fn from_document(
        doc: &holdfast_core::config::ConfigDocument,
    ) -> Result<Self, holdfast_core::config::ConfigError> {
        let llm: Self = doc.section_or_default("llm")?;
        if llm.api_key_env.as_deref().is_some_and(|name| !holdfast_core::is_env_var_name(name)) {
            return Err(doc.invalid_at(
                &["llm", "api_key_env"],
                "`llm.api_key_env` must be the NAME of an environment variable (letters, digits and `_`, not \
                 starting with a digit), not the key itself; if you pasted a key here, remove it and treat it as exposed",
            ));
        }
        Ok(llm)
    }

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

#[cfg(test)]
mod tests {
    use super::LlmConfig;
    use holdfast_core::config::ConfigDocument;

    #[test]
    fn a_key_pasted_into_api_key_env_is_refused_at_its_line_and_never_echoed() {
        let key = "sk-proj-Zq81xJ3f0a9b8c7d6e5f4a3b2c1d0e9f";
        let text = format!("[llm]\nprovider = \"openai\"\napi_key_env = \"{key}\"\n");
        let doc = ConfigDocument::parse(Some("holdfast.toml".into()), text).unwrap();
        let err = LlmConfig::from_document(&doc).unwrap_err().to_string();
        assert!(err.contains("holdfast.toml:3") && err.contains("NAME of an environment variable"), "{err}");
        assert!(!err.contains("Zq81"), "{err}");
        let doc = ConfigDocument::parse(None, "[llm]\napi_key_env = \"MY_OPENAI_KEY\"\n".into()).unwrap();
        assert_eq!(LlmConfig::from_document(&doc).unwrap().api_key_env.as_deref(), Some("MY_OPENAI_KEY"));
    }
}
