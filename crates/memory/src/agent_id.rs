//! Agent identifiers.

use crate::error::{MemoryError, Result};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::Arc;

/// An agent's id: 1–64 of ASCII letters, digits, `_`, `-`, `.`, starting with a letter or digit. Cheap to clone.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct AgentId(Arc<str>);

impl AgentId {
    /// Validates and wraps an id.
    pub fn new(id: &str) -> Result<Self> {
        validate_id("agent_id", id)?;
        Ok(Self(Arc::from(id)))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for AgentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for AgentId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// Checks an identifier (agent, label, group, channel): 1–64 of ASCII letters, digits, `_`, `-`, `.`, starting with
/// a letter or digit.
pub fn validate_id(field: &str, id: &str) -> Result<()> {
    let ok_len = !id.is_empty() && id.len() <= 64;
    let ok_chars = id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    let ok_start = id.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric());
    if ok_len && ok_chars && ok_start {
        Ok(())
    } else {
        let shown: String = id.chars().take(48).collect();
        Err(MemoryError::invalid(
            field,
            format!(
                "{shown:?} is not a valid name: use 1–64 of letters, digits, `_`, `-`, `.`, starting with a letter or digit"
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_validated() {
        assert!(AgentId::new("assistant-1.b_c").is_ok());
        for bad in ["", "-x", "a b", "é", &"a".repeat(65)] {
            assert!(AgentId::new(bad).is_err(), "{bad}");
        }
    }
}
