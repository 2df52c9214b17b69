//! Fetch presets: the only way `x402_fetch` builds a URL (invariant 13).
//!
//! A preset names a base URL from configuration and a list of query parameters, each a literal, the network's chain
//! id, or a register (optionally a path inside it). The model picks a preset; code builds the URL from
//! configuration and registers, URL-encoding every value.

use holdfast_core::config::{ConfigError, NetworkConfig, line_col};
use holdfast_core::registers::Origin;
use holdfast_core::{ErrorCode, RegisterStore, ToolError};
use indexmap::IndexMap;
use reqwest::Url;
use serde::Deserialize;
use serde_json::Value;
use std::path::Path;

/// Where a query parameter's value comes from.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub enum QueryValue {
    /// The selected network's chain id.
    ChainId,
    /// A fixed string from configuration.
    Literal(String),
    /// A register's value (a string or number), optionally a path inside it.
    Register {
        /// Register key.
        key: String,
        /// Dotted path inside the value.
        path: Option<String>,
    },
}

/// What a preset fetches, which decides how its response is checked and summarised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum PresetKind {
    /// A 0x Swap v2 allowance-holder quote, validated on write.
    SwapQuote,
    /// A token price object.
    TokenPrice,
    /// Any JSON object.
    Json,
}

/// One preset.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Preset {
    /// Base URL (`http://` or `https://`), without query.
    pub url: String,
    /// Query parameters in order.
    #[serde(default)]
    pub query: Vec<(String, QueryValue)>,
    /// Extra request headers.
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    /// The register this preset's result is meant for.
    pub writes: String,
    /// What is fetched.
    pub kind: PresetKind,
    /// x402 payees allowed for this preset; empty means "any payee the payment policy allows".
    #[serde(default)]
    pub payees: Vec<String>,
}

/// A URL built from a preset, with what it was built from.
#[derive(Debug, Clone)]
pub struct BuiltRequest {
    /// The full URL.
    pub url: Url,
    /// The registers read.
    pub registers_read: Vec<String>,
    /// The query values by name, as sent.
    pub query: IndexMap<String, String>,
    /// True when any register read has a `model` origin.
    pub model_tainted: bool,
}

impl Preset {
    /// The host (and port) requests go to; payments are refused for any other host.
    pub fn host(&self) -> Option<String> {
        let url = Url::parse(&self.url).ok()?;
        Some(match url.port() {
            Some(p) => format!("{}:{p}", url.host_str()?),
            None => url.host_str()?.to_owned(),
        })
    }

    /// The preset's origin, `scheme://host[:port]`: what the payment policy compares a request's and a resource's
    /// host with, the scheme's default port filled in (an `https` preset's resource is on port 443, never 80).
    pub fn origin(&self) -> Option<String> {
        let url = Url::parse(&self.url).ok()?;
        url.host_str()?;
        Some(url.origin().ascii_serialization())
    }

    /// Builds the request URL from configuration and registers. A missing register → `register_missing`.
    pub fn build(
        &self,
        name: &str,
        network: &NetworkConfig,
        registers: &RegisterStore,
    ) -> Result<BuiltRequest, ToolError> {
        let mut url = Url::parse(&self.url)
            .map_err(|e| ToolError::new(ErrorCode::UnknownPreset, format!("preset `{name}` has a bad url: {e}")))?;
        let mut registers_read = Vec::new();
        let mut query = IndexMap::new();
        let mut model_tainted = false;
        for (param, source) in &self.query {
            let value = match source {
                QueryValue::ChainId => network.chain_id.to_string(),
                QueryValue::Literal(s) => s.clone(),
                QueryValue::Register { key, path } => {
                    let entry = registers.require(key).map_err(|e| {
                        ToolError::new(
                            ErrorCode::RegisterMissing,
                            format!("preset `{name}` needs register `{key}` for `{param}`: {}", e.message),
                        )
                    })?;
                    model_tainted |= entry.origin() == Origin::Model;
                    let value = match path {
                        Some(p) => registers.get_path(&format!("{key}.{p}"))?,
                        None => entry.value.clone(),
                    };
                    registers_read.push(key.clone());
                    match value {
                        Value::String(s) => s,
                        Value::Number(n) => n.to_string(),
                        other => {
                            return Err(ToolError::new(
                                ErrorCode::InvalidParams,
                                format!(
                                    "preset `{name}`: register `{key}` holds {} where `{param}` needs a string",
                                    if other.is_object() { "an object" } else { "a non-string value" }
                                ),
                            ));
                        }
                    }
                }
            };
            query.insert(param.clone(), value);
        }
        {
            let mut pairs = url.query_pairs_mut();
            for (k, v) in &query {
                pairs.append_pair(k, v);
            }
        }
        Ok(BuiltRequest { url, registers_read, query, model_tainted })
    }
}

/// The configured presets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Presets {
    presets: IndexMap<String, Preset>,
}

