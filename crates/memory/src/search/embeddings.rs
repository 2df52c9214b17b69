//! Optional semantic ranking through an OpenAI-compatible `POST /v1/embeddings` endpoint.
//!
//! When an [`EmbeddingsConfig`] is given, `search_memory` runs in **hybrid** mode:
//! 1. the text search (FTS5/BM25) runs as always;
//! 2. every block value whose embedding is missing or stale (its text hash changed) is embedded (in batches of
//!    [`BATCH`], the first [`MAX_EMBED_CHARS`] characters of each value) and cached in `memory_embeddings`;
//! 3. the query is embedded and compared with each block by cosine similarity;
//! 4. candidates are the text hits plus the `limit` most similar blocks whose similarity is at least
//!    [`EmbeddingsConfig::min_vector_score`] (0.25 by default); each gets
//!    `score = text_weight · text_norm + (1 − text_weight) · max(cosine, 0)`, where `text_norm` is the text score
//!    divided by the best text score of the query (0 for blocks the text search did not find).
//!
//! If the endpoint fails, the search falls back to text ranking and says so in its `note`. Without a configuration
//! the mode is **text**.

use crate::error::{MemoryError, Result};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;

/// Texts per request.
pub const BATCH: usize = 64;
/// Characters of a block value sent for embedding (the value itself is never cut).
pub const MAX_EMBED_CHARS: usize = 8000;

/// Where and how to get embeddings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbeddingsConfig {
    /// The API's base URL, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:8080`. Requests go to
    /// `{base_url}/embeddings` when it ends in `/v1`, to `{base_url}/v1/embeddings` otherwise, and to `base_url`
    /// itself when it already ends in `/embeddings`.
    pub base_url: String,
    /// The embedding model, e.g. `text-embedding-3-small`.
    pub model: String,
    /// Bearer token, if the endpoint needs one.
    #[serde(default)]
    pub api_key: Option<String>,
    /// Weight of the text score in the hybrid score (0–1; the rest is the vector score).
    #[serde(default = "default_text_weight")]
    pub text_weight: f64,
    /// Request timeout in seconds.
    #[serde(default = "default_timeout_secs")]
    pub timeout_secs: u64,
    /// A block the text search did not find joins the results only when its cosine similarity to the query is at
    /// least this (unrelated texts still score a little above zero with real models).
    #[serde(default = "default_min_vector_score")]
    pub min_vector_score: f64,
}

fn default_min_vector_score() -> f64 {
    0.25
}

fn default_text_weight() -> f64 {
    0.5
}

fn default_timeout_secs() -> u64 {
    30
}

impl EmbeddingsConfig {
    /// A configuration with the default weight and timeout.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            text_weight: default_text_weight(),
            timeout_secs: default_timeout_secs(),
            min_vector_score: default_min_vector_score(),
        }
    }

    /// From the environment: enabled only when `HOLDFAST_EMBEDDINGS_MODEL` is set; the endpoint is
    /// `HOLDFAST_EMBEDDINGS_URL`, else `OPENAI_BASE_URL`, else `https://api.openai.com/v1`; the key is
    /// `HOLDFAST_EMBEDDINGS_API_KEY`, else `OPENAI_API_KEY`.
    pub fn from_env() -> Option<Self> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let model = var("HOLDFAST_EMBEDDINGS_MODEL")?;
        let base = var("HOLDFAST_EMBEDDINGS_URL")
            .or_else(|| var("OPENAI_BASE_URL"))
            .unwrap_or_else(|| "https://api.openai.com/v1".to_owned());
        let mut config = Self::new(base, model);
        config.api_key = var("HOLDFAST_EMBEDDINGS_API_KEY").or_else(|| var("OPENAI_API_KEY"));
        Some(config)
    }

    /// The URL requests are posted to.
    pub fn endpoint(&self) -> String {
        let base = self.base_url.trim_end_matches('/');
        if base.ends_with("/embeddings") {
            base.to_owned()
        } else if base.ends_with("/v1") {
            format!("{base}/embeddings")
        } else {
            format!("{base}/v1/embeddings")
        }
    }
}

