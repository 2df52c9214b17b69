//! Registers: named values that tools write and other tools read, so the model passes names, not values.
//!
//! The [`RegisterStore`] is the one place that enforces who may write which register ([`RegisterDeclarations`]),
//! records where every value came from ([`Provenance`]), and publishes every change as `register.update`.

mod decl;
mod path;
mod store;

pub use decl::{QUOTE_MAX_AGE, RegisterDecl, RegisterDeclarations, RegisterValidator, ValueType, WriterRule};
pub use path::{RegisterPath, lookup_path};
pub use store::{IntrinsicProvider, RegisterSnapshot, RegisterStore, RegisterWrite, StoreLimits};

use crate::error::{ErrorCode, ToolError};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Where a register's value came from, from most to least trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// Computed by the runtime itself (the wallet's address, a chain id).
    Intrinsic,
    /// The operator's configuration files (token table, presets).
    Config,
    /// Found in the user's own words by the context bank.
    User,
    /// Produced by a named tool from values of the origins above.
    Tool,
    /// Typed by the model; lowest trust.
    Model,
}

impl Origin {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Intrinsic => "intrinsic",
            Self::Config => "config",
            Self::User => "user",
            Self::Tool => "tool",
            Self::Model => "model",
        }
    }
}

/// Where a register entry came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Provenance {
    /// The origin class.
    pub origin: Origin,
    /// The tool that wrote the value (`"intrinsic"` for lazily resolved intrinsic registers).
    pub source: String,
    /// The preset the tool ran, when it ran one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// Wall-clock creation time.
    pub created_at: DateTime<Utc>,
    /// Register keys the value was derived from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub derived_from: Vec<String>,
    /// For a `user` value: the authorization of the user's message it came from
    /// ([`crate::context_bank::Authorization`]), which the one action it moves value with spends. A `user` origin
    /// says where a value came from; this says whether it may still move value by itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization: Option<String>,
}

/// A register's value and provenance. Held behind an `Arc`: reading never copies the value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RegisterEntry {
    /// The value.
    pub value: serde_json::Value,
    /// Where it came from.
    #[serde(flatten)]
    pub provenance: Provenance,
}

impl RegisterEntry {
    /// Age of the entry now, saturating at zero for clocks that moved backwards.
    pub fn age(&self) -> std::time::Duration {
        (Utc::now() - self.provenance.created_at).to_std().unwrap_or_default()
    }

    /// The origin shortcut.
    pub fn origin(&self) -> Origin {
        self.provenance.origin
    }
}

/// A shared, immutable entry.
pub type SharedEntry = Arc<RegisterEntry>;

/// The longest register key.
pub const MAX_KEY_LEN: usize = 64;

/// Checks the key rules: ASCII letters, digits and `_`, 1–64 characters, starting with a letter.
pub fn validate_key(field: &str, key: &str) -> Result<(), ToolError> {
    let bad = |why: &str| {
        ToolError::new(ErrorCode::InvalidRegisterKey, format!("`{field}`: {} {why}", crate::text::preview(key)))
    };
    if key.is_empty() || key.len() > MAX_KEY_LEN {
        return Err(bad("must be 1 to 64 characters long"));
    }
    if !key.as_bytes()[0].is_ascii_alphabetic() {
        return Err(bad("must start with an ASCII letter"));
    }
    if !key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err(bad("may contain only ASCII letters, digits and '_'"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_rules() {
        for ok in ["a", "sell_token", "A1_b2", &"k".repeat(64)] {
            assert!(validate_key("key", ok).is_ok(), "{ok}");
        }
        for bad in ["", "1a", "_a", "a-b", "a.b", "a b", "é", &"k".repeat(65)] {
            let err = validate_key("key", bad).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidRegisterKey, "{bad}");
            assert!(err.message.starts_with("`key`"));
        }
    }
}