/// True for `localhost`, 127.0.0.0/8 and `[::1]`.
fn is_loopback(url: &Url) -> bool {
    let Some(host) = url.host_str() else { return false };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

impl Presets {
    /// Reads a RON preset file.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| ConfigError::Io { path: path.display().to_string(), source })?;
        Self::parse(&path.display().to_string(), &text)
    }

    /// Parses RON text (`name` is used in errors).
    pub fn parse(name: &str, text: &str) -> Result<Self, ConfigError> {
        let presets: IndexMap<String, Preset> = ron::from_str(text).map_err(|e| ConfigError::Parse {
            path: name.to_owned(),
            line: e.span.start.line,
            column: e.span.start.col,
            reason: e.code.to_string(),
        })?;
        for (preset_name, p) in &presets {
            let invalid = |reason: String| ConfigError::Invalid { path: name.to_owned(), reason };
            let url = Url::parse(&p.url).map_err(|e| invalid(format!("preset `{preset_name}`: url: {e}")))?;
            let line = text.find(&p.url).map_or(0, |at| line_col(text, at).0);
            if !matches!(url.scheme(), "http" | "https") || url.query().is_some() || url.host_str().is_none() {
                return Err(invalid(format!(
                    "preset `{preset_name}`: url must be http(s)://host/path without a query (line {line})"
                )));
            }
            // A quote or a payment offer over plain HTTP can be rewritten by anyone on the path.
            if url.scheme() == "http" && !is_loopback(&url) {
                return Err(invalid(format!(
                    "preset `{preset_name}`: url must be https:// unless the host is loopback (line {line})"
                )));
            }
            holdfast_core::registers::validate_key("writes", &p.writes)
                .map_err(|e| invalid(format!("preset `{preset_name}`: {}", e.message)))?;
            for (_, q) in &p.query {
                if let QueryValue::Register { key, .. } = q {
                    holdfast_core::registers::validate_key("query", key)
                        .map_err(|e| invalid(format!("preset `{preset_name}`: {}", e.message)))?;
                }
            }
            for payee in &p.payees {
                holdfast_core::address::parse_address("payees", payee)
                    .map_err(|e| invalid(format!("preset `{preset_name}`: {}", e.message)))?;
            }
        }
        Ok(Self { presets })
    }

    /// A preset by name, or `unknown_preset`.
    pub fn get(&self, name: &str) -> Result<&Preset, ToolError> {
        self.presets.get(name).ok_or_else(|| {
            let known: Vec<&str> = self.presets.keys().map(String::as_str).collect();
            ToolError::new(
                ErrorCode::UnknownPreset,
                format!(
                    "`preset`: {name:?} is not configured (known: {})",
                    if known.is_empty() { "none".to_owned() } else { known.join(", ") }
                ),
            )
        })
    }

    /// Preset names.
    pub fn names(&self) -> Vec<&str> {
        self.presets.keys().map(String::as_str).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use holdfast_core::config::CoreConfig;
    use holdfast_core::registers::RegisterWrite;
    use holdfast_core::{CoreServices, Origin};
    use serde_json::json;

    const RON: &str = r#"{
        "swap_quote": (
            url: "http://127.0.0.1:9/swap/allowance-holder/quote",
            query: [
                ("chainId", ChainId),
                ("sellToken", Register(key: "sell_token", path: Some("address"))),
                ("note", Register(key: "note", path: None)),
                ("slippageBps", Literal("100")),
            ],
            headers: [("0x-version", "v2")],
            writes: "swap_quote",
            kind: SwapQuote,
        ),
    }"#;

    #[test]
    fn plain_http_is_only_for_loopback_hosts() {
        let preset = |url: &str| {
            format!(r#"{{"q": (url: "{url}", query: [], headers: [], writes: "note", kind: Json, payees: [])}}"#)
        };
        for ok in ["https://api.example/q", "http://127.0.0.1:9/q", "http://localhost:8/q", "http://[::1]:7/q"] {
            assert!(Presets::parse("p.ron", &preset(ok)).is_ok(), "{ok}");
        }
        for bad in ["http://api.example/q", "http://10.0.0.1/q", "http://127.example/q"] {
            let err = Presets::parse("p.ron", &preset(bad)).unwrap_err().to_string();
            assert!(err.contains("https://"), "{bad}: {err}");
        }
    }

    #[test]
    fn builds_urls_from_registers_with_every_value_encoded() {
        let presets = Presets::parse("p.ron", RON).unwrap();
        let ctx = CoreServices::new(CoreConfig::default()).unwrap().new_session("t");
        let base = ctx.config.networks.resolve("base").unwrap().clone();
        let preset = presets.get("swap_quote").unwrap();
        let err = preset.build("swap_quote", &base, &ctx.registers).unwrap_err();
        assert_eq!(err.code, ErrorCode::RegisterMissing);
        assert!(err.message.contains("sell_token"));
        let usdc = ctx.config.tokens.lookup("base", "USDC").unwrap().to_register_value();
        ctx.registers.set(RegisterWrite::new("sell_token", usdc, Origin::Config, "token_lookup")).unwrap();
        ctx.registers.set(RegisterWrite::new("note", json!("a&b=c d#e"), Origin::Model, "register_set")).unwrap();
        let built = preset.build("swap_quote", &base, &ctx.registers).unwrap();
        assert_eq!(
            built.url.as_str(),
            "http://127.0.0.1:9/swap/allowance-holder/quote?chainId=8453&sellToken=0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913&note=a%26b%3Dc+d%23e&slippageBps=100"
        );
        assert!(built.model_tainted);
        assert_eq!(built.registers_read, vec!["sell_token", "note"]);
        assert_eq!(preset.host().as_deref(), Some("127.0.0.1:9"));
        assert_eq!(preset.origin().as_deref(), Some("http://127.0.0.1:9"));
        let https = Preset { url: "https://api.example/q".into(), ..preset.clone() };
        assert_eq!(https.origin().as_deref(), Some("https://api.example"));
    }

    #[test]
    fn unknown_presets_and_bad_files_are_errors() {
        let presets = Presets::parse("p.ron", RON).unwrap();
        assert_eq!(presets.get("drain").unwrap_err().code, ErrorCode::UnknownPreset);
        let bad = RON.replace("http://127.0.0.1:9/swap", "ftp://x/swap");
        assert!(Presets::parse("p.ron", &bad).unwrap_err().to_string().contains("http(s)"));
        let bad = RON.replace("kind: SwapQuote", "kind: Nope");
        let err = Presets::parse("p.ron", &bad).unwrap_err().to_string();
        assert!(err.starts_with("p.ron:"), "{err}");
    }
}