/// A client for the embeddings endpoint. Cheap to clone.
#[derive(Clone)]
pub struct Embedder {
    inner: Arc<EmbedderInner>,
}

struct EmbedderInner {
    http: reqwest::Client,
    url: String,
    config: EmbeddingsConfig,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder").field("url", &self.inner.url).field("model", &self.inner.config.model).finish()
    }
}

#[derive(Serialize)]
struct EmbeddingsRequest<'a> {
    model: &'a str,
    input: &'a [String],
}

#[derive(Deserialize)]
struct EmbeddingsResponse {
    data: Vec<EmbeddingDatum>,
}

#[derive(Deserialize)]
struct EmbeddingDatum {
    embedding: Vec<f32>,
    #[serde(default)]
    index: Option<usize>,
}

impl Embedder {
    /// A client for `config`.
    pub fn new(config: EmbeddingsConfig) -> Result<Self> {
        if !(0.0..=1.0).contains(&config.text_weight) {
            return Err(MemoryError::invalid("embeddings.text_weight", "must be between 0 and 1"));
        }
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(config.timeout_secs.max(1)))
            .build()
            .map_err(|e| MemoryError::internal(format!("cannot build the HTTP client: {e}")))?;
        Ok(Self { inner: Arc::new(EmbedderInner { http, url: config.endpoint(), config }) })
    }

    /// The configuration.
    pub fn config(&self) -> &EmbeddingsConfig {
        &self.inner.config
    }

    /// Embeds `inputs` (in batches), one vector per input, in order.
    pub async fn embed(&self, inputs: &[String]) -> Result<Vec<Vec<f32>>> {
        let mut out = Vec::with_capacity(inputs.len());
        for chunk in inputs.chunks(BATCH) {
            out.extend(self.embed_batch(chunk).await?);
        }
        Ok(out)
    }

    async fn embed_batch(&self, inputs: &[String]) -> Result<Vec<Vec<f32>>> {
        let upstream = |detail: String| MemoryError::Upstream {
            service: format!("embeddings endpoint {}", self.inner.url),
            detail,
        };
        let mut request = self
            .inner
            .http
            .post(&self.inner.url)
            .json(&EmbeddingsRequest { model: &self.inner.config.model, input: inputs });
        if let Some(key) = &self.inner.config.api_key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.map_err(|e| upstream(e.to_string()))?;
        let status = response.status();
        if !status.is_success() {
            let body = response.text().await.unwrap_or_default();
            let body: String = body.chars().take(300).collect();
            return Err(upstream(format!("HTTP {status}: {body}")));
        }
        let mut parsed: EmbeddingsResponse =
            response.json().await.map_err(|e| upstream(format!("unreadable response: {e}")))?;
        if parsed.data.len() != inputs.len() {
            return Err(upstream(format!("{} embeddings for {} inputs", parsed.data.len(), inputs.len())));
        }
        parsed.data.sort_by_key(|d| d.index.unwrap_or(usize::MAX));
        Ok(parsed.data.into_iter().map(|d| d.embedding).collect())
    }
}

/// Cosine similarity (0 when either vector is zero or their lengths differ).
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    if a.len() != b.len() || a.is_empty() {
        return 0.0;
    }
    let (mut dot, mut na, mut nb) = (0.0f64, 0.0f64, 0.0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 { 0.0 } else { dot / (na.sqrt() * nb.sqrt()) }
}

/// A stable 64-bit FNV-1a hash of a text, as hex (the embedding cache key).
pub fn content_hash(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_and_maths() {
        assert_eq!(EmbeddingsConfig::new("http://h/v1/", "m").endpoint(), "http://h/v1/embeddings");
        assert_eq!(EmbeddingsConfig::new("http://h", "m").endpoint(), "http://h/v1/embeddings");
        assert_eq!(EmbeddingsConfig::new("http://h/x/embeddings", "m").endpoint(), "http://h/x/embeddings");
        assert!((cosine(&[1.0, 0.0], &[2.0, 0.0]) - 1.0).abs() < 1e-9);
        assert_eq!(cosine(&[1.0], &[1.0, 2.0]), 0.0);
        assert_ne!(content_hash("a"), content_hash("b"));
        assert_eq!(content_hash("a"), content_hash("a"));
    }
}
